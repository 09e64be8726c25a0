"""book/_static/plotly-keys.js and its browser check (tests/browser/book_checks/plotly_keys.py)
on a small page holding a Plotly figure drawn like the book's (a slider stepping through frames,
Play and Pause buttons): with the script the check passes and the keys move the figure; without
it, or with a script whose range input does not apply the step, the check fails. Skipped without
Chromium or plotly."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
KEYS_JS = ROOT / "book" / "_static" / "plotly-keys.js"
spec = importlib.util.spec_from_file_location("check_book", HERE / "check_book.py")
check_book = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_book)

# A figure like Fig. 4.2: one heatmap, a frame per step, a slider whose steps animate to them,
# Play and Pause buttons (as ch. 7b's), drawn after a delay (as a figure drawn late would be).
DRAW_JS = """() => new Promise(done => setTimeout(() => {
  const frames = [0, 1, 2, 3].map(k => ({name: String(k),
    data: [{z: [[k, 1], [2, k * k]], type: 'heatmap'}]}));
  const step = k => ({label: 'a' + k, method: 'animate',
    args: [[String(k)], {mode: 'immediate', frame: {duration: 0, redraw: true},
                         transition: {duration: 0}}]});
  Plotly.newPlot('fig', [{z: [[0, 1], [2, 0]], type: 'heatmap'}], {
    width: 400, height: 360,
    sliders: [{active: 0, currentvalue: {prefix: '<i>α</i> = '}, steps: [0, 1, 2, 3].map(step)}],
    updatemenus: [{type: 'buttons', showactive: false, buttons: [
      {label: '▶ play', method: 'animate',
       args: [null, {mode: 'immediate', fromcurrent: false,
                     frame: {duration: 150, redraw: true}, transition: {duration: 0}}]},
      {label: '❚❚ pause', method: 'animate',
       args: [[null], {mode: 'immediate', frame: {duration: 0, redraw: false},
                       transition: {duration: 0}}]}]}]
  }, {responsive: true}).then(gd => Plotly.addFrames(gd, frames)).then(done);
}, 300))"""


def _page(browser, script: str | None):
    plotly = pytest.importorskip("plotly")
    plotly_js = (
        Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
    )
    context = browser.new_context(viewport=check_book.VIEWPORT)
    page = context.new_page()
    errors: list[str] = []
    requests: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    page.set_content(
        "<html><body><main><article style='width: 500px'><div class='output'>"
        "<div id='fig' class='plotly-graph-div'></div></div></article></main></body></html>"
    )
    page.add_script_tag(path=str(plotly_js))
    if script is not None:
        page.add_script_tag(content=script)  # the page has loaded: it starts searching
    page.evaluate(DRAW_JS)  # drawn after the script's first search
    page.wait_for_timeout(600)  # a later search finds it
    return context, page, errors, requests


def _check(page):
    rep, info = check_book.Report(), {}
    check_book.check_plotly_keys(page, rep, "book/x.html", info)
    return rep, info


def test_plotly_keys_js_is_registered_and_offline():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]
    assert "plotly-keys.js" in config["html_js_files"]
    js = KEYS_JS.read_text()
    for needed in ("plotly_sliderchange", "plotly_animated", 'type = "range"'):
        assert needed in js, needed
    assert not re.search(r"https?://|fetch\(|XMLHttpRequest|import\(", js)


def test_the_keys_move_the_figure_and_the_check_passes(browser):
    context, page, errors, requests = _page(browser, KEYS_JS.read_text())
    labels = page.evaluate(
        "() => [...document.querySelectorAll('.plotly-keys label, .plotly-keys button')]"
        ".map(e => e.textContent)"
    )
    assert labels == ["▶ play", "❚❚ pause", "α = a0"]  # markup stripped from the prefix
    rep, info = _check(page)
    # the keys by hand: End goes to the last step, the figure shows its frame
    page.focus(".plotly-keys input")
    page.keyboard.press("End")
    page.wait_for_timeout(300)
    end = page.evaluate(
        "() => { const gd = document.getElementById('fig');"
        " return [gd.layout.sliders[0].active, gd.data[0].z[1][1],"
        " document.querySelector('.plotly-keys input').getAttribute('aria-valuetext')]; }"
    )
    wide = page.evaluate(
        "() => document.querySelector('.plotly-keys').getBoundingClientRect().width"
    )
    context.close()
    assert not errors and not rep.failures, (errors, dict(rep.failures))
    (entry,) = info["plotly_keys"]
    assert entry["ranges"] == 1 and entry["native_buttons"] == 2
    (keys,) = entry["keys"]
    assert (keys["active_before"], keys["active_after"]) == (0, 1)
    assert keys["figure_changes"] and keys["follows_mouse"]
    assert keys["label_after"] == "α = a1"
    assert entry["play_changes_figure"]
    assert end == [3, 9, "α = a3"]
    assert wide <= 500  # within the column
    assert all(u.startswith(("about:", "data:")) for u in requests), requests


def test_a_figure_without_the_script_fails(browser):
    context, page, _, _ = _page(browser, None)
    rep, _ = _check(page)
    context.close()
    texts = [t for _, t in rep.failures["interactive"]]
    assert any("no keyboard controls" in t for t in texts), texts


def test_a_range_input_that_does_not_apply_its_step_fails(browser):
    broken = KEYS_JS.read_text().replace(
        "var applied = applyStep(gd, i, k);", "var applied = null;"
    )
    assert broken != KEYS_JS.read_text()
    context, page, _, _ = _page(browser, broken)
    rep, _ = _check(page)
    context.close()
    texts = [t for _, t in rep.failures["interactive"]]
    assert any("the Plotly slider stays at step 0" in t for t in texts), texts
    assert any("does not change the figure" in t for t in texts), texts


def test_a_range_input_that_does_not_follow_the_mouse_fails(browser):
    broken = KEYS_JS.read_text().replace("gd.on(ev, follow);", "")
    context, page, _, _ = _page(browser, broken)
    rep, _ = _check(page)
    context.close()
    texts = [t for _, t in rep.failures["interactive"]]
    assert any("leaves the range input at" in t for t in texts), texts


def test_the_repeated_controls_stay_out_of_sight_until_focused(browser):
    """The native controls repeat the figure's own: out of sight (1 px) for the mouse, shown
    under the figure while one of them has the keyboard's focus."""
    context, page, errors, _ = _page(browser, KEYS_JS.read_text())
    page.wait_for_selector(".plotly-keys input", state="attached")
    height = (
        "() => document.querySelector('.plotly-keys').getBoundingClientRect().height"
    )
    hidden = page.evaluate(height)
    page.focus(".plotly-keys input")
    shown = page.evaluate(height)
    context.close()
    assert not errors
    assert hidden <= 1 and shown > 20, (hidden, shown)
