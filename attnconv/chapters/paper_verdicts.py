"""The book's verdicts on the paper's experimental claims, from the committed runs.

Each claim is a record of :mod:`attnconv.experiments.claims` (kind, quote, setting, margin,
threshold, confounds: written before any result); this module gathers the evidence of the runs
(the six-layer ``deep`` runs, the 2-layer ``cpu`` runs, every seed), and turns it into a verdict by
the one rule of :mod:`attnconv.experiments.verdicts` (:func:`~attnconv.experiments.verdicts.judge`
for two sides of runs, :func:`~attnconv.experiments.verdicts.judge_same_model` for one model
against itself, :func:`~attnconv.experiments.verdicts.judge_existence` for an existence claim).
The runs at the claim's setting decide; the others are listed with their own interval, never
counted. The claim builders live in :mod:`attnconv.chapters.shared.paper_claims`; this module
gathers the runs for them: :func:`book_claims` gives every verdict, :func:`claims_table` the
summary of ch. 17, and the rest presents them.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from ..evidence.judge import (
    PENDING,
    ConfirmatoryVerdict,
    arm_runs,
    confirmatory_verdicts,
    followup_verdicts,
    interim_words,
    one_sided_bounds,
)
from ..evidence.protocol import CLAIMS as FROZEN_CLAIMS
from ..evidence.protocol import CONFIRMATORY_SEEDS, NOT_JUDGED
from ..experiments import verdicts as v
from ..experiments.claim_text import claim_block, short_quote
from ..experiments.claims import (
    CLAIMS,
    LOCAL_DROPOUT_CONFOUND,
    POSITIONAL_LR_CONFOUND,
)
from ..experiments.store import results_dir
from ..experiments.studies_removal import load_removal
from ..experiments.verdicts import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    Evidence,
)
from .shared import depth_measures as depth
from .shared.badges import (
    VERDICT_BADGES,
    VERDICT_COLOURS,
    category_badge,
    stated_verdicts,
    verdict_badge,
    verdict_number,
    verdict_word,
)

# badges.verdict_counts counts verdicts; verdict_counts here counts claims
from .shared.badges import verdict_counts as count_verdicts
from .shared.followup_words import asked_again
from .shared.paper_claims import (
    accuracy_claims,
    deep_label,
    flops_claim,
    generalized_claims,
    grid_claim,
    layer_peaks,
    learned_claims,
    learned_lemma_claim,
    no_overlap_claim,
    pruning_claims,
    redundant_claim,
    shallow_label,
    structure_claims,
)
from .shared.saved_runs import load_saved_runs
from .shared.tables import keep_ranges, keep_words, signed_number, threshold_text

__all__ = [
    "book_claims",
    "claim_key",
    "format_claim_blocks",
    "claims_table",
    "fresh_claims_table",
    "frozen_bound",
    "fresh_measure",
    "sharpened_detail",
    "OFF_SETTING_NOTE",
    "split_evidence",
    "check_fresh_bullet",
    "fresh_map_cell",
    "fragile_words",
    "MAP_ROWS",
    "paper_map_text",
    "claim_dropdowns",
    "plain_title",
    "claim_card_rows",
    "claim_cards",
    "CARDS_IN_12",
    "card_label",
    "card_links",
    "claim_evidence",
    "clauses",
    "paired_over_images",
    "confounds_note",
    "verdict_counts",
    "EXACT_CHECKS",
    "DESCRIBED",
    "counted",
    "not_counted",
    "shown_verdict",
    "shown_badge",
    "claims_count_sentence",
    "judged_elsewhere",
    "elsewhere_stated",
    "tally_words",
    "what_holds_box",
    "share_words",
    "errata_words",
    "six_layers_box",
    "resnet_size_ratio",
    "resnet_sentence",
    "not_counted_markdown",
    "tallies_table",
    "confounds_table",
    "six_layer_page_claims",
    "SIX_LAYERS_ADDED",
    "SIX_LAYERS_ALSO",
    "six_layers_tallied",
    "THEORY_RESULTS",
    "BEYOND_THEORY",
    "ERRATA_WRONG",
    "ERRATA_IMPRECISE",
    "scorecard_table",
    "plot_claim_board",
    "board_rows",
]


def _learned_seeds(name: str):
    """Every saved seed of the learned series ``name``: (seed label → per-layer largest
    probability on one key, seed label → heads on one key per layer)."""
    runs, _ = depth.series_runs(name)
    peaks = {k: layer_peaks(r.history) for k, r in runs.items()}
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
            deep_label(m): r
            for m, r in rows.items()
            if m in ("generalized", "quadratic, 16 heads")
        }
        others.update(
            {
                shallow_label(m): r
                for m, r in shallow_rows.items()
                if m.startswith("quadratic")
            }
        )
        out.append(grid_claim(qseeds, others))
    at_runs = {f"quadratic, 6 layers, {k}": r for k, r in qseeds.items()}
    if "quadratic, 16 heads" in rows:
        at_runs[deep_label("quadratic, 16 heads")] = rows["quadratic, 16 heads"]
    off = {deep_label(m): r for m, r in rows.items() if not m.startswith("quadratic")}
    off.update({shallow_label(m): r for m, r in shallow_rows.items()})
    out.append(no_overlap_claim(at_runs, off))
    peaks, counts = _learned_seeds(f"{deep_profile}/learned")
    shallow_peaks = {
        m: layer_peaks(r.history) for m, r in shallow.items() if m.startswith("learned")
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
        deep_label(m): r
        for m, r in rows.items()
        if r[0].get("non_isotropic") is not None
    }
    gen_off = {
        shallow_label(m): r
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
    from ..experiments.paper_numbers import PAPER_PRUNED_PER_LAYER

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
            for what, counts in _pruned_per_layer(run).items():
                ours[f"{label}, {what}"] = counts
    return pruning_claims(PAPER_PRUNED_PER_LAYER, ours, accuracies) if ours else []


def _pruned_per_layer(run) -> Dict[str, List[int]]:
    """The heads the pruning rule marks in each layer of a six-layer generalized ``run``, at the
    paper's condition-number thresholds and at its authors' code's."""
    from ..experiments.paper_numbers import (
        AUTHORS_CODE_CONDITION_THRESHOLD,
        PAPER_CONDITION_THRESHOLD,
    )

    return {
        what: list(depth.pruned_counts_from_history(run.history, condition))
        for what, condition in (
            ("thresholds 10⁻⁵ and 10⁵", PAPER_CONDITION_THRESHOLD),
            ("the authors' code's 10³", AUTHORS_CODE_CONDITION_THRESHOLD),
        )
    }


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


def _number(x: float) -> str:
    """A threshold as the text writes it (:func:`~.shared.tables.threshold_text`): 0.5, 10⁵."""
    return threshold_text(x)


def claims_table(
    claims: Sequence[Claim],
    link: bool = True,
    badge: bool = False,
    fresh: bool = False,
    verdicts: Optional[Mapping[str, ConfirmatoryVerdict]] = None,
    margin_digit: bool = True,
) -> str:
    """Ch. 17's summary: one row per claim of the registry (in its order) with its kind, margin
    (or threshold), interval at the claim's setting and verdict, as a Markdown table; ``badge``:
    the verdict as a coloured badge (:func:`verdict_badge`). ``fresh``: the table of the frozen
    protocol instead (:func:`fresh_claims_table`, its verdicts ``verdicts``, by default
    :func:`fresh_verdicts`; ``margin_digit`` as there)."""
    if fresh:
        return fresh_claims_table(claims, verdicts, link, margin_digit)
    by_key = {c.key: c for c in claims}
    lines = [
        "| claim (arXiv v1) | kind | margin | interval at the setting | verdict |",
        "| :--- | :--- | :--- | :--- | :--- |",
    ]
    for key, r in CLAIMS.items():
        c = by_key.get(key)
        if c is None:
            continue
        shown = verdict_badge(c.verdict) if badge else f"*{c.verdict}*"
        cells = (_title(key, link), r.kind, _margin(key), c.interval or "—", shown)
        if badge:  # a range of layers ("5-6") stays on one line in a narrow column
            cells = tuple(keep_ranges(x) for x in cells)
        lines.append("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")
    return "\n".join(lines)


def _title(key: str, link: bool) -> str:
    r = CLAIMS[key]
    return f"{r.title}" + (f" ({{ref}}`{r.where}`)" if link and r.where else "")


def _margin(key: str) -> str:
    """The exploratory registry's margin or threshold, in its words."""
    r = CLAIMS[key]
    if r.kind != v.EXISTENCE or r.margin:
        return r.margin_words
    return f"threshold {_number(r.threshold)}"


def _points(x: float) -> str:
    return f"{100 * x:g} point" + ("s" * (100 * x != 1))


def frozen_bound(key: str) -> str:
    """The frozen protocol's threshold or margin of claim ``key``, in the words of the
    exploratory registry's (:func:`_margin`) so the two compare: ``threshold 0.9`` (the
    per-seed property's), ``−2 points`` (non-inferiority, or a share's per-seed margin),
    ``±1 point`` (equivalence), ``—`` (none: a superiority above 0, or a share with no
    threshold)."""
    c = FROZEN_CLAIMS[key]
    if c.margin is not None:
        sign = "±" if c.kind == v.EQUIVALENCE else "\u2212"
        return sign + _points(c.margin)
    if c.threshold is not None:
        return f"threshold {_number(c.threshold)}"
    return "—"


def fresh_measure(got: ConfirmatoryVerdict, margin_digit: bool = True) -> str:
    """The number a fresh verdict rests on, for a table cell, from the judge's own numbers
    (:class:`~attnconv.evidence.judge.ConfirmatoryVerdict`): a share as ``8 of 8 seeds; share
    0.69–1.00`` (each end a one-sided 95 % bound, :func:`~attnconv.evidence.judge.
    one_sided_bounds`), a comparison as ``−10.0 points [−12.2, −7.8]`` (its 95 % interval, an end
    that rounds onto the margin to one more digit: :func:`_ends`, unless ``margin_digit`` is
    false: then every end has the estimate's digits); "—" while pending. Nothing is judged
    here."""
    if got.verdict == PENDING:
        return "—"
    if got.interval is not None:
        return got.interval.compact(
            got.scale,
            got.unit,
            got.digits,
            _boundaries(got.key, got.scale) if margin_digit else (),
        )
    if got.shown is None:  # a verdict that carries no numbers: the judge's words
        return _one_line(got.detail)
    lo, hi = one_sided_bounds(got.shown, len(got.seeds))
    # word joiners: the share's range stays on one line
    return f"{got.shown} of {len(got.seeds)} seeds; share {lo:.2f}\u2060–\u2060{hi:.2f}"


def fresh_claims_table(
    claims: Sequence[Claim],
    verdicts: Optional[Mapping[str, ConfirmatoryVerdict]] = None,
    link: bool = True,
    margin_digit: bool = True,
) -> str:
    """Ch. 17's master table, led by the frozen protocol: one row per claim of the registry (in
    its order) that the protocol judges, then one per claim it adds: the protocol's threshold or
    margin (:func:`frozen_bound`), the fresh seeds' number that decides it
    (:func:`fresh_measure`), the fresh verdict as a badge (*fragile* marked where an alternative
    other than Holm's adjustment changes it: the caption says Holm's once), and the
    exploratory verdict as a secondary column, with the registry's own threshold or margin where
    it differs from the protocol's. ``verdicts``: the judge's
    :class:`~attnconv.evidence.judge.ConfirmatoryVerdict` objects (by default
    :func:`fresh_verdicts`); nothing is judged here. ``margin_digit``: as
    :func:`fresh_measure` (false: every interval to its estimate's digits)."""
    verdicts = fresh_verdicts() if verdicts is None else verdicts
    by_key = {c.key: c for c in claims}
    lines = [
        "| claim (arXiv v1) | frozen threshold, margin | on the eight seeds | verdict "
        "| before the freeze |",
        "| :--- | :--- | :--- | :--- | :--- |",
    ]
    keys = [k for k in CLAIMS if k in verdicts] + [
        k for k in verdicts if k not in CLAIMS
    ]
    for key in keys:
        got, bound = verdicts[key], frozen_bound(key)
        if key in CLAIMS:
            # the title links to the claim's card: its evidence, run by run
            title = (
                f"{{ref}}`{CLAIMS[key].title} <{card_label(key)}>`"
                if link
                else CLAIMS[key].title
            )
            old = _margin(key)
            aside = f" ({old})" if old not in ("—", bound) else ""
            c = by_key.get(key)
            exploratory = "—" if c is None else verdict_badge(c.verdict) + aside
        else:
            r = FROZEN_CLAIMS[key]
            title = keep_words(
                f"{r.source.split(' (')[0]}: {r.prop} (frozen protocol only)"
            )
            exploratory = "—"
        # Holm's adjustment changes every share of eight seeds: the caption says it once
        shown = _fresh_badge(got) + (" *fragile*" if _flips(got, holm=False) else "")
        cells = (title, bound, fresh_measure(got, margin_digit), shown, exploratory)
        cells = tuple(keep_ranges(x) for x in cells)
        lines.append("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- presentation
#
# How the chapters show the verdicts: a badge per verdict, one table row per claim, the evidence of
# every run in a dropdown (runs at another setting gathered under one line instead of a note on
# each), and the confounds once per page. Nothing here changes a verdict.

#: The note a run at another setting carries in its evidence (listed, not counted).
OFF_SETTING_NOTE = " (not the claim's setting: listed, not counted)"


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


@functools.lru_cache(maxsize=1)
def fresh_verdicts() -> Dict[str, ConfirmatoryVerdict]:
    """The frozen protocol's verdicts on the fresh seeds (:func:`confirmatory_verdicts`), read
    once per process."""
    return confirmatory_verdicts()


def _boundaries(key: str, scale: float = 100.0) -> Tuple[float, ...]:
    """The values, in printed units (``scale`` × the protocol's margin), an interval of claim
    ``key`` is judged against."""
    c = FROZEN_CLAIMS[key]
    m = scale * (c.margin or 0.0)
    return {v.NON_INFERIORITY: (-m,), v.EQUIVALENCE: (-m, m)}.get(c.kind, (m,))


def _ends(got: ConfirmatoryVerdict, margin: bool = True) -> str:
    """``[−4.8, −0.96]``: the fresh interval's ends as the judge prints them, or (``margin``) with
    an end that rounds onto the margin to one more digit
    (:meth:`~attnconv.experiments.verdicts.Interval.ends`)."""
    bounds = _boundaries(got.key, got.scale) if margin else ()
    return "[{}, {}]".format(*got.interval.ends(got.scale, got.digits, bounds))


def sharpened_detail(got: ConfirmatoryVerdict) -> str:
    """The judge's words on a fresh verdict, on one line, with its difference and interval
    printed from the verdict's own :attr:`~ConfirmatoryVerdict.interval` (its unit always given,
    an end that rounds onto the margin to one more digit, as :func:`_ends`); the judge's words
    after the interval follow as they are. The judge prints the same numbers, the epochs to
    converge without their unit: a ``ValueError`` when its words do not start with them."""
    text = _one_line(got.detail)
    if got.interval is None or not got.interval.seed_term_known:
        return text
    full = got.interval.format(got.scale, got.unit, got.digits)
    full = full.replace(_ends(got, margin=False), _ends(got), 1)
    for unit in (got.unit, ""):  # the judge's print, with its unit or bare
        said = got.interval.format(got.scale, unit, got.digits)
        if text.startswith(said):
            return full + text[len(said) :]
    raise ValueError(f"{got.key}: the judge's words do not start with its interval")


def fresh_badge(key: str) -> str:
    """A claim's verdict on the fresh seeds as a badge: the verdict's colour (marked *interim*
    while it reads the first five seeds), "pending" while its runs are made, "—" for a statement
    the protocol does not judge."""
    got = fresh_verdicts().get(key)
    return "—" if got is None else _fresh_badge(got)


def _fresh_badge(got: ConfirmatoryVerdict) -> str:
    if got.verdict == PENDING:
        return category_badge("pending")
    return verdict_badge(got.verdict) + (" (interim)" if got.interim else "")


#: The flip of a *not reproduced* that Holm's adjustment applied in both directions holds back
#: (:func:`~.shared.holm_both.holm_both_ways`), in a fragile verdict's words.
TWO_WAY_HOLM = "inconclusive with Holm's adjustment applied in both directions (not the protocol's)"


def _flips(got: ConfirmatoryVerdict, holm: bool = True) -> List[str]:
    """Each alternative under which the judged verdict ``got`` changes, in words: the protocol's,
    and for a *not reproduced* Holm's adjustment applied in both directions, which the protocol
    does not name but ch. 17 reports (:data:`TWO_WAY_HOLM`); without Holm's adjustment in either
    reading when ``holm`` is false (a list that says it once above its lines)."""
    if got.verdict == PENDING:
        return []
    flips = [
        f"{w.removesuffix(' at CPU scale')} with {a}"
        for a, w in got.alternatives.items()
        if w != got.verdict and (holm or not a.startswith("Holm's adjustment"))
    ]
    if not holm:
        return flips
    # the two-way reading is the family's: only for the fresh verdict itself
    family = fresh_verdicts().get(got.key) == got
    if (
        got.verdict == NOT_REPRODUCED
        and family
        and _two_way_holm()[got.key] == INCONCLUSIVE
    ):
        flips.append(TWO_WAY_HOLM)
    return flips


@functools.lru_cache(maxsize=None)
def _two_way_holm() -> Dict[str, str]:
    """The fresh verdicts under Holm's adjustment applied in both directions."""
    from .shared.holm_both import holm_both_ways

    return holm_both_ways(fresh_verdicts(), FROZEN_CLAIMS)


def _map_number(got: ConfirmatoryVerdict) -> str:
    """A paper-map cell's number: ``8 of 8 seeds``, or ``−10.0 points, 95 % interval [−12.2, −7.8]``
    (:func:`_ends`); nothing while pending."""
    if got.verdict == PENDING:
        return ""
    if got.interval is None:
        return f"{got.shown} of {len(got.seeds)} seeds"
    bounds = _boundaries(got.key, got.scale)
    return got.number(bounds)


def fresh_map_cell(claims: Sequence[Tuple[str, str]]) -> str:
    """A paper-map row's lead: for each ``(label, key)`` the claim's badge on the fresh seeds
    (:func:`fresh_badge`) and the number the verdict rests on (the share of seeds, or the
    paired difference with its 95 % interval), the label before it."""
    got = fresh_verdicts()
    parts = []
    for label, key in claims:
        number = _map_number(got[key])
        parts.append(" ".join(w for w in (label, fresh_badge(key), number) if w))
    return "; ".join(parts)


#: The paper map's claim rows (words found in the row) → the frozen protocol's claims it
#: states, each with the label its number needs.
MAP_ROWS: Dict[str, Tuple[Tuple[str, str], ...]] = {
    "forming a grid around the query pixel": (("", "grid_layer4"),),
    "tend to focus on local patterns": (("", "local_then_far"),),
    "attention heads do not overlap": (("", "no_overlap"),),
    "appear more frequently in the first few layers": (("", "localized_first"),),
    "learn to attend to individual pixels": (("", "learned_pixels"),),
    "particularly prominent for layers four to six": (("", "high_layers_deviate"),),
    "vertical symmetry is much more rare": (("", "vertical_rare"),),
    "seem to be redundant": (("", "redundant"),),
    "similar or better empirical performance": (("", "similar_or_better"),),
    "faster to converge": (("epochs sooner:", "resnet_faster"),),
    "close to that of ResNet18": (("", "close_to_resnet"),),
    "do not obtain any performance improvement": (("", "no_gain"),),
    "matched the conditions of the lemma": (("", "learned_matched_lemma"),),
    "non-isotropic attention probability patterns": (
        ("non-isotropic:", "non_isotropic"),
        ("especially in high layers:", "non_isotropic_high"),
    ),
    "Pruning degenerated heads": (
        ("heads to prune:", "pruning_finds_heads"),
        ("hurts:", "pruning_hurts"),
        ("recovers:", "pruning_recovers"),
    ),
}
#: Between a paper-map row's fresh-seed lead and its exploratory status.
MAP_JOIN = " · exploratory: "
_ONE_OF_N = "one run of several was enough before; now most fresh seeds must show it"
#: Why a claim's verdict on the fresh seeds and its exploratory verdict point opposite ways
#: (one reproduced, the other not), said once in the paper map's row, after the fresh lead.
MAP_DIFFERS: Dict[str, str] = {
    "no_overlap": _ONE_OF_N,
    "learned_pixels": "the earlier rule asked 0.5 of one run of several; the frozen protocol "
    "asks 0.9 (nearly one-hot) of most fresh seeds",
    "close_to_resnet": "the earlier ResNet18 was untuned; the fresh one was tuned on validation",
}
#: The registered follow-up's claims that ask a frozen claim again, each with its label, given in
#: the frozen claim's paper-map row after the fresh lead once judged.
MAP_FOLLOWUP: Dict[str, Tuple[Tuple[str, str], ...]] = asked_again()
#: Where a paper-map row's follow-up verdicts begin.
MAP_FOLLOWUP_LEAD = "; {ref}`registered follow-up <glossary-followup>`: "
#: A paper-map row's exploratory part for a claim the earlier rule did not judge.
MAP_NOT_EXPLORED = "not judged"


def _opposite(a: str, b: str) -> bool:
    return {a, b} == {REPRODUCED, NOT_REPRODUCED}


def paper_map_text(text: str) -> str:
    """The paper map ``text`` with each claim row's status written anew: the verdicts on the
    fresh seeds (:func:`fresh_map_cell`), where the fresh and the exploratory verdict point
    opposite ways why (:data:`MAP_DIFFERS`), then the exploratory verdicts, in words only (their
    evidence is in the chapter the row links). What ``book/paper_map.md`` holds (a test
    compares)."""
    out, fresh = [], fresh_verdicts()
    earlier = {c.key: c.verdict for g in GROUPS for c in book_claims().get(g, [])}
    for line in text.splitlines(keepends=True):
        words = [w for w in MAP_ROWS if line.startswith("|") and w in line]
        if words:
            claims = MAP_ROWS[words[0]]
            body = line.rstrip().rstrip("|").rstrip().rpartition(" | ")[0]
            lead = fresh_map_cell(claims)
            differ = [
                MAP_DIFFERS[k]
                for _, k in claims
                if k in MAP_DIFFERS
                and _opposite(fresh[k].verdict, earlier.get(k, fresh[k].verdict))
            ]
            if differ:
                lead += f" (the two differ: {'; '.join(differ)})"
            lead += _map_followup([k for _, k in claims])
            explored = "; ".join(
                f"{label} {earlier.get(k, MAP_NOT_EXPLORED)}".strip()
                for label, k in claims
            )
            line = f"{body} | {lead}{MAP_JOIN}{explored} |\n"
        out.append(line)
    return "".join(out)


def _map_followup(keys: Sequence[str]) -> str:
    """The follow-up's verdict on the claims ``keys`` ask again (:data:`MAP_FOLLOWUP`), for a
    paper-map row, each with its badge: nothing while it is pending."""
    from ..evidence.followup import all_claims

    margins = {k: c.margin for k, c in all_claims().items()}
    parts = [
        f"{label} {verdict_badge(f.verdict)} "
        f"{verdict_number(f)}{_margin_words(margins.get(asked))}"
        for k in keys
        for asked, label in MAP_FOLLOWUP.get(k, ())
        if (f := followup_verdicts()[asked]).verdict != PENDING
    ]
    return MAP_FOLLOWUP_LEAD + "; ".join(parts) if parts else ""


def _margin_words(margin: Optional[float]) -> str:
    """ " (margin 2 points)" for a comparison's margin (a fraction), nothing without one."""
    if not margin:
        return ""
    points = 100 * margin
    return f" (margin {points:g} point{'' if points == 1 else 's'})"


def fresh_counts(keys: Sequence[str]) -> Dict[str, int]:
    """How many of the protocol's claims ``keys`` (those it judges) have each verdict on the
    fresh seeds, "pending" included: what a box's fresh-seeds bullet shows."""
    got = fresh_verdicts()
    return count_verdicts(got[k].verdict for k in keys if k in got)


def fresh_badges(keys: Sequence[str]) -> str:
    """:func:`fresh_counts` as the badges a box's fresh-seeds bullet shows."""
    return count_badges(fresh_counts(keys))


def count_badges(counts: Mapping[str, int]) -> str:
    """Counts of verdicts (and of "pending") as badges, in the badges' order: ``{bdg-success}`4
    reproduced` {bdg-warning}`4 not reproduced` ...``; a zero count gets no badge."""
    out = [
        f"{{{role}}}`{counts[v]} {word}`"
        for v, (role, word) in VERDICT_BADGES.items()
        if counts.get(v)
    ]
    if counts.get(PENDING):
        out.append(category_badge("pending", counts[PENDING]))
    return " ".join(out)


def check_fresh_bullet(checks, notebook: str, keys: Sequence[str]) -> None:
    """Assert (in ``checks``, the chapter's check table) that the "On fresh seeds" bullet of
    ``notebook``'s In-short box shows :func:`fresh_counts` of ``keys``."""
    fresh = fresh_counts(keys)
    checks.equal(
        "the summary's fresh-seed badges = the frozen protocol's verdicts",
        stated_verdicts(notebook, fresh=True),
        fresh,
        shown=", ".join(f"{n} {v}" for v, n in sorted(fresh.items())),
    )


def fresh_sentence(key: str) -> str:
    """The dropdown's last line: the claim's verdict on the fresh seeds, with its numbers."""
    got = fresh_verdicts().get(key)
    if got is None:
        return "*Fresh seeds.* Not a claim of the frozen protocol."
    if got.verdict == PENDING:
        return "*Fresh seeds* (frozen protocol). Pending: its runs are being made."
    interim = ", interim: the first five seeds" if got.interim else ""
    return (
        f"*Fresh seeds* (frozen protocol{interim}). **{got.verdict}** — "
        f"{sharpened_detail(got)}.{fragile_words(key)}"
    )


def fragile_words(key: str) -> str:
    """`` *Fragile:* inconclusive with Holm's adjustment over the family.`` — each defensible
    alternative of the protocol under which the claim's fresh verdict changes, or nothing."""
    flips = _flips(fresh_verdicts()[key])
    return f" *Fragile:* {'; '.join(flips)}." if flips else ""


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
            body += [f"*Kind.* {c.kind}{margin}", ""]
        body += [f"*Test.* {_one_line(c.test)}", ""]
        if at:
            body += ["*At the claim's setting.*", ""]
            body += [f"- {_one_line(e.run)}: {_one_line(e.measured)}" for e in at]
            body.append("")
        if off:
            body += ["*At other settings* (listed, not counted).", ""]
            body += [f"- {_one_line(e.run)}: {_one_line(e.measured)}" for e in off]
            body.append("")
        if (
            c.key in DESCRIBED + EXACT_CHECKS
        ):  # shown apart: what is measured, no verdict
            body.append(
                f"*{shown_verdict(c).capitalize()}.* {_APART_NOTE.get(c.key, '')}"
            )
        else:
            body.append(
                f"*Earlier runs.* The runs made before the protocol's freeze, not "
                f"counted, gave **{c.verdict}** — {_one_line(c.reason)}."
            )
        body[2:2] = [fresh_sentence(c.key), ""]  # the fresh seeds' verdict leads
        name = card_label(c.key) if c.key else None
        head = f"{plain_title(title)}, run by run: {dropdown_verdict(c)}"
        blocks.append(_dropdown(head, body, open_, name))
    return "\n\n".join(blocks)


def _dropdown(
    title: str, body: Sequence[str], open_: bool, name: Optional[str] = None
) -> str:
    """A claim's light dropdown (MyST ``::::{dropdown}``) titled ``title`` around ``body``'s
    lines, open when ``open_``, a link target when ``name`` is given."""
    opts = [":color: light"] + ([":open:"] if open_ else [])
    opts += [f":name: {name}"] if name else []
    return "\n".join([f"::::{{dropdown}} {title}", *opts, "", *body, "::::"])


#: A paired interval's label as :meth:`~attnconv.experiments.verdicts.Interval.format` prints it,
#: "(paired, 3 v 5 seeds": what is paired is the test images (every run of both sides is scored
#: on the same ones); the seeds are separate runs on each side.
_PAIRED_SEEDS = re.compile(r"\(paired, (\d+ v \d+ seeds?)")
#: What a card says once when one of its intervals is paired over the test images.
PAIRED_NOTE = (
    "Paired over the test images: both sides are scored on the same images, and each side's "
    "seeds are separate runs."
)
#: What a card says once when it lists runs at another setting.
OFF_SETTING_SENTENCE = (
    "Runs marked “not counted” are at another setting: listed, not counted."
)


def paired_over_images(text: str) -> str:
    """``text`` with each "(paired, 3 v 5 seeds" of an interval's label said in full, "(paired
    over the test images, 3 v 5 seeds": the label, not the numbers, changes (the judge's own
    words are left as they are)."""
    return _PAIRED_SEEDS.sub(r"(paired over the test images, \1", text)


def _top_level(text: str, sep: str) -> Iterator[int]:
    """Where ``sep`` followed by a space stands in ``text`` outside parentheses and brackets."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif ch == sep and depth == 0 and text[i + 1 : i + 2] == " ":
            yield i


def clauses(text: str) -> List[str]:
    """``text`` cut at each "; " outside parentheses and brackets, each part kept verbatim: the
    clauses of a verdict's reason, one to a line of a table cell."""
    parts, start = [], 0
    for i in _top_level(text, ";"):
        parts.append(text[start:i])
        start = i + 2
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


#: The most words a line of a card's cell holds before it is cut at its first colon.
CELL_LINE_WORDS = 40


def _colon_cut(text: str) -> List[str]:
    """``text`` as one line, or, when it runs over :data:`CELL_LINE_WORDS` words, cut after its
    first colon outside parentheses and brackets (the colon kept, no word changed)."""
    if len(text.split()) <= CELL_LINE_WORDS:
        return [text]
    for i in _top_level(text, ":"):
        return [text[: i + 1], text[i + 2 :]]
    return [text]


def _lines(parts: Sequence[str]) -> str:
    """Table-cell lines (joined by ``<br>``), each with the paired label said in full, a line
    over :data:`CELL_LINE_WORDS` words cut at its first colon (:func:`_colon_cut`)."""
    lines = [x for p in parts for x in _colon_cut(paired_over_images(_one_line(p)))]
    return "<br>".join(lines)


def _measured(e: Evidence) -> str:
    return _lines(clauses(_one_line(e.measured)))


def _fresh_cell(key: str) -> Tuple[str, str]:
    """The card's fresh-seeds row: (badge, the judge's words cut into clauses, the alternatives
    that change it last)."""
    got = fresh_verdicts().get(key)
    if got is None:
        return "—", "not a claim of the frozen protocol"
    if got.verdict == PENDING:
        return category_badge("pending"), "its runs are being made"
    lines = clauses(sharpened_detail(got))
    if got.interim:
        lines.insert(0, "interim: the first five seeds")
    flips = _flips(got)
    if flips:
        lines.append("fragile: " + "; ".join(flips))
    return _fresh_badge(got), _lines(lines)


def claim_card_rows(c: Claim) -> List[Tuple[str, str, str]]:
    """A claim's card as table rows (part, which, what): the claim quoted with its source, the
    test with its kind and margin, one row per run with its measured value (runs at another
    setting marked "not counted"), the verdict on the fresh seeds and the exploratory verdict,
    each a badge beside the judge's words, cut at their semicolons (:func:`clauses`), a range of
    numbers kept on one line (:func:`keep_ranges`). Every string is the rule's or the judge's;
    only the layout is this function's."""
    at, off = split_evidence(c)
    kind = c.kind + (f", margin {c.margin}" if c.margin not in ("", "—") else "")
    rows = [
        ("claim", _one_line(c.source), f"“{_one_line(c.quote)}”"),
        ("test", kind or "—", _lines(clauses(keep_ranges(_one_line(c.test))))),
    ]
    rows += [("run", _one_line(e.run), _measured(e)) for e in at]
    rows += [("run, not counted", _one_line(e.run), _measured(e)) for e in off]
    rows.append(("fresh seeds", *_fresh_cell(c.key)))
    reason = keep_ranges(_one_line(c.reason))  # "layers 1-2" kept on one line
    rows.append(("exploratory", shown_badge(c), _lines(clauses(reason))))
    return rows


def _card_sentences(rows: Sequence[Tuple[str, str, str]]) -> List[str]:
    """At most two short sentences under a card: what "not counted" and "paired" mean, where
    the card needs them."""
    out = []
    if any(part == "run, not counted" for part, _, _ in rows):
        out.append(OFF_SETTING_SENTENCE)
    if any("paired over the test images" in what for _, _, what in rows):
        out.append(PAIRED_NOTE)
    return out


def claim_cards(
    claims: Sequence[Claim],
    chapter: str,
    first: int,
    open_: bool = False,
    open_first: bool = False,
) -> str:
    """Each claim as a collapsed dropdown titled by the claim alone (the page's overview table
    gives the verdicts) holding one small captioned table, "Table <chapter>.<n> — <title>: ...", numbered from
    ``first`` in order (:func:`claim_card_rows`), and at most two short sentences below it
    (:func:`_card_sentences`); every card open with ``open_``, the first with ``open_first``
    (a page's first card, as an example). The confounds are left to :func:`confounds_note`."""
    from .shared.tables import captioned, markdown_table

    blocks = []
    for n, c in enumerate(claims, start=first):
        title = CLAIMS[c.key].title if c.key else c.source
        rows = claim_card_rows(c)
        table = captioned(
            markdown_table(("part", "which", "what"), rows, align="lll"),
            f"Table {chapter}.{n} — {title}: the claim, its test, each run and the "
            "verdicts.",
        ).data
        body = [table]
        sentences = _card_sentences(rows)
        if sentences:
            body += ["", " ".join(sentences)]
        name = card_label(c.key) if c.key else None
        opened = open_ or (open_first and n == first)
        blocks.append(_dropdown(title, body, opened, name))  # its verdicts: Table 17.2
    return "\n\n".join(blocks)


#: The claims that have their card on the claims page, ch. 12, by the section that shows them;
#: the chapters that draw their evidence link to it (:func:`claim_evidence`), so each claim has
#: one card in the book.
CARDS_IN_12 = {
    "claims": (
        "local_then_far",
        "localized_first",
        "no_overlap",
        "learned_pixels",
        "high_layers_deviate",
        "vertical_rare",
        "non_isotropic",
        "non_isotropic_high",
    ),
    "redundant": ("redundant",),
    "accuracy": ("similar_or_better", "close_to_resnet", "resnet_faster", "no_gain"),
}


def card_label(key: str) -> str:
    """The link target of a claim's card, ``card-local-then-far`` for ``local_then_far``."""
    return "card-" + key.replace("_", "-")


def card_links(claims: Sequence[Claim]) -> str:
    """For claims whose card is on another page: a sentence saying where their seed-by-seed
    evidence is, then one bullet per claim, its title linked to its card, with its verdict on
    the fresh seeds as a badge."""
    links = [
        f"- {{ref}}`{CLAIMS[c.key].title} <{card_label(c.key)}>` {fresh_badge(c.key)}"
        for c in claims
    ]
    one = len(links) == 1
    return (
        f"The evidence for {'this claim' if one else 'these claims'}, seed by seed, is on "
        f"{'its card' if one else 'their cards'} in {{ref}}`ch. 12 <ch-six-layers>`:\n\n"
        + "\n".join(links)
    )


def claim_evidence(claims: Sequence[Claim]) -> str:
    """A chapter's claims: a link to the card for each claim carded on the claims page
    (:data:`CARDS_IN_12`), and a card here (:func:`claim_dropdowns`) for each other one."""
    carded = {k for keys in CARDS_IN_12.values() for k in keys}
    there = [c for c in claims if c.key in carded]
    here = [c for c in claims if c.key not in carded]
    parts = ([card_links(there)] if there else []) + (
        [claim_dropdowns(here)] if here else []
    )
    return "\n\n".join(parts)


def _baseline_ratio(key: str) -> Optional[Tuple[str, float]]:
    """Where a comparison's baseline is the protocol's ResNet18 (an arm of the frozen claim
    ``key``): its rival arm and how many times the rival's size the tuning made the ResNet18,
    from the fresh runs' parameter counts; ``None`` for other claims or missing runs."""
    claim = FROZEN_CLAIMS.get(key)
    if claim is None or "resnet18" not in claim.arms:
        return None
    rival = next(a for a in claim.arms if a != "resnet18")
    runs = [arm_runs(a, CONFIRMATORY_SEEDS[:1]) for a in ("resnet18", rival)]
    if None in runs:
        return None
    big, small = (r[0].history["num_parameters"] for r in runs)
    return rival, big / small


def _confounds(claims: Sequence[Claim]) -> Dict[str, List[str]]:
    """Each confound of these claims, once, in the order they first appear → the keys of the
    claims it touches."""
    seen: Dict[str, List[str]] = {}
    for c in claims:
        for text in c.confounds:
            seen.setdefault(text, []).append(c.key)
    return seen


def confounds_note(claims: Sequence[Claim]) -> str:
    """The confounds of these claims, each once (in the order they first appear), as a numbered
    Markdown list: the confound's short name (:data:`~attnconv.experiments.claims.CONFOUND_NAMES`)
    and what it is. Which claims each touches is :func:`confounds_table`."""
    from ..experiments.claims import CONFOUND_NAMES

    return "\n".join(
        f"{i}. **{PLAIN_CONFOUNDS.get(text, (CONFOUND_NAMES[text], text))[0]}.** "
        + _one_line(PLAIN_CONFOUNDS.get(text, (None, text))[1])
        for i, text in enumerate(_confounds(claims), 1)
    )


#: Confounds the registry words for the implementer, in a reader's words: registry text ->
#: (short name, text). The registry's own words stay as they were written.
PLAIN_CONFOUNDS: Dict[str, Tuple[str, str]] = {
    POSITIONAL_LR_CONFOUND: (
        "×10 positional learning rate",
        "The runs train every positional parameter with 10 times the learning rate of "
        "the rest. The paper states no such multiplier. The learned encoding has far "
        "more positional parameters than the quadratic one, so the multiplier reaches more "
        "of it.",
    ),
    LOCAL_DROPOUT_CONFOUND: (
        "Two kinds of dropout",
        "The six-layer quadratic runs use local attention, the learned runs dense "
        "attention. Dense attention's dropout zeroes single attention weights. Local "
        "attention's zeroes whole rows or columns of a head's map at once, so the two "
        "models are not regularised alike.",
    ),
}


def confounds_table(claims: Sequence[Claim]):
    """Which confound touches which claim: a row per claim that one touches (its title), a
    column per confound, headed by its number in :func:`confounds_note`, a dot where it
    touches the claim."""
    from .shared.tables import markdown_table

    seen = _confounds(claims)
    columns = ["claim"] + [str(i) for i in range(1, len(seen) + 1)]
    rows = [
        [keep_ranges(CLAIMS[c.key].title)]
        + ["●" if c.key in keys else "" for keys in seen.values()]
        for c in claims
        if any(c.key in keys for keys in seen.values())
    ]
    return markdown_table(columns, rows, "l" * (len(seen) + 1))


def verdict_counts(claims: Sequence[Claim]) -> Dict[str, int]:
    """How many claims got each verdict, in the order of :data:`VERDICT_BADGES` (zeros kept)."""
    counts = count_verdicts(c.verdict for c in claims)
    return {k: counts.get(k, 0) for k in VERDICT_BADGES}


#: Statements settled by an exact count, not by experiment: shown with their count, never tallied
#: among the experimental verdicts (the protocol's :data:`~attnconv.evidence.protocol.NOT_JUDGED`).
EXACT_CHECKS = tuple(k for k in ("local_fewer_flops",) if k in NOT_JUDGED)
#: Statements that report one run of the paper: the book's runs are described beside it, without
#: a verdict (:data:`~attnconv.evidence.protocol.NOT_JUDGED`).
DESCRIBED = tuple(k for k in ("pruned_counts",) if k in NOT_JUDGED)
#: What a dropdown of a statement shown apart says instead of a verdict.
_APART_NOTE = {
    "pruned_counts": "Every fresh seed's counts per layer are in "
    "{ref}`Table P.15 <table-protocol-hurts-mcnemar>`.",
    "local_fewer_flops": "Counted exactly, with no noise to judge.",
}


def dropdown_verdict(c: Claim) -> str:
    """A claim dropdown's title verdict: the fresh seeds' where the frozen protocol has judged
    it, else what the page says it got (:func:`shown_verdict`). The earlier runs' verdict is a
    sentence inside the dropdown, not in its title."""
    got = fresh_verdicts().get(c.key)
    if got is None or got.verdict == PENDING:
        return shown_verdict(c)
    return got.verdict


def plain_title(title: str) -> str:
    """A claim's title as a phrase with its source after it: "A grid at layer 4 (Fig. 2)" for
    "Fig. 2: a grid at layer 4"; a title with no source is returned as it is."""
    source, sep, phrase = title.partition(": ")
    if not sep or not phrase:
        return title
    return f"{phrase[:1].upper()}{phrase[1:]} ({source})"


def shown_verdict(c: Claim) -> str:
    """What a page says a claim got: its verdict, or, for a statement the tally leaves out
    (:func:`not_counted`), "not counted" and why."""
    if c.key in DESCRIBED:
        return "not counted (a description beside the paper's one run)"
    if c.key in EXACT_CHECKS:
        return "not counted (an exact count)"
    return c.verdict


def shown_badge(c: Claim) -> str:
    """The badge of :func:`shown_verdict`: the verdict's colour, or the "not counted" badge."""
    if c.key in EXACT_CHECKS + DESCRIBED:
        return category_badge("not counted")
    return verdict_badge(c.verdict)


def claims_count_sentence(claims: Sequence[Claim]) -> str:
    """How the book counts the paper's experimental claims, from the frozen protocol and the
    registry: one count (the protocol's claims, judged on fresh seeds), then what is left out and
    why (the statements shown apart: an exact count, a description), then how the exploratory
    count differs (the protocol's claims the registry lacks, and any it drops)."""
    mine = counted(claims)
    aside = not_counted(claims)
    keys = {c.key for c in mine}
    added = [FROZEN_CLAIMS[k].prop for k in FROZEN_CLAIMS if k not in keys]
    dropped = [c for c in mine if c.key not in FROZEN_CLAIMS]
    why = {
        "an exact count": "settled by counting, with no noise to judge",
        "a description": "the paper reports one run, which no rule can test",
    }
    kinds = [
        "an exact count" if c.key in EXACT_CHECKS else "a description" for c in aside
    ]
    text = (
        f"The book counts {len(FROZEN_CLAIMS)} experimental claims of the paper: the frozen "
        "protocol's, each judged on fresh seeds."
    )
    if aside:
        text += (
            f" It leaves out {_WORDS.get(len(aside), len(aside))} more statements, shown "
            "apart without a verdict: "
            + "; ".join(f"{k} ({why[k]})" for k in kinds)
            + "."
        )
    if added or dropped:
        parts = []
        if added:
            parts.append(
                f"the protocol added {_WORDS.get(len(added), len(added))}: "
                + "; ".join(added)
            )
        if dropped:
            parts.append(f"{len(dropped)} are not the protocol's")
        text += (
            " The exploratory verdicts, made before the freeze, cover "
            f"{len(mine)} claims; " + ", and ".join(parts) + "."
        )
    return text


def judged_elsewhere(keys: Sequence[str]) -> Dict[str, str]:
    """The frozen protocol's claims not among ``keys`` (those a page judges), each with the label
    of the section that prints its evidence (the registry's ``where``; "" where it has none)."""
    return {
        k: CLAIMS[k].where if k in CLAIMS else ""
        for k in FROZEN_CLAIMS
        if k not in keys
    }


def _ordinal(n: int) -> str:
    suffix = (
        "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    )
    return f"{n}{suffix}"


def elsewhere_stated(notebook, elsewhere: Mapping[str, str]) -> bool:
    """Whether ``notebook``'s "In short" box says where the protocol's claims ``elsewhere``
    (:func:`judged_elsewhere`) are judged: one claim as the protocol's last by number ("18th
    claim"), with a reference to its section; several, each section referenced."""
    cells = json.loads(Path(notebook).read_text())["cells"]
    box = next(
        " ".join("".join(c["source"]).split())
        for c in cells
        if c["cell_type"] == "markdown"
        and "{admonition} In short" in "".join(c["source"])
    )
    refs = all(f"<{where}>`" in box for where in elsewhere.values() if where)
    if len(elsewhere) == 1:
        return refs and f"{_ordinal(len(FROZEN_CLAIMS))} claim" in box
    return refs


def counted(claims: Sequence[Claim]) -> List[Claim]:
    """The experimental claims a tally counts: every claim but the exact checks and the
    descriptions (:data:`EXACT_CHECKS`, :data:`DESCRIBED`)."""
    return [c for c in claims if c.key not in EXACT_CHECKS + DESCRIBED]


def not_counted(claims: Sequence[Claim]) -> List[Claim]:
    """The claims :func:`counted` leaves out, in the registry's order."""
    return [c for c in claims if c.key in EXACT_CHECKS + DESCRIBED]


def tally_words(claims: Sequence[Claim]) -> str:
    """The tally of the counted claims in the intro's words: ``17 claims: 7 reproduced at CPU
    scale; 2 not reproduced at CPU scale; 8 inconclusive``."""
    mine = counted(claims)
    n = verdict_counts(mine)
    return f"{len(mine)} claims: " + "; ".join(f"{k} {word}" for word, k in n.items())


_WORDS = {1: "one", 2: "two", 3: "three", 4: "four"}


def _fresh_headline(fresh: Mapping[str, ConfirmatoryVerdict]) -> str:
    """The box's line beside the fresh-seed badges, which carry the counts: how many claims,
    judged on how many fresh seeds per model (the most any claim read), under the protocol,
    linked (its appendix is one click from the box)."""
    seeds = max((len(g.seeds) for g in fresh.values()), default=0)
    per = f" ({seeds} per model)" if seeds else ""
    return (
        f"The paper's {len(fresh)} experimental claims, judged on fresh seeds{per} under the "
        "{ref}`frozen protocol <appendix-protocol>`."
    )


def what_holds_box(
    claims: Sequence[Claim],
    fresh: Optional[Mapping[str, ConfirmatoryVerdict]] = None,
) -> str:
    """Chapter 17's result box, so that nothing in it is typed by hand: the frozen protocol's
    verdicts on the fresh seeds (``fresh``, by default :func:`fresh_verdicts`) as badges beside
    one line that says what they count, what the tally means (the share reproduced, in words),
    and the theory's line with the errata counted (Table 17.1 names them). No exploratory
    count: Table 17.4 lines those up (:func:`tallies_table`); the second test on new seeds is
    told in the chapter's body. The intro's "What this book found" says the same facts in its
    own words."""
    fresh = fresh_verdicts() if fresh is None else fresh
    on_fresh = count_verdicts(got.verdict for got in fresh.values())
    held = share_words(on_fresh.get(REPRODUCED, 0), len(fresh))
    seeds = max((len(g.seeds) for g in fresh.values()), default=0)
    return (
        "```{admonition} In short\n"
        ":class: tip result-box\n"
        f"{count_badges(on_fresh)} **{_fresh_headline(fresh)}**\n\n"
        f"- **The tally.** {held} of the claims hold at CPU scale, each on its own "
        f"evidence. With {seeds} seeds, no claim survives a "
        f"{{ref}}`test that corrects for judging {len(fresh)} at once <sec-why-fragile>`. "
        "The runs learn the locality the paper describes, not the convolution its theorem "
        "builds.\n"
        f"- {category_badge('exact')} **Every lemma and theorem checks exactly.** "
        "{ref}`Table 17.1 <tab-what-holds-scorecard>` scores the rest of the paper, with "
        f"its {len(ERRATA_WRONG)} errata.\n"
        "```"
    )


_SHARES = {(1, 2): "Half", (1, 3): "A third", (2, 3): "Two thirds", (1, 4): "A quarter"}


def share_words(k: int, n: int) -> str:
    """``k`` of ``n`` in words where the fraction is a simple one (6 of 18: ``A third``),
    else ``6 of 17``."""
    from math import gcd

    g = gcd(k, n) or 1
    return _SHARES.get((k // g, n // g), f"{k} of {n}")


def errata_words() -> str:
    """The errata of :data:`ERRATA_WRONG` by kind, as the intro and ch. 17 name them: ``two
    statements and one conjecture of the paper`` (a conjecture is one the paper itself calls
    so, "Though we lack a formal proof, we conjecture")."""
    conjectures = sum("conjecture" in name for name, _ in ERRATA_WRONG)
    statements = len(ERRATA_WRONG) - conjectures
    parts = []
    if statements:
        parts.append(
            f"{_WORDS.get(statements, statements)} statement" + "s" * (statements > 1)
        )
    if conjectures:
        parts.append(
            f"{_WORDS.get(conjectures, conjectures)} conjecture"
            + "s" * (conjectures > 1)
        )
    return " and ".join(parts) + " of the paper"


def followup_bullet() -> str:
    """A result box's line on the registered follow-up: how many questions it asked again (each
    question, its verdict and its number are in ch. 17's Table 17.3, its counts in Table 17.4);
    nothing while every claim is pending."""
    got = [v.verdict for v in followup_verdicts().values() if v.verdict != PENDING]
    if not got:
        return ""
    return (
        "- **Asked again** in a {ref}`second test on new seeds <glossary-followup>`, "
        f"outside the tally: {len(got)} questions "
        "({ref}`Table 17.3 <tab-what-holds-followup>`).\n"
    )


def six_layers_box(
    here: Sequence[Claim],
    added: Sequence[str],
    headline: str,
    bullets: Sequence[str] = (),
    fresh: Optional[Mapping[str, ConfirmatoryVerdict]] = None,
) -> str:
    """Chapter 12's result box, so that no count in it is typed by hand: the fresh-seed
    verdicts of the page's claims (the counted claims ``here`` and the protocol's claims
    ``added`` that the page judges too) as the box's one row of badges, beside ``headline``;
    then the findings, one short bullet each, and a last bullet saying how many claims the badges
    count and where the protocol's other claims are judged (ch. 17's Table 17.4 lines up every
    count); the box states no exploratory verdict. When the badges count every claim of the
    frozen protocol, the box's tally is the book's and that last bullet is left out."""
    fresh = fresh_verdicts() if fresh is None else fresh
    on_page = [c.key for c in counted(here)] + list(added)
    shown = count_verdicts(fresh[k].verdict for k in on_page if k in fresh)
    elsewhere = [k for k in fresh if k not in on_page]
    lines = "".join(f"- {b}\n" for b in bullets)
    if not elsewhere:  # the book's own tally: nothing to explain
        return (
            "```{admonition} In short\n"
            ":class: tip result-box\n"
            f"{count_badges(shown)} **On fresh seeds, {headline}**\n\n" + lines + "```"
        )
    tally = (
        f"- **The badges** count {len(on_page)} of the book's {len(fresh)} claims about "
        "trained models"
    )
    if added:  # judged with this page's runs, their evidence told in their own chapter
        tally += " (with " + ", ".join(f"*{_board_title(k)}*" for k in added) + ")"
    if elsewhere:  # where the rest of the book's claims about trained models are judged
        names = ", ".join(
            f"*{CLAIMS[k].title}*, is judged {{ref}}`on its own page <{CLAIMS[k].where}>`"
            for k in elsewhere
        )
        tally += (
            f"; the other, {names}"
            if len(elsewhere) == 1
            else f"; the other {len(elsewhere)}: {names}"
        )
    return (
        "```{admonition} In short\n"
        ":class: tip result-box\n"
        f"{count_badges(shown)} **On fresh seeds, {headline}**\n\n"
        + "".join(f"- {b}\n" for b in bullets)
        + tally
        + ".\n```"
    )


def resnet_size_ratio(key: str) -> Optional[float]:
    """How many times its rival's size the tuning made the ResNet18 of the frozen claim
    ``key``, from the fresh runs (:func:`_baseline_ratio`); ``None`` where it has none."""
    got = _baseline_ratio(key)
    return None if got is None else got[1]


def resnet_sentence(
    fresh: Optional[Mapping[str, ConfirmatoryVerdict]] = None,
    followup: Optional[Mapping[str, ConfirmatoryVerdict]] = None,
    link: str = "sec-six-layers-resnet",
) -> str:
    """Ch. 12's two short sentences on the learned model against ResNet18, one per test: the
    frozen protocol's (against the tuned ResNet18, with how many times the learned model's size
    the tuning made it) and the second test's (against a ResNet18 of the learned model's size,
    linked to ``link``), each gap in points with its verdict; the second sentence says its runs
    are being made while they are."""
    fresh = fresh_verdicts() if fresh is None else fresh
    followup = followup_verdicts() if followup is None else followup
    tuned = fresh["close_to_resnet"]
    behind = -tuned.scale * tuned.interval.estimate
    times = resnet_size_ratio("close_to_resnet")
    size = "" if times is None else f" {times:.1f} times its size"
    first = (
        f"The learned model is {behind:.1f} points behind a ResNet18{size}: "
        f"*{tuned.verdict}*."
    )
    matched = followup.get("close_to_resnet_matched")
    own = f"{{ref}}`one of its own size <{link}>`"
    if matched is None or matched.verdict == PENDING:
        return f"{first} Its runs against {own} are being made."
    _, gap, _ = _matched_numbers(matched)
    return f"{first} Against {own}, it is {gap:.1f} points behind: *{matched.verdict}*."


def _matched_numbers(got: ConfirmatoryVerdict) -> Tuple[float, float, List[str]]:
    """The second test of "close to ResNet18" as ch. 12 says it: the margin and the points the
    learned model is behind (both in points), and each alternative that would change the
    verdict, in words."""
    from ..evidence import followup as registered

    margin = 100 * registered.CLAIMS["close_to_resnet_matched"].margin
    behind = -got.scale * got.interval.estimate
    flips = [
        f"with the {alt} it would read *{w}*"
        for alt, w in got.alternatives.items()
        if w != got.verdict
    ]
    return margin, behind, flips


#: What ch. 12 says while the second test of "close to ResNet18" is not all made.
_MATCHED_PENDING = "Its runs against a ResNet18 narrowed to its size are being made."


_MATCHED_FINDING = {
    v.REPRODUCED: 'The learned model comes within the {m:g} points that "close" allows.',
    v.NOT_REPRODUCED: "The learned model stays more than the {m:g} points behind that "
    '"close" allows.',
}


def matched_resnet_list(followup: Mapping[str, ConfirmatoryVerdict]) -> str:
    """Ch. 12's answer of the second test of "close to ResNet18", finding first: one sentence
    that says what the narrowed ResNet18 shows and the verdict, then a short list (its seeds,
    its 95 % interval against the margin, and the alternative that would change the verdict,
    if one does). The gap itself is said once, in the box (:func:`resnet_sentence`)."""
    from ..evidence import followup as registered

    got = followup["close_to_resnet_matched"]
    if got.verdict == PENDING:
        return _MATCHED_PENDING
    margin, behind, flips = _matched_numbers(got)
    finding = _MATCHED_FINDING.get(
        got.verdict,
        "The learned model is still behind. The new seeds cannot tell whether the gap is "
        'within the {m:g} points that "close" allows.'
        if behind > 0
        else "The new seeds cannot tell whether the learned model is within the {m:g} points "
        'that "close" allows.',
    ).format(m=margin)
    lo, hi = (signed_number(got.scale * e) for e in (got.interval.lo, got.interval.hi))
    lines = [
        f"{finding} The verdict is {verdict_badge(got.verdict)}.",
        "",
        f"- **Seeds**: {len(registered.SEEDS)} new ones, "
        f"{registered.SEEDS[0]}–{registered.SEEDS[-1]}.",
        f"- **95 % interval**: {lo} to {hi} points, against a margin of "
        f"{signed_number(-margin)} points.",
    ]
    if flips:
        lines.append(f"- **{{ref}}`Fragile <glossary-fragile>`**: {'; '.join(flips)}.")
    return "\n".join(lines)


#: The frozen protocol's claims that ch. 12 judges although no six-layer card of the registry
#: holds them (it added them after the exploratory runs).
SIX_LAYERS_ADDED = ("pruning_finds_heads",)


#: The frozen protocol's claims judged on the six-layer runs whose evidence another page tells:
#: the learned encoding matched the lemma (ch. 9). Ch. 12's box and Table 17.2 count them too
#: (:func:`six_layers_tallied`), so that its tally is the book's.
SIX_LAYERS_ALSO = ("learned_matched_lemma",)


def six_layers_tallied(claims: Sequence[Claim]) -> List[Claim]:
    """The counted claims of ``claims`` that ch. 12's box and ch. 17's Table 17.2 count, in
    ``claims``' order: those whose evidence is ch. 12's and those of :data:`SIX_LAYERS_ALSO`;
    with :data:`SIX_LAYERS_ADDED`, every claim of the frozen protocol."""
    page = {c.key for c in _six_layer_claims(claims)}
    return [c for c in counted(claims) if c.key in page or c.key in SIX_LAYERS_ALSO]


def six_layer_page_claims(claims: Sequence[Claim]) -> List[Claim]:
    """The claims whose evidence is ch. 12's (their section is on that page), counted or
    shown apart, in ``claims``' order."""
    return [c for c in claims if c.where.startswith("sec-six-layers")]


def _six_layer_claims(claims: Sequence[Claim]) -> List[Claim]:
    """The counted claims whose evidence is ch. 12's."""
    return six_layer_page_claims(counted(claims))


def tallies_table(
    claims: Sequence[Claim],
    fresh: Optional[Mapping[str, ConfirmatoryVerdict]] = None,
):
    """Every tally of verdicts the book gives, lined up (ch. 17): the frozen protocol's on the
    fresh seeds (the intro's, ch. 12's and ch. 17's), the exploratory one made before the
    freeze, and the registered follow-up's. Each row counts its own set, so that the reader can
    see why two counts differ."""
    from .shared.tables import markdown_table

    fresh = fresh_verdicts() if fresh is None else fresh
    every = counted(claims)
    followup = followup_verdicts()

    def row(what, verdicts, where):
        n = count_verdicts(verdicts)
        got = [n.get(k, 0) for k in VERDICT_BADGES]
        return [what, len(verdicts), *got, where]

    rows = [
        row(
            "fresh seeds: every experimental claim",
            [g.verdict for g in fresh.values()],
            "{ref}`Table 17.2 <tab-what-holds-claims>`, the intro, "
            "{ref}`ch. 12 <ch-six-layers>`",
        ),
        row(
            "earlier runs: every claim written before the freeze",
            [c.verdict for c in every],
            "{ref}`Table 17.2 <tab-what-holds-claims>`, last column",
        ),
        row(
            "second test on new seeds: questions asked again",
            [g.verdict for g in followup.values() if g.verdict != PENDING],
            "{ref}`Table 17.3 <tab-what-holds-followup>`",
        ),
    ]
    columns = ["verdicts", "claims", *(w for _, w in VERDICT_BADGES.values()), "where"]
    return markdown_table(columns, rows, "lrrrrl")


def not_counted_markdown(claims: Sequence[Claim], counts_ref: str) -> str:
    """The statements the tally leaves out (:func:`not_counted`), one block each: the quote, and
    what the book measures, without a verdict (an exact count; a description beside the
    paper's one run, whose counts ``counts_ref`` names: ch. 8's Table 8.1)."""
    blocks = []
    for c in not_counted(claims):
        head = f"**{CLAIMS[c.key].title}.** “{short_quote(c.quote)}” ({c.source})"
        if c.key in EXACT_CHECKS:
            what = (
                f"*An exact check, not an experiment:* {_one_line(c.reason)}. It is not "
                "counted among the experimental verdicts."
            )
        else:
            what = (
                "*A description, not a verdict:* the paper reports the heads its rule pruned "
                f"in one run; {counts_ref} sets the book's run beside it. How many heads a rule "
                "prunes varies from run to run, so matching one run number for number is no "
                "test. What the paper says of pruning is judged above."
            )
        where = f" Evidence: {{ref}}`{c.where}`." if c.where else ""
        blocks.append(f"{head}\n\n{what}{where}")
    return "\n\n---\n\n".join(blocks)


# --------------------------------------------------------------------------- ch. 17's scorecard
#
# The theory and the errata are settled by proofs and exact checks in ch. 3-5 and 15, not by runs;
# their rows here repeat what those chapters' result boxes state (title, what holds, label).

#: The paper's theory, checked exactly: (result, what the book finds, the label of the chapter).
THEORY_RESULTS = (
    ("Lemma 1", "$K^2$ one-hot heads are a $K\\times K$ convolution", "ch-lemma1"),
    (
        "Lemma 2",
        "the quadratic encoding's softmax tends to a one-hot as $\\alpha$ grows; one-hot to "
        "the unit round-off $u$ once $S(\\alpha) \\le u$, about $\\alpha \\ge \\ln(4/u)$: "
        "the off-target weights then sum to at most $u$, each nearest neighbour's about $u/4$",
        "ch-theorem1",
    ),
    (
        "Theorem 1",
        "$N_h$ heads express any $\\sqrt{N_h}\\times\\sqrt{N_h}$ convolution with "
        "$\\min(D_h, D_{\\mathrm{out}})$ output channels",
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
#: The errata of ch. 15: statements wrong by an exact check, each as (the name Table 17.1 gives
#: it, what is wrong with it); ch. 17's theory section and ch. 15 explain them.
ERRATA_WRONG: Tuple[Tuple[str, str], ...] = (
    ("the conjecture $D_p \\ge 3$", "two positional dimensions suffice"),
    (
        "the rank $D_{\\mathrm{out}} - D_h$",
        "it is at most $D_h$; likely meant: rank-deficient by $D_{\\mathrm{out}} - D_h$",
    ),
    ('"by a fourth"', "the paper's own numbers give a fifth"),
)
ERRATA_IMPRECISE = (
    'the gloss on "equivariant"',
    "eq. (11)'s slice ends",
    "one cross-reference",
    "the unstated padding at the border",
)


def _fresh_tally(
    fresh: Optional[Mapping[str, ConfirmatoryVerdict]],
) -> Tuple[Dict[str, int], bool]:
    """The frozen protocol's verdicts (``fresh``, by default :func:`fresh_verdicts`) counted:
    (verdict or "pending" -> count, zeros kept, whether they are interim)."""
    fresh = fresh_verdicts() if fresh is None else fresh
    got = count_verdicts(v.verdict for v in fresh.values())
    counts = {k: got.get(k, 0) for k in (*VERDICT_BADGES, PENDING)}
    return counts, bool(interim_words(dict(fresh)))


def scorecard_table(
    claims: Sequence[Claim],
    fresh: Optional[Mapping[str, ConfirmatoryVerdict]] = None,
) -> str:
    """Ch. 17's scorecard as a Markdown table: the theory (exact), what the checks add, the errata
    (wrong, imprecise; each named in a few words, the badge says which kind) and the experimental claims counted by verdict, each row with its badge,
    its count and where the book shows it. The experimental rows count the frozen protocol's
    verdicts on the fresh seeds (``fresh``, by default :func:`fresh_verdicts`; "pending" gets a
    row while any claim is); the exploratory counts are Table 17.4's (:func:`tallies_table`),
    out of the reading path. The exact checks and descriptions get a row of their own."""
    on_fresh, interim = _fresh_tally(fresh)
    rows = [
        (
            category_badge("exact"),
            ", ".join(t for t, _, _ in THEORY_RESULTS),
            len(THEORY_RESULTS),
            "{ref}`ch. 3 <ch-lemma1>`, {ref}`4 <ch-theorem1>`, {ref}`5 <ch-generalized>`",
        ),
        (
            category_badge("beyond the paper"),
            "; ".join(
                t if t.startswith("$") else t[0].lower() + t[1:]
                for t, _, _ in BEYOND_THEORY
            ),
            len(BEYOND_THEORY),
            "{ref}`ch. 4 <sec-dp2>`, {ref}`3 <ch-lemma1>`",
        ),
        (
            category_badge("errata"),
            "; ".join(name for name, _ in ERRATA_WRONG),
            len(ERRATA_WRONG),
            "{ref}`ch. 15 <errata>`",
        ),
        (
            category_badge("imprecise"),
            "; ".join(ERRATA_IMPRECISE),
            len(ERRATA_IMPRECISE),
            "{ref}`ch. 15 <errata>`",
        ),
    ]
    words = {
        REPRODUCED: "Experimental claims reproduced",
        NOT_REPRODUCED: "Experimental claims not reproduced",
        INCONCLUSIVE: "Experimental claims the runs cannot settle",
    }
    aside = not_counted(claims)
    if aside:
        rows.append(
            (
                category_badge("not counted"),
                "Shown without a verdict: "
                + "; ".join(
                    CLAIMS[c.key].title
                    + (
                        " (an exact count)"
                        if c.key in EXACT_CHECKS
                        else " (a description)"
                    )
                    for c in aside
                ),
                len(aside),
                "{ref}`below <sec-not-counted>`",
            )
        )
    for verdict in words:
        rows.append(
            (
                verdict_badge(verdict),
                words[verdict],
                on_fresh[verdict],
                "{ref}`below <sec-every-claim>`",
            )
        )
    if on_fresh[PENDING]:
        rows.append(
            (
                category_badge("pending"),
                "Experimental claims whose fresh seeds are being run",
                on_fresh[PENDING],
                "{ref}`the protocol <appendix-protocol>`",
            )
        )
    head = "count" + (" (fresh seeds interim)" if interim else "")
    lines = [
        f"| | what | {head} | where |",
        "| :--- | :--- | ---: | :--- |",
    ]
    lines += [f"| {b} | {w} | {c} | {at} |" for b, w, c, at in rows]
    return "\n".join(lines)


#: Markers of the claim board outlined in the colour their badge takes in the book's dark theme,
#: where it differs most from the light theme's fill that the figure is drawn in: the
#: inconclusive badge is near-black (#29313d) in the light theme and sphinx-design's muted grey in
#: the dark one. The figure, a PNG on the theme's light frame in either mode, then shows both.
DARK_THEME_EDGES = {INCONCLUSIVE: "#6c757d"}

#: The claim board's columns, left to right, and its rows' order: the verdicts in this order.
BOARD_ORDER = (REPRODUCED, INCONCLUSIVE, NOT_REPRODUCED)


def _board_title(key: str) -> str:
    """A claim's name on the board: the registry's title, or for a claim the protocol adds, its
    source's section and property."""
    if key in CLAIMS:
        return CLAIMS[key].title
    r = FROZEN_CLAIMS[key]
    return f"{r.source.split(' (')[0]}: {r.prop}"


def _board_number(got: ConfirmatoryVerdict) -> str:
    """The number a fresh verdict rests on, short: seeds that show a property, or a
    comparison's estimate (:func:`fresh_measure`; its interval is in Table 17.2)."""
    if got.shown is not None:
        return f"{got.shown} of {len(got.seeds)} seeds"
    return fresh_measure(got).split(" [")[0]


def board_rows(
    claims: Sequence[Claim], fresh: Mapping[str, ConfirmatoryVerdict]
) -> List[Tuple[str, str, Optional[str], str]]:
    """The claim board's rows, top to bottom: (claim's name, fresh verdict, exploratory verdict
    or None, the fresh number), grouped by fresh verdict in :data:`BOARD_ORDER` (pending last),
    each group in the registry's order."""
    explored = {c.key: c.verdict for c in claims}
    return [
        (
            _board_title(k),
            fresh[k].verdict,
            explored.get(k),
            "pending" if fresh[k].verdict == PENDING else _board_number(fresh[k]),
        )
        for k in _board_keys(fresh)
    ]


def _board_keys(fresh: Mapping[str, ConfirmatoryVerdict]) -> List[str]:
    """The claim board's claims, top to bottom (:func:`board_rows`)."""
    keys = [k for k in CLAIMS if k in fresh] + [k for k in fresh if k not in CLAIMS]
    rank = {verdict: i for i, verdict in enumerate(BOARD_ORDER)}
    keys.sort(key=lambda k: rank.get(fresh[k].verdict, len(rank)))
    return keys


def plot_claim_board(
    claims: Sequence[Claim], fresh: Optional[Mapping[str, ConfirmatoryVerdict]] = None
):
    """Ch. 17's lead figure: every experimental claim the protocol judges, by name, one row each,
    with a filled dot in the column of its verdict on the fresh seeds and a ring in the column
    of its exploratory verdict (an arrow where they differ), the number the fresh verdict rests
    on at the right; rows grouped by fresh verdict (:func:`board_rows`), dots in their badge's
    colour (:data:`VERDICT_COLOURS`; inconclusive outlined in its dark-theme colour,
    :data:`DARK_THEME_EDGES`). ``fresh``: by default :func:`fresh_verdicts`. Returns the
    figure."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from .shared.plotting import COLUMN_INCHES

    rows = board_rows(claims, fresh_verdicts() if fresh is None else fresh)
    column = {verdict: i for i, verdict in enumerate(BOARD_ORDER)}
    fig, ax = plt.subplots(
        figsize=(COLUMN_INCHES, 0.8 + 0.24 * len(rows)), constrained_layout=True
    )

    def dot(x, y, verdict, filled):
        colour = VERDICT_COLOURS[verdict]
        ax.plot(
            x,
            y,
            "o",
            ms=8 if filled else 14,  # a ring clear of the dot where the two agree
            mfc=colour if filled else "none",
            mec=DARK_THEME_EDGES.get(verdict, colour),
            mew=2 if filled and verdict in DARK_THEME_EDGES else 1.4,
            zorder=3 if filled else 2,
        )

    for y, (_, now, before, number) in enumerate(rows):
        if before in column:
            dot(column[before], y, before, filled=False)
        if now in column:
            dot(column[now], y, now, filled=True)
            if before in column and before != now:
                ax.annotate(
                    "",
                    xy=(column[now], y),
                    xytext=(column[before], y),
                    arrowprops=dict(
                        arrowstyle="->", color="#9aa0a6", lw=1.2, shrinkA=8, shrinkB=6
                    ),
                )
        ax.text(len(column) - 0.4, y, number, va="center", fontsize=8.5)
        if y and rows[y - 1][1] != now:  # a line between two verdicts' groups
            ax.axhline(y - 0.5, color="#d0d4d9", lw=0.8)
    ax.set_yticks(range(len(rows)), [title for title, *_ in rows], fontsize=8.5)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    heads = [verdict_word(v).replace("not ", "not\n") for v in BOARD_ORDER]
    ax.set_xticks(range(len(column)), heads, fontsize=8)
    ax.xaxis.tick_top()
    ax.tick_params(axis="both", length=0)
    for label, verdict in zip(ax.get_xticklabels(), BOARD_ORDER):
        label.set_color(DARK_THEME_EDGES.get(verdict, VERDICT_COLOURS[verdict]))
        label.set_fontweight("bold")
    ax.set_xlim(-0.5, len(column) + 0.65)
    ax.grid(axis="x", color="#eef0f2", lw=6)
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    grey = "#6c757d"
    key = [
        Line2D(
            [],
            [],
            ls="",
            marker="o",
            ms=8,
            mfc=grey,
            mec=grey,
            label="on fresh seeds (counted)",
        ),
        Line2D(
            [],
            [],
            ls="",
            marker="o",
            ms=14,
            mfc="none",
            mec=grey,
            mew=1.6,
            label="before the freeze (a ring round a dot: the same verdict)",
        ),
    ]
    fig.legend(handles=key, loc="outside lower center", ncol=2, frameon=False)
    return fig


def claim_board_hover(
    fig,
    claims: Sequence[Claim],
    fresh: Optional[Mapping[str, ConfirmatoryVerdict]] = None,
):
    """Figure 17.1's hover values (:mod:`~attnconv.chapters.shared.hover_spots`): on each filled
    dot of :func:`plot_claim_board`'s ``fig``, the claim's name, its fresh verdict with the number
    and interval it rests on (:func:`fresh_measure`), its verdict before the freeze, and each
    alternative choice that would change it (the judge's ``alternatives``). Returns the cell
    output to show under the figure."""
    from .shared.hover_spots import HoverPoint, HoverSpots

    fresh = fresh_verdicts() if fresh is None else fresh
    column = {verdict: i for i, verdict in enumerate(BOARD_ORDER)}
    ax = fig.axes[0]
    points = []
    rows = zip(_board_keys(fresh), board_rows(claims, fresh))
    for y, (key, (title, now, before, _)) in enumerate(rows):
        if now not in column:
            continue
        got = fresh[key]
        number = fresh_measure(got, margin_digit=False)  # as Table 17.2 beside it
        lines = [title, f"Fresh seeds: {verdict_word(now)}, {number}"]
        if before is not None:
            lines.append(f"Before the freeze: {verdict_word(before)}")
        lines += [
            f"With {choice}: {verdict_word(other)}"
            for choice, other in got.alternatives.items()
            if other != now
        ]
        points.append(HoverPoint(ax, column[now], y, "\n".join(lines)))
    return HoverSpots(fig, points, "Figure 17.1's claims")
