"""The registered follow-up's verdicts, as amended: the frozen rule applied to its measures,
checked against a plain t interval (the published t quantile) on made-up per-seed accuracies."""

import math
import statistics

import pytest

from attnconv.evidence import followup, judge
from attnconv.experiments.verdicts import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED

T_975_DF7 = (
    2.364624  # the t distribution's 97.5 % quantile at 7 degrees of freedom (tables)
)
UNPRUNED = [0.60, 0.61, 0.59, 0.62, 0.60, 0.58, 0.61, 0.60]
COST = [0.01, 0.02, 0.0, 0.01, 0.03, 0.01, 0.02, 0.01]
NOISE = [0.002, -0.001, 0.003, 0.0, 0.001, 0.002, -0.002, 0.001]


def _rows(cost=COST, k=3, above=0.0):
    """Eight seeds: pruning costs ``cost``, the retrained pruned model ends ``above`` its control
    (plus noise), the control 3 points above the unpruned model."""
    rows = []
    for u, c, e in zip(UNPRUNED, cost, NOISE):
        control = u + 0.03
        rows.append(
            {
                "unpruned": u, "k": k, "pruned": u - c if k else u,
                "retrained": control + above - e if k else control, "control": control,
                "pruned15": u - 0.1 - c, "retrained15": control - 0.05 + e,
                "mcnemar": 0.5, "mcnemar15": 0.01,
            }
        )  # fmt: skip
    return rows


@pytest.fixture
def seeds(monkeypatch):
    state = {"rows": _rows()}
    monkeypatch.setattr(judge, "_followup_runs", lambda arm: list(range(8)))
    monkeypatch.setattr(judge, "_study_row", lambda run: state["rows"][run])
    monkeypatch.setattr(
        judge, "_accuracy_claim",
        lambda claim, a, b: judge.ConfirmatoryVerdict(claim.key, REPRODUCED, "stub"),
    )  # fmt: skip
    return state


def _plain_interval(a, b):
    d = [x - y for x, y in zip(a, b)]
    m = statistics.mean(d)
    h = T_975_DF7 * statistics.stdev(d) / math.sqrt(len(d))
    return m - h, m + h


def test_recovery_is_judged_against_the_control(seeds):
    rows = seeds["rows"]
    lo, hi = _plain_interval(
        [r["retrained"] for r in rows], [r["control"] for r in rows]
    )
    margin = followup.all_claims()["pruning_recovers_controlled"].margin
    assert -margin < lo  # the oracle's interval clears the non-inferiority margin
    v = judge.followup_verdicts()["pruning_recovers_controlled"]
    assert v.verdict == REPRODUCED and v.seeds == followup.SEEDS
    assert "McNemar" in v.detail
    # the frozen measure, against the unpruned model before retraining, sees a 3-point gain:
    # outside the equivalence margin it would be; as non-inferiority it is reproduced too
    before = v.alternatives["against the unpruned model before retraining"]
    assert before == REPRODUCED


def test_over_recovery_is_recovery(seeds):
    """Amendment: a pruned model ending 1.7 points above its control recovers (non-inferiority),
    which equivalence would not call reproduced."""
    seeds["rows"] = _rows(above=0.017)
    v = judge.followup_verdicts()["pruning_recovers_controlled"]
    assert v.verdict == REPRODUCED
    assert v.alternatives["typed as equivalence"] == NOT_REPRODUCED and v.fragile


def test_nothing_lost_means_nothing_to_recover(seeds):
    """Amendment: no head marked in any seed gives exact zeros; recovery is then not judged."""
    seeds["rows"] = _rows(k=0)
    got = judge.followup_verdicts()
    assert got["pruning_recovers_controlled"].verdict == INCONCLUSIVE
    assert "nothing measurable" in got["pruning_recovers_controlled"].detail
    assert (
        got["pruning_hurts_fresh"].verdict == INCONCLUSIVE
    )  # zero spread: not testable
    assert "not testable" in got["pruning_hurts_fresh"].detail


def test_recovery_at_the_papers_count(seeds):
    rows = seeds["rows"]
    lo, hi = _plain_interval(
        [r["retrained15"] for r in rows], [r["control"] for r in rows]
    )
    assert hi < -followup.all_claims()["pruning_recovers_15"].margin
    v = judge.followup_verdicts()["pruning_recovers_15"]
    assert v.verdict == NOT_REPRODUCED and "0.01" in v.detail


def test_pruning_hurts_reads_unpruned_minus_pruned(seeds):
    rows = seeds["rows"]
    lo, _ = _plain_interval([r["unpruned"] for r in rows], [r["pruned"] for r in rows])
    v = judge.followup_verdicts()["pruning_hurts_fresh"]
    assert lo > 0 and v.verdict == REPRODUCED


def test_a_missing_arm_leaves_every_claim_pending(monkeypatch):
    monkeypatch.setattr(judge, "_followup_runs", lambda arm: None)
    got = judge.followup_verdicts()
    assert set(got) == set(followup.all_claims())
    assert {v.verdict for v in got.values()} == {judge.PENDING}


def test_study_row_reads_a_real_study(tmp_path, monkeypatch):
    """`_study_row` on a study made by the real pruning study (a tiny model, with the control and
    a count standing in for the paper's 15): every number is the study's own."""
    import json
    from types import SimpleNamespace

    import torch

    from attnconv.experiments import studies_pruning as sp
    from attnconv.experiments.data import load_cifar10_sample
    from attnconv.experiments.models import build_model
    from attnconv.experiments.store import PRUNING_FILE
    from attnconv.experiments.train_config import TrainConfig

    tiny = dict(
        hidden_size=8, intermediate_size=12, num_layers=2, num_heads=4, downsample=8
    )
    cfg = TrainConfig(
        model="generalized", model_overrides=tiny, epochs=3, batch_size=50,
        eval_batch_size=100, data="sample", train_subset=200, test_subset=100,
    )  # fmt: skip
    torch.manual_seed(0)
    model = build_model("generalized", **tiny).eval()
    monkeypatch.setattr(followup, "PAPER_PRUNED", 3)
    study = sp.pruning_study(
        model, cfg, load_cifar10_sample(), retrain_counts=[3], epochs=1,
        random_orders=0, work_dir=tmp_path / "pruned", control=True,
    )  # fmt: skip
    study.pop("pruned_history")
    (tmp_path / PRUNING_FILE).write_text(json.dumps(study))
    curve = study["curve"]["degenerate_first"]
    run = SimpleNamespace(run_dir=tmp_path, config=cfg, epochs=[{"test_acc": curve[0]}])
    row = judge._study_row(run)
    k = sum(len(v) for v in study["selected_paper_thresholds"].values())
    after = {r["k"]: r["test_acc"][-1] for r in study["retrained"]}
    assert row["control"] == after[0] and row["retrained15"] == after[3]
    assert row["pruned15"] == curve[3] and row["unpruned"] == curve[0]
    assert row["k"] == k and row["retrained"] == after[k] and row["pruned"] == curve[k]
    assert 0 < row["mcnemar15"] <= 1
