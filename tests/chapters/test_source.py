import ast
import importlib
import inspect
import io
import pkgutil
import re
import textwrap
import tokenize
from pathlib import Path

import pytest

import attnconv.core
from attnconv.chapters.shared.source import (
    CODE_CHARS,
    elide_plumbing,
    fold_long_lines,
    full_source_markdown,
    plain_source,
    plain_text,
    show_source,
    source_markdown,
)
from attnconv.core.attention import MultiHeadSelfAttention, merge_heads
from attnconv.core.bounds import off_target_mass_bound, one_hot_alpha
from attnconv.core.conv import (
    _conv_to_attention,
    conv_to_mhsa,
    head_weights_from_kernel,
)
from attnconv.core.encodings import (
    GeneralizedQuadraticEncoding,
    LearnedRelativeEncoding,
    QuadraticEncoding,
)
from attnconv.experiments.models import SelfAttentionLayer, _learned, _quadratic
from attnconv.experiments.pruning import inverse_covariance_spectrum, is_degenerate

ROOT = Path(__file__).parents[2]

# What the chapters show with show_source: the theory (1-5), then the models trained in 7-9.
BOOK_OBJECTS = [
    MultiHeadSelfAttention._forward_naive,
    merge_heads,
    MultiHeadSelfAttention._scores_tokens,
    head_weights_from_kernel,
    _conv_to_attention,
    QuadraticEncoding.features,
    QuadraticEncoding.v,
    QuadraticEncoding._position_scores,
    off_target_mass_bound,
    one_hot_alpha,
    GeneralizedQuadraticEncoding.features,
    GeneralizedQuadraticEncoding.v,
    GeneralizedQuadraticEncoding._position_scores,
    SelfAttentionLayer.make_attention,
    SelfAttentionLayer.forward,
    _quadratic,
    QuadraticEncoding.width,
    inverse_covariance_spectrum,
    is_degenerate,
    _learned,
    LearnedRelativeEncoding.features,
    LearnedRelativeEncoding.axis_scores,
    LearnedRelativeEncoding._position_scores,
]


def _core_objects():
    """Every function, class and method defined in attnconv.core."""
    found = {}
    for info in pkgutil.walk_packages(attnconv.core.__path__, "attnconv.core."):
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module):
            if getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isfunction(obj) or inspect.isclass(obj):
                found[obj.__qualname__] = obj
            if inspect.isclass(obj):
                for name, member in vars(obj).items():
                    if inspect.isfunction(member):
                        found[f"{obj.__qualname__}.{name}"] = member
    return [obj for obj in found.values() if _has_source(obj)]


def _has_source(obj) -> bool:
    try:
        inspect.getsource(obj)
    except (OSError, TypeError):  # made at run time, e.g. a dataclass's __init__
        return False
    return True


def _shown_code(obj) -> str:
    """The code block of source_markdown(obj), as a reader sees it."""
    md = source_markdown(obj)
    return md.split("```python\n", 1)[1].rsplit("\n```", 1)[0]


def _original(obj) -> str:
    return textwrap.dedent(inspect.getsource(obj)).rstrip()


def _docstrings(tree):
    """Every docstring expression of ``tree`` (module, class, function)."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            yield body[0]


def _docstring_free_dump(code: str) -> str:
    """The syntax tree of ``code`` with every docstring emptied: equal dumps mean equal code."""
    tree = ast.parse(code)
    for doc in list(_docstrings(tree)):
        doc.value.value = ""
    return ast.dump(tree)


def _code_lines(code: str) -> list[str]:
    """The lines of ``code`` outside docstrings, without comments or blank lines."""
    skip = set()
    for doc in _docstrings(ast.parse(code)):
        skip.update(range(doc.lineno, doc.end_lineno + 1))
    lines = code.splitlines()
    for tok in tokenize.generate_tokens(io.StringIO(code + "\n").readline):
        if tok.type == tokenize.COMMENT:
            row, col = tok.start
            lines[row - 1] = lines[row - 1][:col]
    return [
        line.rstrip()
        for i, line in enumerate(lines, 1)
        if i not in skip and line.strip()
    ]


def _first_paragraph_words(obj) -> list[str]:
    """The words of the first paragraph of ``obj``'s docstring, markup removed by a rule of
    this test's own: a role keeps the text between its backquotes (the last dotted name after
    a ``~``), double backquotes are dropped."""
    doc = inspect.getdoc(obj) or ""
    first = re.split(r"\n\s*\n", doc.strip())[0]
    words = []
    for word in first.split():
        word = word.replace("``", "")
        word = re.sub(r":[a-z:]+:`~[\w.]*\.(\w+)`", r"\1", word)
        word = re.sub(r":[a-z:]+:`([^`]*)`", r"\1", word)
        words.append(word)
    return words


def test_source_is_the_package_s_own_under_a_short_heading_linking_its_file():
    md = source_markdown(conv_to_mhsa)
    head, code = md.split("\n\n", 1)
    # the name, then the file inside the package as a link to the file itself
    assert head == (
        "`conv_to_mhsa` — {download}`core/conv.py </attnconv/core/conv.py>`"
        " · docstring shortened"
    )
    assert (ROOT / "attnconv/core/conv.py").is_file()
    assert "lines" not in head and "source:" not in head
    lines, _ = inspect.getsourcelines(conv_to_mhsa)
    shown, _ = plain_source("".join(lines).rstrip())
    assert code == "```python\n" + fold_long_lines(shown) + "\n```"
    assert all(len(line) <= CODE_CHARS for line in code.splitlines())


def test_every_heading_links_a_file_of_the_package():
    for obj in BOOK_OBJECTS:
        head = source_markdown(obj).split("\n\n", 1)[0]
        match = re.fullmatch(
            r"`[\w.]+` — \{download\}`([\w/]+\.py) </attnconv/\1>`( · docstring shortened)?",
            head,
        )
        assert match, head
        assert (ROOT / "attnconv" / match.group(1)).is_file()
        assert ("docstring shortened" in head) == plain_source(_original(obj))[1]


def test_methods_and_properties_are_dedented_and_joined():
    md = show_source(
        QuadraticEncoding.features, QuadraticEncoding.v, note="Eq. (9)."
    ).data
    assert md.startswith("Eq. (9).\n\n`QuadraticEncoding.features`")
    assert "\ndef features(self" in md and "\ndef v(self" in md
    assert md.count("```python") == 2


def test_long_comments_fold_at_spaces_and_keep_every_word():
    long_code = "    y = " + " + ".join(["x"] * 20)
    code = (
        "def f(x):\n    x = 1  # "
        + "note " * 12
        + "\n    # "
        + "word " * 12
        + "\n"
        + long_code
        + "\n    return x"
    )
    folded = fold_long_lines(code, width=40)
    lines = folded.splitlines()
    assert [line for line in lines if not line.lstrip().startswith("#")] == [
        "def f(x):",
        "    x = 1",
        long_code,  # code is never folded
        "    return x",
    ]
    assert all(len(line) <= 40 for line in lines if line != long_code)
    assert all(line.startswith("    # ") for line in lines if "note" in line)
    words = sorted(w for w in folded.split() if w != "#")
    assert words == sorted(w for w in code.split() if w != "#")
    assert lines.index("    x = 1") > max(
        i for i, line in enumerate(lines) if "note" in line
    )  # a trailing comment moves above its line
    ast.parse(folded)


def test_roles_and_literals_read_as_plain_text():
    assert plain_text(":func:`~attnconv.core.bounds.one_hot_alpha`") == "one_hot_alpha"
    assert plain_text(":func:`attnconv.conv_to_mhsa`") == "attnconv.conv_to_mhsa"
    assert plain_text("``dtype`` and :math:`\\alpha`") == "dtype and \\alpha"
    assert plain_text(":class:`the layer <attnconv.MHSA>`") == "the layer"
    assert plain_text(":py:meth:`~A.b`, `x`") == "b, `x`"


def test_docstring_is_its_first_paragraph_and_code_is_untouched():
    src = textwrap.dedent(
        '''\
        def f(x):
            """Scale :math:`x` by :func:`~attnconv.core.bounds.one_hot_alpha` for each
            ``dtype``; see :class:`the layer <attnconv.MultiHeadSelfAttention>`.

            A second paragraph, left out.
            """
            s = "``kept``"  # :func:`~a.b.c` in a comment
            return x, s
        '''
    )
    shown, abridged = plain_source(src)
    assert abridged
    assert shown.splitlines() == [
        "def f(x):",
        '    """Scale x by one_hot_alpha for each dtype; see the layer."""',
        '    s = "``kept``"  # c in a comment',
        "    return x, s",
    ]
    assert plain_source(shown) == (shown, False)  # nothing left to change


def test_backslashes_and_long_words_keep_a_valid_docstring():
    src = 'def g():\n    """The width :math:`\\\\alpha` of ``x``."""\n    return 1\n'
    shown, abridged = plain_source(src)
    assert not abridged
    assert ast.get_docstring(ast.parse(shown).body[0]) == "The width \\alpha of x."
    long_word = "w" * 100
    shown, _ = plain_source(f'def h():\n    """{long_word}"""\n')
    assert ast.get_docstring(ast.parse(shown).body[0]).strip() == long_word


@pytest.mark.parametrize("obj", BOOK_OBJECTS, ids=lambda o: o.__qualname__)
def test_what_the_book_shows_is_the_code_with_a_plain_first_paragraph(obj):
    shown = _shown_code(obj)
    original = _original(obj)
    assert _docstring_free_dump(shown) == _docstring_free_dump(original)
    assert _code_lines(shown) == _code_lines(original)
    assert not re.search(r":[a-z]+:`|``", shown)
    assert all(len(line) <= CODE_CHARS for line in shown.splitlines())
    docstring = ast.get_docstring(ast.parse(shown).body[0]) or ""
    assert docstring.split() == _first_paragraph_words(obj)


def test_every_core_function_shows_as_valid_code_without_markup():
    objs = _core_objects()
    assert len(objs) > 50
    for obj in objs:
        shown = _shown_code(obj)
        original = _original(obj)
        assert _docstring_free_dump(shown) == _docstring_free_dump(original), obj
        assert not re.search(r":[a-z]+:`|``", shown), obj
        wide_code = {line for line in _code_lines(original) if len(line) > CODE_CHARS}
        assert all(
            len(line) <= CODE_CHARS or line in wide_code for line in shown.splitlines()
        ), obj


# A small function with every kind of plumbing marker, and what an excerpt and a full listing of
# it show, written out by hand.
MARKED = textwrap.dedent(
    """\
    def f(x, dtype=None, verbose=False):
        \"\"\"Double x.\"\"\"
        s = "# plumbing"  # a string is not a marker
        x = x.to(dtype)  # plumbing
        y = 2 * x
        # region plumbing: say what it did
        if verbose:
            print(y)

        # endregion
        z = y.float()  # plumbing: float32
        w = z  # plumbing
        return w
    """
)
MARKED_EXCERPT = textwrap.dedent(
    """\
    def f(x, dtype=None, verbose=False):
        \"\"\"Double x.\"\"\"
        s = "# plumbing"  # a string is not a marker
        ...  # 1 line left out
        y = 2 * x
        ...  # 2 lines left out: say what it did
        ...  # 2 lines left out: float32
        return w"""
)
MARKED_FULL = textwrap.dedent(
    """\
    def f(x, dtype=None, verbose=False):
        \"\"\"Double x.\"\"\"
        s = "# plumbing"  # a string is not a marker
        x = x.to(dtype)
        y = 2 * x
        if verbose:
            print(y)

        z = y.float()
        w = z
        return w"""
)


def test_an_excerpt_shows_each_run_of_plumbing_as_one_elision_line():
    assert elide_plumbing(MARKED.rstrip()) == MARKED_EXCERPT
    assert elide_plumbing(MARKED.rstrip(), excerpt=False) == MARKED_FULL
    assert (
        elide_plumbing(MARKED_FULL) == MARKED_FULL
    )  # no markers: nothing to leave out
    with pytest.raises(ValueError, match="endregion"):
        elide_plumbing("def g():\n    # region plumbing\n    return 1")


def test_the_book_s_excerpts_keep_the_heading_and_drop_only_marked_lines():
    full = source_markdown(merge_heads)
    excerpt = source_markdown(merge_heads, excerpt=True)
    head, code = excerpt.split("\n\n", 1)
    assert head == full.split("\n\n", 1)[0]  # the same name and file, nothing more
    assert "plumbing" not in full and "plumbing" not in excerpt
    assert "is_autocast_enabled" in full and "is_autocast_enabled" not in code
    elisions = [line for line in code.splitlines() if line.lstrip().startswith("...")]
    # each elision says itself what it stands for
    assert elisions and all(
        re.fullmatch(r" *\.\.\.  # \d+ lines? left out(: \S.*)?", line)
        for line in elisions
    )
    kept = [line for line in code.splitlines() if line not in elisions]
    assert set(kept) <= set(full.splitlines())
    naive = source_markdown(MultiHeadSelfAttention._forward_naive, excerpt=True)
    assert "if return_attention" not in naive and "lead = " not in naive
    assert "    return y" in naive
    # an object without markers: the excerpt is the full listing
    assert source_markdown(conv_to_mhsa, excerpt=True) == source_markdown(conv_to_mhsa)


# The long functions chapters 1-4 show as excerpts: each reads in at most 18 lines, and the full
# source is in the collapsed section at the end of the chapter.
BOOK_EXCERPTS = [
    MultiHeadSelfAttention._forward_naive,
    merge_heads,
    MultiHeadSelfAttention._scores_tokens,
    head_weights_from_kernel,
    _conv_to_attention,
    off_target_mass_bound,
    one_hot_alpha,
]


@pytest.mark.parametrize("obj", BOOK_EXCERPTS, ids=lambda o: o.__qualname__)
def test_the_theory_chapters_excerpts_are_short(obj):
    excerpt = source_markdown(obj, excerpt=True)
    code = excerpt.split("```python\n", 1)[1].rsplit("\n```", 1)[0]
    assert re.search(r"^ *\.\.\.  # \d+ lines? left out", code, re.M)
    assert len(code.splitlines()) <= 18
    assert all(len(line) <= CODE_CHARS for line in code.splitlines())


def test_the_full_source_section_holds_every_full_listing_with_a_link_to_its_file():
    md = full_source_markdown(
        head_weights_from_kernel, _conv_to_attention, label="x-src"
    )
    first, *rest = md.splitlines()
    assert first == "````{dropdown} Full source of this chapter's functions"
    assert rest[0] == ":name: x-src" and rest[-1] == "````"
    for obj in (head_weights_from_kernel, _conv_to_attention):
        full = source_markdown(obj)
        head, code = full.split("\n\n", 1)
        assert code in md  # the full listing, plumbing kept
        assert head in md  # its heading, with the link to its file
    assert "...  # " not in md
    with pytest.raises(ValueError):
        full_source_markdown(label="x")


def test_an_excerpt_points_to_the_full_source_when_told_where():
    md = source_markdown(_conv_to_attention, excerpt=True, full_ref="x-src")
    assert md.split("\n", 1)[0].endswith(" · {ref}`full source below <x-src>`")
    # a listing that leaves nothing out has nothing to point to
    assert "x-src" not in source_markdown(conv_to_mhsa, excerpt=True, full_ref="x-src")


@pytest.mark.parametrize("number", ["01", "02", "03", "04", "05"])
def test_a_theory_chapter_with_excerpts_ends_with_their_full_source(number):
    import json
    from pathlib import Path

    path = next((Path(__file__).parents[2] / "book").glob(f"{number}_*.ipynb"))
    cells = [
        c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"
    ]
    sources = ["".join(c["source"]) for c in cells]
    excerpts = [s for s in sources if "excerpt=True" in s]
    if not excerpts:
        return
    assert all("full_ref=" in s for s in excerpts)
    assert sources[-1].startswith("show_full_source(")
    assert cells[-1]["metadata"]["tags"] == ["remove-input"]


def test_one_listing_joins_consecutive_objects_of_one_file():
    md = source_markdown(
        _learned,
        LearnedRelativeEncoding.features,
        LearnedRelativeEncoding.axis_scores,
        one_listing=True,
    )
    assert md.count("```python") == 2 and md.count(" — {download}`") == 2
    assert (
        "`LearnedRelativeEncoding`: `features`, `axis_scores` — "
        "{download}`core/encodings.py </attnconv/core/encodings.py>`\n" in md
    )
    assert "\ndef features(self" in md and "\ndef axis_scores(self" in md
    apart = source_markdown(
        LearnedRelativeEncoding.features, LearnedRelativeEncoding.axis_scores
    )
    assert apart.count("```python") == 2
