"""Chapter "Six layers": the paper's claims about depth, measured on the ``deep`` profile's runs.

The paper reads its six-layer figures in words (arXiv v1; quoted in the chapter):

* Sec. 4.2, Fig. 3 (ICLR Fig. 4): "in the first few layers the heads tend to focus on local
  patterns (layers 1 and 2), while deeper layers (layers 3-6) also attend to larger patterns by
  positioning the center of attention further from the queried pixel position";
* Sec. 4.2, Fig. 10 (ICLR Fig. 14): "attention heads do not overlap and seem to take an
  arrangement maximizing the coverage of the input space";
* Sec. 4.3, Fig. 6 (ICLR Fig. 5), learned encoding: heads of the first two layers "learn to attend
  to individual pixels", other heads to "horizontally-symmetric but non-localized patterns",
  "vertical symmetry is much more rare in the learned attention probabilities of high layers",
  and "some of the heads in the last two layers seem to be redundant".

:func:`depth_rows` measures every layer of a saved run for the centre query token, from its maps
(:mod:`attnconv.core.map_measures`) and head centres (:mod:`attnconv.core.lattice`);
:func:`depth_claims` turns the rows into one checked statement per claim; :func:`removal_rows`
reads what removing each layer's heads, or each single head, does to the test accuracy
(computed once from the trained weights by :func:`attnconv.experiments.pruning.layer_removal_accuracies`
and :func:`~attnconv.experiments.pruning.head_removal_accuracies` in :func:`removal_accuracies`, saved as
``removal.json`` by ``python -m attnconv.regenerate``).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence

import numpy as np
import torch

from ..core.lattice import lattice_coverage, peak_probability
from ..core.map_measures import (attention_spread, distance_to_uniform, mean_attention_distance, mirror_symmetry,
                                 shared_mass)
from ..experiments.store import REMOVAL_FILE, read_json
from .how_convolutional import load_saved_runs
from .paper_figures import layer_attention_maps, layer_records

__all__ = [
    "DEEP_PROFILE",
    "DEEP_RUNS",
    "OVERLAP_SHARED_MASS",
    "NEAR_UNIFORM_TV",
    "SYMMETRIC_SCORE",
    "LOCALIZED_PEAK",
    "HARMLESS_DROP",
    "REMOVAL_FILE",
    "deep_runs",
    "depth_rows",
    "format_depth_table",
    "depth_claims",
    "format_claims",
    "load_removal",
    "removal_accuracies",
    "removal_rows",
    "format_removal_table",
]

#: The profile whose saved runs the chapter reads: ``$ATTNCONV_DEEP_PROFILE``, else ``deep`` (set it to
#: ``paper`` after training the paper-size runs on a GPU box).
DEEP_PROFILE = os.environ.get("ATTNCONV_DEEP_PROFILE") or "deep"
#: The saved runs of the ``deep`` profile the chapter reads: label → (model, tag).
DEEP_RUNS = {
    "quadratic": ("quadratic", None),
    "generalized": ("generalized", None),
    "learned": ("learned", None),
    "quadratic, 16 heads": ("quadratic", "16heads"),
}
#: Two heads *overlap* when they share more than half of their attention mass (Σ_k min(p_i, p_j)).
OVERLAP_SHARED_MASS = 0.5
#: A head is *nearly uniform* (it averages the image) when its map is within this total-variation
#: distance of the uniform map; such heads are symmetric trivially and are left out of the symmetry counts.
NEAR_UNIFORM_TV = 0.25
#: A head is *symmetric* (left-right or up-down) when :func:`mirror_symmetry` is at least this.
SYMMETRIC_SCORE = 0.9
#: A head *attends to an individual pixel* when one key gets more than this probability.
LOCALIZED_PEAK = 0.5
#: A head is *redundant* when removing it costs at most this much test accuracy (0.5 points: 5 of the
#: 1,017 test images of the sample).
HARMLESS_DROP = 0.005


def deep_runs(specs: Mapping[str, tuple] = DEEP_RUNS):
    """The saved ``deep`` runs among ``specs`` (nothing is trained): ``(runs, missing)``."""
    return load_saved_runs(specs, DEEP_PROFILE)


def _grid(run) -> int:
    mc = run.history["model_config"]
    return int(mc["image_size"]) // int(mc["downsample"])


def depth_rows(run, label: str, kernel_size: int = 3, radius: float = 0.5) -> List[dict]:
    """One row per layer (``layer`` 0-based) of a saved run after its last epoch, for the centre
    query token: ``heads``; ``centre_distance`` (mean ‖Δ_h‖, tokens: for the Gaussian encodings the
    saved centre, for the learned encoding the mean shift of its map); ``attention_distance`` (mean
    E‖k − q‖ over the heads' maps) and ``spread`` (mean standard deviation of the maps);
    ``coverage`` of the K×K lattice; ``localized`` (heads with a key above :data:`LOCALIZED_PEAK`);
    ``near_uniform`` (heads within :data:`NEAR_UNIFORM_TV` of uniform); ``overlapping_pairs``
    (pairs sharing more than :data:`OVERLAP_SHARED_MASS`); ``left_right`` / ``up_down`` (heads,
    not nearly uniform, with mirror symmetry ≥ :data:`SYMMETRIC_SCORE`). ``None`` maps (a run
    whose maps cannot be had) raise."""
    g = _grid(run)
    query = (g // 2, g // 2)
    maps = layer_attention_maps(run, query)
    if maps is None:
        raise ValueError(f"{label}: no attention maps (saved attention_maps.json or the Gaussian parameters)")
    rows = []
    for i, (rec, m) in enumerate(zip(layer_records(run.history, -1), maps)):
        if m is None or "centers" not in rec:
            continue
        m = torch.as_tensor(m, dtype=torch.float64)
        centers = torch.as_tensor(rec["centers"], dtype=torch.float64).reshape(-1, 2)
        shared = shared_mass(m)
        n = m.shape[0]
        pairs = int(sum(bool(shared[a, b] > OVERLAP_SHARED_MASS) for a in range(n) for b in range(a + 1, n)))
        uniform = distance_to_uniform(m) < NEAR_UNIFORM_TV
        lr = mirror_symmetry(m, query, "left-right") >= SYMMETRIC_SCORE
        ud = mirror_symmetry(m, query, "up-down") >= SYMMETRIC_SCORE
        rows.append({
            "model": label, "layer": i, "heads": n,
            "centre_distance": float(centers.norm(dim=1).mean()),
            "attention_distance": float(mean_attention_distance(m, query).mean()),
            "spread": float(attention_spread(m).mean()),
            "coverage": lattice_coverage(centers, kernel_size, radius),
            "localized": int((peak_probability(m) > LOCALIZED_PEAK).sum()),
            "near_uniform": int(uniform.sum()),
            "overlapping_pairs": pairs,
            "left_right": int((lr & ~uniform).sum()),
            "up_down": int((ud & ~uniform).sum()),
        })
    return rows


def format_depth_table(rows: Sequence[dict], kernel_size: int = 3, part: str = "where") -> str:
    """:func:`depth_rows` as a Markdown table (layers from 1; distances in tokens, 2 decimals), in two
    parts that fit the column: ``part="where"`` — where the heads look (centre and attention
    distance, spread, lattice points covered, heads on one pixel); ``part="how"`` — how they relate
    (nearly uniform heads, overlapping pairs, left-right and up-down symmetric heads)."""
    k2 = kernel_size * kernel_size
    if part == "where":
        lines = ["| model | layer | centre distance | attention distance | spread | lattice points covered "
                 "| heads on one pixel |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for r in rows:
            lines.append(f"| {r['model']} | {r['layer'] + 1} | {r['centre_distance']:.2f} | {r['attention_distance']:.2f} "
                         f"| {r['spread']:.2f} | {r['coverage']} / {k2} | {r['localized']} / {r['heads']} |")
    elif part == "how":
        lines = ["| model | layer | nearly uniform heads | overlapping pairs | left-right symmetric | up-down symmetric |",
                 "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for r in rows:
            lines.append(f"| {r['model']} | {r['layer'] + 1} | {r['near_uniform']} / {r['heads']} | "
                         f"{r['overlapping_pairs']} | {r['left_right']} | {r['up_down']} |")
    else:
        raise ValueError(f"part must be 'where' or 'how', got {part!r}")
    return "\n".join(lines)


def _mean(rows, key, layers) -> float:
    vals = [r[key] for r in rows if r["layer"] in layers]
    return float(np.mean(vals)) if vals else float("nan")


def depth_claims(rows_by_model: Mapping[str, Sequence[dict]], removal: Optional[Mapping[str, dict]] = None) -> List[dict]:
    """The paper's depth claims, one dict per (claim, model): ``claim``, ``model``, ``measured``
    (the numbers, as text) and ``holds`` (bool). Layers counted from 1 as in the paper; "first
    layers" are 1-2 and "deeper" 3-6 (its words), "high layers" 4-6, "last two" 5-6.

    ``removal``: model → :func:`load_removal` dict, for the redundancy claim."""
    out = []
    for model, rows in rows_by_model.items():
        n_layers = max(r["layer"] for r in rows) + 1
        first, deep = {0, 1}, set(range(2, n_layers))
        high, last_two, others = set(range(3, n_layers)), set(range(n_layers - 2, n_layers)), set(range(n_layers - 2))
        a1, a2 = _mean(rows, "attention_distance", first), _mean(rows, "attention_distance", deep)
        c1, c2 = _mean(rows, "centre_distance", first), _mean(rows, "centre_distance", deep)
        out.append({"claim": "deeper layers attend further from the query (Sec. 4.2)", "model": model,
                    "measured": f"attention distance, layers 1-2: {a1:.2f}, layers 3-{n_layers}: {a2:.2f}; "
                                f"centre distance {c1:.2f} vs {c2:.2f}",
                    "holds": bool(a2 > a1 and c2 > c1)})
        pairs = sum(r["overlapping_pairs"] for r in rows)
        out.append({"claim": "heads do not overlap (Sec. 4.2)", "model": model,
                    "measured": f"{pairs} pairs of heads share > {OVERLAP_SHARED_MASS:.0%} of their mass "
                                f"(per layer: {', '.join(str(r['overlapping_pairs']) for r in rows)})",
                    "holds": pairs == 0})
        if model.startswith("learned"):
            loc1, loc_hi = sum(r["localized"] for r in rows if r["layer"] in first), sum(r["localized"] for r in rows if r["layer"] in high)
            out.append({"claim": "layers 1-2 have heads on individual pixels, layers 4-6 deviate (Sec. 4.3)", "model": model,
                        "measured": f"heads with a key above {LOCALIZED_PEAK:.0%}: layers 1-2: {loc1}, layers 4-{n_layers}: {loc_hi}",
                        "holds": bool(loc1 > 0 and loc1 > loc_hi)})
            lr = sum(r["left_right"] for r in rows if r["layer"] in high)
            ud = sum(r["up_down"] for r in rows if r["layer"] in high)
            out.append({"claim": "high layers: left-right symmetry common, up-down rare (Sec. 4.3)", "model": model,
                        "measured": f"layers 4-{n_layers}: {lr} left-right, {ud} up-down symmetric heads "
                                    f"(not nearly uniform)",
                        "holds": bool(lr > ud)})
        if removal and model in removal:
            rem = removal[model]
            drops = [[rem["full"] - a for a in layer] for layer in rem["without_head"]]
            last = [d for i in last_two for d in drops[i]]
            other = [d for i in others for d in drops[i]]
            h_last = sum(d <= HARMLESS_DROP for d in last)
            h_other = sum(d <= HARMLESS_DROP for d in other)
            out.append({"claim": "some heads of the last two layers look redundant (Sec. 4.3)", "model": model,
                        "measured": f"heads whose removal costs ≤ {100 * HARMLESS_DROP:.1f} points: layers 5-6: "
                                    f"{h_last} of {len(last)}, layers 1-4: {h_other} of {len(other)}; mean drop "
                                    f"{100 * np.mean(last):.1f} vs {100 * np.mean(other):.1f} points",
                        "holds": bool(h_last * len(other) > h_other * len(last))})
    return out


def format_claims(claims: Sequence[dict]) -> str:
    """:func:`depth_claims` as a Markdown table."""
    lines = ["| paper's claim | model | measured | holds |", "| --- | --- | --- | --- |"]
    for c in claims:
        lines.append(f"| {c['claim']} | {c['model']} | {c['measured']} | {'yes' if c['holds'] else 'no'} |")
    return "\n".join(lines)


def load_removal(run_dir) -> Optional[dict]:
    """The saved ``removal.json`` of a run folder, or ``None`` (made by
    ``python -m attnconv.regenerate --only <run>/removal``)."""
    path = Path(run_dir) / REMOVAL_FILE
    return read_json(path) if path.is_file() else None


def removal_accuracies(run, data=None, batch_size: int = 500) -> dict:
    """What ``removal.json`` holds, computed from a run loaded with its trained weights
    (``run.model``): test accuracy of the full model, without each layer's heads
    (:func:`~attnconv.experiments.pruning.layer_removal_accuracies`) and without each single head
    (:func:`~attnconv.experiments.pruning.head_removal_accuracies`), no retraining. ``data``: a
    :class:`~attnconv.experiments.data.CifarData` (default: the run's data set; the run's test subset is used)."""
    from ..experiments.data import load_cifar10
    from ..experiments.pruning import head_removal_accuracies, layer_removal_accuracies
    from ..experiments.train import evaluate

    if run.model is None:
        raise ValueError(f"{run.run_dir}: removal needs the trained weights (load the run with its model)")
    if data is None:
        data = load_cifar10(run.config.data, root=run.config.data_root, verbose=False)
    data = data.subset(run.config.train_subset, run.config.test_subset)  # the test images the run used
    model = run.model.eval()

    def accuracy(m):
        return evaluate(m, data.x_test, data.y_test, batch_size)[1]

    result = layer_removal_accuracies(model, accuracy)
    result["without_head"] = head_removal_accuracies(model, accuracy)["without_head"]
    result["note"] = (f"test accuracy on the {len(data.x_test):,} test images, heads removed with "
                      "attnconv.experiments.pruning.prune_heads, no retraining")
    return result


def removal_rows(removal: Mapping[str, dict]) -> List[dict]:
    """Per model and layer: accuracy of the full model, without the layer's heads, and the
    smallest / median / largest drop when one head is removed (accuracy points)."""
    rows = []
    for model, rem in removal.items():
        for i, (without_layer, heads) in enumerate(zip(rem["without_layer"], rem["without_head"])):
            drops = np.array([rem["full"] - a for a in heads]) * 100
            rows.append({"model": model, "layer": i, "full": rem["full"], "without_layer": without_layer,
                         "head_drop_min": float(drops.min()), "head_drop_median": float(np.median(drops)),
                         "head_drop_max": float(drops.max()),
                         "harmless_heads": int((drops <= 100 * HARMLESS_DROP + 1e-9).sum()), "heads": len(heads)})
    return rows


def format_removal_table(rows: Sequence[dict]) -> str:
    """:func:`removal_rows` as a Markdown table (accuracies in %, drops in points)."""
    lines = ["| model (test accuracy) | layer | without the layer's heads | one head removed: drop min / median / max "
             "| heads costing ≤ 0.5 points |",
             "| --- | ---: | ---: | --- | ---: |"]
    for r in rows:
        lines.append(f"| {r['model']} ({100 * r['full']:.1f} %) | {r['layer'] + 1} | {100 * r['without_layer']:.1f} % | "
                     f"{r['head_drop_min']:.1f} / {r['head_drop_median']:.1f} / {r['head_drop_max']:.1f} | "
                     f"{r['harmless_heads']} / {r['heads']} |")
    return "\n".join(lines)
