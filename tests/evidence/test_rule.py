"""The confirmatory rule's arithmetic against plain oracles: enumeration of every placement,
direct sums, and the classic values."""

import itertools

import pytest

from attnconv.evidence import rule
from attnconv.evidence.judge import one_sided_bounds
from attnconv.experiments.verdicts import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
)


@pytest.mark.parametrize("heads,keys", [(2, 9), (4, 9), (3, 5), (6, 4)])
def test_distinct_by_chance_counts_every_placement(heads, keys):
    every = list(itertools.product(range(keys), repeat=heads))
    distinct = sum(len(set(p)) == heads for p in every)
    assert rule.distinct_by_chance(heads, keys) == pytest.approx(distinct / len(every))


@pytest.mark.parametrize("heads,keys,at_least", [(5, 12, 3), (6, 11, 5), (4, 9, 2)])
def test_lattice_points_by_chance_counts_every_placement(heads, keys, at_least):
    lattice = set(range(9))  # keys 0-8 are the lattice points
    every = list(itertools.product(range(keys), repeat=heads))
    hits = sum(len(set(p) & lattice) >= at_least for p in every)
    assert rule.lattice_points_by_chance(heads, keys, at_least) == pytest.approx(
        hits / len(every)
    )


def test_share_verdicts_at_five_and_eight_seeds():
    v = lambda k, n, c=0.0: rule.share_verdict(k, n, c).verdict
    assert [v(k, 5) for k in range(6)] == [NOT_REPRODUCED] + [INCONCLUSIVE] * 4 + [
        REPRODUCED
    ]
    assert [v(k, 8) for k in range(9)] == [NOT_REPRODUCED] * 2 + [INCONCLUSIVE] * 5 + [
        REPRODUCED
    ] * 2
    # a property chance gives 80 % of the time needs more than 7 of 8
    assert v(7, 8, 0.8) == INCONCLUSIVE and v(8, 8, 0.6) == REPRODUCED


def test_share_interval_is_clopper_pearson():
    lo, hi = rule.share_interval(7, 8)
    assert rule.binomial_upper_tail(7, 8, lo) == pytest.approx(0.025, abs=1e-9)
    assert rule.binomial_lower_tail(7, 8, hi) == pytest.approx(0.025, abs=1e-9)
    assert rule.share_interval(0, 5)[0] == 0.0 and rule.share_interval(5, 5)[1] == 1.0
    with pytest.raises(ValueError, match="0 <= k <= n"):
        rule.share_interval(6, 5)


def test_one_sided_bounds_decide_exactly_as_the_share_rule():
    # the bounds the book prints beside a share verdict say what the binomial test decides
    for n in range(1, 13):
        for k in range(n + 1):
            lo, hi = one_sided_bounds(k, n)
            sv = rule.share_verdict(k, n)
            assert (lo > 0.5) == (sv.verdict == REPRODUCED), (k, n, lo)
            assert (hi < 0.5) == (sv.verdict == NOT_REPRODUCED), (k, n, hi)
    lo, _ = one_sided_bounds(7, 8)
    assert rule.binomial_upper_tail(7, 8, lo) == pytest.approx(0.05, abs=1e-9)


def test_holm_against_its_definition():
    p = {"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.5}
    adj = rule.holm(p)
    assert adj == pytest.approx({"a": 0.04, "c": 0.09, "b": 0.09, "d": 0.5})
    # a comparison at one-sided 2.5 % is put on the 5 % scale (p doubled) first
    assert rule.holm({"x": 0.01}, {"x": rule.COMPARISON_ALPHA}) == {"x": 0.02}


def test_one_sided_p_matches_the_interval():
    """The comparison's p is below 2.5 % exactly when the 95 % interval clears the bound."""
    from attnconv.experiments.verdicts import t_quantile

    se, df = 0.01, 7
    t = t_quantile(0.975, df)
    at_edge = -0.02 + t * se  # lower end of the interval exactly at −margin
    p = rule.one_sided_p("non-inferiority", at_edge, se, df, 0.02)
    assert p == pytest.approx(0.025, abs=1e-6)
    from attnconv.experiments.verdicts import t_cdf

    tost = rule.one_sided_p("equivalence", 0.0, se, df, 0.02)
    assert tost == pytest.approx(1 - t_cdf(2.0, df), abs=1e-12)


def test_detectable_share_is_the_smallest_share_with_80_percent_power():
    """Against a plain binomial loop: 8 seeds reproduce from 7 (P(X >= 7 | 1/2) = 9/256 < 0.05),
    which a true share of 0.90 reaches with power 0.813 and 0.89 does not (0.788)."""
    from math import comb

    from attnconv.evidence.judge import detectable_share

    def power(k, n, q):
        return sum(comb(n, i) * q**i * (1 - q) ** (n - i) for i in range(k, n + 1))

    assert power(7, 8, 0.5) < 0.05 <= power(6, 8, 0.5)
    assert power(7, 8, 0.90) >= 0.8 > power(7, 8, 0.89)
    assert detectable_share(8, 0.5) == 0.90
    assert detectable_share(5, 0.5) == 0.96  # 5 of 5 needed: 0.96**5 = 0.815
    assert detectable_share(8, 0.9) is None  # 8 of 8 against 0.9 has p = 0.43
