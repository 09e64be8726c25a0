"""The registered follow-up's verdicts: the frozen rule applied to its measures, checked against
a plain t interval (the published t quantile) on made-up per-seed accuracies."""

import math
import statistics

import pytest

from attnconv.evidence import followup, judge
from attnconv.experiments.verdicts import NOT_REPRODUCED, REPRODUCED

T_975_DF7 = (
    2.364624  # the t distribution's 97.5 % quantile at 7 degrees of freedom (tables)
)


@pytest.fixture
def eight_seeds(monkeypatch):
    """Eight seeds whose (unpruned, pruned, retrained, control) accuracies are given per seed."""
    unpruned = [0.60, 0.61, 0.59, 0.62, 0.60, 0.58, 0.61, 0.60]
    pruned = [
        u - d for u, d in zip(unpruned, (0.01, 0.02, 0.0, 0.01, 0.03, 0.01, 0.02, 0.01))
    ]
    retrained = [u + 0.03 for u in unpruned]  # 3 points above the unpruned model before
    control = [
        r - e
        for r, e in zip(
            retrained, (0.002, -0.001, 0.003, 0.0, 0.001, 0.002, -0.002, 0.001)
        )
    ]
    rows = dict(zip(range(8), zip(unpruned, pruned, retrained, control)))
    monkeypatch.setattr(judge, "_followup_runs", lambda arm: list(range(8)))
    monkeypatch.setattr(judge, "_pruning_pair", lambda run: rows[run][:3])
    monkeypatch.setattr(judge, "_control", lambda run: rows[run][3])
    monkeypatch.setattr(
        judge, "_accuracy_claim",
        lambda claim, a, b: judge.ConfirmatoryVerdict(claim.key, REPRODUCED, "stub"),
    )  # fmt: skip
    return unpruned, pruned, retrained, control


def _plain_interval(a, b):
    d = [x - y for x, y in zip(a, b)]
    m = statistics.mean(d)
    h = T_975_DF7 * statistics.stdev(d) / math.sqrt(len(d))
    return m - h, m + h


def test_recovery_is_judged_against_the_control(eight_seeds):
    unpruned, pruned, retrained, control = eight_seeds
    lo, hi = _plain_interval(retrained, control)
    margin = followup.CLAIMS["pruning_recovers_controlled"].margin
    assert -margin < lo and hi < margin  # the oracle's interval lies inside the margin
    v = judge.followup_verdicts()["pruning_recovers_controlled"]
    assert v.verdict == REPRODUCED and v.seeds == followup.SEEDS
    # the frozen measure (against the unpruned model before retraining) sees a 3-point gain:
    # outside the margin, so the verdict is fragile under that alternative
    lo_b, _ = _plain_interval(retrained, unpruned)
    assert lo_b > margin
    before = followup.CLAIMS["pruning_recovers_controlled"].alternatives[3]
    assert v.alternatives[before] == NOT_REPRODUCED and v.fragile


def test_pruning_hurts_reads_unpruned_minus_pruned(eight_seeds):
    unpruned, pruned, _, _ = eight_seeds
    lo, _ = _plain_interval(unpruned, pruned)
    v = judge.followup_verdicts()["pruning_hurts_fresh"]
    assert (lo > 0) == (v.verdict == REPRODUCED)
    assert lo > 0


def test_a_missing_arm_leaves_every_claim_pending(monkeypatch):
    monkeypatch.setattr(judge, "_followup_runs", lambda arm: None)
    got = judge.followup_verdicts()
    assert {v.verdict for v in got.values()} == {judge.PENDING}
