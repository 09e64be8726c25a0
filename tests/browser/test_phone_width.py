"""The phone-width check (check_book's ``overflow-phone``, tests/browser/book_checks/browser.py)
on a small page: a wide table, a long inline name and a wide display equation make a 390 px page
wider than its window without the book's reader.css, and fit with it, while at 1280 px the CSS
changes nothing. Skipped without Chromium."""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent
CSS = (HERE.parents[1] / "book" / "_static" / "reader.css").read_text()
spec = importlib.util.spec_from_file_location("check_book", HERE / "check_book.py")
check_book = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_book)

ROW = "".join(f"<td>column {i} with words</td>" for i in range(8))
BODY = (
    "<main><article class='bd-article'>"
    f"<table><tr>{ROW}</tr></table>"
    "<p><code class='literal'><span class='pre'>"
    "attnconv.experiments.runs.verify_first_epoch_against_the_saved_history"
    "</span></code></p>"
    "<div class='math'>" + "x + " * 60 + "y</div>"
    "</article></main>"
)


def _phone(browser, css: str):
    context = browser.new_context(viewport=check_book.VIEWPORT)
    page = context.new_page()
    page.set_content(
        f"<html><head><style>{css}</style></head><body>{BODY}</body></html>"
    )
    rep, info = check_book.Report(), {}
    check_book.phone_checks(page, rep, "book/x.html", info)
    page.set_viewport_size({"width": 1280, "height": 900})
    wide = page.evaluate(
        "() => document.querySelector('table').getBoundingClientRect().width"
    )
    context.close()
    return rep, info, wide


def test_a_page_wider_than_a_phone_fails_and_reader_css_fits_it(browser):
    bare, bare_info, bare_wide = _phone(browser, "")
    styled, styled_info, styled_wide = _phone(browser, CSS)
    assert bare.failures["overflow-phone"], "the bare page should overflow at 390 px"
    assert bare_info["phone_scroll_width"] > check_book.PHONE_WIDTH
    assert not styled.failures.get("overflow-phone"), dict(styled.failures)
    assert styled_info["phone_scroll_width"] <= check_book.PHONE_WIDTH + 1
    assert styled_wide == bare_wide  # at 1280 px the CSS leaves the table as it was
