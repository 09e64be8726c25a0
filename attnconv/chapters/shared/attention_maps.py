"""Every head's attention map of a trained run, per layer, for one query token.

* From the saved Gaussian parameters (quadratic eq. 9, generalized eq. 16) when the history holds
  them: :func:`layer_attention_maps` computes them in memory.
* Otherwise from the attention maps saved from the trained weights
  (:mod:`attnconv.experiments.studies_maps`, made by ``python -m attnconv.regenerate``):
  :func:`run_attention_maps` reads them, never computing or writing.
* :func:`plot_layer_head_maps` draws them, one row per layer and one column per head;
  :func:`format_variation` prints how much each head's map varies between images.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import torch

from ...experiments.checkpoints import Run
from ...experiments.studies_maps import (
    run_attention_maps,
)
from .gaussian_maps import draw_mass_contours, gaussian_head_maps
from .plotting import COLUMN_INCHES
from .saved_runs import tokens_per_side
from .tables import fit_column, pack_items
from .trained_heads import layer_records

__all__ = [
    "format_variation",
    "layer_attention_maps",
    "plot_layer_head_maps",
    "shared_scale_ticks",
]


def format_variation(
    name: str, variation: Sequence[Optional[torch.Tensor]], threshold: float = 0.05
) -> str:
    """One line per layer from the ``variation`` of :func:`attention_map_statistics`: every head's
    mean total-variation distance to its average map (2 decimals) and how many exceed
    ``threshold`` (layers numbered from 1)."""
    lines = []
    for i, v in enumerate(variation):
        if v is None:
            continue
        values = [f"{float(x):.2f}" for x in v]
        lines.append(
            pack_items(
                f"{name}, layer {i + 1}: above {threshold:g} in {int((v > threshold).sum())} of {len(v)} heads; "
                "per head: ",
                values,
            )
        )
    return fit_column("\n".join(lines))


def layer_attention_maps(
    run: Run,
    query: Optional[Sequence[int]] = None,
    num_images: int = 100,
    epoch: int = -1,
) -> Optional[List[Optional[torch.Tensor]]]:
    """The attention maps ``(N_h, H', W')`` of every layer of ``run`` for one query token (default:
    the centre token) after ``epoch`` (-1: the last, 0: the initialisation): from the saved
    Gaussian parameters (:func:`gaussian_head_maps`) for the quadratic and generalized encodings,
    else from :func:`run_attention_maps` (last epoch and centre query only). ``None`` if they
    cannot be had."""
    mc = run.history.get("model_config", {})
    if mc.get("kind") == "resnet":
        raise ValueError("ResNet18 has no attention maps")
    g = tokens_per_side(run.history)
    centre = (g // 2, g // 2)
    query = centre if query is None else (int(query[0]), int(query[1]))
    records = (
        layer_records(run.history, epoch)
        if run.epochs or epoch == 0
        else run.history["initial_attention"]
    )
    with_heads = [r for r in records if "centers" in r]
    if (
        with_heads
        and not mc.get("content", False)
        and all("inverse_covariance" in r for r in with_heads)
    ):
        return [
            gaussian_head_maps(r, (g, g), query) if "inverse_covariance" in r else None
            for r in records
        ]
    if query != centre:
        raise ValueError("saved attention maps exist for the centre query only")
    if epoch not in (-1, len(run.epochs)):
        return None
    d = run_attention_maps(run, num_images)
    return None if d is None else d["layers"]


def shared_scale_ticks(vmin: float, vmax: float):
    """The ticks of :func:`plot_layer_head_maps`' shared colour bar from ``vmin`` (the uniform
    head's probability 1/n, labelled as that fraction) to ``vmax``: 1, 2 and 5 times the powers
    of ten between them, at most one every third of a decade apart from ``vmin``. Returns
    ``(values, labels)``; labels read as plain numbers (0.01, 0.2)."""
    import math

    n = round(1.0 / vmin)
    values, labels = [vmin], [f"1/{n}" if abs(n * vmin - 1) < 1e-9 else f"{vmin:.2g}"]
    for e in range(math.floor(math.log10(vmin)), math.ceil(math.log10(vmax)) + 1):
        for m in (1, 2, 5):
            v = m * 10.0**e
            if v <= vmax * (1 + 1e-9) and math.log10(v / values[-1]) >= 0.3:
                values.append(v)
                labels.append(f"{v:.{max(0, -e)}f}")
    return values, labels


def plot_layer_head_maps(
    maps: Sequence[Optional[torch.Tensor]],
    query: Sequence[int],
    suptitle: Optional[str] = None,
    panel_size: float = 1.25,
    cmap: str = "Blues",
    contours: bool = False,
    masses: Sequence[float] = (0.5, 0.9),
    vmax_floor: float = 0.05,
    heads_per_row: Optional[int] = None,
    shared_scale: bool = False,
    layers: Optional[Sequence[int]] = None,
    peak_marks: Sequence[float] = (),
):
    """v1 Fig. 6 (ICLR Figs. 5 and 6): a grid of attention maps, one row per layer and one column per head, each with the
    query token marked by a red square; each panel has its own colour scale from 0 to
    max(its largest probability, ``vmax_floor``), so that a nearly uniform head shows pale.
    With ``contours``, the outlines of each head's 50 % (solid) and 90 % (dashed) probability-mass
    regions (:func:`attnconv.chapters.gaussian.draw_mass_contours`) are drawn too.
    ``heads_per_row`` wraps a layer's heads over several rows (e.g. 8 for 16 heads: two rows
    per layer, each panel twice as wide as in one row of 16), every panel titled with its head.

    With ``shared_scale``, every panel shares one logarithmic colour scale instead, from the
    uniform head's probability (1 over the number of tokens: the palest colour, as is anything below it) to
    the largest probability of all panels (at least ``vmax_floor``), and a labelled colour bar
    under the grid reads it (:func:`shared_scale_ticks`): a head that attends a tenth as sharply as
    another still shows, and a nearly uniform head shows palest.

    ``layers`` (0-based indices into ``maps``) draws only those layers, each still named by its
    own number, on the colour scale of all of ``maps``: a figure split in two (layers 1-2, then
    3-6) reads on one scale.

    ``peak_marks`` (thresholds, e.g. ``(0.5, 0.9)``) frames every head whose largest
    probability on one key is above the lowest of them, the frame thicker and darker above
    each higher one, and puts each layer's largest probability under its label ("max 0.31").
    The figure's ``marked_heads`` then maps each threshold to the (layer, head) pairs above it,
    both numbered from 1, as drawn."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm
    from matplotlib.patches import Rectangle

    if not maps:
        raise ValueError("no maps to draw")
    every = list(maps)  # the colour scale's maps
    numbers = list(range(len(every))) if layers is None else [int(i) for i in layers]
    if not numbers or any(not 0 <= i < len(every) for i in numbers):
        raise ValueError(f"layers {layers} not among the {len(every)} layers")
    maps = [every[i] for i in numbers]
    n_heads = max((m.shape[0] for m in maps if m is not None), default=0)
    if n_heads == 0:
        raise ValueError("no layer has heads")
    ncols = min(n_heads, heads_per_row or n_heads)
    rows_per_layer = -(-n_heads // ncols)
    wrapped = rows_per_layer > 1
    panel = min(
        panel_size, (COLUMN_INCHES - 0.3) / ncols
    )  # never wider than the book's column
    fig, axes = plt.subplots(
        len(maps) * rows_per_layer,
        ncols,
        figsize=(
            panel * ncols + 0.3,
            (panel + (0.15 if wrapped else 0)) * len(maps) * rows_per_layer
            + 0.5
            + (0.65 if shared_scale else 0),  # the colour bar and its label
        ),
        squeeze=False,
        layout="constrained",
    )
    fig.get_layout_engine().set(w_pad=0.01, h_pad=0.01, wspace=0.02, hspace=0.02)
    for ax in axes[:, n_heads % ncols or ncols :][
        rows_per_layer - 1 :: rows_per_layer
    ].flat:
        ax.axis("off")  # the empty places of a layer's last row
    norm = None
    if shared_scale:
        drawn = [m for m in every if m is not None and m.numel()]
        uniform = 1.0 / (drawn[0].shape[-2] * drawn[0].shape[-1])
        top = max(float(m.max()) for m in drawn)
        norm = LogNorm(vmin=uniform, vmax=max(top, vmax_floor, 2 * uniform), clip=True)
    image = None
    marks = sorted(float(t) for t in peak_marks)
    frames = ["darkorange", "crimson", "black"]
    fig.marked_heads = {t: [] for t in marks}
    for i, layer_maps in enumerate(maps):
        for h in range(n_heads):
            ax = axes[i * rows_per_layer + h // ncols, h % ncols]
            ax.set_xticks([]), ax.set_yticks([])
            if layer_maps is None or h >= layer_maps.shape[0]:
                ax.axis("off")
                continue
            m = layer_maps[h].double().numpy()
            if norm is not None:
                image = ax.imshow(m, cmap=cmap, norm=norm)
            else:
                ax.imshow(
                    m, cmap=cmap, vmin=0, vmax=max(float(m.max()), vmax_floor, 1e-12)
                )
            if contours:
                draw_mass_contours(
                    ax, layer_maps[h], masses, color="darkorange", linewidth=1.0
                )
            ax.add_patch(
                Rectangle(
                    (query[1] - 0.5, query[0] - 0.5), 1, 1, fill=False, ec="red", lw=1.2
                )
            )
            above = [j for j, t in enumerate(marks) if float(m.max()) > t]
            for j in above:
                fig.marked_heads[marks[j]].append((numbers[i] + 1, h + 1))
            if above:
                for spine in ax.spines.values():
                    spine.set(
                        edgecolor=frames[min(above[-1], len(frames) - 1)],
                        linewidth=1.5 + 1.0 * above[-1],
                    )
            if wrapped:
                ax.set_title(f"head {h + 1}", fontsize=9, pad=2)
            elif i == 0:
                ax.set_title(
                    f"head {h + 1}" if n_heads <= 9 or h == 0 else f"{h + 1}",
                    fontsize=9,
                )
            if h % ncols == 0:
                label = f"layer {numbers[i] + 1}" if h == 0 or not wrapped else ""
                if marks and label and layer_maps is not None:
                    label += f"\nmax {float(layer_maps.max()):.2f}"
                ax.set_ylabel(label, fontsize=9)
    if image is not None:
        bar = fig.colorbar(
            image,
            ax=axes,
            location="bottom",
            shrink=0.6,
            aspect=40,
            pad=0.02,
        )
        values, labels = shared_scale_ticks(norm.vmin, norm.vmax)
        bar.set_ticks(values, labels=labels)
        bar.minorticks_off()
        bar.set_label(
            "attention probability (log scale; palest: uniform or less)", fontsize=9
        )
        bar.ax.tick_params(labelsize=8.5)
    if suptitle:
        fig.suptitle(suptitle, fontsize=9)
    return fig
