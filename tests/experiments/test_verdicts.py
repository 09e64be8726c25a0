"""The verdict rule and the seed-spread helpers of attnconv.experiments.verdicts."""

import json
import statistics
from pathlib import Path

import pytest

from attnconv.experiments.verdicts import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    Evidence,
    final_test_accuracies,
    ordering,
    paper_text_contains,
    ranges_separate,
    seed_series,
    spread,
    verdict_table,
)

PAPER = (
    Path(__file__).resolve().parents[3]
    / "shared"
    / "papers"
    / "002_3c48580c3ebf0097.txt"
)


def claim(**kw):
    base = dict(
        quote="some of the heads in the last two layers seem to be redundant",
        source="Sec. 4.3",
        test="a head of layer 5 or 6 whose removal costs at most 0.5 points",
        evidence=[Evidence("deep learned", "6 of 18 heads")],
        verdict=REPRODUCED,
        reason="6 of 18",
    )
    base.update(kw)
    return Claim(**base)


def test_claim_accepts_the_three_verdicts_only():
    for v in (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE):
        assert claim(verdict=v).verdict == v
    with pytest.raises(ValueError):
        claim(verdict="holds")
    with pytest.raises(ValueError):
        claim(verdict="does not hold")


def test_claim_needs_evidence_and_a_reason_and_no_refutation_words():
    with pytest.raises(ValueError):
        claim(evidence=[])
    with pytest.raises(ValueError):
        claim(reason=" ")
    with pytest.raises(ValueError):
        claim(verdict=NOT_REPRODUCED, reason="our run contradicts the paper")
    with pytest.raises(ValueError):
        claim(verdict=NOT_REPRODUCED, reason="this does not hold here")


def test_verdict_table_one_row_per_evidence_and_claim_in_first_row():
    c = claim(evidence=[Evidence("run a", "x | y"), Evidence("run b", "z")])
    lines = verdict_table([c, claim()]).splitlines()
    assert len(lines) == 2 + 3
    cells = [l.split(" | ") for l in lines]
    assert all(l.startswith("| ") and l.endswith(" |") for l in lines)
    assert "“some of the heads" in lines[2] and REPRODUCED in lines[2]
    assert lines[3].startswith(
        "|  | run b | z |"
    )  # continuation row: claim and verdict empty
    assert (
        "x \\| y" in lines[2]
    )  # a pipe in a cell is escaped, so every row has 4 cells
    assert len({len(l.replace("\\|", "").split("|")) for l in lines}) == 1 and cells


def test_paper_text_contains_is_verbatim_with_ellipses():
    text = "The figure confirms our hypothesis\nfor the first two layers and partially for the third."
    assert paper_text_contains("confirms our hypothesis for the first two layers", text)
    assert paper_text_contains("The figure [...] for the third", text)
    assert not paper_text_contains("confirms the hypothesis", text)
    assert not paper_text_contains(
        "for the third [...] The figure", text
    )  # order matters


@pytest.mark.skipif(not PAPER.is_file(), reason="paper text not beside the checkout")
def test_paper_text_contains_real_quotes():
    text = PAPER.read_text()
    assert paper_text_contains(
        "some of the heads in the last two layers seem to be redundant", text
    )
    assert paper_text_contains(
        "Interestingly, attention heads do not overlap and seem to take an arrangement "
        "maximizing the coverage of the input space.",
        text,
    )
    assert not paper_text_contains("heads in the last two layers are redundant", text)


def test_spread_against_statistics():
    vals = [0.43, 0.45, 0.41, 0.47, 0.44]
    s = spread(vals, range(5))
    assert s.mean == pytest.approx(statistics.mean(vals)) and (s.lo, s.hi, s.n) == (
        0.41,
        0.47,
        5,
    )
    assert s.format() == "mean 44.0 % (41.0–47.0 %, 5 seeds)"
    with pytest.raises(ValueError):
        spread([])


def test_ordering_only_when_ranges_separate():
    a, b, c = (
        spread([0.50, 0.52, 0.55]),
        spread([0.40, 0.45, 0.49]),
        spread([0.48, 0.51, 0.53]),
    )
    assert ranges_separate(a, b) and ranges_separate(b, a) and not ranges_separate(a, c)
    assert (
        ordering("A", a, "B", b) == "A above B in every seed (the seed ranges separate)"
    )
    assert (
        ordering("B", b, "A", a) == "A above B in every seed (the seed ranges separate)"
    )
    assert ordering("A", a, "C", c).startswith("no ordering stated: the seed ranges")
    assert ordering("A", spread([0.9]), "B", b).startswith(
        "no ordering stated: 1 and 3 seeds"
    )


def write_history(
    folder: Path, seed: int, acc: float, epochs: int = 3, status: str = "complete"
):
    folder.mkdir(parents=True)
    h = {
        "config": {"seed": seed},
        "status": status,
        "epochs": [
            {"epoch": i, "test_acc": acc - 0.01 * (epochs - 1 - i)}
            for i in range(epochs)
        ],
    }
    (folder / "history.json").write_text(json.dumps(h))


def test_seed_series_reads_complete_runs_and_names_what_is_missing(tmp_path):
    write_history(tmp_path / "cpu" / "learned", 0, 0.46)
    write_history(tmp_path / "seeds" / "cpu" / "learned" / "seed1", 1, 0.48)
    write_history(
        tmp_path / "seeds" / "cpu" / "learned" / "seed2", 2, 0.40, status="running"
    )
    s = seed_series("cpu", "learned", tmp_path)
    assert s.seeds == [0, 1]
    assert (
        len(s.missing) == 3
        and "seed 2" in s.missing[0]
        and "not complete" in s.missing[0]
    )
    assert (
        "seed 3" in s.missing[1]
        and "no seeds/cpu/learned/seed3/history.json" in s.missing[1]
    )
    assert s.message().startswith(
        "cpu learned: 2 complete seed run(s); missing: seed 2"
    )
    acc = final_test_accuracies(s)
    assert acc.values == (0.46, 0.48) and acc.seeds == (0, 1)
    with pytest.raises(KeyError):
        seed_series("cpu", "nothing", tmp_path)
    assert seed_series("deep", "quadratic", tmp_path).histories == {}
    with pytest.raises(ValueError):
        final_test_accuracies(seed_series("deep", "quadratic", tmp_path))


def test_final_accuracies_refuse_unequal_training(tmp_path):
    write_history(tmp_path / "seeds" / "cpu" / "quadratic" / "seed0", 0, 0.4, epochs=3)
    write_history(tmp_path / "seeds" / "cpu" / "quadratic" / "seed1", 1, 0.4, epochs=4)
    with pytest.raises(ValueError, match="unequal length"):
        final_test_accuracies(seed_series("cpu", "quadratic", tmp_path))


def test_compare_seed_series_states_an_ordering_only_when_ranges_separate(tmp_path):
    from attnconv.experiments.verdicts import compare_seed_series

    for k, (a, b) in enumerate([(0.40, 0.50), (0.42, 0.52), (0.41, 0.49)]):
        write_history(tmp_path / "seeds" / "cpu" / "quadratic" / f"seed{k}", k, a)
        write_history(
            tmp_path / "seeds" / "cpu" / "quadratic-16heads" / f"seed{k}", k, b
        )
    lines = compare_seed_series(
        "cpu", "quadratic", "quadratic-16heads", tmp_path, ("9 heads", "16 heads")
    )
    assert lines[0].startswith(
        "9 heads, 3 epochs, seeds 0, 1, 2: test accuracy mean 41.0 %"
    )
    assert "missing: seed 3" in lines[1]
    assert (
        lines[-1] == "16 heads above 9 heads in every seed (the seed ranges separate)"
    )
    write_history(tmp_path / "seeds" / "cpu" / "quadratic" / "seed3", 3, 0.55)
    lines = compare_seed_series(
        "cpu", "quadratic", "quadratic-16heads", tmp_path, ("9 heads", "16 heads")
    )
    assert lines[-1].startswith("no ordering stated: the seed ranges")
    assert compare_seed_series("cpu", "learned", "quadratic", tmp_path)[0].startswith(
        "learned: no complete"
    )
    assert compare_seed_series("paper", "x", "y", tmp_path)[0].startswith(
        "no seed series paper/x"
    )
