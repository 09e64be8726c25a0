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
:func:`depth_claims` turns the rows of the six-layer runs, and of the 2-layer runs of the earlier
chapters, into one :class:`~attnconv.experiments.verdicts.Claim` per claim (quoted from
:data:`PAPER_CLAIMS`, tested as written, the evidence of every run, a verdict by the book's rule);
:func:`pruning_claims` and :func:`accuracy_claim` (over seed series, :func:`accuracy_series`) do
the same for App. A.1's pruning and Sec. 3's accuracy claim; :func:`removal_rows`
reads what removing each layer's heads, or each single head, does to the test accuracy
(computed once from the trained weights, with every ablated model's per-image predictions, by
:func:`attnconv.experiments.studies_removal.removal_accuracies`, saved as ``removal.json`` by
``python -m attnconv.regenerate``; read by :func:`load_removal`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence

import numpy as np
import torch

from ..core.lattice import lattice_coverage, peak_probability
from ..core.map_measures import (
    attention_spread,
    distance_to_uniform,
    mean_attention_distance,
    mirror_symmetry,
    shared_mass,
)
from ..experiments.paper_numbers import PAPER_ACCURACY
from ..experiments.store import REMOVAL_FILE
from ..experiments.studies_removal import (
    load_removal,
    removal_accuracies,
    removal_predictions,
)
from ..experiments.verdicts import (
    INCONCLUSIVE,
    Claim,
    Evidence,
    Observation,
    SeriesPair,
    Setting,
    Spread,
    accuracy_noise,
    binomial_half_width,
    claim_block,
    comparative_verdict,
    existence_verdict,
    final_test_accuracies,
    seed_series,
    spread,
    verdict_table,
)
from .shared.attention_maps import layer_attention_maps
from .shared.saved_runs import load_saved_runs, tokens_per_side
from .shared.trained_heads import layer_records

__all__ = [
    "DEEP_PROFILE",
    "DEEP_RUNS",
    "OVERLAP_SHARED_MASS",
    "NEAR_UNIFORM_TV",
    "SYMMETRIC_SCORE",
    "LOCALIZED_PEAK",
    "HARMLESS_DROP",
    "NON_ISOTROPIC_CONDITION",
    "REMOVAL_FILE",
    "PAPER_CLAIMS",
    "deep_runs",
    "shallow_runs",
    "uniform_attention_distance",
    "depth_rows",
    "format_depth_table",
    "depth_claims",
    "pruning_claims",
    "pruning_accuracies",
    "accuracy_claim",
    "accuracy_series",
    "format_claims",
    "load_removal",
    "removal_accuracies",
    "removal_predictions",
    "removal_rows",
    "format_removal_table",
    "POSITIONAL_LR_CONFOUND",
    "LOCAL_DROPOUT_CONFOUND",
    "WHERE",
    "CLAIM_TITLES",
    "ACCURACY_SERIES",
    "CONVERGED_SHARE",
    "grid_claim",
    "resnet_claims",
    "no_gain_claim",
    "claim_key",
    "format_claim_blocks",
    "learned_localized",
    "seed_depth_rows",
    "learned_seed_localized",
    "pruned_counts_from_history",
    "book_claims",
    "lemma_shifts_covered",
    "learned_lemma_claim",
    "plot_depth_measures",
    "plot_removal",
    "plot_pruned_counts",
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
#: A head *attends to an individual pixel* when one key gets more than this probability.
LOCALIZED_PEAK = 0.5
#: A head is *redundant* when removing it costs at most this much test accuracy (0.5 points: 5 of the
#: 1,017 test images of the sample).
HARMLESS_DROP = 0.005
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


def depth_rows(
    run, label: str, kernel_size: int = 3, radius: float = 0.5
) -> List[dict]:
    """One row per layer (``layer`` 0-based) of a saved run after its last epoch, for the centre
    query token: ``heads``; ``centre_distance`` (mean ‖Δ_h‖, tokens: for the Gaussian encodings the
    saved centre, for the learned encoding the mean shift of its map); ``attention_distance`` (mean
    E‖k − q‖ over the heads' maps) and ``spread`` (mean standard deviation of the maps);
    ``coverage`` of the K×K lattice; ``localized`` (heads with a key above :data:`LOCALIZED_PEAK`);
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
        shared = shared_mass(m)
        n = m.shape[0]
        pairs = int(
            sum(
                bool(shared[a, b] > OVERLAP_SHARED_MASS)
                for a in range(n)
                for b in range(a + 1, n)
            )
        )
        loc = peak_probability(m) > LOCALIZED_PEAK
        loc_pairs = int(
            sum(
                bool(shared[a, b] > OVERLAP_SHARED_MASS and loc[a] and loc[b])
                for a in range(n)
                for b in range(a + 1, n)
            )
        )
        gaps = torch.cdist(centers, centers) + torch.eye(n, dtype=torch.float64) * 1e9
        non_iso = None
        if run.config.model == "generalized" and "inverse_covariance" in rec:
            ev = torch.linalg.eigvalsh(
                torch.as_tensor(rec["inverse_covariance"], dtype=torch.float64)
            )
            non_iso = int((ev[:, 1] > NON_ISOTROPIC_CONDITION * ev[:, 0]).sum())
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


def _mean(rows, key, layers) -> float:
    vals = [r[key] for r in rows if r["layer"] in layers]
    return float(np.mean(vals)) if vals else float("nan")


#: The paper's words for the claims this chapter judges (arXiv v1, verbatim; tests check them
#: against the paper's text): key → (quote, where).
PAPER_CLAIMS = {
    "local_then_far": (
        "in the first few layers the heads tend to focus on local patterns (layers 1 and 2), while deeper "
        "layers (layers 3-6) also attend to larger patterns by positioning the center of attention further "
        "from the queried pixel position",
        "Sec. 4.2, Fig. 3 (ICLR Fig. 4)",
    ),
    "no_overlap": (
        "Interestingly, attention heads do not overlap and seem to take an arrangement maximizing the "
        "coverage of the input space.",
        "Sec. 4.2, on Fig. 10 (ICLR Fig. 14)",
    ),
    "localized_first": (
        "Localized heads (i.e., those that attend to nearly individual pixels) appear more frequently in the "
        "first few layers.",
        "App. A.2, Fig. 10 (ICLR Fig. 14)",
    ),
    "learned_pixels": (
        "The figure confirms our hypothesis for the first two layers and partially for the third: even when "
        "left to learn the encoding from the data, certain self-attention heads (depicted on the left) learn "
        "to attend to individual pixels, closely matching the condition of Lemma 1 and thus Theorem 1.",
        "Sec. 4.3, Fig. 6 (ICLR Fig. 5)",
    ),
    "learned_matched_lemma": (
        "in our experiments, the relative encoding learned by the neural network also matched the "
        "conditions of the lemma",
        "Sec. 3, after eq. (9)",
    ),
    "high_layers_deviate": (
        "The phenomenon is particularly prominent for layers four to six, where the behavior of "
        "self-attention can be seen to deviate from that of convolution.",
        "Sec. 4.3, Fig. 6 (ICLR Fig. 5)",
    ),
    "vertical_rare": (
        "We also notice that vertical symmetry is much more rare in the learned attention probabilities of "
        "high layers.",
        "Sec. 4.3, Fig. 6 (ICLR Fig. 5)",
    ),
    "redundant": (
        "some of the heads in the last two layers seem to be redundant",
        "Sec. 4.3, Fig. 6 (ICLR Fig. 5)",
    ),
    "non_isotropic": (
        "the network did learn non-isotropic attention probability patterns, especially in high layers",
        "App. A.1, Fig. 7 (ICLR Fig. 12)",
    ),
    "pruned_counts": (
        "Specifically in our model with 6-layer and 9-heads each, we pruned [2,4,1,2,6,0] heads from the "
        "first to the last layer.",
        "App. A.1",
    ),
    "pruning_hurts": (
        "this ablation initially hurts a bit the performance, probably due to off biases",
        "App. A.1, Fig. 8",
    ),
    "pruning_recovers": (
        "after a few epochs of continued training with a smaller learning rate (divided by 10) "
        "the accuracy recovers its unpruned value",
        "App. A.1, Fig. 8",
    ),
    "grid_layer4": (
        "We can see that after optimization, the heads attend on specific pixel of the image "
        "forming a grid around the query pixel.",
        "Sec. 4.2, Fig. 2 (ICLR Fig. 3), layer 4 of 6",
    ),
    "non_isotropic_high": (
        "the network did learn non-isotropic attention probability patterns, especially in high layers",
        "App. A.1, Fig. 7 (ICLR Fig. 12): 'especially in high layers'",
    ),
    "no_gain": (
        "the fact that we do not obtain any performance improvement seems to suggest that "
        "attention non-isotropy is not particularly helpful in practice",
        "App. A.1",
    ),
    "resnet_faster": (
        "The ResNet is faster to converge, but we cannot ascertain whether this corresponds to "
        "an inherent property of the architecture or an artifact of the adopted optimization "
        "procedures.",
        "Sec. 4.2, Fig. 4 (ICLR Fig. 2)",
    ),
    "close_to_resnet": (
        "our implementation achieves accuracy close to that of ResNet18",
        "Sec. 4.3, Fig. 5 (ICLR Table 1)",
    ),
    "similar_or_better": (
        "while also reaching similar or better empirical performance (than the learned one)",
        f"Sec. 3, after eq. (9); Fig. 5 (ICLR Table 1): {PAPER_ACCURACY['quadratic']} vs {PAPER_ACCURACY['learned']}",
    ),
}


# --------------------------------------------------------------------------- the verdicts

#: Words for the confounds a verdict names where they touch it.
POSITIONAL_LR_CONFOUND = (
    "The cpu and deep profiles train every positional parameter (Δ, s, M, the learned "
    "tables) with ×10 the learning rate, and these are exactly the parameters whose "
    "placement the claim is about; the paper states no such multiplier."
)
LOCAL_DROPOUT_CONFOUND = (
    "The deep quadratic runs use local attention, whose attention dropout removes entries "
    "of a head's row and column factors rather than single probabilities."
)
#: Where in the book each claim's evidence is printed (MyST labels).
WHERE = {
    "grid_layer4": "sec-six-layers-grid",
    "learned_matched_lemma": "ch-learned-encoding",
    "local_then_far": "sec-six-layers-claims",
    "no_overlap": "sec-six-layers-claims",
    "localized_first": "sec-six-layers-claims",
    "learned_pixels": "sec-six-layers-claims",
    "high_layers_deviate": "sec-six-layers-claims",
    "vertical_rare": "sec-six-layers-claims",
    "redundant": "sec-six-layers-redundant",
    "non_isotropic": "sec-six-layers-claims",
    "non_isotropic_high": "sec-six-layers-claims",
    "no_gain": "sec-six-layers-accuracy",
    "similar_or_better": "sec-six-layers-accuracy",
    "resnet_faster": "sec-six-layers-accuracy",
    "close_to_resnet": "sec-six-layers-accuracy",
    "pruned_counts": "sec-six-layers-pruning",
    "pruning_hurts": "sec-six-layers-pruning",
    "pruning_recovers": "sec-six-layers-pruning",
}


def _deep(label: str) -> str:
    return f"{label}, 6 layers (deep, seed 0)"


def _shallow(label: str) -> str:
    return f"{label}, 2 layers (cpu, seed 0)"


def _per_layer(rows, key, fmt="{}") -> str:
    return ", ".join(fmt.format(r[key]) for r in rows)


def _claim(key, test, evidence, verdict, reason, confounds=()) -> Claim:
    quote, source = PAPER_CLAIMS[key]
    return Claim(
        quote,
        source,
        test,
        tuple(evidence),
        verdict,
        reason,
        tuple(confounds),
        WHERE.get(key, ""),
    )


def _counts(values: Sequence[float]) -> Spread:
    return spread(values, range(len(values)))


def _count_pair(name, a, b, labels, at_setting=True) -> SeriesPair:
    """Two per-seed counts or distances (exact properties of the parameters: no binomial noise)."""
    return SeriesPair(
        name,
        _counts(a),
        _counts(b),
        at_setting,
        None,
        labels,
        scale=1.0,
        unit="",
        digits=2,
    )


def _seed_rows(rows_by_model, seeds, model):
    """``seeds`` (label → rows) or, without it, the seed-0 run of ``model`` alone."""
    if seeds:
        return dict(seeds)
    return {"seed 0": rows_by_model[model]} if model in rows_by_model else {}


def _sharp_lattice_points(rows: Sequence[dict], layer: int) -> int:
    return rows[layer].get("sharp_coverage", 0)


def grid_claim(
    quadratic_seeds: Mapping[str, Sequence[dict]],
    others: Optional[Mapping[str, Sequence[dict]]] = None,
    layer: int = 4,
    kernel_size: int = 3,
) -> Claim:
    """Sec. 4.2's reading of Fig. 2 (ICLR Fig. 3), about layer ``layer`` (from 1) of the six-layer
    quadratic model: heads on "specific pixel[s]" "forming a grid around the query pixel".
    ``quadratic_seeds``: seed label → :func:`depth_rows` of the six-layer quadratic runs (the
    claim's setting); ``others``: run label → rows of runs at other settings (listed, not counted).
    A grid: sharp heads (> :data:`LOCALIZED_PEAK` on one key) centred within 0.5 token of more than
    half of the K×K lattice points around the query."""
    need = kernel_size**2 // 2 + 1
    obs = []
    for label, rows in quadratic_seeds.items():
        r = rows[layer - 1]
        obs.append(
            Observation(
                f"quadratic, 6 layers, {label}",
                f"layer {layer}: {r['localized']} of {r['heads']} heads > 50 % on one key, "
                f"on {r.get('sharp_coverage', 0)} of {kernel_size**2} lattice points",
                r.get("sharp_coverage", 0) >= need,
            )
        )
    for label, rows in (others or {}).items():
        best = max(rows, key=lambda r: r.get("sharp_coverage", 0))
        obs.append(
            Observation(
                label,
                "sharp heads per layer "
                f"{_per_layer(rows, 'localized')}; at most {best.get('sharp_coverage', 0)} "
                f"lattice points covered by them (layer {best['layer'] + 1})",
                best.get("sharp_coverage", 0) >= need,
                at_setting=False,
            )
        )
    verdict, reason = existence_verdict(obs, Setting("quadratic", 6, (layer,)))
    return _claim(
        "grid_layer4",
        f"in layer {layer} of a six-layer quadratic run, heads with more than 50 % of their "
        f"attention on one key sit (within 0.5 token) on at least {need} of the "
        f"{kernel_size**2} points of the {kernel_size}×{kernel_size} lattice around the query",
        [o.evidence() for o in obs],
        verdict,
        reason,
        (POSITIONAL_LR_CONFOUND, LOCAL_DROPOUT_CONFOUND),
    )


def depth_claims(
    rows_by_model: Mapping[str, Sequence[dict]],
    removal: Optional[Mapping[str, dict]] = None,
    shallow_rows: Optional[Mapping[str, Sequence[dict]]] = None,
    quadratic_seeds: Optional[Mapping[str, Sequence[dict]]] = None,
    learned_seeds: Optional[Mapping[str, Sequence[int]]] = None,
    n_test: Optional[int] = None,
) -> List[Claim]:
    """The paper's depth claims, each a :class:`~attnconv.experiments.verdicts.Claim` judged by the
    book's one rule (:func:`~attnconv.experiments.verdicts.existence_verdict`,
    :func:`~attnconv.experiments.verdicts.comparative_verdict`): the claim's setting (model, 6
    layers, the layers named) decides which runs count; the others are listed.

    ``rows_by_model``: label → :func:`depth_rows` of the six-layer seed-0 runs; ``quadratic_seeds``:
    seed label → rows of every six-layer quadratic seed (default: seed 0 alone);
    ``learned_seeds``: seed label → heads > :data:`LOCALIZED_PEAK` on one key per layer of every
    six-layer learned seed (:func:`learned_localized`; default: from seed 0's rows);
    ``shallow_rows``: the 2-layer runs' rows (other settings); ``removal``: label →
    :func:`load_removal` of six-layer runs; ``n_test``: test images (the binomial noise)."""
    shallow_rows = shallow_rows or {}
    out: List[Claim] = []
    qseeds = _seed_rows(rows_by_model, quadratic_seeds, "quadratic")
    gaussian = [m for m in rows_by_model if not m.startswith("learned")]

    # Sec. 4.2: local first, further away deeper (Fig. 3: the quadratic model, 6 layers)
    if qseeds:
        near = {k: _mean(r, "attention_distance", {0, 1}) for k, r in qseeds.items()}
        far = {
            k: _mean(r, "attention_distance", set(range(2, 6)))
            for k, r in qseeds.items()
        }
        cn = {k: _mean(r, "centre_distance", {0, 1}) for k, r in qseeds.items()}
        cf = {
            k: _mean(r, "centre_distance", set(range(2, 6))) for k, r in qseeds.items()
        }
        name = f"quadratic, 6 layers, {len(qseeds)} seeds"
        pairs = [
            _count_pair(
                f"{name}: attention distance",
                list(far.values()),
                list(near.values()),
                ("layers 3-6", "layers 1-2"),
            ),
            _count_pair(
                f"{name}: centre distance",
                list(cf.values()),
                list(cn.values()),
                ("layers 3-6", "layers 1-2"),
            ),
        ]
        ev = [p.evidence("above") for p in pairs]
        ev += [
            Evidence(
                f"quadratic, 6 layers, {k}",
                f"attention distance {near[k]:.2f} (layers 1-2) vs {far[k]:.2f} (layers 3-6); "
                f"centre distance {cn[k]:.2f} vs {cf[k]:.2f}",
            )
            for k in qseeds
        ]
        for model, rows in rows_by_model.items():
            if model == "quadratic":
                continue
            a1, a2 = (
                _mean(rows, "attention_distance", {0, 1}),
                _mean(rows, "attention_distance", set(range(2, 6))),
            )
            note = "" if model in gaussian else "; maps close to uniform"
            ev.append(
                Evidence(
                    _deep(model),
                    f"attention distance {a1:.2f} vs {a2:.2f}{note} (not the claim's "
                    "setting: listed, not counted)",
                )
            )
        verdict, reason = comparative_verdict(pairs, "above")
        out.append(
            _claim(
                "local_then_far",
                "in the six-layer quadratic model, the mean attention distance and the mean "
                "centre distance of layers 3-6 are above those of layers 1-2, over the seeds",
                ev,
                verdict,
                reason,
                (POSITIONAL_LR_CONFOUND, LOCAL_DROPOUT_CONFOUND),
            )
        )
        out.append(
            grid_claim(
                qseeds,
                {
                    **{
                        _deep(m): r
                        for m, r in rows_by_model.items()
                        if m in gaussian and m != "quadratic"
                    },
                    **{
                        _shallow(m): r
                        for m, r in shallow_rows.items()
                        if m.startswith("quadratic")
                    },
                },
            )
        )

    # Sec. 4.2 on Fig. 10: heads do not overlap (the quadratic model at 6 layers, 9 or 16 heads)
    obs = []
    at_runs = {f"quadratic, 6 layers, {k}": r for k, r in qseeds.items()}
    if "quadratic, 16 heads" in rows_by_model:
        at_runs[_deep("quadratic, 16 heads")] = rows_by_model["quadratic, 16 heads"]
    off_runs = {
        _deep(m): r for m, r in rows_by_model.items() if not m.startswith("quadratic")
    }
    off_runs.update({_shallow(m): r for m, r in shallow_rows.items()})
    for runs_, at in ((at_runs, True), (off_runs, False)):
        for name, rows in runs_.items():
            over = sum(r["overlapping_pairs"] for r in rows)
            pairs_n = sum(r["pairs"] for r in rows)
            loc = sum(r["localized_overlapping_pairs"] for r in rows)
            obs.append(
                Observation(
                    name,
                    f"pairs of localized heads sharing > 50 %: {loc}; all pairs: {over} of "
                    f"{pairs_n} ({100 * over / pairs_n:.1f} %); closest centres "
                    f"{min(r['closest_centres'] for r in rows):.2f} token",
                    loc == 0,
                    at_setting=at,
                )
            )
    if obs:
        verdict, reason = existence_verdict(obs, Setting("quadratic", 6))
        out.append(
            _claim(
                "no_overlap",
                "no two localized heads (each > 50 % on one key) of a layer share more than "
                "half of their attention (Σ_k min(p_i, p_j)); broad Gaussians overlap by "
                "construction, so their pairs are shown, not tested; the second half of the "
                "sentence names no measure and is not tested",
                [o.evidence() for o in obs],
                verdict,
                reason,
                (POSITIONAL_LR_CONFOUND, LOCAL_DROPOUT_CONFOUND),
            )
        )

    # App. A.2: localized heads more frequent in the first layers
    if qseeds:
        first = [sum(r["localized"] for r in rows[:2]) / 2 for rows in qseeds.values()]
        rest = [sum(r["localized"] for r in rows[2:]) / 4 for rows in qseeds.values()]
        pairs = [
            _count_pair(
                f"quadratic, 6 layers, {len(qseeds)} seeds",
                first,
                rest,
                ("layers 1-2", "layers 3-6"),
            )
        ]
        ev = [pairs[0].evidence("above")]
        ev += [
            Evidence(
                f"quadratic, 6 layers, {k}",
                f"localized heads per layer: {_per_layer(r, 'localized')} of {r[0]['heads']}",
            )
            for k, r in qseeds.items()
        ]
        if "quadratic, 16 heads" in rows_by_model:
            r = rows_by_model["quadratic, 16 heads"]
            pairs.append(
                _count_pair(
                    _deep("quadratic, 16 heads"),
                    [sum(x["localized"] for x in r[:2]) / 2],
                    [sum(x["localized"] for x in r[2:]) / 4],
                    ("layers 1-2", "layers 3-6"),
                )
            )
            ev.append(pairs[-1].evidence("above"))
        others = [
            (_deep(m), r)
            for m, r in rows_by_model.items()
            if m not in ("quadratic", "quadratic, 16 heads")
            and not m.startswith("learned")
        ] + [
            (_shallow(m), r)
            for m, r in shallow_rows.items()
            if not m.startswith("learned")
        ]
        for name, r in others:
            ev.append(
                Evidence(
                    name,
                    f"localized heads per layer: {_per_layer(r, 'localized')} (not the "
                    "claim's setting: listed, not counted)",
                )
            )
        verdict, reason = comparative_verdict(pairs, "above")
        out.append(
            _claim(
                "localized_first",
                "more heads per layer with > 50 % of their attention on one key in layers 1-2 "
                "than in layers 3-6 of the six-layer quadratic model (mean per layer, over seeds)",
                ev,
                verdict,
                reason,
                (POSITIONAL_LR_CONFOUND, LOCAL_DROPOUT_CONFOUND),
            )
        )

    # Sec. 4.3: the learned encoding (Fig. 6: 6 layers)
    lseeds = dict(learned_seeds or {})
    if not lseeds and "learned" in rows_by_model:
        lseeds = {"seed 0": [r["localized"] for r in rows_by_model["learned"]]}
    shallow_learned = {m: r for m, r in shallow_rows.items() if m.startswith("learned")}
    if lseeds or shallow_learned:
        obs = [
            Observation(
                f"learned, 6 layers, {k}",
                f"heads > 50 % on one key per layer: {', '.join(map(str, c))} of 9",
                sum(c[:2]) > 0,
            )
            for k, c in lseeds.items()
        ]
        obs += [
            Observation(
                _shallow(m),
                f"heads > 50 % on one key per layer: {_per_layer(r, 'localized')} of "
                f"{r[0]['heads']}",
                sum(x["localized"] for x in r[:2]) > 0,
                at_setting=False,
            )
            for m, r in shallow_learned.items()
        ]
        verdict, reason = existence_verdict(obs, Setting("learned", 6, (1, 2)))
        out.append(
            _claim(
                "learned_pixels",
                "some heads of layers 1-2 of the six-layer learned-encoding model give more "
                f"than {LOCALIZED_PEAK:.0%} of their attention to one key (the centre query)",
                [o.evidence() for o in obs],
                verdict,
                reason,
                (POSITIONAL_LR_CONFOUND,),
            )
        )
    if lseeds:
        hi = [sum(c[3:]) / 3 for c in lseeds.values()]
        lo = [sum(c[:2]) / 2 for c in lseeds.values()]
        pair = _count_pair(
            f"learned, 6 layers, {len(lseeds)} seeds",
            hi,
            lo,
            ("layers 4-6", "layers 1-2"),
        )
        verdict, reason = comparative_verdict([pair], "below")
        out.append(
            _claim(
                "high_layers_deviate",
                "fewer heads per layer on one key in layers 4-6 than in layers 1-2 of the "
                "six-layer learned model, over the seeds",
                [pair.evidence("below")]
                + [
                    Evidence(
                        f"learned, 6 layers, {k}", f"per layer {', '.join(map(str, c))}"
                    )
                    for k, c in lseeds.items()
                ],
                verdict,
                reason,
                (POSITIONAL_LR_CONFOUND,),
            )
        )
    if "learned" in rows_by_model:
        rows = rows_by_model["learned"]
        lr = sum(r["left_right"] for r in rows[3:])
        ud = sum(r["up_down"] for r in rows[3:])
        considered = sum(r["heads"] - r["near_uniform"] for r in rows[3:])
        pair = _count_pair(
            _deep("learned"), [ud], [lr], ("up-down symmetric", "left-right symmetric")
        )
        verdict, reason = comparative_verdict([pair], "below")
        out.append(
            _claim(
                "vertical_rare",
                "in layers 4-6 of the six-layer learned model, up-down symmetric heads much "
                "rarer than left-right symmetric ones (heads not nearly uniform)",
                [
                    Evidence(
                        _deep("learned"),
                        f"layers 4-6: {lr} left-right, {ud} up-down symmetric of {considered} "
                        "heads not nearly uniform (the other seeds keep no maps)",
                    )
                ],
                verdict,
                reason + "; one run, whose maps are close to uniform",
                (POSITIONAL_LR_CONFOUND,),
            )
        )

    # Sec. 4.3: some heads of the last two layers seem to be redundant (existence, learned model)
    if removal:
        obs = []
        for model, rem in removal.items():
            drops = [[rem["full"] - a for a in layer] for layer in rem["without_head"]]
            n = len(drops)
            last = [d for i in range(n - 2, n) for d in drops[i]]
            other = [d for i in range(n - 2) for d in drops[i]]
            h_last = sum(d <= HARMLESS_DROP + 1e-9 for d in last)
            h_other = sum(d <= HARMLESS_DROP + 1e-9 for d in other)
            costs = [rem["full"] - a for a in rem["without_layer"]]
            worst = int(np.argmax(costs)) + 1
            images = n_test or rem.get("test_images") or 1017
            noise = binomial_half_width(rem["full"], images)
            obs.append(
                Observation(
                    _deep(model),
                    f"heads whose removal costs ≤ {100 * HARMLESS_DROP:.1f} points: layers "
                    f"5-6: {h_last} of {len(last)}, layers 1-4: {h_other} of {len(other)}; "
                    f"removing a whole layer costs most for layer {worst} "
                    f"({100 * max(costs):.1f} points); noise "
                    f"{accuracy_noise(rem['full'], images)}",
                    h_last > 0,
                    at_setting=model.startswith("learned"),
                    effect=HARMLESS_DROP,
                    noise=noise,
                )
            )
        verdict, reason = existence_verdict(obs, Setting("learned", 6, (5, 6)))
        out.append(
            _claim(
                "redundant",
                "at least one head of layers 5-6 of the six-layer learned model whose removal "
                f"alone (no retraining) costs at most {100 * HARMLESS_DROP:.1f} points of test "
                "accuracy (5 of the 1,017 test images); the test must resolve 0.5 points",
                [o.evidence() for o in obs],
                verdict,
                reason,
            )
        )

    # App. A.1: non-isotropic heads, especially in high layers (the generalized model)
    gen = {
        _deep(m): r
        for m, r in rows_by_model.items()
        if r[0].get("non_isotropic") is not None
    }
    gen_off = {
        _shallow(m): r
        for m, r in shallow_rows.items()
        if r[0].get("non_isotropic") is not None
    }
    if gen or gen_off:
        obs = [
            Observation(
                name,
                f"heads with cond(Σ⁻¹) > {NON_ISOTROPIC_CONDITION:g} per layer: "
                f"{_per_layer(rows, 'non_isotropic')} of {rows[0]['heads']}",
                sum(r["non_isotropic"] for r in rows) > 0,
                at_setting=at,
            )
            for runs_, at in ((gen, True), (gen_off, False))
            for name, rows in runs_.items()
        ]
        verdict, reason = existence_verdict(obs, Setting("generalized", 6))
        out.append(
            _claim(
                "non_isotropic",
                f"heads of the six-layer generalized model whose Σ⁻¹ has a condition number "
                f"above {NON_ISOTROPIC_CONDITION:g}",
                [o.evidence() for o in obs],
                verdict,
                reason,
                (POSITIONAL_LR_CONFOUND,),
            )
        )
        if gen:
            pairs = [
                _count_pair(
                    name,
                    [sum(r["non_isotropic"] for r in rows[3:])],
                    [sum(r["non_isotropic"] for r in rows[:3])],
                    ("layers 4-6", "layers 1-3"),
                )
                for name, rows in gen.items()
            ]
            verdict, reason = comparative_verdict(pairs, "above")
            out.append(
                _claim(
                    "non_isotropic_high",
                    "more such heads in layers 4-6 than in layers 1-3 of the six-layer "
                    "generalized model, over seeds",
                    [p.evidence("above") for p in pairs],
                    verdict,
                    reason + "; one generalized seed",
                    (POSITIONAL_LR_CONFOUND,),
                )
            )
    return out


def lemma_shifts_covered(history: Mapping, kernel_size: int = 3) -> List[int]:
    """Per layer of a learned-encoding run, the shifts of the K×K kernel (out of K²) on which some
    head puts more than :data:`LOCALIZED_PEAK` of its attention (its saved ``peak_shift`` and
    ``peak_probability``, centre query): Lemma 1's condition needs all K² in one layer."""
    half = kernel_size // 2
    out = []
    for rec in layer_records(history, -1):
        if "peak_probability" not in rec:
            continue
        hit = {
            (int(round(d[0])), int(round(d[1])))
            for d, p in zip(rec["peak_shift"], rec["peak_probability"])
            if p > LOCALIZED_PEAK and max(abs(d[0]), abs(d[1])) <= half
        }
        out.append(len(hit))
    return out


def learned_lemma_claim(runs: Mapping[str, Mapping], kernel_size: int = 3) -> Claim:
    """Sec. 3's "the relative encoding learned by the neural network also matched the conditions of
    the lemma", judged on every learned run (any depth: the sentence names none): ``runs`` label →
    history. A run shows it when one layer has heads with more than :data:`LOCALIZED_PEAK` on each
    of the K² shifts of the kernel (:func:`lemma_shifts_covered`)."""
    k2 = kernel_size**2
    obs = []
    for label, h in runs.items():
        cov = lemma_shifts_covered(h, kernel_size)
        obs.append(
            Observation(
                label,
                f"kernel shifts with a head > 50 % on them, per layer: "
                f"{', '.join(map(str, cov))} of {k2}",
                max(cov, default=0) >= k2,
            )
        )
    if not obs:
        obs.append(Observation("none", "no learned run saved", False, at_setting=False))
    verdict, reason = existence_verdict(obs, Setting("learned"))
    return _claim(
        "learned_matched_lemma",
        f"in some layer of a learned-encoding run, heads with more than 50 % of their "
        f"attention on each of the {k2} shifts of a {kernel_size}×{kernel_size} kernel "
        "(Lemma 1's condition: one head per shift)",
        [o.evidence() for o in obs],
        verdict,
        reason,
        (POSITIONAL_LR_CONFOUND,),
    )


def pruning_claims(
    paper_counts: Sequence[int],
    ours: Mapping[str, Sequence[int]],
    accuracies: Mapping[str, Mapping[str, float]],
    n_test: int = 1017,
    setting_label: str = "6 layers",
) -> List[Claim]:
    """App. A.1's pruning, judged by the rule: ``paper_counts`` the paper's heads pruned per layer;
    ``ours`` run label → our per-layer counts (one per threshold set); ``accuracies`` run label →
    ``full``, ``pruned`` (no retraining) and ``retrained`` test accuracies (optionally ``random``:
    the mean accuracy after pruning as many random heads, and ``retrain_epochs`` /
    ``base_epochs``). The claim's setting is the paper's six-layer model: runs whose label starts
    with ``setting_label`` count, the others are listed. Accuracies carry their binomial noise over
    ``n_test`` images."""
    paper_counts = list(paper_counts)
    obs = [
        Observation(
            label,
            f"{list(c)} ({sum(c)} heads) against the paper's {paper_counts} ({sum(paper_counts)})",
            list(c) == paper_counts,
            at_setting=label.startswith(setting_label),
        )
        for label, c in ours.items()
    ]
    agree = []
    for c in ours.values():
        if int(np.argmax(c)) == int(np.argmax(paper_counts)):
            agree.append("most in the same layer")
        if c[-1] == paper_counts[-1] == 0:
            agree.append("none in the last layer")
    verdict, reason = existence_verdict(obs, Setting("generalized", 6))
    if agree:
        reason += f"; what agrees: {', '.join(dict.fromkeys(agree))}"
    out = [
        _claim(
            "pruned_counts",
            "the paper's pruning rule, applied to a six-layer generalized run, prunes the "
            "same number of heads in each layer",
            [o.evidence() for o in obs],
            verdict,
            reason,
            (POSITIONAL_LR_CONFOUND,),
        )
    ]

    def pair(label, a, b, labels):
        return SeriesPair(
            label,
            spread([a]),
            spread([b]),
            label.startswith(setting_label),
            binomial_half_width(b, n_test),
            labels,
        )

    hurts = [
        pair(label, a["pruned"], a["full"], ("pruned", "unpruned"))
        for label, a in accuracies.items()
    ]
    ev = [p.evidence("below") for p in hurts]
    for label, a in accuracies.items():
        if "random" in a:
            ev.append(
                Evidence(
                    label,
                    f"pruning as many random heads instead: {100 * a['random']:.1f} % (mean)",
                )
            )
    verdict, reason = comparative_verdict(hurts, "below")
    out.append(
        _claim(
            "pruning_hurts",
            "right after pruning (no retraining), the test accuracy is below the unpruned "
            "model's by more than the noise",
            ev,
            verdict,
            reason,
        )
    )
    recovers = [
        pair(label, a["retrained"], a["full"], ("retrained", "unpruned"))
        for label, a in accuracies.items()
    ]
    ev = [p.evidence("not below") for p in recovers]
    epochs = [
        f"{label}: {a['retrain_epochs']} epochs of retraining after {a['base_epochs']}"
        for label, a in accuracies.items()
        if "retrain_epochs" in a
    ]
    verdict, reason = comparative_verdict(recovers, "not below")
    out.append(
        _claim(
            "pruning_recovers",
            "after retraining with the learning rate divided by 10 (the paper's 'a few "
            "epochs': "
            + ("; ".join(epochs) or "as saved")
            + "), the pruned model's test "
            "accuracy is not below the unpruned one's beyond the noise",
            ev,
            verdict,
            reason + "; no retrained unpruned control, so the extra epochs alone could "
            "account for part of it",
        )
    )
    return out


def pruning_accuracies(study: Mapping, k: int) -> Dict[str, float]:
    """From a saved pruning study (``pruning.json``) whose rule selected ``k`` heads: test accuracy
    ``full`` (unpruned), ``pruned`` (the ``k`` degenerate heads removed, no retraining),
    ``retrained`` (after the study's retraining), ``random`` (mean over the saved draws of ``k``
    random heads removed, when saved) and the study's ``retrain_epochs`` and ``base_epochs``, as
    :func:`pruning_claims` takes them."""
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
    for key in ("retrain_epochs", "base_epochs"):
        if key in study:
            out[key] = int(study[key])
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


def accuracy_claim(series: Mapping[str, tuple]) -> Claim:
    """Sec. 3's "similar or better empirical performance (than the learned one)", judged over every
    seed series (:func:`~attnconv.experiments.verdicts.comparative_verdict`, relation "not below"):
    ``series`` description → (quadratic :class:`~attnconv.experiments.verdicts.Spread` or
    ``None``, learned Spread or ``None``), each pair at equal epochs. A series counts against only
    where the learned encoding is above in every seed (ranges separate, at least 3 seeds each)."""
    pairs, ev = [], []
    for name, (quad, learned) in series.items():
        if quad is None or learned is None:
            missing = [
                k for k, v in (("quadratic", quad), ("learned", learned)) if v is None
            ]
            ev.append(Evidence(name, "seed series missing: " + ", ".join(missing)))
            continue
        p = SeriesPair(name, quad, learned, labels=("quadratic", "learned"))
        pairs.append(p)
        ev.insert(len(pairs) - 1, p.evidence("not below"))
    if pairs:
        verdict, reason = comparative_verdict(pairs, "not below")
    else:
        verdict, reason = INCONCLUSIVE, "no seed series of both models"
    return _claim(
        "similar_or_better",
        "the quadratic encoding's final test accuracy is not below the learned encoding's in "
        "every seed, in each series of equal training (seed ranges compared)",
        ev,
        verdict,
        reason,
    )


def _epochs_to(history: Mapping, share: float) -> int:
    """The first epoch (from 1) at which the test accuracy reaches ``share`` of its final value."""
    accs = [e["test_acc"] for e in history["epochs"]]
    target = share * accs[-1]
    return next(i + 1 for i, a in enumerate(accs) if a >= target)


#: A run has *converged* when its test accuracy first reaches this share of its final value.
CONVERGED_SHARE = 0.95


def resnet_claims(
    resnet: Mapping,
    quadratic: Mapping[str, Mapping],
    learned: Mapping[str, Mapping],
    learned_short: Optional[Mapping[str, Mapping]] = None,
) -> List[Claim]:
    """Sec. 4.2's "The ResNet is faster to converge" and Sec. 4.3's "our implementation achieves
    accuracy close to that of ResNet18", judged by the rule. ``resnet``: the ResNet18 history;
    ``quadratic`` / ``learned``: seed label → history of the quadratic / learned series at the
    ResNet's epochs; ``learned_short``: a learned series at other epochs (listed, not counted)."""
    epochs = len(resnet["epochs"])
    n_test = resnet.get("test_size") or 1017
    out = []
    if quadratic:
        q = [_epochs_to(h, CONVERGED_SHARE) for h in quadratic.values()]
        r = _epochs_to(resnet, CONVERGED_SHARE)
        pair = SeriesPair(
            f"2 layers, {epochs} epochs",
            spread(q),
            spread([r]),
            labels=("quadratic", "ResNet18"),
            scale=1.0,
            unit=" epochs",
            digits=0,
        )
        verdict, reason = comparative_verdict([pair], "above")
        out.append(
            _claim(
                "resnet_faster",
                f"the ResNet reaches {CONVERGED_SHARE:.0%} of its final test accuracy in fewer "
                f"epochs than the quadratic model does, at equal training ({epochs} epochs)",
                [pair.evidence("above")],
                verdict,
                reason + "; one ResNet run, so its seed spread is unknown",
            )
        )
    if learned:
        acc = [h["epochs"][-1]["test_acc"] for h in learned.values()]
        res = resnet["epochs"][-1]["test_acc"]
        pairs = [
            SeriesPair(
                f"2 layers, {epochs} epochs",
                spread(acc),
                spread([res]),
                noise=binomial_half_width(res, n_test),
                labels=("learned", "ResNet18"),
            )
        ]
        for name, hs in (learned_short or {}).items():
            pairs.append(
                SeriesPair(
                    name,
                    spread([h["epochs"][-1]["test_acc"] for h in hs.values()]),
                    spread([res]),
                    at_setting=False,
                    noise=binomial_half_width(res, n_test),
                    labels=("learned", f"ResNet18 ({epochs} epochs)"),
                )
            )
        verdict, reason = comparative_verdict(pairs, "close")
        out.append(
            _claim(
                "close_to_resnet",
                "the learned-encoding model's final test accuracy is within the noise of "
                f"ResNet18's at equal training ({epochs} epochs): the learned seed range "
                "touches the ResNet's 95 % binomial interval",
                [p.evidence("close") for p in pairs],
                verdict,
                reason + "; one ResNet run",
            )
        )
    return out


def no_gain_claim(
    quadratic: Mapping[str, Spread],
    generalized: Mapping[str, float],
    n_test: int = 1017,
) -> Claim:
    """App. A.1's "we do not obtain any performance improvement" (generalized against quadratic),
    judged over each depth: ``quadratic`` series description → quadratic seed Spread,
    ``generalized`` the same description → the generalized run's final test accuracy (one seed,
    its binomial noise). The claim holds in a series unless the generalized model is above."""
    pairs = [
        SeriesPair(
            name,
            quadratic[name],
            spread([acc]),
            noise=binomial_half_width(acc, n_test),
            labels=("quadratic", "generalized"),
        )
        for name, acc in generalized.items()
        if quadratic.get(name) is not None
    ]
    if pairs:
        verdict, reason = comparative_verdict(pairs, "not below")
    else:
        verdict, reason = INCONCLUSIVE, "no series of both models"
    return _claim(
        "no_gain",
        "the generalized model's final test accuracy is not above the quadratic model's beyond "
        "the noise, at equal depth and training",
        [p.evidence("not below") for p in pairs] or [Evidence("none", "no series")],
        verdict,
        reason,
    )


def format_claims(claims: Sequence[Claim]) -> str:
    """Claims as one Markdown table (:func:`~attnconv.experiments.verdicts.verdict_table`)."""
    return verdict_table(claims)


#: Short titles of the claims, for headings (:func:`format_claim_blocks`).
CLAIM_TITLES = {
    "grid_layer4": "Fig. 2: a grid at layer 4",
    "local_then_far": "Fig. 3: local first, further away deeper",
    "no_overlap": "Fig. 10: heads do not overlap",
    "localized_first": "App. A.2: localized heads in the first layers",
    "learned_pixels": "Fig. 6: learned heads on single pixels",
    "learned_matched_lemma": "Sec. 3: the learned encoding matched the lemma",
    "high_layers_deviate": "Fig. 6: layers 4-6 deviate",
    "vertical_rare": "Fig. 6: vertical symmetry rarer in high layers",
    "redundant": "Fig. 6: redundant heads in layers 5-6",
    "non_isotropic": "App. A.1: non-isotropic heads",
    "non_isotropic_high": "App. A.1: non-isotropic, especially in high layers",
    "no_gain": "App. A.1: no gain from the generalized encoding",
    "similar_or_better": "Sec. 3: quadratic similar or better than learned",
    "resnet_faster": "Sec. 4.2: the ResNet converges faster",
    "close_to_resnet": "Sec. 4.3: accuracy close to ResNet18",
    "pruned_counts": "App. A.1: [2,4,1,2,6,0] heads pruned",
    "pruning_hurts": "App. A.1: pruning initially hurts a bit",
    "pruning_recovers": "App. A.1: retraining recovers the accuracy",
}


def claim_key(claim: Claim) -> str:
    """The :data:`PAPER_CLAIMS` key of a claim made here (by its quote and source)."""
    for key, (quote, source) in PAPER_CLAIMS.items():
        if quote == claim.quote and source == claim.source:
            return key
    return ""


def format_claim_blocks(claims: Sequence[Claim], link: bool = False) -> str:
    """One block per claim (:func:`~attnconv.experiments.verdicts.claim_block`): a title, the
    quote, the test, the evidence, the verdict and the confounds; ``link``: add where in the book
    the evidence is printed."""
    blocks = []
    for c in claims:
        key = claim_key(c)
        where = f"{{ref}}`{c.where}`" if (link and c.where) else ""
        blocks.append(claim_block(c, CLAIM_TITLES.get(key, key) or None, where))
    return "\n\n---\n\n".join(blocks)


def removal_rows(removal: Mapping[str, dict]) -> List[dict]:
    """Per model and layer: accuracy of the full model, without the layer's heads, and the
    smallest / median / largest drop when one head is removed (accuracy points)."""
    rows = []
    for model, rem in removal.items():
        for i, (without_layer, heads) in enumerate(
            zip(rem["without_layer"], rem["without_head"])
        ):
            drops = np.array([rem["full"] - a for a in heads]) * 100
            rows.append(
                {
                    "model": model,
                    "layer": i,
                    "full": rem["full"],
                    "without_layer": without_layer,
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
    """Per layer, the heads of a learned-encoding run that give more than :data:`LOCALIZED_PEAK` of
    their attention to one key (the centre query, position only), from the ``peak_probability``
    its history saved after the last epoch (every seed keeps it; no maps are needed)."""
    return [
        int(sum(p > LOCALIZED_PEAK for p in rec["peak_probability"]))
        for rec in layer_records(history, -1)
        if "peak_probability" in rec
    ]


def _series_runs(name: str):
    """The complete saved runs of the registry series ``name``: seed label → Run, and messages."""
    from ..experiments.registry import load_run, series
    from ..experiments.store import MissingResultError, StaleResultError

    runs, missing = {}, []
    for entry in series(name):
        try:
            runs[f"seed {entry.seed}"] = load_run(entry.name)
        except (MissingResultError, StaleResultError) as e:
            missing.append(f"{name} seed {entry.seed}: {str(e).splitlines()[0]}")
    return runs, missing


def seed_depth_rows(name: str = "deep/quadratic"):
    """:func:`depth_rows` of every saved seed of the registry series ``name`` (Gaussian heads: the
    histories hold every head's parameters): ``(seed label → rows, messages)``."""
    runs, missing = _series_runs(name)
    return {k: depth_rows(r, k) for k, r in runs.items()}, missing


def learned_seed_localized(name: str = "deep/learned"):
    """:func:`learned_localized` of every saved seed of the learned series ``name``:
    ``(seed label → per-layer counts, messages)``."""
    runs, missing = _series_runs(name)
    return {k: learned_localized(r.history) for k, r in runs.items()}, missing


def pruned_counts_from_history(
    history: Mapping, condition_threshold: float, max_eigenvalue_threshold: float = 1e-5
) -> List[int]:
    """Heads per layer that App. A.1's rule (:func:`~attnconv.experiments.pruning.is_degenerate`)
    prunes, from the Σ^(-1/2) factors M a generalized run's history saved after its last epoch."""
    from ..experiments.pruning import inverse_covariance_spectrum, is_degenerate

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


def book_claims(deep_profile: str = "deep") -> Dict[str, List[Claim]]:
    """Every verdict the book gives on the paper's experimental claims, computed from the committed
    runs (nothing is trained): group → claims (``depth``, ``accuracy``, ``pruning``), each judged
    by the rule of :mod:`attnconv.experiments.verdicts`. Groups whose runs are missing are left
    out; ``messages`` (a group of strings under the key ``missing``) says what is missing."""
    from ..experiments.paper_numbers import (
        AUTHORS_CODE_CONDITION_THRESHOLD,
        PAPER_CONDITION_THRESHOLD,
        PAPER_PRUNED_PER_LAYER,
    )
    from ..experiments.registry import load_run

    runs, missing = load_saved_runs(DEEP_RUNS, deep_profile)
    rows = {k: depth_rows(r, k) for k, r in runs.items()}
    shallow, _ = shallow_runs()
    shallow_rows = {k: depth_rows(r, k) for k, r in shallow.items()}
    qseeds, m1 = seed_depth_rows(f"{deep_profile}/quadratic")
    lseeds, m2 = learned_seed_localized(f"{deep_profile}/learned")
    removal = {k: load_removal(r) for k, r in runs.items()}
    removal = {k: v for k, v in removal.items() if v is not None}
    out: Dict[str, list] = {"missing": list(missing) + m1 + m2}
    out["depth"] = depth_claims(rows, removal, shallow_rows, qseeds, lseeds)
    learned_runs = {}
    for name, layers in (
        (f"{deep_profile}/learned", 6),
        ("cpu/learned", 2),
        ("cpu/learned-40epochs", 2),
    ):
        found, _ = _series_runs(name)
        for k, r in found.items():
            learned_runs[f"learned, {layers} layers, {len(r.epochs)} epochs, {k}"] = (
                r.history
            )
    out["depth"].append(learned_lemma_claim(learned_runs))
    series, messages = accuracy_series()
    out["missing"] += messages
    acc = [accuracy_claim(series)]
    # ResNet18 against the 2-layer series at its 40 epochs
    try:
        resnet = load_run("cpu/resnet18").history
        q40, _ = _series_runs("cpu/quadratic-40epochs")
        l40, _ = _series_runs("cpu/learned-40epochs")
        l16, _ = _series_runs("cpu/learned")
        acc += resnet_claims(
            resnet,
            {k: r.history for k, r in q40.items()},
            {k: r.history for k, r in l40.items()},
            {"2 layers, 16 epochs": {k: r.history for k, r in l16.items()}},
        )
    except Exception as e:  # a missing run is a message, not a crash
        out["missing"].append(f"ResNet18 claims: {str(e).splitlines()[0]}")
    gen = {}
    if "generalized" in runs:
        gen["6 layers, 40 epochs"] = runs["generalized"].epochs[-1]["test_acc"]
    if "generalized" in shallow and len(shallow["generalized"].epochs) == 40:
        gen["2 layers, 40 epochs"] = shallow["generalized"].epochs[-1]["test_acc"]
    acc.append(no_gain_claim({k: v[0] for k, v in series.items()}, gen))
    out["accuracy"] = acc
    if "generalized" in runs:
        ours, accuracies = {}, {}
        for label, run in (("6 layers (deep)", runs["generalized"]),) + (
            (("2 layers (cpu)", shallow["generalized"]),)
            if "generalized" in shallow
            else ()
        ):
            path = Path(run.run_dir) / "pruning.json"
            if not path.is_file():
                continue
            study = json.loads(path.read_text())
            k = sum(len(v) for v in study["selected"].values())
            accuracies[label] = pruning_accuracies(study, k)
            if label.startswith("6 layers"):
                for what, cond in (
                    ("thresholds 1e-5 and 1e5", PAPER_CONDITION_THRESHOLD),
                    ("the authors' code's 1e3", AUTHORS_CODE_CONDITION_THRESHOLD),
                ):
                    ours[f"{label}, {what}"] = pruned_counts_from_history(
                        run.history, cond
                    )
        if ours:
            out["pruning"] = pruning_claims(PAPER_PRUNED_PER_LAYER, ours, accuracies)
    return out


# --------------------------------------------------------------------------- figures


def plot_depth_measures(
    rows_by_run: Mapping[str, Sequence[dict]], learned_seeds: Optional[Mapping] = None
):
    """Three panels over the layers (from 1): mean attention distance (tokens), heads with more
    than half their attention on one key, and the share of overlapping pairs; one line per run
    (the quadratic seeds in one colour, one marker each). ``learned_seeds``: seed label →
    per-layer localized counts of the learned seeds (:func:`learned_seed_localized`), drawn in the
    middle panel. Returns the figure."""
    import matplotlib.pyplot as plt

    from .shared.plotting import COLUMN_INCHES

    colours = {
        "quadratic": "tab:blue",
        "generalized": "tab:orange",
        "learned": "tab:green",
        "16 heads": "tab:purple",
    }
    markers = ["o", "s", "^", "D", "v"]

    def style(label):
        for key, c in colours.items():
            if key in label:
                colour = c
        seed = int(label.rsplit("seed", 1)[1]) if "seed" in label else 0
        return dict(color=colour, marker=markers[seed % 5], ms=4, lw=1.2)

    fig, axes = plt.subplots(
        1, 3, figsize=(COLUMN_INCHES, 2.9), constrained_layout=True
    )
    for label, rows in rows_by_run.items():
        layers = [r["layer"] + 1 for r in rows]
        axes[0].plot(
            layers, [r["attention_distance"] for r in rows], label=label, **style(label)
        )
        if not label.startswith("learned"):
            axes[1].plot(layers, [r["localized"] for r in rows], **style(label))
        axes[2].plot(
            layers,
            [100 * r["overlapping_pairs"] / r["pairs"] for r in rows],
            **style(label),
        )
    for label, counts in (learned_seeds or {}).items():
        axes[1].plot(
            range(1, len(counts) + 1), counts, label=None, **style(f"learned, {label}")
        )
    titles = (
        "attention distance (tokens)",
        "heads > 50 % on one key",
        "overlapping pairs (% of pairs)",
    )
    for ax, title in zip(axes, titles):
        ax.set_title(title)
        ax.set_xlabel("layer")
        ax.set_xticks(range(1, 7))
    fig.legend(loc="lower center", ncol=4, bbox_to_anchor=(0.5, -0.16), frameon=False)
    return fig


def plot_removal(removal: Mapping[str, dict], n_test: int = 1017):
    """Per layer (from 1) and run: the test accuracy lost when the layer's heads are removed
    (left) and the heads whose removal alone costs at most :data:`HARMLESS_DROP` (right), with
    the test set's noise (±, 95 % binomial) as a band on the left. Returns the figure."""
    import matplotlib.pyplot as plt

    from .shared.plotting import COLUMN_INCHES

    fig, axes = plt.subplots(
        1, 2, figsize=(COLUMN_INCHES, 2.6), constrained_layout=True
    )
    rows = removal_rows(removal)
    models = list(removal)
    width = 0.8 / max(len(models), 1)
    for i, model in enumerate(models):
        mine = [r for r in rows if r["model"] == model]
        x = (
            np.array([r["layer"] + 1 for r in mine])
            + (i - (len(models) - 1) / 2) * width
        )
        axes[0].bar(
            x,
            [100 * (r["full"] - r["without_layer"]) for r in mine],
            width,
            label=model,
        )
        axes[1].bar(x, [r["harmless_heads"] for r in mine], width)
    full = np.mean([rem["full"] for rem in removal.values()])
    noise = 100 * binomial_half_width(float(full), n_test)
    axes[0].axhspan(0, noise, color="0.85", zorder=0, label=f"noise (±{noise:.1f})")
    axes[0].set_title("accuracy lost without the layer (points)")
    axes[1].set_title(f"heads costing ≤ {100 * HARMLESS_DROP:.1f} points alone")
    for ax in axes:
        ax.set_xlabel("layer")
        ax.set_xticks(range(1, 7))
    fig.legend(loc="lower center", ncol=4, bbox_to_anchor=(0.5, -0.14), frameon=False)
    return fig


def plot_pruned_counts(counts: Mapping[str, Sequence[int]]):
    """Heads pruned per layer (from 1), one group of bars per layer, one bar per source (the
    paper's and ours). Returns the figure."""
    import matplotlib.pyplot as plt

    from .shared.plotting import COLUMN_INCHES

    fig, ax = plt.subplots(figsize=(COLUMN_INCHES * 0.7, 2.4), constrained_layout=True)
    width = 0.8 / len(counts)
    for i, (label, c) in enumerate(counts.items()):
        x = np.arange(1, len(c) + 1) + (i - (len(counts) - 1) / 2) * width
        ax.bar(x, list(c), width, label=f"{label} ({sum(c)})")
    ax.set_xlabel("layer")
    ax.set_ylabel("heads pruned")
    ax.set_xticks(range(1, 7))
    ax.legend(frameon=False)
    return fig


def plot_accuracy_series(series: Mapping[str, tuple], labels=("quadratic", "learned")):
    """Final test accuracy of every seed, one column per series and model: ``series`` description
    → (Spread, Spread) as :func:`accuracy_series` gives them (``None`` sides are skipped), with
    each side's seed range as a bar. Returns the figure."""
    import matplotlib.pyplot as plt

    from .shared.plotting import COLUMN_INCHES

    fig, ax = plt.subplots(figsize=(COLUMN_INCHES * 0.75, 2.6), constrained_layout=True)
    colours = ("tab:blue", "tab:green")
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
    ax.legend(frameon=False)
    return fig
