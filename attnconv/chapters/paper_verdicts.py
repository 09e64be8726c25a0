"""The book's verdicts on the paper's experimental claims, from the committed runs.

Each claim is a record of :mod:`attnconv.experiments.claims` (kind, quote, setting, margin,
threshold, confounds: written before any result); this module gathers the evidence of the runs
(the six-layer ``deep`` runs, the 2-layer ``cpu`` runs, every seed), and turns it into a verdict by
the one rule of :mod:`attnconv.experiments.verdicts` (:func:`~attnconv.experiments.verdicts.judge`
for two sides of runs, :func:`~attnconv.experiments.verdicts.judge_same_model` for one model
against itself, :func:`~attnconv.experiments.verdicts.judge_existence` for an existence claim).
The runs at the claim's setting decide; the others are listed with their own interval, never
counted. :func:`book_claims` gives every verdict; :func:`claims_table` the summary of ch. 17.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..experiments import verdicts as v
from ..experiments.claims import CLAIMS, ONE_HOT, ONE_KEY, ClaimRecord
from ..experiments.store import results_dir
from ..experiments.studies_removal import load_removal, removal_interval
from ..experiments.verdicts import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    Evidence,
    Interval,
    Observation,
    Setting,
    Side,
    claim_block,
    existence_verdict,
)
from .shared import depth_measures as depth
from .shared.saved_runs import load_saved_runs
from .shared.trained_heads import layer_records

__all__ = [
    "make_claim",
    "paired_seeds",
    "compare_sides",
    "structure_claims",
    "grid_claim",
    "no_overlap_claim",
    "learned_claims",
    "redundant_claim",
    "generalized_claims",
    "learned_lemma_claim",
    "pruning_claims",
    "accuracy_claims",
    "flops_claim",
    "book_claims",
    "claim_key",
    "format_claim_blocks",
    "claims_table",
    "OFF_SETTING_NOTE",
    "VERDICT_BADGES",
    "VERDICT_COLOURS",
    "verdict_badge",
    "split_evidence",
    "claims_overview",
    "claim_dropdowns",
    "confounds_note",
    "verdict_counts",
    "THEORY_RESULTS",
    "BEYOND_THEORY",
    "ERRATA_WRONG",
    "ERRATA_IMPRECISE",
    "scorecard_table",
    "plot_scorecard",
]


def make_claim(
    key: str,
    evidence,
    verdict: str,
    reason: str,
    interval: str = "",
    confounds: Sequence[str] = (),
) -> Claim:
    """A :class:`~attnconv.experiments.verdicts.Claim` from the record ``key`` (quote, source,
    test, kind, margin and the record's confounds, plus ``confounds``) and the evidence."""
    r: ClaimRecord = CLAIMS[key]
    evidence = tuple(evidence) or (Evidence("none", "no run saved"),)
    return Claim(
        r.quote,
        r.source,
        r.test,
        evidence,
        verdict,
        reason,
        tuple(dict.fromkeys(r.confounds + tuple(confounds))),
        r.where,
        key,
        r.kind,
        r.margin_words,
        interval,
    )


def paired_seeds(key: str, a: Sequence[float], b: Sequence[float]):
    """The rule on a within-run comparison of an exact property (e.g. layers 3-6 against layers
    1-2 of the same run): one difference per seed, its t interval over the seeds
    (:func:`~attnconv.experiments.verdicts.paired_seed_interval`): ``(verdict, reason,
    interval)``."""
    iv = v.paired_seed_interval(a, b)
    r = CLAIMS[key]
    verdict, reason = v.decide(r.kind, iv, r.margin, 1.0, "")
    return verdict, reason, iv


def _fmt_side(side: Side, scale: float, unit: str) -> str:
    vals = [scale * x for x in side.values]
    digits = 1 if scale == 100 else 2
    if side.n == 1:
        return f"{vals[0]:.{digits}f}{unit} (one run)"
    return (
        f"mean {np.mean(vals):.{digits}f}{unit} ({min(vals):.{digits}f} to "
        f"{max(vals):.{digits}f}{unit}, {side.n} seeds)"
    )


def compare_sides(
    key: str, series: Mapping[str, Tuple[Side, Side]], at_setting: str, unit: str = ""
) -> Tuple[str, str, str, List[Evidence]]:
    """The rule over every series that bears on a comparison: ``series`` name → (side a, side b);
    the series ``at_setting`` decides, the others are listed with their own interval and verdict.
    Returns ``(verdict, reason, interval, evidence)``."""
    r = CLAIMS[key]
    ev, out = [], (INCONCLUSIVE, "no runs of both sides at the claim's setting", "")
    for name, (a, b) in series.items():
        verdict, reason, iv = v.judge(r, a, b)
        acc = bool(a.n_images or b.n_images)
        scale, side_unit = (100.0, " %") if acc else (1.0, unit)
        note = (
            ""
            if name == at_setting
            else " (not the claim's setting: listed, not counted)"
        )
        ev.append(
            Evidence(
                name,
                f"{r.a} {_fmt_side(a, scale, side_unit)}; {r.b} "
                f"{_fmt_side(b, scale, side_unit)}; {r.a} − {r.b}: "
                f"{iv.format(*((100.0, ' points') if acc else (1.0, unit)))}"
                f" → {verdict}{note}",
            )
        )
        if name == at_setting:
            fmt = (100.0, " points") if acc else (1.0, unit)
            out = (verdict, reason, iv.format(*fmt))
    return out + (ev,)


def _mean(rows, key, layers) -> float:
    vals = [r[key] for r in rows if r["layer"] in layers]
    return float(np.mean(vals)) if vals else float("nan")


def _per_layer(rows, key) -> str:
    return ", ".join(str(r[key]) for r in rows)


def _deep(label: str) -> str:
    return f"{label}, 6 layers (deep, seed 0)"


def _shallow(label: str) -> str:
    return f"{label}, 2 layers (cpu, seed 0)"


def _all(verdicts: Sequence[str]) -> str:
    if all(x == REPRODUCED for x in verdicts):
        return REPRODUCED
    if any(x == NOT_REPRODUCED for x in verdicts):
        return NOT_REPRODUCED
    return INCONCLUSIVE


def structure_claims(
    qseeds: Mapping[str, Sequence[dict]], rows_by_model
) -> List[Claim]:
    """Fig. 3's "local first, further away deeper" and App. A.2's "localized heads more frequent
    in the first layers", over every six-layer quadratic seed (``qseeds``: seed label →
    :func:`~attnconv.chapters.shared.depth_measures.depth_rows`), each a per-seed difference with its t interval."""
    out = []
    near = [_mean(r, "attention_distance", {0, 1}) for r in qseeds.values()]
    far = [_mean(r, "attention_distance", set(range(2, 6))) for r in qseeds.values()]
    cn = [_mean(r, "centre_distance", {0, 1}) for r in qseeds.values()]
    cf = [_mean(r, "centre_distance", set(range(2, 6))) for r in qseeds.values()]
    v1, _, i1 = paired_seeds("local_then_far", far, near)
    v2, _, i2 = paired_seeds("local_then_far", cf, cn)
    ev = [
        Evidence(
            f"quadratic, 6 layers, {k}",
            f"attention distance {a:.2f} (layers 1-2) against {b:.2f} (layers 3-6); "
            f"centre distance {c:.2f} against {d:.2f} (tokens)",
        )
        for k, a, b, c, d in zip(qseeds, near, far, cn, cf)
    ]
    verdict = _all([v1, v2])
    reason = (
        f"layers 3-6 minus layers 1-2 over {len(qseeds)} seeds: attention distance "
        f"{i1.format(1.0, ' tokens', 2)} → {v1}; centre distance "
        f"{i2.format(1.0, ' tokens', 2)} → {v2}"
    )
    out.append(
        make_claim("local_then_far", ev, verdict, reason, i1.format(1.0, " tokens", 2))
    )
    first = [sum(r["localized"] for r in rows[:2]) / 2 for rows in qseeds.values()]
    rest = [sum(r["localized"] for r in rows[2:]) / 4 for rows in qseeds.values()]
    verdict, reason, iv = paired_seeds("localized_first", first, rest)
    ev = [
        Evidence(
            f"quadratic, 6 layers, {k}",
            f"heads on one key per layer: {_per_layer(r, 'localized')} of {r[0]['heads']}",
        )
        for k, r in qseeds.items()
    ]
    if "quadratic, 16 heads" in rows_by_model:
        r = rows_by_model["quadratic, 16 heads"]
        ev.append(
            Evidence(
                _deep("quadratic, 16 heads"),
                f"heads on one key per layer: {_per_layer(r, 'localized')} of 16 (one "
                "seed: listed, not counted)",
            )
        )
    out.append(
        make_claim(
            "localized_first",
            ev,
            verdict,
            f"per layer, layers 1-2 minus 3-6: {reason}",
            iv.format(1.0, " heads", 2),
        )
    )
    return out


def grid_claim(qseeds, others=None, layer: int = 4, kernel_size: int = 3) -> Claim:
    """Fig. 2's grid at layer ``layer`` of the six-layer quadratic model (existence, an exact
    property): heads on one key (> :data:`~attnconv.experiments.claims.ONE_KEY`) within 0.5 token
    of more than half of the K×K lattice points around the query; ``others``: runs at other
    settings (listed)."""
    need = kernel_size**2 // 2 + 1
    obs = []
    for label, rows in qseeds.items():
        r = rows[layer - 1]
        obs.append(
            Observation(
                f"quadratic, 6 layers, {label}",
                f"layer {layer}: {r['localized']} of {r['heads']} heads on one key "
                f"(> {ONE_KEY:g}), on {r.get('sharp_coverage', 0)} of {kernel_size**2} "
                "lattice points",
                r.get("sharp_coverage", 0) >= need,
            )
        )
    for label, rows in (others or {}).items():
        best = max(rows, key=lambda r: r.get("sharp_coverage", 0))
        obs.append(
            Observation(
                f"{label}, layer {best['layer'] + 1}",
                f"heads on one key per layer {_per_layer(rows, 'localized')}; at most "
                f"{best.get('sharp_coverage', 0)} lattice points (layer {best['layer'] + 1})",
                best.get("sharp_coverage", 0) >= need,
                at_setting=False,
            )
        )
    verdict, reason = existence_verdict(obs, Setting("quadratic", 6, (layer,)))
    reason += (
        f" (threshold {ONE_KEY:g} on one key; at the book's other threshold {ONE_HOT:g} "
        "fewer heads qualify, so a verdict of none stays the same)"
    )
    return make_claim("grid_layer4", [o.evidence() for o in obs], verdict, reason)


def no_overlap_claim(at_runs: Mapping, off_runs: Mapping) -> Claim:
    """Fig. 10's "attention heads do not overlap" (an exact property): a run shows it when some
    layer has two heads on one key and no pair of such heads shares more than half its attention;
    a run without two heads on one key in any layer cannot show it (vacuous: named, not counted)."""
    obs = []
    for runs_, at in ((at_runs, True), (off_runs, False)):
        for name, rows in runs_.items():
            loc_pairs = sum(r["localized"] * (r["localized"] - 1) // 2 for r in rows)
            overlap = sum(r["localized_overlapping_pairs"] for r in rows)
            over = sum(r["overlapping_pairs"] for r in rows)
            total = sum(r["pairs"] for r in rows)
            vacuous = loc_pairs == 0
            obs.append(
                Observation(
                    name,
                    f"pairs of heads on one key: {loc_pairs}, of which sharing > 50 %: "
                    f"{overlap}; all pairs sharing > 50 %: {over} of {total}"
                    + (
                        "; no two heads on one key in a layer: vacuous, not counted"
                        if vacuous
                        else ""
                    ),
                    overlap == 0 and not vacuous,
                    at_setting=at and not vacuous,
                )
            )
    verdict, reason = existence_verdict(obs, Setting("quadratic", 6))
    return make_claim("no_overlap", [o.evidence() for o in obs], verdict, reason)


def _peaks(history) -> List[float]:
    """Per layer of a learned run, the largest probability a head puts on one key (centre query,
    saved after the last epoch)."""
    return [
        float(max(rec["peak_probability"]))
        for rec in layer_records(history, -1)
        if "peak_probability" in rec
    ]


def learned_claims(
    peaks: Mapping[str, Sequence[float]],
    counts: Mapping[str, Sequence[int]],
    shallow_peaks: Mapping[str, Sequence[float]] = None,
    symmetry: Optional[Mapping[str, int]] = None,
) -> List[Claim]:
    """Fig. 6 on the six-layer learned seeds: "heads ... learn to attend to individual pixels"
    (existence: ``peaks`` seed → per-layer largest probability on one key, at
    :data:`~attnconv.experiments.claims.ONE_KEY` and the book's other threshold), "layers four to
    six ... deviate" (``counts`` seed → heads on one key per layer; per-seed difference) and
    "vertical symmetry is much more rare" (``symmetry``: ``left_right``, ``up_down``,
    ``considered`` of the run that keeps maps)."""
    r = CLAIMS["learned_pixels"]
    top = {f"learned, 6 layers, {k}": max(p[:2]) for k, p in peaks.items()}
    off = {_shallow(k): max(p[:2]) for k, p in (shallow_peaks or {}).items()}
    verdict, reason = v.judge_existence(
        top,
        r.threshold,
        r.thresholds,
        "largest probability on one key in layers 1-2",
        off,
    )
    ev = [
        Evidence(name, f"largest probability on one key, layers 1-2: {x:.2f}")
        for name, x in top.items()
    ] + [
        Evidence(
            name, f"layers 1-2: {x:.2f} (not the claim's setting: listed, not counted)"
        )
        for name, x in off.items()
    ]
    ev = ev or [Evidence("none", "no learned run saved")]
    out = [make_claim("learned_pixels", ev, verdict, reason)]
    if counts:
        lo = [sum(c[:2]) / 2 for c in counts.values()]
        hi = [sum(c[3:]) / 3 for c in counts.values()]
        verdict, reason, iv = paired_seeds("high_layers_deviate", lo, hi)
        ev = [
            Evidence(
                f"learned, 6 layers, {k}",
                f"heads on one key per layer {', '.join(map(str, c))}",
            )
            for k, c in counts.items()
        ]
        out.append(
            make_claim(
                "high_layers_deviate",
                ev,
                verdict,
                f"heads on one key per layer, layers 1-2 minus 4-6: {reason}",
                iv.format(1.0, " heads", 2),
            )
        )
    if symmetry:
        verdict, reason, iv = v.judge(
            CLAIMS["vertical_rare"],
            v.exact_side([symmetry["left_right"]]),
            v.exact_side([symmetry["up_down"]]),
        )
        ev = [
            Evidence(
                _deep("learned"),
                f"layers 4-6: {symmetry['left_right']} left-right, {symmetry['up_down']} "
                f"up-down symmetric of {symmetry['considered']} heads not nearly uniform "
                "(the other seeds keep no maps)",
            )
        ]
        out.append(
            make_claim(
                "vertical_rare", ev, verdict, reason, iv.format(1.0, " heads", 0)
            )
        )
    return out


def redundant_claim(removal: Mapping[str, dict], n_test: Optional[int] = None) -> Claim:
    """Fig. 6's "some of the heads in the last two layers seem to be redundant", on the six-layer
    learned run's removal study: a head of layers 5-6 whose removal costs at most
    :data:`~attnconv.experiments.claims.HARMLESS_DROP` — the lower end of the same-model interval
    of (without − full) above −margin. Paired (exact McNemar) where the study kept per-image
    predictions, else the conservative unpaired interval
    (:func:`~attnconv.experiments.studies_removal.removal_interval`; ``n_test`` forces the
    unpaired one on that many images)."""
    r = CLAIMS["redundant"]
    ev, shown, best = [], [], None
    for model, rem in removal.items():
        at = model.startswith("learned")
        ivs = _last_two_layers(rem, n_test)
        for (i, h), iv in ivs.items():
            verdict, _ = v.decide(v.NON_INFERIORITY, iv, r.margin)
            if at and verdict == REPRODUCED:
                shown.append(f"layer {i + 1}, head {h + 1}: {iv.format()}")
            if at and (best is None or iv.lo > best.lo):
                best = iv
        ev.append(Evidence(_deep(model), _removal_evidence(r, ivs, at)))
    if best is None:
        return make_claim(
            "redundant",
            ev or [Evidence("none", "no removal study")],
            INCONCLUSIVE,
            "no run at the claim's setting",
        )
    if shown:
        verdict = REPRODUCED
        reason = (
            f"{len(shown)} head(s) of layers 5-6 cost less than the "
            f"{100 * r.margin:g}-point margin; " + "; ".join(shown[:2])
        ) + (f"; and {len(shown) - 2} more" if len(shown) > 2 else "")
    else:
        verdict = INCONCLUSIVE
        reason = (
            f"no head's interval lies above −{100 * r.margin:g} points; the best head: "
            f"{best.format()}; the removal study kept no per-image predictions, so the "
            "interval is the conservative unpaired one, and these runs could detect a "
            f"difference of about {100 * best.detectable:.1f} points"
            if best.method.startswith(v.UNPAIRED)
            else f"no head's interval lies above −{100 * r.margin:g} points; the best: "
            f"{best.format()}; even paired, these runs could detect a difference of about "
            f"{100 * best.detectable:.1f} points"
        )
    return make_claim("redundant", ev, verdict, reason, best.format())


def _last_two_layers(
    rem: dict, n_test: Optional[int]
) -> Dict[Tuple[int, int], Interval]:
    """(layer, head) → the interval of (without the head − full) for every head of the last two
    layers of one removal study."""
    heads = rem["without_head"]
    out = {}
    for i in range(len(heads) - 2, len(heads)):
        for h, acc in enumerate(heads[i]):
            out[i, h] = (
                removal_interval(rem, i, h)
                if n_test is None
                else v.same_model_unpaired(acc, rem["full"], n_test)
            )
    return out


def _removal_evidence(r: ClaimRecord, ivs: Mapping, at: bool) -> str:
    """One run's line of evidence: the drops when one head of layers 5-6 is removed, and how many
    of them the rule calls harmless (their interval's lower end above −margin)."""
    # + 0.0: a head that changes nothing prints as 0.0, not -0.0
    drops = sorted(-100 * iv.estimate + 0.0 for iv in ivs.values())
    ok = sum(iv.lo > -r.margin for iv in ivs.values())
    method = next(iter(ivs.values())).method
    return (
        f"layers 5-6: drops when one head is removed {drops[0]:.1f} to {drops[-1]:.1f} "
        f"points; {ok} of {len(drops)} with the lower end of their interval above "
        f"−{100 * r.margin:g} points ({method})"
        + ("" if at else " (not the claim's setting: listed, not counted)")
    )


def generalized_claims(
    gen: Mapping[str, Sequence[dict]], gen_off: Mapping
) -> List[Claim]:
    """App. A.1's non-isotropic heads (existence, an exact property) and "especially in high
    layers" (per-seed difference of layers 4-6 and 1-3): ``gen`` run → rows of the six-layer
    generalized runs, ``gen_off`` the 2-layer ones (listed)."""
    th = CLAIMS["non_isotropic"].threshold
    obs = [
        Observation(
            name,
            f"heads with cond(Σ⁻¹) > {th:g} per layer: {_per_layer(rows, 'non_isotropic')} "
            f"of {rows[0]['heads']}",
            sum(r["non_isotropic"] for r in rows) > 0,
            at_setting=at,
        )
        for runs_, at in ((gen, True), (gen_off, False))
        for name, rows in runs_.items()
    ]
    verdict, reason = existence_verdict(obs, Setting("generalized", 6))
    out = [make_claim("non_isotropic", [o.evidence() for o in obs], verdict, reason)]
    if gen:
        hi = [sum(r["non_isotropic"] for r in rows[3:]) for rows in gen.values()]
        lo = [sum(r["non_isotropic"] for r in rows[:3]) for rows in gen.values()]
        verdict, reason, iv = paired_seeds("non_isotropic_high", hi, lo)
        ev = [
            Evidence(name, f"layers 4-6: {a}, layers 1-3: {b} non-isotropic heads")
            for name, a, b in zip(gen, hi, lo)
        ]
        out.append(
            make_claim(
                "non_isotropic_high", ev, verdict, reason, iv.format(1.0, " heads", 0)
            )
        )
    return out


def learned_lemma_claim(runs: Mapping[str, Mapping], kernel_size: int = 3) -> Claim:
    """Sec. 3's "the relative encoding learned by the neural network also matched the conditions
    of the lemma" on every learned run (the sentence names no depth): ``runs`` label → history. A
    run shows it when one layer has heads on one key on each of the K² shifts of the kernel."""
    k2 = kernel_size**2
    obs = []
    for label, h in runs.items():
        cov = depth.lemma_shifts_covered(h, kernel_size)
        obs.append(
            Observation(
                label,
                f"kernel shifts with a head on one key (> {ONE_KEY:g}), per layer: "
                f"{', '.join(map(str, cov))} of {k2}",
                max(cov, default=0) >= k2,
            )
        )
    if not obs:
        obs.append(Observation("none", "no learned run saved", False, at_setting=False))
    verdict, reason = existence_verdict(obs, Setting("learned"))
    return make_claim(
        "learned_matched_lemma", [o.evidence() for o in obs], verdict, reason
    )


def _same_model(key: str, label: str, acc: Mapping, sides: Tuple[str, str], at: bool):
    """One run's same-model comparison for a pruning claim: ``sides`` (a, b) names in ``acc``
    (:func:`~attnconv.chapters.shared.depth_measures.pruning_accuracies`), paired (exact McNemar)
    where ``acc`` holds both sides' ``<name>_predictions`` and the ``labels``, else unpaired on
    ``acc['n_test']`` images."""
    r = CLAIMS[key]
    a, b = acc[sides[0]], acc[sides[1]]
    labels = acc.get("labels") or acc.get("n_test", 1017)
    iv = v.same_model_difference(
        acc.get(f"{sides[0]}_predictions"),
        acc.get(f"{sides[1]}_predictions"),
        labels,
        (a, b),
    )
    verdict, reason = v.decide(r.kind, iv, r.margin)
    note = "" if at else " (not the claim's setting: listed, not counted)"
    ev = Evidence(
        label,
        f"{r.a} {100 * a:.1f} %, {r.b} {100 * b:.1f} %; {r.a} − {r.b}: {iv.format()} → "
        f"{verdict}{note}",
    )
    return verdict, reason, iv, ev


def pruning_claims(
    paper_counts: Sequence[int],
    ours: Mapping[str, Sequence[int]],
    accuracies: Mapping[str, Mapping[str, float]],
    n_test: int = 1017,
    setting_label: str = "6 layers",
) -> List[Claim]:
    """App. A.1's pruning: the heads pruned per layer (``ours`` label → counts at a threshold set;
    an exact property), "initially hurts a bit" (superiority, unpruned − pruned) and "recovers its
    unpruned value" (equivalence, retrained − unpruned), each a same-model comparison on the same
    test images (``accuracies`` run label → ``full``, ``pruned``, ``retrained``, optional
    ``random``, ``retrain_epochs``, ``base_epochs``). Runs whose label starts with
    ``setting_label`` decide; the others are listed."""
    paper_counts = list(paper_counts)
    obs = [
        Observation(
            label,
            f"{list(c)} ({sum(c)} heads) against the paper's {paper_counts} "
            f"({sum(paper_counts)})",
            list(c) == paper_counts,
            at_setting=label.startswith(setting_label) and "1e3" not in label,
        )
        for label, c in ours.items()
    ]
    verdict, reason = existence_verdict(obs, Setting("generalized", 6))
    reason += " (at the paper's thresholds; the authors' code's 1e3 is listed)"
    out = [make_claim("pruned_counts", [o.evidence() for o in obs], verdict, reason)]
    for key, side in (
        ("pruning_hurts", ("full", "pruned")),
        ("pruning_recovers", ("retrained", "full")),
    ):
        ev, decided = [], (INCONCLUSIVE, "no run at the claim's setting", "")
        for label, a in accuracies.items():
            at = label.startswith(setting_label)
            a = {"n_test": n_test, **a}
            vd, rs, iv, e = _same_model(key, label, a, side, at)
            ev.append(e)
            if key == "pruning_recovers" and "retrain_epochs" in a:
                ev.append(
                    Evidence(
                        label,
                        f"retrained {a['retrain_epochs']} epochs after {a['base_epochs']}",
                    )
                )
            if key == "pruning_hurts" and "random" in a:
                ev.append(
                    Evidence(
                        label,
                        f"as many random heads pruned instead: {100 * a['random']:.1f} % "
                        + _draws(a.get("random_draws", 1)),
                    )
                )
            if at:
                unpaired = iv.method.startswith(v.UNPAIRED)
                decided = (vd, rs + (_NO_PREDICTIONS if unpaired else ""), iv.format())
        out.append(make_claim(key, ev, *decided))
    return out


def _draws(n: int) -> str:
    return "(one random draw)" if n == 1 else f"(mean of {n} random draws)"


_NO_PREDICTIONS = (
    "; the pruning study kept no per-image predictions, so the interval is the conservative "
    "unpaired one"
)


def _series_side(name: str, label: str, messages: List[str]) -> Optional[Side]:
    """The final test accuracies (and per-image predictions, where kept) of the saved runs of the
    registry series or run ``name``; ``None`` (and a message) when none is saved."""
    found, missing = depth.series_runs(name)
    runs = list(found.values())
    if missing:
        messages.append(
            f"{name}: {len(runs)} of {len(runs) + len(missing)} seeds saved"
            if runs
            else missing[0]
        )
    if not runs:
        return None
    epochs = {len(r.history.epochs) for r in runs}
    if len(epochs) != 1:
        messages.append(f"{name}: runs of unequal length {sorted(epochs)}; left out")
        return None
    side = v.accuracy_side(runs, label)
    object.__setattr__(side, "label", f"{label}, {epochs.pop()} epochs")
    return side


def _epochs_side(side_runs: Sequence, label: str) -> Side:
    return v.exact_side([_epochs_to(r.history) for r in side_runs], label)


def _epochs_to(history) -> int:
    """The first epoch (from 1) at which the test accuracy reaches
    :data:`~attnconv.chapters.shared.depth_measures.CONVERGED_SHARE` of its final value."""
    accs = [e["test_acc"] for e in history["epochs"]]
    return next(
        i + 1 for i, a in enumerate(accs) if a >= depth.CONVERGED_SHARE * accs[-1]
    )


def _resnet(deep_profile: str) -> str:
    return (
        "cpu/resnet18-40epochs"
        if deep_profile == "deep"
        else f"{deep_profile}/resnet18"
    )


def _pairs(spec: Mapping[str, Tuple[str, str]], labels, messages) -> Dict[str, tuple]:
    out = {}
    for name, (a, b) in spec.items():
        sa = _series_side(a, labels[0], messages)
        sb = _series_side(b, labels[1], messages)
        if sa is not None and sb is not None:
            out[name] = (sa, sb)
    return out


def accuracy_claims(
    deep_profile: str = depth.DEEP_PROFILE,
) -> Tuple[List[Claim], List[str]]:
    """Sec. 3's "similar or better", App. A.1's "no performance improvement", Sec. 4.3's "close
    to ResNet18" and Sec. 4.2's "The ResNet is faster to converge", each over every series of
    equal training, the six-layer series deciding (the paper's depth); ResNet18 over its saved
    seeds. Returns ``(claims, messages)``."""
    msgs: List[str] = []
    six = "6 layers, 40 epochs"
    dq, dl, dg = (
        f"{deep_profile}/{m}" for m in ("quadratic", "learned", "generalized")
    )
    res = _resnet(deep_profile)
    out = []
    spec = {
        "2 layers, 16 epochs": ("cpu/quadratic", "cpu/learned"),
        "2 layers, 40 epochs": ("cpu/quadratic-40epochs", "cpu/learned-40epochs"),
        six: (dq, dl),
    }
    pairs = _pairs(spec, ("quadratic", "learned"), msgs)
    verdict, reason, iv, ev = compare_sides("similar_or_better", pairs, six)
    out.append(make_claim("similar_or_better", ev, verdict, reason, iv))
    spec = {
        "2 layers, 40 epochs": ("cpu/generalized", "cpu/quadratic-40epochs"),
        six: (dg, dq),
    }
    pairs = _pairs(spec, ("generalized", "quadratic"), msgs)
    verdict, reason, iv, ev = compare_sides("no_gain", pairs, six)
    out.append(make_claim("no_gain", ev, verdict, reason, iv))
    spec = {"2 layers, 40 epochs": ("cpu/learned-40epochs", res), six: (dl, res)}
    pairs = _pairs(spec, ("learned", "ResNet18"), msgs)
    verdict, reason, iv, ev = compare_sides("close_to_resnet", pairs, six)
    out.append(make_claim("close_to_resnet", ev, verdict, reason, iv))
    out.append(_resnet_faster(dq, res, msgs))
    return out, list(dict.fromkeys(msgs))


def _resnet_faster(dq: str, res: str, msgs: List[str]) -> Claim:
    def runs(name):
        found = list(depth.series_runs(name)[0].values())
        if not found:
            raise ValueError(f"{name}: no saved run")
        return found

    try:
        r = runs(res)
        pairs = {
            "2 layers, 40 epochs": (
                _epochs_side(runs("cpu/quadratic-40epochs"), "quadratic"),
                _epochs_side(r, "ResNet18"),
            ),
            "6 layers, 40 epochs": (
                _epochs_side(runs(dq), "quadratic"),
                _epochs_side(r, "ResNet18"),
            ),
        }
    except Exception as e:  # a missing run is a message, not a crash
        msgs.append(f"ResNet18 convergence: {str(e).splitlines()[0]}")
        return make_claim(
            "resnet_faster", [Evidence("none", "no runs")], INCONCLUSIVE, "no runs"
        )
    verdict, reason, iv, ev = compare_sides(
        "resnet_faster", pairs, "6 layers, 40 epochs", " epochs"
    )
    reason = f"epochs to {depth.CONVERGED_SHARE:.0%} of the final accuracy: {reason}"
    return make_claim("resnet_faster", ev, verdict, reason, iv)


def flops_claim(result: Mapping) -> Claim:
    """Sec. 4.2's "reduce significantly the number of FLOPS", judged by FLOPs: the counted FLOPs
    per training step of the quadratic model at the paper's settings, dense against local
    attention, from the saved CPU benchmark (``result``: :func:`attnconv.experiments.bench.
    load_result`); an exact count, no noise: reproduced when local saves more than the claim's
    :data:`~attnconv.experiments.claims.SIGNIFICANT_FLOP_REDUCTION` of dense's FLOPs."""
    r = CLAIMS["local_fewer_flops"]
    rows = {x["implementation"]: x for x in result["models"]["quadratic"]}
    dense, local = rows["dense"], rows["local"]
    saved = 1 - local["train_gflops_per_step"] / dense["train_gflops_per_step"]
    verdict = REPRODUCED if saved > r.margin else NOT_REPRODUCED
    reason = (
        f"local attention counts {100 * saved:.0f} % fewer FLOPs per training step than dense "
        f"(an exact count), {'above' if saved > r.margin else 'below'} the claim's "
        f"{100 * r.margin:g} %; the wall-clock time is another matter (ch. 13)"
    )
    ev = [
        Evidence(
            "quadratic, paper settings, CPU benchmark",
            f"dense {dense['train_gflops_per_step']:.0f} GFLOP per step at "
            f"{dense['train_images_per_s']:.1f} images/s; local "
            f"{local['train_gflops_per_step']:.0f} GFLOP at {local['train_images_per_s']:.1f} images/s",
        )
    ]
    return make_claim(
        "local_fewer_flops", ev, verdict, reason, f"{100 * saved:.0f} % fewer (exact)"
    )


def _learned_seeds(name: str):
    """Every saved seed of the learned series ``name``: (seed label → per-layer largest
    probability on one key, seed label → heads on one key per layer)."""
    runs, _ = depth.series_runs(name)
    peaks = {k: _peaks(r.history) for k, r in runs.items()}
    counts = {k: depth.learned_localized(r.history) for k, r in runs.items()}
    return peaks, counts


def _depth_group(
    deep_profile: str, runs, rows, shallow, shallow_rows, msgs
) -> List[Claim]:
    qseeds, m1 = depth.seed_depth_rows(f"{deep_profile}/quadratic")
    msgs += m1
    out = []
    if qseeds:
        out += structure_claims(qseeds, rows)
        others = {
            _deep(m): r
            for m, r in rows.items()
            if m in ("generalized", "quadratic, 16 heads")
        }
        others.update(
            {
                _shallow(m): r
                for m, r in shallow_rows.items()
                if m.startswith("quadratic")
            }
        )
        out.append(grid_claim(qseeds, others))
    at_runs = {f"quadratic, 6 layers, {k}": r for k, r in qseeds.items()}
    if "quadratic, 16 heads" in rows:
        at_runs[_deep("quadratic, 16 heads")] = rows["quadratic, 16 heads"]
    off = {_deep(m): r for m, r in rows.items() if not m.startswith("quadratic")}
    off.update({_shallow(m): r for m, r in shallow_rows.items()})
    out.append(no_overlap_claim(at_runs, off))
    peaks, counts = _learned_seeds(f"{deep_profile}/learned")
    shallow_peaks = {
        m: _peaks(r.history) for m, r in shallow.items() if m.startswith("learned")
    }
    symmetry = None
    if "learned" in rows:
        high = rows["learned"][3:]
        symmetry = {
            "left_right": sum(r["left_right"] for r in high),
            "up_down": sum(r["up_down"] for r in high),
            "considered": sum(r["heads"] - r["near_uniform"] for r in high),
        }
    out += learned_claims(peaks, counts, shallow_peaks, symmetry)
    removal = {k: load_removal(r) for k, r in runs.items()}
    removal = {k: x for k, x in removal.items() if x is not None}
    if removal:
        out.append(redundant_claim(removal))
    gen = {
        _deep(m): r for m, r in rows.items() if r[0].get("non_isotropic") is not None
    }
    gen_off = {
        _shallow(m): r
        for m, r in shallow_rows.items()
        if r[0].get("non_isotropic") is not None
    }
    if gen or gen_off:
        out += generalized_claims(gen, gen_off)
    out.append(learned_lemma_claim(_learned_histories(deep_profile)))
    return out


def _learned_histories(deep_profile: str) -> Dict[str, Mapping]:
    out = {}
    for name, layers in (
        (f"{deep_profile}/learned", 6),
        ("cpu/learned", 2),
        ("cpu/learned-40epochs", 2),
    ):
        for k, r in depth.series_runs(name)[0].items():
            out[f"learned, {layers} layers, {len(r.epochs)} epochs, {k}"] = r.history
    return out


def _pruning_group(runs, shallow) -> List[Claim]:
    from ..experiments.paper_numbers import (
        AUTHORS_CODE_CONDITION_THRESHOLD,
        PAPER_CONDITION_THRESHOLD,
        PAPER_PRUNED_PER_LAYER,
    )

    ours, accuracies = {}, {}
    candidates = [
        ("6 layers (deep)", runs.get("generalized")),
        ("2 layers (cpu)", shallow.get("generalized")),
    ]
    for label, run in candidates:
        if run is None or not (Path(run.run_dir) / "pruning.json").is_file():
            continue
        study = json.loads((Path(run.run_dir) / "pruning.json").read_text())
        k = sum(len(x) for x in study["selected"].values())
        accuracies[label] = depth.pruning_accuracies(study, k)
        if label.startswith("6 layers"):
            for what, cond in (
                ("thresholds 1e-5 and 1e5", PAPER_CONDITION_THRESHOLD),
                ("the authors' code's 1e3", AUTHORS_CODE_CONDITION_THRESHOLD),
            ):
                ours[f"{label}, {what}"] = depth.pruned_counts_from_history(
                    run.history, cond
                )
    return pruning_claims(PAPER_PRUNED_PER_LAYER, ours, accuracies) if ours else []


#: The CPU benchmark the performance verdict reads, in the book's results folder
#: (:func:`~attnconv.experiments.store.results_dir`, which follows ``$ATTNCONV_BOOK_DIR``).
BENCHMARK_FILE = "benchmark-cpu.json"


def book_claims(deep_profile: Optional[str] = None) -> Dict[str, List]:
    """Every verdict the book gives on the paper's experimental claims, from the committed runs
    (nothing is trained): group → claims (``depth``, ``accuracy``, ``pruning``, ``performance``)
    and ``missing`` (what is not saved). ``deep_profile``: the profile of the six-layer runs,
    default :data:`~attnconv.chapters.shared.depth_measures.DEEP_PROFILE` (``$ATTNCONV_DEEP_PROFILE``), the same
    profile the chapter's figures read."""
    deep_profile = deep_profile or depth.DEEP_PROFILE
    runs, missing = load_saved_runs(depth.DEEP_RUNS, deep_profile)
    rows = {k: depth.depth_rows(r, k) for k, r in runs.items()}
    shallow, _ = depth.shallow_runs()
    shallow_rows = {k: depth.depth_rows(r, k) for k, r in shallow.items()}
    msgs: List[str] = [f"{deep_profile}: no {m} run" for m in missing]
    out: Dict[str, List] = {"profile": [deep_profile]}
    out["depth"] = _depth_group(deep_profile, runs, rows, shallow, shallow_rows, msgs)
    out["accuracy"], m = accuracy_claims(deep_profile)
    msgs += m
    if "generalized" in runs:
        out["pruning"] = _pruning_group(runs, shallow)
    benchmark = results_dir() / BENCHMARK_FILE
    if benchmark.is_file():
        out["performance"] = [flops_claim(json.loads(benchmark.read_text()))]
    out["missing"] = msgs
    return out


GROUPS = ("depth", "accuracy", "pruning", "performance")


def claim_key(claim: Claim) -> str:
    """The registry key of a claim made here."""
    return claim.key


def format_claim_blocks(claims: Sequence[Claim], link: bool = False) -> str:
    """One block per claim (:func:`~attnconv.experiments.verdicts.claim_block`): its title, quote,
    kind and margin, test, evidence, verdict with its interval, confounds; ``link``: where in the
    book the evidence is printed."""
    blocks = []
    for c in claims:
        where = f"{{ref}}`{c.where}`" if (link and c.where) else ""
        blocks.append(claim_block(c, CLAIMS[c.key].title if c.key else None, where))
    return "\n\n---\n\n".join(blocks)


#: A hyphen between two digits (a range of layers, "5-6"), written non-breaking in tables.
_RANGE_HYPHEN = re.compile(r"(?<=\d)-(?=\d)")


def _number(x: float) -> str:
    return f"{x:g}" if x < 1000 else f"1e{round(math.log10(x))}"


def claims_table(
    claims: Sequence[Claim], link: bool = True, badge: bool = False
) -> str:
    """Ch. 17's summary: one row per claim of the registry (in its order) with its kind, margin
    (or threshold), interval at the claim's setting and verdict, as a Markdown table; ``badge``:
    the verdict as a coloured badge (:func:`verdict_badge`)."""
    by_key = {c.key: c for c in claims}
    lines = [
        "| claim (arXiv v1) | kind | margin | interval at the setting | verdict |",
        "| :--- | :--- | :--- | :--- | :--- |",
    ]
    for key, r in CLAIMS.items():
        c = by_key.get(key)
        if c is None:
            continue
        title = f"{r.title}" + (f" ({{ref}}`{r.where}`)" if link and r.where else "")
        margin = (
            r.margin_words
            if r.kind != v.EXISTENCE or r.margin
            else f"threshold {_number(r.threshold)}"
        )
        shown = verdict_badge(c.verdict) if badge else f"*{c.verdict}*"
        cells = (title, r.kind, margin, c.interval or "—", shown)
        if badge:  # a range of layers ("5-6") stays on one line in a narrow column
            cells = tuple(_RANGE_HYPHEN.sub("\u2011", x) for x in cells)
        lines.append("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- presentation
#
# How the chapters show the verdicts: a badge per verdict, one table row per claim, the evidence of
# every run in a dropdown (runs at another setting gathered under one line instead of a note on
# each), and the confounds once per page. Nothing here changes a verdict.

#: The note a run at another setting carries in its evidence (listed, not counted).
OFF_SETTING_NOTE = " (not the claim's setting: listed, not counted)"
#: sphinx-design badge role per verdict (green, amber, grey: the theme's "secondary" is orange), and
#: the short word it shows ("at CPU scale" is said once).
VERDICT_BADGES = {
    REPRODUCED: ("bdg-success", "reproduced"),
    NOT_REPRODUCED: ("bdg-warning", "not reproduced"),
    INCONCLUSIVE: ("bdg-muted", "inconclusive"),
}
#: Colours of the same three verdicts, for figures and HTML (sphinx-design's success / warning /
#: muted), and of the theory's two rows (exact checks, errata).
VERDICT_COLOURS = {
    REPRODUCED: "#198754",
    NOT_REPRODUCED: "#c98a00",
    INCONCLUSIVE: "#6c757d",
    "exact": "#198754",
    "errata": "#dc3545",
}


def verdict_badge(verdict: str) -> str:
    """The verdict as a sphinx-design badge (MyST): green reproduced, amber not reproduced, grey
    inconclusive."""
    role, word = VERDICT_BADGES[verdict]
    return f"{{{role}}}`{word}`"


def split_evidence(claim: Claim) -> Tuple[List[Evidence], List[Evidence]]:
    """The claim's evidence as (runs at the claim's setting, runs at another setting), the note
    :data:`OFF_SETTING_NOTE` (and its one-seed variant) taken off the second list's rows."""
    at, off = [], []
    for e in claim.evidence:
        m = e.measured
        if OFF_SETTING_NOTE in m:
            off.append(Evidence(e.run, m.replace(OFF_SETTING_NOTE, "").rstrip("; ")))
        elif m.endswith("(one seed: listed, not counted)"):
            off.append(Evidence(e.run, m[: -len(" (one seed: listed, not counted)")]))
        else:
            at.append(e)
    return at, off


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def claims_overview(claims: Sequence[Claim], link_text: str = "evidence") -> str:
    """One Markdown table row per claim: the claim (its registry title), the test as written, the
    verdict as a badge, and a link (``link_text``) to the section that prints its evidence."""
    lines = [
        "| claim (arXiv v1) | test | verdict | evidence |",
        "| :--- | :--- | :--- | :--- |",
    ]
    for c in claims:
        link = f"{{ref}}`{link_text} <{c.where}>`" if c.where else "—"
        cells = (CLAIMS[c.key].title, _one_line(c.test), verdict_badge(c.verdict), link)
        lines.append("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")
    return "\n".join(lines)


def claim_dropdowns(claims: Sequence[Claim], open_: bool = False) -> str:
    """Each claim as a collapsed dropdown (MyST ``:::{dropdown}``), its verdict in the title: the
    quote and source, the kind and margin, the test, the evidence of the runs at the claim's
    setting, the runs at other settings under one line (listed, not counted), and the verdict with
    its reason. The confounds are left to :func:`confounds_note`, once per page."""
    blocks = []
    for c in claims:
        at, off = split_evidence(c)
        title = CLAIMS[c.key].title if c.key else c.source
        body = [f"> “{_one_line(c.quote)}” ({c.source})", ""]
        if c.kind:
            margin = f", margin {c.margin}" if c.margin not in ("", "—") else ""
            body += [f"*Kind.* {c.kind}{margin} (set before the result)", ""]
        body += [f"*Test.* {_one_line(c.test)}", ""]
        if at:
            body += ["*At the claim's setting.*", ""]
            body += [f"- {_one_line(e.run)}: {_one_line(e.measured)}" for e in at]
            body.append("")
        if off:
            body += ["*At other settings* (listed, not counted).", ""]
            body += [f"- {_one_line(e.run)}: {_one_line(e.measured)}" for e in off]
            body.append("")
        body.append(f"*Verdict.* **{c.verdict}** — {_one_line(c.reason)}.")
        opts = [":color: light"] + ([":open:"] if open_ else [])
        blocks.append(
            "\n".join(
                [f"::::{{dropdown}} {title}: {c.verdict}", *opts, "", *body, "::::"]
            )
        )
    return "\n\n".join(blocks)


def confounds_note(claims: Sequence[Claim]) -> str:
    """The confounds of these claims, each once (in the order they first appear), as a Markdown
    list: which claims each one touches (by title)."""
    seen: Dict[str, List[str]] = {}
    for c in claims:
        for text in c.confounds:
            seen.setdefault(_one_line(text), []).append(CLAIMS[c.key].title)
    every = [CLAIMS[c.key].title for c in claims]
    lines = []
    for text, titles in seen.items():
        rest = [t for t in every if t not in titles]
        if len(titles) > len(every) / 2 and rest:
            touches = "every claim here but " + "; ".join(rest)
        else:
            touches = "; ".join(titles)
        lines.append(f"- {text} *It touches:* {touches}.")
    return "\n".join(lines)


def verdict_counts(claims: Sequence[Claim]) -> Dict[str, int]:
    """How many claims got each verdict, in the order of :data:`VERDICT_BADGES`."""
    return {k: sum(c.verdict == k for c in claims) for k in VERDICT_BADGES}


# --------------------------------------------------------------------------- ch. 17's scorecard
#
# The theory and the errata are settled by proofs and exact checks in ch. 3-5 and 15, not by runs;
# their rows here repeat what those chapters' result boxes state (title, what holds, label).

#: The paper's theory, checked exactly: (result, what the book finds, the label of the chapter).
THEORY_RESULTS = (
    ("Lemma 1", "$K^2$ one-hot heads are a $K\\times K$ convolution", "ch-lemma1"),
    (
        "Lemma 2",
        "the quadratic encoding's softmax tends to a one-hot as $\\alpha$ grows; exact in "
        "floating point once $\\alpha \\ge \\ln(4/u)$",
        "ch-theorem1",
    ),
    (
        "Theorem 1",
        "$N_h$ heads express any $\\sqrt{N_h}\\times\\sqrt{N_h}$ convolution with "
        "$\\min(D_h, D_{out})$ output channels",
        "ch-theorem1",
    ),
    (
        "Eq. (16)",
        "the generalized encoding is a Gaussian log-density up to a constant and contains "
        "eq. (9)",
        "ch-generalized",
    ),
)
#: What the exact checks add to the theory (beyond the paper).
BEYOND_THEORY = (
    (
        "$D_p = 2$",
        "two positional dimensions suffice, even a polynomial encoding, on every image size",
        "sec-dp2",
    ),
    (
        "The border",
        "with keys on the image only, the layer tends to the convolution with *replicate* "
        "padding; zero padding needs keys on a zero-padded grid",
        "ch-lemma1",
    ),
)
#: The errata of ch. 15: statements wrong by an exact check, and imprecise ones.
ERRATA_WRONG = (
    "the conjecture $D_p \\ge 3$",
    "the rank $D_{out} - D_h$ (it is at most $D_h$)",
    '"by a fourth" (the paper\'s own numbers give a fifth)',
)
ERRATA_IMPRECISE = (
    'the gloss on "equivariant"',
    "eq. (11)'s slice ends",
    "one cross-reference",
    "the unstated padding at the border",
)


def scorecard_table(claims: Sequence[Claim]) -> str:
    """Ch. 17's scorecard as a Markdown table: the theory (exact), what the checks add, the errata
    (wrong, imprecise) and the experimental claims counted by verdict, each row with its badge,
    its count and where the book shows it."""
    n = verdict_counts(claims)
    rows = [
        (
            "{bdg-success}`exact`",
            "Theory: " + ", ".join(t for t, _, _ in THEORY_RESULTS) + " hold as stated",
            len(THEORY_RESULTS),
            "{ref}`ch. 3 <ch-lemma1>`, {ref}`4 <ch-theorem1>`, {ref}`5 <ch-generalized>`",
        ),
        (
            "{bdg-info}`beyond the paper`",
            "Theory: " + "; ".join(t for t, _, _ in BEYOND_THEORY),
            len(BEYOND_THEORY),
            "{ref}`ch. 4 <sec-dp2>`, {ref}`3 <ch-lemma1>`",
        ),
        (
            "{bdg-danger}`errata`",
            "Wrong by an exact check: " + "; ".join(ERRATA_WRONG),
            len(ERRATA_WRONG),
            "{ref}`ch. 15 <errata>`",
        ),
        (
            "{bdg-light}`imprecise`",
            "Imprecise, not wrong: " + "; ".join(ERRATA_IMPRECISE),
            len(ERRATA_IMPRECISE),
            "{ref}`ch. 15 <errata>`",
        ),
    ]
    words = {
        REPRODUCED: "Experimental claims reproduced at CPU scale",
        NOT_REPRODUCED: "Experimental claims not reproduced at CPU scale",
        INCONCLUSIVE: "Experimental claims the runs cannot settle",
    }
    for verdict, count in n.items():
        rows.append(
            (
                verdict_badge(verdict),
                words[verdict],
                count,
                "{ref}`below <sec-every-claim>`",
            )
        )
    lines = ["| | what | count | where |", "| :--- | :--- | ---: | :--- |"]
    lines += [f"| {b} | {w} | {c} | {at} |" for b, w, c, at in rows]
    return "\n".join(lines)


def plot_scorecard(claims: Sequence[Claim]):
    """Ch. 17's scorecard as a figure: one bar per part of the paper (theory, errata, experimental
    claims), split and coloured by what the book finds, each segment labelled with its count.
    Returns the figure."""
    import matplotlib.pyplot as plt

    from .shared.plotting import COLUMN_INCHES

    n = verdict_counts(claims)
    bars = (
        (
            "theory\n(exact checks)",
            [
                (len(THEORY_RESULTS), "hold", VERDICT_COLOURS["exact"]),
                (len(BEYOND_THEORY), "beyond", "#0d6efd"),
            ],
        ),
        (
            "errata\n(ch. 15)",
            [
                (len(ERRATA_WRONG), "wrong", VERDICT_COLOURS["errata"]),
                (len(ERRATA_IMPRECISE), "imprecise", "#e9a0a8"),
            ],
        ),
        (
            "experimental\nclaims (CPU scale)",
            [
                (n[REPRODUCED], "reproduced", VERDICT_COLOURS[REPRODUCED]),
                (n[NOT_REPRODUCED], "not reproduced", VERDICT_COLOURS[NOT_REPRODUCED]),
                (n[INCONCLUSIVE], "inconclusive", VERDICT_COLOURS[INCONCLUSIVE]),
            ],
        ),
    )
    fig, ax = plt.subplots(figsize=(COLUMN_INCHES, 2.6), constrained_layout=True)
    for y, (_, segments) in enumerate(bars):
        left = 0
        for count, word, colour in segments:
            if not count:
                continue
            ax.barh(y, count, left=left, color=colour, edgecolor="white", height=0.7)
            dark = colour not in ("#e9a0a8",)
            ax.text(
                left + count / 2,
                y,
                f"{count}\n{word}",
                ha="center",
                va="center",
                color="white" if dark else "black",
                fontsize=9,
            )
            left += count
    ax.set_yticks(range(len(bars)), [label for label, _ in bars])
    ax.invert_yaxis()
    ax.set_xlabel("results of the paper (count)")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlim(0, max(sum(c for c, _, _ in s) for _, s in bars) + 0.3)
    ax.spines[["top", "right"]].set_visible(False)
    return fig
