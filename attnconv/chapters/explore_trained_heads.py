"""Kernel-free interactive figures (Plotly) of chapter 7b, the trained heads:

* :func:`trajectory_figure`: the paper's Fig. 2 as an animation, the head centres of every layer
  epoch by epoch (:func:`attnconv.chapters.shared.trained_heads.center_trajectories`);
* :func:`query_heads_figure`: a CIFAR image and, per layer, every trained head's attention map for
  the query token the reader picks by a slider or by clicking the image
  (:func:`attnconv.chapters.shared.gaussian_maps.gaussian_head_maps`;
  :func:`click_to_query_script`).

Every state is precomputed in Python (Plotly animation frames), so a reader of the static HTML
page explores them without a kernel and without a network
(:func:`attnconv.chapters.shared.plotly_style.figure_html`). Layers, heads and tokens are
numbered from 1 in every label, as in the paper.
"""

from __future__ import annotations

import math
from typing import Optional, Tuple

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
    "trajectory_figure",
    "query_heads_figure",
    "click_to_query_script",
]


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
    go = plotly_go()
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
    x, y = square_outline(q[1] * pw - 0.5, q[0] * ph - 0.5, pw)
    return plotly_go().Scatter(
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
    go = plotly_go()
    return [
        go.Heatmap(
            z=rounded(m, 3),
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
                "args": [[f"{q[0]}_{q[1]}"], IMMEDIATE],
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
    go = plotly_go()
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
