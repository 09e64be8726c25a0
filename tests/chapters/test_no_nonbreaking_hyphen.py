"""No non-breaking hyphen (U+2011) anywhere in the book's sources or in what the package writes
into its pages: quotations stay byte-verbatim ("layers 3-6", as the paper has it) and the
browser's search finds "3-6". A range or compound that must not break is set in a
``<span class="nowrap">`` instead (book/_static/tables.css)."""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NBH = "\u2011"


def _book_sources():
    book = ROOT / "book"
    for path in sorted(book.glob("*.md")):
        yield path, path.read_text()
    for path in sorted(book.glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        yield path, "\n".join("".join(c["source"]) for c in cells)
        # and what the page shows: its saved outputs
        yield (
            path,
            json.dumps([c.get("outputs", []) for c in cells], ensure_ascii=False),
        )


def test_no_page_source_holds_a_nonbreaking_hyphen():
    found = [p.name for p, text in _book_sources() if NBH in text or "\\u2011" in text]
    assert not found, found


def test_the_package_never_writes_one():
    for path in sorted((ROOT / "attnconv").rglob("*.py")):
        text = path.read_text()
        assert NBH not in text and "\\u2011" not in text, path


def test_keep_words_and_keep_ranges_keep_ascii_hyphens_in_a_nowrap_span():
    from attnconv.chapters.shared.tables import keep_ranges, keep_words

    text = "layers 3-6 of the 2-layer run on 2026-11-21, {ref}`ch. 12 <ch-six-layers>`"
    words, ranges = keep_words(text), keep_ranges(text)
    assert NBH not in words + ranges
    assert '<span class="nowrap">3-6</span>' in words
    assert '<span class="nowrap">2-layer</span>' in words
    assert '<span class="nowrap">3-6</span>' in ranges and "2-layer" in ranges
    assert '<span class="nowrap">2-layer</span>' not in ranges
    assert (
        "<ch-six-layers>" in words and "<ch-six-layers>" in ranges
    )  # labels untouched
    # the text a reader sees (tags dropped) is the text typed
    import re

    assert re.sub(r"<span[^>]*>|</span>", "", words) == text


def test_the_nowrap_class_is_styled():
    css = (ROOT / "book/_static/tables.css").read_text()
    assert ".nowrap { white-space: nowrap" in css
