"""Kernel-free interactive figures (Plotly) of chapter 7b, the trained heads:

* :func:`trajectory_figure`: the paper's Fig. 2 as an animation, the head centres of every layer
  epoch by epoch (:func:`attnconv.chapters.shared.trained_heads.center_trajectories`), on axes
  fitted to the centres (:func:`trajectory_axis_limit`);
* :func:`query_heads_figure`: a CIFAR image (one of several, picked by a slider) and, per layer,
  every trained head's attention map for the query token the reader picks by a slider or by
  clicking the image (:func:`attnconv.chapters.shared.gaussian_maps.gaussian_head_maps`;
  :func:`click_to_query_script`).

Every state is precomputed in Python (Plotly animation frames), so a reader of the static HTML
page explores them without a kernel and without a network
(:func:`attnconv.chapters.shared.plotly_style.figure_html`). Positions are in tokens, as
(row, column) shifts from the query token (rows downwards), in both figures. Layers, heads and
the query token's row and column are numbered from 1 in every label, as in the paper.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple

import numpy as np
import torch

from .shared.gaussian_maps import gaussian_head_maps
from .shared.plotly_style import (
    FIGURE_WIDTH,
    FONT_SIZE,
    HEAD_COLORS,
    IMMEDIATE,
    plotly_go,
    rounded,
    square_outline,
)
from .shared.trained_heads import center_trajectories, layer_records

__all__ = [
    "TRAJECTORY_MARGIN",
    "trajectory_axis_limit",
    "trajectory_figure",
    "query_heads_figure",
    "query_shift_ranges",
    "click_to_query_script",
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


def _trajectory_axes(fig, n_layers: int, cols: int, lim: float) -> None:
    """Equal ranges ±``lim`` on every panel, rows downwards; axis titles on the outer panels.
    Both axes keep their range and give up domain instead (``constrain="domain"``), so Plotly
    never widens a range to fill a panel that is not square."""
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
    from the initialisation. Head colours are shared by the layers; one legend. Every panel has
    the same axes, ±:func:`trajectory_axis_limit` (fitted to the centres of every layer and
    frame, not to the token grid), on square panels."""
    go = plotly_go()
    from plotly.subplots import make_subplots

    layers = _gaussian_layers(history)
    traj = {i: center_trajectories(history, i) for i in layers}
    n_frames = next(iter(traj.values())).shape[0]
    n_heads = max(t.shape[1] for t in traj.values())
    lim = trajectory_axis_limit(traj, kernel_size)
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
    _trajectory_axes(fig, len(layers), cols, lim)
    fig.layout.meta = {
        "layers": [i + 1 for i in layers],
        "epochs": n_frames - 1,
        "heads": n_heads,
    }
    return fig


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


def _images_hwc(images) -> list:
    """One ``(3, H, W)`` image, a ``(N, 3, H, W)`` stack or a sequence of ``(3, H, W)`` images as
    a list of ``(H, W, 3)`` uint8 arrays of one size (a ValueError otherwise)."""
    if isinstance(images, (list, tuple)):
        out = [_image_hwc(im) for im in images]
    else:
        arr = torch.as_tensor(
            np.asarray(images) if not torch.is_tensor(images) else images
        )
        out = [_image_hwc(im) for im in arr] if arr.ndim == 4 else [_image_hwc(arr)]
    if not out:
        raise ValueError("no image given")
    if len({im.shape for im in out}) != 1:
        raise ValueError("the images must all have one size")
    return out


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


def query_shift_ranges(q, grid) -> Tuple[list, list]:
    """The x (column) and y (row, downwards) ranges of a panel of :func:`query_heads_figure` for
    the query token ``q = (row, column)`` (from 0) of a ``grid``: the whole grid, in token shifts
    from the query, so the query sits at (0, 0) and token (r, c) at (r − q_row, c − q_col)."""
    (qr, qc), (gh, gw) = q, grid
    return [-qc - 0.5, gw - qc - 0.5], [gh - qr - 0.5, -qr - 0.5]


def _image_origin(q, patch) -> dict:
    """The image trace's ``x0``, ``y0`` (its first pixel's centre) in token shifts from ``q``."""
    (qr, qc), (ph, pw) = q, patch
    return {
        "x0": round(-qc - 0.5 + 0.5 / pw, 6),
        "y0": round(-qr - 0.5 + 0.5 / ph, 6),
    }


def _query_image_traces(img, q, patch) -> list:
    """The image in token shifts from the query (a pixel is 1/patch of a token), its hover
    naming the token under the pointer, and the query token's outline (red) at (0, 0)."""
    go = plotly_go()
    ph, pw = patch
    x, y = square_outline(-0.5, -0.5, 1)
    return [
        go.Image(
            z=img.tolist(),
            dx=round(1 / pw, 6),
            dy=round(1 / ph, 6),
            **_image_origin(q, patch),
            hovertemplate="shift (%{y:.0f}, %{x:.0f}) from the query<extra></extra>",
        ),
        go.Scatter(
            x=x,
            y=y,
            mode="lines",
            line={"color": "red", "width": 3},
            name="query token",
            hoverinfo="skip",
            showlegend=True,
        ),
    ]


def _head_map_traces(m, q, i: int, h: int) -> list:
    """Head h of layer i: its map ``m`` for the query q, in token shifts from q (the map's
    token (r, c) at (r − q_row, c − q_col)), and the query's marker at (0, 0)."""
    go = plotly_go()
    return [
        go.Heatmap(
            z=rounded(m, 3),
            x0=-q[1],
            dx=1,
            y0=-q[0],
            dy=1,
            coloraxis="coloraxis",
            hovertemplate=f"layer {i + 1}, head {h + 1}, shift (%{{y:.0f}}, %{{x:.0f}}): "
            "%{z:.3f}<extra></extra>",
        ),
        go.Scatter(
            x=[0],
            y=[0],
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


def _slider_frame(active: int, x: float, length: float, prefix: str) -> dict:
    """What the page's sliders share: placed under the panels at ``x`` over ``length``, the
    current value named after ``prefix``, the step labels hidden (they are shown above)."""
    return {
        "active": active,
        "x": x,
        "len": length,
        "y": -0.16,
        "yanchor": "top",
        "pad": {"t": 0},
        "ticklen": 0,
        "minorticklen": 0,
        "currentvalue": {
            "prefix": prefix,
            "font": {"size": FONT_SIZE, "color": "#2a3f5f"},
        },
        "font": {"size": 12, "color": "rgba(0,0,0,0)"},
    }


def _query_slider(queries, initial, x: float) -> dict:
    """The slider over the query tokens (labels from 1, frame names ``"r_c"`` from 0)."""
    return {
        **_slider_frame(queries.index(initial), x, 1.0 - x, "query token: "),
        "steps": [
            {
                "label": f"row {q[0] + 1}, column {q[1] + 1}",
                "value": f"{q[0]}_{q[1]}",
                "method": "animate",
                "args": [[f"{q[0]}_{q[1]}"], IMMEDIATE],
            }
            for q in queries
        ],
    }


def _image_slider(images, labels, length: float) -> dict:
    """The slider over the images: each step restyles the image trace (trace 0); the maps stay."""
    return {
        **_slider_frame(0, 0.0, length, ""),
        "steps": [
            {
                "label": label,
                "value": str(k),
                "method": "restyle",
                "args": [{"z": [img.tolist()]}, [0]],
            }
            for k, (img, label) in enumerate(zip(images, labels))
        ],
    }


def _query_layout(fig, zmax: float, img_w: float, sliders) -> None:
    """The figure's size, the shared colour axis (its bar under the image), legend and sliders."""
    fig.update_layout(
        autosize=True,  # the column's width, up to FIGURE_WIDTH (figure_html)
        height=520,
        font={"size": FONT_SIZE},
        template="plotly_white",
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        coloraxis={
            "colorscale": _sqrt_colorscale(),
            "cmin": 0,
            "cmax": round(zmax, 4),
            "colorbar": {
                "title": {"text": "attention probability", "side": "top"},
                "orientation": "h",
                "x": 0.0,
                "xanchor": "left",
                "y": 0.08,  # under the image, clear of the sliders
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
        sliders=sliders,
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


def _query_axis_names(fig, n_heads, ncols: int) -> list:
    """The (x axis, y axis) layout names of the image and of every head's map, in that order."""
    cells = [(1, 1)] + [
        _head_cell(k, h, ncols) for k in range(len(n_heads)) for h in range(n_heads[k])
    ]
    out = []
    for rr, cc in cells:
        sub = fig.get_subplot(rr, cc)
        out.append((sub.xaxis.plotly_name, sub.yaxis.plotly_name))
    return out


def _query_ranges(axes, q, grid) -> dict:
    """Layout updates that show the whole grid, in shifts from ``q``, on every panel."""
    xr, yr = query_shift_ranges(q, grid)
    out = {}
    for xa, ya in axes:
        out[xa] = {"range": xr}
        out[ya] = {"range": yr}
    return out


def _query_axes(fig, axes, q, grid) -> None:
    """Bare axes, rows downwards, one token as long across as down; the ranges for query ``q``."""
    fig.update_xaxes(
        showticklabels=False, showgrid=False, zeroline=False, constrain="domain"
    )
    fig.update_yaxes(
        showticklabels=False,
        showgrid=False,
        zeroline=False,
        autorange=False,
        constrain="domain",  # a frame's new ranges are kept exactly, never widened
    )
    for xa, ya in axes:
        fig.layout[ya].update(scaleanchor=xa.replace("axis", ""))
    fig.update_layout(_query_ranges(axes, q, grid))


def query_heads_figure(
    history: dict,
    image,
    epoch: int = -1,
    grid: Optional[Tuple[int, int]] = None,
    initial: Optional[Tuple[int, int]] = None,
    ncols: int = 3,
    image_labels: Optional[Sequence[str]] = None,
):
    """A CIFAR image and, for every attention layer, each Gaussian head's attention map over the
    token grid for one query token (:func:`~attnconv.chapters.shared.gaussian_maps.gaussian_head_maps`
    of the heads saved after ``epoch``, -1 the last), with the query token outlined in red on the
    image and marked on every map. One frame per query token (named ``"r_c"``, 0-based), chosen
    by the slider (labels from 1) or by clicking the image (:func:`click_to_query_script`).

    One coordinate system throughout: tokens, as (row, column) shifts from the query (rows
    downwards), so the query sits at (0, 0) on the image and on every map, and each frame moves
    the panels' ranges (:func:`query_shift_ranges`) instead of the query.

    ``image`` is a ``(3, H, W)`` uint8 tensor or array (CHW, RGB), or several of them (a
    ``(N, 3, H, W)`` stack or a sequence): with several, a second slider picks the image shown
    (``image_labels``, one per image, name them). The maps are those of the saved centres and
    widths alone, the same for every image. ``grid`` is the token grid (default image size / the
    model's ``downsample``), so a token is an (H/g)×(W/g) patch of pixels. All maps share one
    colour scale, from 0 to the largest probability of any head at any query."""
    go = plotly_go()
    images = _images_hwc(image)
    labels = (
        [f"image {k + 1}" for k in range(len(images))]
        if image_labels is None
        else [str(v) for v in image_labels]
    )
    if len(labels) != len(images):
        raise ValueError(f"{len(images)} images but {len(labels)} image labels")
    ih, iw = images[0].shape[:2]
    gh, gw = _token_grid(history, ih, iw, grid)
    patch = (ih // gh, iw // gw)
    layers = _gaussian_layers(history)
    queries, maps = _query_maps(history, epoch, layers, (gh, gw))
    n_heads = [len(maps[queries[0]][k]) for k in range(len(layers))]
    zmax = max(float(torch.stack([m.max() for m in maps[q]]).max()) for q in queries)
    initial = (gh // 2, gw // 2) if initial is None else tuple(int(v) for v in initial)
    if initial not in maps:
        raise ValueError(f"initial query {initial} is outside the {gh}×{gw} grid")

    img_w, spacer = 0.25, 0.03  # columns: the image, then per layer ``ncols`` heads
    fig = _query_subplots(layers, n_heads, ncols, img_w, spacer)
    for tr in _query_image_traces(images[0], initial, patch):
        fig.add_trace(tr, 1, 1)
    heatmaps = []
    for k, i in enumerate(layers):
        for h in range(n_heads[k]):
            rr, cc = _head_cell(k, h, ncols)
            for tr in _head_map_traces(maps[initial][k][h], initial, i, h):
                fig.add_trace(tr, rr, cc)
            heatmaps.append(len(fig.data) - 2)
    axes = _query_axis_names(fig, n_heads, ncols)

    def changes(
        q,
    ):  # the image's origin and every map (values and origin) move with the query
        out = [go.Image(**_image_origin(q, patch))]
        for k in range(len(layers)):
            for h in range(n_heads[k]):
                out.append(go.Heatmap(z=rounded(maps[q][k][h], 3), x0=-q[1], y0=-q[0]))
        return out

    fig.frames = [
        go.Frame(
            name=f"{q[0]}_{q[1]}",
            data=changes(q),
            traces=[0] + heatmaps,
            layout=_query_ranges(axes, q, (gh, gw)),
        )
        for q in queries
    ]
    several = len(images) > 1
    sliders = [_query_slider(queries, initial, x=img_w + spacer if several else 0.0)]
    if several:
        sliders.append(_image_slider(images, labels, length=img_w))
    _query_layout(fig, zmax, img_w, sliders)
    _layer_captions(fig, layers, img_w, spacer)
    _query_axes(fig, axes, initial, (gh, gw))
    fig.layout.meta = {
        "clickable": True,
        "grid": [gh, gw],
        "patch": list(patch),
        "layers": [i + 1 for i in layers],
        "heads": n_heads,
        "epoch": epoch,
        "images": labels,
    }
    return fig


def click_to_query_script() -> str:
    """JavaScript for :func:`figure_html` ``post_script`` of :func:`query_heads_figure`: a click
    on the image picks the token under the pointer as the query (the frame ``"r_c"`` and the
    query slider, the first, move to it). The image is drawn in token shifts from the current
    query, so the token clicked is the current query plus the rounded shift. Plotly substitutes
    ``{plot_id}``."""
    return """(function () {
  var gd = document.getElementById('{plot_id}');
  if (!gd || !window.Plotly) return;
  var names = gd.layout.sliders[0].steps.map(function (s) { return s.value; });
  gd.on('plotly_click', function (e) {
    var p = e.points && e.points[0];
    if (!p || p.data.type !== 'image') return;
    var q = names[gd.layout.sliders[0].active || 0].split('_').map(Number);
    var r = q[0] + Math.round(p.y), c = q[1] + Math.round(p.x);
    var i = names.indexOf(r + '_' + c);
    if (i < 0) return;
    Plotly.animate(gd, [names[i]], {mode: 'immediate', frame: {duration: 0, redraw: true},
                                    transition: {duration: 0}});
    Plotly.relayout(gd, {'sliders[0].active': i});
  });
})();"""


def first_of_each_class(labels, n: int) -> list:
    """The indices of the first image of each of the first ``n`` classes to appear in ``labels``
    (in the order they appear): a handful of different images for :func:`query_heads_figure`."""
    seen, out = set(), []
    for i, y in enumerate(int(v) for v in labels):
        if y not in seen:
            seen.add(y)
            out.append(i)
            if len(out) == n:
                break
    return out
