"""book/_static/figure-zoom.js: a figure shown smaller than its image opens at its full size in
a modal dialog, by a click or by Enter, and Esc closes it and gives the focus back; a figure
shown at its own size is left alone. Skipped without Chromium."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "book" / "_static" / "figure-zoom.js"


def test_the_script_is_registered_and_present():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]
    assert "figure-zoom.js" in config["html_js_files"]
    assert SCRIPT.is_file() and "showModal" in SCRIPT.read_text()


def _png(width: int, height: int) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(width / 100, height / 100), dpi=100)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


STATE_JS = """() => { const d = document.querySelector('dialog.figure-zoom');
  return {open: !!(d && d.open), src: d ? d.querySelector('img').src : null,
          shown: d && d.open ? d.querySelector('img').getBoundingClientRect().width : 0,
          focus: document.activeElement.id || document.activeElement.tagName}; }"""


def test_a_small_figure_opens_at_full_size_and_closes_with_esc(browser):
    big, small = _png(800, 400), _png(150, 100)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_content(
        "<html><body><div style='width:400px'>"
        f"<div class='cell_output'><img id='a' src='{big}' alt='a plot' style='width:100%'></div>"
        f"<div class='cell_output'><img id='b' src='{small}' alt='small'></div></div>"
        f"<script>{SCRIPT.read_text()}</script></body></html>"
    )
    page.wait_for_function("document.getElementById('a').dataset.zoom === '1'")
    assert page.get_attribute("#a", "role") == "button"
    assert page.get_attribute("#a", "aria-label") == "a plot (enlarge)"
    assert (
        page.get_attribute("#b", "role") is None
    )  # shown at its own size: nothing to gain
    page.click("#a")
    got = page.evaluate(STATE_JS)
    assert got["open"] and got["src"] == big and got["shown"] > 700  # its own 800 px
    page.keyboard.press("Escape")
    got = page.evaluate(STATE_JS)
    assert not got["open"] and got["focus"] == "a"
    page.keyboard.press("Enter")  # the focus is on the figure: Enter opens it again
    assert page.evaluate(STATE_JS)["open"]
    page.close()


def test_a_figure_sphinx_links_to_its_png_opens_in_the_page(browser):
    """Sphinx wraps a scaled image in a link to its PNG: a click (or Enter on the link) opens the
    dialog instead of leaving the page."""
    big = _png(800, 400)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_content(
        "<html><body><div style='width:400px'><div class='cell_output'>"
        f"<a id='l' class='reference internal image-reference' href='{big}'>"
        f"<img id='a' src='{big}' alt='a plot' style='width:100%'></a></div></div>"
        f"<script>{SCRIPT.read_text()}</script></body></html>"
    )
    page.wait_for_function("document.getElementById('a').dataset.zoom === '1'")
    assert page.get_attribute("#a", "tabindex") is None  # the link is the one tab stop
    page.click("#a")
    page.wait_for_timeout(200)
    got = page.evaluate(STATE_JS)
    assert got["open"] and page.url == "about:blank"  # still on the page
    page.keyboard.press("Escape")
    assert page.evaluate(STATE_JS)["focus"] == "l"
    page.keyboard.press("Enter")
    assert page.evaluate(STATE_JS)["open"]
    page.close()
