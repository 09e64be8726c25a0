"""Kernel-free interactive figures (Plotly) for the rendered book: chapters 6 and 7b.

Every figure precomputes all its states in Python (Plotly animation frames), so a reader of the
static HTML page explores it without a kernel and without a network: plotly.js itself is served
from the book's ``_static`` folder (``book/_ext/plotly_offline.py``), and :func:`figure_html`
writes the figure as a ``<div>`` without plotly.js and with a fixed id, so a notebook's saved
output is the same on every run.

* :func:`explorer_figure` (chapter 6): one head of the explorer (:mod:`.explorer`) as its centre
  Δ and width α move, with the K×K kernel it implements and its distance to a convolution
  (:func:`one_tap_error`). Three sliders; a small script (:func:`linked_sliders_script`) combines
  their positions into the frame to show.
* :func:`trajectory_figure` (chapter 7b): the paper's Fig. 2 as an animation, the head centres of
  every layer epoch by epoch (:func:`attnconv.chapters.shared.trained_heads.center_trajectories`).
* :func:`query_heads_figure` (chapter 7b): a CIFAR image and, per layer, every trained head's
  attention map for the query token the reader picks by a slider or by clicking the image
  (:func:`attnconv.chapters.shared.gaussian_maps.gaussian_head_maps`).

Layers, heads and tokens are numbered from 1 in every label, as in the paper.
"""

from __future__ import annotations

import json
import math
from typing import Optional, Sequence, Tuple

import numpy as np
import torch

from .shared.gaussian_maps import gaussian_head_maps
from .shared.head_state import HeadState, head_state_kernel, head_state_probabilities
from .shared.trained_heads import center_trajectories, layer_records

__all__ = [
    "FIGURE_WIDTH",
    "FONT_SIZE",
    "EXPLORER_DELTAS",
    "EXPLORER_ALPHAS",
    "one_tap_error",
    "explorer_frame_name",
    "explorer_figure",
    "trajectory_figure",
    "query_heads_figure",
    "linked_sliders_script",
    "click_to_query_script",
    "figure_html",
]

FIGURE_WIDTH = 760  # px: the book's content column holds about 790 px
#: The head explorer's width: it fits the content column at a 1280 px window too (684 px).
EXPLORER_WIDTH = 660
FONT_SIZE = 13  # px, every text of the figures (at least 12)
EXPLORER_DELTAS = tuple(
    x / 2 for x in range(-4, 5)
)  # −2, −1.5, …, 2 (rows and columns)
EXPLORER_ALPHAS = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0)
HEAD_COLORS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#393b79",
    "#637939",
    "#8c6d31",
    "#843c39",
    "#7b4173",
    "#3182bd",
)
_IMMEDIATE = {
    "mode": "immediate",
    "frame": {"duration": 0, "redraw": True},
    "transition": {"duration": 0},
}


def _go():
    import plotly.graph_objects as go

    return go


def _round(x, digits: int = 4):
    """Nested lists of ``x`` rounded to ``digits`` decimals (smaller pages, same picture)."""
    return np.round(np.asarray(x, dtype=np.float64), digits).tolist()


def _fmt(x: float) -> str:
    """A number for a label: −1.5 with a true minus sign, integers without decimals."""
    s = f"{x:g}"
    return s.replace("-", "−")


def _fmt_small(x: float) -> str:
    """2 significant digits; scientific notation (1.8e−4) below 0.01, with a true minus sign."""
    if x != 0 and abs(x) < 0.01:
        m, e = f"{x:.1e}".split("e")
        return f"{m}e{int(e)}".replace("-", "−")
    return f"{x:.2g}"


# --------------------------------------------------------------------------- (a) the explorer
def one_tap_error(state: HeadState) -> float:
    """How far the head of ``state`` is from the convolution it approximates at its query:
    ‖p − c‖₁, with p the head's attention probabilities over the key grid
    (:func:`~attnconv.chapters.explorer.head_state_probabilities`) and c the one-tap kernel of a
    convolution at the nearest integer shift round(Δ) (the head of Theorem 1 that this head
    approximates): 1 at the key q + round(Δ), 0 elsewhere, and all 0 when that key is off the grid
    (a zero-padded convolution reads 0 there).

    For inputs with |x_k| ≤ 1 this is the largest possible difference between the head's output
    Σ_k p_k x_k and the convolution's x_{q+round(Δ)}: 2·(off-target mass) on the grid, 1 when the
    target is off the grid. It is 0 exactly for a one-hot head (Lemma 1) and at most
    2·S(α)/(1 + S(α)) for an integer Δ (Lemma 2)."""
    p = head_state_probabilities(state)
    c = torch.zeros_like(p)
    t0 = state.query[0] + math.floor(state.delta[0] + 0.5)
    t1 = state.query[1] + math.floor(state.delta[1] + 0.5)
    if 0 <= t0 < state.grid[0] and 0 <= t1 < state.grid[1]:
        c[t0, t1] = 1.0
    return float((p - c).abs().sum())


def explorer_frame_name(i: int, j: int, k: int) -> str:
    """Name of the explorer frame for Δ₁ = deltas[i], Δ₂ = deltas[j], α = alphas[k]."""
    return f"{i}_{j}_{k}"


def _square(x0: float, y0: float, size: float):
    """A closed square outline (x, y lists) from the corner (x0, y0)."""
    return [x0, x0 + size, x0 + size, x0, x0], [y0, y0, y0 + size, y0 + size, y0]


def _explorer_state_data(state: HeadState):
    """The changing parts of the explorer for one state: (map, kernel, centre, title)."""
    p = head_state_probabilities(state)
    kernel = head_state_kernel(state, p)
    err = one_tap_error(state)
    title = (
        f"Δ = ({_fmt(state.delta[0])}, {_fmt(state.delta[1])}), α = {_fmt(state.alpha)}: "
        f"window mass {float(kernel.sum()):.2f}, distance to a one-tap convolution {_fmt_small(err)}"
    )
    centre = (state.query[1] + state.delta[1], state.query[0] + state.delta[0])
    return p, kernel, centre, title


def _explorer_start(
    deltas: Sequence[float], alphas: Sequence[float], initial
) -> Tuple[int, int, int]:
    """The (Δ₁, Δ₂, α) indices of ``initial`` on the slider grid (a ValueError if off it)."""
    try:
        return (
            deltas.index(float(initial[0])),
            deltas.index(float(initial[1])),
            alphas.index(float(initial[2])),
        )
    except ValueError:
        raise ValueError(
            f"initial {initial} is not on the grid of slider values"
        ) from None


def _explorer_states(deltas, alphas, query, grid, kernel_size) -> dict:
    """:func:`_explorer_state_data` of every (i, j, k) index of the slider grid."""
    states = {}
    for i, d1 in enumerate(deltas):
        for j, d2 in enumerate(deltas):
            for k, a in enumerate(alphas):
                s = HeadState(
                    delta=(d1, d2),
                    alpha=a,
                    query=query,
                    grid=grid,
                    kernel_size=kernel_size,
                )
                states[i, j, k] = _explorer_state_data(s)
    return states


def _explorer_dynamic(data, r: int) -> list:
    """The three traces of one explorer state: its map, its kernel and its centre."""
    go = _go()
    p, kernel, (cx, cy), _ = data
    return [
        go.Heatmap(
            z=_round(p),
            zmin=0,
            zmax=max(float(p.max()), 0.02),
            colorscale="Blues",
            showscale=False,
            hovertemplate="row %{y}, column %{x}: %{z:.3f}<extra></extra>",
        ),
        go.Heatmap(
            z=_round(kernel),
            x=list(range(-r, r + 1)),
            y=list(range(-r, r + 1)),
            zmin=0,
            zmax=1,  # fixed: a 0.10 tap looks light, a 1.00 tap dark, in every state
            colorscale="Greens",
            showscale=False,
            texttemplate="%{z:.2f}",
            textfont={"size": FONT_SIZE},
            hovertemplate="shift (%{y}, %{x}): %{z:.4f}<extra></extra>",
        ),
        go.Scatter(
            x=[cx],
            y=[cy],
            mode="markers",
            name="head centre q + Δ",
            marker={
                "symbol": "x",
                "size": 13,
                "color": "darkorange",
                "line": {"width": 1},
            },
        ),
    ]


def _explorer_outlines(fig, query, r: int, kernel_size: int) -> None:
    """Add the query square (red) and the K×K window (green dashed) to the map panel."""
    go = _go()
    q0, q1 = query
    x, y = _square(q1 - 0.5, q0 - 0.5, 1)
    fig.add_trace(
        go.Scatter(
            x=x,
            y=y,
            mode="lines",
            name="query q",
            line={"color": "red", "width": 2},
            hoverinfo="skip",
        ),
        1,
        1,
    )
    x, y = _square(q1 - r - 0.5, q0 - r - 0.5, kernel_size)
    fig.add_trace(
        go.Scatter(
            x=x,
            y=y,
            mode="lines",
            name=f"{kernel_size}×{kernel_size} window",
            line={"color": "green", "width": 2, "dash": "dash"},
            hoverinfo="skip",
        ),
        1,
        1,
    )


def _explorer_frames(states: dict) -> list:
    """One frame per state, holding only what changes (Plotly merges it into the traces)."""
    go = _go()

    def changes(key):
        p, kernel, (cx, cy), _ = states[key]
        return [
            go.Heatmap(z=_round(p), zmax=max(float(p.max()), 0.02)),
            go.Heatmap(z=_round(kernel)),
            go.Scatter(x=[cx], y=[cy]),
        ]

    return [
        go.Frame(
            name=explorer_frame_name(*key),
            data=changes(key),
            traces=[0, 1, 2],
            layout={"title": {"text": states[key][3]}},
        )
        for key in sorted(states)
    ]


def _explorer_slider(name, label, values, active, y) -> dict:
    """One explorer slider (method ``skip``: :func:`linked_sliders_script` moves the frames)."""
    return {
        "name": name,
        "active": active,
        "y": y,
        "x": 0.0,
        "len": 1.0,
        "yanchor": "top",
        "pad": {"t": 0, "b": 0},
        "ticklen": 3,
        "currentvalue": {
            "prefix": f"{label} = ",
            "xanchor": "left",
            "font": {"size": FONT_SIZE},
        },
        "font": {"size": 12},
        "steps": [
            {"label": _fmt(v), "value": str(n), "method": "skip", "args": []}
            for n, v in enumerate(values)
        ],
    }


def _explorer_layout(fig, title: str, deltas, alphas, start) -> None:
    """The explorer's size, title, legend and its three sliders."""
    fig.update_layout(
        width=EXPLORER_WIDTH,
        height=700,
        font={"size": FONT_SIZE},
        template="plotly_white",
        title={
            "text": title,
            "font": {"size": FONT_SIZE},
            "x": 0.01,
            "xanchor": "left",
            "y": 0.985,
            "yanchor": "top",
        },
        margin={"l": 50, "r": 20, "t": 100, "b": 240},
        legend={
            "orientation": "h",
            "x": 0,
            "y": 1.1,
            "xanchor": "left",
            "yanchor": "bottom",
            "font": {"size": FONT_SIZE},
        },
        sliders=[
            _explorer_slider("delta1", "Δ₁ (row shift)", deltas, start[0], -0.2),
            _explorer_slider("delta2", "Δ₂ (column shift)", deltas, start[1], -0.42),
            _explorer_slider("alpha", "α (width)", alphas, start[2], -0.64),
        ],
    )
    fig.update_annotations(font_size=FONT_SIZE)


def _explorer_axes(fig, grid, r: int) -> None:
    """The axes of the map panel (the key grid) and of the kernel panel (shifts −r … r)."""
    h, w = grid
    fig.update_xaxes(
        range=[-0.5, w - 0.5],
        constrain="domain",
        showgrid=False,
        zeroline=False,
        title_text="key column",
        row=1,
        col=1,
    )
    fig.update_yaxes(
        range=[h - 0.5, -0.5],
        scaleanchor="x",
        showgrid=False,
        zeroline=False,
        title_text="key row",
        row=1,
        col=1,
    )
    fig.update_xaxes(
        range=[-r - 0.5, r + 0.5],
        constrain="domain",
        tickvals=list(range(-r, r + 1)),
        showgrid=False,
        zeroline=False,
        ticks="outside",
        title_text="δ₂ (column shift)",
        row=1,
        col=2,
    )
    fig.update_yaxes(
        range=[r + 0.5, -r - 0.5],
        scaleanchor="x2",
        tickvals=list(range(-r, r + 1)),
        showgrid=False,
        zeroline=False,
        ticks="outside",
        title_text="δ₁ (row shift)",
        row=1,
        col=2,
    )


def explorer_figure(
    deltas: Sequence[float] = EXPLORER_DELTAS,
    alphas: Sequence[float] = EXPLORER_ALPHAS,
    query: Tuple[int, int] = (4, 4),
    grid: Tuple[int, int] = (9, 9),
    kernel_size: int = 3,
    initial: Tuple[float, float, float] = (1.0, -1.0, 10.0),
):
    """The head explorer of chapter 6 without a kernel: a Plotly figure with (left) the head's
    attention probabilities over the key grid for the query (red square), its centre q + Δ
    (orange cross) and the K×K window (green dashed), (right) the K×K kernel the head implements
    (:func:`~attnconv.chapters.explorer.head_state_kernel`, values written in), and in the title
    the window mass and :func:`one_tap_error`.

    One frame per (Δ₁, Δ₂, α) in ``deltas`` × ``deltas`` × ``alphas``, named by
    :func:`explorer_frame_name`; three sliders named ``delta1``, ``delta2``, ``alpha`` whose step
    values are indices. Plotly sliders do not combine by themselves: show the figure with
    :func:`figure_html` and ``post_script=linked_sliders_script()``. ``initial`` (Δ₁, Δ₂, α) must
    be on the grid of values."""
    from plotly.subplots import make_subplots

    deltas, alphas = [float(d) for d in deltas], [float(a) for a in alphas]
    start = _explorer_start(deltas, alphas, initial)
    h, w = grid
    r = (kernel_size - 1) // 2
    states = _explorer_states(deltas, alphas, query, grid, kernel_size)

    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.56, 0.44],
        horizontal_spacing=0.12,
        subplot_titles=(
            f"attention over the {h}×{w} keys",
            f"{kernel_size}×{kernel_size} kernel",
        ),
    )
    d0 = _explorer_dynamic(states[start], r)
    fig.add_trace(d0[0], 1, 1)
    fig.add_trace(d0[1], 1, 2)
    fig.add_trace(d0[2], 1, 1)
    _explorer_outlines(fig, query, r, kernel_size)
    fig.frames = _explorer_frames(states)
    _explorer_layout(fig, states[start][3], deltas, alphas, start)
    _explorer_axes(fig, grid, r)
    fig.layout.meta = {
        "deltas": deltas,
        "alphas": alphas,
        "query": list(query),
        "grid": list(grid),
        "kernel_size": kernel_size,
    }
    return fig


def linked_sliders_script() -> str:
    """JavaScript for :func:`figure_html` ``post_script``: when any slider of a figure whose
    sliders all use method ``skip`` moves, show the frame named by the sliders' step values joined
    with ``_`` (as :func:`explorer_frame_name`). Plotly substitutes ``{plot_id}``."""
    return """(function () {
  var gd = document.getElementById('{plot_id}');
  if (!gd || !window.Plotly) return;
  var active = (gd.layout.sliders || []).map(function (s) { return s.steps[s.active || 0].value; });
  gd.on('plotly_sliderchange', function (e) {
    var names = gd.layout.sliders.map(function (s) { return s.name; });
    var i = names.indexOf(e.slider.name);
    if (i < 0 || active[i] === e.step.value) return;
    active[i] = e.step.value;
    Plotly.animate(gd, [active.join('_')], {mode: 'immediate', frame: {duration: 0, redraw: true},
                                            transition: {duration: 0}});
  });
})();"""


# --------------------------------------------------------------------------- (b) trajectories
def _gaussian_layers(history: dict):
    layers = [i for i, r in enumerate(history["initial_attention"]) if "centers" in r]
    if not layers:
        raise ValueError("no layer of the history has head centres")
    return layers


def _trajectory_limit(traj: dict, kernel_size: int) -> float:
    """Half the side of every panel: the lattice and every centre, rounded up to a half token."""
    lim = max(
        kernel_size // 2 + 1.0, max(float(np.abs(t).max()) for t in traj.values()) + 0.5
    )
    return math.ceil(lim * 2) / 2


def _panel_cell(k: int, cols: int) -> Tuple[int, int]:
    """Panel k (from 1) → its (row, col) in a grid of ``cols`` columns."""
    return (k - 1) // cols + 1, (k - 1) % cols + 1


def _trajectory_static(fig, n_layers: int, cols: int, kernel_size: int) -> None:
    """Add every panel's K×K lattice (grey dots) and query (red square), one legend entry each."""
    go = _go()
    r = kernel_size // 2
    lat = [(a, b) for a in range(-r, r + 1) for b in range(-r, r + 1)]
    for c in range(1, n_layers + 1):
        fig.add_trace(
            go.Scatter(
                x=[b for a, b in lat],
                y=[a for a, b in lat],
                mode="markers",
                marker={"size": 9, "color": "lightgray"},
                name=f"{kernel_size}×{kernel_size} lattice",
                legendgroup="lattice",
                showlegend=c == 1,
                hoverinfo="skip",
            ),
            *_panel_cell(c, cols),
        )
        x, y = _square(-0.5, -0.5, 1)
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                mode="lines",
                line={"color": "red", "width": 2},
                name="query",
                legendgroup="query",
                showlegend=c == 1,
                hoverinfo="skip",
            ),
            *_panel_cell(c, cols),
        )


def _head_path_traces(t, e: int, lo: int, c: int, i: int, h: int) -> list:
    """Head h of layer i (panel c) at epoch e: its path since epoch ``lo`` and its centre."""
    go = _go()
    color = HEAD_COLORS[h % len(HEAD_COLORS)]
    return [
        go.Scatter(
            x=_round(t[lo : e + 1, h, 1], 3),
            y=_round(t[lo : e + 1, h, 0], 3),
            mode="lines",
            line={"color": color, "width": 1.5},
            showlegend=False,
            legendgroup=f"head{h}",
            hoverinfo="skip",
            xaxis=f"x{c if c > 1 else ''}",
            yaxis=f"y{c if c > 1 else ''}",
        ),
        go.Scatter(
            x=_round(t[e : e + 1, h, 1], 3),
            y=_round(t[e : e + 1, h, 0], 3),
            mode="markers",
            marker={
                "size": 11,
                "color": color,
                "line": {"width": 1, "color": "white"},
            },
            name=f"head {h + 1}",
            legendgroup=f"head{h}",
            showlegend=c == 1,
            xaxis=f"x{c if c > 1 else ''}",
            yaxis=f"y{c if c > 1 else ''}",
            hovertemplate=f"layer {i + 1}, head {h + 1}: Δ = (%{{y:.2f}}, %{{x:.2f}})"
            "<extra></extra>",
        ),
    ]


def _trajectory_dynamic(traj: dict, layers, e: int, tail: Optional[int]) -> list:
    """The path and centre traces of every head of every layer at epoch e."""
    out = []
    lo = 0 if tail is None else max(0, e - tail)
    for c, i in enumerate(layers, start=1):
        t = traj[i]
        for h in range(t.shape[1]):
            out += _head_path_traces(t, e, lo, c, i, h)
    return out


def _play_menu(below: float) -> dict:
    """The play and pause buttons, under the plotting area."""
    return {
        "type": "buttons",
        "direction": "left",
        "x": 0,
        "y": -95 / below,
        "xanchor": "left",
        "yanchor": "top",
        "pad": {"t": 0, "r": 10},
        "showactive": False,
        "font": {"size": FONT_SIZE},
        "buttons": [
            {
                "label": "▶ play",
                "method": "animate",
                "args": [
                    None,
                    {
                        "mode": "immediate",
                        "fromcurrent": False,
                        "frame": {"duration": 150, "redraw": False},
                        "transition": {"duration": 0},
                    },
                ],
            },
            {
                "label": "❚❚ pause",
                "method": "animate",
                "args": [
                    [None],
                    {
                        "mode": "immediate",
                        "frame": {"duration": 0, "redraw": False},
                        "transition": {"duration": 0},
                    },
                ],
            },
        ],
    }


def _epoch_slider(first: int, n_frames: int, below: float) -> dict:
    """The slider over the epochs (frame names ``"0"`` … ``"E"``), starting at ``first``."""
    return {
        "active": first,
        "x": 0.3,
        "len": 0.7,
        "y": -77 / below,
        "yanchor": "top",
        "pad": {"t": 0},
        "currentvalue": {"prefix": "after epoch ", "font": {"size": FONT_SIZE}},
        "font": {"size": 12},
        "steps": [
            {
                "label": str(e),
                "method": "animate",
                "args": [[str(e)], _IMMEDIATE],
            }
            for e in range(n_frames)
        ],
    }


def _trajectory_layout(fig, rows: int, first: int, n_frames: int) -> None:
    """The figure's size, legend, play buttons and epoch slider."""
    height = 520 if rows == 1 else 360 * rows + 120
    below = (
        height - 170
    )  # the plotting area's height in px (margins t 40, b 130): controls sit below it
    fig.update_layout(
        width=FIGURE_WIDTH,
        height=height,
        font={"size": FONT_SIZE},
        template="plotly_white",
        margin={"l": 60, "r": 10, "t": 40, "b": 130},
        legend={
            "x": 1.02,
            "y": 1,
            "xanchor": "left",
            "yanchor": "top",
            "font": {"size": FONT_SIZE},
            "tracegroupgap": 2,
        },
        updatemenus=[_play_menu(below)],
        sliders=[_epoch_slider(first, n_frames, below)],
    )
    fig.update_annotations(font_size=FONT_SIZE)


def _trajectory_axes(fig, n_layers: int, cols: int, lim: float) -> None:
    """Equal ranges ±``lim`` on every panel, rows downwards; axis titles on the outer panels."""
    for k in range(1, n_layers + 1):
        row, col = _panel_cell(k, cols)
        fig.update_xaxes(
            range=[-lim, lim],
            zeroline=False,
            row=row,
            col=col,
            constrain="domain",
            title_text="column shift (tokens)" if k + cols > n_layers else None,
        )
        fig.update_yaxes(
            range=[lim, -lim],
            zeroline=False,
            row=row,
            col=col,
            scaleanchor=f"x{k if k > 1 else ''}",
            title_text="row shift (tokens)" if col == 1 else None,
        )


def trajectory_figure(
    history: dict,
    kernel_size: int = 3,
    tail: Optional[int] = None,
    ncols: int = 3,
    start: int = -1,
):
    """The paper's Fig. 2 as an animation: one panel per attention layer with every head's centre
    Δ_h (row shift down, column shift right, in tokens, around the query at 0) after each epoch,
    the path it took so far (all of it, or the last ``tail`` epochs), the query (red square) and
    the K×K lattice of shifts of Lemma 1 (grey dots). At most ``ncols`` panels per row (six layers: two
    rows of three, as the paper lays out its Fig. 3).

    Frame ``e`` (named ``"e"``; 0 is the initialisation) shows the centres of
    :func:`~attnconv.chapters.shared.trained_heads.center_trajectories` at row ``e``; a slider and a
    play button step through the E + 1 frames. The figure opens at frame ``start`` (-1: after the
    last epoch, the trained heads, so a reader who does not press play sees the result); play runs
    from the initialisation. Head colours are shared by the layers; one legend."""
    go = _go()
    from plotly.subplots import make_subplots

    layers = _gaussian_layers(history)
    traj = {i: center_trajectories(history, i) for i in layers}
    n_frames = next(iter(traj.values())).shape[0]
    n_heads = max(t.shape[1] for t in traj.values())
    lim = _trajectory_limit(traj, kernel_size)
    cols = min(len(layers), ncols)
    rows = math.ceil(len(layers) / cols)
    fig = make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=[f"layer {i + 1}" for i in layers],
        horizontal_spacing=0.08,
        vertical_spacing=0.1,
    )
    _trajectory_static(fig, len(layers), cols, kernel_size)
    n_static = len(fig.data)
    first = range(n_frames)[start]
    for tr in _trajectory_dynamic(traj, layers, first, tail):
        fig.add_trace(tr)
    dyn = list(range(n_static, len(fig.data)))

    def changes(e: int):  # only the coordinates change from frame to frame
        return [
            go.Scatter(x=tr.x, y=tr.y)
            for tr in _trajectory_dynamic(traj, layers, e, tail)
        ]

    fig.frames = [
        go.Frame(name=str(e), data=changes(e), traces=dyn) for e in range(n_frames)
    ]
    _trajectory_layout(fig, rows, first, n_frames)
    _trajectory_axes(fig, len(layers), cols, lim)
    fig.layout.meta = {
        "layers": [i + 1 for i in layers],
        "epochs": n_frames - 1,
        "heads": n_heads,
    }
    return fig


# --------------------------------------------------------------------------- (c) a query pixel
def _sqrt_colorscale(n: int = 16):
    """Plotly's "Blues" with its colours at the square roots of the values (stops at (i/n)²), so
    broad heads of small probabilities stay visible next to one-hot heads on a shared scale."""
    from plotly.colors import sample_colorscale

    colors = sample_colorscale("Blues", [i / n for i in range(n + 1)])
    return [[(i / n) ** 2, c] for i, c in enumerate(colors)]


def _image_hwc(image) -> np.ndarray:
    """A ``(3, H, W)`` image as a contiguous ``(H, W, 3)`` uint8 array (a ValueError otherwise)."""
    img = np.asarray(torch.as_tensor(image).detach().cpu())
    if img.ndim != 3 or img.shape[0] != 3:
        raise ValueError(f"image must be (3, H, W), got shape {img.shape}")
    return np.ascontiguousarray(img.transpose(1, 2, 0)).astype(np.uint8)


def _token_grid(history: dict, ih: int, iw: int, grid) -> Tuple[int, int]:
    """The token grid (default image size / the model's ``downsample``); it must split the image."""
    if grid is None:
        ds = int(history.get("model_config", {}).get("downsample", 1))
        grid = (ih // ds, iw // ds)
    gh, gw = (int(g) for g in grid)
    if ih % gh or iw % gw:
        raise ValueError(
            f"the {ih}×{iw} image does not split into a {gh}×{gw} token grid"
        )
    return gh, gw


def _query_subplots(layers, n_heads, ncols: int, img_w: float, spacer: float):
    """The subplots: the image (all rows), then per layer a spacer and ``ncols`` head columns."""
    from plotly.subplots import make_subplots

    nrows = max(math.ceil(n / ncols) for n in n_heads)
    block = (1 - img_w - spacer * len(layers)) / len(layers)
    widths = [img_w]
    for _ in layers:
        widths += [spacer] + [block / ncols] * ncols
    specs = []
    for rr in range(nrows):
        row = [{"rowspan": nrows} if rr == 0 else None]
        for _ in layers:
            row += [None] + [{} for _ in range(ncols)]
        specs.append(row)
    titles = []
    for rr in range(nrows):
        for k, _ in enumerate(layers):
            for cc in range(ncols):
                h = rr * ncols + cc
                titles.append(f"head {h + 1}" if h < n_heads[k] else "")
    # make_subplots orders titles by row, then column, over the cells that hold a subplot
    order = ["image"] + titles[: len(layers) * ncols] + titles[len(layers) * ncols :]
    return make_subplots(
        rows=nrows,
        cols=len(widths),
        specs=specs,
        column_widths=widths,
        horizontal_spacing=0.008,
        vertical_spacing=0.045,
        subplot_titles=order,
    )


def _head_cell(k: int, h: int, ncols: int) -> Tuple[int, int]:
    """(row, column) of head h of the k-th layer, after its spacer column."""
    return 1 + h // ncols, 3 + k * (ncols + 1) + h % ncols


def _query_maps(history: dict, epoch: int, layers, grid):
    """Every query token of ``grid`` and, per query, each layer's head maps after ``epoch``."""
    records = layer_records(history, epoch)
    queries = [(a, b) for a in range(grid[0]) for b in range(grid[1])]
    maps = {
        q: [gaussian_head_maps(records[i], grid, q) for i in layers] for q in queries
    }
    return queries, maps


def _add_query_traces(fig, traces, n_heads, ncols: int) -> None:
    """Add the query outline to the image and each head's map and marker to its cell."""
    fig.add_trace(traces[0], 1, 1)
    n = 1
    for k in range(len(n_heads)):
        for h in range(n_heads[k]):
            rr, cc = _head_cell(k, h, ncols)
            fig.add_trace(traces[n], rr, cc)
            fig.add_trace(traces[n + 1], rr, cc)
            n += 2


def _query_outline(q, ph: int, pw: int):
    """The query token's outline on the image (red)."""
    x, y = _square(q[1] * pw - 0.5, q[0] * ph - 0.5, pw)
    return _go().Scatter(
        x=x,
        y=y,
        mode="lines",
        line={"color": "red", "width": 3},
        name="query token",
        hoverinfo="skip",
        showlegend=True,
    )


def _head_map_traces(m, q, i: int, h: int, gh: int, gw: int) -> list:
    """Head h of layer i: its map ``m`` for the query q and the query's marker on it."""
    go = _go()
    return [
        go.Heatmap(
            z=_round(m, 3),
            coloraxis="coloraxis",
            hovertemplate=f"layer {i + 1}, head {h + 1}, token (%{{y}}, %{{x}}): "
            "%{z:.3f}<extra></extra>",
            x=list(range(1, gw + 1)),
            y=list(range(1, gh + 1)),
        ),
        go.Scatter(
            x=[q[1] + 1],
            y=[q[0] + 1],
            mode="markers",
            showlegend=False,
            marker={
                "symbol": "square-open",
                "size": 8,
                "color": "red",
                "line": {"width": 2},
            },
            hoverinfo="skip",
        ),
    ]


def _query_slider(queries, initial) -> dict:
    """The slider over the query tokens (labels from 1, frame names ``"r_c"``)."""
    return {
        "active": queries.index(initial),
        "x": 0.0,
        "len": 1.0,
        "y": -0.16,
        "yanchor": "top",
        "pad": {"t": 0},
        "ticklen": 0,
        "minorticklen": 0,
        "currentvalue": {
            "prefix": "query token (row, column), from 1: ",
            "font": {"size": FONT_SIZE, "color": "#2a3f5f"},
        },
        "font": {
            "size": 12,
            "color": "rgba(0,0,0,0)",
        },  # 64 labels: shown above instead
        "steps": [
            {
                "label": f"({q[0] + 1}, {q[1] + 1})",
                "value": f"{q[0]}_{q[1]}",
                "method": "animate",
                "args": [[f"{q[0]}_{q[1]}"], _IMMEDIATE],
            }
            for q in queries
        ],
    }


def _query_layout(fig, zmax: float, img_w: float, queries, initial) -> None:
    """The figure's size, the shared colour axis (its bar under the image), legend and slider."""
    fig.update_layout(
        width=FIGURE_WIDTH,
        height=520,
        font={"size": FONT_SIZE},
        template="plotly_white",
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        coloraxis={
            "colorscale": _sqrt_colorscale(),
            "cmin": 0,
            "cmax": round(zmax, 4),
            "colorbar": {
                "title": {"text": "attention", "side": "right"},
                "orientation": "h",
                "x": 0.0,
                "xanchor": "left",
                "y": -0.03,
                "yanchor": "top",
                "len": img_w,
                "thickness": 12,
                "tickfont": {"size": 12},
            },
        },
        legend={
            "x": 0,
            "y": 1.09,
            "xanchor": "left",
            "yanchor": "bottom",
            "orientation": "h",
        },
        sliders=[_query_slider(queries, initial)],
    )
    fig.update_annotations(font_size=12)


def _layer_captions(fig, layers, img_w: float, spacer: float) -> None:
    """A caption above each layer's block of heads."""
    block = (1 - img_w - spacer * len(layers)) / len(layers)
    for k, i in enumerate(layers):
        x0 = img_w + spacer * (k + 1) + block * k
        fig.add_annotation(
            text=f"<b>layer {i + 1}</b>",
            x=x0 + block / 2,
            y=1.07,
            xref="paper",
            yref="paper",
            showarrow=False,
            font={"size": FONT_SIZE},
            xanchor="center",
            yanchor="bottom",
        )


def _query_axes(fig, n_heads, ncols: int, token_grid, image_size) -> None:
    """Bare axes; each map on the token grid (1 … g, rows downwards), the image in pixels."""
    (gh, gw), (ih, iw) = token_grid, image_size
    fig.update_xaxes(
        showticklabels=False, showgrid=False, zeroline=False, constrain="domain"
    )
    fig.update_yaxes(
        showticklabels=False, showgrid=False, zeroline=False, autorange=False
    )
    for k in range(len(n_heads)):
        for h in range(n_heads[k]):
            rr, cc = _head_cell(k, h, ncols)
            sub = fig.get_subplot(rr, cc)
            xa = sub.xaxis.plotly_name.replace("axis", "")
            fig.update_xaxes(range=[0.5, gw + 0.5], row=rr, col=cc)
            fig.update_yaxes(range=[gh + 0.5, 0.5], scaleanchor=xa, row=rr, col=cc)
    fig.update_xaxes(range=[-0.5, iw - 0.5], row=1, col=1)
    fig.update_yaxes(range=[ih - 0.5, -0.5], scaleanchor="x", row=1, col=1)


def query_heads_figure(
    history: dict,
    image,
    epoch: int = -1,
    grid: Optional[Tuple[int, int]] = None,
    initial: Optional[Tuple[int, int]] = None,
    ncols: int = 3,
):
    """A CIFAR image and, for every attention layer, each Gaussian head's attention map over the
    token grid for one query token (:func:`~attnconv.chapters.shared.gaussian_maps.gaussian_head_maps`
    of the heads saved after ``epoch``, -1 the last), with the query token outlined in red on the
    image and marked on every map. One frame per query token (named ``"r_c"``, 0-based), chosen
    by the slider (labels from 1) or by clicking the image (:func:`click_to_query_script`).

    ``image`` is a ``(3, H, W)`` uint8 tensor or array (CHW, RGB); ``grid`` the token grid (default
    image size / the model's ``downsample``), so a token is an (H/g)×(W/g) patch of pixels. All
    maps share one colour scale, from 0 to the largest probability of any head at any query."""
    go = _go()
    img = _image_hwc(image)
    ih, iw = img.shape[:2]
    gh, gw = _token_grid(history, ih, iw, grid)
    ph, pw = ih // gh, iw // gw
    layers = _gaussian_layers(history)
    queries, maps = _query_maps(history, epoch, layers, (gh, gw))
    n_heads = [len(maps[queries[0]][k]) for k in range(len(layers))]
    zmax = max(float(torch.stack([m.max() for m in maps[q]]).max()) for q in queries)
    initial = (gh // 2, gw // 2) if initial is None else tuple(int(v) for v in initial)
    if initial not in maps:
        raise ValueError(f"initial query {initial} is outside the {gh}×{gw} grid")

    img_w, spacer = 0.25, 0.03  # columns: the image, then per layer ``ncols`` heads
    fig = _query_subplots(layers, n_heads, ncols, img_w, spacer)
    fig.add_trace(
        go.Image(z=img.tolist(), hovertemplate="pixel (%{y}, %{x})<extra></extra>"),
        1,
        1,
    )

    def dynamic(q):  # the query outline, then each head's map and query marker
        out = [_query_outline(q, ph, pw)]
        for k, i in enumerate(layers):
            for h in range(n_heads[k]):
                out += _head_map_traces(maps[q][k][h], q, i, h, gh, gw)
        return out

    _add_query_traces(fig, dynamic(initial), n_heads, ncols)
    dyn = list(range(1, len(fig.data)))

    def changes(q):  # only the query outline, the maps and the query markers change
        return [
            go.Scatter(x=t.x, y=t.y) if t.type == "scatter" else go.Heatmap(z=t.z)
            for t in dynamic(q)
        ]

    fig.frames = [
        go.Frame(name=f"{q[0]}_{q[1]}", data=changes(q), traces=dyn) for q in queries
    ]
    _query_layout(fig, zmax, img_w, queries, initial)
    _layer_captions(fig, layers, img_w, spacer)
    _query_axes(fig, n_heads, ncols, (gh, gw), (ih, iw))
    fig.layout.meta = {
        "clickable": True,
        "grid": [gh, gw],
        "patch": [ph, pw],
        "layers": [i + 1 for i in layers],
        "heads": n_heads,
        "epoch": epoch,
    }
    return fig


def click_to_query_script() -> str:
    """JavaScript for :func:`figure_html` ``post_script`` of :func:`query_heads_figure`: a click
    on the image picks the token under the pointer as the query (the frame ``"r_c"`` and the
    slider move to it). Plotly substitutes ``{plot_id}``."""
    return """(function () {
  var gd = document.getElementById('{plot_id}');
  if (!gd || !window.Plotly) return;
  var m = gd.layout.meta, names = gd.layout.sliders[0].steps.map(function (s) { return s.value; });
  gd.on('plotly_click', function (e) {
    var p = e.points && e.points[0];
    if (!p || p.data.type !== 'image') return;
    var r = Math.floor((p.y + 0.5) / m.patch[0]), c = Math.floor((p.x + 0.5) / m.patch[1]);
    var i = names.indexOf(r + '_' + c);
    if (i < 0) return;
    Plotly.animate(gd, [names[i]], {mode: 'immediate', frame: {duration: 0, redraw: true},
                                    transition: {duration: 0}});
    Plotly.relayout(gd, {'sliders[0].active': i});
  });
})();"""


# --------------------------------------------------------------------------- output
def figure_html(fig, div_id: str, post_script: Optional[str] = None):
    """``fig`` as an :class:`IPython.display.HTML` ``<div id=div_id>`` without plotly.js (the book
    serves it from ``_static``; a fixed id keeps a notebook's saved output deterministic). Where
    plotly.js is absent (a notebook in Jupyter), a line says so instead of an empty space; there,
    ``fig.show()`` draws the figure with Plotly's own renderer."""
    from IPython.display import HTML

    html = fig.to_html(
        include_plotlyjs=False,
        full_html=False,
        div_id=div_id,
        post_script=post_script,
        auto_play=False,
        config={"displayModeBar": False, "responsive": False},
    )
    note = (
        f'<p id="{div_id}-note" style="font-style:italic">Interactive figure: plotly.js is not loaded here '
        f"(it is in the built book); in Jupyter, <code>fig.show()</code> draws it.</p>"
        f"<script>if (window.Plotly) {{ var n = document.getElementById({json.dumps(div_id + '-note')});"
        f" if (n) n.remove(); }}</script>"
    )
    return HTML(note + html)
