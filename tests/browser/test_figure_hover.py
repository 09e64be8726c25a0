"""book/_static/figure-hover.js: the spots a cell lists (hover_spots.hover_html) sit on their
places in the figure's image, in light mode and in dark mode (where the image is padded as a
card), and show their text on hover, on focus and on a tap; Esc hides it. Skipped without
Chromium."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "book" / "_static" / "figure-hover.js"
CSS = ROOT / "book" / "_static" / "reader.css"


def _image() -> str:
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(8, 4), dpi=100)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


IMAGE = _image()
SPOTS = [
    {"x": 0.25, "y": 0.5, "text": "first\nline two"},
    {"x": 0.9, "y": 0.1, "text": "b"},
]


def test_the_script_is_registered_and_present():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]
    assert "figure-hover.js" in config["html_js_files"]
    assert "hover-spots" in SCRIPT.read_text() and ".hover-spot" in CSS.read_text()


def _page(browser, theme: str, next_cell: bool = False):
    """A figure with hover values in its own cell, or (``next_cell``) in the cell after it,
    as a page shows a figure whose caption names one output."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    data = html.escape(json.dumps(SPOTS), quote=True)
    between = "</div><div class='cell'>" if next_cell else ""
    page.set_content(
        f"<html data-theme='{theme}'><head><style>{CSS.read_text()}</style></head><body>"
        "<div class='bd-content'><div class='cell'><div class='cell_output'><figure>"
        f"<a class='image-reference' href='#'><img id='fig' src='{IMAGE}' width='400' "
        f"height='200'></a></figure></div>{between}<div class='cell_output'>"
        f"<div class='hover-spots' data-label='test figure' data-spots=\"{data}\"></div>"
        f"</div></div></div><script>{SCRIPT.read_text()}</script></body></html>"
    )
    page.wait_for_selector("button.hover-spot")
    return page


PLACES_JS = """() => {
  const img = document.getElementById('fig').getBoundingClientRect();
  const pad = parseFloat(getComputedStyle(document.getElementById('fig')).paddingLeft) || 0;
  return [...document.querySelectorAll('button.hover-spot')].map(b => {
    const r = b.getBoundingClientRect();
    return {dx: (r.left + r.width / 2 - img.left - pad) / (img.width - 2 * pad),
            dy: (r.top + r.height / 2 - img.top - pad) / (img.height - 2 * pad),
            label: b.getAttribute('aria-label')};
  });
}"""
TIP_JS = """() => { const t = document.getElementById('hover-tip');
  return t && !t.hidden ? t.textContent : null; }"""


def test_spots_sit_on_their_places_in_light_and_dark_mode(browser):
    for theme, next_cell in (("light", False), ("dark", False), ("light", True)):
        page = _page(browser, theme, next_cell)
        got = page.evaluate(PLACES_JS)
        for spot, place in zip(SPOTS, got):
            assert abs(place["dx"] - spot["x"]) < 0.005, (theme, place)
            assert abs(place["dy"] - spot["y"]) < 0.01, (theme, place)
        assert got[0]["label"] == "first; line two"
        page.close()


def test_the_text_shows_on_hover_focus_and_tap_and_esc_hides_it(browser):
    page = _page(browser, "light")
    spot = page.locator("button.hover-spot").first
    assert page.evaluate(TIP_JS) is None
    spot.hover()
    assert page.evaluate(TIP_JS) == "first\nline two"
    page.mouse.move(0, 0)
    assert page.evaluate(TIP_JS) is None
    spot.focus()
    assert page.evaluate(TIP_JS) == "first\nline two"
    page.keyboard.press("Escape")
    assert page.evaluate(TIP_JS) is None
    page.locator("button.hover-spot").nth(1).click()
    assert page.evaluate(TIP_JS) == "b"
    page.close()


def test_check_book_flags_hover_values_without_spots_and_passes_them_with(browser):
    """check_book's hover check (book_checks/live.py): a figure whose hover values the script
    never laid fails; the same figure with the script passes."""
    import importlib.util

    here = Path(__file__).resolve().parent
    spec = importlib.util.spec_from_file_location("check_book", here / "check_book.py")
    check_book = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check_book)
    from book_checks.common import Report
    from book_checks.live import check_live_widgets

    for with_script in (True, False):
        page = _page(browser, "light") if with_script else browser.new_page()
        if not with_script:
            data = html.escape(json.dumps(SPOTS), quote=True)
            page.set_content(
                f"<div class='cell'><img src='{IMAGE}'><div class='hover-spots' "
                f"data-label='bare' data-spots=\"{data}\"></div></div>"
            )
        rep, info = Report(), {}
        check_live_widgets(page, rep, "page.html", info)
        failed = [text for kind in rep.failures.values() for _, text in kind]
        assert bool(failed) is not with_script, failed
        assert info["live_widgets"][0]["listed"] == len(SPOTS)
        page.close()


BADGE_JS = """() => {
  const b = document.querySelector('.hover-figure > .hover-badge');
  if (!b) return null;
  const r = b.getBoundingClientRect(), img = document.getElementById('fig').getBoundingClientRect();
  return {text: b.textContent, under: r.top >= img.bottom && r.top - img.bottom < 12
          && r.left >= img.left && Math.abs(r.right - img.right) < 12,
          hidden: b.getAttribute('aria-hidden')};
}"""


def test_the_figure_says_once_that_it_has_values(browser):
    """One small label just under the image's right edge, never over the figure (not a sentence
    under every figure), hidden from screen readers, which hear each spot's own label
    instead."""
    for theme in ("light", "dark"):
        page = _page(browser, theme)
        got = page.evaluate(BADGE_JS)
        want = {"text": "values on hover · Tab", "under": True, "hidden": "true"}
        assert got == want, got
        assert page.locator(".hover-badge").count() == 1
        page.close()
