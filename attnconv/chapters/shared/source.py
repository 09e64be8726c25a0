"""The package's own code, shown in the book: a chapter displays the function it explains, taken
from the package when the notebook runs (``inspect.getsource``), never a copy that could drift.

What the reader sees is that source with its docstrings cut to their first paragraph and their
reStructuredText markup turned into plain text (:func:`plain_source`); the code itself, comments
aside, is the package's line for line.

An *excerpt* (``show_source(..., excerpt=True)``) leaves out the lines the package marks as
plumbing (dtype casts, dropout, optional returns), each run of them shown as one line
``...  # n lines left out: what they do`` (:func:`elide_plumbing`), which says what it stands
for. The markers are comments: a trailing ``# plumbing`` marks its line, a
``# region plumbing`` … ``# endregion`` pair the lines between them; ``# plumbing: text`` or
``# region plumbing: text`` makes the elision read ``...  # n lines left out: text``. A full
listing drops the markers and keeps the lines."""

from __future__ import annotations

import ast
import inspect
import io
import re
import textwrap
import tokenize
from pathlib import Path

from ...experiments.store import repo_root

__all__ = [
    "CODE_CHARS",
    "plain_text",
    "plain_source",
    "fold_long_lines",
    "elide_plumbing",
    "source_markdown",
    "show_source",
    "full_source_markdown",
    "show_full_source",
]

_ROOT = repo_root()

#: Characters of a code line shown in the book: the package's own line length (ruff), one less
#: than the column holds, so that no code block scrolls sideways.
CODE_CHARS = 88

# :role:`text` and :domain:role:`text`, e.g. :func:`~a.b.c`, :math:`\alpha`, :py:class:`X`
_ROLE = re.compile(r":(?:[A-Za-z][\w-]*:)+`([^`]+)`")
_LITERAL = re.compile(r"``(.+?)``", re.S)
_TITLED = re.compile(r"(.*?\S)\s*<([^<>]+)>", re.S)


def _comment_lines(text: str, lead: str, width: int) -> list:
    """``text`` as comment lines indented by ``lead``, wrapped at ``width`` without breaking
    words."""
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=lead + "# ",
        subsequent_indent=lead + "# ",
        break_long_words=False,
        break_on_hyphens=False,
    )


def _role_text(match: re.Match) -> str:
    """What a Sphinx role displays: its title if it has one (``text <target>``), the last
    component of a ``~``-target, else the target itself."""
    body = match.group(1)
    titled = _TITLED.fullmatch(body)
    if titled:
        return titled.group(1)
    if body.startswith("~"):
        return body[1:].rsplit(".", 1)[-1]
    return body


def plain_text(text: str) -> str:
    """``text`` with reStructuredText roles and inline literals as plain text:
    ``:func:`~a.b.c``` becomes ``c``, ``:math:`x``` becomes ``x``, a double-backquoted literal
    its content. Everything else is left as it is."""
    return _LITERAL.sub(r"\1", _ROLE.sub(_role_text, text))


def _docstring_nodes(tree: ast.AST):
    for node in ast.walk(tree):
        if (
            isinstance(
                node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
            )
            and node.body
        ):
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                yield first


def _docstring_lines(text: str, indent: str, width: int) -> list[str]:
    """A docstring literal holding ``text`` (one paragraph or several, each filled to
    ``width``), indented by ``indent``."""
    prefix = ""
    if "\\" in text:
        if text.endswith("\\") or '"""' in text:
            text = text.replace("\\", "\\\\")
        else:
            prefix = "r"
    text = text.replace('"""', '\\"\\"\\"')
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text)]
    lines: list[str] = []
    for i, paragraph in enumerate(paragraphs):
        last = i == len(paragraphs) - 1
        for room in (width, width - 3) if last else (width,):
            filled = textwrap.wrap(
                paragraph,
                width=room,
                initial_indent=indent + (prefix + '"""' if i == 0 else ""),
                subsequent_indent=indent,
                break_long_words=False,
                break_on_hyphens=False,
            ) or [indent + prefix + '"""']
            if not last or len(filled[-1]) + 3 <= width:
                break
        lines += ([""] if i else []) + filled
    if len(lines[-1]) + 3 <= width:
        lines[-1] += '"""'
    else:  # a word too long to leave room for the closing quotes
        lines.append(indent + '"""')
    return lines


def _plain_comments(code: str) -> str:
    """``code`` with :func:`plain_text` applied to its comments (found by ``tokenize``, so
    that strings in the code are never touched)."""
    lines = code.splitlines()
    tokens = tokenize.generate_tokens(io.StringIO(code + "\n").readline)
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            row, col = tok.start
            line = lines[row - 1]
            lines[row - 1] = line[:col] + plain_text(line[col:])
    return "\n".join(lines)


def _reflow_comment_blocks(code: str, width: int) -> str:
    """Runs of whole-line comments with one indentation, one of whose lines is wider than
    ``width``, refilled as one paragraph: no orphan words at the ends of lines."""
    lines = code.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        stripped = lines[i].lstrip()
        if not stripped.startswith("#"):
            out.append(lines[i])
            i += 1
            continue
        lead = lines[i][: len(lines[i]) - len(stripped)]
        j = i
        while (
            j < len(lines)
            and lines[j].lstrip().startswith("#")
            and lines[j][: len(lines[j]) - len(lines[j].lstrip())] == lead
        ):
            j += 1
        block = lines[i:j]
        if any(len(line) > width for line in block):
            words = " ".join(line.lstrip()[1:].strip() for line in block)
            out += _comment_lines(words, lead, width)
        else:
            out += block
        i = j
    return "\n".join(out)


def plain_source(code: str, width: int = CODE_CHARS) -> tuple[str, bool]:
    """The source ``code`` as the book shows it, and whether a docstring was shortened.

    Every docstring keeps only its first paragraph, in plain text (:func:`plain_text`), filled
    to ``width``; comments are in plain text too, and a run of comment lines wider than
    ``width`` is refilled. Every other line is the source's own (lines still wider than
    ``width`` are left to :func:`fold_long_lines`)."""
    tree = ast.parse(code)
    lines = code.splitlines()
    abridged = False
    edits = []
    for doc in _docstring_nodes(tree):
        start, end = doc.lineno - 1, doc.end_lineno - 1
        indent = lines[start][: doc.col_offset]
        if indent.strip() or lines[end][doc.end_col_offset :].strip():
            continue  # not alone on its lines: left as it is
        paragraphs = re.split(r"\n\s*\n", inspect.cleandoc(doc.value.value).strip())
        abridged |= len(paragraphs) > 1
        edits.append(
            (start, end, _docstring_lines(plain_text(paragraphs[0]), indent, width))
        )
    for start, end, new in sorted(edits, reverse=True):
        lines[start : end + 1] = new
    code = "\n".join(lines)
    return _reflow_comment_blocks(_plain_comments(code), width), abridged


def _where(obj) -> str:
    """The path, relative to the repository, of the file holding ``obj``'s source."""
    target = inspect.unwrap(obj.fget if isinstance(obj, property) else obj)
    path = Path(inspect.getsourcefile(target)).resolve()
    try:
        return path.relative_to(_ROOT).as_posix()
    except ValueError:  # installed elsewhere: the path inside the package
        return "attnconv/" + path.as_posix().split("/attnconv/", 1)[-1]


def fold_long_lines(code: str, width: int = CODE_CHARS) -> str:
    """``code`` with every comment that makes a line longer than ``width`` folded at spaces:
    a trailing comment moves above its line, a comment line continues as a comment. The words
    are the source's, in its order; code itself is never folded (it must stay the package's
    code), so a code line wider than ``width`` stays as it is."""
    lines = code.splitlines()
    comments = {}  # line index -> column of its comment
    for tok in tokenize.generate_tokens(io.StringIO(code + "\n").readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0] - 1] = tok.start[1]
    out = []
    for i, line in enumerate(lines):
        if len(line) <= width or i not in comments:
            out.append(line)
            continue
        lead = line[: len(line) - len(line.lstrip())]
        code_part, note = line[: comments[i]].rstrip(), line[comments[i] :]
        note = note.lstrip("#").strip()
        out += _comment_lines(note, lead, width) or [lead + "#"]
        if code_part.strip():
            out.append(code_part)
    return "\n".join(out)


_MARK = re.compile(r"#\s*plumbing\b\s*(?::\s*(.*\S))?\s*$")
_REGION = re.compile(r"#\s*region\s+plumbing\b\s*(?::\s*(.*\S))?\s*$")
_END = re.compile(r"#\s*endregion\b.*$")


def _comments(code: str) -> dict:
    """Line index -> (column, text) of each comment in ``code`` (found by ``tokenize``, so a
    ``#`` inside a string is never taken for one)."""
    found = {}
    for tok in tokenize.generate_tokens(io.StringIO(code + "\n").readline):
        if tok.type == tokenize.COMMENT:
            found[tok.start[0] - 1] = (tok.start[1], tok.string)
    return found


def elide_plumbing(code: str, excerpt: bool = True) -> str:
    """``code`` with its plumbing markers applied (see the module's docstring).

    With ``excerpt``, each run of marked lines (blank lines inside a run included) becomes one
    line ``...  # n lines left out`` (``...  # n lines left out: text`` when its first marker
    has a text; *n* counts the run's non-blank lines, markers aside), indented as the run's
    first line: Python's own placeholder, which no reader takes for commented-out code, and a
    comment that says what it stands for. A region or a marker with a text starts a run of its
    own. Without ``excerpt``, the marked lines stay and only the markers go. Lines between a
    ``# region plumbing`` and its ``# endregion`` count as marked; regions do not nest."""
    lines = code.splitlines()
    comments = _comments(code)
    marked: dict[int, str] = {}  # line index -> label ("" for none)
    starts: set[int] = set()  # markers that open a run of their own: a region, a label
    drop: set[int] = set()  # marker lines (a region's first and last)
    strip: set[int] = set()  # lines whose trailing marker goes in a full listing
    region = None  # (index of its opening line, label) while inside a region
    for i, line in enumerate(lines):
        col, text = comments.get(i, (None, ""))
        whole = col is not None and not line[:col].strip()
        if region is None and whole and _REGION.fullmatch(text):
            region = (i, _REGION.fullmatch(text).group(1) or "")
            drop.add(i)
            marked[i] = region[1]
            starts.add(i)
        elif region is not None:
            if whole and _END.fullmatch(text):
                drop.add(i)
                region = None
            marked[i] = ""
        elif col is not None and not whole and _MARK.fullmatch(text):
            marked[i] = _MARK.fullmatch(text).group(1) or ""
            strip.add(i)
            if marked[i]:
                starts.add(i)
    if region is not None:
        raise ValueError(
            f"'# region plumbing' on line {region[0] + 1} has no '# endregion'"
        )
    out: list[str] = []
    i = 0
    while i < len(lines):
        if i not in marked:
            out.append(lines[i])
        elif not excerpt:
            if i in strip:
                out.append(lines[i][: comments[i][0]].rstrip())
            elif i not in drop:
                out.append(lines[i])
        else:
            first, label = i, marked[i]
            while i + 1 < len(lines) and (
                (i + 1 in marked and i + 1 not in starts)
                or (
                    not lines[i + 1].strip() and i + 2 in marked and i + 2 not in starts
                )
            ):
                i += 1
            lead = lines[first][: len(lines[first]) - len(lines[first].lstrip())]
            n = sum(
                1 for k in range(first, i + 1) if lines[k].strip() and k not in drop
            )
            what = f"{n} line{'s' if n > 1 else ''} left out" + (
                f": {label}" if label else ""
            )
            out.append(f"{lead}...  # {what}")
        i += 1
    return "\n".join(out)


def _name(obj) -> str:
    target = obj.fget if isinstance(obj, property) else obj
    return getattr(target, "__qualname__", getattr(target, "__name__", repr(target)))


def _shown_path(rel: str) -> str:
    """The file as the heading names it: its path inside the package (``core/conv.py``)."""
    return rel.removeprefix("attnconv/")


def source_markdown(
    *objs,
    note: str = "",
    excerpt: bool = False,
    full_ref: str = "",
    one_listing: bool = False,
) -> str:
    """Markdown for the source of ``objs`` (functions, classes, methods or properties): one
    short heading line per object, ``name — file``, the file a link to it (Sphinx's
    ``download`` role copies it into the built book), then its code in a ``python`` block, as
    :func:`plain_source` gives it (a shortened docstring is said in the heading), with any
    line still wider than the book's code column folded (:func:`fold_long_lines`).
    ``note`` (Markdown) is put before the code, e.g. which equations it computes. With
    ``excerpt`` the lines marked as plumbing are left out (:func:`elide_plumbing`); each
    elision line says so itself. ``full_ref``, the label of the section that holds the full
    listing (:func:`full_source_markdown`), makes the heading of an excerpt that left lines
    out link to it ("full source below"). With ``one_listing``, consecutive objects from one
    file share one heading (their names, then the file) and one code block."""
    if not objs:
        raise ValueError("show at least one object")
    parts = [note] if note else []
    listings = []  # (file, [name], [code], [notes])
    for obj in objs:
        target = obj.fget if isinstance(obj, property) else obj
        raw = textwrap.dedent(inspect.getsource(inspect.unwrap(target))).rstrip()
        full = elide_plumbing(raw, excerpt=False)
        trimmed = elide_plumbing(raw) if excerpt else full
        code, abridged = plain_source(trimmed)
        code = fold_long_lines(code)
        rel = _where(obj)
        notes = ["docstring shortened"] if abridged else []
        if trimmed != full and full_ref:
            notes.insert(0, f"{{ref}}`full source below <{full_ref}>`")
        if one_listing and listings and listings[-1][0] == rel:
            listings[-1][1].append(_name(obj))
            listings[-1][2].append(code)
            listings[-1][3].extend(n for n in notes if n not in listings[-1][3])
        else:
            listings.append((rel, [_name(obj)], [code], notes))
    for rel, names, codes, notes in listings:
        owners = {n.rpartition(".")[0] for n in names}
        if (
            len(names) > 1 and len(owners) == 1 and "" not in owners
        ):  # one class's methods
            title = f"`{owners.pop()}`: " + ", ".join(
                f"`{n.rpartition('.')[2]}`" for n in names
            )
        else:
            title = ", ".join(f"`{n}`" for n in names)
        extras = "".join(f" · {n}" for n in notes)
        body = "\n\n".join(codes)
        parts.append(
            f"{title} — {{download}}`{_shown_path(rel)} </{rel}>`{extras}\n\n"
            f"```python\n{body}\n```"
        )
    return "\n\n".join(parts)


def show_source(
    *objs,
    note: str = "",
    excerpt: bool = False,
    full_ref: str = "",
    one_listing: bool = False,
):
    """:func:`source_markdown` as an ``IPython.display.Markdown`` object: the book renders it as
    highlighted code (the displaying cell is tagged ``remove-input``)."""
    from IPython.display import Markdown

    return Markdown(
        source_markdown(
            *objs,
            note=note,
            excerpt=excerpt,
            full_ref=full_ref,
            one_listing=one_listing,
        )
    )


#: The title of the collapsed section at the end of a chapter that holds the full source of the
#: functions the chapter shows as excerpts.
FULL_SOURCE_TITLE = "Full source of this chapter's functions"


def full_source_markdown(*objs, label: str) -> str:
    """One collapsed dropdown (MyST) titled :data:`FULL_SOURCE_TITLE` and labelled ``label``,
    holding the full listing of each of ``objs`` (:func:`source_markdown`, plumbing kept)."""
    if not objs:
        raise ValueError("show at least one object")
    body = "\n\n".join(source_markdown(obj) for obj in objs)
    return f"````{{dropdown}} {FULL_SOURCE_TITLE}\n:name: {label}\n\n{body}\n````"


def show_full_source(*objs, label: str):
    """:func:`full_source_markdown` as an ``IPython.display.Markdown`` object (the displaying
    cell is tagged ``remove-input`` and is the chapter's last)."""
    from IPython.display import Markdown

    return Markdown(full_source_markdown(*objs, label=label))
