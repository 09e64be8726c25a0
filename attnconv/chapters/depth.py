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
(computed once from the trained weights by :func:`attnconv.experiments.pruning.layer_removal_accuracies`
and :func:`~attnconv.experiments.pruning.head_removal_accuracies` in :func:`removal_accuracies`, saved as
``removal.json`` by ``python -m attnconv.regenerate``).
"""

from __future__ import annotations

import math
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
from ..experiments.store import REMOVAL_FILE, read_keyed, run_result_name
from ..experiments.verdicts import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    Evidence,
    final_test_accuracies,
    ordering,
    seed_series,
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
    "pruning_recovers": (
        "this ablation initially hurts a bit the performance, probably due to off biases, but after a few "
        "epochs of continued training with a smaller learning rate (divided by 10) the accuracy recovers its "
        "unpruned value",
        "App. A.1, Fig. 8",
    ),
    "similar_or_better": (
        "while also reaching similar or better empirical performance (than the learned one)",
        f"Sec. 3, after eq. (9); Fig. 5 (ICLR Table 1): {PAPER_ACCURACY['quadratic']} vs {PAPER_ACCURACY['learned']}",
    ),
}


def _deep(label: str) -> str:
    return f"{label}, 6 layers (deep, seed 0)"


def _shallow(label: str) -> str:
    return f"{label}, 2 layers (cpu, seed 0)"


def _per_layer(rows, key, fmt="{}") -> str:
    return ", ".join(fmt.format(r[key]) for r in rows)


def _claim(key, test, evidence, verdict, reason) -> Claim:
    quote, source = PAPER_CLAIMS[key]
    return Claim(quote, source, test, tuple(evidence), verdict, reason)


def _agree(flags: Sequence[bool], min_runs: int = 3):
    """REPRODUCED when at least ``min_runs`` runs all show it, NOT_REPRODUCED when at least that
    many all fail, else INCONCLUSIVE."""
    if len(flags) >= min_runs and all(flags):
        return REPRODUCED
    if len(flags) >= min_runs and not any(flags):
        return NOT_REPRODUCED
    return INCONCLUSIVE


def depth_claims(
    rows_by_model: Mapping[str, Sequence[dict]],
    removal: Optional[Mapping[str, dict]] = None,
    shallow_rows: Optional[Mapping[str, Sequence[dict]]] = None,
) -> List[Claim]:
    """The paper's depth claims, each a :class:`~attnconv.experiments.verdicts.Claim` (quoted, tested
    as written, the evidence of every run, a verdict with its reason). ``rows_by_model``: label →
    :func:`depth_rows` of a six-layer run; ``shallow_rows``: the same for the 2-layer runs (their
    evidence is added where it bears); ``removal``: label → :func:`load_removal` of six-layer runs.
    Layers from 1 as in the paper: "first" 1-2, "deeper" 3-6, "high" 4-6, "last two" 5-6.

    The rule: an existence claim is reproduced by one run that shows it; a comparative one needs at
    least three runs that agree; a single run gives "inconclusive"."""
    shallow_rows = shallow_rows or {}
    out: List[Claim] = []
    gaussian = [m for m in rows_by_model if not m.startswith("learned")]

    # Sec. 4.2: local first, further away deeper (the quadratic encoding's Fig. 3)
    ev, flags = [], []
    for model, rows in rows_by_model.items():
        n = max(r["layer"] for r in rows) + 1
        a1, a2 = (
            _mean(rows, "attention_distance", {0, 1}),
            _mean(rows, "attention_distance", set(range(2, n))),
        )
        c1, c2 = (
            _mean(rows, "centre_distance", {0, 1}),
            _mean(rows, "centre_distance", set(range(2, n))),
        )
        text = f"attention distance, layers 1-2: {a1:.2f}, layers 3-{n}: {a2:.2f}; centre distance {c1:.2f} vs {c2:.2f}"
        if model in gaussian:
            flags.append(bool(a2 > a1 and c2 > c1))
        else:
            text += " (maps close to uniform; see the next claims)"
        ev.append(Evidence(_deep(model), text))
    for model, rows in shallow_rows.items():
        ev.append(
            Evidence(
                _shallow(model),
                "attention distance, layer 1: "
                f"{rows[0]['attention_distance']:.2f}, layer 2: {rows[-1]['attention_distance']:.2f}",
            )
        )
    verdict = _agree(flags) if flags else INCONCLUSIVE
    reason = (
        f"the deeper layers attend further in {sum(flags)} of the {len(flags)} six-layer runs with Gaussian "
        "heads (one seed each); the learned run's maps are close to uniform and do not bear on it"
    )
    out.append(
        _claim(
            "local_then_far",
            "in a six-layer run, the mean attention distance and the mean centre "
            "distance of layers 1-2 are below those of layers 3-6",
            ev,
            verdict,
            reason,
        )
    )

    # Sec. 4.2: heads do not overlap
    ev, broad_only, sharp = [], True, []
    for label, rows, name in [(m, r, _deep(m)) for m, r in rows_by_model.items()] + [
        (m, r, _shallow(m)) for m, r in shallow_rows.items()
    ]:
        over, pairs = (
            sum(r["overlapping_pairs"] for r in rows),
            sum(r["pairs"] for r in rows),
        )
        loc = sum(r["localized_overlapping_pairs"] for r in rows)
        if loc:
            sharp.append(name)
        if over:
            broad_only = broad_only and not loc
        ev.append(
            Evidence(
                name,
                f"overlapping pairs {over} of {pairs} ({100 * over / pairs:.1f} %), "
                f"per layer {_per_layer(rows, 'overlapping_pairs')}; of two localized heads: {loc}; "
                f"closest centres per layer {_per_layer(rows, 'closest_centres', '{:.2f}')} tokens",
            )
        )
    no_overlap = all(e.measured.startswith("overlapping pairs 0 ") for e in ev)
    if no_overlap:
        verdict, reason = (
            REPRODUCED,
            "no two heads of a layer share more than half of their attention in any run",
        )
    elif sharp:
        verdict = NOT_REPRODUCED
        reason = (
            "pairs of localized heads (each > 50 % on one key) share more than half of their attention in "
            f"{len(sharp)} run(s): {'; '.join(sharp)}; the second half of the sentence names no measure "
            "and is not tested"
        )
    else:
        verdict = INCONCLUSIVE
        reason = "only broad heads overlap, which heads wider than their distance do by construction"
    out.append(
        _claim(
            "no_overlap",
            f"no two heads of a layer share more than {OVERLAP_SHARED_MASS:.0%} of their "
            "attention (Σ_k min(p_i, p_j)), as a share of the layer's pairs; shown separately for pairs "
            "of localized heads, since two broad Gaussians overlap by construction",
            ev,
            verdict,
            reason,
        )
    )

    # App. A.2: localized heads more frequent in the first layers (16 heads)
    ev, flags = [], []
    for model, rows in rows_by_model.items():
        if model in gaussian:
            n = max(r["layer"] for r in rows) + 1
            first, rest = (
                sum(r["localized"] for r in rows[:2]),
                sum(r["localized"] for r in rows[2:]),
            )
            flags.append(bool(first / 2 > rest / (n - 2)))
            ev.append(
                Evidence(
                    _deep(model),
                    f"localized heads per layer: {_per_layer(rows, 'localized')} "
                    f"of {rows[0]['heads']}",
                )
            )
    for model, rows in shallow_rows.items():
        if model in gaussian:
            flags.append(bool(rows[0]["localized"] > rows[-1]["localized"]))
            ev.append(
                Evidence(
                    _shallow(model),
                    f"localized heads per layer: {_per_layer(rows, 'localized')} "
                    f"of {rows[0]['heads']}",
                )
            )
    if ev:
        out.append(
            _claim(
                "localized_first",
                "more heads per layer with > 50 % of their attention on one key in "
                "layers 1-2 than in the layers above",
                ev,
                _agree(flags),
                f"more localized heads in the first layers in {sum(flags)} of {len(flags)} runs with "
                "Gaussian heads (one seed each)",
            )
        )

    # Sec. 4.3: the learned encoding
    learned = {
        name: rows
        for m, rows in rows_by_model.items()
        if m.startswith("learned")
        for name in [_deep(m)]
    }
    learned.update(
        {
            _shallow(m): rows
            for m, rows in shallow_rows.items()
            if m.startswith("learned")
        }
    )
    if learned:
        ev, shows = [], []
        for name, rows in learned.items():
            g = int(round(math.sqrt(rows[0]["grid_tokens"])))
            uni = uniform_attention_distance(g)
            loc12 = sum(r["localized"] for r in rows[:2])
            shows.append(loc12 > 0)
            dists = [r["attention_distance"] for r in rows]
            ev.append(
                Evidence(
                    name,
                    f"heads > 50 % on one key per layer: {_per_layer(rows, 'localized')} of "
                    f"{rows[0]['heads']}; attention distance {min(dists):.2f}-{max(dists):.2f} "
                    f"tokens (uniform map: {uni:.2f})",
                )
            )
        if all(shows):
            verdict, reason = (
                REPRODUCED,
                "every learned run has heads of layers 1-2 on a single key",
            )
        elif not any(shows):
            verdict, reason = (
                INCONCLUSIVE,
                "no learned run localised at all, so none can tell",
            )
        else:
            verdict = INCONCLUSIVE
            reason = (
                "the 2-layer run shows it; the six-layer run (hidden size 32) did not localise at all, its maps "
                "are close to the uniform map, so at the paper's depth the runs cannot tell"
            )
        out.append(
            _claim(
                "learned_pixels",
                "some heads of layers 1-2 of the learned-encoding model give more than "
                f"{LOCALIZED_PEAK:.0%} of their attention to one key",
                ev,
                verdict,
                reason,
            )
        )
        deep_learned = [
            (m, rows) for m, rows in rows_by_model.items() if m.startswith("learned")
        ]
        if deep_learned:
            m, rows = deep_learned[0]
            n = max(r["layer"] for r in rows) + 1
            loc1, loc_hi = (
                sum(r["localized"] for r in rows[:2]),
                sum(r["localized"] for r in rows[3:]),
            )
            lr, ud = (
                sum(r["left_right"] for r in rows[3:]),
                sum(r["up_down"] for r in rows[3:]),
            )
            considered = sum(r["heads"] - r["near_uniform"] for r in rows[3:])
            out.append(
                _claim(
                    "high_layers_deviate",
                    "fewer heads on one key in layers 4-6 than in layers 1-2 (six-layer run)",
                    [
                        Evidence(
                            _deep(m),
                            f"heads > 50 % on one key: layers 1-2: {loc1}, layers 4-{n}: {loc_hi}",
                        )
                    ],
                    INCONCLUSIVE
                    if loc1 == 0
                    else (REPRODUCED if loc_hi < loc1 else NOT_REPRODUCED),
                    "no layer of the six-layer run localised, so there is nothing for layers 4-6 to deviate from"
                    if loc1 == 0
                    else "one run",
                )
            )
            out.append(
                _claim(
                    "vertical_rare",
                    "in layers 4-6 of the learned model, up-down symmetric heads much rarer than "
                    "left-right symmetric ones (heads not nearly uniform)",
                    [
                        Evidence(
                            _deep(m),
                            f"layers 4-{n}: {lr} left-right, {ud} up-down symmetric of {considered} "
                            "heads not nearly uniform",
                        )
                    ],
                    INCONCLUSIVE,
                    f"one run ({lr} against {ud} heads), whose maps are close to uniform; "
                    "the 2-layer runs have no high layers",
                )
            )

    # Sec. 4.3: some heads of the last two layers seem to be redundant (existence), and a comparative reading
    if removal:
        ev, shares, has = [], [], {}
        for model, rem in removal.items():
            drops = [[rem["full"] - a for a in layer] for layer in rem["without_head"]]
            n = len(drops)
            last = [d for i in range(n - 2, n) for d in drops[i]]
            other = [d for i in range(n - 2) for d in drops[i]]
            h_last = sum(d <= HARMLESS_DROP + 1e-9 for d in last)
            h_other = sum(d <= HARMLESS_DROP + 1e-9 for d in other)
            has[model] = h_last
            shares.append((model, h_last / len(last), h_other / len(other)))
            text = (
                f"heads whose removal costs ≤ {100 * HARMLESS_DROP:.1f} points: layers 5-6: {h_last} of "
                f"{len(last)}, layers 1-4: {h_other} of {len(other)}; mean drop {100 * np.mean(last):.1f} vs "
                f"{100 * np.mean(other):.1f} points"
            )
            ev.append(Evidence(_deep(model), text))
        learned_runs = [m for m in has if m.startswith("learned")]
        if learned_runs:
            ok = any(has[m] > 0 for m in learned_runs)
            verdict = REPRODUCED if ok else NOT_REPRODUCED
            reason = (
                f"the learned run (the claim's Fig. 6) has {has[learned_runs[0]]} such heads in layers 5-6; "
                "one seed, removal without retraining"
            )
        else:
            verdict, reason = (
                INCONCLUSIVE,
                "no learned run with saved removal accuracies",
            )
        out.append(
            _claim(
                "redundant",
                f"at least one head of layers 5-6 whose removal alone (no retraining) costs "
                f"at most {100 * HARMLESS_DROP:.1f} points of test accuracy (5 of the 1,017 test images)",
                ev,
                verdict,
                reason,
            )
        )
        more = [b > c for _, b, c in shares]
        quote, source = PAPER_CLAIMS["redundant"]
        out.append(
            Claim(
                quote,
                source + "; the book's comparative reading, not the paper's words",
                "a larger share of such heads in layers 5-6 than in layers 1-4",
                tuple(
                    Evidence(
                        _deep(m),
                        f"share in layers 5-6: {100 * b:.0f} %, layers 1-4: {100 * c:.0f} %",
                    )
                    for m, b, c in shares
                ),
                _agree(more),
                f"a larger share in layers 5-6 in {sum(more)} of {len(more)} runs",
            )
        )

    # App. A.1: non-isotropic heads, especially in high layers
    gen = {
        name: rows
        for m, rows in rows_by_model.items()
        if rows[0].get("non_isotropic") is not None
        for name in [_deep(m)]
    }
    gen.update(
        {
            _shallow(m): rows
            for m, rows in shallow_rows.items()
            if rows[0].get("non_isotropic") is not None
        }
    )
    if gen:
        ev = [
            Evidence(
                name,
                f"heads with cond(Σ⁻¹) > {NON_ISOTROPIC_CONDITION:g} per layer: "
                f"{_per_layer(rows, 'non_isotropic')} of {rows[0]['heads']}",
            )
            for name, rows in gen.items()
        ]
        exists = all(sum(r["non_isotropic"] for r in rows) > 0 for rows in gen.values())
        deep_gen = [
            rows
            for m, rows in rows_by_model.items()
            if rows[0].get("non_isotropic") is not None
        ]
        high = ""
        if deep_gen:
            rows = deep_gen[0]
            lo_n, hi_n = (
                sum(r["non_isotropic"] for r in rows[:3]),
                sum(r["non_isotropic"] for r in rows[3:]),
            )
            high = (
                f"; layers 4-6: {hi_n} against {lo_n} in layers 1-3, one six-layer run"
            )
        out.append(
            _claim(
                "non_isotropic",
                "heads with a condition number of Σ⁻¹ above "
                f"{NON_ISOTROPIC_CONDITION:g} exist; more of them in layers 4-6 than in layers 1-3",
                ev,
                INCONCLUSIVE if exists else NOT_REPRODUCED,
                (
                    "non-isotropic heads in every run (that part is reproduced at CPU scale); "
                    "'especially in high layers' rests on one run" + high
                )
                if exists
                else "no non-isotropic head",
            )
        )
    return out


def pruning_claims(
    paper_counts: Sequence[int],
    ours: Mapping[str, Sequence[int]],
    accuracies: Mapping[str, Mapping[str, float]],
) -> List[Claim]:
    """App. A.1's pruning, judged: ``paper_counts`` the paper's heads pruned per layer; ``ours`` run
    label → our per-layer counts (one per threshold set); ``accuracies`` run label → ``full``,
    ``pruned`` (no retraining) and ``retrained`` test accuracies."""
    paper_counts = list(paper_counts)
    ev = [
        Evidence(
            label,
            f"{list(c)} ({sum(c)} heads) against the paper's {paper_counts} ({sum(paper_counts)})",
        )
        for label, c in ours.items()
    ]
    same = [list(c) == paper_counts for c in ours.values()]
    agree = []
    for c in ours.values():
        if int(np.argmax(c)) == int(np.argmax(paper_counts)):
            agree.append("most in the same layer")
        if c[-1] == paper_counts[-1] == 0:
            agree.append("none in the last layer")
    out = [
        _claim(
            "pruned_counts",
            "the paper's pruning rule, applied to a six-layer generalized run, prunes the "
            "same number of heads in each layer",
            ev,
            REPRODUCED if all(same) else NOT_REPRODUCED,
            "the counts per layer differ"
            + (f"; only '{agree[0]}' and '{agree[1]}' agree" if len(agree) >= 2 else "")
            if not all(same)
            else "the same counts",
        )
    ]
    ev, ok = [], []
    for label, a in accuracies.items():
        ok.append(a["retrained"] >= a["full"] - HARMLESS_DROP)
        ev.append(
            Evidence(
                label,
                f"test accuracy {100 * a['full']:.1f} % unpruned, {100 * a['pruned']:.1f} % pruned, "
                f"{100 * a['retrained']:.1f} % after retraining with the learning rate ÷ 10",
            )
        )
    out.append(
        _claim(
            "pruning_recovers",
            "after retraining with the learning rate divided by 10, the pruned model is "
            f"within {100 * HARMLESS_DROP:.1f} points of the unpruned one or above it",
            ev,
            REPRODUCED
            if ok and all(ok)
            else (NOT_REPRODUCED if ok and not any(ok) else INCONCLUSIVE),
            f"recovered in {sum(ok)} of {len(ok)} runs; no retrained unpruned control, so the extra epochs "
            "alone could account for part of it",
        )
    )
    return out


def pruning_accuracies(study: Mapping, k: int) -> Dict[str, float]:
    """From a saved pruning study (``pruning.json``) whose rule selected ``k`` heads: test accuracy
    ``full`` (unpruned), ``pruned`` (the ``k`` degenerate heads removed, no retraining) and
    ``retrained`` (after the study's retraining), as :func:`pruning_claims` takes them."""
    curve = study["curve"]["degenerate_first"]
    ret = next(r for r in study["retrained"] if r["k"] == k)
    return {
        "full": float(curve[0]),
        "pruned": float(curve[k]),
        "retrained": float(ret["test_acc"][-1]),
    }


def accuracy_series(runs_root=None, profiles: Sequence[str] = ("cpu", "deep")):
    """The quadratic and learned seed series of each profile
    (:func:`~attnconv.experiments.verdicts.seed_series`), as :func:`accuracy_claim` takes them:
    ``(series, messages)``, with one message per series that misses seeds."""
    series, messages = {}, []
    for profile in profiles:
        pair, epochs = [], set()
        for name in ("quadratic", "learned"):
            s = seed_series(profile, name, runs_root)
            if s.missing:
                messages.append(s.message())
            pair.append(final_test_accuracies(s) if s.histories else None)
            epochs |= {len(h["epochs"]) for h in s.histories.values()}
        layers = "2 layers" if profile == "cpu" else "6 layers"
        if len(epochs) > 1:
            messages.append(
                f"{profile}: quadratic and learned runs of unequal length {sorted(epochs)}; not compared"
            )
            pair = [None, None]
        length = f", {epochs.pop()} epochs" if len(epochs) == 1 else ""
        series[f"{layers} ({profile}){length}"] = tuple(pair)
    return series, messages


def accuracy_claim(series: Mapping[str, tuple]) -> Claim:
    """Sec. 3's "similar or better empirical performance (than the learned one)", over seed series:
    ``series`` run description → (quadratic :class:`~attnconv.experiments.verdicts.Spread` or ``None``,
    learned Spread or ``None``), the two at the same number of epochs. Not reproduced only where the
    learned encoding is above the quadratic one in every seed (ranges separate); reproduced where
    every series has at least 3 seeds of each and none is; otherwise inconclusive."""
    ev, below, enough = [], [], True
    for name, (quad, learned) in series.items():
        if quad is None or learned is None:
            enough = False
            ev.append(
                Evidence(
                    name,
                    "seed series missing: "
                    + ", ".join(
                        k
                        for k, v in (("quadratic", quad), ("learned", learned))
                        if v is None
                    ),
                )
            )
            continue
        seeds_ok = min(quad.n, learned.n) >= 3
        enough = enough and seeds_ok
        below.append(seeds_ok and learned.lo > quad.hi)
        ev.append(
            Evidence(
                name,
                f"quadratic {quad.format()}; learned {learned.format()}; "
                + ordering("quadratic", quad, "learned", learned),
            )
        )
    above = [
        name
        for name, (q, l) in series.items()
        if q is not None and l is not None and min(q.n, l.n) >= 3 and q.lo > l.hi
    ]
    named = [
        name
        for name, (q, l) in series.items()
        if q is not None and l is not None and min(q.n, l.n) >= 3 and l.lo > q.hi
    ]
    if any(below) and not above:
        verdict = NOT_REPRODUCED
        reason = f"the learned encoding is above the quadratic one in every seed: {'; '.join(named)}"
    elif any(below):
        verdict, reason = (
            INCONCLUSIVE,
            "the series disagree: the learned encoding is above in one, below in another",
        )
    elif enough and below:
        verdict, reason = (
            REPRODUCED,
            "in no series is the learned encoding above the quadratic one in every seed",
        )
    else:
        verdict, reason = (
            INCONCLUSIVE,
            "too few seeds (at least 3 of each model per series are needed)",
        )
    return _claim(
        "similar_or_better",
        "the quadratic encoding's test accuracy is not below the learned "
        "encoding's in every seed (same epochs, seed ranges compared)",
        ev,
        verdict,
        reason,
    )


def format_claims(claims: Sequence[Claim]) -> str:
    """Claims as one Markdown table (:func:`~attnconv.experiments.verdicts.verdict_table`)."""
    return verdict_table(claims)


def load_removal(run) -> Optional[dict]:
    """The saved ``removal.json`` of a run, or ``None`` when it was not made (``python -m
    attnconv.regenerate --only <run>/removal`` makes it from the trained weights). Its key is the
    accuracy of the full model, which must be the run's final test accuracy: removal accuracies of
    other weights than the history's last epoch raise
    :class:`~attnconv.experiments.store.StaleResultError`."""
    path = Path(run.run_dir) / REMOVAL_FILE
    if not path.is_file():
        return None
    return read_keyed(
        path,
        run.epochs[-1]["test_acc"],
        run_result_name(run.run_dir, "removal"),
        key_of=lambda saved: saved.get("full"),
    )


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
        raise ValueError(
            f"{run.run_dir}: removal needs the trained weights (load the run with its model)"
        )
    if data is None:
        data = load_cifar10(run.config.data, root=run.config.data_root, verbose=False)
    data = data.subset(
        run.config.train_subset, run.config.test_subset
    )  # the test images the run used
    model = run.model.eval()

    def accuracy(m):
        return evaluate(m, data.x_test, data.y_test, batch_size)[1]

    result = layer_removal_accuracies(model, accuracy)
    result["without_head"] = head_removal_accuracies(model, accuracy)["without_head"]
    result["note"] = (
        f"test accuracy on the {len(data.x_test):,} test images, heads removed with "
        "attnconv.experiments.pruning.prune_heads, no retraining"
    )
    return result


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
