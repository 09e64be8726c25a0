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
