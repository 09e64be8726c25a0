"""Table 18.4: one row per pair of arms and size, its title that of the first frozen contrast
comparing the pair, and the level question's margin each contrast's own: in the column's head
when every equivalence contrast shares it, else in each row."""

from types import SimpleNamespace

from attnconv.chapters import beyond_fair as bf
from attnconv.evidence.protocol import BEYOND
from attnconv.experiments.verdicts import INCONCLUSIVE, NOT_REPRODUCED


def _result(key, size, margins):
    c = bf.FROZEN[key]
    iv = SimpleNamespace(estimate=-0.02, lo=-0.039, hi=-0.001)
    return SimpleNamespace(
        key=key,
        size=size,
        kind=c["kind"],
        margin=margins.get(key, c["margin"]),
        interval=iv,
        cross_check=iv,
        verdict=NOT_REPRODUCED if c["kind"] == "superiority" else INCONCLUSIVE,
        holm_p=0.5,
    )


def _table(margins=None):
    results = [
        _result(c["key"], n, margins or {})
        for c in BEYOND["contrasts"]
        for n in c["sizes"]
    ]
    rows = bf.fair_contrasts_table(results).data.splitlines()
    return rows[0], rows[2:]


def test_one_lookup_of_the_frozen_contrasts():
    assert list(bf.FROZEN) == [c["key"] for c in BEYOND["contrasts"]]
    for key, c in bf.FROZEN.items():
        assert bf._pair(key) == (c["a"], c["b"])
    assert bf._pair("not frozen") == ("not frozen", "")
    # a pair's title is its first frozen contrast's, whichever of its tests comes first
    title = bf._pair_title(("impulse", "gpsa"), "starts_level_impulse")
    assert title == bf.CONTRAST_TITLES["impulse_start"]


def test_a_shared_margin_is_stated_once_in_the_head():
    margins = {c["margin"] for c in BEYOND["contrasts"] if c["kind"] == "equivalence"}
    assert len(margins) == 1  # the frozen protocol: every level question at ±2 points
    head, rows = _table()
    assert f"a ≈ b within ±{100 * margins.pop():g} points? (Holm p)" in head
    assert not any("within" in r for r in rows)


def test_each_contrast_states_its_own_margin_when_they_differ():
    head, rows = _table({"starts_level_impulse": 0.03})
    assert "within" not in head and "a ≈ b? (Holm p)" in head
    convit = [r for r in rows if r.startswith("| ConViT start")]
    impulse = [r for r in rows if r.startswith("| impulse start")]
    assert convit and impulse
    assert all(r.count("within ±2 points") == 1 for r in convit)
    assert all(r.count("within ±3 points") == 1 for r in impulse)
    assert not any("within" in r for r in rows if r not in convit + impulse)


def test_a_contrast_cell_prints_no_negative_zero():
    """A contrast's cell reads its numbers through the book's signed formatter: a true minus,
    and an end that rounds to zero prints "+0.0", never "−0.0"."""
    from types import SimpleNamespace

    iv = SimpleNamespace(estimate=-0.0204, lo=-0.0004, hi=0.0123)
    assert bf._signed(iv) == "\u22122.0 [+0.0, +1.2]"
