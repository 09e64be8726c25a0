import inspect

from attnconv.chapters.shared.source import show_source, source_markdown
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
    assert code == "```python\n" + "".join(lines).rstrip() + "\n```"


def test_methods_and_properties_are_dedented_and_joined():
    md = show_source(
        QuadraticEncoding.features, QuadraticEncoding.v, note="Eq. (9)."
    ).data
    assert md.startswith("Eq. (9).\n\n`QuadraticEncoding.features`")
    assert "\ndef features(self" in md and "\ndef v(self" in md
    assert md.count("```python") == 2
