"""The heads of a trained run as its history saved them, epoch by epoch (no weights needed).

* :func:`layer_records` — the attention parameters of every layer after an epoch;
* :func:`center_trajectories` — the centres Δ of a layer's heads over training (arXiv v1 Fig. 2);
* :func:`head_paths` — the heads of the fresh seed whose paths the book draws, after every epoch
  of a re-run (its saved history kept start and end), with how close the re-run ends;
* :func:`head_summary`, :func:`format_head_summary` — how far the centres moved and which points of
  Lemma 1's K×K lattice they reach, per layer;
* :func:`head_table` — every head of every layer of a quadratic run as one Markdown table: centre,
  spread, distance to the lattice, largest probability (from
  :func:`attnconv.chapters.shared.gaussian_maps.gaussian_head_maps`), a row per head and four
  columns per layer.
"""

from __future__ import annotations

from typing import List, Mapping, Sequence

import numpy as np
import torch

from ...core.lattice import covered_lattice_points, lattice_coverage, lattice_distance
from ...experiments.store import HeadRecord, History
from .gaussian_maps import gaussian_head_maps
from .saved_runs import tokens_per_side
from .tables import fit_column, markdown_table, signed_shift

__all__ = [
    "layer_records",
    "center_trajectories",
    "head_paths",
    "PATHS_END_GAP",
    "head_summary",
    "format_head_summary",
    "head_table",
]


def layer_records(history: Mapping, epoch: int) -> List[HeadRecord]:
    """The saved attention parameters of every layer after ``epoch`` (0: the initialisation,
    -1: the last epoch) of a training history (a :class:`~attnconv.experiments.store.History` or
    its JSON dict): :meth:`History.layer_records <attnconv.experiments.store.History.layer_records>`."""
    if not isinstance(history, History):
        history = History.from_json(history)
    return history.layer_records(epoch)


#: How far (tokens) a head of the head-paths re-run may end from the same head of the saved run
#: (:func:`head_paths`), as Figures 7.3 and 7b.1 state it. The re-run is the same seed and
#: configuration on the same kind of device (CPU, float32): only round-off differs, which 40
#: epochs of SGD grow to a few thousandths of a token (0.0023 measured). 0.01 token is a
#: fiftieth of the 0.5-token radius in which the grid test counts a lattice point covered, so a
#: path that ends within it ends where the counted run's heads ended for every verdict.
PATHS_END_GAP = 0.01


def head_paths() -> dict:
    """The heads of :data:`~attnconv.evidence.runs.PATHS_RUN` (seed 1000 of the quadratic model)
    before training and after every epoch, in the shape of a history
    (:func:`center_trajectories` reads it), from its registered study ``<run>/head-paths``
    (:mod:`~attnconv.experiments.studies_paths`): the run's configuration trained again, since
    its saved history kept start and end only. Its ``agreement`` says how far the re-run ends
    from the saved run. Reads only."""
    from ...evidence.runs import PATHS_RUN
    from ...experiments.studies import study_entry

    return study_entry(f"{PATHS_RUN}/head-paths").read()


def center_trajectories(history: dict, layer: int) -> np.ndarray:
    """The centres Δ of every head of ``layer`` before training and after each epoch (Fig. 2):
    an ``(E + 1, N_h, 2)`` array of (row, column) shifts in token units, row 0 the initial state.
    An epoch whose heads were not kept is skipped: a run that kept only its last epoch's heads
    (a fresh seed) gives a ``(2, N_h, 2)`` array, start and end.

    For the learned encoding the recorded "centre" is the mean shift E[δ] of the head's
    position-only attention (:meth:`SelfAttentionClassifier.attention_parameters`)."""
    records = [history["initial_attention"]] + [
        e["attention"] for e in history["epochs"] if e.get("attention") is not None
    ]
    n_layers = len(records[0])
    if not -n_layers <= layer < n_layers:
        raise ValueError(
            f"layer {layer} out of range: the model has {n_layers} attention layers"
        )
    if "centers" not in records[0][layer]:
        raise ValueError(
            f"layer {layer} has no head centres (pruned or not an attention layer)"
        )
    return np.stack(
        [
            np.asarray(r[layer]["centers"], dtype=np.float64).reshape(-1, 2)
            for r in records
        ]
    )


def head_summary(
    history: dict, kernel_size: int = 3, radius: float = 0.5
) -> List[dict]:
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
    """:func:`head_summary` as text, numbers to 2 decimals, layers numbered from 1 as in the paper,
    start → end of training; a head's width as its standard deviation, 1/s, in tokens; a few
    short lines per layer, so that it fits the book's column."""
    k2 = kernel_size * kernel_size
    lines = []
    for r in rows:
        lines.append(
            f"layer {r['layer'] + 1}: {r['num_heads']} heads, mean centre movement "
            f"{r['mean_movement']:.2f} tokens"
        )
        lines.append(
            f"    mean distance from the query {r['mean_offset_init']:.2f} → "
            f"{r['mean_offset']:.2f} tokens"
        )
        if "spread_end" in r:  # the median spread s: its inverse is the median width
            lines.append(
                f"    median standard deviation {1 / r['spread_init']:.2f} → "
                f"{1 / r['spread_end']:.2f} tokens"
            )
        points = " ".join(signed_shift(p) for p in r.get("covered_end", []))
        lines.append(
            f"    {kernel_size}×{kernel_size} lattice points covered {r['coverage_init']}/{k2} "
            f"→ {r['coverage_end']}/{k2}: {points or 'none'}"
        )
    return fit_column("\n".join(lines))


def head_table(history: dict, epoch: int = -1, kernel_size: int = 3):
    """Every head of every layer of a quadratic run after ``epoch`` as one Markdown table
    (:func:`~attnconv.chapters.shared.tables.markdown_table`): a row per head and, per layer, its
    centre Δ_h (row, column), its spread s_h, the distance of Δ_h to the nearest point of the K×K
    lattice ("dist.") and its largest attention probability for the centre query token ("max
    p"), all to 2 decimals, narrow enough for the
    book's column at 1280 px."""
    records = layer_records(history, epoch)
    g = tokens_per_side(history)
    columns, per_layer = ["head"], []
    for i, rec in enumerate(records):
        if "spreads" not in rec:
            raise ValueError(f"layer {i} has no quadratic heads")
        maps = gaussian_head_maps(rec, (g, g), (g // 2, g // 2))
        centers = torch.as_tensor(rec["centers"], dtype=torch.float64)
        dist = lattice_distance(centers, kernel_size)
        columns += [f"layer {i + 1}: Δ", "s", "dist.", "max p"]
        per_layer.append(
            [
                (
                    f"{float(c[0]):+.2f},\u00a0{float(c[1]):+.2f}",  # one line in the table
                    f"{abs(float(s)):.2f}",
                    f"{float(d):.2f}",
                    f"{float(m.max()):.2f}",
                )
                for c, s, d, m in zip(centers, rec["spreads"], dist, maps)
            ]
        )
    n = max(len(cells) for cells in per_layer)
    rows = []
    for h in range(n):
        row = [h + 1]
        for cells in per_layer:
            row += list(cells[h]) if h < len(cells) else ["", "", "", ""]
        rows.append(row)
    return markdown_table(columns, rows)
