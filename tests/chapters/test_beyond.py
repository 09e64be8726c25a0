"""Chapter 18's reading of the runs: the verdict rule on a gain over seeds, and the summaries."""

import pytest

from attnconv.chapters import beyond
from attnconv.experiments.beyond import FRACTIONS, accuracy_summary, series_name
from attnconv.experiments.verdicts import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED


def test_test_set_noise_is_the_binomial_standard_error():
    assert beyond.test_set_noise(0.4) == pytest.approx((0.24 / 1017) ** 0.5)
    assert beyond.test_set_noise(0.0) == 0.0


def test_gain_verdict_is_the_one_rule():
    from attnconv.experiments.verdicts import Side, difference_interval

    base = [0.40, 0.41, 0.42]
    verdict, reason = beyond.gain_verdict([0.48, 0.49, 0.50], base)
    assert verdict == REPRODUCED and "unpaired (conservative), 3 v 3 seeds" in reason
    iv = difference_interval(
        Side((0.48, 0.49, 0.50), None, 1017), Side(tuple(base), None, 1017)
    )
    assert f"[{100 * iv.lo:+.1f}, {100 * iv.hi:+.1f}]" in reason
    # a gain of 2 points within the noise: inconclusive, with what the runs could detect
    verdict, reason = beyond.gain_verdict([0.425, 0.43, 0.435], base)
    assert verdict == INCONCLUSIVE and "could detect" in reason
    assert beyond.gain_verdict([0.30, 0.31, 0.32], base)[0] == NOT_REPRODUCED
    # "over 5 points": an interval reaching below 5 points does not establish it ...
    assert beyond.gain_verdict([0.48, 0.49, 0.50], base, claimed_gain=0.05)[0] == (
        INCONCLUSIVE
    )
    # ... one wholly below it is against it, one wholly above it reproduces it
    assert beyond.gain_verdict([0.40, 0.41, 0.42], base, claimed_gain=0.05)[0] == (
        NOT_REPRODUCED
    )
    assert beyond.gain_verdict([0.58, 0.59, 0.60], base, claimed_gain=0.05)[0] == (
        REPRODUCED
    )
    # one seed on a side: the seed term is unknown, no verdict
    verdict, reason = beyond.gain_verdict([0.60], base)
    assert verdict == INCONCLUSIVE and "unknown" in reason


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
