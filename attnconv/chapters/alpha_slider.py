"""Kernel-free interactive figure of chapter 4 (Plotly): one head of a converted convolution
(:func:`attnconv.conv_to_mhsa`) as its width α moves along a slider. Left, the head's attention
probabilities over the padded key grid for one query; right, its off-target mass (summed over the
keys other than q + Δ) against Lemma 2's bound S(α) (:func:`attnconv.off_target_mass_bound`).

Every frame is computed by the package's own layer (``conv_to_mhsa(conv, alpha=α)`` with
``return_attention=True``), in the convolution's dtype, so the page needs neither a kernel nor a
network (:func:`attnconv.chapters.shared.plotly_style.figure_html`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Sequence, Tuple

import numpy as np
import torch

from attnconv import conv_to_mhsa, kernel_shifts, off_target_mass_bound

from .shared.plotly_style import (
    NEUTRAL_COLOR,
    add_slider_frames,
    fmt_number,
    fmt_small,
    plotly_go,
    square_outline,
)

__all__ = [
    "SLIDER_ALPHAS",
    "AlphaFrame",
    "alpha_frames",
    "alpha_slider_figure",
]

#: 17 widths, roughly log-spaced (1, 1.5, 2, 3, 5, 7 per decade) from 0.1 to 40, past
#: ``one_hot_alpha(torch.float64)`` ≈ 38.1.
SLIDER_ALPHAS = (
    0.1,
    0.15,
    0.2,
    0.3,
    0.5,
    0.7,
    1.0,
    1.5,
    2.0,
    3.0,
    5.0,
    7.0,
    10.0,
    15.0,
    20.0,
    30.0,
    40.0,
)
#: Colours below this probability are drawn as this value (log scale).
LOG_FLOOR = -18.0
#: Gap (px) between the right panel's axes and their tick labels, so that the labels meeting
#: at its lower-left corner ("10⁻¹⁸" and "0.1") stay apart.
TICK_STANDOFF = 8


@dataclass(frozen=True)
class AlphaFrame:
    """One slider position: ``probs`` is the head's (H + 2p, W + 2p) attention map (float64 numpy),
    ``target`` the key q + Δ on that map, ``off_mass`` the sum of the probabilities of every other
    key, ``largest_off`` the largest of them and ``bound`` S(α)."""

    alpha: float
    probs: np.ndarray
    target: Tuple[int, int]
    off_mass: float
    largest_off: float
    bound: float


def alpha_frames(
    conv: torch.nn.Module,
    alphas: Sequence[float],
    shape: Tuple[int, int],
    query: Tuple[int, int],
    head: int,
) -> List[AlphaFrame]:
    """The attention map of head ``head`` for pixel ``query`` of a zero-padded ``shape`` image, for
    each α of ``alphas``, from ``conv_to_mhsa(conv, alpha=α)`` (position-only heads: the input is
    zeros). The key grid is padded by the kernel's radius, as in the layer."""
    h, w = shape
    if not (0 <= query[0] < h and 0 <= query[1] < w):
        raise ValueError(f"query {tuple(query)} is outside the {h}×{w} grid")
    k = conv.kernel_size[0]
    pad = (k - 1) // 2
    dl = kernel_shifts(k)[head].tolist()
    target = (query[0] + int(dl[0]) + pad, query[1] + int(dl[1]) + pad)
    dtype = conv.weight.dtype
    x = torch.zeros(1, conv.in_channels, h, w, dtype=dtype)
    frames = []
    for a in alphas:
        with torch.no_grad():
            _, probs = conv_to_mhsa(conv, alpha=float(a))(x, return_attention=True)
        row = probs[0, head, query[0] * w + query[1]].to(torch.float64).numpy()
        p = row.reshape(h + 2 * pad, w + 2 * pad).copy()
        off = np.ones_like(p, dtype=bool)
        off[target] = False
        frames.append(
            AlphaFrame(
                alpha=float(a),
                probs=p,
                target=target,
                off_mass=float(p[off].sum()),
                largest_off=float(p[off].max()),
                bound=off_target_mass_bound(float(a)),
            )
        )
    return frames


def _log_map(p: np.ndarray) -> list:
    """log₁₀ p, floored at :data:`LOG_FLOOR`, rounded to 2 decimals (the colours)."""
    with np.errstate(divide="ignore"):
        z = np.log10(np.maximum(p, 0.0))
    return np.round(np.maximum(z, LOG_FLOOR), 2).tolist()


def _hover_text(p: np.ndarray) -> list:
    return [[fmt_small(float(v)) for v in r] for r in p]


def _title(f: AlphaFrame) -> str:
    return (
        f"α = {fmt_number(f.alpha)}: p(target) = {f.probs[f.target]:.4f}; "
        f"off-target mass {fmt_small(f.off_mass)} ≤ S(α) = {fmt_small(f.bound)}"
    )


def _dynamic(f: AlphaFrame) -> list:
    """The traces that change with α: the map and the marker on the mass curve."""
    go = plotly_go()
    return [
        go.Heatmap(
            z=_log_map(f.probs),
            text=_hover_text(f.probs),
            zmin=LOG_FLOOR,
            zmax=0,
            colorscale="Blues",
            colorbar={
                "title": {"text": "p", "side": "top"},
                "len": 0.8,
                "x": 0.385,
                "xanchor": "left",
                "thickness": 10,
                "tickvals": [0, -4, -8, -12, -16],
                "ticktext": ["1", "10⁻⁴", "10⁻⁸", "10⁻¹²", "10⁻¹⁶"],
            },
            hovertemplate="key row %{y}, column %{x}: p = %{text}<extra></extra>",
        ),
        go.Scatter(
            x=[f.alpha],
            y=[max(f.off_mass, 1e-300)],
            mode="markers",
            name="this α",
            marker={"size": 11, "color": "darkorange", "line": {"width": 1}},
            hovertemplate="α = %{x}: off-target mass %{y:.2e}<extra></extra>",
        ),
    ]


def alpha_slider_figure(
    frames: Sequence[AlphaFrame], query: Tuple[int, int], pad: int, initial: int = 6
):
    """A Plotly figure with one frame per :class:`AlphaFrame` and a slider over α: left, log₁₀ of
    the head's attention over the padded key grid (query: red square; target q + Δ: orange
    outline); right, the off-target mass at every α of the slider (line), the bound S(α) (dashed)
    and the current α (marker). The title gives p(target), the off-target mass and S(α)."""
    from plotly.subplots import make_subplots

    go = plotly_go()
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.5, 0.5],
        horizontal_spacing=0.27,
        subplot_titles=(
            "attention over the padded keys",
            "off-target mass and its bound",
        ),
    )
    start = frames[initial]
    dyn = _dynamic(start)
    fig.add_trace(dyn[0], 1, 1)
    fig.add_trace(dyn[1], 1, 2)
    alphas = [f.alpha for f in frames]
    fig.add_trace(
        go.Scatter(
            x=alphas,
            y=[max(f.off_mass, 1e-300) for f in frames],
            mode="lines",
            name="measured",
            line={"color": "#1f77b4"},
            hoverinfo="skip",
        ),
        1,
        2,
    )
    dense = np.geomspace(alphas[0], alphas[-1], 120).tolist()
    fig.add_trace(
        go.Scatter(
            x=dense,
            y=[off_target_mass_bound(a) for a in dense],
            mode="lines",
            name="bound S(α)",
            line={"color": NEUTRAL_COLOR, "dash": "dash", "width": 2.5},
            hoverinfo="skip",
        ),
        1,
        2,
    )
    h, w = start.probs.shape
    x, y = square_outline(query[1] + pad - 0.5, query[0] + pad - 0.5, 1)
    fig.add_trace(
        go.Scatter(
            x=x, y=y, mode="lines", name="query q", line={"color": "red", "width": 2}
        ),
        1,
        1,
    )
    x, y = square_outline(start.target[1] - 0.5, start.target[0] - 0.5, 1)
    fig.add_trace(
        go.Scatter(
            x=x,
            y=y,
            mode="lines",
            name="target q + Δ",
            line={"color": "darkorange", "width": 2},
        ),
        1,
        1,
    )
    add_slider_frames(
        fig,
        frames,
        _dynamic,
        _title,
        [fmt_number(f.alpha) for f in frames],
        initial,
        "α = ",
        height=510,
        margin={"l": 50, "r": 20, "t": 90, "b": 190},
        legend={"orientation": "h", "x": 0, "y": -0.6, "yanchor": "top"},
    )
    fig.update_xaxes(
        range=[-0.5, w - 0.5], constrain="domain", showgrid=False, row=1, col=1
    )
    fig.update_yaxes(
        range=[h - 0.5, -0.5], scaleanchor="x", showgrid=False, row=1, col=1
    )
    # α ticked at the decades, labelled as plain numbers, with unlabelled ticks at 2 and 5 times
    # them (Plotly's automatic log ticks label those too, "0.1 2 5 1 2 5", at 3/4 size)
    decades = [10.0**e for e in range(-3, 4) if alphas[0] <= 10.0**e <= alphas[-1]]
    between = [
        m * d for d in [decades[0] / 10] + decades for m in (2, 5)
        if alphas[0] <= m * d <= alphas[-1]
    ]  # fmt: skip
    fig.update_xaxes(
        type="log",
        title_text="α",
        tickmode="array",
        tickvals=decades,
        ticktext=[fmt_number(d) for d in decades],
        minor={
            "tickvals": between,
            "ticks": "outside",
            "ticklen": 4,
            "showgrid": False,
        },
        ticklabelstandoff=TICK_STANDOFF,
        row=1,
        col=2,
    )
    # the lowest mass label ("10⁻¹⁸") and the first α label ("0.1") meet at the panel's corner:
    # both stand off their axes, so that they do not touch
    fig.update_yaxes(
        type="log",
        title_text="off-target mass",
        range=[math.log10(1e-18), 1],
        dtick=3,  # 1, 10⁻³, …, 10⁻¹⁸
        exponentformat="power",
        ticklabelstandoff=TICK_STANDOFF,
        row=1,
        col=2,
    )
    return fig
