import pytest

from attnconv.chapters.shared.tables import (
    COLUMN_CHARS,
    captioned,
    fit_column,
    markdown_table,
    matrices_shown,
    pack_items,
)


def test_markdown_table_parses_back_to_its_cells():
    md = markdown_table(["model", "acc"], [["a|b", 0.5], ["c", 1]]).data
    lines = md.splitlines()
    assert lines[1] == "| :--- | ---: |"
    cells = [[c.strip() for c in l.strip("|").split(" | ")] for l in lines[2:]]
    assert cells == [["a\\|b", "0.5"], ["c", "1"]]
    with pytest.raises(ValueError):
        markdown_table(["a", "b"], [[1]])
    with pytest.raises(ValueError):
        markdown_table(["a", "b"], [[1, 2]], align="lx")


def test_fit_column_wraps_only_long_lines_and_keeps_words():
    long = "word " * 40
    text = fit_column("short\n  " + long.strip())
    lines = text.splitlines()
    assert lines[0] == "short" and all(len(l) <= COLUMN_CHARS for l in lines)
    assert lines[2].startswith(
        "      "
    )  # the line's own indent plus the continuation indent
    assert " ".join(l.strip() for l in lines[1:]) == long.strip()


def test_pack_items_never_splits_an_item():
    items = [f"{i}: (+1,-1) 0.{i}" for i in range(30)]
    text = pack_items("peaks — ", items, width=40)
    lines = text.splitlines()
    assert all(len(l) <= 40 for l in lines)
    assert " ".join(l.strip() for l in lines) == "peaks — " + ", ".join(items)


def test_captioned_sets_the_table_label_in_bold():
    table = markdown_table(["a", "b"], [[1, 2]])
    md = captioned(
        table, "Table 12b.1 — Six layers, on fresh seeds.", name="tab-x"
    ).data
    lines = md.splitlines()
    assert lines[0] == "```{table} **Table 12b.1 —** Six layers, on fresh seeds."
    assert lines[1] == ":name: tab-x" and lines[-1] == "```"
    assert "| a | b |" in md
    first = captioned(table, "Table P.8 — Every claim.").data.splitlines()[0]
    assert first == "```{table} **Table P.8 —** Every claim."
    # a caption without a "Table N.k —" label is kept as it is
    assert captioned(table, "Checks").data.startswith("```{table} Checks\n")
    with pytest.raises(ValueError, match="backtick"):
        captioned(table, "Table 1.1 — `code`")


def test_matrices_shown_as_one_display_equation():
    shown = matrices_shown(
        [[1.0, 2.0], [3.0, 4.0]], [[0.0, 0.0], [0.0, 1.5]], "shift (1, 1)"
    )
    # oracle: the LaTeX written out by hand
    assert shown.data == (
        r"$$ \begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix} "
        r"\xrightarrow{\text{shift (1, 1)}} "
        r"\begin{pmatrix} 0 & 0 \\ 0 & 1.5 \end{pmatrix} $$"
    )
    with pytest.raises(ValueError):
        matrices_shown([[1]], [[1]], r"\alpha")


def test_signed_shift_prints_a_true_minus_and_a_bare_zero():
    from attnconv.chapters.shared.tables import signed_shift

    assert signed_shift((-1, 0)) == "(\u22121, 0)"
    assert signed_shift((2, -3)) == "(+2, \u22123)"
    assert signed_shift((0, 0)) == "(0, 0)"


def test_spaced_unit_puts_a_space_before_a_trailing_unit_only():
    from attnconv.chapters.shared.tables import spaced_unit

    assert [spaced_unit(x) for x in ("93.8%", "12.1M", "6.2B", "120k")] == [
        "93.8 %",
        "12.1 M",
        "6.2 B",
        "120 k",
    ]
    assert spaced_unit("12.1 M") == "12.1 M" and spaced_unit("ResNet18") == "ResNet18"


def test_signed_number_prints_a_sign_a_true_minus_and_no_negative_zero():
    from attnconv.chapters.shared.tables import signed_number

    assert signed_number(1.24) == "+1.2"
    assert signed_number(-6.26) == "\u22126.3"
    assert signed_number(-0.04) == "+0.0"  # rounds to zero: no "−0.0"
    assert signed_number(2.756, 2) == "+2.76"
