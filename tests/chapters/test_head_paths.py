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


def test_one_note_states_the_bound_and_7b_links_it():
    """Figures 7.3 and 7b.1 draw the re-run's paths; ch. 7's note says how close it ends to
    the saved run (the captions say what is drawn, the note how it was made), and ch. 7b says
    it in one clause that links that note."""
    said = f"within {PATHS_END_GAP:g} token"
    pages = {}
    for page in ("07_quadratic_training.ipynb", "07b_explore_trained_heads.ipynb"):
        cells = json.loads((BOOK / page).read_text())["cells"]
        pages[page] = [
            "".join(c["source"]) for c in cells if c["cell_type"] == "markdown"
        ]
    notes = [
        s
        for s in pages["07_quadratic_training.ipynb"]
        if "Where the paths come from" in s
    ]
    assert len(notes) == 1 and said in notes[0] and "(sec-paths-rerun)=" in notes[0]
    explore = pages["07b_explore_trained_heads.ipynb"]
    assert not any("Where the paths come from" in s for s in explore)
    assert any("<sec-paths-rerun>" in s for s in explore)
