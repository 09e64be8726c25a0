"""The book's own CSS and JS for readers (book/_static): registered in _config.yml, present, and
doing what they say on a small page.

- plotly-dark.js: the Plotly figures follow the dark colour mode (relaid out when
  ``<html data-theme>`` is dark, their light values restored otherwise), with nothing fetched;
- reader.css: running text keeps to about 75-80 characters a line while tables, figures and
  code keep the column's full width; in dark mode a figure marked ``dark-invert`` (its cell's
  ``metadata.mystnb.image.classes``) is inverted onto the page, the others sit on a white card.

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


def _sidebar(style: str, items_class: str, title: str = "") -> str:
    """A sidebar as the theme builds it: an optional title item, the search field's item, then
    80 chapter entries (enough to scroll) in parts whose bold captions reach past the entries'
    column (as "Theory, with numeric checks" does in the book)."""
    caption = (
        "<p class='caption' style='white-space:nowrap;font-weight:700'>"
        "Theory, with numeric checks and more</p>"
    )
    nav = "".join(
        (caption if i % 10 == 0 else "") + f"<li>chapter {i}</li>" for i in range(80)
    )
    return (
        f"<div class='bd-sidebar-primary' {style}><div class={items_class}>{title}"
        "<div class='sidebar-primary-item'><button class='search-button-field'>Search"
        f"</button></div><div class='sidebar-primary-item'><ul>{nav}</ul></div></div></div>"
    )


def test_sidebar_search_stays_in_view_when_the_sidebar_scrolls(browser):
    """The theme scrolls the sidebar to the current chapter on load; its search field (the only
    one at 1280 px, the top bar's being hidden) stays at the sidebar's top."""
    context, page = _reader_page(
        browser,
        _sidebar(
            "style='height:300px;overflow-y:auto'", "'sidebar-primary-items__start'"
        ),
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


def test_the_sticky_search_field_leaves_the_book_title_above_it_visible(browser):
    """The sticky search field paints nothing over the sidebar's book title above it (a shadow
    it once cast upwards hid the title's last line)."""
    context, page = _reader_page(
        browser,
        "<style>:root { --pst-color-background: #ffffff; }</style>"  # the theme's variable
        "<div class='bd-sidebar-primary' style='height:300px;overflow-y:auto'>"
        "<div class='sidebar-primary-items__start'>"
        "<div class='sidebar-primary-item'><p id='title' style='margin:0'>Self-attention"
        " and convolution, executed</p></div>"
        "<div class='sidebar-primary-item'><button class='search-button-field'>Search"
        "</button></div></div></div>",
    )
    # a shadow cast upwards by the sticky item would cover the title's last line
    shadow = page.evaluate(
        "() => getComputedStyle(document.querySelector("
        "'.sidebar-primary-item:has(> .search-button-field)')).boxShadow"
    )
    assert shadow == "none", shadow
    context.close()


def test_every_badge_is_visible_and_distinct_in_dark_mode(browser):
    """Dark mode: the inconclusive badge (muted) is grey with white text, unlike the imprecise one
    (light); the exploratory outline (dark) is drawn in the dark theme's light text colour, and the filled
    "not counted" badge (dark) gets an edge in it."""
    context, page = _reader_page(
        browser,
        "<span id='muted' class='sd-badge sd-bg-muted'>inconclusive</span>"
        "<span id='outline' class='sd-badge sd-outline-dark'>exploratory</span>"
        "<span id='filled' class='sd-badge sd-bg-dark'>not counted</span>",
        theme="dark",
    )
    style = "([id, p]) => getComputedStyle(document.getElementById(id))[p]"
    assert page.evaluate(style, ["muted", "backgroundColor"]) == "rgb(108, 117, 125)"
    assert page.evaluate(style, ["muted", "color"]) == "rgb(255, 255, 255)"
    assert page.evaluate(style, ["outline", "color"]) == "rgb(206, 214, 221)"
    assert page.evaluate(style, ["outline", "borderTopColor"]) == "rgb(206, 214, 221)"
    # the filled "not counted" badge has an edge of its own on the dark page
    assert page.evaluate(style, ["filled", "borderTopColor"]) == "rgb(206, 214, 221)"
    assert page.evaluate(style, ["filled", "borderTopWidth"]) == "1px"
    context.close()


def test_plotly_figures_fit_their_box_in_dark_mode(browser):
    """Dark mode: the theme frames HTML outputs in a light box with 0.5rem of padding (its rule is
    copied here); a Plotly figure, repainted dark, has no frame, so a figure 680 px wide fits the
    688 px output of a 1280 px window. Other HTML outputs keep the theme's frame."""
    theme_rule = (
        "<style>html[data-theme=dark] .bd-content div.cell_output "
        ".text_html:not(:has(table.dataframe)) { background-color: #ced6dd; "
        "padding: .5rem; }</style>"
    )
    output = (
        "<div class='bd-content'><div class='cell_output' style='width:688px'>"
        "<div id='{id}' class='output text_html' style='overflow:visible'>{body}</div>"
        "</div></div>"
    )
    plot = (
        "<div><div class='js-plotly-plot' style='width:680px;height:10px'></div></div>"
    )
    context, page = _reader_page(
        browser,
        theme_rule
        + output.format(id="plotly", body=plot)
        + output.format(id="other", body="<p>text</p>"),
        theme="dark",
    )
    box = "(id) => { const e = document.getElementById(id); return [e.scrollWidth, e.clientWidth]; }"
    scroll, client = page.evaluate(box, "plotly")
    assert scroll <= client == 688, (scroll, client)
    style = "([id, p]) => getComputedStyle(document.getElementById(id))[p]"
    assert page.evaluate(style, ["plotly", "backgroundColor"]) == "rgba(0, 0, 0, 0)"
    assert page.evaluate(style, ["other", "paddingLeft"]) == "8px"
    context.close()


# ---- book/_ext/reader_html.py, on a small book built with the book's own settings: inline maths
# kept with the brackets that touch it, and the toggles of hidden cells in the reader's words.
EXT = ROOT / "book" / "_ext"
MATH = r"\mathbf{r}_{\boldsymbol\delta} + \alpha\|\boldsymbol\Delta\|^2"
WORDS = " ".join(["word"] * 6)
MATH_TEXT = (
    f"{WORDS} the score at each shift (${MATH}$), {WORDS} the same score (${MATH}$), "
    f"{WORDS} a bracket (${MATH}$). {WORDS} a ${MATH}$-dependent term, {WORDS} and $x$."
)


def _cell(source: str, tags: list[str], outputs: bool, prompt: str = "") -> dict:
    metadata: dict = {"tags": tags}
    if prompt:
        metadata["mystnb"] = {
            "code_prompt_show": f"Show {prompt}",
            "code_prompt_hide": f"Hide {prompt}",
        }
    out = [{"name": "stdout", "output_type": "stream", "text": ["printed\n"]}]
    return {
        "cell_type": "code",
        "id": source[0],
        "execution_count": 1,
        "metadata": metadata,
        "outputs": out if outputs else [],
        "source": [source],
    }


def _png() -> str:
    """A 1×1 white PNG, base64-encoded as a notebook stores it."""
    import base64
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\xff\xff"))
        + chunk(b"IEND", b"")
    )
    return base64.b64encode(png).decode()


def _figure_cell(name: str, classes: str = "") -> dict:
    """A figure cell as the book's notebooks have it: caption and alt text in
    ``metadata.mystnb``, and, for a figure inverted in dark mode, ``image.classes``."""
    image = {"alt": f"A white square standing in for the {name} figure."}
    if classes:
        image["classes"] = classes
    return {
        "cell_type": "code",
        "id": name,
        "execution_count": 1,
        "metadata": {
            "mystnb": {
                "figure": {"caption": f"**Figure {name}.**", "name": f"fig-{name}"},
                "image": image,
            }
        },
        "outputs": [
            {
                "data": {"image/png": _png(), "text/plain": ["<Figure>"]},
                "metadata": {},
                "output_type": "display_data",
            }
        ],
        "source": ["plt.show()"],
    }


def _notebook() -> dict:
    cells = [
        {
            "cell_type": "markdown",
            "id": "title",
            "metadata": {},
            "source": ["# A page"],
        },
        {"cell_type": "markdown", "id": "text", "metadata": {}, "source": [MATH_TEXT]},
        _cell("a = 1", ["hide-input"], True),
        _cell("b = 2", ["hide-output"], True),
        _cell("c = 3", ["hide-cell"], True),
        _cell("d = 4", ["hide-cell"], False),
        _cell("e = 5", ["hide-cell"], True, prompt="the check"),
        _figure_cell("chart", classes="dark-invert"),
        _figure_cell("heatmap"),
    ]
    return {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


@pytest.fixture(scope="module")
def small_book(tmp_path_factory) -> Path:
    """A one-page book built by Sphinx with myst-nb, sphinx-togglebutton, reader_html and
    reader.css, and the book's prompt and hint settings from _config.yml; MathJax from the
    installed sphinx-mathjax-offline. Returns the page's HTML file."""
    import json
    import sys
    from importlib.util import find_spec

    pytest.importorskip("myst_nb")
    pytest.importorskip("sphinx_togglebutton")
    from sphinx.application import Sphinx

    src = tmp_path_factory.mktemp("small_book")
    (src / "index.ipynb").write_text(json.dumps(_notebook()))
    config = sphinx_config()
    settings = {
        k: config[k]
        for k in (
            "nb_code_prompt_show",
            "nb_code_prompt_hide",
            "togglebutton_hint",
            "togglebutton_hint_hide",
        )
    }
    spec = find_spec("sphinx-mathjax-offline")
    mathjax = (
        Path(spec.origin).parent / "static" / "mathjax" / "tex-chtml.js"
        if spec
        else None
    )
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(EXT)!r})\n"
        "extensions = ['myst_nb', 'sphinx_togglebutton', 'reader_html']\n"
        "nb_execution_mode = 'off'\n"
        "myst_enable_extensions = ['dollarmath']\n"
        f"html_static_path = [{str(STATIC)!r}]\n"
        "html_css_files = ['reader.css']\n"
        + (f"mathjax_path = {mathjax.as_uri()!r}\n" if mathjax else "")
        + "".join(f"{k} = {v!r}\n" for k, v in settings.items())
    )
    out = src / "_build"
    path = list(sys.path)
    try:
        app = Sphinx(
            str(src), str(src), str(out), str(src / "_doctrees"), "html",
            status=None, warning=None, freshenv=True,
        )  # fmt: skip
        app.build()
    finally:
        sys.path[:] = path
    return out / "index.html"


def test_toggles_of_hidden_cells_say_what_they_show(small_book):
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(small_book.read_text(), "html.parser")
    toggles = [
        (d.select_one(".collapsed").get_text(), d.select_one(".expanded").get_text())
        for d in soup.select("details.hide")
    ]
    assert toggles == [
        ("Show code", "Hide code"),  # hide-input
        ("Show output", "Hide output"),  # hide-output
        ("Show code and output", "Hide code and output"),  # hide-cell
        ("Show code", "Hide code"),  # hide-cell, no output
        ("Show the check", "Hide the check"),  # the cell's own words
    ]
    html = small_book.read_text()
    assert "let toggleHintShow = 'Show';" in html
    assert "let toggleHintHide = 'Hide';" in html


def test_inline_maths_is_wrapped_with_the_text_touching_it(small_book):
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(small_book.read_text(), "html.parser")
    spans = soup.select("span.math-nowrap")
    outside = [
        "".join(str(c) for c in s.children if getattr(c, "name", None) is None)
        for s in spans
    ]
    assert outside == ["(),", "(),", "().", "-dependent", "."]
    assert all(s.select("span.math") for s in spans)
    assert 'the score at each shift <span class="math-nowrap">(' in str(soup)


LINES_JS = """() => {
  const p = document.querySelector('.math-nowrap').closest('p');
  const out = [];
  for (const s of p.querySelectorAll('.math-nowrap')) {
    const formula = s.querySelector('mjx-container').getBoundingClientRect();
    for (const node of [s.firstChild, s.lastChild]) {
      if (node.nodeType !== Node.TEXT_NODE) continue;
      const r = document.createRange();
      const at = node === s.firstChild ? node.length - 1 : 0;
      r.setStart(node, at); r.setEnd(node, at + 1);
      const c = r.getBoundingClientRect();
      out.push(c.bottom > formula.top && c.top < formula.bottom);  // the formula's line
    }
  }
  return out;
}"""


def test_a_bracket_never_ends_a_line_alone_before_inline_maths(browser, small_book):
    """At every column width from 200 to 700 px, each "(" before a typeset formula and each
    ")," after it sit on the formula's line; without reader.css's rule they do not always."""
    context = browser.new_context(viewport={"width": 900, "height": 900})
    page = context.new_page()
    page.goto(small_book.as_uri())
    page.wait_for_function(
        "() => document.querySelectorAll('mjx-container').length >= 5"
    )

    def parted(rule: str) -> list[int]:
        page.evaluate(
            "(w) => document.querySelectorAll('.math-nowrap')"
            ".forEach(s => s.style.whiteSpace = w)",
            rule,
        )
        widths = []
        for width in range(200, 701, 4):
            page.evaluate(
                "(w) => document.querySelector('.math-nowrap').closest('p')"
                ".style.width = w + 'px'",
                width,
            )
            if not all(page.evaluate(LINES_JS)):
                widths.append(width)
        return widths

    assert parted("") == []  # reader.css: white-space nowrap
    assert parted("normal")  # the browser's own line breaking parts them somewhere
    context.close()


FIGURE_LOOK_JS = """(id) => {
  const s = getComputedStyle(document.querySelector(`#${id} img`));
  return {filter: s.filter, background: s.backgroundColor, padding: s.paddingLeft,
          page: getComputedStyle(document.body).backgroundColor};
}"""


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_dark_mode_inverts_only_the_figures_marked_for_it(browser, small_book, theme):
    """A figure cell whose ``metadata.mystnb.image.classes`` is "dark-invert" (a chart drawn on
    white with categorical colours) is shown in dark mode inverted with its hues turned back, on
    no card, its white becoming the dark page's background; an unmarked figure (a heat map, a
    photograph) keeps its colours on a white card, dimmed a little. In light mode neither is
    touched."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(small_book.read_text(), "html.parser")
    chart, heatmap = (soup.select_one(f"#fig-{n}") for n in ("chart", "heatmap"))
    assert chart.img["class"] == ["dark-invert"]  # myst-nb put the class on the <img>
    assert not heatmap.img.get("class")
    html = "".join(  # the book's markup, in the theme's content column
        f"<div class='cell_output docutils container' id='{f['id']}-out'>{f}</div>"
        for f in (chart, heatmap)
    )
    context, page = _themed_page(
        browser, f"<div class='bd-content'>{html}</div>", theme
    )
    marked = page.evaluate(FIGURE_LOOK_JS, "fig-chart")
    plain = page.evaluate(FIGURE_LOOK_JS, "fig-heatmap")
    context.close()
    if theme == "light":
        assert marked["filter"] == plain["filter"] == "none"
        assert marked["padding"] == plain["padding"] == "0px"
        return
    match = re.fullmatch(r"invert\(([\d.]+)\) hue-rotate\(180deg\)", marked["filter"])
    assert match, marked
    assert marked["background"] == "rgba(0, 0, 0, 0)" and marked["padding"] == "0px"
    white = round(255 * (1 - float(match[1])))  # the figure's white, inverted
    assert marked["page"] == f"rgb({white}, {white}, {white})", marked
    # the unmarked figure: its colours on a white card, dimmed evenly (a brightness below 1
    # that keeps hues and their order; the theme's own dimming is replaced)
    dim = re.fullmatch(r"brightness\(([\d.]+)\)", plain["filter"])
    assert dim and 0.7 <= float(dim[1]) < 1, plain
    assert plain["background"] == "rgb(255, 255, 255)" and plain["padding"] == "6px"


# ---- the badges as the built book draws them: the installed themes' CSS (pydata-sphinx-theme,
# sphinx-book-theme, sphinx-design) and book/_static, in an "In short" box, in both colour modes
THEME_CSS = (
    ("pydata_sphinx_theme", "theme/pydata_sphinx_theme/static/styles/pydata-sphinx-theme.css"),
    ("sphinx_book_theme", "theme/sphinx_book_theme/static/styles/sphinx-book-theme.css"),
    ("sphinx_design", "static/sphinx-design.min.css"),
)  # fmt: skip

BADGE_LOOK_JS = """() => {
  const lum = (c) => {
    const [r, g, b] = c.match(/[\\d.]+/g).slice(0, 3).map(Number).map((v) => {
      v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const opaque = (el) => {
    for (; el; el = el.parentElement) {
      const bg = getComputedStyle(el).backgroundColor;
      if (!/rgba\\(.*, 0\\)$|transparent/.test(bg)) return bg;
    }
    return 'rgb(255, 255, 255)';
  };
  const out = {};
  for (const b of document.querySelectorAll('.sd-badge')) {
    const s = getComputedStyle(b), bg = opaque(b);
    const [hi, lo] = [lum(s.color), lum(bg)].sort((x, y) => y - x);
    out[b.textContent] = {color: s.color, background: bg, border: s.borderTopColor,
                          borderStyle: s.borderTopStyle, contrast: (hi + 0.05) / (lo + 0.05)};
  }
  return out;
}"""


def _badge_classes(role: str) -> str:
    """The classes sphinx-design 0.8 gives a badge role (its ``_make_badge_classes``)."""
    colour = role.removeprefix("bdg-")
    if colour.endswith("-line"):
        colour = colour.removesuffix("-line")
        return f"sd-sphinx-override sd-badge sd-outline-{colour} sd-text-{colour}"
    return f"sd-sphinx-override sd-badge sd-bg-{colour} sd-bg-text-{colour}"


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_badges_are_readable_and_exact_is_not_drawn_as_reproduced(browser, theme):
    """Every badge word's text has a contrast of at least 4.5:1 (WCAG AA) with what lies under
    it, in an "In short" box (a tip admonition) in both colour modes; "exact" (a proof or exact
    check holds) is green like "reproduced" but outlined, so that the two never look alike, and
    no two words share a look."""
    from importlib.util import find_spec

    from attnconv.chapters.shared.badges import CATEGORY_BADGES, VERDICT_BADGES

    words = {word: role for role, word in VERDICT_BADGES.values()}
    words.update(CATEGORY_BADGES)
    badges = "".join(
        f"<span class='{_badge_classes(role)}'>{word}</span> "
        for word, role in words.items()
    )
    context, page = _reader_page(
        browser,
        "<div class='bd-article'><section><div class='admonition tip result-box'>"
        f"<p class='admonition-title'>In short</p><p>{badges}</p></div></section></div>",
        theme=theme,
    )
    for package, css in THEME_CSS:
        spec = find_spec(package)
        if spec is None:
            pytest.skip(f"{package} is not installed")
        page.add_style_tag(path=str(Path(spec.origin).parent / css))
    for css in sphinx_config()[
        "html_css_files"
    ]:  # the book's own, last, as in the book
        page.add_style_tag(path=str(STATIC / css))
    looks = page.evaluate(BADGE_LOOK_JS)
    context.close()
    assert set(looks) == set(words)
    low = {w: round(x["contrast"], 2) for w, x in looks.items() if x["contrast"] < 4.5}
    assert not low, low
    exact, reproduced = looks["exact"], looks["reproduced"]
    assert exact["borderStyle"] == "solid" and exact["border"] == exact["color"]
    assert exact["color"] == reproduced["background"]  # the same green ...
    assert exact["background"] != reproduced["background"]  # ... as an outline
    shown = {
        w: (x["color"], x["background"], x["border"], x["borderStyle"])
        for w, x in looks.items()
    }
    assert len(set(shown.values())) == len(shown), shown


def _themed_page(browser, html: str, theme: str = "light", height: int = 600):
    """A 1280 px page with the installed themes' CSS and the book's own (last, as in the book)."""
    from importlib.util import find_spec

    context, page = _reader_page(browser, html, theme=theme, height=height)
    for package, css in THEME_CSS:
        spec = find_spec(package)
        if spec is None:
            context.close()
            pytest.skip(f"{package} is not installed")
        page.add_style_tag(path=str(Path(spec.origin).parent / css))
    for css in sphinx_config()["html_css_files"]:
        page.add_style_tag(path=str(STATIC / css))
    return context, page


DROPDOWN = (
    "<div class='bd-content'><details class='sd-sphinx-override sd-dropdown sd-card sd-mb-3'>"
    "<summary id='bar' class='sd-summary-title sd-card-header sd-bg-light sd-bg-text-light'>"
    "<span class='sd-summary-text'>Fig. 2: not reproduced</span></summary>"
    "<div class='sd-summary-content sd-card-body'><p>why</p></div></details></div>"
)


@pytest.mark.parametrize(
    "theme, background, color",
    [
        ("light", "rgb(247, 247, 248)", "rgb(20, 24, 30)"),  # the theme's own
        (
            "dark",
            "rgb(41, 49, 61)",
            "rgb(206, 214, 221)",
        ),  # its surface and text colours
    ],
)
def test_verdict_dropdown_bars_follow_the_colour_mode(
    browser, theme, background, color
):
    """The "light" dropdown bars (the verdicts of the experiment chapters) are no light grey slab
    on the dark page: the theme's surface colour with its text colour."""
    context, page = _themed_page(browser, DROPDOWN, theme=theme)
    style = "(p) => getComputedStyle(document.getElementById('bar'))[p]"
    assert page.evaluate(style, "backgroundColor") == background
    assert page.evaluate(style, "color") == color
    context.close()


SIDEBAR_LEAK_JS = """() => {
  const s = document.querySelector('.bd-sidebar-primary');
  const item = document.querySelector('.sidebar-primary-item:has(> .search-button-field)');
  const seen = [], tops = [];
  for (let scroll = 200; scroll <= 800; scroll += 8) {  // entries and captions pass beneath
    s.scrollTop = scroll;
    const box = s.getBoundingClientRect(), r = item.getBoundingClientRect();
    tops.push(r.top - box.top);
    for (let y = box.top + 1; y < r.bottom - 1; y += 2)
      for (let x = box.left + 2; x < box.right - 4; x += 4) {
        const e = document.elementFromPoint(x, y);
        if (e && e.closest('li, p.caption')) seen.push([scroll, x, y]);
      }
  }
  return {top: Math.max(...tops.map(Math.abs)), seen: seen.length, first: seen[0] || null};
}"""


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_nothing_shows_through_around_the_sticky_search_field(browser, theme):
    """With the theme's sidebar (1rem of padding): once the sidebar is scrolled, no entry or part
    caption of the list shows above or beside the search field; its opaque item covers the
    sidebar's top band and its full width, side paddings included."""
    context, page = _themed_page(
        browser,
        _sidebar(
            "style='height:300px;width:256px'",
            "'sidebar-primary-items__start sidebar-primary__section'",
            "<div class='sidebar-primary-item'><p style='margin:0'>Self-attention and"
            " convolution, executed</p></div>",
        ),
        theme=theme,
    )
    out = page.evaluate(SIDEBAR_LEAK_JS)
    context.close()
    assert out["top"] == 0 and out["seen"] == 0, out


def test_code_scrolls_and_outputs_wrap_at_1280(browser):
    """At 1280 px a long line of code (an input, a source listing) keeps to one line and scrolls
    inside its box; a printed output wraps; the page itself never scrolls sideways."""
    long = "x = " + "value + " * 30 + "1"
    context, page = _themed_page(
        browser,
        "<div class='bd-article' style='width:700px'><section>"
        "<div class='cell'><div class='cell_input'><div class='highlight-ipython3'>"
        f"<div class='highlight'><pre id='input'>{long}</pre></div></div></div>"
        "<div class='cell_output'><div class='highlight-python'><div class='highlight'>"
        f"<pre id='listing'>{long}</pre></div></div>"
        "<div class='output stream highlight-myst-ansi'><div class='highlight'>"
        f"<pre id='printed'>{long}</pre></div></div></div></div></section></div>",
    )
    look = """(id) => { const p = document.getElementById(id), s = getComputedStyle(p);
      return [Math.round(p.clientHeight / parseFloat(s.lineHeight)), p.scrollWidth > p.clientWidth,
              p.getBoundingClientRect().right <= 708]; }"""
    for code in ("input", "listing"):
        lines, scrolls, inside = page.evaluate(look, code)
        assert scrolls and inside, code
    lines, scrolls, _ = page.evaluate(look, "printed")
    assert not scrolls and lines >= 2
    page_scrolls = page.evaluate(
        "() => document.documentElement.scrollWidth > document.documentElement.clientWidth"
    )
    assert not page_scrolls
    context.close()


def test_table_text_is_14px_and_captions_normal(browser):
    context, page = _themed_page(
        browser,
        "<article class='bd-article'><table><caption>Table 1.1 — A table</caption>"
        "<tr><th>check</th></tr><tr><td id='td'>1.00</td></tr></table></article>",
    )
    style = "([sel, p]) => getComputedStyle(document.querySelector(sel))[p]"
    assert page.evaluate(style, ["#td", "fontSize"]) == "14px"
    assert page.evaluate(style, ["th", "fontSize"]) == "14px"
    assert page.evaluate(style, ["caption", "fontWeight"]) == "400"
    context.close()


def test_plotly_figures_take_the_column_width(browser, tmp_path):
    """A book figure (figure_html) has no fixed width: in the 624 px column of a 1200 px window it
    is 624 px wide, in a wider column FIGURE_WIDTH (the width it is designed for), and it follows
    the column when the window is resized."""
    plotly = pytest.importorskip("plotly")
    from attnconv.chapters.shared.plotly_style import (
        FIGURE_WIDTH,
        figure_html,
        plotly_go,
    )

    go = plotly_go()
    fig = go.Figure(
        go.Scatter(x=[0, 1], y=[1, 0]), layout={"autosize": True, "height": 300}
    )
    with pytest.raises(ValueError, match="fixed width"):
        figure_html(go.Figure(layout={"width": 700}), "fixed")
    plotly_js = (
        Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
    )
    page_file = tmp_path / "page.html"
    page_file.write_text(
        f"<html><head><script src='{plotly_js.as_uri()}'></script></head><body>"
        f"<div class='bd-article' id='column' style='width:624px'>"
        f"{figure_html(fig, 'fig').data}</div></body></html>"
    )
    context = browser.new_context(viewport={"width": 1200, "height": 600})
    page = context.new_page()
    page.goto(page_file.as_uri())
    page.wait_for_function("() => document.querySelector('#fig svg.main-svg')")
    width = (
        "() => Math.round(document.querySelector('#fig svg.main-svg')"
        ".getBoundingClientRect().width)"
    )
    assert page.evaluate(width) == 624
    page.evaluate("() => { document.getElementById('column').style.width = '790px'; }")
    page.set_viewport_size(
        {"width": 1600, "height": 600}
    )  # Plotly follows the resize event
    page.wait_for_function(f"() => ({width})() === {FIGURE_WIDTH}", timeout=5_000)
    page.evaluate("() => { document.getElementById('column').style.width = '600px'; }")
    page.set_viewport_size({"width": 1100, "height": 600})
    page.wait_for_function(f"() => ({width})() === 600", timeout=5_000)
    context.close()


def test_code_is_14px_at_line_height_1_45_from_1280px():
    """Listings and outputs at the theme's 14 px and a reading line height of 1.45; 13 px only
    in windows narrower than 1280 px, where 89 characters would not fit at 14 px."""
    css = (STATIC / "reader.css").read_text()
    rule = re.search(
        r"\.bd-article div\.output pre \{\s*font-size: 14px;\s*line-height: 1\.45;\s*\}",
        css,
    )
    assert rule is not None and not css[: rule.start()].rstrip().endswith("{")
    narrow = re.findall(
        r"@media \(min-width: 800px\) and \(max-width: ([\d.]+)px\)", css
    )
    assert "1279.98" in narrow
    assert re.search(r"\.bd-sidebar-primary \{ flex-basis: 17%; \}", css)


def test_a_link_to_a_collapsed_block_opens_it(browser):
    """book/_static/open-target.js: following a link to a closed <details> (the chapter's full
    source, from an excerpt's "full source below"), or loading a page at its anchor, opens it."""
    assert "open-target.js" in sphinx_config()["html_js_files"]
    context = browser.new_context(viewport={"width": 1280, "height": 600})
    page = context.new_page()
    page.set_content(
        "<html><body><p><a id='go' href='#src'>below</a></p>"
        "<div style='height:2000px'></div>"
        "<details id='src'><summary>Full source</summary><pre>code</pre></details>"
        "<details id='other'><summary>Checks</summary></details></body></html>"
    )
    page.add_script_tag(path=str(STATIC / "open-target.js"))
    is_open = lambda i: page.evaluate(f"document.getElementById('{i}').open")  # noqa: E731
    assert not is_open("src")
    page.click("#go")
    assert is_open("src") and not is_open("other")
    context.close()


def test_layer_ranges_get_an_en_dash_outside_code_and_maths():
    """reader_html's third touch: "layers 4-6" in running text (a claim's title, a table a
    notebook prints) reads "layers 4–6"; code, literal output and maths keep their hyphens,
    and other hyphenated numbers (dates) are left alone."""
    import sys

    from docutils import nodes

    sys.path.insert(0, str(EXT))
    try:
        from reader_html import en_dash_layer_ranges
    finally:
        sys.path.remove(str(EXT))
    para = nodes.paragraph()
    para += nodes.Text(
        "Fig. 6: layers 4-6 deviate; Layer 1-2 minus 3-6 on 2026-11-21, "
    )
    para += nodes.literal(text="layers 3-6")
    para += nodes.Text("“while deeper layers (layers 3-6) also”, share 0.69-1.00, ")
    block = nodes.literal_block(text="layers 5-6")
    section = nodes.section()
    section += [para, block, nodes.math(text="layers 1-2")]
    assert (
        en_dash_layer_ranges(section) == 2
    )  # the quotation is left as the paper prints it
    assert para.astext() == (
        "Fig. 6: layers 4\u20136 deviate; Layer 1\u20132 minus 3\u20136 on 2026-11-21, "
        "layers 3-6“while deeper layers (layers 3-6) also”, share 0.69\u20131.00, "
    )
    assert block.astext() == "layers 5-6"
    assert section[2].astext() == "layers 1-2"
    # a range a nowrap span keeps on one line (keep_ranges), but not a date in one
    cell = nodes.paragraph()
    for date_or_range in ("5-6", "2026-11-21"):
        cell += nodes.raw("", '<span class="nowrap">', format="html")
        cell += nodes.Text(date_or_range)
        cell += nodes.raw("", "</span>", format="html")
    assert en_dash_layer_ranges(cell) == 1
    assert cell.astext() == '<span class="nowrap">5\u20136</span>' + (
        '<span class="nowrap">2026-11-21</span>'
    )


def test_every_glossary_entry_has_a_plain_tooltip():
    """reader_html's fourth touch: a link to a glossary entry carries the entry's first
    sentences as its title, as plain text (no MyST role, no TeX), its term first."""
    import sys

    sys.path.insert(0, str(EXT))
    try:
        from reader_html import TOOLTIP_CHARS, glossary_definitions
    finally:
        sys.path.remove(str(EXT))
    text = (ROOT / "book" / "glossary.md").read_text()
    tips = glossary_definitions(text)
    labels = re.findall(r"^\((glossary-[\w-]+)\)=$", text, re.M)
    assert labels and set(tips) == set(labels)
    for label, tip in tips.items():
        assert not re.search(r"[\\$`{]ref|\\[a-z]|\$|`|\*\*", tip), (label, tip)
        first = tip.split(". ")[0]
        assert len(tip) <= max(TOOLTIP_CHARS + 60, len(first) + 1), (label, tip)
    assert tips["glossary-one-hot"].startswith(
        "Nearly one-hot head: A head that puts more than 0.9 of its attention"
    )
    assert "α → ∞" in tips["glossary-one-hot"]


def test_a_source_listings_header_is_set_small_other_paragraphs_are_not(browser):
    """reader.css: the paragraph just before a code block in a cell's output (a source
    listing's "name — file") is smaller than the text; a paragraph that is
    not followed by code keeps the text's size."""
    context, page = _reader_page(
        browser,
        "<div class='bd-content' style='font:16px sans-serif'><div class='cell_output'>"
        "<p id='note'>Eq. (9).</p><p id='head'>f — core/f.py</p>"
        "<div class='highlight-python'><pre>def f(): pass</pre></div></div></div>",
    )
    size = lambda i: page.evaluate(  # noqa: E731
        f"parseFloat(getComputedStyle(document.getElementById('{i}')).fontSize)"
    )
    assert size("note") == 16
    assert size("head") < 0.85 * size("note")
    context.close()
