"""Tests of the kernel-free Plotly figures of chapters 6 and 7b (attnconv.chapters.interactive,
attnconv.chapters.explore_trained_heads, attnconv.chapters.shared.plotly_style).

Each figure is checked against the functions it is drawn from (head_state_probabilities,
head_state_kernel, center_trajectories, gaussian_head_maps), on the saved quadratic run of the
book and on a synthetic history, plus the sizes the book needs (width, fonts, one legend,
labels numbered from 1).
"""

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from attnconv import off_target_mass_bound
from attnconv.chapters.explore_trained_heads import (
    query_heads_figure,
    trajectory_figure,
)
from attnconv.chapters.interactive import (
    EXPLORER_ALPHAS,
    EXPLORER_DELTAS,
    explorer_figure,
    explorer_frame_name,
    linked_sliders_script,
    one_tap_error,
)
from attnconv.chapters.shared.gaussian_maps import gaussian_head_maps
from attnconv.chapters.shared.head_state import (
    HeadState,
    head_state_kernel,
    head_state_probabilities,
)
from attnconv.chapters.shared.plotly_style import figure_html
from attnconv.chapters.shared.trained_heads import center_trajectories, layer_records

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
def explorer():
    return explorer_figure()


@pytest.fixture(scope="module")
def trajectories(history):
    return trajectory_figure(history)


@pytest.fixture(scope="module")
def image():
    g = torch.Generator().manual_seed(0)
    return torch.randint(0, 256, (3, 32, 32), dtype=torch.uint8, generator=g)


@pytest.fixture(scope="module")
def query_fig(history, image):
    return query_heads_figure(history, image)


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


def test_explorer_has_one_frame_per_slider_combination(explorer):
    n = len(EXPLORER_DELTAS) ** 2 * len(EXPLORER_ALPHAS)
    assert len(explorer.frames) == n
    names = {f.name for f in explorer.frames}
    assert len(names) == n
    for i in range(len(EXPLORER_DELTAS)):
        for j in range(len(EXPLORER_DELTAS)):
            for k in range(len(EXPLORER_ALPHAS)):
                assert explorer_frame_name(i, j, k) in names
    assert [s.name for s in explorer.layout.sliders] == ["delta1", "delta2", "alpha"]
    for s, values in zip(
        explorer.layout.sliders, (EXPLORER_DELTAS, EXPLORER_DELTAS, EXPLORER_ALPHAS)
    ):
        assert [st.value for st in s.steps] == [str(i) for i in range(len(values))]
        assert [float(st.label.replace("−", "-")) for st in s.steps] == list(values)


@pytest.mark.parametrize("key", [(6, 2, 4), (0, 8, 0), (5, 4, 2), (4, 4, 5)])
def test_explorer_frames_show_the_head_state(explorer, key):
    i, j, k = key
    s = HeadState(
        delta=(EXPLORER_DELTAS[i], EXPLORER_DELTAS[j]),
        alpha=EXPLORER_ALPHAS[k],
        query=(4, 4),
        grid=(9, 9),
        kernel_size=3,
    )
    frame = next(f for f in explorer.frames if f.name == explorer_frame_name(i, j, k))
    p, kern = head_state_probabilities(s), head_state_kernel(s)
    np.testing.assert_allclose(np.array(frame.data[0].z), p.numpy(), atol=5e-5)
    np.testing.assert_allclose(np.array(frame.data[1].z), kern.numpy(), atol=5e-5)
    assert frame.data[2].x[0] == 4 + s.delta[1] and frame.data[2].y[0] == 4 + s.delta[0]
    err = one_tap_error(s)
    text = frame.layout.title.text.replace("−", "-")
    shown = float(text.rsplit(" ", 1)[1])
    assert shown == pytest.approx(err, rel=0.06, abs=1e-15)
    assert f"window mass {float(kern.sum()):.2f}" in frame.layout.title.text


def test_explorer_starts_at_the_initial_state(explorer):
    start = (
        EXPLORER_DELTAS.index(1.0),
        EXPLORER_DELTAS.index(-1.0),
        EXPLORER_ALPHAS.index(10.0),
    )
    assert [s.active for s in explorer.layout.sliders] == list(start)
    p = head_state_probabilities(HeadState(delta=(1.0, -1.0), alpha=10.0))
    np.testing.assert_allclose(np.array(explorer.data[0].z), p.numpy(), atol=5e-5)
    with pytest.raises(ValueError, match="not on the grid"):
        explorer_figure(initial=(0.3, 0.0, 10.0))


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


# ----------------------------------------------------------------- (c) one query token
def test_query_figure_has_one_frame_per_token(history, query_fig):
    assert len(query_fig.frames) == 64
    steps = query_fig.layout.sliders[0].steps
    assert [s.label for s in steps] == [
        f"({r}, {c})" for r in range(1, 9) for c in range(1, 9)
    ]
    assert steps[query_fig.layout.sliders[0].active].value == "4_4"


@pytest.mark.parametrize("query", [(0, 0), (4, 4), (7, 2), (3, 7)])
def test_query_frames_are_the_gaussian_head_maps(history, query_fig, query):
    frame = next(f for f in query_fig.frames if f.name == f"{query[0]}_{query[1]}")
    rec = layer_records(history, -1)
    heat = [d for d in frame.data if d.type == "heatmap"]
    assert len(heat) == 18
    for layer in range(2):
        maps = gaussian_head_maps(rec[layer], (8, 8), query)
        for h in range(9):
            z = np.array(heat[layer * 9 + h].z)
            np.testing.assert_allclose(z, maps[h].numpy(), atol=5e-4)
            assert abs(z.sum() - 1) < 64 * 5e-4
            assert float(maps[h].sum()) == pytest.approx(1.0, abs=1e-12)
    outline = frame.data[0]
    assert min(outline.x) == query[1] * 4 - 0.5 and min(outline.y) == query[0] * 4 - 0.5
    marks = [d for d in frame.data[1:] if d.type == "scatter"]
    assert all((m.y[0], m.x[0]) == (query[0] + 1, query[1] + 1) for m in marks)


def test_query_figure_image_and_labels(query_fig, image):
    np.testing.assert_array_equal(
        np.array(query_fig.data[0].z), image.permute(1, 2, 0).numpy()
    )
    titles = [a.text for a in query_fig.layout.annotations]
    assert (
        titles.count("head 1") == 2
        and titles.count("head 9") == 2
        and "head 0" not in titles
    )
    assert "<b>layer 1</b>" in titles and "<b>layer 2</b>" in titles


def test_query_figure_rejects_bad_inputs(history, image):
    with pytest.raises(ValueError, match=r"\(3, H, W\)"):
        query_heads_figure(history, image[0])
    with pytest.raises(ValueError, match="token grid"):
        query_heads_figure(history, image, grid=(5, 5))
    with pytest.raises(ValueError, match="outside"):
        query_heads_figure(history, image, initial=(8, 0))


def test_query_figure_on_a_synthetic_history():
    h = synthetic_history(n_epochs=2, n_heads=4, n_layers=1)
    img = torch.zeros(3, 16, 16, dtype=torch.uint8)
    fig = query_heads_figure(h, img, epoch=0)
    assert len(fig.frames) == 16
    frame = next(f for f in fig.frames if f.name == "1_2")
    heat = [d for d in frame.data if d.type == "heatmap"]
    maps = gaussian_head_maps(h["initial_attention"][0], (4, 4), (1, 2))
    for k in range(4):
        np.testing.assert_allclose(np.array(heat[k].z), maps[k].numpy(), atol=5e-4)


# ----------------------------------------------------------------- sizes and output
def test_figures_fit_the_column_with_readable_fonts(explorer, trajectories, query_fig):
    for fig in (explorer, trajectories, query_fig):
        assert fig.layout.width <= 780
        assert min(fonts(fig)) >= 12
        assert legends(fig) == ["legend"]
        leg = fig.layout.legend
        # the legend sits outside the plotting area (right of it or above it)
        assert leg.x >= 1 or leg.y >= 1


def test_figure_html_is_offline_and_deterministic(explorer):
    a = figure_html(explorer, "fixed-id", post_script=linked_sliders_script()).data
    b = figure_html(
        explorer_figure(), "fixed-id", post_script=linked_sliders_script()
    ).data
    assert a == b
    assert 'id="fixed-id"' in a and "plotly_sliderchange" in a
    assert "<script src" not in a and "cdn.plot.ly" not in a
