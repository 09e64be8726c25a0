"""The contents-column check (check_book's ``toc-overflow``, tests/browser/book_checks/browser.py)
on a small page: an entry holding a formula wider than the column is reported, an entry of
plain words that wraps is not. Skipped without Chromium."""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("check_book", HERE / "check_book.py")
check_book = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_book)

# a stand-in for a typeset formula: one box that cannot wrap
FORMULA = (
    "<span style='display:inline-block;white-space:nowrap'>" + "D_h " * 30 + "</span>"
)
COLUMN = (
    "<div class='bd-sidebar-secondary' style='width:200px;overflow:visible'><nav>"
    "<a href='#a'>" + "a heading of plain words that wraps " * 3 + "</a>"
    "<a href='#b'>Narrow heads: " + FORMULA + "</a>"
    "</nav></div>"
)


def test_a_formula_wider_than_the_contents_column_is_reported(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_content(f"<html><body>{COLUMN}</body></html>")
    cut = page.evaluate(check_book.TOC_OVERFLOW_JS)
    context.close()
    assert len(cut) == 1 and cut[0].startswith("Narrow heads"), cut
