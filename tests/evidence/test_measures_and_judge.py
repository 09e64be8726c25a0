"""The protocol's measures against independent oracles, and the judge end to end on the
exploratory six-layer runs standing in for fresh seeds (so that every code path has run before
the first confirmatory run is read)."""

import math

import pytest

from attnconv.evidence import judge as J
from attnconv.evidence import measures as M
from attnconv.evidence.protocol import CLAIMS
from attnconv.experiments.registry import load_run, series
from attnconv.experiments.verdicts import VERDICTS


def _record(centres, alphas):
    """A quadratic layer record: Σ⁻¹ = 2α·I per head (eq. 9)."""
    return {
        "centers": [list(c) for c in centres],
        "inverse_covariance": [[[2 * a, 0.0], [0.0, 2 * a]] for a in alphas],
    }


def test_gaussian_maps_match_the_chapters_encoding():
    from attnconv.chapters.shared.gaussian_maps import gaussian_head_maps

    rec = load_run("deep/quadratic").history.layer_records()[0]
    ours = M.gaussian_maps(rec)
    theirs = gaussian_head_maps(rec, (16, 16), (8, 8)).reshape(ours.shape)
    assert float((ours - theirs).abs().max()) < 1e-12


def test_peaks_of_sharp_heads_sit_on_their_centres():
    """A head with a large α on an integer shift puts nearly all its mass there (Lemma 2)."""
    shifts = [(-1, -1), (0, 1), (2, -3)]
    p, keys = M.peaks(_record(shifts, [20.0] * 3))
    assert keys == shifts and min(p) > 0.99


def test_properties_on_hand_made_layers():
    lattice = [(a, b) for a in (-1, 0, 1) for b in (-1, 0, 1)]
    sharp = _record(lattice, [20.0] * 9)
    wide = _record([(0, 0)] * 9, [0.01] * 9)
    recs = [sharp, sharp, wide, sharp, wide, wide]
    assert M.grid_layer4(recs) and M.no_overlap(recs)
    assert M.localized_first(recs)  # 9 per layer in 1-2, 3 per layer in 3-6
    assert not M.no_overlap([_record([(0, 0), (0, 0)], [20.0, 20.0])] * 6)
    assert M.local_then_far([sharp, sharp] + [_record([(5, 5)] * 9, [1.0] * 9)] * 4)


def test_condition_numbers_of_a_known_matrix():
    rec = {"centers": [[0.0, 0.0]], "inverse_covariance": [[[4.0, 0.0], [0.0, 1.0]]]}
    assert M.condition_numbers(rec) == [4.0]


def test_chance_of_placement_matches_the_rule():
    recs = [
        _record([(0, 0)] * 4, [20.0] * 4)
    ] * 6  # 4 heads on one key, |δ|∞ = 0 → r = 1
    # every layer qualifies; each has its 4 heads on one key (so they overlap)
    assert not M.no_overlap(recs)
    assert M.overlap_chance(recs) == pytest.approx((8 * 7 * 6 / 9**3) ** 6)


@pytest.fixture(scope="module")
def exploratory():
    stand_in = {
        "quadratic": [load_run(e.name) for e in series("deep/quadratic")],
        "learned": [load_run(e.name) for e in series("deep/learned")],
        "quadratic-16heads": [load_run("deep/quadratic-16heads")] * 3,
        "generalized": [load_run("deep/generalized")] * 3,
        "resnet18": [load_run(e.name) for e in series("cpu/resnet18-40epochs")][:3],
    }
    return stand_in


def test_the_judge_end_to_end_on_stand_ins(monkeypatch, exploratory):
    monkeypatch.setattr(J, "arm_runs", lambda arm, seeds: exploratory[arm])
    verdicts = J.confirmatory_verdicts(seeds=(0, 1, 2))
    assert set(verdicts) == set(CLAIMS)
    for key, v in verdicts.items():
        assert v.verdict in VERDICTS + (J.PENDING,), key
    # three of three seeds can never reproduce a share claim (p = 1/8 > 5 %)
    assert verdicts["localized_first"].verdict == "inconclusive"
    assert "3 of 3 seeds" in verdicts["localized_first"].detail
    # the comparison is the one rule's: the exploratory paired interval of ch. 12
    assert (
        "−3.7 points, 95 % interval [−7.7, +0.3]"
        in verdicts["similar_or_better"].detail
    )
    assert J.tally(verdicts)["pending"] == 2  # the learned stand-ins kept no studies


def test_pending_until_the_runs_exist():
    verdicts = J.confirmatory_verdicts()
    assert all(v.verdict == J.PENDING or v.seeds for v in verdicts.values())
    assert not math.isnan(sum(J.tally(verdicts).values()))


def test_interim_verdicts_are_labelled_so_until_every_arm_has_its_eight_seeds():
    from attnconv.chapters import protocol as page
    from attnconv.evidence.judge import (
        PENDING,
        ConfirmatoryVerdict,
        interim_words,
        tally_sentence,
    )
    from attnconv.evidence.protocol import CONFIRMATORY_SEEDS, INTERIM_SEEDS

    judged = ConfirmatoryVerdict("a", "inconclusive", "", seeds=INTERIM_SEEDS)
    pending = ConfirmatoryVerdict("b", PENDING, "")
    interim = {"a": judged, "b": pending}
    assert judged.interim and not pending.interim
    assert "(interim: 5 of 8 fresh seeds per arm)" in tally_sentence(interim)
    assert "(interim" in page.tally_words(interim)
    assert "inconclusive (interim)" in page.verdicts_table(interim, {}).data
    full = ConfirmatoryVerdict("a", "inconclusive", "", seeds=CONFIRMATORY_SEEDS)
    assert not full.interim and interim_words({"a": full, "b": pending}) == ""
