"""chapters.shared.holm_both: Holm's adjustment applied to rejections in both directions,
against a plain step-down loop and exact binomial sums written out."""

import math

from attnconv.chapters.shared.holm_both import against_p, holm_both_ways
from attnconv.evidence.judge import ConfirmatoryVerdict
from attnconv.evidence.protocol import CLAIMS
from attnconv.experiments.verdicts import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Interval,
)


def _share(key, verdict, shown, p):
    return ConfirmatoryVerdict(key, verdict, "", tuple(range(8)), p, 0.05, {}, shown)


def test_a_share_not_reproduced_has_the_lower_binomial_tail():
    for shown in range(0, 4):
        v = _share("grid_layer4", NOT_REPRODUCED, shown, 1.0)
        want = sum(math.comb(8, k) for k in range(shown + 1)) / 2**8
        assert abs(against_p(v, CLAIMS["grid_layer4"]) - want) < 1e-15


def test_holm_in_both_directions_against_a_plain_step_down_loop():
    """Eight seeds cannot pass Holm over 18 claims in either direction; a comparison whose
    interval lies far below its margin can."""
    verdicts = {k: _share(k, INCONCLUSIVE, 4, 0.64) for k in CLAIMS}
    verdicts["local_then_far"] = _share("local_then_far", REPRODUCED, 8, 2**-8)
    verdicts["grid_layer4"] = _share("grid_layer4", NOT_REPRODUCED, 0, 1.0)
    far = Interval(-0.10, -0.12, -0.08, 0.01, 30.0, 0.03, "paired", (8, 8))
    verdicts["close_to_resnet"] = ConfirmatoryVerdict(
        "close_to_resnet", NOT_REPRODUCED, "", tuple(range(8)), 1.0, 0.025, {},
        interval=far,
    )  # fmt: skip
    got = holm_both_ways(verdicts, CLAIMS)
    # the plain loop: p on the 5 % scale, sorted, the i-th against 0.05 / (m - i)
    p = {k: (2**-8 if k in ("local_then_far", "grid_layer4") else 0.64) for k in CLAIMS}
    p["close_to_resnet"] = 2 * against_p(
        verdicts["close_to_resnet"], CLAIMS["close_to_resnet"]
    )
    rejected, m = set(), len(p)
    for i, k in enumerate(sorted(p, key=p.get)):
        if p[k] >= 0.05 / (m - i):
            break
        rejected.add(k)
    assert rejected == {"close_to_resnet"}
    assert got["close_to_resnet"] == NOT_REPRODUCED
    assert got["grid_layer4"] == got["local_then_far"] == INCONCLUSIVE
    assert {k for k, w in got.items() if w != INCONCLUSIVE} == {"close_to_resnet"}
