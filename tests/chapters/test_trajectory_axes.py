"""The animated trajectories of chapter 7b sit on axes fitted to the heads, panel by panel: every
head centre of every frame lies inside its own layer's panel, the axes are symmetric about the
query and no wider than that layer's extent plus the margin (rounded up to half a token), and
Plotly is told to keep those ranges (``constrain="domain"`` on both axes), not to widen one to
fill a panel.

The check is independent of the fitting function: the extent comes from the saved centres
(:func:`center_trajectories`), the positions from what each frame draws, the ranges from the
figure's layout."""

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("plotly")

from attnconv.chapters.explore_trained_heads import (  # noqa: E402
    TRAJECTORY_MARGIN,
    trajectory_axis_limit,
    trajectory_figure,
)
from attnconv.chapters.shared.plotly_style import FIGURE_WIDTH  # noqa: E402
from attnconv.chapters.shared.trained_heads import center_trajectories  # noqa: E402

RUNS = Path(__file__).resolve().parents[2] / "book" / "runs"
SAVED = {
    "2 layers": RUNS / "cpu" / "quadratic" / "history.json",
    "6 layers": RUNS / "deep" / "quadratic" / "history.json",
}


def synthetic_history(centres: np.ndarray) -> dict:
    """A history whose layer-l head h sits at ``centres[e, l, h]`` (row, column) after epoch e
    (e = 0: the initialisation)."""

    def record(c):
        n = len(c)
        return {
            "centers": np.asarray(c).tolist(),
            "spreads": [1.0] * n,
            "inverse_covariance": [[[1.0, 0.0], [0.0, 1.0]]] * n,
        }

    return {
        "model_config": {"image_size": 32, "downsample": 2},
        "initial_attention": [record(c) for c in centres[0]],
        "epochs": [
            {"epoch": e, "attention": [record(c) for c in centres[e]]}
            for e in range(1, len(centres))
        ],
    }


def _histories():
    rng = np.random.default_rng(3)
    out = {}
    for name, path in SAVED.items():
        if path.is_file():
            out[name] = json.loads(path.read_text())
    far = rng.normal(0, 1.5, (5, 3, 4, 2))
    far[2, 1, 3] = (-11.3, 4.0)  # one head far out at one epoch, then back
    out["synthetic, one far head"] = synthetic_history(far)
    out["synthetic, near the query"] = synthetic_history(
        rng.uniform(-0.4, 0.4, (3, 2, 2, 2))
    )
    return out


HISTORIES = _histories()


def _panels(fig):
    """Each panel's (x range, y range, x constrain, y constrain), from the layout."""
    lay = fig.layout.to_plotly_json()
    xs = sorted(
        (k for k in lay if k.startswith("xaxis")), key=lambda k: int(k[5:] or 1)
    )
    return [
        (
            lay[x]["range"],
            lay["y" + x[1:]]["range"],
            lay[x].get("constrain"),
            lay["y" + x[1:]].get("constrain"),
        )
        for x in xs
    ]


def _drawn_centres(fig, n_heads):
    """Per frame and panel, every head centre (row, column) the frame draws (markers: every
    second trace, ``n_heads`` per panel)."""
    out = []
    for f in fig.frames:
        dots = np.array([[d.y[0], d.x[0]] for d in f.data[1::2]])
        out.append([dots[k : k + n_heads] for k in range(0, len(dots), n_heads)])
    return out


@pytest.mark.parametrize("name", sorted(HISTORIES))
def test_every_centre_of_every_frame_is_inside_the_axes(name):
    h = HISTORIES[name]
    fig = trajectory_figure(h)
    panels = _panels(fig)
    assert len(panels) == len(h["initial_attention"])
    n_heads = len(h["initial_attention"][0]["centers"])
    drawn = _drawn_centres(fig, n_heads)
    for k, (xr, yr, cx, cy) in enumerate(panels):
        assert cx == "domain" and cy == "domain"  # Plotly keeps these ranges
        assert xr[0] == -xr[1] and yr[0] == -yr[1]  # symmetric about the query
        assert yr[0] > yr[1]  # rows downwards
        for frame in drawn:
            centres = frame[k]  # the heads of this panel's layer
            assert (centres[:, 1] > xr[0]).all() and (centres[:, 1] < xr[1]).all()
            assert (centres[:, 0] < yr[0]).all() and (centres[:, 0] > yr[1]).all()


@pytest.mark.parametrize("name", sorted(HISTORIES))
def test_axes_are_no_wider_than_the_extent_plus_the_margin(name):
    h = HISTORIES[name]
    panels = _panels(trajectory_figure(h))
    for i, (xr, yr, _, _) in enumerate(panels):  # panel i: layer i, on its own axes
        t = center_trajectories(h, i)
        extent = max(float(np.abs(t).max()), 1.0)  # the 3×3 lattice's ring always shows
        lim = trajectory_axis_limit({i: t})
        assert extent + TRAJECTORY_MARGIN <= lim < extent + TRAJECTORY_MARGIN + 0.5
        assert xr[1] == lim and yr[0] == lim


def test_a_far_head_widens_only_its_own_panel():
    """One head far out in layer 2 widens layer 2's panel; layer 1's stays close up."""
    near = np.zeros((2, 2, 1, 2))
    near[1, 1, 0] = (0.0, -6.2)
    panels = _panels(trajectory_figure(synthetic_history(near)))
    assert panels[0][0][1] == 2.0 and panels[1][0][1] == 7.0


def test_a_shared_scale_gives_every_panel_the_widest_limit():
    """With ``shared_scale`` the far head of layer 2 sets both panels' axes (ch. 7b's figure)."""
    near = np.zeros((2, 2, 1, 2))
    near[1, 1, 0] = (0.0, -6.2)
    panels = _panels(trajectory_figure(synthetic_history(near), shared_scale=True))
    assert [p[0][1] for p in panels] == [7.0, 7.0]
    assert [p[1][0] for p in panels] == [7.0, 7.0]


def test_the_limit_follows_the_data_not_the_grid():
    """A far head widens the axes; the same heads near the query give the lattice's ±1 plus the
    margin, whatever the token grid."""
    near = np.zeros((2, 1, 2, 2))
    assert trajectory_axis_limit({0: near[:, 0]}) == 2.0  # 1 + 0.75, up to a half
    far = near.copy()
    far[1, 0, 1] = (0.0, -6.2)
    assert trajectory_axis_limit({0: far[:, 0]}) == 7.0  # 6.2 + 0.75 = 6.95, up to 7
    assert trajectory_axis_limit({0: far[:, 0]}, margin=1.0, step=1.0) == 8.0
    assert trajectory_axis_limit({0: far[:, 0]}, kernel_size=19) == 10.0  # 9 + 0.75


def test_panels_are_square():
    """The figure's size makes each panel square (from its margins and the panels' domains) at
    its widest, FIGURE_WIDTH, so equal ranges need no widening and the panels fill their cells."""
    for name, h in HISTORIES.items():
        fig = trajectory_figure(h)
        lay, m = fig.layout, fig.layout.margin
        w, hgt = FIGURE_WIDTH - m.l - m.r, lay.height - m.t - m.b
        for k in range(1, len(h["initial_attention"]) + 1):
            xd = lay[f"xaxis{k if k > 1 else ''}"].domain
            yd = lay[f"yaxis{k if k > 1 else ''}"].domain
            assert abs((xd[1] - xd[0]) * w - (yd[1] - yd[0]) * hgt) < 1.0, name
