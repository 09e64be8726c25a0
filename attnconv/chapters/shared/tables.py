"""Tables for the book's pages: rendered as HTML tables (Markdown), never as padded text that
overflows the column."""

from __future__ import annotations

import math
import re
from typing import Sequence

__all__ = [
    "signed_shift",
    "spaced_unit",
    "threshold_text",
    "keep_words",
    "keep_ranges",
    "NOWRAP",
    "COLUMN_CHARS",
    "fit_column",
    "pack_items",
    "markdown_table",
    "captioned",
    "matrices_shown",
]

#: Characters of printed output that fit the book's column (measured in Chromium at 1400 px and
#: wider by tests/browser/check_book.py: 752 px of text at 8.43 px per character).
COLUMN_CHARS = 89


#: The HTML class (book/_static/tables.css: ``white-space: nowrap``) of a span whose text the
#: browser never breaks across lines; its hyphens stay ASCII, so the text reads and searches as
#: typed ("3-6", with no non-breaking hyphen).
NOWRAP = "nowrap"

#: A word with a hyphen between word characters: a range "4-6", a compound "2-layer", a date.
_HYPHENATED = re.compile(r"\w+(?:-\w+)+")


def _nowrap(text, pattern) -> str:
    # roles, links and labels (`...`, <...>) are left as they are
    parts = re.split(r"(`[^`]*`|<[^>]*>)", str(text))
    span = lambda m: f'<span class="{NOWRAP}">{m.group(0)}</span>'  # noqa: E731
    return "".join(p if i % 2 else pattern.sub(span, p) for i, p in enumerate(parts))


def threshold_text(x: float) -> str:
    """A threshold as the text writes it: a power of ten from 10³ up as 10³ (10⁵), any other
    value as it is (0.5, 2)."""
    e = round(math.log10(x)) if x > 0 else 0
    if e >= 3 and x == 10.0**e:
        return "10" + str(e).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))
    return f"{x:g}"


def keep_words(text) -> str:
    """A table cell whose hyphenated words and ranges do not break across lines: every word with
    a hyphen between two word characters (ranges 4-6, 2-layer, dates) is set in a
    ``<span class="nowrap">``; the hyphen itself stays ASCII."""
    return _nowrap(text, _HYPHENATED)


#: A range of numbers, "5-6".
_RANGE = re.compile(r"(?<![\w.])\d+(?:-\d+)+(?![\w.])")


def keep_ranges(text) -> str:
    """``text`` with every range of numbers ("5-6") set in a ``<span class="nowrap">``, as
    :func:`keep_words` does, other hyphenated words left as they are."""
    return _nowrap(text, _RANGE)


def fit_column(text: str, width: int = COLUMN_CHARS, indent: str = "    ") -> str:
    """``text`` with every line longer than ``width`` wrapped at spaces, continuation lines
    indented by ``indent``, so that printed output fits the book's column."""
    import textwrap

    out = []
    for line in text.splitlines():
        if len(line) <= width:
            out.append(line)
            continue
        lead = line[: len(line) - len(line.lstrip())]
        out.extend(
            textwrap.wrap(
                line,
                width=width,
                initial_indent="",
                subsequent_indent=lead + indent,
                break_long_words=False,
                break_on_hyphens=False,
            )
        )
    return "\n".join(out)


def pack_items(
    prefix: str,
    items: Sequence[str],
    sep: str = ", ",
    width: int = COLUMN_CHARS,
    indent: str = "    ",
) -> str:
    """``prefix`` followed by ``items`` joined with ``sep``, broken into lines of at most ``width``
    characters between items (never inside one); continuation lines start with ``indent``."""
    lines, line = [], prefix
    for i, item in enumerate(items):
        piece = item + (sep.rstrip() if i < len(items) - 1 else "")
        candidate = line + ("" if line == prefix or line == indent else " ") + piece
        if len(candidate) > width and line.strip():
            lines.append(line)
            line = indent + piece
        else:
            line = candidate
    lines.append(line)
    return "\n".join(lines)


def markdown_table(
    columns: Sequence[str], rows: Sequence[Sequence[object]], align: str = ""
) -> "object":
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
    lines = [
        "| " + " | ".join(cell(c) for c in columns) + " |",
        "| " + " | ".join(":---" if a == "l" else "---:" for a in align) + " |",
    ]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return Markdown("\n".join(lines))


#: A table caption's label, "Table 18.1 —" (the chapter part may be a letter: "Table 7b.1 —",
#: "Table P.8 —"), and the rest of the caption.
_TABLE_LABEL = re.compile(r"(Table [0-9A-Za-z]+\.[0-9]+ —)\s*(.*)", re.S)


def captioned(table, caption: str, name: str = ""):
    """``table`` (a Markdown object or text) as a MyST ``{table}`` directive with ``caption`` (e.g.
    ``"Table 18.1 — ..."``), so the book renders it in the table's ``<caption>``; ``name`` is its
    label for ``{numref}``/``{ref}``. The label "Table 18.1 —" is set in bold, as a figure's is
    in its caption: ``"**Table 18.1 —** ..."``."""
    from IPython.display import Markdown

    text = getattr(table, "data", table)
    if "`" in caption:  # CommonMark: a backtick fence's info string holds no backtick
        raise ValueError("a table caption cannot hold a backtick")
    m = _TABLE_LABEL.fullmatch(caption)
    if m is not None:
        caption = f"**{m.group(1)}** {m.group(2)}".rstrip()
    label = f":name: {name}\n" if name else ""
    return Markdown(f"```{{table}} {caption}\n{label}\n{text}\n```")


def _latex_matrix(rows) -> str:
    """A LaTeX ``pmatrix`` of ``rows`` (nested sequences or a 2-D tensor), each entry as
    ``format(v, "g")``: 1.0 is written 1, -0.5 is written -0.5."""
    rows = rows.tolist() if hasattr(rows, "tolist") else rows
    body = r" \\ ".join(" & ".join(format(v, "g") for v in row) for row in rows)
    return r"\begin{pmatrix} " + body + r" \end{pmatrix}"


def matrices_shown(before, after, arrow: str):
    """Two small matrices as one display equation, ``before`` →(``arrow``)→ ``after``: an
    ``IPython.display.Markdown`` object the book typesets with MathJax, instead of a printed
    ``tensor([[...]])``."""
    from IPython.display import Markdown

    if "}" in arrow or "{" in arrow or "\\" in arrow:
        raise ValueError("the arrow's label is plain text")
    return Markdown(
        f"$$ {_latex_matrix(before)} \\xrightarrow{{\\text{{{arrow}}}}} "
        f"{_latex_matrix(after)} $$"
    )


def signed_number(x: float, digits: int = 1) -> str:
    """A difference as the book prints it: signed, to ``digits`` decimals, a true minus, and no
    "−0.0" (a value that rounds to zero is "+0.0"): ``+1.2``, ``−6.3``."""
    return f"{round(x, digits) + 0.0:+.{digits}f}".replace("-", "−")


def signed_shift(shift) -> str:
    """A shift (row, column) in tokens as the book prints it: signed, a true minus, zero bare:
    ``(−1, 0)``, ``(+1, +2)``."""

    def one(v: int) -> str:
        return "0" if v == 0 else f"{int(v):+d}".replace("-", "−")

    return "(" + ", ".join(one(v) for v in shift) + ")"


def spaced_unit(number: str) -> str:
    """A number as the paper prints it, with a space before its unit as the book sets numbers:
    ``93.8%`` → ``93.8 %``, ``12.1M`` → ``12.1 M``, ``6.2B`` → ``6.2 B``, ``120k`` → ``120 k``."""
    return re.sub(r"(\d)([%kMB])$", r"\1 \2", number)
