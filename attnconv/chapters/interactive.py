"""Kernel-free interactive figure (Plotly) of chapter 6: one head of the explorer
(:mod:`.explorer`) as its centre Δ and width α move, with the K×K kernel it implements and its
distance to a convolution (:func:`one_tap_error`). Every state is precomputed in Python (Plotly
animation frames), so a reader of the static HTML page explores it without a kernel and without a
network (:func:`attnconv.chapters.shared.plotly_style.figure_html`). Three sliders; a small script
(:func:`linked_sliders_script`) combines their positions into the frame to show.

Layers, heads and tokens are numbered from 1 in every label, as in the paper.
"""

from __future__ import annotations

import math
from typing import Sequence, Tuple

import torch

from .shared.head_state import HeadState, head_state_kernel, head_state_probabilities
from .shared.plotly_style import (
    FONT_SIZE,
    fmt_number,
    fmt_small,
    plotly_go,
    rounded,
    square_outline,
)

__all__ = [
    "EXPLORER_DELTAS",
    "EXPLORER_ALPHAS",
    "one_tap_error",
    "explorer_frame_name",
    "explorer_figure",
    "linked_sliders_script",
]

EXPLORER_DELTAS = tuple(
    x / 2 for x in range(-4, 5)
)  # −2, −1.5, …, 2 (rows and columns)
EXPLORER_ALPHAS = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0)


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


def _explorer_state_data(state: HeadState):
    """The changing parts of the explorer for one state: (map, kernel, centre, title)."""
    p = head_state_probabilities(state)
    kernel = head_state_kernel(state, p)
    err = one_tap_error(state)
    title = (
        f"Δ = ({fmt_number(state.delta[0])}, {fmt_number(state.delta[1])}), α = {fmt_number(state.alpha)}: "
        f"window mass {float(kernel.sum()):.2f}, distance to a one-tap convolution {fmt_small(err)}"
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
    go = plotly_go()
    p, kernel, (cx, cy), _ = data
    return [
        go.Heatmap(
            z=rounded(p),
            zmin=0,
            zmax=max(float(p.max()), 0.02),
            colorscale="Blues",
            showscale=False,
            hovertemplate="row %{y}, column %{x}: %{z:.3f}<extra></extra>",
        ),
        go.Heatmap(
            z=rounded(kernel),
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
    go = plotly_go()
    q0, q1 = query
    x, y = square_outline(q1 - 0.5, q0 - 0.5, 1)
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
    x, y = square_outline(q1 - r - 0.5, q0 - r - 0.5, kernel_size)
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
    go = plotly_go()

    def changes(key):
        p, kernel, (cx, cy), _ = states[key]
        return [
            go.Heatmap(z=rounded(p), zmax=max(float(p.max()), 0.02)),
            go.Heatmap(z=rounded(kernel)),
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
            {"label": fmt_number(v), "value": str(n), "method": "skip", "args": []}
            for n, v in enumerate(values)
        ],
    }


def _explorer_layout(fig, title: str, deltas, alphas, start) -> None:
    """The explorer's size, title, legend and its three sliders."""
    fig.update_layout(
        autosize=True,  # the column's width, up to FIGURE_WIDTH (figure_html)
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
