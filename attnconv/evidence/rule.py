"""The confirmatory rule's own arithmetic (frozen with the protocol, :mod:`~attnconv.evidence.protocol`):

* a claim about what trained models do is a claim about **most seeds**: :func:`share_verdict`
  (exact one-sided binomial tests of the share of fresh seeds that show a property, against one
  half and against the share that chance alone gives);
* **null models** where chance alone can produce a property: :func:`distinct_by_chance` (heads
  placed at random on keys all distinct), :func:`lattice_points_by_chance` (heads placed at random
  cover enough points of the 3×3 lattice);
* a comparison's one-sided p-value from its interval (:func:`one_sided_p`; the interval itself is
  the book's one rule, :func:`attnconv.experiments.verdicts.difference_interval`), and **Holm's**
  step-down adjustment over a family (:func:`holm`).

Plain Python: every number here is exact up to float rounding, the same on every machine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Tuple

from ..experiments.verdicts import (
    EQUIVALENCE,
    INCONCLUSIVE,
    NON_INFERIORITY,
    NOT_REPRODUCED,
    REPRODUCED,
    SUPERIORITY,
    t_cdf,
)

__all__ = [
    "SHARE_ALPHA",
    "COMPARISON_ALPHA",
    "binomial_upper_tail",
    "binomial_lower_tail",
    "share_interval",
    "ShareVerdict",
    "share_verdict",
    "distinct_by_chance",
    "lattice_points_by_chance",
    "one_sided_p",
    "holm",
]

#: A share of seeds: one-sided level of each binomial test (95 % confidence, one-sided).
SHARE_ALPHA = 0.05
#: A comparison: one-sided level that matches the two-sided 95 % interval of the one rule.
COMPARISON_ALPHA = 0.025


def binomial_upper_tail(k: int, n: int, p: float) -> float:
    """P(X ≥ k) for X ~ Binomial(n, p)."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


def binomial_lower_tail(k: int, n: int, p: float) -> float:
    """P(X ≤ k) for X ~ Binomial(n, p)."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(0, k + 1))


def _solve(f, target: float) -> float:
    """The p in [0, 1] where the increasing function ``f`` reaches ``target`` (bisection)."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < target else (lo, mid)
    return (lo + hi) / 2


def share_interval(k: int, n: int, level: float = 0.95) -> Tuple[float, float]:
    """The exact (Clopper–Pearson) two-sided ``level`` interval of a share of ``k`` in ``n``."""
    if not 0 <= k <= n or n < 1:
        raise ValueError(f"a share needs 0 <= k <= n and n >= 1, got {k} of {n}")
    a = (1 - level) / 2
    lo = 0.0 if k == 0 else _solve(lambda p: binomial_upper_tail(k, n, p), a)
    hi = 1.0 if k == n else _solve(lambda p: 1 - binomial_lower_tail(k, n, p), 1 - a)
    return lo, hi


@dataclass(frozen=True)
class ShareVerdict:
    """The verdict on "most seeds show it": ``shown`` of ``seeds`` fresh seeds show the
    property; ``chance`` the share a null model gives; ``bar`` = max(½, chance) the share to
    beat; ``p_above`` the one-sided p of "share ≤ bar", ``p_below`` of "share ≥ ½"; ``interval``
    the 95 % Clopper–Pearson interval of the share."""

    shown: int
    seeds: int
    chance: float
    bar: float
    p_above: float
    p_below: float
    interval: Tuple[float, float]
    verdict: str


def share_verdict(shown: int, seeds: int, chance: float = 0.0) -> ShareVerdict:
    """*Reproduced* when the share of seeds that show the property is above one half, and above
    the share chance gives, with 95 % confidence (one-sided exact binomial test against
    max(½, ``chance``)); *not reproduced* when it is below one half with 95 % confidence;
    *inconclusive* otherwise. With 5 seeds only 5 of 5 reproduce and 0 of 5 refute; with 8,
    7 or 8 reproduce and 0 or 1 refute (against a chance below ½)."""
    if not 0.0 <= chance <= 1.0:
        raise ValueError(f"chance must be a probability, got {chance}")
    bar = max(0.5, chance)
    p_above = binomial_upper_tail(shown, seeds, bar)
    p_below = binomial_lower_tail(shown, seeds, 0.5)
    if p_above < SHARE_ALPHA:
        verdict = REPRODUCED
    elif p_below < SHARE_ALPHA:
        verdict = NOT_REPRODUCED
    else:
        verdict = INCONCLUSIVE
    interval = share_interval(shown, seeds)
    return ShareVerdict(shown, seeds, chance, bar, p_above, p_below, interval, verdict)


def distinct_by_chance(heads: int, keys: int) -> float:
    """The probability that ``heads`` heads, each on one of ``keys`` keys drawn uniformly and
    independently, sit on distinct keys."""
    if heads > keys:
        return 0.0
    return math.prod((keys - i) / keys for i in range(heads))


def lattice_points_by_chance(
    heads: int, keys: int, at_least: int = 5, lattice: int = 9
) -> float:
    """The probability that ``heads`` heads, each on one of ``keys`` keys drawn uniformly and
    independently (the ``lattice`` points among them), cover at least ``at_least`` of the
    lattice points: P(exactly j covered) = C(L, j) Σᵢ (−1)ⁱ C(j, i) ((K − L + j − i)/K)^m
    (inclusion–exclusion)."""
    if keys < lattice:
        raise ValueError(f"the {lattice} lattice points must be among the {keys} keys")
    total = 0.0
    for j in range(at_least, lattice + 1):
        exact = sum(
            (-1) ** i * math.comb(j, i) * ((keys - lattice + j - i) / keys) ** heads
            for i in range(j + 1)
        )
        total += math.comb(lattice, j) * exact
    return min(1.0, max(0.0, total))


def one_sided_p(kind: str, estimate: float, se: float, df: float, margin=None) -> float:
    """The one-sided p-value of the claim's null for a difference with ``estimate``, standard
    error ``se`` and ``df`` degrees of freedom: superiority "≤ margin (0)", non-inferiority
    "≤ −margin", equivalence the larger of the two one-sided tests of ±margin (TOST)."""
    if se <= 0:
        raise ValueError("a p-value needs a positive standard error")
    if kind == SUPERIORITY:
        return 1 - t_cdf((estimate - (margin or 0.0)) / se, df)
    if kind == NON_INFERIORITY:
        return 1 - t_cdf((estimate + margin) / se, df)
    if kind == EQUIVALENCE:
        return max(
            1 - t_cdf((estimate + margin) / se, df), t_cdf((estimate - margin) / se, df)
        )
    raise ValueError(f"no p-value for a claim of kind {kind!r}")


def holm(
    p: Mapping[str, float], alpha: Optional[Mapping[str, float]] = None
) -> Dict[str, float]:
    """Holm's step-down adjusted p-values over a family ``p`` (name → p). Tests of different
    levels (``alpha``: name → its level, default :data:`SHARE_ALPHA`) are put on one scale first,
    p × 0.05 / level, so that an adjusted value below 0.05 is a rejection at the family's level."""
    alpha = alpha or {}
    scaled = {
        k: min(1.0, v * SHARE_ALPHA / alpha.get(k, SHARE_ALPHA)) for k, v in p.items()
    }
    order = sorted(scaled, key=lambda k: (scaled[k], k))
    m, running, out = len(order), 0.0, {}
    for i, k in enumerate(order):
        running = max(running, min(1.0, (m - i) * scaled[k]))
        out[k] = running
    return out
