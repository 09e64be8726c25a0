"""Tests of the kernel-free Plotly figures of chapters 6 and 7b (attnconv.chapters.interactive,
attnconv.chapters.explore_trained_heads, attnconv.chapters.shared.plotly_style).

Each figure is checked against the functions it is drawn from (head_state_probabilities,
head_state_kernel, center_trajectories), on the saved quadratic run of the
book and on a synthetic history, plus the sizes the book needs (width, fonts, one legend,
labels numbered from 1).
"""

import json
from pathlib import Path

import numpy as np
import pytest

from attnconv import off_target_mass_bound
from attnconv.chapters.explore_trained_heads import (
    trajectory_figure,
)
from attnconv.chapters.interactive import one_tap_error
from attnconv.chapters.shared.head_state import (
    HeadState,
    head_state_probabilities,
)
from attnconv.chapters.shared.plotly_style import FIGURE_WIDTH, figure_html, small_text
from attnconv.chapters.shared.trained_heads import center_trajectories

HISTORY = (
    Path(__file__).resolve().parents[2]
    / "book"
    / "runs"
    / "cpu"
    / "quadratic"
    / "history.json"
)


@pytest.fixture(scope="module")
def history():
    return json.loads(HISTORY.read_text())


@pytest.fixture(scope="module")
def trajectories(history):
    return trajectory_figure(history)


def synthetic_history(n_epochs=3, n_heads=2, n_layers=2, seed=0):
    """A small history with Gaussian heads (centres, spreads, Σ⁻¹ = s²·I) in every layer."""
    rng = np.random.default_rng(seed)

    def record():
        c = rng.normal(0, 2, (n_heads, 2))
        s = rng.uniform(0.3, 2.0, n_heads)
        return {
            "centers": c.tolist(),
            "spreads": s.tolist(),
            "inverse_covariance": [[[v * v, 0.0], [0.0, v * v]] for v in s],
        }

    return {
        "model_config": {"image_size": 16, "downsample": 4},
        "initial_attention": [record() for _ in range(n_layers)],
        "epochs": [
            {"epoch": e + 1, "attention": [record() for _ in range(n_layers)]}
            for e in range(n_epochs)
        ],
    }


def fonts(fig):
    """Every font size set in the layout (global, title, legend, annotations, sliders, menus)."""
    lay = fig.layout
    out = [lay.font.size]
    out += [a.font.size for a in lay.annotations if a.font.size is not None]
    if lay.title.font.size is not None:
        out.append(lay.title.font.size)
    for s in lay.sliders:
        out += [f for f in (s.font.size, s.currentvalue.font.size) if f is not None]
    for m in lay.updatemenus:
        if m.font.size is not None:
            out.append(m.font.size)
    return out


def legends(fig):
    return [k for k in fig.layout.to_plotly_json() if k.startswith("legend")]


# ----------------------------------------------------------------- (a) the explorer
def test_one_tap_error_vanishes_for_the_heads_of_theorem_1():
    # the K² heads of Theorem 1: Δ on the 3×3 lattice, a large α -> one-hot, error ~ 4·exp(−α)
    for alpha in (30.0, 10.0):
        bound = 2 * off_target_mass_bound(alpha) / (1 + off_target_mass_bound(alpha))
        for d1 in (-1, 0, 1):
            for d2 in (-1, 0, 1):
                err = one_tap_error(HeadState(delta=(d1, d2), alpha=alpha))
                assert err <= bound + 1e-12
                if alpha == 30.0:
                    assert err < 1e-10


def test_one_tap_error_is_the_l1_distance_to_the_tap():
    s = HeadState(delta=(0.4, -1.3), alpha=0.7)
    p = head_state_probabilities(s)
    q0, q1 = s.query
    expected = float(
        p.sum() - p[q0, q1 - 1] + (1 - p[q0, q1 - 1])
    )  # nearest tap (0, −1)
    assert one_tap_error(s) == pytest.approx(expected, abs=1e-12)
    # a half-integer head splits its mass: far from any one-tap convolution
    assert one_tap_error(HeadState(delta=(0.5, 0.0), alpha=30.0)) == pytest.approx(
        1.0, abs=1e-6
    )
    # target off the grid: a zero-padded convolution reads 0 there, the head does not
    corner = HeadState(delta=(-1.0, -1.0), alpha=10.0, query=(0, 0))
    assert one_tap_error(corner) == pytest.approx(1.0, abs=1e-12)


# ----------------------------------------------------------------- (b) trajectories
def test_trajectory_frames_are_the_epochs(history, trajectories):
    epochs = len(history["epochs"])
    assert len(trajectories.frames) == epochs + 1
    assert [f.name for f in trajectories.frames] == [str(e) for e in range(epochs + 1)]
    steps = trajectories.layout.sliders[0].steps
    assert len(steps) == epochs + 1 and [s.args[0][0] for s in steps] == [
        f.name for f in trajectories.frames
    ]
    assert trajectories.layout.updatemenus[0].buttons[0].method == "animate"


@pytest.mark.parametrize("hist", ["saved", "synthetic"])
def test_each_trajectory_frame_holds_the_centres_of_its_epoch(
    history, trajectories, hist
):
    h = (
        history
        if hist == "saved"
        else synthetic_history(n_epochs=4, n_heads=3, n_layers=3)
    )
    fig = trajectories if hist == "saved" else trajectory_figure(h)
    n_layers = len(h["initial_attention"])
    traj = [center_trajectories(h, i) for i in range(n_layers)]
    for e, frame in enumerate(fig.frames):
        # per layer and head: the path so far (lines), then the current centre (marker)
        markers = frame.data[1::2]
        paths = frame.data[0::2]
        assert len(markers) == sum(t.shape[1] for t in traj)
        m = 0
        for t in traj:
            for head in range(t.shape[1]):
                np.testing.assert_allclose(
                    [markers[m].y[0], markers[m].x[0]], t[e, head], atol=5e-4
                )
                np.testing.assert_allclose(
                    np.stack([paths[m].y, paths[m].x], -1), t[: e + 1, head], atol=5e-4
                )
                m += 1


def test_trajectory_labels_are_one_based(history, trajectories):
    titles = [a.text for a in trajectories.layout.annotations]
    assert titles == ["layer 1", "layer 2"]
    names = [
        t.name
        for t in trajectories.data
        if t.showlegend is not False and t.name and t.name.startswith("head")
    ]
    assert names == [f"head {h}" for h in range(1, 10)]


def test_trajectory_legend_is_rows_above_the_panels(trajectories):
    """Every legend entry shows without scrolling: rows of at most six across the top of the
    figure, one row of the top margin per six entries (the heads, the query, the lattice)."""
    leg = trajectories.layout.legend
    assert leg.orientation == "h" and leg.yref == "container" and leg.y == 1
    entries = [t for t in trajectories.data if t.showlegend is not False and t.name]
    assert len(entries) == 11  # 9 heads, the query, the lattice
    shown = sorted(
        entries, key=lambda t: 1000 if t.legendrank is None else t.legendrank
    )
    assert [t.name for t in shown][-2:] == ["query", "3×3 lattice"]  # after the heads
    wide = trajectory_figure(synthetic_history(n_heads=16))
    assert (
        wide.layout.margin.t - trajectories.layout.margin.t == 25
    )  # 18 entries: 3 rows


# ----------------------------------------------------------------- sizes and output
def test_figures_fit_the_column_with_readable_fonts(trajectories):
    for fig in (trajectories,):
        # no fixed width: the figure takes the column's width, up to FIGURE_WIDTH (figure_html)
        assert fig.layout.width is None and fig.layout.autosize
        assert min(fonts(fig)) >= 12
        assert legends(fig) == ["legend"]
        leg = fig.layout.legend
        # the legend sits outside the plotting area (right of it or above it)
        assert leg.x >= 1 or leg.y >= 1


def test_figure_html_is_offline_and_deterministic(history, trajectories):
    a = figure_html(trajectories, "fixed-id").data
    b = figure_html(trajectory_figure(history), "fixed-id").data
    assert a == b
    assert 'id="fixed-id"' in a
    assert "<script src" not in a and "cdn.plot.ly" not in a
    # the column's width, capped, and following the window
    assert a.startswith(f'<div class="book-plotly" style="max-width:{FIGURE_WIDTH}px">')
    assert '"responsive": true' in a and "width:100%" in a


def test_interactive_figures_text_at_least_12_px(trajectories):
    """Chapter 7b's animation: no tick, legend, slider or annotation text below 12 px."""
    for fig in (trajectories,):
        assert small_text(fig) == []
