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
:func:`removal_rows` reads what removing each layer's heads, or each single head, does to the test
accuracy (computed once from the trained weights, with every ablated model's per-image
predictions, by :func:`attnconv.experiments.studies_removal.removal_accuracies`, saved as
``removal.json`` by ``python -m attnconv.regenerate``; read by :func:`load_removal`); the
``plot_*`` functions draw the chapter's
figures. The verdicts on the claims are made from these measures by
:mod:`attnconv.chapters.paper_verdicts` (the claims: :mod:`attnconv.experiments.claims`).
"""

from __future__ import annotations

import os
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import torch

from ...core.lattice import lattice_coverage, peak_probability
from ...core.map_measures import (
    attention_spread,
    distance_to_uniform,
    mean_attention_distance,
    mirror_symmetry,
    shared_mass,
)
from ...experiments.claims import HARMLESS_DROP, ONE_KEY
from ...experiments.studies_pruning import study_predictions
from ...experiments.studies_removal import (
    removal_interval,
)
from ...experiments.verdicts import (
    UNPAIRED,
    final_test_accuracies,
    seed_series,
    test_labels,
)
from .attention_maps import layer_attention_maps
from .saved_runs import load_saved_runs, tokens_per_side
from .trained_heads import layer_records

__all__ = [
    "DEEP_PROFILE",
    "DEEP_RUNS",
    "OVERLAP_SHARED_MASS",
    "NEAR_UNIFORM_TV",
    "SYMMETRIC_SCORE",
    "NON_ISOTROPIC_CONDITION",
    "deep_runs",
    "shallow_runs",
    "uniform_attention_distance",
    "depth_rows",
    "format_depth_table",
    "layer_values_rows",
    "LAYER_VALUES_COLUMNS",
    "pruning_accuracies",
    "accuracy_series",
    "removal_rows",
    "format_removal_table",
    "ACCURACY_SERIES",
    "CONVERGED_SHARE",
    "learned_localized",
    "series_runs",
    "seed_depth_rows",
    "learned_seed_localized",
    "pruned_counts_from_history",
    "lemma_shifts_covered",
    "plot_depth_measures",
    "plot_fresh_profiles",
    "fresh_map_distances",
    "plot_layer_distances",
    "plot_removal_seeds",
    "plot_accuracy_series",
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
#: A generalized head is *non-isotropic* when the condition number of its Σ⁻¹ is above this.
NON_ISOTROPIC_CONDITION = 2.0


def deep_runs(specs: Mapping[str, tuple] = DEEP_RUNS):
    """The saved ``deep`` runs among ``specs`` (nothing is trained): ``(runs, missing)``."""
    return load_saved_runs(specs, DEEP_PROFILE)


def shallow_runs(specs: Mapping[str, tuple] = DEEP_RUNS):
    """The saved 2-layer ``cpu`` runs of the same models (the earlier chapters' runs), for the evidence
    they add to the depth claims: ``(runs, missing)``."""
    return load_saved_runs(specs, "cpu")


def uniform_attention_distance(grid: int) -> float:
    """E‖k − q‖ (tokens) of the uniform map over a ``grid``×``grid`` grid, from the centre query: the
    attention distance of a head that averages the image."""
    m = torch.full((1, grid, grid), 1.0 / grid**2, dtype=torch.float64)
    return float(mean_attention_distance(m, (grid // 2, grid // 2))[0])


def _overlapping_pairs(shared: torch.Tensor, loc: torch.Tensor):
    """Pairs of heads sharing more than :data:`OVERLAP_SHARED_MASS`: all, and both localized."""
    n = shared.shape[0]
    pairs = int(
        sum(
            bool(shared[a, b] > OVERLAP_SHARED_MASS)
            for a in range(n)
            for b in range(a + 1, n)
        )
    )
    loc_pairs = int(
        sum(
            bool(shared[a, b] > OVERLAP_SHARED_MASS and loc[a] and loc[b])
            for a in range(n)
            for b in range(a + 1, n)
        )
    )
    return pairs, loc_pairs


def _non_isotropic(run, rec) -> Optional[int]:
    """Generalized heads whose Σ⁻¹ has a condition number above the threshold (else None)."""
    if run.config.model == "generalized" and "inverse_covariance" in rec:
        ev = torch.linalg.eigvalsh(
            torch.as_tensor(rec["inverse_covariance"], dtype=torch.float64)
        )
        return int((ev[:, 1] > NON_ISOTROPIC_CONDITION * ev[:, 0]).sum())
    return None


def depth_rows(
    run, label: str, kernel_size: int = 3, radius: float = 0.5
) -> List[dict]:
    """One row per layer (``layer`` 0-based) of a saved run after its last epoch, for the centre
    query token: ``heads``; ``centre_distance`` (mean ‖Δ_h‖, tokens: for the Gaussian encodings the
    saved centre, for the learned encoding the mean shift of its map); ``attention_distance`` (mean
    E‖k − q‖ over the heads' maps) and ``spread`` (mean standard deviation of the maps);
    ``coverage`` of the K×K lattice; ``localized`` (heads with a key above :data:`~attnconv.experiments.claims.ONE_KEY`);
    ``sharp_coverage`` (lattice points with a localized head's centre within ``radius``);
    ``near_uniform`` (heads within :data:`NEAR_UNIFORM_TV` of uniform); ``overlapping_pairs``
    (pairs sharing more than :data:`OVERLAP_SHARED_MASS`) out of ``pairs`` (N_h(N_h − 1)/2), and
    ``localized_overlapping_pairs`` (both heads localized: broad heads overlap by construction);
    ``closest_centres`` (the smallest distance between two head centres, tokens); ``left_right`` /
    ``up_down`` (heads, not nearly uniform, with mirror symmetry ≥ :data:`SYMMETRIC_SCORE`);
    ``non_isotropic`` (generalized heads whose Σ⁻¹ has a condition number above
    :data:`NON_ISOTROPIC_CONDITION`; ``None`` for other encodings). ``None`` maps (a run whose maps
    cannot be had) raise."""
    g = tokens_per_side(run.history)
    query = (g // 2, g // 2)
    maps = layer_attention_maps(run, query)
    if maps is None:
        raise ValueError(
            f"{label}: no attention maps (saved attention_maps.json or the Gaussian parameters)"
        )
    rows = []
    for i, (rec, m) in enumerate(zip(layer_records(run.history, -1), maps)):
        if m is None or "centers" not in rec:
            continue
        m = torch.as_tensor(m, dtype=torch.float64)
        centers = torch.as_tensor(rec["centers"], dtype=torch.float64).reshape(-1, 2)
        n = m.shape[0]
        loc = peak_probability(m) > ONE_KEY
        pairs, loc_pairs = _overlapping_pairs(shared_mass(m), loc)
        gaps = torch.cdist(centers, centers) + torch.eye(n, dtype=torch.float64) * 1e9
        non_iso = _non_isotropic(run, rec)
        uniform = distance_to_uniform(m) < NEAR_UNIFORM_TV
        lr = mirror_symmetry(m, query, "left-right") >= SYMMETRIC_SCORE
        ud = mirror_symmetry(m, query, "up-down") >= SYMMETRIC_SCORE
        rows.append(
            {
                "model": label,
                "layer": i,
                "heads": n,
                "grid_tokens": g * g,
                "centre_distance": float(centers.norm(dim=1).mean()),
                "attention_distance": float(mean_attention_distance(m, query).mean()),
                "spread": float(attention_spread(m).mean()),
                "coverage": lattice_coverage(centers, kernel_size, radius),
                "sharp_coverage": lattice_coverage(centers[loc], kernel_size, radius)
                if bool(loc.any())
                else 0,
                "localized": int(loc.sum()),
                "near_uniform": int(uniform.sum()),
                "overlapping_pairs": pairs,
                "pairs": n * (n - 1) // 2,
                "localized_overlapping_pairs": loc_pairs,
                "closest_centres": float(gaps.min()) if n > 1 else float("nan"),
                "non_isotropic": non_iso,
                "left_right": int((lr & ~uniform).sum()),
                "up_down": int((ud & ~uniform).sum()),
            }
        )
    return rows


def format_depth_table(
    rows: Sequence[dict], kernel_size: int = 3, part: str = "where"
) -> str:
    """:func:`depth_rows` as a Markdown table (layers from 1; distances in tokens, 2 decimals), in two
    parts that fit the column: ``part="where"`` — where the heads look (centre and attention
    distance, spread, lattice points covered, heads on one pixel); ``part="how"`` — how they relate
    (nearly uniform heads, overlapping pairs as a share of the layer's pairs and those of two
    localized heads, the closest two centres, left-right and up-down symmetric heads)."""
    k2 = kernel_size * kernel_size
    if part == "where":
        lines = [
            "| model | layer | centre distance | attention distance | spread | lattice points covered "
            "| heads on one pixel |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in rows:
            lines.append(
                f"| {r['model']} | {r['layer'] + 1} | {r['centre_distance']:.2f} | {r['attention_distance']:.2f} "
                f"| {r['spread']:.2f} | {r['coverage']} / {k2} | {r['localized']} / {r['heads']} |"
            )
    elif part == "how":
        lines = [
            "| model | layer | nearly uniform heads | overlapping pairs (share of pairs) "
            "| of them both localized | closest centres | left-right symmetric | up-down symmetric |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in rows:
            lines.append(
                f"| {r['model']} | {r['layer'] + 1} | {r['near_uniform']} / {r['heads']} | "
                f"{r['overlapping_pairs']} / {r['pairs']} ({100 * r['overlapping_pairs'] / r['pairs']:.0f} %) | "
                f"{r['localized_overlapping_pairs']} | {r['closest_centres']:.2f} | "
                f"{r['left_right']} | {r['up_down']} |"
            )
    else:
        raise ValueError(f"part must be 'where' or 'how', got {part!r}")
    return "\n".join(lines)


#: The columns of :func:`layer_values_rows` before the layers: model, seed, measure.
LAYER_VALUES_COLUMNS = ("model", "seed", "measure")


def _model_seed(label: str, seeds: Mapping[str, object]) -> Tuple[str, str]:
    """("quadratic", "0") from "quadratic, seed 0"; a label without a seed takes ``seeds``'s."""
    model, sep, seed = label.rpartition(", seed ")
    if sep:
        return model, seed
    if label not in seeds:
        raise ValueError(f"{label!r}: no seed in the label and none given")
    return label, str(seeds[label])


def layer_values_rows(
    drawn: Mapping[str, Sequence[dict]],
    learned_seeds: Optional[Mapping[str, Sequence[int]]] = None,
    seeds: Optional[Mapping[str, object]] = None,
) -> Tuple[List[str], List[List[str]]]:
    """Every run's per-layer measures as one table: ``(columns, rows)``, a row per run and measure
    (model, seed, measure, then one value per layer from layer 1). ``drawn``: label → the run's
    :func:`depth_rows` (a label "quadratic, seed 1" carries its seed; any other takes
    ``seeds[label]``): its attention distance (tokens, 2 decimals), heads on one key and
    overlapping pairs, each "of" the layer's heads or pairs. ``learned_seeds``: seed label →
    heads on one key per layer read from the saved peaks (:func:`learned_seed_localized`)."""
    learned_seeds, seeds = learned_seeds or {}, seeds or {}
    layers = {len(r) for r in drawn.values()} | {len(c) for c in learned_seeds.values()}
    if len(layers) != 1:
        raise ValueError(
            f"every run needs the same number of layers, got {sorted(layers)}"
        )
    (n,) = layers
    rows = []
    for label, r in drawn.items():
        model, seed = _model_seed(label, seeds)
        rows.append(
            [model, seed, "attention distance (tokens)"]
            + [f"{x['attention_distance']:.2f}" for x in r]
        )
        rows.append(
            [model, seed, f"heads on one key (of {r[0]['heads']})"]
            + [str(x["localized"]) for x in r]
        )
        rows.append(
            [model, seed, f"overlapping pairs (of {r[0]['pairs']})"]
            + [str(x["overlapping_pairs"]) for x in r]
        )
    for label, counts in learned_seeds.items():
        _, seed = _model_seed(f"learned, {label}", seeds)
        rows.append(
            ["learned", seed, "heads on one key, saved peaks"]
            + [str(c) for c in counts]
        )
    return list(LAYER_VALUES_COLUMNS) + [f"layer {i}" for i in range(1, n + 1)], rows


def lemma_shifts_covered(history: Mapping, kernel_size: int = 3) -> List[int]:
    """Per layer of a learned-encoding run, the shifts of the K×K kernel (out of K²) on which some
    head puts more than :data:`~attnconv.experiments.claims.ONE_KEY` of its attention (its saved ``peak_shift`` and
    ``peak_probability``, centre query): Lemma 1's condition needs all K² in one layer."""
    half = kernel_size // 2
    out = []
    for rec in layer_records(history, -1):
        if "peak_probability" not in rec:
            continue
        hit = {
            (int(round(d[0])), int(round(d[1])))
            for d, p in zip(rec["peak_shift"], rec["peak_probability"])
            if p > ONE_KEY and max(abs(d[0]), abs(d[1])) <= half
        }
        out.append(len(hit))
    return out


def pruning_accuracies(study: Mapping, k: int) -> Dict[str, object]:
    """From a saved pruning study (``pruning.json``) whose rule selected ``k`` heads: test accuracy
    ``full`` (unpruned), ``pruned`` (the ``k`` degenerate heads removed, no retraining),
    ``retrained`` (after the study's retraining), ``random`` (mean over the ``random_draws`` saved
    draws of ``k`` random heads removed, when saved) and the study's ``retrain_epochs`` and
    ``base_epochs``, as :func:`pruning_claims` takes them; where the study kept per-image
    predictions, ``full_predictions``, ``pruned_predictions``, ``retrained_predictions`` and the
    test images' ``labels`` too (for the paired test)."""
    curve = study["curve"]["degenerate_first"]
    ret = next(r for r in study["retrained"] if r["k"] == k)
    out = {
        "full": float(curve[0]),
        "pruned": float(curve[k]),
        "retrained": float(ret["test_acc"][-1]),
    }
    draws = study["curve"].get("random")
    if draws:
        out["random"] = float(np.mean([d[k] for d in draws]))
        out["random_draws"] = len(draws)
    for key in ("retrain_epochs", "base_epochs"):
        if key in study:
            out[key] = int(study[key])
    preds = {
        "full_predictions": study_predictions(study, 0),
        "pruned_predictions": study_predictions(study, k),
        "retrained_predictions": study_predictions(study, k, "retrained"),
    }
    if all(p is not None for p in preds.values()):
        data = (study.get("base_config") or {}).get("data", "sample")
        labels = test_labels(data, (study.get("base_config") or {}).get("test_subset"))
        if labels is not None:
            out.update(preds, labels=labels)
    return out


#: The seed series of Sec. 3's comparison: description → (quadratic series, learned series), each
#: pair at the same epochs (``profile/name`` of :data:`~attnconv.experiments.verdicts.SEED_SERIES`).
ACCURACY_SERIES = {
    "2 layers, 16 epochs": ("cpu/quadratic", "cpu/learned"),
    "2 layers, 40 epochs": ("cpu/quadratic-40epochs", "cpu/learned-40epochs"),
    "6 layers, 40 epochs": ("deep/quadratic", "deep/learned"),
}


def _series_spread(key: str, runs_root, messages: List[str]):
    profile, name = key.split("/", 1)
    s = seed_series(profile, name, runs_root)
    if s.missing:
        messages.append(s.message())
    if not s.histories:
        return None, None
    n_test = next(iter(s.histories.values())).get("test_size")
    return final_test_accuracies(s), n_test


def accuracy_series(runs_root=None, series: Mapping[str, tuple] = ACCURACY_SERIES):
    """The quadratic and learned seed series of :data:`ACCURACY_SERIES`
    (:func:`~attnconv.experiments.verdicts.seed_series`), as :func:`accuracy_claim` takes them:
    ``(series, messages)``, one message per series that misses seeds."""
    out, messages = {}, []
    for label, (qk, lk) in series.items():
        q, _ = _series_spread(qk, runs_root, messages)
        l, _ = _series_spread(lk, runs_root, messages)
        out[label] = (q, l)
    return out, messages


#: A run has *converged* when its test accuracy first reaches this share of its final value.
CONVERGED_SHARE = 0.95


def removal_rows(removal: Mapping[str, dict]) -> List[dict]:
    """Per model and layer: accuracy of the full model, without the layer's heads, the 95 %
    interval of the layer's cost (full − without, points; ``paired`` when the study kept per-image
    predictions, :func:`~attnconv.experiments.studies_removal.removal_interval`), and the
    smallest / median / largest drop when one head is removed (accuracy points)."""
    rows = []
    for model, rem in removal.items():
        for i, (without_layer, heads) in enumerate(
            zip(rem["without_layer"], rem["without_head"])
        ):
            drops = np.array([rem["full"] - a for a in heads]) * 100
            iv = removal_interval(rem, i)
            rows.append(
                {
                    "model": model,
                    "layer": i,
                    "full": rem["full"],
                    "without_layer": without_layer,
                    "layer_cost_lo": -100 * iv.hi,
                    "layer_cost_hi": -100 * iv.lo,
                    "paired": not iv.method.startswith(UNPAIRED),
                    "head_drop_min": float(drops.min()),
                    "head_drop_median": float(np.median(drops)),
                    "head_drop_max": float(drops.max()),
                    "harmless_heads": int((drops <= 100 * HARMLESS_DROP + 1e-9).sum()),
                    "heads": len(heads),
                }
            )
    return rows


def format_removal_table(rows: Sequence[dict]) -> str:
    """:func:`removal_rows` as a Markdown table (accuracies in %, drops in points)."""
    lines = [
        "| model (test accuracy) | layer | without the layer's heads | one head removed: drop min / median / max "
        "| heads costing ≤ 0.5 points |",
        "| --- | ---: | ---: | --- | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} ({100 * r['full']:.1f} %) | {r['layer'] + 1} | {100 * r['without_layer']:.1f} % | "
            f"{r['head_drop_min']:.1f} / {r['head_drop_median']:.1f} / {r['head_drop_max']:.1f} | "
            f"{r['harmless_heads']} / {r['heads']} |"
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------- every seed, read


def learned_localized(history: Mapping) -> List[int]:
    """Per layer, the heads of a learned-encoding run that give more than :data:`~attnconv.experiments.claims.ONE_KEY` of
    their attention to one key (the centre query, position only), from the ``peak_probability``
    its history saved after the last epoch (every seed keeps it; no maps are needed)."""
    return [
        int(sum(p > ONE_KEY for p in rec["peak_probability"]))
        for rec in layer_records(history, -1)
        if "peak_probability" in rec
    ]


def series_runs(name: str):
    """The complete saved runs of the registry series ``name`` (or, for a profile without seed
    series such as ``paper``, its single run of that name): seed label → Run, and messages."""
    from ...experiments.registry import RUNS, SERIES, load_run, series
    from ...experiments.store import MissingResultError, StaleResultError

    if name not in SERIES and name not in RUNS:
        return {}, [f"{name}: not registered"]
    entries = series(name) if name in SERIES else [RUNS[name]]
    runs, missing = {}, []
    for entry in entries:
        try:
            runs[f"seed {entry.seed}"] = load_run(entry.name)
        except (MissingResultError, StaleResultError) as e:
            missing.append(f"{name} seed {entry.seed}: {str(e).splitlines()[0]}")
    return runs, missing


def seed_depth_rows(name: str = "deep/quadratic"):
    """:func:`depth_rows` of every saved seed of the registry series ``name`` (Gaussian heads: the
    histories hold every head's parameters): ``(seed label → rows, messages)``."""
    runs, missing = series_runs(name)
    return {k: depth_rows(r, k) for k, r in runs.items()}, missing


def learned_seed_localized(name: str = "deep/learned"):
    """:func:`learned_localized` of every saved seed of the learned series ``name``:
    ``(seed label → per-layer counts, messages)``."""
    runs, missing = series_runs(name)
    return {k: learned_localized(r.history) for k, r in runs.items()}, missing


def pruned_counts_from_history(
    history: Mapping, condition_threshold: float, max_eigenvalue_threshold: float = 1e-5
) -> List[int]:
    """Heads per layer that App. A.1's rule (:func:`~attnconv.experiments.pruning.is_degenerate`)
    prunes, from the Σ^(-1/2) factors M a generalized run's history saved after its last epoch."""
    from ...experiments.pruning import inverse_covariance_spectrum, is_degenerate

    counts = []
    for rec in layer_records(history, -1):
        m = torch.as_tensor(rec["inv_sqrt_sigma"], dtype=torch.float64)
        eig, cond = inverse_covariance_spectrum(m)
        counts.append(
            int(
                is_degenerate(
                    eig[:, 1], cond, max_eigenvalue_threshold, condition_threshold
                ).sum()
            )
        )
    return counts


# --------------------------------------------------------------------------- figures


def plot_depth_measures(
    rows_by_run: Mapping[str, Sequence[dict]], learned_seeds: Optional[Mapping] = None
):
    """Three panels over the layers (from 1): mean attention distance (tokens), the share of a
    layer's heads with more than half their attention on one key (its ``heads``; the learned
    seeds' counts over the learned run's heads), and the share of overlapping pairs; one line per run
    (each seed of a model a shade of its colour, :func:`~.plotting.seed_colours`, and a marker
    of its own; the 16-head model dashed). ``learned_seeds``: seed label →
    per-layer localized counts of the learned seeds (:func:`learned_seed_localized`), drawn in the
    middle panel. Returns the figure."""
    import matplotlib.pyplot as plt

    from .plotting import COLUMN_INCHES, SEED_MARKERS, label_colour, seed_colours

    learned_seeds = dict(learned_seeds or {})

    def family(label):
        return label.rsplit(", seed", 1)[0]

    def seed_of(label):
        return int(label.rsplit("seed", 1)[1]) if ", seed" in label else 0

    # seeds per model: the quadratic seeds, and the learned run (seed 0) with the learned seeds
    labels = list(rows_by_run) + [f"learned, {k}" for k in learned_seeds]
    n_seeds = {}
    for label in labels:
        n_seeds[family(label)] = max(n_seeds.get(family(label), 1), seed_of(label) + 1)

    def style(label):
        seed, n = seed_of(label), n_seeds[family(label)]
        colour = label_colour(label) or label_colour(label.split()[0])
        if n > 1:  # one hue per model, a shade and a marker per seed
            colour = seed_colours(family(label), n)[seed]
        # the 16-head model dashed, with its own marker, beside the quadratic seeds' blues
        wide = "16 heads" in label
        return dict(
            color=colour,
            marker="X" if wide else SEED_MARKERS[seed % len(SEED_MARKERS)],
            ms=7 if wide else 6,
            lw=1.2,
            ls="--" if wide else "-",
        )

    def shown(label):  # a run of a model drawn with several seeds names its seed
        if n_seeds[family(label)] > 1 and ", seed" not in label:
            return f"{label}, seed 0"
        return label

    fig, axes = plt.subplots(
        1, 3, figsize=(COLUMN_INCHES, 3.1), constrained_layout=True
    )
    for label, rows in rows_by_run.items():
        layers = [r["layer"] + 1 for r in rows]
        axes[0].plot(
            layers,
            [r["attention_distance"] for r in rows],
            label=shown(label),
            **style(label),
        )
        if not label.startswith("learned"):
            axes[1].plot(
                layers,
                [100 * r["localized"] / r["heads"] for r in rows],
                **style(label),
            )
        axes[2].plot(
            layers,
            [100 * r["overlapping_pairs"] / r["pairs"] for r in rows],
            **style(label),
        )
    learned_heads = [
        rows[0]["heads"] for lb, rows in rows_by_run.items() if lb.startswith("learned")
    ]
    if learned_seeds and not learned_heads:
        raise ValueError(
            "the learned seeds' counts need a learned run's rows (its heads)"
        )
    for label, counts in learned_seeds.items():
        name = f"learned, {label}"
        axes[1].plot(
            range(1, len(counts) + 1),
            [100 * c / learned_heads[0] for c in counts],
            # seed 0 is the learned run of the other panels, already in the legend
            label=None if seed_of(name) == 0 else f"{name} (middle)",
            **style(name),
        )
    titles = (  # two lines each: on one line they ran into each other
        "attention distance\n(tokens)",
        "heads > 50 % on one\nkey (% of heads)",
        "overlapping pairs\n(% of pairs)",
    )
    for ax, title in zip(axes, titles):
        ax.set_title(title)
        ax.set_xlabel("layer")
        ax.set_xticks(range(1, 7))
    handles, names = _model_legend(labels, family, seed_of, style)
    fig.legend(
        handles,
        names,
        loc="lower center",
        ncol=min(len(names), 3),
        bbox_to_anchor=(0.5, -0.2),
        frameon=False,
        handler_map={tuple: _tuple_handler()},
    )
    return fig


#: The models of :func:`plot_fresh_profiles`, in drawing order, with their labels.
FRESH_ARMS = {
    "quadratic": "quadratic",
    "generalized": "generalized",
    "quadratic-16heads": "quadratic, 16 heads",
    "learned": "learned",
}


def fresh_heads(arm: str) -> int:
    """Heads per layer of ``arm``'s fresh runs, read from its first fresh seed's registered
    config."""
    from attnconv.evidence.protocol import CONFIRMATORY_SEEDS
    from attnconv.evidence.runs import confirm_run_name
    from attnconv.experiments.registry import RUNS

    entry = RUNS[confirm_run_name(arm, CONFIRMATORY_SEEDS[0])]
    return entry.config.model_config().num_heads


def fresh_map_distances(arm: str, grid: int = 16) -> Optional[List[List[float]]]:
    """Per fresh seed of ``arm``, the attention distance E‖k − q‖ (tokens, mean over a layer's
    heads) of each layer for the centre query token, from the attention maps its run saved
    (:func:`~.attention_maps.layer_attention_maps`): the measure the Gaussian models' profiles
    compute from their parameters, for a model whose history keeps no Gaussian. ``None`` while
    a seed or a saved map is missing."""
    from ...evidence.judge import arm_runs
    from ...evidence.protocol import CONFIRMATORY_SEEDS
    from .attention_maps import layer_attention_maps

    runs = arm_runs(arm, CONFIRMATORY_SEEDS)
    if runs is None:
        return None
    centre = (grid // 2, grid // 2)
    out = []
    for run in runs:
        maps = layer_attention_maps(run)
        if maps is None or any(m is None for m in maps):
            return None
        out.append([float(mean_attention_distance(m, centre).mean()) for m in maps])
    return out


#: The two measures of :func:`plot_fresh_profiles`, left panel then right.
PROFILE_KEYS = ("attention_distance", "one_key")


def _profile_values(
    profiles, heads=None, distances=None
) -> Dict[Tuple[str, str], object]:
    """What :func:`plot_fresh_profiles` draws: per (model, measure) an array seeds × layers,
    the one-key counts as shares of the layer's heads; a measure a model cannot give is
    absent."""
    out = {}
    for arm, seeds in profiles.items():
        for key in PROFILE_KEYS:
            values = [p[key] for p in seeds if p[key] is not None]
            if not values and key == "attention_distance" and arm in (distances or {}):
                values = list(distances[arm])  # from the run's saved maps
            if not values:
                continue
            v = np.asarray(values, dtype=float)
            if key == "one_key":  # a share of the layer's heads: 9 and 16 side by side
                v = v / (heads[arm] if heads and arm in heads else fresh_heads(arm))
            out[arm, key] = v
    return out


def fresh_profiles_hover(fig, profiles, heads=None, distances=None):
    """Figure 12.1's hover values (:mod:`~attnconv.chapters.shared.hover_spots`): on each
    model's mean at each layer of :func:`plot_fresh_profiles`'s ``fig``, the model, the layer,
    the mean and the seeds' range (distance to 0.1 token, shares to 1 %). Returns the cell
    output to show under the figure."""
    from .hover_spots import HoverPoint, HoverSpots

    points = []
    for (arm, key), v in _profile_values(profiles, heads, distances).items():
        ax = fig.axes[PROFILE_KEYS.index(key)]
        for layer, (mean, low, high) in enumerate(
            zip(v.mean(0), v.min(0), v.max(0)), 1
        ):
            if key == "one_key":
                what = "heads over 0.5 on one key"
                number = (
                    f"mean {100 * mean:.0f} %, seeds {100 * low:.0f}–{100 * high:.0f} %"
                )
            else:
                what = "attention distance"
                number = f"mean {mean:.1f} tokens, seeds {low:.1f}–{high:.1f}"
            name = FRESH_ARMS.get(arm, arm)
            text = f"{name} ({len(v)} seeds), layer {layer}\n{what}: {number}"
            points.append(HoverPoint(ax, layer, float(mean), text))
    return HoverSpots(fig, points, "Figure 12.1's layers")


def plot_fresh_profiles(
    profiles: Mapping[str, Sequence[Mapping]],
    grid: int = 16,
    heads: Optional[Mapping[str, int]] = None,
    distances: Optional[Mapping[str, Sequence[Sequence[float]]]] = None,
):
    """The depth claims' two measures over the layers on the fresh seeds: mean attention distance
    (tokens; Gaussian heads only) and the share of a layer's heads (``heads``: per model, else
    :func:`fresh_heads`) with more than half their attention on one key. For
    each model of ``profiles`` (registry name → one
    :func:`~attnconv.evidence.measures.layer_profile` per seed) its mean over the seeds (line,
    its colour; the 16-head model dashed) and the range from the lowest to the highest seed
    (shaded). The left panel marks a uniform head's distance (dotted). A model whose profiles
    have no attention distance (the learned one keeps no Gaussian) takes it from ``distances``
    (per seed and layer, :func:`fresh_map_distances`), drawn like the others; without them the
    panel says so. Returns the figure."""
    import matplotlib.pyplot as plt
    import numpy as np

    from .plotting import COLUMN_INCHES, model_colour

    fig, axes = plt.subplots(
        1, 2, figsize=(COLUMN_INCHES, 3.0), constrained_layout=True
    )
    undrawn = []  # models a panel cannot draw: only peaks saved, no attention distance
    drawn = _profile_values(profiles, heads, distances)
    for arm, seeds in profiles.items():
        n = len(seeds)
        label = f"{FRESH_ARMS.get(arm, arm)} ({n} seed{'s' if n != 1 else ''})"
        style = dict(color=model_colour(arm), ls="--" if "16" in arm else "-", lw=1.6)
        for ax, key in zip(axes, PROFILE_KEYS):
            if (arm, key) not in drawn:
                undrawn.append((ax, FRESH_ARMS.get(arm, arm)))
                continue
            v = drawn[arm, key]
            layers = np.arange(1, v.shape[1] + 1)
            ax.fill_between(
                layers, v.min(0), v.max(0), color=style["color"], alpha=0.15, lw=0
            )
            ax.plot(layers, v.mean(0), marker="o", ms=4, label=label, **style)
    axes[0].axhline(uniform_attention_distance(grid), color="0.4", ls=":", lw=1)
    axes[0].annotate(
        "uniform head",
        (3.5, uniform_attention_distance(grid)),
        xytext=(0, -11),
        textcoords="offset points",
        ha="center",
        fontsize=8,
        color="0.3",
    )
    for ax, name in undrawn:  # said in the panel, not left to the legend
        ax.text(
            0.98, 0.04, f"{name}: only each head's peak\nis saved, no distance", ha="right",
            va="bottom", transform=ax.transAxes, fontsize=8.5, color="0.3",
        )  # fmt: skip
    titles = ("attention distance (tokens)", "heads > 50 % on one key")
    for ax, title in zip(axes, titles):
        ax.set_title(title)
        ax.set_xlabel("layer")
        ax.set_xticks(range(1, 7))
    axes[1].set_ylim(0, 1)
    axes[1].yaxis.set_major_formatter(lambda y, _: f"{100 * y:.0f} %")
    axes[1].set_ylabel("share of the layer's heads")
    handles, names = axes[1].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncol=2, frameon=False)
    return fig


def _tuple_handler():
    from matplotlib.legend_handler import HandlerTuple

    return HandlerTuple(ndivide=None, pad=0.6)


def _model_legend(labels: Sequence[str], family, seed_of, style):
    """Fig. 12.1's legend: one entry per model (the middle shade of its seeds' hue, no marker;
    the 16-head model dashed with its own marker) and, when a model has several seeds, one entry
    for the seeds' markers: at most five entries where one per run gave nine."""
    from matplotlib.lines import Line2D

    from .plotting import SEED_MARKERS

    runs: Dict[str, Dict[int, str]] = {}
    for label in labels:
        runs.setdefault(family(label), {}).setdefault(seed_of(label), label)
    handles, names = [], []
    for name, seeds in runs.items():
        ordered = [seeds[k] for k in sorted(seeds)]
        st = dict(style(ordered[len(ordered) // 2]))
        if "16 heads" not in name:
            st["marker"] = None
        handles.append(Line2D([], [], **st))
        names.append(name + (f" ({len(seeds)} seeds)" if len(seeds) > 1 else ""))
    most = max(len(seeds) for seeds in runs.values())
    if most > 1:
        handles.append(
            tuple(
                Line2D([], [], ls="", marker=m, color="0.35", ms=6)
                for m in SEED_MARKERS[:most]
            )
        )
        names.append("seeds " + ", ".join(str(k) for k in range(most)))
    return handles, names


def plot_layer_distances(
    rows_by_seed: Mapping[str, Sequence[dict]],
    first: int = 2,
    prefix: str = "quadratic, ",
):
    """Fig. 3's reading in numbers: per layer (from 1), the heads' mean attention distance
    E‖k − q‖ (left) and mean centre distance ‖Δ_h‖ (right), in tokens, one line per seed of the
    quadratic model (:func:`seed_depth_rows`; a shade of its colour and a marker a seed); layers 1 to ``first``
    (the paper's "first few layers") shaded. Each legend label is ``prefix`` and the seed's
    label; more than four seeds take two rows of the legend. Returns the figure."""
    import matplotlib.pyplot as plt

    from .plotting import COLUMN_INCHES, SEED_MARKERS, seed_colours

    colours = seed_colours("quadratic", len(rows_by_seed))
    fig, axes = plt.subplots(
        1, 2, figsize=(COLUMN_INCHES, 2.8), sharey=True, constrained_layout=True
    )
    keys = ("attention_distance", "centre_distance")
    titles = (
        "attention distance (tokens)",
        r"centre distance $\Vert\Delta_h\Vert$ (tokens)",
    )
    for ax, key, title in zip(axes, keys, titles):
        ax.axvspan(0.5, first + 0.5, color="0.92", zorder=0)
        for i, (label, rows) in enumerate(rows_by_seed.items()):
            ax.plot(
                [r["layer"] + 1 for r in rows],
                [r[key] for r in rows],
                label=f"{prefix}{label}",
                color=colours[i],
                marker=SEED_MARKERS[i % len(SEED_MARKERS)],
                ms=6,
                lw=1.2,
            )
        n = max(len(rows) for rows in rows_by_seed.values())
        ax.set_xticks(range(1, n + 1))
        ax.set_xlim(0.5, n + 0.5)
        ax.set_xlabel(f"layer (shaded: layers 1-{first})")
        ax.set_title(title)
        ax.set_ylim(bottom=0)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        loc="lower center",
        ncol=len(labels) if len(labels) <= 4 else -(-len(labels) // 2),
        bbox_to_anchor=(0.5, -0.12 if len(labels) <= 4 else -0.22),
        frameon=False,
    )
    return fig


def plot_removal_seeds(removal: Mapping[str, dict], model: str = "learned"):
    """Figure 12.3 on several seeds of one model (``removal``: seed label → the saved removal
    study): per layer (from 1), each seed's test accuracy lost when the layer's heads are removed,
    a dot with its paired 95 % interval (left; hollow where the interval reaches 0, so that the
    layer's cost is not told from nothing), and the heads whose removal alone costs at most
    :data:`HARMLESS_DROP` (right), each seed a dot spread across its layer's slot; a bar marks the
    seeds' mean. Returns the figure."""
    import matplotlib.pyplot as plt

    from .plotting import COLUMN_INCHES, label_colour

    rows = removal_rows(removal)
    seeds = list(removal)
    if not seeds:
        raise ValueError("no removal study to draw")
    colour = label_colour(model)
    fig, axes = plt.subplots(
        1, 2, figsize=(COLUMN_INCHES, 2.8), constrained_layout=True
    )
    spread_x = np.linspace(-0.3, 0.3, len(seeds)) if len(seeds) > 1 else np.zeros(1)
    layers = sorted({r["layer"] for r in rows})
    for j, seed in enumerate(seeds):
        mine = sorted((r for r in rows if r["model"] == seed), key=lambda r: r["layer"])
        x = np.array([r["layer"] + 1 for r in mine]) + spread_x[j]
        cost = np.array([100 * (r["full"] - r["without_layer"]) for r in mine])
        lo = np.array([r["layer_cost_lo"] for r in mine])
        hi = np.array([r["layer_cost_hi"] for r in mine])
        axes[0].vlines(x, lo, hi, color=colour, lw=0.8, alpha=0.6)
        reaches = lo <= 0
        axes[0].plot(x[~reaches], cost[~reaches], "o", ms=3.5, color=colour)
        axes[0].plot(
            x[reaches], cost[reaches], "o", ms=3.5, mfc="white", mec=colour, mew=1.0
        )
        axes[1].plot(x, [r["harmless_heads"] for r in mine], "o", ms=3.5, color=colour)
    for i in layers:
        here = [r for r in rows if r["layer"] == i]
        mean_cost = np.mean([100 * (r["full"] - r["without_layer"]) for r in here])
        mean_free = np.mean([r["harmless_heads"] for r in here])
        for ax, m in zip(axes, (mean_cost, mean_free)):
            ax.hlines(m, i + 1 - 0.4, i + 1 + 0.4, color="0.3", lw=1.5, zorder=0)
    axes[0].axhline(0, color="0.5", lw=0.8, ls=":")
    axes[0].set_title("accuracy lost without the layer (points)")
    axes[1].set_title(f"heads costing ≤ {100 * HARMLESS_DROP:.1f} points alone")
    n_heads = max(r["heads"] for r in rows)
    axes[1].set_ylim(-0.5, n_heads + 0.5)
    for ax in axes:
        ax.set_xlabel("layer")
        ax.set_xticks([i + 1 for i in layers])
    return fig


def plot_accuracy_series(series: Mapping[str, tuple], labels=("quadratic", "learned")):
    """Final test accuracy of every seed, one column per series and model: ``series`` description
    → (Spread, Spread) as :func:`accuracy_series` gives them (``None`` sides are skipped), with
    each side's seed range as a bar. Returns the figure."""
    import matplotlib.pyplot as plt

    from .plotting import COLUMN_INCHES, label_colour

    fig, ax = plt.subplots(figsize=(COLUMN_INCHES, 2.6), constrained_layout=True)
    colours = [label_colour(label) for label in labels]
    for i, (name, pair) in enumerate(series.items()):
        for j, s in enumerate(pair):
            if s is None:
                continue
            x = i + (j - 0.5) * 0.3
            ax.vlines(x, 100 * s.lo, 100 * s.hi, color=colours[j], lw=6, alpha=0.3)
            ax.plot(
                [x] * s.n,
                [100 * v for v in s.values],
                "o",
                color=colours[j],
                ms=4,
                label=labels[j] if i == 0 else None,
            )
    ax.set_xticks(range(len(series)))
    ax.set_xticklabels(list(series))
    ax.set_ylabel("test accuracy (%)")
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside
    return fig
