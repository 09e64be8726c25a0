"""The sidebar shows the page being read (book/_static/sidebar-current.js): on load the current
page's entry is scrolled to the sidebar's middle, whatever sidebar scroll the theme restored
from the previous page, and the page itself does not move.

The pages here carry the installed pydata-sphinx-theme's own script, which restores the previous
page's sidebar scroll from sessionStorage (and, on a first visit, scrolls a low entry to a
quarter of the sidebar's height). Run in a browser when Chromium and playwright are installed
(as for ``make check-book``); skipped otherwise."""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "book" / "_static" / "sidebar-current.js"
ENTRIES = 80


def test_sidebar_script_is_registered_and_present():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]
    assert "sidebar-current.js" in config["html_js_files"]
    assert SCRIPT.is_file()
    js = SCRIPT.read_text()
    assert "li.current > a" in js and ".bd-sidebar-primary" in js
    assert "scrollIntoView(" not in js  # it would move the page as well


def _theme_script() -> Path:
    spec = find_spec("pydata_sphinx_theme")
    if spec is None:
        pytest.skip("pydata-sphinx-theme is not installed")
    path = (
        Path(spec.origin).parent
        / "theme/pydata_sphinx_theme/static/scripts/pydata-sphinx-theme.js"
    )
    if not path.is_file():
        pytest.skip(f"no theme script at {path}")
    return path


def _page(tmp_path: Path, current: int, with_script: bool) -> Path:
    """A page laid out as the theme lays out the book: a band above (so that the page itself
    could scroll), a sticky sidebar 300 px high with the sticky search row and ENTRIES entries,
    the entry `current` marked as the theme marks the current page."""
    items = "".join(
        f"<li class='toctree-l1{' current active' if i == current else ''}'>"
        f"<a class='{'current ' if i == current else ''}reference internal' "
        f"href='p{i}.html'>chapter {i}</a></li>"
        for i in range(ENTRIES)
    )
    script = f"<script src='{SCRIPT.as_uri()}'></script>" if with_script else ""
    html = (
        "<!DOCTYPE html><html><head><style>body{margin:0;font:16px sans-serif}"
        ".bd-sidebar-primary{position:sticky;top:0;height:300px;width:260px;"
        "overflow-y:auto;float:left} li{height:24px}</style>"
        # the theme's settings, as Sphinx writes them (its script reads them)
        "<script>const DOCUMENTATION_OPTIONS = {VERSION: '', LANGUAGE: 'en'};</script>"
        f"{script}<script defer src='{_theme_script().as_uri()}'></script></head><body>"
        "<div style='height:650px'>a band above the sidebar</div>"
        "<div class='bd-sidebar-primary bd-sidebar'>"
        "<div class='sidebar-primary-item' style='position:sticky;top:0;background:#fff'>"
        "<button class='search-button-field'>Search</button></div>"
        "<div class='sidebar-primary-item'><nav class='bd-links bd-docs-nav'>"
        f"<div class='bd-toc-item navbar-nav active'><ul class='nav bd-sidenav'>{items}</ul>"
        "</div></nav></div></div><main style='height:3000px'>text</main></body></html>"
    )
    out = tmp_path / f"p{current}{'_with' if with_script else ''}.html"
    out.write_text(html)
    return out


WHERE_JS = """() => {
  const side = document.querySelector('.bd-sidebar-primary');
  const a = document.querySelector('li.current > a');
  const s = side.getBoundingClientRect(), r = a.getBoundingClientRect();
  return {offset: (r.top + r.bottom) / 2 - (s.top + s.bottom) / 2,
          inView: r.top >= s.top && r.bottom <= s.bottom,
          scrollTop: side.scrollTop, pageY: window.scrollY};
}"""


def _open(browser, tmp_path: Path, stored: str, current: int, with_script: bool):
    """Open the page for entry `current` after a page whose sidebar was left at `stored`
    ("top" or "bottom"): the theme keeps it in sessionStorage between the two."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    # the theme's script misses parts of its page here (its other features): only errors
    # from the book's script count
    page.on("pageerror", lambda e: errors.append(e.stack or str(e)))
    page.goto(_page(tmp_path, 0, False).as_uri())
    # the reader leaves the sidebar scrolled; the theme stores its scroll as the page unloads
    page.evaluate(
        "(v) => { document.querySelector('.bd-sidebar-primary').scrollTop = v; }",
        0 if stored == "top" else 100_000,
    )
    page.goto(_page(tmp_path, current, with_script).as_uri(), wait_until="load")
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => r()))")
    where = page.evaluate(WHERE_JS)
    context.close()
    assert not [e for e in errors if SCRIPT.name in e], errors
    return where


@pytest.mark.parametrize("stored, current", [("top", 70), ("bottom", 30)])
def test_the_current_entry_is_centred_in_the_sidebar(
    browser, tmp_path, stored, current
):
    # the theme alone keeps the previous page's sidebar scroll: the entry is out of view
    before = _open(browser, tmp_path, stored, current, with_script=False)
    assert not before["inView"], before
    after = _open(browser, tmp_path, stored, current, with_script=True)
    assert after["inView"], after
    assert abs(after["offset"]) <= 1, after  # in the sidebar's middle
    assert after["pageY"] == 0, after  # the page itself did not move


def test_a_first_visit_also_centres_the_entry(browser, tmp_path):
    """With nothing stored the theme puts a low entry a quarter down; the script centres it."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(_page(tmp_path, 70, True).as_uri(), wait_until="load")
    where = page.evaluate(WHERE_JS)
    context.close()
    assert abs(where["offset"]) <= 1 and where["pageY"] == 0, where
