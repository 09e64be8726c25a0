import inspect

from attnconv.chapters.shared.source import (
    fold_long_lines,
    show_source,
    source_markdown,
)
from attnconv.core.conv import conv_to_mhsa
from attnconv.core.encodings import QuadraticEncoding


def test_source_is_the_package_s_own_with_its_file_and_lines():
    md = source_markdown(conv_to_mhsa)
    head, code = md.split("\n\n", 1)
    lines, first = inspect.getsourcelines(conv_to_mhsa)
    assert head == (
        f"`conv_to_mhsa` · source: `attnconv/core/conv.py`, "
        f"lines {first}–{first + len(lines) - 1}"
    )
    assert code == "```python\n" + fold_long_lines("".join(lines).rstrip()) + "\n```"
    assert all(len(line) <= 89 for line in code.splitlines())


def test_methods_and_properties_are_dedented_and_joined():
    md = show_source(
        QuadraticEncoding.features, QuadraticEncoding.v, note="Eq. (9)."
    ).data
    assert md.startswith("Eq. (9).\n\n`QuadraticEncoding.features`")
    assert "\ndef features(self" in md and "\ndef v(self" in md
    assert md.count("```python") == 2


def test_long_lines_fold_at_spaces_and_keep_every_word():
    code = "    " + "word " * 30 + "\n    # " + "note " * 30 + "\nx = 1"
    folded = fold_long_lines(code.rstrip(), width=40)
    lines = folded.splitlines()
    assert all(len(line) <= 40 for line in lines) and lines[-1] == "x = 1"
    words = [w for w in folded.split() if w != "#"]
    assert words == [w for w in code.split() if w != "#"]
    assert all(line.startswith("    # ") for line in lines if "note" in line)
