"""The figures and the table of the paper's Sec. 4 (arXiv v1 Figs. 2-6 and 10; the accuracy table is
v1 Fig. 5 = ICLR Table 1), drawn from saved training runs (:mod:`attnconv.experiments.runs`).

* Which runs the book uses: :func:`book_run` reads the run of a model under the active profile from
  the registry (:mod:`attnconv.experiments.registry`, where each run's settings are written once);
  nothing is trained here: a missing run is an error naming the command that makes it.
* Gaussian heads from a history (quadratic eq. 9, generalized eq. 16): :func:`center_trajectories`
  and :func:`plot_center_trajectories` (Fig. 2), :func:`head_summary` and :func:`format_head_table`
  (how far the centres moved, which lattice points of Lemma 1 they reach, how sharp each head is),
  :func:`gaussian_head_maps` and :func:`plot_layer_contours` (Fig. 3 and Fig. 10, 50 % / 90 %
  probability-mass regions).
* Accuracy: :func:`plot_accuracy_curves` (v1 Fig. 4 = ICLR Fig. 2) and :func:`table1_rows` (v1 Fig. 5
  = ICLR Table 1); :func:`content_variant_parameters` counts the ICLR-only content model as the
  paper describes it.
* Attention maps that need the trained weights (v1 Fig. 6 = ICLR Fig. 5: learned relative encoding,
  position only; ICLR Fig. 6, not in v1: with the content term, averaged over 100 test images): :func:`attention_map_statistics` computes them
  (and how much each head's map varies between images) from a model, :func:`save_attention_maps`
  stores them as a small JSON next to ``history.json`` (``python -m attnconv.regenerate`` calls it),
  :func:`run_attention_maps` reads them (never computing or writing) and
  :func:`plot_layer_head_maps` draws them, one row per layer and one column per head.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import torch

from ..core.lattice import covered_lattice_points, lattice_coverage, lattice_distance
from .plotting import COLUMN_INCHES
from .tables import fit_column, pack_items
from ..experiments.data import load_cifar10, normalize
from ..experiments.flops import flops_table
from ..experiments.models import build_model, count_parameters
from ..experiments.paper_numbers import PAPER_TABLE1
from ..experiments.registry import active_profile, book_run_name, load_run, run_entry
from ..experiments.store import ATTENTION_MAPS_FILE, read_keyed, runs_dir
from ..experiments.train import Run

__all__ = [
    "ATTENTION_MAPS",
    "PAPER_TABLE1",
    "active_profile",
    "book_run_changes",
    "book_run",
    "run_summary",
    "run_caption",
    "layer_records",
    "center_trajectories",
    "head_summary",
    "format_head_summary",
    "format_head_table",
    "gaussian_head_maps",
    "plot_center_trajectories",
    "plot_trajectories_per_layer",
    "plot_layer_contours",
    "plot_accuracy_curves",
    "paper_size_parameters",
    "table1_rows",
    "format_table1",
    "content_variant_parameters",
    "content_variant_module_parameters",
    "learned_model_parameters",
    "attention_map_statistics",
    "average_attention_maps",
    "save_attention_maps",
    "load_attention_maps",
    "format_variation",
    "run_attention_maps",
    "layer_attention_maps",
    "plot_layer_head_maps",
]

#: File of the attention maps derived from a run's trained weights, next to ``history.json``.
ATTENTION_MAPS = ATTENTION_MAPS_FILE


# --------------------------------------------------------------------------- runs of the book
def book_run_changes(model: str, profile: str, tag: Optional[str] = None) -> dict:
    """What the book's run of ``model`` (``tag="16heads"``: 16 heads) under ``profile`` changes in
    the profile's :class:`~attnconv.experiments.train.TrainConfig` (its registry entry's
    :meth:`~attnconv.experiments.registry.RunEntry.changes`, ``epochs`` first)."""
    if tag == "16heads" and model == "resnet18":
        raise ValueError("the 16-head variant exists for the self-attention models only")
    name = book_run_name(model, profile, tag)
    try:
        return run_entry(name).changes()
    except KeyError:
        raise ValueError(f"unknown book run {name!r}") from None


def book_run(model: str, tag: Optional[str] = None, profile: Optional[str] = None) -> Run:
    """The book's saved run of ``model`` (``tag="16heads"``: 16 heads) under ``profile`` (default
    :func:`active_profile`), read from the registry (:func:`attnconv.experiments.registry.load_run`):
    a missing run raises with the command that makes it."""
    return load_run(book_run_name(model, profile, tag))


def run_summary(run: Run, label: Optional[str] = None) -> str:
    """Two lines describing a saved run: ``label`` (default: the model name), epochs and data;
    then size and final test accuracy."""
    h = run.history
    mc = h.get("model_config", {})
    if mc.get("kind") == "resnet":
        arch = f"ResNet18 with widths {tuple(mc['widths'])}"
    else:
        g = int(mc["image_size"]) // int(mc["downsample"])
        arch = (f"{mc['num_layers']} layers × {mc['num_heads']} heads, hidden {mc['hidden_size']}, "
                f"{g}×{g} tokens")
    acc = f"{100 * run.epochs[-1]['test_acc']:.1f}%" if run.epochs else "n/a"
    return (f"{label or run.config.model}: {len(run.epochs)} epochs on the {h['data']} data ({h['train_size']:,} training / "
            f"{h['test_size']:,} test images)\n    {arch}; {h['num_parameters']:,} parameters; test accuracy {acc}")


def run_caption(run: Run, epochs: bool = True) -> str:
    """A short figure caption naming the run's profile and scale, e.g. ``CPU profile (2 layers,
    9 heads, 8×8 tokens, sample data, 40 epochs)`` (without the epochs if ``epochs`` is False)."""
    h = run.history
    mc = h.get("model_config", {})
    if mc.get("kind") == "resnet":
        arch = f"widths {tuple(mc['widths'])}"
    else:
        g = int(mc["image_size"]) // int(mc["downsample"])
        arch = f"{mc['num_layers']} layers, {mc['num_heads']} heads, {g}×{g} tokens"
    length = f", {len(run.epochs)} epochs" if epochs else ""
    return f"{run.config.profile.upper()} profile ({arch}, {h['data']} data{length})"


# --------------------------------------------------------------------------- Gaussian heads
def layer_records(history: dict, epoch: int) -> List[dict]:
    """The saved attention parameters of every layer after ``epoch`` (0: the initialisation,
    -1: the last epoch) of a training history."""
    if epoch == 0:
        return history["initial_attention"]
    epochs = history["epochs"]
    if not epochs:
        raise ValueError("the history holds no epoch")
    return epochs[epoch - 1 if epoch > 0 else epoch]["attention"]


def center_trajectories(history: dict, layer: int) -> np.ndarray:
    """The centres Δ of every head of ``layer`` before training and after each epoch (Fig. 2):
    an ``(E + 1, N_h, 2)`` array of (row, column) shifts in token units, row 0 the initial state.

    For the learned encoding the recorded "centre" is the mean shift E[δ] of the head's
    position-only attention (:meth:`SelfAttentionClassifier.attention_parameters`)."""
    records = [history["initial_attention"]] + [e["attention"] for e in history["epochs"]]
    n_layers = len(records[0])
    if not -n_layers <= layer < n_layers:
        raise ValueError(f"layer {layer} out of range: the model has {n_layers} attention layers")
    if "centers" not in records[0][layer]:
        raise ValueError(f"layer {layer} has no head centres (pruned or not an attention layer)")
    return np.stack([np.asarray(r[layer]["centers"], dtype=np.float64).reshape(-1, 2) for r in records])


def head_summary(history: dict, kernel_size: int = 3, radius: float = 0.5) -> List[dict]:
    """Per attention layer, how its head centres moved from the initialisation to the last epoch:
    ``mean_movement`` (mean ‖Δ_end − Δ_init‖), ``mean_offset`` (mean ‖Δ_end‖, the distance from
    the query; ``mean_offset_init`` at initialisation), ``coverage_init`` / ``coverage_end`` (lattice points of the K×K kernel with a head
    within ``radius``, :func:`attnconv.core.lattice.lattice_coverage`), ``covered_end``
    (those points at the end, (row, column) shifts) and, for the
    quadratic encoding, ``spread_init`` / ``spread_end`` (median s, Σ⁻¹ = s²·I)."""
    out = []
    for layer, rec in enumerate(history["initial_attention"]):
        if "centers" not in rec:
            continue
        t = center_trajectories(history, layer)
        row = {
            "layer": layer,
            "num_heads": t.shape[1],
            "mean_movement": float(np.linalg.norm(t[-1] - t[0], axis=-1).mean()),
            "mean_offset_init": float(np.linalg.norm(t[0], axis=-1).mean()),
            "mean_offset": float(np.linalg.norm(t[-1], axis=-1).mean()),
            "coverage_init": lattice_coverage(t[0], kernel_size, radius),
            "coverage_end": lattice_coverage(t[-1], kernel_size, radius),
            "covered_end": covered_lattice_points(t[-1], kernel_size, radius),
        }
        last = layer_records(history, -1)[layer] if history["epochs"] else rec
        if "spreads" in rec:
            row["spread_init"] = float(np.median(rec["spreads"]))
            row["spread_end"] = float(np.median(last["spreads"]))
        out.append(row)
    return out


def format_head_summary(rows: Sequence[dict], kernel_size: int = 3) -> str:
    """:func:`head_summary` as text, numbers to 2 decimals, layers numbered from 1 as in the paper;
    a few short lines per layer, so that it fits the book's column."""
    k2 = kernel_size * kernel_size
    lines = []
    for r in rows:
        lines.append(f"layer {r['layer'] + 1}: {r['num_heads']} heads, mean centre movement {r['mean_movement']:.2f} tokens")
        line = f"    mean distance from the query {r['mean_offset_init']:.2f} -> {r['mean_offset']:.2f}"
        if "spread_end" in r:
            line += f", median spread s {r['spread_init']:.2f} -> {r['spread_end']:.2f}"
        lines.append(line)
        points = " ".join(f"({a:+d},{b:+d})" for a, b in r.get("covered_end", []))
        lines.append(f"    {kernel_size}×{kernel_size} lattice points covered {r['coverage_init']}/{k2} -> "
                     f"{r['coverage_end']}/{k2}: {points or 'none'}")
    return fit_column("\n".join(lines))


def format_head_table(history: dict, layer: int, epoch: int = -1, kernel_size: int = 3) -> str:
    """One line per head of ``layer`` (0-based) after ``epoch``: its centre Δ_h (row, column), its
    spread s_h (quadratic encoding) or the eigenvalues of Σ_h⁻¹ (generalized), the distance of Δ_h
    to the nearest point of the K×K lattice and the largest attention probability of the head for
    the centre query token (1 = one-hot), all to 2 decimals."""
    rec = layer_records(history, epoch)[layer]
    if "inverse_covariance" not in rec:
        raise ValueError(f"layer {layer} has no Gaussian heads")
    mc = history.get("model_config", {})
    g = int(mc["image_size"]) // int(mc["downsample"])
    maps = gaussian_head_maps(rec, (g, g), (g // 2, g // 2))
    centers = torch.as_tensor(rec["centers"], dtype=torch.float64)
    dist = lattice_distance(centers, kernel_size)
    lines = []
    for h in range(len(centers)):
        if "spreads" in rec:
            width = f"s = {abs(float(rec['spreads'][h])):.2f}"
        else:
            eig = torch.linalg.eigvalsh(torch.as_tensor(rec["inverse_covariance"][h], dtype=torch.float64))
            width = f"eig(Σ⁻¹) = ({float(eig[0]):.2f}, {float(eig[1]):.2f})"
        lines.append(f"head {h + 1}: Δ = ({float(centers[h, 0]):+.2f}, {float(centers[h, 1]):+.2f}), {width}, "
                     f"to the lattice {float(dist[h]):.2f}, largest probability {float(maps[h].max()):.2f}")
    return fit_column("\n".join(lines))


def gaussian_head_maps(record: Mapping, grid: Sequence[int], query: Sequence[int]) -> torch.Tensor:
    """Attention probabilities of the Gaussian heads of one layer record (centres Δ_h and
    inverse covariances Σ_h⁻¹, as saved in a history) for one query token: softmax over the keys
    of −½ (δ − Δ_h)ᵀ Σ_h⁻¹ (δ − Δ_h) (eq. 9 with Σ⁻¹ = 2α·I, eq. 16 in general). Returns
    ``(N_h, H, W)`` in float64."""
    if "centers" not in record or "inverse_covariance" not in record:
        raise ValueError("the record has no Gaussian heads (needs 'centers' and 'inverse_covariance')")
    h, w = (int(s) for s in grid)
    q0, q1 = (int(c) for c in query)
    if not (0 <= q0 < h and 0 <= q1 < w):
        raise ValueError(f"query {tuple(query)} is outside the {h}×{w} grid")
    centers = torch.as_tensor(record["centers"], dtype=torch.float64).reshape(-1, 2)
    a = torch.as_tensor(record["inverse_covariance"], dtype=torch.float64).reshape(-1, 2, 2)
    rows = torch.arange(h, dtype=torch.float64)[:, None].expand(h, w) - q0
    cols = torch.arange(w, dtype=torch.float64)[None, :].expand(h, w) - q1
    delta = torch.stack([rows, cols], -1)  # (H, W, 2)
    diff = delta[None] - centers[:, None, None, :]  # (N_h, H, W, 2)
    scores = -0.5 * torch.einsum("nhwi,nij,nhwj->nhw", diff, a, diff)
    n = centers.shape[0]
    return torch.softmax(scores.reshape(n, -1), -1).reshape(n, h, w)


def _head_colors(n: int):
    import matplotlib.pyplot as plt

    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(n)]


def plot_center_trajectories(history: dict, layer: int, ax=None, kernel_size: int = 3, title: Optional[str] = None,
                             lim: Optional[float] = None):
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
    ax.scatter(lattice[:, 1], lattice[:, 0], s=60, color="lightgray", zorder=1, label=f"{kernel_size}×{kernel_size} lattice")
    ax.add_patch(plt.Rectangle((-0.5, -0.5), 1, 1, fill=False, ec="red", lw=1.5, zorder=2))
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
    ax.set_title(title if title is not None else f"layer {layer % n_layers + 1}", fontsize=9)
    return ax.figure


def plot_trajectories_per_layer(history: dict, kernel_size: int = 3, panel_size: float = 3.6,
                                suptitle: Optional[str] = None):
    """:func:`plot_center_trajectories` for every layer with heads, side by side, on common axes."""
    import matplotlib.pyplot as plt

    layers = [i for i, r in enumerate(history["initial_attention"]) if "centers" in r]
    if not layers:
        raise ValueError("no layer has head centres")
    lim = max(kernel_size // 2 + 1.0, max(float(np.abs(center_trajectories(history, i)).max()) for i in layers) + 0.5)
    ncols = min(len(layers), 3)
    nrows = math.ceil(len(layers) / ncols)
    panel = min(panel_size, COLUMN_INCHES / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(panel * ncols, panel * nrows + 0.4), squeeze=False)
    for ax in axes.flat[len(layers):]:
        ax.axis("off")
    for ax, i in zip(axes.flat, layers):
        plot_center_trajectories(history, i, ax=ax, kernel_size=kernel_size, lim=lim)
    if suptitle:
        fig.suptitle(suptitle, fontsize=10)
    fig.tight_layout()
    return fig


def plot_layer_contours(history: dict, grid: Sequence[int], query: Optional[Sequence[int]] = None,
                        masses: Sequence[float] = (0.5, 0.9), epoch: int = -1, panel_size: float = 2.5,
                        suptitle: Optional[str] = None, hide_uniform: bool = True, ncols: int = 3):
    """Fig. 3 as the paper draws it: one panel per layer; each head (one colour a head, numbered
    from 1 in the legend) as the ellipses holding 50 % (solid) and 90 % (dashed) of its Gaussian's
    probability (:func:`attnconv.chapters.gaussian.draw_mass_ellipses`, token units, from the
    saved Δ_h and Σ_h⁻¹ at ``epoch``: -1 the last, 0 the initialisation), around the query token
    (red square), with the centre marked (cross). With ``hide_uniform``, heads whose 50 % ellipse
    is wider than the grid (nearly uniform attention) are not drawn; the panel title counts them.
    The legend sits below the panels."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    from .gaussian import draw_mass_ellipses, mass_ellipse

    records = layer_records(history, epoch)
    h, w = (int(s) for s in grid)
    query = (h // 2, w // 2) if query is None else tuple(query)
    n = len(records)
    ncols = min(n, ncols)
    nrows = math.ceil(n / ncols)
    legend_rows = math.ceil((max(len(r.get("centers", [])) for r in records) + 2) / 6)
    panel_size = min(panel_size, (COLUMN_INCHES - 0.4) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(COLUMN_INCHES - 0.4, panel_size * nrows + 0.3 * legend_rows + 0.5),
                             squeeze=False, layout="constrained")
    num_heads = 0
    for i, ax in enumerate(axes.flat):
        ax.set_xticks([]), ax.set_yticks([])
        if i >= n:
            ax.axis("off")
            continue
        rec = records[i]
        ax.set_xlim(-0.5, w - 0.5)
        ax.set_ylim(h - 0.5, -0.5)
        ax.set_aspect("equal")
        ax.set_title(f"layer {i + 1}", fontsize=8.5)
        if "centers" not in rec:
            continue
        centers = np.asarray(rec["centers"], dtype=np.float64).reshape(-1, 2)
        inverse = np.asarray(rec["inverse_covariance"], dtype=np.float64).reshape(-1, 2, 2)
        num_heads = max(num_heads, len(centers))
        hidden = 0
        for k, c in enumerate(_head_colors(len(centers))):
            width, height, _ = mass_ellipse(inverse[k], masses[0])
            if hide_uniform and not max(width, height) <= max(h, w):
                hidden += 1
                continue
            draw_mass_ellipses(ax, centers[k], inverse[k], query, masses, color=c)
            ax.plot(query[1] + centers[k, 1], query[0] + centers[k, 0], "x", color=c, ms=5, mew=1.5)
        if hidden:
            ax.set_title(f"layer {i + 1}: {hidden} wide head{'s' if hidden > 1 else ''} not drawn", fontsize=8.5)
        ax.add_patch(Rectangle((query[1] - 0.5, query[0] - 0.5), 1, 1, fill=True, fc="red", alpha=0.35, ec="red"))
    handles = [Line2D([], [], color=c, marker="x", lw=1.2, label=f"head {k + 1}")
               for k, c in enumerate(_head_colors(num_heads))]
    handles += [Line2D([], [], color="gray", ls="-", label=f"{masses[0]:.0%} mass"),
                Line2D([], [], color="gray", ls="--", label=f"{masses[1]:.0%} mass")]
    fig.legend(handles=handles, loc="outside lower center", ncol=min(6, len(handles)), fontsize=7.5, frameon=False,
               columnspacing=1.0, handlelength=1.6)
    if suptitle:
        fig.suptitle(suptitle, fontsize=9)
    return fig


# --------------------------------------------------------------------------- accuracy, v1 Fig. 5 (ICLR Table 1)
def plot_accuracy_curves(runs: Mapping[str, Run], ax=None, key: str = "test_acc", title: Optional[str] = None):
    """v1 Fig. 4 (ICLR Fig. 2): ``key`` (default the test accuracy) against the epoch for each labelled run."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 3.6))
    for label, run in runs.items():
        values = run.series(key)
        ax.plot(range(1, len(values) + 1), values, label=label)
    ax.set_xlabel("epoch")
    names = {"test_acc": "test accuracy", "train_acc": "training accuracy", "test_loss": "test loss",
             "train_loss": "training loss"}
    ax.set_ylabel(names.get(key, key.replace("_", " ")))
    ax.grid(alpha=0.3)
    # one legend, below the axes, outside the data
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=min(4, len(runs)), frameon=False)
    if title:
        ax.set_title(title, fontsize=9)
    return ax.figure


def paper_size_parameters(model: str) -> int:
    """Exact parameter count of ``model`` at the paper's size (built on the ``meta`` device)."""
    with torch.device("meta"):
        return count_parameters(build_model(model))


def table1_rows(runs: Mapping[str, Run]) -> List[dict]:
    """v1 Fig. 5 (ICLR Table 1) side by side with our models, one row per model of ``runs`` (keys: model names of
    :data:`PAPER_TABLE1`):

    * our run: ``epochs``, final ``test_acc`` and ``parameters`` of the model actually trained;
    * our paper-size model: ``paper_size_parameters`` (exact), GFLOPs per image counted the
      paper's way (2 × Linear/conv MACs) and with the attention included (:func:`attnconv.experiments.flops.flops_table`);
    * the paper's reported accuracy, parameters and FLOPs."""
    unknown = set(runs) - set(PAPER_TABLE1)
    if unknown:
        raise ValueError(f"no accuracy-table entry for {sorted(unknown)}; choose from {sorted(PAPER_TABLE1)}")
    flops = {r["model"]: r for r in flops_table()}
    rows = []
    for name, run in runs.items():
        paper = PAPER_TABLE1[name]
        rows.append({
            "model": name,
            "label": paper["label"],
            "epochs": len(run.epochs),
            "test_acc": run.epochs[-1]["test_acc"] if run.epochs else float("nan"),
            "parameters": int(run.history["num_parameters"]),
            "paper_size_parameters": paper_size_parameters(name),
            "gflops_paper_way": flops[name]["ours_paper_way_gflops"],
            "gflops_with_attention": flops[name]["ours_with_attention_gflops"],
            "paper_accuracy": paper["accuracy"],
            "paper_parameters": paper["parameters"],
            "paper_flops": paper["flops"],
            "paper_source": paper["source"],
        })
    return rows


def format_table1(rows: Sequence[dict], profile: str) -> str:
    """Two Markdown tables of :func:`table1_rows`, narrow enough for the book's column: our
    ``profile`` runs with our paper-size counts, then the paper's numbers (with the source of each
    row: v1 Fig. 5 or ICLR Table 1 only)."""
    ours = [f"| model | {profile} run: acc | params | epochs | paper size: params | GFLOPs | w/ attn |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    paper = ["| model | paper: acc | params | FLOPs | source |", "| --- | ---: | ---: | ---: | --- |"]
    for r in rows:
        ours.append(f"| {r['label']} | {100 * r['test_acc']:.1f}% | {r['parameters']:,} | {r['epochs']} "
                    f"| {r['paper_size_parameters']:,} | {r['gflops_paper_way']:.1f} | {r['gflops_with_attention']:.1f} |")
        paper.append(f"| {r['label']} | {r['paper_accuracy']} | {r['paper_parameters']} | {r['paper_flops']} "
                     f"| {r['paper_source']} |")
    return "\n".join(ours) + "\n\n" + "\n".join(paper)


def content_variant_parameters(num_layers: int = 6, hidden_size: int = 400, num_heads: int = 9,
                               head_dim: int = 400, tokens_per_side: int = 16, intermediate_size: int = 512,
                               token_channels: int = 12, num_classes: int = 10) -> Dict[str, int]:
    """Parameters of the learned-encoding + content model as the paper's text describes it (ICLR
    Table 1 row "SA learned emb. + content-based att.", 29.5M), term by term.

    The variant: the scores are query·key (content-content term of eq. 8) plus query·position
    (content-position term, r_δ read by the query of the head, no Ŵ_key), with r_δ the
    concatenation of a D_p/2 = 200-dimensional row-shift and column-shift embedding (D_p = 400 =
    D_h, Sec. 4.3), one table per layer, and no per-head key vector (no position-only term).

    * ``backbone``: the position-free part of our classifier: embedding Linear(12 → 400), per layer
      the merged output Linear(N_h·D_h → 400), BERT's self-output Linear(400 → 400), two LayerNorms,
      Linear(400 → 512) and Linear(512 → 400); the classifier Linear(400 → 10);
    * ``query_key``: per layer the query and key projections Linear(400 → N_h·D_h) with biases;
    * ``position_embeddings``: per layer 2·(2·15 + 1) shifts (|δ_a| ≤ 15 on 16×16 tokens) × 200.
    """
    d, hd, L = hidden_size, num_heads * head_dim, num_layers
    per_layer = (hd * d + d) + (d * d + d) + 2 * (2 * d) + (d * intermediate_size + intermediate_size) \
        + (intermediate_size * d + d)
    backbone = (token_channels * d + d) + L * per_layer + (d * num_classes + num_classes)
    query_key = L * 2 * (d * hd + hd)
    shifts = 2 * (tokens_per_side - 1) + 1
    position_embeddings = L * 2 * shifts * (head_dim // 2)
    return {"backbone": backbone, "query_key": query_key, "position_embeddings": position_embeddings,
            "total": backbone + query_key + position_embeddings}


def learned_model_parameters(per_axis: int, shared: bool, num_layers: int = 6, num_heads: int = 9,
                             tokens_per_side: int = 16) -> int:
    """Parameters of the paper-size learned-encoding model (position only) for a reading of the
    encoding: ``per_axis`` dimensions per row shift and per column shift (D_p = 2·per_axis), one
    table for all layers (``shared``, the text of Secs. 2.3 and 4.3: "shared by all layers and
    heads", D_p/2 = 200) or one per layer (the authors' code: 400 per axis). Each head has its key
    vector w_h ∈ R^{D_p} (the position-only term v_hᵀ Ŵ_key r_δ). The rest is the backbone of
    :func:`content_variant_parameters`."""
    backbone = content_variant_parameters(num_layers=num_layers, num_heads=num_heads,
                                          tokens_per_side=tokens_per_side)["backbone"]
    shifts = 2 * (tokens_per_side - 1) + 1
    tables = (1 if shared else num_layers) * 2 * shifts * per_axis
    keys = num_layers * num_heads * 2 * per_axis
    return backbone + tables + keys


def content_variant_module_parameters() -> int:
    """The same count from modules: our paper-size ``learned_content`` model built on the ``meta``
    device, with each layer's learned encoding (400 per axis and a key vector per head) replaced by
    two ``nn.Embedding(31, 200)`` tables (row and column shifts)."""
    from torch import nn

    with torch.device("meta"):
        model = build_model("learned_content")
        for layer in model.layers:
            shifts = layer.attention.encoding.axis_embeddings[0].num_embeddings
            layer.attention.encoding = nn.ModuleList(nn.Embedding(shifts, 200) for _ in range(2))
    return count_parameters(model)


# --------------------------------------------------------------------------- maps from weights (v1 Fig. 6; ICLR Figs. 5, 6)
def _default_query(model) -> Tuple[int, int]:
    g = model.config.tokens_per_side
    return (g // 2, g // 2)


@torch.no_grad()
def attention_map_statistics(model, images: torch.Tensor, query: Optional[Sequence[int]] = None,
                             batch_size: int = 50) -> dict:
    """The attention probabilities of every head of every layer for one query token on each of
    ``images`` (normalised, ``(N, 3, 32, 32)``), summarised per layer (``None`` for a layer without
    heads):

    * ``mean`` — ``(N_h, H', W')`` float64, the average over the images (ICLR Fig. 6, not in arXiv v1,
      averages 100 test images);
    * ``variation`` — ``(N_h,)``, the mean over the images of the total-variation distance
      ½ Σ_k |p_image(k) − p_mean(k)| between an image's map and the average: 0 for a head whose
      attention does not depend on the image (position-only scores), up to 1 for a head that
      looks somewhere else in every image.

    Each layer sees its real input (the model runs in eval mode, no dropout; its mode is restored)."""
    if images.ndim != 4 or len(images) < 1:
        raise ValueError(f"expected a non-empty batch of images (N, 3, H, W), got shape {tuple(images.shape)}")
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    cfg = model.config
    g = cfg.tokens_per_side
    qi, qj = _default_query(model) if query is None else (int(query[0]), int(query[1]))
    if not (0 <= qi < g and 0 <= qj < g):
        raise ValueError(f"query {tuple(query)} outside the {g}×{g} token grid")
    q = qi * g + qj
    was_training = model.training
    model.eval()
    rows: List[List[torch.Tensor]] = [[] for _ in model.layers]
    try:
        for start in range(0, len(images), batch_size):
            x = model.tokens(images[start:start + batch_size])
            n = x.shape[1]
            for i, layer in enumerate(model.layers):
                if layer.attention is not None:
                    _, probs = layer.attention.forward_tokens(x, cfg.grid, return_attention=True)
                    rows[i].append(probs[:, :, q, :].double().expand(n, -1, -1))  # (B, N_h, T_k)
                x = layer(x, cfg.grid)
    finally:
        model.train(was_training)
    means, variations = [], []
    for r in rows:
        if not r:
            means.append(None)
            variations.append(None)
            continue
        p = torch.cat(r)  # (N, N_h, T_k)
        mean = p.mean(0)
        means.append(mean.reshape(-1, g, g))
        variations.append(0.5 * (p - mean).abs().sum(-1).mean(0))
    return {"mean": means, "variation": variations}


def average_attention_maps(model, images: torch.Tensor, query: Optional[Sequence[int]] = None,
                           batch_size: int = 50) -> List[Optional[torch.Tensor]]:
    """The ``mean`` of :func:`attention_map_statistics`: per layer an ``(N_h, H', W')`` float64
    tensor, every head's attention probabilities for the query token averaged over ``images``.
    For position-only heads every image gives the map of
    :meth:`~attnconv.experiments.models.SelfAttentionClassifier.position_attention`."""
    return attention_map_statistics(model, images, query, batch_size)["mean"]


def save_attention_maps(run: Run, num_images: int = 100, query: Optional[Sequence[int]] = None,
                        data=None, digits: int = 6) -> Path:
    """Compute :func:`attention_map_statistics` of ``run.model`` over the first ``num_images`` test
    images of the run's data and write the mean maps and the per-head variation to
    ``run_dir/attention_maps.json`` (values rounded to ``digits`` significant digits). ``data``: a :class:`~attnconv.experiments.data.CifarData` to use instead
    of loading ``run.config.data``."""
    if run.model is None:
        raise ValueError("the run has no model: load it with load_model=True")
    if num_images < 1:
        raise ValueError("num_images must be >= 1")
    if data is None:
        data = load_cifar10(run.config.data, root=run.config.data_root, verbose=False)
    images = normalize(data.x_test[:num_images]).to(next(run.model.parameters()).device)
    query = _default_query(run.model) if query is None else (int(query[0]), int(query[1]))
    stats = attention_map_statistics(run.model, images, query)
    maps = stats["mean"]
    payload = {
        "description": f"attention probabilities of every head for the query token {list(query)}, "
                       f"averaged over the first {len(images)} test images ({data.source} data)",
        "query": list(query),
        "grid": list(run.model.config.grid),
        "num_images": len(images),
        "content": bool(run.model.config.content),
        "epoch": len(run.epochs),
        "layers": [None if m is None else [[[float(f"{v:.{digits}g}") for v in row] for row in head]
                                           for head in m.tolist()] for m in maps],
        "variation": [None if v is None else [float(f"{x:.{digits}g}") for x in v.tolist()] for v in stats["variation"]],
    }
    path = Path(run.run_dir) / ATTENTION_MAPS
    with open(path, "w") as f:
        json.dump(payload, f)
    return path


def load_attention_maps(run_dir) -> Optional[dict]:
    """The content of ``run_dir/attention_maps.json`` with ``layers`` as float64 tensors
    ``(N_h, H', W')`` and ``variation`` as ``(N_h,)`` tensors (``None`` for layers without heads),
    or ``None`` when the file is absent."""
    path = Path(run_dir) / ATTENTION_MAPS
    if not path.is_file():
        return None
    with open(path) as f:
        d = json.load(f)
    d["layers"] = [None if m is None else torch.tensor(m, dtype=torch.float64) for m in d["layers"]]
    d["variation"] = [None if v is None else torch.tensor(v, dtype=torch.float64) for v in d.get("variation", [])]
    return d


def format_variation(name: str, variation: Sequence[Optional[torch.Tensor]], threshold: float = 0.05) -> str:
    """One line per layer from the ``variation`` of :func:`attention_map_statistics`: every head's
    mean total-variation distance to its average map (2 decimals) and how many exceed
    ``threshold`` (layers numbered from 1)."""
    lines = []
    for i, v in enumerate(variation):
        if v is None:
            continue
        values = [f"{float(x):.2f}" for x in v]
        lines.append(pack_items(f"{name}, layer {i + 1}: above {threshold:g} in {int((v > threshold).sum())} of {len(v)} heads; "
                                "per head: ", values))
    return fit_column("\n".join(lines))


def _attention_maps_key(d: dict) -> dict:
    return {"epoch": d.get("epoch"), "num_images": d.get("num_images")}


def attention_maps_name(run: Run) -> str:
    """The name under which ``python -m attnconv.regenerate`` makes the attention maps of ``run``."""
    folder = Path(run.run_dir).resolve()
    try:
        return f"{folder.relative_to(runs_dir()).as_posix()}/attention_maps"
    except ValueError:
        return f"{folder}/attention_maps"


def run_attention_maps(run: Run, num_images: int = 100) -> dict:
    """The saved attention maps of ``run`` (:func:`load_attention_maps`), made from its last epoch
    over ``num_images`` test images. Reads only: missing or made from another epoch, the error names
    the command that makes them (they need the run's weights)."""
    path = Path(run.run_dir) / ATTENTION_MAPS
    read_keyed(path, {"epoch": len(run.epochs), "num_images": num_images}, attention_maps_name(run),
               key_of=_attention_maps_key)
    return load_attention_maps(run.run_dir)


def layer_attention_maps(run: Run, query: Optional[Sequence[int]] = None, num_images: int = 100, epoch: int = -1
                         ) -> Optional[List[Optional[torch.Tensor]]]:
    """The attention maps ``(N_h, H', W')`` of every layer of ``run`` for one query token (default:
    the centre token) after ``epoch`` (-1: the last, 0: the initialisation): from the saved
    Gaussian parameters (:func:`gaussian_head_maps`) for the quadratic and generalized encodings,
    else from :func:`run_attention_maps` (last epoch and centre query only). ``None`` if they
    cannot be had."""
    mc = run.history.get("model_config", {})
    if mc.get("kind") == "resnet":
        raise ValueError("ResNet18 has no attention maps")
    g = int(mc["image_size"]) // int(mc["downsample"])
    centre = (g // 2, g // 2)
    query = centre if query is None else (int(query[0]), int(query[1]))
    records = layer_records(run.history, epoch) if run.epochs or epoch == 0 else run.history["initial_attention"]
    with_heads = [r for r in records if "centers" in r]
    if with_heads and not mc.get("content", False) and all("inverse_covariance" in r for r in with_heads):
        return [gaussian_head_maps(r, (g, g), query) if "inverse_covariance" in r else None for r in records]
    if query != centre:
        raise ValueError("saved attention maps exist for the centre query only")
    if epoch not in (-1, len(run.epochs)):
        return None
    d = run_attention_maps(run, num_images)
    return None if d is None else d["layers"]


def plot_layer_head_maps(maps: Sequence[Optional[torch.Tensor]], query: Sequence[int], suptitle: Optional[str] = None,
                         panel_size: float = 1.25, cmap: str = "Blues", contours: bool = False,
                         masses: Sequence[float] = (0.5, 0.9), vmax_floor: float = 0.05):
    """v1 Fig. 6 (ICLR Figs. 5 and 6): a grid of attention maps, one row per layer and one column per head, each with the
    query token marked by a red square; each panel has its own colour scale from 0 to
    max(its largest probability, ``vmax_floor``), so that a nearly uniform head shows pale.
    With ``contours``, the outlines of each head's 50 % (solid) and 90 % (dashed) probability-mass
    regions (:func:`attnconv.chapters.gaussian.draw_mass_contours`) are drawn too."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from .gaussian import draw_mass_contours

    if not maps:
        raise ValueError("no maps to draw")
    n_heads = max((m.shape[0] for m in maps if m is not None), default=0)
    if n_heads == 0:
        raise ValueError("no layer has heads")
    panel = min(panel_size, (COLUMN_INCHES - 0.6) / n_heads)  # never wider than the book's column
    fig, axes = plt.subplots(len(maps), n_heads, figsize=(panel * n_heads + 0.3, panel * len(maps) + 0.5),
                             squeeze=False, layout="constrained")
    fig.get_layout_engine().set(w_pad=0.01, h_pad=0.01, wspace=0.02, hspace=0.02)
    for i, layer_maps in enumerate(maps):
        for h in range(n_heads):
            ax = axes[i, h]
            ax.set_xticks([]), ax.set_yticks([])
            if layer_maps is None or h >= layer_maps.shape[0]:
                ax.axis("off")
                continue
            m = layer_maps[h].double().numpy()
            ax.imshow(m, cmap=cmap, vmin=0, vmax=max(float(m.max()), vmax_floor, 1e-12))
            if contours:
                draw_mass_contours(ax, layer_maps[h], masses, color="darkorange", linewidth=1.0)
            ax.add_patch(Rectangle((query[1] - 0.5, query[0] - 0.5), 1, 1, fill=False, ec="red", lw=1.2))
            if i == 0:
                ax.set_title(f"head {h + 1}" if n_heads <= 9 or h == 0 else f"{h + 1}", fontsize=7.5)
            if h == 0:
                ax.set_ylabel(f"layer {i + 1}", fontsize=7.5)
    if suptitle:
        fig.suptitle(suptitle, fontsize=9)
    return fig
