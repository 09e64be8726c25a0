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
    query_shift_ranges,
    trajectory_figure,
)
from attnconv.chapters.interactive import one_tap_error
from attnconv.chapters.shared.gaussian_maps import gaussian_head_maps
from attnconv.chapters.shared.head_state import (
    HeadState,
    head_state_probabilities,
)
from attnconv.chapters.shared.plotly_style import FIGURE_WIDTH, figure_html, small_text
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


def test_query_colour_bar_names_the_attention_probability(query_fig):
    bar = query_fig.layout.coloraxis.colorbar
    assert bar.title.text == "attention probability"


# ----------------------------------------------------------------- (c) one query token
def test_query_figure_has_one_frame_per_token(history, query_fig):
    assert len(query_fig.frames) == 64
    steps = query_fig.layout.sliders[0].steps
    assert [s.label for s in steps] == [
        f"row {r}, column {c}" for r in range(1, 9) for c in range(1, 9)
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


def _token_centres(trace: dict, n: int, axis: str) -> np.ndarray:
    """Where a trace draws the centres of its n tokens along an axis: a heatmap's cells (x0 + k),
    or an image's tokens (the mean of each token's pixel centres, x0 + j·dx)."""
    x0, d = trace.get(axis + "0", 0), trace.get("d" + axis, 1)
    if trace["type"] == "heatmap":
        return x0 + np.arange(n) * d
    per = int(round(1 / d))
    return (x0 + np.arange(n * per) * d).reshape(n, per).mean(axis=1)


@pytest.mark.parametrize("query", [(0, 0), (4, 4), (7, 2), (3, 7)])
def test_query_frames_are_in_token_shifts_from_the_query(query_fig, query):
    """One coordinate system: every panel of a frame draws token (r, c) at (r − q_r, c − q_c), so
    the query sits at (0, 0) on the image and on every map, and its ranges show the whole grid."""
    frame = next(f for f in query_fig.frames if f.name == f"{query[0]}_{query[1]}")
    want_x = np.arange(8) - query[1]
    want_y = np.arange(8) - query[0]
    moved = [query_fig.data[i] for i in frame.traces]
    assert [t.type for t in moved] == ["image"] + ["heatmap"] * 18
    for full, change in zip(moved, frame.data):
        t = {
            **full.to_plotly_json(),
            **change.to_plotly_json(),
        }  # a frame holds the changes
        np.testing.assert_allclose(_token_centres(t, 8, "x"), want_x, atol=1e-9)
        np.testing.assert_allclose(_token_centres(t, 8, "y"), want_y, atol=1e-9)
    lay = frame.layout.to_plotly_json()
    axes = [k for k in lay if k.startswith(("xaxis", "yaxis"))]
    assert len(axes) == 2 * 19  # the image and 18 maps
    for k in axes:
        lo, hi = sorted(lay[k]["range"])
        want = want_x if k.startswith("x") else want_y
        assert lo == want.min() - 0.5 and hi == want.max() + 0.5
    assert [list(r) for r in query_shift_ranges(query, (8, 8))] == [
        [-query[1] - 0.5, 7.5 - query[1]],
        [7.5 - query[0], -query[0] - 0.5],
    ]
    # the query's outline on the image and its marker on every map stay at (0, 0)
    outline = query_fig.data[1]
    assert (min(outline.x), max(outline.x), min(outline.y), max(outline.y)) == (
        -0.5,
        0.5,
        -0.5,
        0.5,
    )
    marks = [d for d in query_fig.data[2:] if d.type == "scatter"]
    assert len(marks) == 18 and all((m.x[0], m.y[0]) == (0, 0) for m in marks)
    hovers = [t.hovertemplate or "" for t in query_fig.data]
    assert not any("pixel" in h for h in hovers)
    assert all("shift" in h for h in hovers if h)


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
    assert len(query_fig.layout.sliders) == 1  # one image: no image slider


def test_query_figure_offers_several_images(history):
    g = torch.Generator().manual_seed(1)
    imgs = torch.randint(0, 256, (3, 3, 32, 32), dtype=torch.uint8, generator=g)
    labels = ["a", "b", "c"]
    fig = query_heads_figure(history, imgs, image_labels=labels)
    assert len(fig.layout.sliders) == 2 and fig.layout.meta["images"] == labels
    query_slider, image_slider = fig.layout.sliders
    assert query_slider.steps[0].method == "animate"  # the click script moves slider 0
    assert [s.label for s in image_slider.steps] == labels
    for k, step in enumerate(image_slider.steps):
        assert step.method == "restyle" and list(step.args[1]) == [0]
        np.testing.assert_array_equal(
            np.array(step.args[0]["z"][0]), imgs[k].permute(1, 2, 0).numpy()
        )
    np.testing.assert_array_equal(
        np.array(fig.data[0].z), imgs[0].permute(1, 2, 0).numpy()
    )
    # frames move the image's origin only, so the image picked stays when the query moves
    for f in fig.frames:
        assert f.data[0].type == "image" and f.data[0].z is None
    # the maps are the same whatever the image (positions only: no content term)
    one = query_heads_figure(history, imgs[2])
    for a, b in zip(fig.frames, one.frames):
        assert [d.z for d in a.data[1:]] == [d.z for d in b.data[1:]]
    as_list = query_heads_figure(history, list(imgs), image_labels=labels)
    assert as_list.layout.sliders[1].steps[2].args == image_slider.steps[2].args


def test_query_figure_rejects_bad_inputs(history, image):
    with pytest.raises(ValueError, match=r"\(3, H, W\)"):
        query_heads_figure(history, image[0])
    with pytest.raises(ValueError, match="token grid"):
        query_heads_figure(history, image, grid=(5, 5))
    with pytest.raises(ValueError, match="outside"):
        query_heads_figure(history, image, initial=(8, 0))
    with pytest.raises(ValueError, match="image labels"):
        query_heads_figure(history, torch.stack([image, image]), image_labels=["a"])
    with pytest.raises(ValueError, match="one size"):
        query_heads_figure(history, [image, image[:, :16, :16]])


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
def test_figures_fit_the_column_with_readable_fonts(trajectories, query_fig):
    for fig in (trajectories, query_fig):
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


def test_interactive_figures_text_at_least_12_px(trajectories, query_fig):
    """Chapter 7b's figures: no tick, legend, slider or annotation text below 12 px."""
    for fig in (trajectories, query_fig):
        assert small_text(fig) == []
