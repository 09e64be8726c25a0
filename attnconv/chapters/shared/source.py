"""The package's own code, shown in the book: a chapter displays the function it explains, taken
from the package when the notebook runs (``inspect.getsource``), never a copy that could drift."""

from __future__ import annotations

import inspect
import textwrap
from pathlib import Path

from ...experiments.store import repo_root
from .tables import COLUMN_CHARS

__all__ = ["fold_long_lines", "source_markdown", "show_source"]

_ROOT = repo_root()


def _where(obj) -> tuple[str, int, int]:
    """``(path relative to the repository, first line, last line)`` of ``obj``'s source."""
    target = inspect.unwrap(obj.fget if isinstance(obj, property) else obj)
    path = Path(inspect.getsourcefile(target)).resolve()
    try:
        rel = path.relative_to(_ROOT).as_posix()
    except ValueError:  # installed elsewhere: the path inside the package
        rel = "attnconv/" + path.as_posix().split("/attnconv/", 1)[-1]
    lines, first = inspect.getsourcelines(target)
    return rel, first, first + len(lines) - 1


def fold_long_lines(code: str, width: int = COLUMN_CHARS) -> str:
    """``code`` with every line longer than ``width`` folded at spaces so that it fits the
    book's column: a comment continues as a comment, any other line (docstring text) with the
    same indentation. The words are the source's, in its order."""
    out = []
    for line in code.splitlines():
        if len(line) <= width:
            out.append(line)
            continue
        lead = line[: len(line) - len(line.lstrip())]
        comment = line.lstrip().startswith("#")
        if not comment and "#" in line and not line.lstrip().startswith(('"', "'")):
            code_part, _, note = line.partition("  #")
            if note and len(code_part) <= width:
                out += [lead + "# " + note.strip(), code_part.rstrip()]
                continue
        folded = textwrap.wrap(
            line.strip(),
            width=width,
            initial_indent=lead,
            subsequent_indent=lead + ("# " if comment else ""),
            break_long_words=False,
            break_on_hyphens=False,
        )
        out += folded or [line]
    return "\n".join(out)


def _name(obj) -> str:
    target = obj.fget if isinstance(obj, property) else obj
    return getattr(target, "__qualname__", getattr(target, "__name__", repr(target)))


def source_markdown(*objs, note: str = "") -> str:
    """Markdown for the source of ``objs`` (functions, classes, methods or properties): one
    heading line per object with its file and lines, then its code in a ``python`` block (lines
    wider than the book's column folded, :func:`fold_long_lines`).
    ``note`` (Markdown) is put before the code, e.g. which equations it computes."""
    if not objs:
        raise ValueError("show at least one object")
    parts = [note] if note else []
    for obj in objs:
        target = obj.fget if isinstance(obj, property) else obj
        code = textwrap.dedent(inspect.getsource(inspect.unwrap(target))).rstrip()
        code = fold_long_lines(code)
        rel, first, last = _where(obj)
        parts.append(
            f"`{_name(obj)}` · source: `{rel}`, lines {first}–{last}\n\n"
            f"```python\n{code}\n```"
        )
    return "\n\n".join(parts)


def show_source(*objs, note: str = ""):
    """:func:`source_markdown` as an ``IPython.display.Markdown`` object: the book renders it as
    highlighted code (the displaying cell is tagged ``remove-input``)."""
    from IPython.display import Markdown

    return Markdown(source_markdown(*objs, note=note))
