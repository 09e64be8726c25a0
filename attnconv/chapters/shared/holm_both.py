"""Holm's adjustment applied in both directions: an alternative reading that the frozen protocol
does not name, reported beside its verdicts and never replacing them.

The protocol adjusts only the rejections that make a claim *reproduced*. A *not reproduced* is a
rejection too, in the other direction (a share of seeds below one half, an interval below the
margin), and a family-wide correction can hold it back in the same way. Here each judged claim
enters Holm's step-down procedure (:func:`attnconv.evidence.rule.holm`, on the 5 % scale) with the
one-sided p of the direction its verdict rejects, and a rejection stands only where its adjusted
p is below 0.05.
"""

from __future__ import annotations

from typing import Dict, Mapping, Optional

from ...evidence.judge import PENDING, ConfirmatoryVerdict
from ...evidence.protocol import ProtocolClaim
from ...evidence.rule import SHARE_ALPHA, binomial_upper_tail, holm, one_sided_p
from ...experiments.verdicts import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED

__all__ = ["against_p", "holm_both_ways"]


def against_p(v: ConfirmatoryVerdict, claim: ProtocolClaim) -> Optional[float]:
    """The one-sided p of a *not reproduced*: for a share of seeds, the exact binomial
    probability of so few seeds showing the property when half the seeds would,
    P(X ≤ shown | n, ½); for a comparison, the t test that the difference lies below the
    margin (non-inferiority) or below 0 (superiority), on the verdict's interval. ``None`` where
    neither applies."""
    if v.interval is None:
        if v.shown is None or not v.seeds:
            return None
        n = len(v.seeds)
        return binomial_upper_tail(n - v.shown, n, 0.5)
    iv = v.interval
    if iv.se <= 0 or claim.kind not in ("non-inferiority", "superiority"):
        return None
    # the other side of the one rule's one-sided t test of the claimed direction
    return 1.0 - one_sided_p(claim.kind, iv.estimate, iv.se, iv.df, claim.margin)


def holm_both_ways(
    verdicts: Mapping[str, ConfirmatoryVerdict], claims: Mapping[str, ProtocolClaim]
) -> Dict[str, str]:
    """Each judged claim's verdict when Holm's adjustment over the family holds back rejections
    in both directions: a *reproduced* or *not reproduced* whose adjusted p is not below 0.05
    becomes *inconclusive*; an *inconclusive* stays."""
    judged = {k: v for k, v in verdicts.items() if v.verdict != PENDING}
    p: Dict[str, float] = {}
    for k, v in judged.items():
        got = against_p(v, claims[k]) if v.verdict == NOT_REPRODUCED else v.p
        p[k] = 1.0 if got is None else got
    adjusted = holm(p, {k: v.alpha for k, v in judged.items()})
    return {
        k: v.verdict
        if v.verdict not in (REPRODUCED, NOT_REPRODUCED) or adjusted[k] < SHARE_ALPHA
        else INCONCLUSIVE
        for k, v in judged.items()
    }
