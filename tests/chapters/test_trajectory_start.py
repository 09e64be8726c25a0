"""The animated trajectories of chapter 7b open at the trained heads (the last epoch)."""

import numpy as np
import pytest

pytest.importorskip("plotly")

from attnconv.chapters.explore_trained_heads import trajectory_figure
from attnconv.chapters.shared.saved_runs import book_run  # noqa: E402
from attnconv.chapters.shared.trained_heads import center_trajectories  # noqa: E402


@pytest.fixture(scope="module")
def history():
    return book_run("quadratic", profile="cpu").history


def _shown_centres(fig):
    heads = [t for t in fig.data if t.mode == "markers" and t.name.startswith("head")]
    return np.array([[t.y[0], t.x[0]] for t in heads])


def _saved(history, epoch):
    n_layers = len(history["initial_attention"])
    return np.concatenate(
        [center_trajectories(history, i)[epoch] for i in range(n_layers)]
    )


def test_opens_at_the_last_epoch_and_plays_from_the_start(history):
    fig = trajectory_figure(history)
    last = len(fig.frames) - 1
    assert fig.layout.sliders[0].active == last
    np.testing.assert_allclose(_shown_centres(fig), _saved(history, -1), atol=5e-4)
    play = fig.layout.updatemenus[0].buttons[0]
    assert play.label.endswith("play") and play.args[1]["fromcurrent"] is False


def test_start_at_the_initialisation(history):
    fig = trajectory_figure(history, start=0)
    assert fig.layout.sliders[0].active == 0
    np.testing.assert_allclose(_shown_centres(fig), _saved(history, 0), atol=5e-4)
