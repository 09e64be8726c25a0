"""The verdict rule and the seed-spread helpers of attnconv.experiments.verdicts."""

import json
import statistics
from pathlib import Path

import pytest
from conftest import paper_text

from attnconv.experiments.verdicts import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    Evidence,
    final_test_accuracies,
    paper_text_contains,
    seed_series,
    spread,
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


def test_paper_text_contains_real_quotes():
    text = paper_text()
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


def write_history(
    folder: Path, seed: int, acc: float, epochs: int = 3, status: str = "complete"
):
    folder.mkdir(parents=True)
    h = {
        "config": {"seed": seed},
        "test_size": 1017,
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
    assert s.message().startswith("cpu learned: 2 complete seed runs; missing: seed 2")
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


def test_compare_seed_series_prints_the_interval_of_the_rule(tmp_path):
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
    # the difference by the one rule: the histories kept no predictions, so unpaired
    assert lines[-1].startswith("9 heads − 16 heads: −9.3 points, 95 % interval [")
    assert "unpaired (conservative), 3 v 3 seeds" in lines[-1]
    write_history(tmp_path / "seeds" / "cpu" / "quadratic" / "seed3", 3, 0.55)
    lines = compare_seed_series(
        "cpu", "quadratic", "quadratic-16heads", tmp_path, ("9 heads", "16 heads")
    )
    assert "4 v 3 seeds" in lines[-1]
    assert compare_seed_series("cpu", "learned", "quadratic", tmp_path)[0].startswith(
        "learned: no complete"
    )
    assert compare_seed_series("paper", "x", "y", tmp_path)[0].startswith(
        "no seed series paper/x"
    )


# --------------------------------------------------------------------------- existence and blocks

from attnconv.experiments.claim_text import claim_block, verdict_table  # noqa: E402
from attnconv.experiments.existence import Observation, Setting, existence_verdict  # noqa: E402


def test_setting_describes_what_it_names():
    claim = Setting(model="learned", depth=6, layers=(1, 2))
    assert claim.describe() == "learned, 6 layers, layers 1-2"


def test_existence_exact_property_shown_by_one_run_at_the_setting_is_reproduced():
    # Sec. 4.3 judged on the six-layer learned seeds: two of three show heads > 50 % on one key
    obs = [
        Observation("6 layers, seed 0", "0 heads", False),
        Observation("6 layers, seed 1", "2 heads", True),
        Observation("6 layers, seed 2", "3 heads", True),
        Observation("2 layers, seed 0", "6 and 5 heads", True, at_setting=False),
    ]
    verdict, reason = existence_verdict(obs)
    assert verdict == REPRODUCED
    assert "2 of 3" in reason and "exact" in reason


def test_existence_shown_only_off_the_setting_is_not_counted():
    # the 2-layer learned run shows heads on single pixels, the six-layer runs do not:
    # the claim is about layers 1-2 of the six-layer model, so it is not reproduced there
    obs = [
        Observation("6 layers, seed 0", "0 heads", False),
        Observation("2 layers, seed 0", "6 and 5 heads", True, at_setting=False),
    ]
    verdict, reason = existence_verdict(obs)
    assert verdict == NOT_REPRODUCED
    assert "2 layers, seed 0" in reason  # named, not counted
    verdict, reason = existence_verdict(obs[1:])
    assert verdict == INCONCLUSIVE and "no run at the claim's setting" in reason


def test_existence_not_shown_at_the_setting_is_not_reproduced():
    # Fig. 2's grid at layer 4 of 6: no sharp head in layer 4 of any of the three seeds
    obs = [Observation(f"seed {k}", "0 of 9 sharp heads", False) for k in range(3)]
    verdict, reason = existence_verdict(obs, Setting("quadratic", 6, (4,)))
    assert verdict == NOT_REPRODUCED
    assert "none of the 3 runs" in reason and "layer 4" in reason


def test_claim_block_carries_quote_test_evidence_verdict_confounds():
    c = claim(confounds=("×10 learning rate on the positional parameters.",))
    block = claim_block(c, heading="Redundant heads", link="the six-layer chapter")
    for part in (
        "**Redundant heads**",
        "“some of the heads",
        "*Test.*",
        "- deep learned: 6 of 18 heads",
        "*Verdict.* **reproduced at CPU scale**",
        "*Confounds.* ×10",
        "*Where.* the six-layer chapter",
    ):
        assert part in block
    assert claim().confounds == () and claim().where == ""  # the old API still works


def test_short_quote_stays_verbatim_and_summary_names_the_verdict():
    from attnconv.experiments.claim_text import claim_summary, short_quote

    long = (
        "The figure confirms our hypothesis for the first two layers and partially for the "
        "third: even when left to learn the encoding from the data, certain self-attention "
        "heads (depicted on the left) learn to attend to individual pixels"
    )
    s = short_quote(long)
    assert s.endswith("[...]") and len(s) <= 146
    assert paper_text_contains(s, long)
    assert short_quote("short") == "short"
    c = claim(reason="no series can tell — x (noise: the seed ranges)")
    text = claim_summary(c, "Redundant heads", "the chapter")
    assert "*reproduced at CPU scale* — no series can tell — x." in text
    assert "noise" not in text and "Evidence: the chapter." in text
