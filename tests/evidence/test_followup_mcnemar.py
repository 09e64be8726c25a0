"""The follow-up's exact McNemar test on tensors of predictions (as the pruning studies save
them): its p against the binomial tail written out, for 1,017 images (2**n overflowed a tensor)."""

import math

import torch

from attnconv.evidence import judge
from attnconv.experiments import studies_pruning


def test_mcnemar_counts_discordant_images_from_tensors(monkeypatch):
    n = 1017
    labels = torch.zeros(n, dtype=torch.long)
    pruned = torch.zeros(n, dtype=torch.long)
    control = torch.zeros(n, dtype=torch.long)
    pruned[:80] = 1  # 80 images only the control gets right
    control[80:100] = 1  # 20 only the pruned model gets right
    preds = {15: pruned, 0: control}
    monkeypatch.setattr(
        studies_pruning, "study_predictions", lambda study, k, which: preds[k]
    )
    p = judge._mcnemar(None, 15, labels)
    b, c = 20, 80  # exact two-sided binomial test on the 100 discordant images
    tail = sum(math.comb(b + c, i) for i in range(min(b, c) + 1)) / 2.0 ** (b + c)
    assert isinstance(p, float) and math.isclose(p, min(1.0, 2 * tail), rel_tol=1e-12)


def test_pruning_hurts_mcnemar_counts_each_seeds_discordant_images():
    """The per-seed McNemar tests reported beside "pruning hurts" (frozen and follow-up): for each
    seed, in the seeds' order, the heads the rule pruned and the two-sided exact binomial p on
    the images only one of the two models (unpruned, pruned before retraining) gets right,
    counted here with a plain loop over the saved predictions."""
    from attnconv.evidence.followup import SEEDS
    from attnconv.evidence.protocol import CONFIRMATORY_SEEDS
    from attnconv.experiments.data import load_cifar10

    got = judge.pruning_hurts_mcnemar()
    runs = {
        "fresh": judge.arm_runs("generalized", CONFIRMATORY_SEEDS),
        "followup": judge._followup_runs("generalized"),
    }
    for key, seeds in (("fresh", CONFIRMATORY_SEEDS), ("followup", SEEDS)):
        rows = got[key]
        assert [s for s, _, _ in rows] == list(seeds)
        for (seed, per_layer, p), run in zip(rows, runs[key]):
            study = studies_pruning.load_pruning_study(run, verbose=False)
            chosen = study["selected_paper_thresholds"]
            assert len(per_layer) == 6
            for layer, n in enumerate(per_layer):
                assert n == len(chosen.get(str(layer), []))
            k = sum(per_layer)
            assert k == sum(len(v) for v in chosen.values())
            data = load_cifar10(run.config.data, verbose=False)
            labels = data.subset(run.config.train_subset, run.config.test_subset).y_test
            a = studies_pruning.study_predictions(study, 0)
            z = studies_pruning.study_predictions(study, k)
            b = c = 0
            for i in range(len(labels)):
                first, second = int(a[i]) == int(labels[i]), int(z[i]) == int(labels[i])
                b += first and not second
                c += second and not first
            tail = sum(math.comb(b + c, i) for i in range(min(b, c) + 1)) / 2.0 ** (
                b + c
            )
            assert math.isclose(p, min(1.0, 2 * tail), rel_tol=1e-9), (key, seed)


def test_followup_gates_are_the_judges_and_read_off_their_interval():
    """Each recovery claim's gate as reported: the verdict the judge's own gate gives, and an
    interval over seeds (unpruned minus pruned before retraining) whose lower end is above 0
    exactly when that verdict is "reproduced" (superiority, no margin)."""
    from attnconv.evidence.followup import GATES, all_claims
    from attnconv.experiments.verdicts import REPRODUCED

    runs = judge._followup_runs("generalized")
    rows = [judge._study_row(r) for r in runs]
    gates = judge.followup_gates()
    assert set(gates) == set(GATES)
    for key, (verdict, iv) in gates.items():
        assert verdict == judge._gate(all_claims()[key], rows)
        assert (iv.lo > 0) == (verdict == REPRODUCED)
        pruned = "pruned15" if GATES[key] == "k15" else "pruned"
        diffs = [r["unpruned"] - r[pruned] for r in rows]
        assert math.isclose(iv.estimate, sum(diffs) / len(diffs), rel_tol=1e-9)
