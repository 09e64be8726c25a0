"""How convolutional is a trained self-attention layer? Three per-layer measures.

Lemma 1 and Theorem 1 say that a multi-head self-attention layer with N_h = K² heads is a K×K
convolution when head h attends (one-hot) to the shift Δ_h and the centres {Δ_h} are exactly the
K² shifts of the kernel, the lattice {−⌊K/2⌋, …, ⌊K/2⌋}². A trained layer can be compared with
that construction in three ways:

* :func:`lattice_distance` — per head, the distance of its centre Δ_h to the nearest lattice
  point (0 for every head of the Lemma-1 layer);
* :func:`lattice_coverage` — how many of the K² lattice points have a head centre within a radius
  (K² for the Lemma-1 layer: every kernel tap has its head);
* :func:`neighbourhood_mass` — per head, the attention probability that falls inside the K×K
  window around the query (1 for a one-hot head on a lattice point; a convolution reads nothing
  outside its window).

These compare with the 3×3 lattice only. Lemma 1 holds for any set of shifts, so a layer can be a
convolution with a larger or sparser kernel; two measures separate "one-hot at an integer shift"
from "inside the 3×3 window": :func:`~attnconv.core.lattice.integer_shift_distance` (distance of
each centre to the nearest shift of Z²) and the count of heads whose largest probability
(:func:`~attnconv.core.lattice.peak_probability`) exceeds 0.9, anywhere and inside the window.

:func:`layer_measures` combines them for one layer and :func:`run_measures` for every layer of a
saved training run (centres from its history, maps from :mod:`attnconv.chapters.shared.attention_maps`).
"""

from __future__ import annotations

from typing import List, Mapping, Optional, Sequence

import torch

from ..core.encodings import kernel_shifts
from ..core.lattice import (
    integer_shift_distance,
    lattice_coverage,
    lattice_distance,
    neighbourhood_mass,
    peak_probability,
    peak_shifts,
)
from ..experiments.claims import ONE_HOT, ONE_KEY
from .shared.attention_maps import layer_attention_maps
from .shared.plotting import COLUMN_INCHES, label_colour
from .shared.saved_runs import tokens_per_side
from .shared.tables import fit_column, pack_items
from .shared.trained_heads import layer_records

#: How close a head centre must be to a lattice point to cover it, in tokens (strictly less):
#: the lattice points are 1 apart, so no two points share a head (the *covered* measure).
COVER_RADIUS = 0.5

__all__ = [
    "locality_summary",
    "format_locality",
    "format_peaks",
    "layer_measures",
    "run_measures",
    "measures_rows",
    "reference_measures",
    "reference_list",
    "MEASURES_KEY",
    "COVER_RADIUS",
    "format_measures",
    "plot_measures",
    "plot_measures_dots",
]


def locality_summary(
    layers: Sequence,
    query: Sequence[int],
    kernel_size: int = 3,
    threshold: float = ONE_KEY,
) -> List[Optional[dict]]:
    """Per layer (maps ``(N_h, H, W)`` or ``None``): ``num_heads``, ``peaked`` (heads that give more
    than ``threshold`` of their attention to a single key, as a one-hot head of Lemma 1 does),
    ``mass_above`` (heads with more than ``threshold`` of their attention inside the K×K window,
    :func:`neighbourhood_mass`), ``peak_inside`` (heads whose most probable key lies in the window,
    :func:`peak_shifts`) and ``mean_mass``."""
    if not 0 <= threshold <= 1:
        raise ValueError("threshold must be in [0, 1]")
    r = kernel_size // 2
    out = []
    for m in layers:
        if m is None:
            out.append(None)
            continue
        mass = neighbourhood_mass(m, query, kernel_size)
        peaks = peak_shifts(m, query)
        peaked = int(
            (
                torch.as_tensor(m, dtype=torch.float64).flatten(1).max(dim=1).values
                > threshold
            ).sum()
        )
        out.append(
            {
                "num_heads": int(mass.numel()),
                "peaked": peaked,
                "mass_above": int((mass > threshold).sum()),
                "peak_inside": int((peaks.abs().max(dim=1).values <= r).sum()),
                "mean_mass": float(mass.mean()),
            }
        )
    return out


def format_locality(
    name: str,
    summary: Sequence[Optional[dict]],
    kernel_size: int = 3,
    threshold: float = ONE_KEY,
) -> str:
    """:func:`locality_summary` as one line per layer (layers numbered from 1)."""
    k = f"{kernel_size}×{kernel_size}"
    lines = []
    for i, s in enumerate(summary):
        if s is None:
            continue
        lines.append(
            f"{name}, layer {i + 1} ({s['num_heads']} heads): {s['peaked']} give > {threshold:.0%} to a single key; "
            f"{s['mass_above']} put > {threshold:.0%} in the {k} window; "
            f"{s['peak_inside']} have their most probable key in it"
        )
    return fit_column("\n".join(lines))


def format_peaks(name: str, layers: Sequence, query: Sequence[int]) -> str:
    """One line per layer (layers numbered from 1): for every head, the shift (row, column) of its
    most probable key (:func:`peak_shifts`) and that key's probability, to 2 decimals."""
    lines = []
    for i, m in enumerate(layers):
        if m is None:
            continue
        m = torch.as_tensor(m, dtype=torch.float64)
        shifts = peak_shifts(m, query)
        top = m.flatten(1).max(dim=1).values
        heads = [
            f"{h + 1}: ({int(a):+d},{int(b):+d}) {float(p):.2f}"
            for h, ((a, b), p) in enumerate(zip(shifts.tolist(), top))
        ]
        lines.append(
            pack_items(
                f"{name}, layer {i + 1}, head: (peak shift) probability — ", heads
            )
        )
    return fit_column("\n".join(lines))


def layer_measures(
    centers,
    maps=None,
    query: Optional[Sequence[int]] = None,
    kernel_size: int = 3,
    radius: float = COVER_RADIUS,
    one_hot_threshold: float = ONE_HOT,
) -> dict:
    """The measures of one layer: ``distances`` (per head, to the K×K lattice), ``mean_distance``,
    ``mean_integer_distance`` (to the nearest integer shift, any shift), ``coverage`` (of the K²
    lattice points) and, when ``maps`` ``(N_h, H, W)`` and ``query`` are given, ``masses`` (per
    head, in the K×K window) and ``mean_mass``, ``one_hot`` (heads whose largest probability
    exceeds ``one_hot_threshold``: one-hot at some integer shift) and ``one_hot_in_window`` (those
    whose key lies inside the K×K window); ``num_heads``."""
    d = lattice_distance(centers, kernel_size)
    di = integer_shift_distance(centers)
    out = {
        "num_heads": int(d.numel()),
        "distances": d,
        "mean_distance": float(d.mean()),
        "mean_integer_distance": float(di.mean()),
        "coverage": lattice_coverage(centers, kernel_size, radius),
    }
    if maps is not None:
        if query is None:
            raise ValueError("give the query token of the maps")
        m = neighbourhood_mass(maps, query, kernel_size)
        if m.numel() != d.numel():
            raise ValueError(f"{m.numel()} maps for {d.numel()} centres")
        out["masses"] = m
        out["mean_mass"] = float(m.mean())
        peak = peak_probability(maps)
        shifts = peak_shifts(maps, query)
        one_hot = peak > one_hot_threshold
        r = kernel_size // 2
        out["one_hot"] = int(one_hot.sum())
        out["one_hot_in_window"] = int((one_hot & (shifts.abs() <= r).all(1)).sum())
    return out


def run_measures(
    run, kernel_size: int = 3, radius: float = COVER_RADIUS, epoch: int = -1
) -> List[Optional[dict]]:
    """:func:`layer_measures` of every layer of a saved run after ``epoch`` (-1: the last, 0: the
    initialisation), for the centre query token: centres from the history (Gaussian centres Δ_h;
    for the learned encoding the mean shift of each head's position-only attention), maps from
    :func:`attnconv.chapters.shared.attention_maps.layer_attention_maps` (``masses`` absent if they cannot be
    had). ``None`` for a layer without heads."""

    mc = run.history.get("model_config", {})
    if mc.get("kind") == "resnet":
        raise ValueError("ResNet18 has no attention heads")
    g = tokens_per_side(run.history)
    query = (g // 2, g // 2)
    records = layer_records(run.history, epoch)
    maps = layer_attention_maps(run, query, epoch=epoch)
    out = []
    for i, rec in enumerate(records):
        if "centers" not in rec:
            out.append(None)
            continue
        layer_maps = None if maps is None else maps[i]
        out.append(
            layer_measures(
                rec["centers"],
                layer_maps,
                query if layer_maps is not None else None,
                kernel_size,
                radius,
            )
        )
    return out


def measures_rows(
    runs: Mapping[str, object],
    kernel_size: int = 3,
    radius: float = COVER_RADIUS,
    epoch: int = -1,
) -> List[dict]:
    """One row per (model, layer) of the labelled runs after ``epoch``: ``model``, ``layer``
    (0-based), ``num_heads``, ``mean_distance``, ``mean_integer_distance``, ``coverage``,
    ``mean_mass`` (NaN when no maps), ``one_hot`` and ``one_hot_in_window`` (None when no maps)."""
    rows = []
    for label, run in runs.items():
        for i, m in enumerate(run_measures(run, kernel_size, radius, epoch)):
            if m is None:
                continue
            rows.append(
                {
                    "model": label,
                    "layer": i,
                    "num_heads": m["num_heads"],
                    "mean_distance": m["mean_distance"],
                    "mean_integer_distance": m["mean_integer_distance"],
                    "coverage": m["coverage"],
                    "mean_mass": m.get("mean_mass", float("nan")),
                    "one_hot": m.get("one_hot"),
                    "one_hot_in_window": m.get("one_hot_in_window"),
                }
            )
    return rows


def reference_measures(
    grid: Sequence[int],
    kernel_size: int = 3,
    alpha: float = 10.0,
    radius: float = COVER_RADIUS,
) -> dict:
    """The measures of two reference layers on a ``grid`` of tokens, for the centre query:
    ``"theorem1"``, K² quadratic heads (eq. 9) centred on the lattice with width ``alpha`` (the
    layer of Theorem 1, one-hot as α → ∞), and ``"uniform"``, K² heads with α = 0 at the query
    (uniform attention over the grid)."""
    from ..core.encodings import QuadraticEncoding
    from .shared.gaussian_maps import head_attention_maps

    h, w = (int(s) for s in grid)
    query = (h // 2, w // 2)
    lattice = kernel_shifts(kernel_size, 2).to(torch.float64)
    out = {}
    for name, centers, a in (
        ("theorem1", lattice, alpha),
        ("uniform", torch.zeros_like(lattice), 0.0),
    ):
        enc = QuadraticEncoding(len(lattice), centers=centers, alpha=a).double()
        out[name] = layer_measures(
            centers, head_attention_maps(enc, (h, w), query), query, kernel_size, radius
        )
    return out


def reference_list(ref: Mapping[str, dict], kernel_size: int = 3) -> str:
    """The two layers of :func:`reference_measures` as a Markdown list, in words: each one's
    mean distance to the lattice, lattice points covered and mean mass in the K×K window."""
    k, k2 = f"{kernel_size}×{kernel_size}", kernel_size * kernel_size
    names = {"theorem1": "Theorem 1's layer", "uniform": "The uniform layer"}
    return "\n".join(
        f"- **{names.get(name, name)}**: mean distance to the lattice {m['mean_distance']:.2f} "
        f"tokens, {m['coverage']} of {k2} lattice points covered, {m['mean_mass']:.2f} of the "
        f"attention in the {k} window."
        for name, m in ref.items()
    )


def format_measures(rows: Sequence[dict], kernel_size: int = 3) -> str:
    """A Markdown table of :func:`measures_rows`, narrow enough for the book's column (distances
    and masses to 2 decimals; layers numbered from 1 as in the paper). Two kinds of
    "convolution-like": against the K×K lattice (distance, coverage, window mass, one-hot heads
    inside the window) and at any integer shift (distance to the nearest one, one-hot heads
    anywhere), since Lemma 1 holds for any set of shifts. The column ``one-hot`` reads "all
    (in K×K)"; :data:`MEASURES_KEY` names the columns."""
    k = f"{kernel_size}×{kernel_size}"
    k2 = kernel_size * kernel_size
    lines = [
        f"| model | layer | to lattice | to integer shift | covered | {k} mass | one-hot |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]

    def count(v):
        return "–" if v is None else str(v)

    for r in rows:
        lines.append(
            f"| {r['model']} | {r['layer'] + 1} | {r['mean_distance']:.2f} "
            f"| {r['mean_integer_distance']:.2f} | {r['coverage']} / {k2} "
            f"| {r['mean_mass']:.2f} "
            f"| {count(r['one_hot'])} ({count(r['one_hot_in_window'])}) |"
        )
    return "\n".join(lines)


#: What the columns of :func:`format_measures` are (for the text below its tables): a short
#: list, one column an item. Its thresholds are the constants the measures use
#: (:data:`COVER_RADIUS`, :data:`~attnconv.experiments.claims.ONE_HOT`), so the words cannot
#: drift from the numbers.
MEASURES_KEY = (
    "The columns:\n\n"
    "- *to lattice*: mean distance of the head centres to the 3×3 lattice, in tokens;\n"
    "- *to integer shift*: mean distance to the nearest integer shift, anywhere on the "
    "grid, in tokens;\n"
    f"- *covered*: lattice points with a head centre within {COVER_RADIUS:g} token;\n"
    "- *3×3 mass*: mean attention mass in the 3×3 window;\n"
    f"- *one-hot*: heads with more than {ONE_HOT:g} on one key; in brackets, those inside "
    "the 3×3 window."
)


def plot_measures(
    rows: Sequence[dict],
    kernel_size: int = 3,
    title: Optional[str] = None,
    before: Optional[Sequence[dict]] = None,
):
    """Three panels against the layer (numbered from 1), one line per model: mean distance to the lattice,
    lattice points covered, mean attention mass in the K×K window. Dotted lines: the values of
    the Lemma-1 convolution layer (0, K², 1). With ``before`` (rows at initialisation), each
    model's values there are drawn too, dashed with open markers in the model's colour."""
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(r["model"] for r in rows))
    fig, axes = plt.subplots(1, 3, figsize=(COLUMN_INCHES, 2.9), layout="constrained")
    k2 = kernel_size * kernel_size
    specs = [
        ("mean_distance", "mean distance to the lattice (tokens)", 0.0),
        ("coverage", f"lattice points covered (of {k2})", k2),
        (
            "mean_mass",
            f"mean attention mass in {kernel_size}×{kernel_size} window",
            1.0,
        ),
    ]
    for ax, (key, label, ideal) in zip(axes, specs):
        for name in models:
            pts = [(r["layer"], r[key]) for r in rows if r["model"] == name]
            (line,) = ax.plot(
                [p[0] + 1 for p in pts],
                [p[1] for p in pts],
                "o-",
                label=name,
                color=label_colour(name),
            )
            init = [(r["layer"], r[key]) for r in before or () if r["model"] == name]
            if init:
                ax.plot(
                    [p[0] + 1 for p in init],
                    [p[1] for p in init],
                    "o--",
                    color=line.get_color(),
                    mfc="white",
                    lw=1,
                )
        ax.axhline(ideal, color="gray", ls=":", lw=1)
        top = {"mean_distance": None, "coverage": k2 + 0.5, "mean_mass": 1.05}[key]
        ax.set_ylim(bottom=0, top=top)
        ax.set_xlabel("layer")
        ax.set_title(label.replace(" (", "\n("), fontsize=8.5)
        ax.grid(alpha=0.3)
        layers = sorted({r["layer"] + 1 for r in rows})
        ax.set_xticks(layers)
    handles, labels = axes[0].get_legend_handles_labels()
    if before:
        from matplotlib.lines import Line2D

        handles += [
            Line2D([], [], color="gray", marker="o", ls="-"),
            Line2D([], [], color="gray", marker="o", mfc="white", ls="--", lw=1),
        ]
        labels += ["after training", "at initialisation"]
    fig.legend(
        handles,
        labels,
        loc="outside lower center",
        ncol=min(3, len(labels)),
        frameon=False,
    )
    if title:
        fig.suptitle(title, fontsize=9)
    return fig


def plot_measures_dots(
    rows: Sequence[dict],
    kernel_size: int = 3,
    before: Optional[Sequence[dict]] = None,
):
    """:func:`plot_measures` for few layers (the 2-layer runs) as a labelled dot plot: one row per
    layer and model (model names in the model's colour), one panel per measure, each dot's value
    printed at the panel's right; dotted: the Lemma-1 convolution layer (0, K², 1). With
    ``before`` (rows at initialisation), an open dot and an arrow from it to the trained value,
    and the numbers as "initial → trained"."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    models = list(dict.fromkeys(r["model"] for r in rows))
    layers = sorted({r["layer"] for r in rows})
    start = {(r["model"], r["layer"]): r for r in before or ()}
    k2 = kernel_size * kernel_size
    specs = [
        ("mean_distance", "distance to the lattice\n(tokens)", 0.0, "{:.2f}"),
        ("coverage", f"lattice points covered\n(of {k2})", k2, "{:d}"),
        (
            "mean_mass",
            f"attention mass in the\n{kernel_size}×{kernel_size} window",
            1.0,
            "{:.2f}",
        ),
    ]
    y, labels, colours = {}, [], []
    for i in layers:  # layer-major, a gap between layers
        for name in models:
            if any(r["model"] == name and r["layer"] == i for r in rows):
                y[(name, i)] = len(labels) + 0.6 * layers.index(i)
                labels.append(f"layer {i + 1}, {name}")
                colours.append(label_colour(name))
    fig, axes = plt.subplots(
        1,
        3,
        figsize=(COLUMN_INCHES, 0.28 * len(labels) + 1.5),
        sharey=True,
        layout="constrained",
    )
    for ax, (key, title, ideal, fmt) in zip(axes, specs):
        values = [r[key] for r in rows] + [r[key] for r in before or ()]
        hi = max(max(values), ideal)
        right = hi * (2.7 if before else 1.8)  # room for the printed values
        for r in rows:
            at, c = y[(r["model"], r["layer"])], label_colour(r["model"])
            ax.plot(r[key], at, "o", color=c, ms=6, zorder=3)
            text = fmt.format(r[key])
            init = start.get((r["model"], r["layer"]))
            if init is not None:
                ax.plot(init[key], at, "o", color=c, mfc="white", ms=6, zorder=2)
                ax.annotate(
                    "",
                    (r[key], at),
                    (init[key], at),
                    arrowprops={"arrowstyle": "->", "color": c, "lw": 1, "shrinkB": 4},
                )
                text = f"{fmt.format(init[key])} → {text}"
            ax.text(right, at, text, ha="right", va="center", fontsize=9)
        ax.axvline(ideal, color="gray", ls=":", lw=1.2)
        ax.set_xlim(0, right * 1.06)  # the printed values clear the frame
        ax.set_xticks([t for t in ax.get_xticks() if 0 <= t <= hi])
        ax.set_title(title, fontsize=9.5)
        ax.grid(axis="x", alpha=0.3)
        ax.tick_params(axis="y", length=0)
        ax.tick_params(axis="x", labelsize=9)
    axes[0].set_yticks(list(y.values()), labels, fontsize=9)
    for tick, c in zip(axes[0].get_yticklabels(), colours):
        tick.set_color(c)
    axes[0].set_ylim(max(y.values()) + 0.7, -0.7)
    handles = [
        Line2D([], [], color="gray", ls=":", label="convolution layer (Theorem 1)")
    ]
    if before:
        handles = [
            Line2D(
                [],
                [],
                color="gray",
                marker="o",
                mfc="white",
                ls="",
                label="at initialisation",
            ),
            Line2D([], [], color="gray", marker="o", ls="", label="after training"),
        ] + handles
    fig.legend(
        handles=handles, loc="outside lower center", ncol=3, fontsize=9, frameon=False
    )
    return fig
