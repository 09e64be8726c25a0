"""The book's own CSS and JS for readers (book/_static): registered in _config.yml, present, and
doing what they say on a small page.

- plotly-dark.js: the Plotly figures follow the dark colour mode (relaid out when
  ``<html data-theme>`` is dark, their light values restored otherwise), with nothing fetched;
- reader.css: running text keeps to about 75-80 characters a line while tables, figures and
  code keep the column's full width.

The checks in a browser run when Chromium and playwright are installed (as for
``make check-book``) and are skipped otherwise."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "book" / "_static"
DARK_JS = STATIC / "plotly-dark.js"


def sphinx_config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]


def test_plotly_dark_js_is_registered_and_present():
    config = sphinx_config()
    assert "plotly-dark.js" in config["html_js_files"]
    assert config["html_static_path"] == ["book/_static"]
    js = DARK_JS.read_text()
    for needed in (
        "data-theme",
        "MutationObserver",
        "Plotly.relayout",
        ".js-plotly-plot",
    ):
        assert needed in js, needed
    # offline and from file://: no address of another host, no fetch
    assert not re.search(r"https?://|fetch\(|XMLHttpRequest|import\(", js)


def test_reader_css_is_registered():
    assert "reader.css" in sphinx_config()["html_css_files"]


FIGURE_STATE_JS = """() => { const L = document.getElementById('fig')._fullLayout;
  return {paper: L.paper_bgcolor, plot: L.plot_bgcolor, font: L.font.color,
          grid: L.xaxis.gridcolor, current: L.sliders[0].currentvalue.font.color,
          steps: L.sliders[0].font.color, menu: L.updatemenus[0].bgcolor}; }"""

DRAW_JS = """() => Plotly.newPlot('fig', [{x: [0, 1], y: [1, 0]}], {
  template: {layout: {paper_bgcolor: 'white', plot_bgcolor: 'white',
                      font: {color: '#2a3f5f'}, xaxis: {gridcolor: '#EBF0F8'}}},
  width: 400, height: 300,
  sliders: [{steps: [{label: 'a', method: 'skip', args: []},
                     {label: 'b', method: 'skip', args: []}],
             currentvalue: {prefix: 'step ', font: {color: '#2a3f5f'}},
             font: {color: 'rgba(0,0,0,0)'}}],
  updatemenus: [{type: 'buttons', buttons: [{label: 'play', method: 'skip', args: []}]}]})"""


def _plotly_page(browser, theme: str):
    plotly = pytest.importorskip("plotly")
    plotly_js = (
        Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
    )
    context = browser.new_context(viewport={"width": 800, "height": 600})
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.set_content(
        f"<html data-theme='{theme}'><body><div id='fig'></div></body></html>"
    )
    page.add_script_tag(path=str(plotly_js))
    page.evaluate(DRAW_JS)
    page.add_script_tag(path=str(DARK_JS))  # the page has loaded: it paints at once
    page.wait_for_timeout(200)
    return context, page, requests


def _set_theme(page, theme: str) -> dict:
    page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
    page.wait_for_timeout(200)  # the MutationObserver's callback runs
    return page.evaluate(FIGURE_STATE_JS)


LIGHT = {
    "paper": "white",
    "plot": "white",
    "font": "#2a3f5f",
    "grid": "#EBF0F8",
    "current": "#2a3f5f",
    "steps": "rgba(0,0,0,0)",
}


def test_plotly_figures_follow_the_colour_mode(browser):
    context, page, requests = _plotly_page(browser, "light")
    light = page.evaluate(FIGURE_STATE_JS)
    assert {k: light[k] for k in LIGHT} == LIGHT  # light mode: left as drawn
    dark = _set_theme(page, "dark")
    # the theme's fallback colours (no theme CSS on this page)
    assert dark["paper"] == dark["plot"] == "#14181e"
    assert dark["font"] == dark["current"] == "#ced6dd"
    assert dark["grid"] == dark["menu"] == "#29313d"
    assert dark["steps"] == "rgba(0,0,0,0)"  # step labels the figure hides stay hidden
    back = _set_theme(page, "light")
    assert back == light
    assert requests == []  # nothing fetched
    context.close()


def test_plotly_figures_drawn_in_dark_mode_start_dark(browser):
    context, page, _ = _plotly_page(browser, "dark")
    assert page.evaluate(FIGURE_STATE_JS)["paper"] == "#14181e"
    assert {k: v for k, v in _set_theme(page, "light").items() if k in LIGHT} == LIGHT
    context.close()


def test_prose_column_is_narrower_than_figures_tables_and_code(browser):
    """At a 1400 px window the article is 848 px wide: paragraphs and lists keep to about 75-80
    characters (64 ch), a table, a figure and a code block keep the full width."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    words = " ".join(["attention"] * 80)
    page.set_content(
        "<html><head><style>*, ::before, ::after { box-sizing: border-box; }</style></head>"
        "<body style='margin:0;font:16px sans-serif'>"
        "<article class='bd-article' style='width:848px'><section>"
        f"<p id='p'>{words}</p><ul id='ul'><li>{words}</li></ul>"
        "<table id='table' style='width:100%'><tr><td>a</td></tr></table>"
        "<figure id='figure' style='width:100%'></figure>"
        f"<div class='cell'><div class='cell_output'><p id='out'>{words}</p>"
        "<pre id='pre'>x</pre></div></div>"
        "</section></article></body></html>"
    )
    page.add_style_tag(path=str(STATIC / "reader.css"))
    width = lambda i: page.evaluate(  # noqa: E731
        f"document.getElementById('{i}').getBoundingClientRect().width"
    )
    zero = page.evaluate(
        "(() => { const s = document.createElement('span'); s.textContent = '0';"
        " document.getElementById('p').appendChild(s);"
        " const w = s.getBoundingClientRect().width; s.remove(); return w; })()"
    )
    for prose in ("p", "ul", "out"):
        assert width(prose) == pytest.approx(64 * zero, abs=1), prose
        assert width(prose) < 848
    for wide in ("table", "figure", "pre"):
        assert width(wide) == pytest.approx(848, abs=1), wide
    context.close()


def _reader_page(browser, html: str, theme: str = "light", height: int = 600):
    context = browser.new_context(viewport={"width": 1280, "height": height})
    page = context.new_page()
    page.set_content(f"<html data-theme='{theme}'><body>{html}</body></html>")
    page.add_style_tag(path=str(STATIC / "reader.css"))
    return context, page


def test_sidebar_search_stays_in_view_when_the_sidebar_scrolls(browser):
    """The theme scrolls the sidebar to the current chapter on load; its search field (the only
    one at 1280 px, the top bar's being hidden) stays at the sidebar's top."""
    nav = "".join(f"<li>chapter {i}</li>" for i in range(80))
    context, page = _reader_page(
        browser,
        "<div class='bd-sidebar-primary' style='height:300px;overflow-y:auto'>"
        "<div class='sidebar-primary-items__start'>"
        "<div class='sidebar-primary-item'><button class='search-button-field'>Search"
        "</button></div><div class='sidebar-primary-item'><ul>" + nav + "</ul></div>"
        "</div></div>",
    )
    page.evaluate(
        "() => { const s = document.querySelector('.bd-sidebar-primary');"
        " s.scrollTop = s.scrollHeight; }"
    )
    top = page.evaluate(
        "() => document.querySelector('.search-button-field').getBoundingClientRect().top"
        " - document.querySelector('.bd-sidebar-primary').getBoundingClientRect().top"
    )
    assert 0 <= top < 20, top
    context.close()


def test_every_badge_is_visible_and_distinct_in_dark_mode(browser):
    """Dark mode: the inconclusive badge (muted) is grey with white text, unlike the imprecise one
    (light); the exploratory outline (dark) is drawn in the dark theme's light text colour."""
    context, page = _reader_page(
        browser,
        "<span id='muted' class='sd-badge sd-bg-muted'>inconclusive</span>"
        "<span id='outline' class='sd-badge sd-outline-dark'>exploratory</span>",
        theme="dark",
    )
    style = "([id, p]) => getComputedStyle(document.getElementById(id))[p]"
    assert page.evaluate(style, ["muted", "backgroundColor"]) == "rgb(108, 117, 125)"
    assert page.evaluate(style, ["muted", "color"]) == "rgb(255, 255, 255)"
    assert page.evaluate(style, ["outline", "color"]) == "rgb(206, 214, 221)"
    assert page.evaluate(style, ["outline", "borderTopColor"]) == "rgb(206, 214, 221)"
    context.close()
