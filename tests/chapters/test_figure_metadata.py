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
