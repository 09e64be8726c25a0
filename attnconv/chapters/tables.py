"""Tables for the book's pages: rendered as HTML tables (Markdown), never as padded text that
overflows the column."""
from __future__ import annotations

from typing import Sequence

__all__ = ["markdown_table"]


def markdown_table(columns: Sequence[str], rows: Sequence[Sequence[object]], align: str = "") -> "object":
    """A Markdown table as an ``IPython.display.Markdown`` object (Jupyter and the book render it
    as an HTML table; its ``text/plain`` form, which nbval compares, is the Markdown source).

    ``align``: one character per column, ``l`` or ``r`` (default: first column left, others
    right). Cells are converted with ``str`` and ``|`` is escaped."""
    from IPython.display import Markdown

    n = len(columns)
    if any(len(r) != n for r in rows):
        raise ValueError(f"every row needs {n} cells")
    align = align or "l" + "r" * (n - 1)
    if len(align) != n or set(align) - set("lr"):
        raise ValueError("align needs one 'l' or 'r' per column")
    cell = lambda v: str(v).replace("|", "\\|")
    lines = ["| " + " | ".join(cell(c) for c in columns) + " |",
             "| " + " | ".join(":---" if a == "l" else "---:" for a in align) + " |"]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return Markdown("\n".join(lines))
