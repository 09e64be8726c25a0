"""Chapter 18's reading of the runs: the verdict rule on a gain over seeds, and the summaries."""

import pytest

from attnconv.chapters import beyond
from attnconv.experiments.beyond import FRACTIONS, accuracy_summary, series_name
from attnconv.experiments.verdicts import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED


def test_test_set_noise_is_the_binomial_standard_error():
    assert beyond.test_set_noise(0.4) == pytest.approx((0.24 / 1017) ** 0.5)
    assert beyond.test_set_noise(0.0) == 0.0


def test_gain_verdict_needs_separated_seeds_beyond_the_noise():
    base = [0.40, 0.41, 0.42]
    assert beyond.gain_verdict([0.48, 0.49, 0.50], base)[0] == REPRODUCED
    # separated seeds, but a gain smaller than twice the test set's noise (≈ 3 points)
    assert beyond.gain_verdict([0.425, 0.43, 0.435], base)[0] == INCONCLUSIVE
    # overlapping seeds with a large mean gain
    assert beyond.gain_verdict([0.41, 0.50, 0.52], base)[0] == INCONCLUSIVE
    assert beyond.gain_verdict([0.30, 0.31, 0.32], base)[0] == NOT_REPRODUCED
    verdict, reason = beyond.gain_verdict([0.43, 0.44, 0.45], base, claimed_gain=0.05)
    assert verdict == NOT_REPRODUCED and "no pair of seeds" in reason
    assert beyond.gain_verdict([0.48, 0.49, 0.50], base, claimed_gain=0.05)[0] == (
        REPRODUCED
    )
    assert beyond.gain_verdict([0.44, 0.45, 0.46], base, claimed_gain=0.05)[0] == (
        INCONCLUSIVE
    )
    verdict, reason = beyond.gain_verdict([0.60, 0.61], base)  # two seeds only
    assert verdict == INCONCLUSIVE and "at least 3" in reason


def test_claims_are_judged_from_the_runs():
    accs = {}
    for f in FRACTIONS:
        accs[series_name("random", f)] = [0.30, 0.31, 0.32]
        accs[series_name("convit", f)] = [0.40, 0.41, 0.42]
        accs[series_name("impulse", f)] = [0.30, 0.32, 0.31]
        accs[series_name("mimetic", f)] = [0.20, 0.21, 0.22]
    exp = beyond.Experiment()
    exp.runs = {}
    claims = {c.source.split(" ")[0]: c for c in beyond.later_claims_from(accs)}
    assert claims["d'Ascoli"].verdict == REPRODUCED
    assert claims["Li"].verdict == INCONCLUSIVE
    assert claims["Trockman"].verdict == NOT_REPRODUCED
    assert len(accuracy_summary(accs)) == 4 * len(FRACTIONS)
    assert beyond.later_claims(exp)[0].verdict == INCONCLUSIVE  # nothing saved
