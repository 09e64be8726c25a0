"""A hidden code cell that prints and draws nothing is removed from the page, not folded: a
"Show code" bar with nothing under it (the imports) would stand between a chapter's verdict box
and its first figure."""

import json
from pathlib import Path

BOOK = Path(__file__).resolve().parents[2] / "book"


def test_a_hidden_cell_without_output_leaves_no_bar():
    seen = 0
    for path in sorted(BOOK.glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] != "code":
                continue
            tags = cell["metadata"].get("tags", [])
            seen += 1
            if not cell.get("outputs"):
                assert "hide-input" not in tags, (
                    path.name,
                    "".join(cell["source"])[:60],
                )
    assert seen > 100


def test_no_notebook_saves_widget_state():
    """Saved widget state (``metadata.widgets``, written when a notebook is executed with
    nbconvert) makes the built page load the widget manager from a CDN, which the offline book
    must not: the explorer's widgets are live in Jupyter only."""
    for path in sorted(BOOK.glob("*.ipynb")):
        assert "widgets" not in json.loads(path.read_text())["metadata"], path.name


def test_code_a_reader_can_open_fits_the_column():
    """Every line of a code cell the page shows or folds (tagged neither ``remove-input`` nor
    ``remove-cell``) fits the book's code column (``source.CODE_CHARS``), so no listing scrolls
    sideways when opened: check_book's overflow-code measures it in a browser, this without."""
    from attnconv.chapters.shared.source import CODE_CHARS

    wide = [
        (path.name, line)
        for path in sorted(BOOK.glob("*.ipynb"))
        for cell in json.loads(path.read_text())["cells"]
        if cell["cell_type"] == "code"
        and not {"remove-input", "remove-cell"} & set(cell["metadata"].get("tags", []))
        for line in "".join(cell["source"]).splitlines()
        if len(line) > CODE_CHARS
    ]
    assert not wide, wide
