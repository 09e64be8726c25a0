"""Every figure of the book's notebooks carries a number and caption, and alt text that describes
the picture: not missing, not a file path, not the caption's title repeated ("Figure: ...")."""

import json
import re
from pathlib import Path

BOOK = Path(__file__).resolve().parents[2] / "book"


def _figures():
    for path in sorted(BOOK.glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            meta = cell.get("metadata", {}).get("mystnb", {})
            if "figure" in meta:
                yield path.name, meta


def test_every_figure_has_a_caption_and_descriptive_alt_text():
    figures = list(_figures())
    assert len(figures) > 50
    for name, meta in figures:
        caption = meta["figure"].get("caption", "")
        assert caption.startswith("**"), (name, caption[:40])
        alt = meta.get("image", {}).get("alt", "")
        where = (name, caption[:50])
        assert len(alt.split()) >= 10, where  # a sentence, not a label
        assert not re.match(r"(?i)figure\b", alt), where
        assert "/" not in alt.split()[0] and not alt.endswith(".png"), where


#: The longest figure caption, in characters: about three lines of the column at 1280 px (14.7 px
#: caption text, about 105 characters a line); the rest belongs in the text beside the figure.
CAPTION_CHARS = 320


def test_every_caption_fits_three_lines():
    long = [
        (name, len(c), c[:50])
        for name, meta in _figures()
        if len(c := meta["figure"].get("caption", "")) > CAPTION_CHARS
    ]
    assert not long, long


#: A numbered caption or dropdown title as the book writes it: "Figure 7.2 — Text", "**Table 4.1 —**
#: Text" (the dash may close the bold number); what follows the dash is its first word.
_NUMBERED = re.compile(
    r"\b(?:Figure|Table) [0-9]+[a-z]?\.[0-9]+ —(?:\*\*)? (?P<first>\S)"
)
_LETTERED = re.compile(r"\b(?:Figure|Table) [A-Z]\.[0-9]+ —(?:\*\*)? (?P<first>\S)")


def _texts():
    """Every notebook's sources, figure captions and text outputs, and the Markdown pages."""
    for path in sorted(BOOK.glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            yield path.name, "".join(cell["source"])
            yield path.name, json.dumps(cell.get("metadata", {}), ensure_ascii=False)
            for out in cell.get("outputs", []):
                for value in out.get("data", {}).values():
                    yield (
                        path.name,
                        "".join(value) if isinstance(value, list) else str(value),
                    )
    for path in sorted(BOOK.glob("*.md")):
        yield path.name, path.read_text()


def test_every_numbered_caption_starts_with_a_capital():
    """One style for every numbered caption: "Table 4.1 — The checks of chapter 4."."""
    seen = 0
    for name, text in _texts():
        for m in [*_NUMBERED.finditer(text), *_LETTERED.finditer(text)]:
            seen += 1
            first = m["first"]
            assert not first.islower(), (name, text[m.start() : m.end() + 30])
    assert seen > 100


def test_every_figure_output_fits_the_column():
    """Every figure a notebook shows is a 2× PNG whose CSS width (its metadata) is at most the
    column at a 1280 px window (plotting.COLUMN_PX): the page shows it at its own size, its text
    as drawn (at least plotting.MIN_TEXT_PX), never shrunk."""
    import base64
    import struct

    from attnconv.chapters.shared.plotting import COLUMN_PX

    seen = 0
    for path in sorted(BOOK.glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            for out in cell.get("outputs", []):
                if "image/png" not in out.get("data", {}):
                    continue
                seen += 1
                width = out.get("metadata", {}).get("image/png", {}).get("width")
                where = (path.name, cell.get("id"))
                assert width and width <= COLUMN_PX, (where, width)
                png = base64.b64decode("".join(out["data"]["image/png"]))
                pixels = struct.unpack(">I", png[16:20])[0]
                assert abs(pixels - 2 * width) <= 2, (where, pixels, width)  # retina
    assert seen > 50
