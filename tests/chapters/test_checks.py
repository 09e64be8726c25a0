import pytest

from attnconv.chapters.shared.checks import (
    Check,
    CheckFailed,
    Checks,
    check_table,
    format_bound,
    format_measured,
)


def test_every_recorded_check_asserts():
    checks = Checks()
    checks.below("error", 3e-17, 1e-12, shown_below=1e-14)
    checks.above("gap", 0.3456, 0.1)
    checks.between("ratio", 1.04, 0.5, 2)
    checks.equal("heads", 9, 9)
    checks.holds("same map", True, "identical", "bit for bit")
    for record in (
        lambda: checks.below("error", 2e-12, 1e-12),
        lambda: checks.below("round-off", 1e-13, 1e-12, shown_below=1e-14),
        lambda: checks.above("gap", 0.05, 0.1),
        lambda: checks.between("ratio", 3.0, 0.5, 2),
        lambda: checks.equal("heads", 8, 9),
        lambda: checks.holds("same map", False, "differs", "bit for bit"),
    ):
        with pytest.raises(CheckFailed):
            record()
    assert len(checks.rows) == 5  # a failed check is never recorded as shown
    with pytest.raises(ValueError):
        checks.below("error", 0.0, 1e-12, shown_below=1e-6)


def test_the_table_shows_rounded_values_and_bounds_never_booleans():
    checks = Checks()
    checks.below("float64 error", 3e-17, 1e-12, shown_below=1e-14)
    checks.above("permutation error", 0.34567, 0.1)
    md = checks.table("Table 1.1 — Checks.", name="tab-checks").data
    lines = md.splitlines()
    # folded in a dropdown whose bar counts the checks (no second title: the table's number
    # is said once, by its caption), the captioned table inside it
    assert lines[0] == "````{dropdown} All 2 checks hold: measured beside tolerance"
    assert md.count("Table 1.1") == 1
    assert lines[-1] == "````" and lines[-2] == "```"
    lines = lines[1:-1]
    assert lines[:3] == ["```{table} **Table 1.1 —** Checks.", ":name: tab-checks", ""]
    assert lines[3] == "| check | measured | tolerance |" and lines[-1] == "```"
    assert "| float64 error | < 1e-14 | < 1e-12 |" in lines
    assert "| permutation error | 0.35 | > 0.1 |" in lines
    assert not any(l.rstrip(" |").endswith(("True", "False")) for l in lines)


def test_check_table_asserts_each_row():
    ok = Check("a", "0.1", "< 1", True)
    assert "| a | 0.1 | < 1 |" in check_table([ok]).data
    with pytest.raises(CheckFailed, match="b: measured 2"):
        check_table([ok, Check("b", "2", "< 1", False)])
    with pytest.raises(ValueError):
        check_table([])
    with pytest.raises(ValueError, match="backtick"):
        check_table([ok], caption="Table 1.1 — `code` in a caption")


def test_format_measured():
    assert format_measured(0.0) == "0"
    assert format_measured(38.123) == "38"
    assert format_measured(1.23e-7) == "1.2e-7"
    assert format_measured(0.0456, digits=1) == "0.05"


def test_a_shown_bound_must_lie_below_the_tolerance():
    checks = Checks()
    with pytest.raises(ValueError, match="below the tolerance"):
        checks.below("round-off", 1e-13, 1e-12, shown_below=1e-12)
    with pytest.raises(ValueError, match="below the tolerance"):
        checks.below("round-off", 1e-13, 1e-12, shown_below=1e-11)
    assert checks.rows == []
    checks.below("float32 error", 1.2e-7, 1e-6, shown_below=2e-7)
    assert (checks.rows[0].measured, checks.rows[0].tolerance) == ("< 2e-7", "< 1e-6")


def test_format_bound():
    assert format_bound(1e-12) == "1e-12"
    assert format_bound(2e-7) == "2e-7"
    assert format_bound(0.005) == "0.005"
    assert format_bound(5) == "5"


def test_a_range_in_a_check_name_stays_on_one_line():
    """A check named after layers "1-2" keeps the range in a nowrap span (a 308 px cell broke
    it as "1- / 2"); the measured and tolerance cells are left as they are."""
    md = check_table(
        [Check("distance of layers 1-2 and 3-6", "2.2-2.8", "< 9", True)]
    ).data
    row = next(line for line in md.splitlines() if "distance" in line)
    name, measured = row.split("|")[1:3]
    assert name.count('<span class="nowrap">') == 2 and "1-2" in name and "3-6" in name
    assert measured.strip() == "2.2-2.8"
