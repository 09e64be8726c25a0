"""Figures 7.3 and 7b.1 draw seed 1000's head paths from its re-run (:func:`head_paths`): every
epoch's heads, read as a history, ending within :data:`PATHS_END_GAP` of the counted run's heads;
both captions state that bound."""

import json
from pathlib import Path

import numpy as np

from attnconv.chapters.shared.trained_heads import (
    PATHS_END_GAP,
    center_trajectories,
    head_paths,
)
from attnconv.evidence.judge import arm_runs
from attnconv.evidence.protocol import CONFIRMATORY_SEEDS

BOOK = Path(__file__).resolve().parents[2] / "book"


def test_the_paths_are_every_epoch_of_seed_1000_ending_where_it_ended():
    paths = head_paths()
    saved = arm_runs("quadratic", CONFIRMATORY_SEEDS[:1])[0].history
    n_epochs = len(saved["epochs"])
    for layer in range(len(saved["initial_attention"])):
        drawn = center_trajectories(paths, layer)
        kept = center_trajectories(saved, layer)  # start and end only
        assert drawn.shape == (n_epochs + 1, *kept.shape[1:])
        np.testing.assert_array_equal(drawn[0], kept[0])
        gap = np.linalg.norm(drawn[-1] - kept[-1], axis=-1).max()
        assert gap < PATHS_END_GAP
    assert paths["agreement"]["largest_centre_gap"] < PATHS_END_GAP


def test_both_captions_state_the_bound():
    said = f"within {PATHS_END_GAP:g} token"
    ch7 = json.loads((BOOK / "07_quadratic_training.ipynb").read_text())["cells"]
    captions = [
        c["metadata"].get("mystnb", {}).get("figure", {}).get("caption", "")
        for c in ch7
    ]
    assert any(said in c for c in captions if c.startswith("**Figure 7.3"))
    ch7b = json.loads((BOOK / "07b_explore_trained_heads.ipynb").read_text())["cells"]
    assert any(
        said in "".join(c["source"])
        for c in ch7b
        if "**Figure 7b.1" in "".join(c["source"])
    )
