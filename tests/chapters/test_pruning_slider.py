"""attnconv.chapters.pruning_slider: the heads kept at each slider step, against a plain recount
from the saved heads, and Figure 8.3's widget carrying the rows it applies the rule to."""

import json
import math
import re
from html import unescape
from pathlib import Path

import numpy as np
import pytest

from attnconv.chapters import generalized_pruning as gp
from attnconv.chapters.live_figures import pruning_threshold_widget
from attnconv.chapters.pruning_slider import (
    SLIDER_EXPONENTS,
    threshold_frames,
)
from attnconv.experiments import studies_pruning as sp
from attnconv.experiments.checkpoints import load_run
from attnconv.experiments.paper_numbers import (
    PAPER_CONDITION_THRESHOLD,
    PAPER_MAX_EIGENVALUE_THRESHOLD,
)
from attnconv.experiments.pruning import degenerate_heads

DEEP_GENERALIZED = (
    Path(__file__).resolve().parents[2] / "book" / "runs" / "deep" / "generalized"
)


def recount(history, threshold):
    """Heads kept per layer, from the saved matrices M of the last epoch: Σ⁻¹ = M Mᵀ has
    eigenvalues s² for the singular values s of M (numpy's SVD, not the package's closed form)."""
    kept = []
    for record in history["epochs"][-1]["attention"]:
        m = np.asarray(record["inv_sqrt_sigma"], dtype=np.float64)
        s = np.linalg.svd(m, compute_uv=False)  # (heads, 2), descending
        lam_max, condition = s[:, 0] ** 2, (s[:, 0] / s[:, 1]) ** 2
        gone = (lam_max < PAPER_MAX_EIGENVALUE_THRESHOLD) | (condition > threshold)
        kept.append(int((~gone).sum()))
    return kept


@pytest.mark.skipif(
    not (DEEP_GENERALIZED / "history.json").is_file(),
    reason="no saved deep generalized run",
)
def test_heads_kept_at_every_step_match_a_recount_of_the_saved_run():
    run = load_run(DEEP_GENERALIZED)
    model = gp.attention_only_model(run.history)
    rows = sp.head_table(model)
    frames = threshold_frames(rows)
    assert [f.exponent for f in frames] == list(SLIDER_EXPONENTS)
    for f in frames:
        assert list(f.kept) == recount(run.history, f.threshold), f.exponent
    # the paper's threshold gives the paper's rule, as the package applies it
    paper = frames[SLIDER_EXPONENTS.index(5)]
    assert paper.threshold == PAPER_CONDITION_THRESHOLD
    assert paper.pruned == degenerate_heads(model)
    # a higher threshold never prunes more
    kept = [sum(f.kept) for f in frames]
    assert kept == sorted(kept) and kept[0] < kept[-1]
    # Figure 8.3 carries these rows into the page, infinite condition numbers as null
    html = pruning_threshold_widget(
        rows, "#000000", PAPER_MAX_EIGENVALUE_THRESHOLD, alt="x"
    ).data
    initial = json.loads(unescape(re.search(r"data-initial='([^']*)'", html)[1]))
    assert len(initial["rows"]) == len(rows) == 54
    for got, want in zip(initial["rows"], rows):
        cond = math.inf if got["condition"] is None else got["condition"]
        assert (got["layer"], got["head"], got["lambda_max"], cond) == (
            want["layer"],
            want["head"],
            float(want["lambda_max"]),
            float(want["condition"]),
        )


def test_threshold_frames_on_hand_made_heads():
    rows = [
        {"layer": 0, "head": 0, "lambda_max": 1.0, "condition": 50.0},
        {"layer": 0, "head": 1, "lambda_max": 1e-6, "condition": 1.0},  # uniform
        {"layer": 1, "head": 0, "lambda_max": 2.0, "condition": 1e3},  # not above 10³
        {"layer": 1, "head": 1, "lambda_max": 2.0, "condition": 1.5e6},
    ]
    frames = {f.exponent: f for f in threshold_frames(rows, exponents=(1, 2, 3, 6, 7))}
    assert frames[1].pruned == {0: [0, 1], 1: [0, 1]} and frames[1].kept == (0, 0)
    assert frames[2].pruned == {0: [1], 1: [0, 1]} and frames[2].kept == (1, 0)
    assert frames[3].pruned == {0: [1], 1: [1]} and frames[3].kept == (1, 1)
    assert frames[6].kept == (1, 1)
    assert frames[7].pruned == {0: [1]} and frames[7].kept == (1, 2)


def test_the_pruning_widget_refuses_what_it_cannot_draw():
    with pytest.raises(ValueError, match="no heads to draw"):
        pruning_threshold_widget([], "#000000", 1e-5)
    row = {"layer": 0, "head": 0, "lambda_max": 1.0, "condition": 2.0}
    with pytest.raises(ValueError, match="outside the slider's range"):
        pruning_threshold_widget([row], "#000000", 1e-5, exponent=20.0)
