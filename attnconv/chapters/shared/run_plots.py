"""Figures of a saved training run drawn from its history: the head centres over training (arXiv
v1 Fig. 2), the 50 % / 90 % probability-mass regions of every head (v1 Figs. 3 and 10) and the
accuracy curves (v1 Fig. 4 = ICLR Fig. 2).
"""

from __future__ import annotations

import math
from typing import Mapping, Optional, Sequence

import numpy as np

from ...core.map_measures import distance_to_uniform, mean_attention_distance
from ...experiments.checkpoints import Run
from ...experiments.claims import ONE_HOT, ONE_KEY
from .depth_measures import NEAR_UNIFORM_TV
from .gaussian_maps import draw_mass_ellipses, gaussian_head_maps, mass_ellipse
from .plotting import COLUMN_INCHES, label_colour, model_colour
from .trained_heads import center_trajectories, layer_records

__all__ = [
    "plot_center_trajectories",
    "plot_trajectories_per_layer",
    "plot_layer_contours",
    "plot_head_grid",
    "plot_layer_heads",
    "plot_accuracy_curves",
]


def _head_colors(n: int):
    import matplotlib.pyplot as plt

    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(n)]


def plot_center_trajectories(
    history: dict,
    layer: int,
    ax=None,
    kernel_size: int = 3,
    title: Optional[str] = None,
    lim: Optional[float] = None,
):
    """Fig. 2: the path of every head centre of ``layer`` over the epochs (circle: initial, cross:
    final), around the query (red square at 0) and the K×K lattice of shifts of Lemma 1 (grey
    dots). Axes in token units: column shift right, row shift down, as in an image. Layers are
    numbered from 1 in titles, as in the paper (``layer`` itself is a 0-based index)."""
    import matplotlib.pyplot as plt

    traj = center_trajectories(history, layer)
    if ax is None:
        _, ax = plt.subplots(figsize=(4.2, 4.2))
    r = kernel_size // 2
    lattice = np.array([(i, j) for i in range(-r, r + 1) for j in range(-r, r + 1)])
    ax.scatter(
        lattice[:, 1],
        lattice[:, 0],
        s=60,
        color="lightgray",
        zorder=1,
        label=f"{kernel_size}×{kernel_size} lattice",
    )
    ax.add_patch(
        plt.Rectangle((-0.5, -0.5), 1, 1, fill=False, ec="red", lw=1.5, zorder=2)
    )
    for h, c in enumerate(_head_colors(traj.shape[1])):
        ax.plot(traj[:, h, 1], traj[:, h, 0], "-", color=c, lw=1.2, zorder=3)
        ax.plot(traj[0, h, 1], traj[0, h, 0], "o", color=c, ms=4, mfc="white", zorder=4)
        ax.plot(traj[-1, h, 1], traj[-1, h, 0], "x", color=c, ms=8, mew=2, zorder=5)
    lim = lim or max(r + 1.0, float(np.abs(traj).max()) + 0.5)
    ax.set_xlim(-lim, lim)
    ax.set_ylim(lim, -lim)
    ax.set_aspect("equal")
    ax.set_xlabel("column shift (tokens)")
    ax.set_ylabel("row shift (tokens)")
    ax.grid(alpha=0.3)
    n_layers = len(history["initial_attention"])
    ax.set_title(
        title if title is not None else f"layer {layer % n_layers + 1}", fontsize=9
    )
    return ax.figure


def plot_trajectories_per_layer(
    history: dict,
    kernel_size: int = 3,
    panel_size: float = 3.6,
    suptitle: Optional[str] = None,
):
    """:func:`plot_center_trajectories` for every layer with heads, side by side, on common axes."""
    import matplotlib.pyplot as plt

    layers = [i for i, r in enumerate(history["initial_attention"]) if "centers" in r]
    if not layers:
        raise ValueError("no layer has head centres")
    lim = max(
        kernel_size // 2 + 1.0,
        max(float(np.abs(center_trajectories(history, i)).max()) for i in layers) + 0.5,
    )
    ncols = min(len(layers), 3)
    nrows = math.ceil(len(layers) / ncols)
    panel = min(panel_size, COLUMN_INCHES / ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(panel * ncols, panel * nrows + 0.4), squeeze=False
    )
    for ax in axes.flat[len(layers) :]:
        ax.axis("off")
    for ax, i in zip(axes.flat, layers):
        plot_center_trajectories(history, i, ax=ax, kernel_size=kernel_size, lim=lim)
    if suptitle:
        fig.suptitle(suptitle, fontsize=10)
    fig.tight_layout()
    return fig


def _contour_axes(records, ncols: int, panel_size: float, n_panels: int = 0):
    """The figure and its grid of ``n_panels`` panels (default one per record), with room below
    for the legend's rows."""
    import matplotlib.pyplot as plt

    nrows = math.ceil((n_panels or len(records)) / ncols)
    legend_rows = math.ceil((max(len(r.get("centers", [])) for r in records) + 2) / 6)
    panel_size = min(panel_size, (COLUMN_INCHES - 0.4) / ncols)
    return plt.subplots(
        nrows,
        ncols,
        figsize=(COLUMN_INCHES - 0.4, panel_size * nrows + 0.3 * legend_rows + 0.5),
        squeeze=False,
        layout="constrained",
    )


def _draw_heads(
    ax,
    centers,
    inverse,
    query,
    masses,
    degenerate,
    hide_uniform,
    extent,
    clip_size,
    subset=None,
) -> int:
    """Each head's mass ellipses and centre on ``ax`` (only the heads in ``subset`` when given,
    each in its own colour); returns how many wide heads were hidden."""
    hidden = 0
    for k, c in enumerate(_head_colors(len(centers))):
        if subset is not None and k not in subset:
            continue
        if k in degenerate:
            styles = ("dotted",) * len(masses)
            draw_mass_ellipses(
                ax,
                centers[k],
                inverse[k],
                query,
                masses,
                "black",
                styles,
                clip_size=clip_size,
            )
            x, y = query[1] + centers[k, 1], query[0] + centers[k, 0]
            ax.plot(x, y, "x", color="black", ms=5, mew=1.5)
            continue
        width, height, _ = mass_ellipse(inverse[k], masses[0])
        if hide_uniform and not max(width, height) <= extent:
            hidden += 1
            continue
        draw_mass_ellipses(ax, centers[k], inverse[k], query, masses, color=c)
        ax.plot(
            query[1] + centers[k, 1],
            query[0] + centers[k, 0],
            "x",
            color=c,
            ms=5,
            mew=1.5,
        )
    return hidden


def _contour_panel(
    ax, i: int, rec, grid, query, masses, hide_uniform, extent, degenerate, subset=None
) -> int:
    """Panel of layer i (of its heads in ``subset`` when given): the heads' ellipses, the query
    token; returns the layer's number of heads."""
    from matplotlib.patches import Rectangle

    h, w = grid
    ax.set_xlim(-0.5, w - 0.5)
    ax.set_ylim(h - 0.5, -0.5)
    ax.set_aspect("equal")
    name = f"layer {i + 1}"
    if subset is not None:
        name += f", heads {subset.start + 1}–{subset.stop}"
    ax.set_title(name, fontsize=8.5)
    if "centers" not in rec:
        return 0
    centers = np.asarray(rec["centers"], dtype=np.float64).reshape(-1, 2)
    inverse = np.asarray(rec["inverse_covariance"], dtype=np.float64).reshape(-1, 2, 2)
    hidden = _draw_heads(
        ax,
        centers,
        inverse,
        query,
        masses,
        degenerate.get(i, ()),
        hide_uniform,
        extent,
        4.0 * max(h, w),
        subset,
    )
    if hidden:
        ax.set_title(
            f"{name}\n{hidden} wide head{'s' if hidden > 1 else ''} not drawn",
            fontsize=8.5,
        )
    ax.add_patch(
        Rectangle(
            (query[1] - 0.5, query[0] - 0.5),
            1,
            1,
            fill=True,
            fc="red",
            alpha=0.35,
            ec="red",
        )
    )
    return len(centers)


def _contour_legend(fig, num_heads: int, masses, degenerate) -> None:
    """One legend below the panels: the heads (from 1), the masses, degenerate heads."""
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], color=c, marker="x", lw=1.2, label=f"head {k + 1}")
        for k, c in enumerate(_head_colors(num_heads))
    ]
    styles = ("-", "--")
    handles += [
        Line2D([], [], color="gray", ls=ls, label=f"{m:.0%} mass")
        for m, ls in zip(masses, styles)
    ]
    if any(degenerate.values()):
        handles.append(Line2D([], [], color="black", ls=":", label="degenerate"))
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncol=min(6, len(handles)),
        fontsize=8.5,
        frameon=False,
        columnspacing=1.0,
        handlelength=1.6,
    )


def plot_layer_contours(
    history: dict,
    grid: Sequence[int],
    query: Optional[Sequence[int]] = None,
    masses: Sequence[float] = (0.5, 0.9),
    epoch: int = -1,
    panel_size: float = 2.5,
    suptitle: Optional[str] = None,
    hide_uniform: bool = True,
    ncols: int = 3,
    max_extent: Optional[float] = None,
    degenerate: Optional[Mapping[int, Sequence[int]]] = None,
    heads_per_panel: Optional[int] = None,
):
    """Fig. 3 as the paper draws it: one panel per layer; each head (one colour a head, numbered
    from 1 in the legend) as the ellipses holding 50 % (solid) and 90 % (dashed) of its Gaussian's
    probability (:func:`attnconv.chapters.gaussian.draw_mass_ellipses`, token units, from the
    saved Δ_h and Σ_h⁻¹ at ``epoch``: -1 the last, 0 the initialisation), around the query token
    (red square), with the centre marked (cross). With ``hide_uniform``, heads whose 50 % ellipse
    is wider than ``max_extent`` tokens (default: the grid; nearly uniform attention) are not
    drawn; the panel title counts them. Heads in ``degenerate`` ({layer: [heads]}, 0-based) are
    drawn black and dotted whatever their size, clipped to the panel (a head attending along a line
    shows as a thin stripe), with a legend entry of their own. The legend sits below the panels.
    With ``heads_per_panel``, each layer is drawn over several panels of that many heads (in
    order, each head keeping its colour), so that many heads do not hide one another."""
    records = layer_records(history, epoch)
    h, w = (int(s) for s in grid)
    query = (h // 2, w // 2) if query is None else tuple(query)
    extent = float(max(h, w)) if max_extent is None else float(max_extent)
    degenerate = {int(k): [int(x) for x in v] for k, v in (degenerate or {}).items()}
    panels = []  # (layer, subset of its heads or None)
    for i, rec in enumerate(records):
        count = len(rec.get("centers", []))
        if heads_per_panel and count > heads_per_panel:
            panels += [
                (i, range(a, min(a + heads_per_panel, count)))
                for a in range(0, count, heads_per_panel)
            ]
        else:
            panels.append((i, None))
    n = len(panels)
    ncols = min(n, ncols)
    fig, axes = _contour_axes(records, ncols, panel_size, n)
    num_heads = 0
    for k, ax in enumerate(axes.flat):
        ax.set_xticks([]), ax.set_yticks([])
        if k >= n:
            ax.axis("off")
            continue
        i, subset = panels[k]
        heads = _contour_panel(
            ax,
            i,
            records[i],
            (h, w),
            query,
            masses,
            hide_uniform,
            extent,
            degenerate,
            subset,
        )
        num_heads = max(num_heads, heads)
    _contour_legend(fig, num_heads, masses, degenerate)
    if suptitle:
        fig.suptitle(suptitle, fontsize=9)
    return fig


#: The space between two layers' blocks in :func:`plot_head_grid` (inches), a grey rule across it.
GAP = 0.15


#: The sizes (points) of the query token's square and the head centre's cross in
#: :func:`plot_head_grid`: at the book's 108 px per inch, 7.5 and 9 px on the page.
QUERY_MARKER_PT = 5.0
CENTRE_MARKER_PT = 6.0
#: The disc on the key of a head on one key (``one_key``): 12 px, wider than the cross.
ONE_KEY_MARKER_PT = 8.0


def _head_panel(
    ax, center, inverse, grid, query, masses, colour, key=None, window=None
) -> bool:
    """One head's panel of :func:`plot_head_grid`: the query token (red square), the head's mass
    ellipses and centre (cross) on the whole token grid, "wide" when the 50 % ellipse is wider than
    the grid in every direction; ``key`` (row, column), when given, is the key the head puts most
    of its attention on, drawn as a filled disc of a fixed size that a one-token head's specks
    cannot hide (in a close-up of ``window`` tokens, as that token shaded). Returns whether the
    head is marked "wide"."""
    from matplotlib.colors import to_rgb
    from matplotlib.patches import Rectangle

    h, w = grid
    if key is not None and window is None:
        ax.plot(  # on top of the ellipses, outlined in black: seen at the page's size
            key[1], key[0], "o", mfc=(*to_rgb(colour), 0.55), mec="black", mew=1.0,
            ms=ONE_KEY_MARKER_PT, zorder=3,
        )  # fmt: skip
    elif key is not None:
        ax.add_patch(
            Rectangle(  # on top of the ellipses, outlined: a small head cannot hide it
                (key[1] - 0.5, key[0] - 0.5),
                1,
                1,
                fc=(*to_rgb(colour), 0.55),
                ec="black",
                lw=1.2,
                zorder=4,
            )  # fmt: skip
        )
    if window is None:
        ax.set_xlim(-0.5, w - 0.5), ax.set_ylim(h - 0.5, -0.5)
    else:  # the (2 window + 1)² tokens around the query, a grey line between two tokens
        r = window + 0.5
        ax.set_xlim(query[1] - r, query[1] + r), ax.set_ylim(query[0] + r, query[0] - r)
        for e in np.arange(-window - 0.5, window + 1.0):
            ax.axvline(query[1] + e, color="0.88", lw=0.5, zorder=0)
            ax.axhline(query[0] + e, color="0.88", lw=0.5, zorder=0)
    ax.set_aspect("equal")
    draw_mass_ellipses(
        ax, center, inverse, query, masses, colour, clip_size=4.0 * max(h, w)
    )
    # the query token and the centre as markers of a fixed size (QUERY_MARKER_PT,
    # CENTRE_MARKER_PT; about 7.5 and 9 px on the page): one token of a 16×16 grid was a 4 px
    # square in a panel about 70 px wide; the cross is thin, so a small head's ellipses show
    ax.plot(
        query[1],
        query[0],
        "s",
        color="red",
        alpha=0.5,
        ms=QUERY_MARKER_PT,
        mew=0,
        zorder=1,
    )
    ax.plot(
        query[1] + center[1],
        query[0] + center[0],
        "x",
        color=colour,
        ms=CENTRE_MARKER_PT,
        mew=1.0,
    )
    wide = not min(mass_ellipse(inverse, masses[0])[:2]) <= max(h, w)
    if wide:
        # the baseline a little higher: clear of a marked head's thick frame
        ax.text(0.5, 0.07, "wide", transform=ax.transAxes, ha="center", fontsize=9)
    return wide


def _one_key_keys(record, grid, query, threshold) -> list:
    """Per head of a layer record, the key (row, column) holding more than ``threshold`` of its
    attention for ``query``, else ``None`` (all ``None`` without a threshold)."""
    n = len(record["centers"])
    if threshold is None:
        return [None] * n
    maps = gaussian_head_maps(record, grid, query).reshape(n, -1)
    top, where = maps.max(dim=1)
    w = int(grid[1])
    return [
        (int(j) // w, int(j) % w) if float(t) > threshold else None
        for t, j in zip(top, where)
    ]


def _head_layers(records, layers=None) -> list:
    """The layers to draw: ``layers`` (0-based), by default every layer whose record holds head
    centres; a one-line ``ValueError`` names the layers with heads when one asked has none."""
    with_heads = [i for i, r in enumerate(records) if "centers" in r]
    layers = with_heads if layers is None else [int(i) for i in layers]
    if not layers or any(i not in with_heads for i in layers):
        raise ValueError(
            f"layers {layers} not among the layers with heads {with_heads}"
        )
    return layers


def _attention_share(mass: float) -> str:
    """A mass ellipse's legend entry: "50 % of its attention"."""
    return f"{100 * mass:g} % of its attention"


def _one_key_label(threshold: float) -> str:
    """The legend entry of a head's key drawn with ``one_key``: the glossary's words for the
    threshold ("on one key (> 50 %)", "nearly one-hot (> 90 %)"), else "key with > 70 %"."""
    words = {ONE_KEY: "on one key", ONE_HOT: "nearly one-hot"}.get(threshold)
    share = f"{100 * threshold:g} %"
    return f"{words} (> {share})" if words else f"key with > {share}"


def plot_head_grid(
    history: dict,
    grid: Sequence[int],
    model: str,
    layers: Optional[Sequence[int]] = None,
    heads_per_row: Optional[int] = None,
    query: Optional[Sequence[int]] = None,
    masses: Sequence[float] = (0.5, 0.9),
    epoch: int = -1,
    width: float = COLUMN_INCHES,
    marked: Optional[Mapping[int, Sequence[int]]] = None,
    marked_label: str = "degenerate",
    one_key: Optional[float] = None,
    window: Optional[int] = None,
):
    """The paper's Figs. 3, 7 and 10 (ICLR Figs. 12 and 14) as small multiples: one small panel
    per head, one row (or several of ``heads_per_row`` heads) per layer in ``layers`` (0-based;
    default all). Each panel shows the head's 50 % (solid) and 90 % (dashed) mass ellipses and
    its centre (cross) in the book's colour of ``model``, around the query token (red square), on
    the whole token grid: all panels share their limits. Heads whose 50 % ellipse is wider than
    the grid in every direction (nearly uniform) are marked "wide". A single layer is laid out
    square (3×3 for 9 heads, 4×4 for 16). Where a layer takes several rows, each layer is a block
    of its own (a subfigure), named once at its left and set apart from the next by a grey rule.
    ``marked`` (``{layer: [heads]}``, 0-based) frames those heads' panels in thick black, with
    ``marked_label`` in the legend. With ``one_key`` (a threshold, e.g.
    :data:`~attnconv.experiments.claims.ONE_KEY`), a head with more than that share of its
    attention on one key has that key drawn as a disc (its map: :func:`gaussian_head_maps`).
    With ``window`` (tokens), each panel shows only the (2 ``window`` + 1)² tokens around the
    query, with a grey line between two tokens: a close-up at one shared scale. The key under
    the panels names every mark drawn ("wide" too, when a panel carries it), so the figure reads
    without the text."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgb
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    records = layer_records(history, epoch)
    layers = _head_layers(records, layers)
    h, w = (int(s) for s in grid)
    query = (h // 2, w // 2) if query is None else tuple(query)
    colour = model_colour(model)
    marked = {int(i): {int(k) for k in ks} for i, ks in (marked or {}).items()}
    heads = [len(records[i]["centers"]) for i in layers]
    n_heads = max(heads)
    if heads_per_row is None:
        heads_per_row = math.ceil(math.sqrt(n_heads)) if len(layers) == 1 else n_heads
    per_layer = math.ceil(n_heads / heads_per_row)
    nrows, ncols = per_layer * len(layers), heads_per_row
    blocks = per_layer > 1 and len(layers) > 1  # a block (subfigure) per layer
    label_w = 0.0 if len(layers) == 1 else 0.3
    panel = min(1.6, (width - label_w) / ncols)
    if blocks:  # rows of panels with their titles, a gap between layers, the legend
        height = nrows * (panel + 0.12) + GAP * (len(layers) - 1) + 0.6
    else:
        height = panel * nrows + 0.25 * per_layer + 0.5
    fig = plt.figure(figsize=(panel * ncols + label_w, height), layout="constrained")
    fig.get_layout_engine().set(w_pad=0.01, h_pad=0.01, wspace=0.02, hspace=0.02)
    if blocks:  # a subfigure per layer, a thin one between two layers for the rule
        block = per_layer * (panel + 0.12)
        ratios = [block, GAP] * (len(layers) - 1) + [block]
        subs = fig.subfigures(len(ratios), 1, height_ratios=ratios)
        parts = list(subs[::2])
        for between in subs[1::2]:
            between.add_artist(Line2D([0, 1], [0.5, 0.5], color="0.7", lw=0.8))
        layer_axes = [part.subplots(per_layer, ncols, squeeze=False) for part in parts]
    else:
        axes = fig.subplots(nrows, ncols, squeeze=False)
        layer_axes = [
            axes[r * per_layer : (r + 1) * per_layer] for r in range(len(layers))
        ]
    any_wide = False  # a head marked "wide": the legend then says what the word means
    for row, i in enumerate(layers):
        centers = np.asarray(records[i]["centers"], dtype=np.float64).reshape(-1, 2)
        inverse = np.asarray(records[i]["inverse_covariance"], dtype=np.float64)
        inverse = inverse.reshape(-1, 2, 2)
        keys = _one_key_keys(records[i], (h, w), query, one_key)
        for k in range(per_layer * heads_per_row):
            ax = layer_axes[row][k // heads_per_row, k % heads_per_row]
            ax.set_xticks([]), ax.set_yticks([])
            if k >= len(centers):
                ax.axis("off")
                continue
            any_wide |= _head_panel(
                ax,
                centers[k],
                inverse[k],
                (h, w),
                query,
                masses,
                colour,
                keys[k],
                window,
            )
            if row == 0 or per_layer > 1:
                # clear of a marked head's thick frame
                ax.set_title(f"head {k + 1}", fontsize=9, pad=4 if marked else 2)
            if k % heads_per_row == 0 and len(layers) > 1 and not blocks:
                ax.set_ylabel(f"layer {i + 1}", fontsize=9)
            if k in marked.get(i, ()):
                for spine in ax.spines.values():
                    spine.set(color="black", linewidth=2.5)
        if blocks:
            parts[row].supylabel(f"layer {i + 1}", fontsize=9.5, fontweight="bold")
    handles = [
        Line2D([], [], color=colour, ls="-", label=_attention_share(masses[0])),
        Line2D([], [], color=colour, ls="--", label=_attention_share(masses[1])),
        Line2D([], [], color=colour, marker="x", ls="", label="head centre"),
        Line2D(
            [],
            [],
            color="red",
            alpha=0.5,
            marker="s",
            mew=0,
            ls="",
            label="query token",
        ),
    ]
    if one_key is not None:
        handles.append(
            Line2D(
                [],
                [],
                marker="o" if window is None else "s",
                mfc=(*to_rgb(colour), 0.55),
                mec="black",
                mew=1.0 if window is None else 1.2,
                ls="",
                label=_one_key_label(one_key),
            )  # fmt: skip
        )
    if any_wide:
        handles.append(Line2D([], [], ls="", label="wide: wider than the grid"))
    if any(marked.get(i) for i in layers):
        handles.append(
            Rectangle((0, 0), 1, 1, fc="none", ec="black", lw=2.5, label=marked_label)
        )
    fig.legend(
        handles=handles,
        loc="outside lower center",
        # at most three a row: one row of five was wider than the column
        ncol=len(handles) if len(handles) <= 3 else math.ceil(len(handles) / 2),
        fontsize=9,
        frameon=False,
        title=f"{model}, {h}×{w} tokens"
        + ("" if window is None else f"; close-up: {2 * window + 1}×{2 * window + 1}"),
        title_fontsize=9,
    )
    return fig


#: The size (points) of a head's centre mark in :func:`plot_layer_heads` (6 px on the page).
LAYER_CENTRE_PT = 4.0


def _ellipse_half_extent(width: float, height: float, angle: float) -> tuple:
    """Half the width and half the height of the box around an ellipse of full axes ``width``
    and ``height``, its first axis at ``angle`` degrees from the x axis."""
    t = math.radians(angle)
    a, b = width / 2, height / 2
    half_x = math.hypot(a * math.cos(t), b * math.sin(t))
    half_y = math.hypot(a * math.sin(t), b * math.cos(t))
    return half_x, half_y


def _layer_heads(record: dict, grid: Sequence[int], query: Sequence[int]):
    """One layer's heads as :func:`plot_layer_heads` draws them and :func:`layer_heads_hover`
    describes them: their centres (n × 2), their maps (:func:`gaussian_head_maps`) and which
    are nearly uniform (not drawn: within :data:`~attnconv.chapters.shared.depth_measures.
    NEAR_UNIFORM_TV` of the uniform map)."""
    centers = np.asarray(record["centers"], dtype=np.float64).reshape(-1, 2)
    maps = gaussian_head_maps(record, grid, query)
    uniform = (distance_to_uniform(maps) < NEAR_UNIFORM_TV).tolist()
    return centers, maps, uniform


def plot_layer_heads(
    history: dict,
    grid: Sequence[int],
    layers: Optional[Sequence[int]] = None,
    query: Optional[Sequence[int]] = None,
    mass: float = 0.5,
    one_key: Optional[float] = None,
    epoch: int = -1,
    width: float = COLUMN_INCHES,
    window: Optional[int] = None,
    ncols: Optional[int] = None,
):
    """The paper's Fig. 3 (ICLR Fig. 4) as the paper draws it: one panel per layer in ``layers``
    (0-based; default all), ``ncols`` to a row (default: one row of up to four panels, else rows
    of three, so that six layers get panels twice as wide), with all the layer's heads overlaid, one colour per head
    (the palette of :func:`plot_center_trajectories`). Each head is its ``mass`` ellipse (filled
    lightly) and its centre (a dot), around the query token (red square). Every panel spans the
    whole token grid, in shifts from the query (tokens; rows down), so distances compare across
    layers; all panels widen alike to hold every ellipse no longer than the grid (up to a
    quarter of the grid beyond its edges), so that such an ellipse is not cut at a panel's edge. A nearly uniform head (its map within total-variation distance
    :data:`~attnconv.chapters.shared.depth_measures.NEAR_UNIFORM_TV` of the uniform map) is not
    drawn: a note in the panel's corner counts such heads. Under each layer's name, its attention
    distance: E‖k − q‖ under each head's map (:func:`gaussian_head_maps`), averaged over the
    layer's heads. With ``one_key``, the key holding more than that share of a head's attention is
    drawn as a disc in the head's colour, outlined in black, and a key that several heads hold
    carries their number ("×3"). With ``window``, each panel shows only the shifts within
    ``window`` tokens of the query, a close-up at one scale for every panel. The key under the
    panels names every mark drawn (the glossary's words for ``one_key``; "×n" and "n uniform"
    when a panel carries them), in a second row when it holds more than four entries."""
    from collections import Counter

    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgb
    from matplotlib.lines import Line2D
    from matplotlib.patches import Ellipse, Rectangle

    records = layer_records(history, epoch)
    layers = _head_layers(records, layers)
    h, w = (int(s) for s in grid)
    query = (h // 2, w // 2) if query is None else tuple(int(q) for q in query)
    ncols = ncols or (len(layers) if len(layers) <= 4 else 3)
    nrows = -(-len(layers) // ncols)
    panel = width / ncols
    fig, grid_axes = plt.subplots(
        nrows,
        ncols,
        figsize=(width, nrows * (panel + 0.4) + 0.35),
        squeeze=False,
        sharex=True,
        sharey=True,
        layout="constrained",
    )
    fig.get_layout_engine().set(w_pad=0.01, h_pad=0.02, wspace=0.0)
    for ax in grid_axes.flat[len(layers) :]:  # a last row with fewer layers
        ax.set_axis_off()
    axes = grid_axes.reshape(1, -1)[:, : len(layers)]
    swap = np.array([[0, 1], [1, 0]])  # (row, column) -> (x = column, y = row)
    rows = (-query[0] - 0.5, h - query[0] - 0.5)
    cols = (-query[1] - 0.5, w - query[1] - 0.5)
    if (
        window is not None
    ):  # a close-up: the shifts within ``window`` tokens of the query
        rows = cols = (-window - 0.5, window + 0.5)
    shared = any_uniform = False
    reach = [list(rows), list(cols)]  # the limits: the grid and every ellipse drawn
    for ax, i in zip(axes[0], layers):
        record = records[i]
        centers, maps, uniform = _layer_heads(record, (h, w), query)
        inverse = np.asarray(record["inverse_covariance"], dtype=np.float64)
        inverse = inverse.reshape(-1, 2, 2)
        distance = float(mean_attention_distance(maps, query).mean())
        keys = _one_key_keys(record, (h, w), query, one_key)
        ax.add_patch(
            Rectangle((-0.5, -0.5), 1, 1, fill=False, ec="black", lw=1.4, zorder=4)
        )
        for k, colour in enumerate(_head_colors(len(centers))):
            if uniform[k]:
                continue
            width_k, height_k, angle = mass_ellipse(swap @ inverse[k] @ swap, mass)
            x, y = centers[k, 1], centers[k, 0]
            width_k = min(width_k, 4.0 * max(h, w))
            height_k = min(height_k, 4.0 * max(h, w))
            if window is None and max(width_k, height_k) <= max(h, w):
                # the whole grid: widen the panels to hold an ellipse no longer than it
                half_x, half_y = _ellipse_half_extent(width_k, height_k, angle)
                reach[0] = [min(reach[0][0], y - half_y), max(reach[0][1], y + half_y)]
                reach[1] = [min(reach[1][0], x - half_x), max(reach[1][1], x + half_x)]
            for fill in (True, False):  # a light fill under a full outline
                ax.add_patch(
                    Ellipse(
                        (x, y),
                        width_k,
                        height_k,
                        angle=angle,
                        fill=fill,
                        fc=(*to_rgb(colour), 0.15) if fill else "none",
                        ec="none" if fill else colour,
                        lw=1.1,
                        zorder=2,
                    )
                )
            ax.plot(x, y, "o", color=colour, ms=LAYER_CENTRE_PT, mew=0, zorder=3)
            if keys[k] is not None:
                ax.plot(
                    keys[k][1] - query[1], keys[k][0] - query[0], "o",
                    mfc="none", mec="black", mew=1.0, ms=ONE_KEY_MARKER_PT, zorder=5,
                )  # fmt: skip
        held = Counter(tuple(key) for key in keys if key is not None)
        for (r, c), n in sorted(held.items()):
            if n > 1:  # several heads on one key: their number, up and right of it
                shared = True
                ax.text(
                    c - query[1] + 0.45, r - query[0] - 0.45, f"×{n}", fontsize=8.5,
                    ha="left", va="bottom", zorder=6,
                )  # fmt: skip
        if any(uniform):
            any_uniform = True
            ax.text(
                0.04, 0.03, f"{sum(uniform)} uniform", transform=ax.transAxes,
                fontsize=8.5, ha="left", va="bottom",
            )  # fmt: skip
        ax.set_aspect("equal")
        ax.set_title(f"layer {i + 1}\n{distance:.1f} tokens", fontsize=9)
        ax.grid(alpha=0.3, lw=0.6)
    if reach != [list(rows), list(cols)]:  # air round the widest ellipse, at most
        room = max(h, w) / 4  # a quarter of the grid beyond each of its edges
        reach = [
            [max(lo - 0.2, edge[0] - room), min(hi + 0.2, edge[1] + room)]
            for (lo, hi), edge in zip(reach, (rows, cols))
        ]
        side = max(
            hi - lo for lo, hi in reach
        )  # square panels: the shorter side widened
        reach = [
            [lo - (side - hi + lo) / 2, hi + (side - hi + lo) / 2] for lo, hi in reach
        ]
    for ax in axes[0]:  # one scale for every panel, holding every ellipse drawn
        ax.set_xlim(*reach[1]), ax.set_ylim(reach[0][1], reach[0][0])
    step = 4 if window is None or window > 4 else 1 if window <= 2 else 2
    ticks = [t for t in range(-8, 9, step) if cols[0] <= t <= cols[1]]
    axes[0, 0].set_xticks(ticks), axes[0, 0].set_yticks(ticks)
    for ax in axes[0, 1:]:  # the first panel's tick labels serve the figure
        ax.tick_params(labelbottom=False, labelleft=False, length=0)
    axes[0, 0].tick_params(length=2, pad=1, labelbottom=True, labelleft=True)
    handles = [
        Line2D([], [], color="black", marker="s", mfc="none", ms=7, ls="",
               label="query token"),
        Line2D([], [], color="0.3", marker="o", ms=LAYER_CENTRE_PT, mew=0, ls="",
               label="head centre"),
        Ellipse((0, 0), 1, 1, fc=(*to_rgb("0.3"), 0.15), ec="0.3", lw=1.1,
                label=_attention_share(mass)),
    ]  # fmt: skip
    if one_key is not None:
        handles.append(
            Line2D([], [], marker="o", mfc="none", mec="black", mew=1.0,
                   ms=ONE_KEY_MARKER_PT, ls="", label=_one_key_label(one_key))
        )  # fmt: skip
    if shared:
        handles.append(Line2D([], [], ls="", label="×n: heads on that key"))
    if any_uniform:
        handles.append(
            Line2D([], [], ls="", label="n uniform: near-uniform heads, not drawn")
        )
    fig.legend(
        handles=handles,
        loc="outside lower center",
        # one row of up to four; more in two rows, each within the column
        ncol=len(handles) if len(handles) <= 4 else math.ceil(len(handles) / 2),
        fontsize=8.5,
        frameon=False,
        handletextpad=0.4,
        columnspacing=1.2,
    )
    if (
        len(handles) > 4
    ):  # a second row of the key: room for it, not taken from the panels
        fig.set_size_inches(width, fig.get_size_inches()[1] + 0.2)
    return fig


def plot_accuracy_curves(
    runs: Mapping[str, Run], ax=None, key: str = "test_acc", title: Optional[str] = None
):
    """v1 Fig. 4 (ICLR Fig. 2): ``key`` (default the test accuracy) against the epoch for each
    labelled run; accuracies in percent (0-100)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(COLUMN_INCHES, 3.4))  # a result: the whole column
    percent = key.endswith("_acc")
    for label, run in runs.items():
        values = [100 * v for v in run.series(key)] if percent else run.series(key)
        colour = label_colour(label)
        # learned + content (olive) dashed: it is told from learned (green) by more than hue
        dashed = colour == label_colour("learned_content")
        ax.plot(
            range(1, len(values) + 1),
            values,
            label=label,
            color=colour,
            ls="--" if dashed else "-",
        )
    ax.set_xlabel("epoch")
    names = {
        "test_acc": "test accuracy (%)",
        "train_acc": "training accuracy (%)",
        "test_loss": "test loss",
        "train_loss": "training loss",
    }
    ax.set_ylabel(names.get(key, key.replace("_", " ")))
    ax.grid(alpha=0.3)
    # one legend, below the axes, outside the data
    ax.legend(
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16),
        ncol=min(4, len(runs)),
        frameon=False,
    )
    if title:
        ax.set_title(title, fontsize=9)
    return ax.figure


def layer_heads_hover(
    fig,
    history: dict,
    grid: Sequence[int],
    layers: Optional[Sequence[int]] = None,
    query: Optional[Sequence[int]] = None,
    epoch: int = -1,
):
    """Hover values for :func:`plot_layer_heads`'s ``fig`` (same ``history``, ``grid``,
    ``layers``, ``query`` and ``epoch``; :mod:`~attnconv.chapters.shared.hover_spots`): on each
    drawn head's centre, its layer and number, its centre in tokens from the query, its attention
    distance and the largest share of its attention on one key. Nearly uniform heads (not drawn)
    and centres outside their panel get no spot. Returns the cell output to show under the
    figure."""
    from .hover_spots import HoverPoint, HoverSpots

    records = layer_records(history, epoch)
    layers = _head_layers(records, layers)
    h, w = (int(s) for s in grid)
    query = (h // 2, w // 2) if query is None else tuple(int(q) for q in query)
    points = []
    for ax, i in zip(fig.axes, layers):
        centers, maps, uniform = _layer_heads(records[i], (h, w), query)
        distances = mean_attention_distance(maps, query)
        peaks = np.asarray(maps, dtype=np.float64).reshape(len(centers), -1).max(axis=1)
        (x0, x1), (y1, y0) = ax.get_xlim(), ax.get_ylim()
        for k, (row, col) in enumerate(centers):
            if uniform[k] or not (x0 <= col <= x1 and y0 <= row <= y1):
                continue
            up, left = "up" if row < 0 else "down", "left" if col < 0 else "right"
            text = (
                f"layer {i + 1}, head {k + 1}\n"
                f"centre {abs(row):.1f} {up}, {abs(col):.1f} {left} of the query\n"
                f"attention distance {float(distances[k]):.1f} tokens\n"
                f"largest share on one key {float(peaks[k]):.2f}"
            )
            points.append(HoverPoint(ax, float(col), float(row), text))
    return HoverSpots(fig, points, "the figure's heads")
