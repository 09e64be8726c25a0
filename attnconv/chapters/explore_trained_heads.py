"""Kernel-free interactive figure (Plotly) of chapter 7b, the trained heads:
:func:`trajectory_figure`, the paper's Fig. 2 as an animation, the head centres of every layer
epoch by epoch (:func:`attnconv.chapters.shared.trained_heads.center_trajectories`), each panel
on axes fitted to its own layer's centres (:func:`trajectory_axis_limit`). The page's query explorer is live
(:mod:`attnconv.chapters.live_query_explorer`).

Every frame is precomputed in Python, so a reader of the static HTML page explores it without a
kernel and without a network (:func:`attnconv.chapters.shared.plotly_style.figure_html`).
Positions are in tokens, as (row, column) shifts from the query token (rows downwards). Layers
and heads are numbered from 1 in every label, as in the paper.
"""

from __future__ import annotations

import math
from typing import Optional, Tuple

import numpy as np

from .shared.plotly_style import (
    FIGURE_WIDTH,
    FONT_SIZE,
    HEAD_COLORS,
    IMMEDIATE,
    plotly_go,
    rounded,
    square_outline,
)
from .shared.trained_heads import center_trajectories

__all__ = [
    "TRAJECTORY_MARGIN",
    "trajectory_axis_limit",
    "trajectory_figure",
    "first_of_each_class",
]


def _gaussian_layers(history: dict):
    layers = [i for i, r in enumerate(history["initial_attention"]) if "centers" in r]
    if not layers:
        raise ValueError("no layer of the history has head centres")
    return layers


#: Tokens of empty space between the outermost head centre (or lattice point) and the panel's edge.
TRAJECTORY_MARGIN = 0.75


def trajectory_axis_limit(
    traj: dict,
    kernel_size: int = 3,
    margin: float = TRAJECTORY_MARGIN,
    step: float = 0.5,
) -> float:
    """Half the side of every panel of :func:`trajectory_figure`, so each axis runs from −lim to
    lim, symmetric about the query: the largest |row or column shift| of any head centre of any
    layer in any frame (or the K×K lattice's outer ring, K // 2), plus ``margin`` tokens, rounded
    up to a multiple of ``step``. ``traj`` maps a layer to its ``(E + 1, N_h, 2)`` centres."""
    extent = max(
        float(kernel_size // 2), max(float(np.abs(t).max()) for t in traj.values())
    )
    return math.ceil((extent + margin) / step) * step


def _panel_cell(k: int, cols: int) -> Tuple[int, int]:
    """Panel k (from 1) → its (row, col) in a grid of ``cols`` columns."""
    return (k - 1) // cols + 1, (k - 1) % cols + 1


def _trajectory_static(fig, n_layers: int, cols: int, kernel_size: int) -> None:
    """Add every panel's K×K lattice (grey dots) and query (red square), one legend entry each,
    after the heads' entries."""
    go = plotly_go()
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
                legendrank=1002,  # after the heads: the legend's last entry
                showlegend=c == 1,
                hoverinfo="skip",
            ),
            *_panel_cell(c, cols),
        )
        x, y = square_outline(-0.5, -0.5, 1)
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                mode="lines",
                line={"color": "red", "width": 2},
                name="query",
                legendgroup="query",
                legendrank=1001,
                showlegend=c == 1,
                hoverinfo="skip",
            ),
            *_panel_cell(c, cols),
        )


def _head_path_traces(t, e: int, lo: int, c: int, i: int, h: int) -> list:
    """Head h of layer i (panel c) at epoch e: its path since epoch ``lo`` and its centre."""
    go = plotly_go()
    color = HEAD_COLORS[h % len(HEAD_COLORS)]
    return [
        go.Scatter(
            x=rounded(t[lo : e + 1, h, 1], 3),
            y=rounded(t[lo : e + 1, h, 0], 3),
            mode="lines",
            line={"color": color, "width": 1.5},
            showlegend=False,
            legendgroup=f"head{h}",
            hoverinfo="skip",
            xaxis=f"x{c if c > 1 else ''}",
            yaxis=f"y{c if c > 1 else ''}",
        ),
        go.Scatter(
            x=rounded(t[e : e + 1, h, 1], 3),
            y=rounded(t[e : e + 1, h, 0], 3),
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
                "args": [[str(e)], IMMEDIATE],
            }
            for e in range(n_frames)
        ],
    }


#: The trajectory figure's margins (px): the legend sits in the top one, in rows of
#: :data:`_TRAJ_LEGEND_PER_ROW` entries above the panels' titles, the play button and the epoch
#: slider in the bottom one; and the gaps between its panels (fractions of the plotting area).
_TRAJ_MARGIN = {"l": 60, "r": 20, "t": 40, "b": 160}
_TRAJ_SPACING = (0.08, 0.13)  # horizontal, vertical
_TRAJ_LEGEND_PER_ROW = 6  # entries of the legend a row (the column's width holds six)
_TRAJ_LEGEND_ROW_PX = 25


def _trajectory_margin(n_entries: int) -> dict:
    """The margins, the top one grown by one row of the legend per six of its entries."""
    rows = math.ceil(n_entries / _TRAJ_LEGEND_PER_ROW)
    return {**_TRAJ_MARGIN, "t": _TRAJ_MARGIN["t"] + rows * _TRAJ_LEGEND_ROW_PX}


def _trajectory_height(rows: int, cols: int, m: dict) -> int:
    """The figure's height (px) that makes every panel square in the column's width, with the
    margins ``m``."""
    hs, vs = _TRAJ_SPACING
    panel = (FIGURE_WIDTH - m["l"] - m["r"]) * (1 - (cols - 1) * hs) / cols
    plot_h = rows * panel / (1 - (rows - 1) * vs)
    return int(math.ceil(plot_h + m["t"] + m["b"]))


def _trajectory_layout(
    fig, rows: int, cols: int, first: int, n_frames: int, n_heads: int
) -> None:
    """The figure's size (square panels), legend (a row per six of its ``n_heads`` + 2
    entries), play buttons and epoch slider."""
    margin = _trajectory_margin(n_heads + 2)  # the heads, the query and the lattice
    height = _trajectory_height(rows, cols, margin)
    below = height - margin["t"] - margin["b"]  # the plotting area's height (px)
    fig.update_layout(
        autosize=True,  # the column's width, up to FIGURE_WIDTH (figure_html)
        height=height,
        font={"size": FONT_SIZE},
        template="plotly_white",
        margin=margin,
        legend={  # in rows across the top of the figure: every entry shown, none scrolled
            "orientation": "h",
            "x": 0,
            "y": 1,
            "xref": "container",
            "yref": "container",
            "xanchor": "left",
            "yanchor": "top",
            "entrywidth": 55,  # px of text beside each symbol: six entries a row
            "font": {"size": FONT_SIZE},
        },
        updatemenus=[_play_menu(below)],
        sliders=[_epoch_slider(first, n_frames, below)],
    )
    fig.update_annotations(font_size=FONT_SIZE)


def _trajectory_axes(fig, lims, cols: int) -> None:
    """Equal ranges ±``lims[k − 1]`` on panel k, rows downwards; axis titles on the outer panels.
    Both axes keep their range and give up domain instead (``constrain="domain"``), so Plotly
    never widens a range to fill a panel that is not square."""
    n_layers = len(lims)
    for k, lim in enumerate(lims, start=1):
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
            constrain="domain",
            scaleanchor=f"x{k if k > 1 else ''}",
            title_text="row shift (tokens)" if col == 1 else None,
        )


def trajectory_figure(
    history: dict,
    kernel_size: int = 3,
    tail: Optional[int] = None,
    ncols: int = 3,
    start: int = -1,
    shared_scale: bool = False,
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
    from the initialisation. Head colours are shared by the layers; one legend. Each panel has
    its own axes, ±:func:`trajectory_axis_limit` of its layer (fitted to that layer's centres in
    every frame, not to the token grid), on square panels: a layer whose heads stay near the
    query is drawn close up. ``shared_scale=True`` gives every panel the largest of those
    limits, so that the layers compare at a glance."""
    go = plotly_go()
    from plotly.subplots import make_subplots

    layers = _gaussian_layers(history)
    traj = {i: center_trajectories(history, i) for i in layers}
    n_frames = next(iter(traj.values())).shape[0]
    n_heads = max(t.shape[1] for t in traj.values())
    lims = [trajectory_axis_limit({i: traj[i]}, kernel_size) for i in layers]
    if shared_scale:
        lims = [max(lims)] * len(lims)
    cols = min(len(layers), ncols)
    rows = math.ceil(len(layers) / cols)
    fig = make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=[f"layer {i + 1}" for i in layers],
        horizontal_spacing=_TRAJ_SPACING[0],
        vertical_spacing=_TRAJ_SPACING[1],
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
    _trajectory_layout(fig, rows, cols, first, n_frames, n_heads)
    _trajectory_axes(fig, lims, cols)
    fig.layout.meta = {
        "layers": [i + 1 for i in layers],
        "epochs": n_frames - 1,
        "heads": n_heads,
    }
    return fig


def first_of_each_class(labels, n: int) -> list:
    """The indices of the first image of each of the first ``n`` classes to appear in ``labels``
    (in the order they appear): a handful of different images for chapter 7b's query explorer."""
    seen, out = set(), []
    for i, y in enumerate(int(v) for v in labels):
        if y not in seen:
            seen.add(y)
            out.append(i)
            if len(out) == n:
                break
    return out
