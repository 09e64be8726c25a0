"""Figure 7.1 (:func:`plot_layer_heads`): one panel per layer, its heads overlaid. Each head's
drawn centre and 50 % ellipse, each layer's attention distance, the nearly uniform heads left out
and the rings on one key, all checked against the heads' attention maps computed with plain
loops over the keys (eq. 16)."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.patches import Ellipse  # noqa: E402

from attnconv.chapters.shared.plotting import (  # noqa: E402
    COLUMN_INCHES,
    figure_text_sizes,
)
from attnconv.chapters.shared.run_plots import plot_layer_heads  # noqa: E402

GRID = (16, 16)
QUERY = (8, 8)

#: Layer 1: a round head, a tilted one, a sharp one (on one key) and a nearly uniform one.
#: Layer 2: two heads further out, no uniform one. Centres (row, column) in tokens.
LAYERS = [
    {
        "centers": [[1.0, -2.0], [-2.0, 1.5], [0.0, 2.0], [0.0, 0.0]],
        "inverse_covariance": [
            [[1.0, 0.0], [0.0, 1.0]],
            [[1.0, 0.4], [0.4, 0.5]],
            [[8.0, 0.0], [0.0, 8.0]],
            [[1e-6, 0.0], [0.0, 1e-6]],
        ],
    },
    {
        "centers": [[3.0, 3.0], [-4.0, -1.0]],
        "inverse_covariance": [[[0.6, 0.0], [0.0, 0.6]], [[0.8, -0.2], [-0.2, 0.9]]],
    },
]


def history():
    return {
        "initial_attention": LAYERS,
        "epochs": [{"epoch": 1, "attention": LAYERS}],
    }


def loop_map(center, inverse):
    """A head's attention over the keys of GRID for QUERY: {(row shift, column shift): p}."""
    scores = {}
    for i in range(GRID[0]):
        for j in range(GRID[1]):
            d = (i - QUERY[0] - center[0], j - QUERY[1] - center[1])
            q = sum(d[a] * inverse[a][b] * d[b] for a in range(2) for b in range(2))
            scores[(i - QUERY[0], j - QUERY[1])] = -0.5 * q
    top = max(scores.values())
    weights = {k: math.exp(v - top) for k, v in scores.items()}
    total = sum(weights.values())
    return {k: v / total for k, v in weights.items()}


def loop_moments(p):
    """Mean (row, column) and 2×2 covariance of a map from :func:`loop_map`."""
    mean = [sum(v * k[a] for k, v in p.items()) for a in range(2)]
    cov = [
        [
            sum(v * (k[a] - mean[a]) * (k[b] - mean[b]) for k, v in p.items())
            for b in (0, 1)
        ]
        for a in (0, 1)
    ]
    return mean, cov


def outlines(ax):
    return [p for p in ax.patches if isinstance(p, Ellipse) and not p.get_fill()]


def test_one_panel_per_layer_on_the_whole_grid_with_each_layers_distance():
    fig = plot_layer_heads(history(), GRID, one_key=0.5)
    axes = [a for a in fig.axes if a.axison]
    assert len(axes) == len(LAYERS)
    assert fig.get_size_inches()[0] <= COLUMN_INCHES + 1e-9
    for ax, layer, n in zip(axes, LAYERS, (1, 2)):
        maps = [
            loop_map(c, a)
            for c, a in zip(layer["centers"], layer["inverse_covariance"])
        ]
        distance = sum(
            sum(v * math.hypot(*k) for k, v in p.items()) for p in maps
        ) / len(maps)
        assert ax.get_title() == f"layer {n}\n{distance:.1f} tokens"
        # the whole grid in shifts from the query, rows down, one token a unit
        assert ax.get_xlim() == (-8.5, 7.5) and ax.get_ylim() == (7.5, -8.5)
    assert axes[0].get_title() != axes[1].get_title()
    drawn, _ = figure_text_sizes(fig, lambda: fig.canvas.draw())
    assert min(size for size, _ in drawn) >= 8.5
    plt.close(fig)


def test_each_head_is_drawn_at_the_mean_and_50_percent_ellipse_of_its_map():
    fig = plot_layer_heads(history(), GRID)
    axes = [a for a in fig.axes if a.axison]
    r2 = 2 * math.log(2)  # a 2-D Gaussian's 50 % ellipse: squared Mahalanobis radius
    for ax, layer in zip(axes, LAYERS):
        heads = list(zip(layer["centers"], layer["inverse_covariance"]))
        drawn = outlines(ax)
        wide = [
            0.5 * sum(abs(v - 1 / 256) for v in loop_map(c, a).values()) < 0.25
            for c, a in heads
        ]
        assert len(drawn) == len(heads) - sum(wide)
        for patch, (c, a) in zip(drawn, [h for h, u in zip(heads, wide) if not u]):
            if a[0][0] > 4:  # the sharp head: no smooth moments on one key
                continue
            mean, cov = loop_moments(loop_map(c, a))
            assert patch.center == pytest.approx((mean[1], mean[0]), abs=2e-3)
            # the ellipse as a quadratic form in (x = column, y = row): R diag(w², h²)/4 Rᵀ
            t = math.radians(patch.angle)
            rot = np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])
            form = rot @ np.diag([patch.width**2, patch.height**2]) @ rot.T / 4
            want = r2 * np.array([[cov[1][1], cov[1][0]], [cov[0][1], cov[0][0]]])
            # (1 %: the grid cuts off a little of the tilted head's tail)
            assert form == pytest.approx(want, rel=1e-2, abs=2e-3)
            # the crop holds the whole ellipse of these heads, well inside the grid
            half = np.sqrt(np.diag(form))
            x0, x1 = ax.get_xlim()
            y1, y0 = ax.get_ylim()
            assert x0 <= patch.center[0] - half[0] and patch.center[0] + half[0] <= x1
            assert y0 <= patch.center[1] - half[1] and patch.center[1] + half[1] <= y1
    plt.close(fig)


def test_nearly_uniform_heads_are_counted_not_drawn_and_colours_are_per_head():
    fig = plot_layer_heads(history(), GRID)
    first, second = [a for a in fig.axes if a.axison]
    assert [t.get_text() for t in first.texts] == ["1 uniform"]
    assert not second.texts
    colours = [to_hex(p.get_edgecolor()) for p in outlines(first)]
    assert len(set(colours)) == len(colours) == 3  # heads 1-3, each its own colour
    # head k has one colour in every panel
    assert [to_hex(p.get_edgecolor()) for p in outlines(second)] == colours[:2]
    plt.close(fig)


def test_a_ring_on_the_key_of_each_head_on_one_key():
    fig = plot_layer_heads(history(), GRID, one_key=0.5)
    axes = [a for a in fig.axes if a.axison]
    for ax, layer in zip(axes, LAYERS):
        want = []
        for c, a in zip(layer["centers"], layer["inverse_covariance"]):
            p = loop_map(c, a)
            key = max(p, key=p.get)
            if p[key] > 0.5:
                want.append(key)
        rings = [
            (ln.get_ydata()[0], ln.get_xdata()[0])
            for ln in ax.get_lines()
            if ln.get_marker() == "o" and ln.get_markerfacecolor() == "none"
        ]
        assert rings == want
    assert (
        len([r for r in axes[0].get_lines() if r.get_markerfacecolor() == "none"]) == 1
    )
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    # the key in the figure, in the glossary's words; layer 1's uniform head is not drawn
    assert labels == [
        "query token",
        "head centre",
        "50 % of its attention",
        "on one key (> 50 %)",
        "n uniform: near-uniform heads, not drawn",
    ]
    plt.close(fig)
    plain = plot_layer_heads(history(), GRID)
    assert len(plain.legends[0].get_texts()) == 4
    plt.close(plain)
    drawn = {"initial_attention": LAYERS[1:], "epochs": [{"attention": LAYERS[1:]}]}
    every = plot_layer_heads(drawn, GRID)  # no uniform head: no entry for one
    assert len(every.legends[0].get_texts()) == 3
    plt.close(every)


def test_unknown_layers_are_refused():
    with pytest.raises(ValueError):
        plot_layer_heads(history(), GRID, layers=[2])


def test_a_close_up_shows_the_window_and_counts_heads_sharing_a_key():
    """With ``window`` every panel spans the shifts within that many tokens of the query; a key
    held by several heads (two sharp heads on one key, found by the loop's maps) carries their
    number, and a key held by one head carries none."""
    sharp = [[8.0, 0.0], [0.0, 8.0]]
    layer = {
        "centers": [[0.0, 2.0], [0.1, 2.0], [-1.0, 0.0], [3.0, 3.0]],
        "inverse_covariance": [sharp, sharp, sharp, [[0.6, 0.0], [0.0, 0.6]]],
    }
    held = {}
    for c, a in zip(layer["centers"], layer["inverse_covariance"]):
        p = loop_map(c, a)
        key = max(p, key=p.get)
        if p[key] > 0.5:
            held[key] = held.get(key, 0) + 1
    assert sorted(held.values()) == [1, 2]
    fig = plot_layer_heads(
        {"initial_attention": [layer], "epochs": [{"epoch": 1, "attention": [layer]}]},
        GRID,
        one_key=0.5,
        window=3,
    )
    (ax,) = [a for a in fig.axes if a.axison]
    assert ax.get_xlim() == (-3.5, 3.5) and ax.get_ylim() == (3.5, -3.5)
    counts = [t for t in ax.texts if t.get_text().startswith("×")]
    assert [t.get_text() for t in counts] == ["×2"]
    (row, col), _ = max(held.items(), key=lambda kv: kv[1])
    x, y = counts[0].get_position()
    assert abs(x - col) < 1 and abs(y - row) < 1  # beside the shared key
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[-1] == "×n: heads on that key"
    plt.close(fig)


def test_six_layers_are_drawn_three_to_a_row_in_layer_order():
    """Six panels in one row would be a sixth of the column each: rows of three, read left to
    right then down, each panel as wide as a third of the figure, every panel's limits the same."""
    six = LAYERS * 3
    fig = plot_layer_heads(
        {"initial_attention": six, "epochs": [{"attention": six}]}, GRID
    )
    fig.canvas.draw()  # the constrained layout places the panels when drawn
    axes = [a for a in fig.axes if a.axison]
    assert [a.get_title().split("\n")[0] for a in axes] == [
        f"layer {i}" for i in range(1, 7)
    ]
    boxes = [a.get_position() for a in axes]
    assert boxes[0].y0 > boxes[3].y1 - 1e-6  # layer 4 starts the second row
    assert [round(b.x0, 3) for b in boxes[:3]] == [round(b.x0, 3) for b in boxes[3:]]
    assert min(b.width for b in boxes) > 0.28  # a third of the figure, not a sixth
    assert {a.get_xlim() for a in axes} == {(-8.5, 7.5)}
    plt.close(fig)


def test_panels_widen_alike_to_hold_an_ellipse_past_the_grids_edge():
    """A broad head near the grid's top edge (its 50 % ellipse reaches past it, as layer 2's
    large head of Figure 7.1 does) widens every panel, square, until the ellipse fits; a head
    longer than the whole grid (a band) is left cut, so it cannot shrink the grid."""
    broad = {
        "centers": [[-6.0, 0.0], [0.0, 0.0]],
        "inverse_covariance": [[[0.1, 0.0], [0.0, 0.1]], [[1.0, 0.0], [0.0, 1.0]]],
    }
    band = {
        "centers": [[0.0, 0.0]],
        "inverse_covariance": [[[4.0, 0.0], [0.0, 1e-4]]],
    }
    hist = {
        "initial_attention": [broad, band],
        "epochs": [{"epoch": 1, "attention": [broad, band]}],
    }
    fig = plot_layer_heads(hist, GRID)
    axes = [a for a in fig.axes if a.axison]
    (x0, x1), (y1, y0) = axes[0].get_xlim(), axes[0].get_ylim()
    assert all(a.get_xlim() == (x0, x1) and a.get_ylim() == (y1, y0) for a in axes)
    assert x1 - x0 == pytest.approx(y1 - y0)  # square panels
    assert y0 < -8.5 and x0 <= -8.5 and x1 >= 7.5 and y1 >= 7.5  # the grid, and more
    top = outlines(axes[0])[0]
    assert y0 <= top.center[1] - top.height / 2  # the broad head's top edge is inside
    assert x1 - x0 < 16 + 8  # the band (thousands of tokens long) did not widen them
    plt.close(fig)
