"""The confirmatory verdicts: the frozen protocol (:mod:`~attnconv.evidence.protocol`) applied to
the fresh seeds' saved runs and studies, by its rule (:mod:`~attnconv.evidence.rule`, and the one
rule's interval of :mod:`attnconv.experiments.verdicts`). Nothing here chooses a setting: every
threshold, margin, arm and seed comes from the protocol.

:func:`confirmatory_verdicts` returns one :class:`ConfirmatoryVerdict` per claim: *pending* while
its arms lack seeds, else its verdict with the numbers behind it, its verdict under each
alternative of the robustness table, and whether it is *fragile*.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from ..experiments.registry import RUNS, load_run, run_state
from ..experiments.store import MissingResultError, StaleResultError
from ..experiments.verdicts import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Interval,
    accuracy_side,
    decide,
    exact_side,
    judge,
    paired_seed_interval,
)
from . import measures as M
from .protocol import CLAIMS, CONFIRMATORY_SEEDS, INTERIM_SEEDS, ProtocolClaim
from .rule import (
    COMPARISON_ALPHA,
    SHARE_ALPHA,
    binomial_upper_tail,
    holm,
    one_sided_p,
    share_interval,
    share_verdict,
)
from .runs import confirm_run_name

__all__ = [
    "PENDING",
    "ConfirmatoryVerdict",
    "arm_runs",
    "arm_profiles",
    "confirmatory_verdicts",
    "tally",
    "tally_sentence",
    "interim_words",
    "one_sided_bounds",
    "detectable_share",
    "followup_verdicts",
    "pruning_hurts_mcnemar",
    "followup_gates",
]

#: The state of a claim whose arms do not have their seeds yet (not a verdict).
PENDING = "pending"


@dataclass
class ConfirmatoryVerdict:
    """A claim's confirmatory verdict: ``verdict`` (one of the three, or :data:`PENDING`),
    ``detail`` (the numbers, in words), ``seeds`` judged, ``p`` (the one-sided p-value of the
    test that reproduces it, for Holm), ``alpha`` (its level), ``alternatives`` (alternative →
    verdict) and ``fragile``; and the numbers ``detail`` prints, for a table to show without
    reading them back from the words: a share claim's ``shown`` (seeds that show the property),
    a comparison's ``interval`` with the ``scale``, ``unit`` and ``digits`` it is printed in."""

    key: str
    verdict: str
    detail: str
    seeds: Tuple[int, ...] = ()
    p: Optional[float] = None
    alpha: float = SHARE_ALPHA
    alternatives: Dict[str, str] = field(default_factory=dict)
    shown: Optional[int] = None
    interval: Optional[Interval] = None
    scale: float = 100.0
    unit: str = " points"
    digits: int = 1

    @property
    def fragile(self) -> bool:
        return any(v != self.verdict for v in self.alternatives.values())

    def number(self, boundaries: Sequence[float] = ()) -> str:
        """The difference it rests on with its 95 % interval, as the book prints it
        (``−3.8 points, 95 % interval [−6.3, −1.2]``; an end that rounds onto one of ``boundaries``
        gets one more digit)."""
        return self.interval.compact(
            self.scale, self.unit, self.digits, boundaries, named=True
        )

    @property
    def interim(self) -> bool:
        """Judged on the interim seeds only (:data:`INTERIM_SEEDS`), before every arm has all
        of :data:`CONFIRMATORY_SEEDS`."""
        return 0 < len(self.seeds) < len(CONFIRMATORY_SEEDS)


def arm_runs(arm: str, seeds: Sequence[int]) -> Optional[list]:
    """The saved confirmatory runs of ``arm`` at ``seeds``, or ``None`` while one is missing."""
    runs = []
    for seed in seeds:
        name = confirm_run_name(arm, seed)
        if name not in RUNS or run_state(RUNS[name]) != "present":
            return None
        runs.append(load_run(name))
    return runs


def arm_profiles(
    arm: str, seeds: Sequence[int] = CONFIRMATORY_SEEDS, threshold: float = 0.5
) -> Optional[list]:
    """Per fresh seed of ``arm``, what the depth claims read in each layer
    (:func:`~attnconv.evidence.measures.layer_profile`), or ``None`` while a seed is missing."""
    runs = arm_runs(arm, seeds)
    if runs is None:
        return None
    return [M.layer_profile(M.layers(r.history), threshold) for r in runs]


def _made(arm: str, seeds: Sequence[int]) -> int:
    return sum(
        confirm_run_name(arm, s) in RUNS
        and run_state(RUNS[confirm_run_name(arm, s)]) == "present"
        for s in seeds
    )


# --------------------------------------------------------------------------- share claims
def _share(claim: ProtocolClaim, runs, threshold=None, alt=False, arm_runs_=None):
    prop = M.PROPERTIES[claim.key]
    kw = {"alt": True} if alt else {}
    if threshold is not None:
        kw = {"threshold": threshold}
    runs = arm_runs_ or runs
    shown = sum(prop(M.layers(r.history), **kw) for r in runs)
    if claim.key in M.CHANCE:
        chances = [M.CHANCE[claim.key](M.layers(r.history), **kw) for r in runs]
        chance, null = sum(chances) / len(chances), "random placement"
    else:
        chance = sum(prop(M.layers(r.history, True), **kw) for r in runs) / len(runs)
        null = "untrained models"
    return share_verdict(shown, len(runs), chance), null


def one_sided_bounds(k: int, n: int) -> Tuple[float, float]:
    """The share's exact one-sided 95 % bounds (the ends of the two-sided 90 % Clopper–Pearson
    interval; printed beside a share verdict): the share rule's test against ½ rejects exactly
    where the lower bound passes ½ (reproduced) or the upper bound falls below it (not
    reproduced)."""
    return share_interval(k, n, level=1 - 2 * SHARE_ALPHA)


def detectable_share(seeds: int, bar: float, power: float = 0.8) -> Optional[float]:
    """The smallest true share (to 0.01) that ``seeds`` seeds would call *reproduced* against
    ``bar`` with probability ``power``; ``None`` when no count of seeds can pass ``bar``."""
    passing = [
        k for k in range(seeds + 1) if binomial_upper_tail(k, seeds, bar) < SHARE_ALPHA
    ]
    if not passing:
        return None
    k = passing[0]
    return next(
        q / 100
        for q in range(1, 101)
        if binomial_upper_tail(k, seeds, q / 100) >= power - 1e-12
    )


def _share_words(sv, null: str, computed: bool = True) -> str:
    lo, hi = one_sided_bounds(sv.shown, sv.seeds)
    chance = f"{sv.chance:.2f}" if computed else "not computed, taken as 0"
    words = (
        f"{sv.shown} of {sv.seeds} seeds (share {lo:.2f}-{hi:.2f}, each end a one-sided "
        f"95 % bound); "
        f"null ({null}): {chance}; one-sided p = {sv.p_above:.3g} against "
        f"{sv.bar:.2f}"
    )
    if sv.verdict == INCONCLUSIVE:
        q = detectable_share(sv.seeds, sv.bar)
        words += (
            f"; these runs could detect a true share of about {q:.2f} (80 % power)"
            if q is not None
            else "; no true share could pass the bar with these seeds"
        )
    return words


def _vertical(run, score: float = M.SYMMETRIC_SCORE) -> bool:
    maps = M.learned_maps(run)
    lr = ud = 0
    for layer in maps[3:6]:
        ok = M.not_nearly_uniform(layer)
        lr += int((M.symmetry(layer, "left-right")[ok] >= score).sum())
        ud += int((M.symmetry(layer, "up-down")[ok] >= score).sum())
    return lr > ud


def _redundant(run, margin: float) -> bool:
    from ..experiments.studies_removal import load_removal, removal_interval

    removal = load_removal(run)
    if removal is None:
        raise MissingResultError(f"{run.run_dir}: no removal study")
    n = sum(len(layer) for layer in removal["without_head"])
    return any(
        M.removal_upper_bound(removal_interval(removal, layer, head), n) < margin
        for layer, heads in enumerate(removal["without_head"])
        for head in range(len(heads))
    )


def _pruning_finds(run, condition: float = 1e5) -> bool:
    from ..experiments.studies_pruning import load_pruning_study

    study = load_pruning_study(run, verbose=False)
    key = "selected_paper_thresholds" if condition == 1e5 else "selected"
    return sum(len(v) for v in study[key].values()) > 0


_STUDY_SHARES = {
    "vertical_rare": (_vertical, {"symmetry score 0.8 instead of 0.9": 0.8}),
    "redundant": (_redundant, {"margin halved": 0.005, "margin doubled": 0.02}),
    "pruning_finds_heads": (
        _pruning_finds,
        {"the authors' code's condition threshold 1e3": 1e3},
    ),
}


def _study_share(claim, runs) -> ConfirmatoryVerdict:
    test, alternatives = _STUDY_SHARES[claim.key]
    arg = claim.margin if claim.key == "redundant" else None

    def verdict_at(value):
        shown = sum(test(r, value) if value is not None else test(r) for r in runs)
        return share_verdict(
            shown, len(runs), 0.5 if claim.key == "vertical_rare" else 0.0
        )

    sv = verdict_at(arg)
    floor = claim.key == "vertical_rare"
    null = "the rule's floor" if floor else "untrained models"
    alts = {name: verdict_at(v).verdict for name, v in alternatives.items()}
    # a study of untrained models' weights is not made: their share is not computed
    words = _share_words(sv, null, computed=floor)
    return ConfirmatoryVerdict(
        claim.key, sv.verdict, words, (), sv.p_above, SHARE_ALPHA, alts, sv.shown
    )


def _share_claim(claim, runs, other_runs=None) -> ConfirmatoryVerdict:
    if claim.key in _STUDY_SHARES:
        return _study_share(claim, runs)
    sv, null = _share(claim, runs)
    alts = {}
    for alt in claim.alternatives:
        if alt.startswith("threshold"):
            value = float(alt.split()[1])
            alts[alt] = _share(claim, runs, threshold=value)[0].verdict
        elif alt.startswith("centre distance"):
            alts[alt] = _share(claim, runs, alt=True)[0].verdict
        elif alt.startswith("the 9-head arm") and other_runs is not None:
            alts[alt] = _share(claim, other_runs)[0].verdict
    return ConfirmatoryVerdict(
        claim.key, sv.verdict, _share_words(sv, null), (), sv.p_above, SHARE_ALPHA, alts,
        sv.shown,
    )  # fmt: skip


# --------------------------------------------------------------------------- comparisons
def _p(claim, iv, margin) -> Optional[float]:
    if iv.se <= 0:
        return None
    return one_sided_p(claim.kind, iv.estimate, iv.se, iv.df, margin)


def _margin_alts(claim, iv) -> Dict[str, str]:
    if claim.margin is None:
        return {}
    return {
        name: decide(claim.kind, iv, claim.margin * f)[0]
        for name, f in (("margin halved", 0.5), ("margin doubled", 2.0))
    }


def _accuracy_claim(claim, a_runs, b_runs) -> ConfirmatoryVerdict:
    verdict, reason, iv = judge(
        claim.kind, accuracy_side(a_runs), accuracy_side(b_runs), claim.margin
    )
    return ConfirmatoryVerdict(
        claim.key, verdict, reason, (), _p(claim, iv, claim.margin),
        COMPARISON_ALPHA, _margin_alts(claim, iv), interval=iv,
    )  # fmt: skip


def _converged(history, share: float) -> int:
    # the validation curve (a run without one, made before the protocol: its test curve)
    key = "val_acc" if history.epochs[-1].val_acc is not None else "test_acc"
    val = [e[key] for e in history.epochs]
    final = val[-1]
    return next(i + 1 for i, v in enumerate(val) if v >= share * final)


def _faster(claim, a_runs, b_runs) -> ConfirmatoryVerdict:
    def at(share):
        a = [_converged(r.history, share) for r in a_runs]
        b = [_converged(r.history, share) for r in b_runs]
        return judge(claim.kind, exact_side(a), exact_side(b))

    verdict, reason, iv = at(0.95)
    alts = {"90 % of the final validation accuracy instead of 95 %": at(0.90)[0]}
    # epochs, exact per seed: printed as :func:`judge` prints an exact side, to 2 digits
    return ConfirmatoryVerdict(
        claim.key, verdict, reason, (), _p(claim, iv, None), COMPARISON_ALPHA, alts,
        interval=iv, scale=1.0, unit=" epochs", digits=2,
    )  # fmt: skip


def _last(values):
    """The last value of a per-epoch series (or the value itself)."""
    return values[-1] if isinstance(values, list) else values


def _pruning_pair(run) -> Tuple[float, float, float]:
    """(unpruned, pruned without retraining, retrained) test accuracy of one seed at the
    paper's thresholds."""
    from ..experiments.studies_pruning import load_pruning_study

    study = load_pruning_study(run, verbose=False)
    k = sum(len(v) for v in study["selected_paper_thresholds"].values())
    curve = study["curve"]["degenerate_first"]
    retrained = {r["k"]: _last(r["test_acc"]) for r in study["retrained"]}
    return curve[0], curve[k], retrained.get(k, curve[0])


def _pruning_claim(claim, runs) -> ConfirmatoryVerdict:
    rows = [_pruning_pair(r) for r in runs]
    if claim.key == "pruning_hurts":
        a, b = [r[0] for r in rows], [r[1] for r in rows]
    else:
        a, b = [r[2] for r in rows], [r[0] for r in rows]
    iv = paired_seed_interval(a, b)
    verdict, reason = decide(claim.kind, iv, claim.margin)
    return ConfirmatoryVerdict(
        claim.key, verdict, reason, (), _p(claim, iv, claim.margin),
        COMPARISON_ALPHA, _margin_alts(claim, iv), interval=iv,
    )  # fmt: skip


# --------------------------------------------------------------------------- all claims
def _judge(claim: ProtocolClaim, seeds: Sequence[int]) -> ConfirmatoryVerdict:
    runs = {arm: arm_runs(arm, seeds) for arm in claim.arms}
    if any(r is None for r in runs.values()):
        made = ", ".join(
            f"{arm} {_made(arm, seeds)} of {len(seeds)}" for arm in claim.arms
        )
        return ConfirmatoryVerdict(claim.key, PENDING, f"runs made: {made}")
    first = runs[claim.arms[0]]
    try:
        if claim.kind == "share":
            other = arm_runs("quadratic", seeds) if "16heads" in claim.arms[0] else None
            v = _share_claim(claim, first, other)
        elif claim.key.startswith("pruning_"):
            v = _pruning_claim(claim, first)
        elif claim.key == "resnet_faster":
            v = _faster(claim, first, runs[claim.arms[1]])
        else:
            v = _accuracy_claim(claim, first, runs[claim.arms[1]])
    except (MissingResultError, StaleResultError, FileNotFoundError) as e:
        return ConfirmatoryVerdict(claim.key, PENDING, f"a study is missing: {e}")
    v.seeds = tuple(seeds)
    return v


def confirmatory_verdicts(
    seeds: Optional[Sequence[int]] = None,
) -> Dict[str, ConfirmatoryVerdict]:
    """Every claim's confirmatory verdict at ``seeds`` (default: all eight fresh seeds when every
    arm has them, else the interim five), with Holm's adjustment as every judged claim's
    alternative."""
    if seeds is None:
        full = all(arm_runs(a, CONFIRMATORY_SEEDS) is not None for a in _arms())
        seeds = CONFIRMATORY_SEEDS if full else INTERIM_SEEDS
    out = {key: _judge(claim, seeds) for key, claim in CLAIMS.items()}
    return _holm_alternative(out, "Holm's adjustment over the family")


def _holm_alternative(
    out: Dict[str, ConfirmatoryVerdict], label: str
) -> Dict[str, ConfirmatoryVerdict]:
    """``out`` with Holm's adjustment over its judged claims as each one's alternative ``label``:
    a *reproduced* whose adjusted p is not below 0.05 becomes *inconclusive*."""
    judged = {k: v for k, v in out.items() if v.verdict != PENDING and v.p is not None}
    adjusted = holm(
        {k: v.p for k, v in judged.items()}, {k: v.alpha for k, v in judged.items()}
    )
    for key, v in judged.items():
        held = adjusted[key] < SHARE_ALPHA
        v.alternatives[label] = (
            v.verdict if (v.verdict != REPRODUCED or held) else INCONCLUSIVE
        )
    return out


def _arms() -> List[str]:
    return sorted({a for c in CLAIMS.values() for a in c.arms})


def tally(verdicts: Dict[str, ConfirmatoryVerdict]) -> Dict[str, int]:
    """How many claims have each verdict (and how many are pending)."""
    states = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, PENDING)
    return {s: sum(v.verdict == s for v in verdicts.values()) for s in states}


def interim_words(verdicts: Dict[str, ConfirmatoryVerdict]) -> str:
    """`` (interim: 5 of 8 fresh seeds per arm)`` while the judged verdicts read the interim
    seeds only, else nothing."""
    if any(v.verdict != PENDING and v.interim for v in verdicts.values()):
        return f" (interim: {len(INTERIM_SEEDS)} of {len(CONFIRMATORY_SEEDS)} fresh seeds per arm)"
    return ""


def tally_sentence(verdicts: Dict[str, ConfirmatoryVerdict]) -> str:
    """The confirmatory tally as the book states it: ``18 claims under the frozen protocol: all
    pending`` until a claim is judged, then ``18 claims under the frozen protocol: a reproduced
    at CPU scale; b not reproduced at CPU scale; c inconclusive; d pending``."""
    t = tally(verdicts)
    head = (
        f"{len(verdicts)} claims under the frozen protocol{interim_words(verdicts)}: "
    )
    if t[PENDING] == len(verdicts):
        return head + "all pending"
    parts = [
        f"{t[REPRODUCED]} reproduced at CPU scale",
        f"{t[NOT_REPRODUCED]} not reproduced at CPU scale",
        f"{t[INCONCLUSIVE]} inconclusive",
    ] + ([f"{t[PENDING]} pending"] if t[PENDING] else [])
    return head + "; ".join(parts)


# --------------------------------------------------------------------------- the follow-up
def _followup_runs(arm: str) -> Optional[list]:
    from .followup import SEEDS
    from .followup_runs import followup_run_name

    names = [followup_run_name(arm, s) for s in SEEDS]
    if any(n not in RUNS or run_state(RUNS[n]) != "present" for n in names):
        return None
    return [load_run(n) for n in names]


def _mcnemar(study, k: int, labels) -> float:
    """The exact McNemar p of the model retrained after pruning ``k`` heads against the control
    (the unpruned model retrained the same way), on the same test images."""
    from ..experiments.studies_pruning import study_predictions
    from ..experiments.verdicts import mcnemar_p

    a = study_predictions(study, k, "retrained")
    b = study_predictions(study, 0, "retrained")
    right = [
        (bool(x == y), bool(z == y)) for x, z, y in zip(a, b, labels)
    ]  # counts as ints
    return mcnemar_p(
        sum(p and not q for p, q in right), sum(q and not p for p, q in right)
    )


def _study_row(run) -> dict:
    """One seed's pruning study: unpruned accuracy, the rule's count ``k``, the pruned and
    retrained accuracies at ``k`` and at the paper's 15, the control's, and McNemar's p of each
    retrained model against the control."""
    from ..experiments.data import load_cifar10
    from ..experiments.studies_pruning import load_pruning_study
    from .followup import PAPER_PRUNED as P

    study = load_pruning_study(run, verbose=False)
    k = sum(len(v) for v in study["selected_paper_thresholds"].values())
    curve = study["curve"]["degenerate_first"]
    after = {r["k"]: _last(r["test_acc"]) for r in study["retrained"]}
    data = load_cifar10(run.config.data, verbose=False)
    labels = data.subset(run.config.train_subset, run.config.test_subset).y_test
    return {
        "unpruned": curve[0],
        "k": k,
        "pruned": curve[k],
        "retrained": after[
            k
        ],  # k = 0: the pruned model is the unpruned one, the control
        "control": after[0],
        "pruned15": curve[P],
        "retrained15": after[P],
        "mcnemar": _mcnemar(study, k, labels) if k else 1.0,
        "mcnemar15": _mcnemar(study, P, labels),
    }


def _gate(claim, rows) -> str:
    """The verdict of the loss a recovery claim needs first (amendment: a fixed sequence)."""
    from .followup import GATES

    at15 = GATES[claim.key] == "k15"
    iv = paired_seed_interval(
        [r["unpruned"] for r in rows],
        [r["pruned15" if at15 else "pruned"] for r in rows],
    )
    return decide("superiority", iv, None)[0]


def _controlled(claim, rows) -> ConfirmatoryVerdict:
    """A pruning claim of the follow-up, as amended: ``pruning_hurts_fresh`` (unpruned minus
    pruned), or a recovery (retrained minus control, judged only once pruning hurts)."""
    col, mc = ("retrained15", "mcnemar15") if claim.key.endswith("15") else (
        "retrained", "mcnemar")  # fmt: skip
    if claim.key == "pruning_hurts_fresh":
        iv = paired_seed_interval(
            [r["unpruned"] for r in rows], [r["pruned"] for r in rows]
        )
        alternatives, tests = {}, ""
    else:
        gate = _gate(claim, rows)
        if gate != REPRODUCED:
            return ConfirmatoryVerdict(
                claim.key, INCONCLUSIVE, "nothing measurable to recover: its pruning's "
                f"cost is {gate}", alternatives={},
            )  # fmt: skip
        iv = paired_seed_interval([r[col] for r in rows], [r["control"] for r in rows])
        other = "equivalence" if claim.kind == "non-inferiority" else "non-inferiority"
        alternatives = {
            **_margin_alts(claim, iv),
            f"typed as {other}": decide(other, iv, claim.margin)[0],
        }
        if col == "retrained":
            before = paired_seed_interval(
                [r[col] for r in rows], [r["unpruned"] for r in rows]
            )
            alternatives["against the unpruned model before retraining"] = decide(
                claim.kind, before, claim.margin
            )[0]
        tests = "; each seed's exact McNemar p against its control: " + ", ".join(
            f"{r[mc]:.2g}" for r in rows
        )
    if iv.se <= 0:
        return ConfirmatoryVerdict(
            claim.key, INCONCLUSIVE, "not testable: every seed's difference is the same",
            alternatives={},
        )  # fmt: skip
    verdict, reason = decide(claim.kind, iv, claim.margin)
    return ConfirmatoryVerdict(
        claim.key, verdict, reason + tests, (), _p(claim, iv, claim.margin),
        COMPARISON_ALPHA, alternatives,
    )  # fmt: skip


def _followup_claim(claim) -> ConfirmatoryVerdict:
    runs = {arm: _followup_runs(arm) for arm in claim.arms}
    if any(r is None for r in runs.values()):
        return ConfirmatoryVerdict(claim.key, PENDING, "runs not all made")
    first = runs[claim.arms[0]]
    try:
        if claim.key.startswith("pruning_"):
            return _controlled(claim, [_study_row(r) for r in first])
        return _accuracy_claim(claim, first, runs[claim.arms[1]])
    except (MissingResultError, StaleResultError, FileNotFoundError) as e:
        return ConfirmatoryVerdict(claim.key, PENDING, f"a study is missing: {e}")


def followup_verdicts() -> Dict[str, ConfirmatoryVerdict]:
    """The registered follow-up's verdicts, as amended (:func:`~attnconv.evidence.followup.
    all_claims`), by the frozen rule at all of its seeds (*pending* while an arm lacks one),
    with Holm's adjustment over its own family as every claim's alternative."""
    from .followup import SEEDS, all_claims

    out = {}
    for key, claim in all_claims().items():
        v = _followup_claim(claim)
        v.seeds = tuple(SEEDS) if v.verdict != PENDING else ()
        out[key] = v
    return _holm_alternative(out, "Holm's adjustment over the follow-up's family")


# --------------------------------------------------------------------------- reported, not judged
def _hurts_mcnemar(run) -> Tuple[Tuple[int, ...], float]:
    """One seed's pruning study: the heads the rule prunes in each layer and the exact McNemar p
    of its unpruned model against the same model with those heads pruned, before retraining, on
    the same test images."""
    from ..experiments.data import load_cifar10
    from ..experiments.studies_pruning import load_pruning_study, study_predictions
    from ..experiments.verdicts import mcnemar_p

    study = load_pruning_study(run, verbose=False)
    chosen = study["selected_paper_thresholds"]
    per_layer = tuple(
        len(chosen.get(str(i), ())) for i in range(run.config.model_config().num_layers)
    )
    k = sum(per_layer)
    data = load_cifar10(run.config.data, verbose=False)
    labels = data.subset(run.config.train_subset, run.config.test_subset).y_test
    right = [
        (bool(a == y), bool(b == y))
        for a, b, y in zip(
            study_predictions(study, 0), study_predictions(study, k), labels
        )
    ]
    return per_layer, mcnemar_p(
        sum(a and not b for a, b in right), sum(b and not a for a, b in right)
    )


def pruning_hurts_mcnemar() -> Dict[
    str, Optional[List[Tuple[int, Tuple[int, ...], float]]]
]:
    """Each seed's exact McNemar test for "pruning initially hurts a bit", which the claim's
    measure (frozen, and in the follow-up) promises beside its interval: per seed (seed, heads
    the rule pruned in each layer, p) of the unpruned model against the pruned one before
    retraining, on the frozen protocol's fresh seeds (``"fresh"``) and the follow-up's
    (``"followup"``); ``None`` while a run is missing. Reported, never judged: both verdicts
    rest on the interval over seeds."""
    from .followup import SEEDS

    out: Dict[str, Optional[List[Tuple[int, Tuple[int, ...], float]]]] = {}
    for name, seeds, runs in (
        ("fresh", CONFIRMATORY_SEEDS, arm_runs("generalized", CONFIRMATORY_SEEDS)),
        ("followup", SEEDS, _followup_runs("generalized")),
    ):
        out[name] = (
            None
            if runs is None
            else [(s, *_hurts_mcnemar(r)) for s, r in zip(seeds, runs)]
        )
    return out


def followup_gates() -> Dict[str, Optional[Tuple[str, Interval]]]:
    """The fixed-sequence gate of each follow-up recovery claim, as its judge computes it
    (:func:`_gate`): the verdict on "pruning hurts" at the claim's pruning (the rule's heads, or
    the paper's 15) with its interval over seeds (unpruned minus pruned, before retraining);
    ``None`` while a run is missing. Reported beside the recovery verdicts."""
    from .followup import GATES, all_claims

    runs = _followup_runs("generalized")
    if runs is None:
        return {key: None for key in GATES}
    rows = [_study_row(r) for r in runs]
    claims = all_claims()
    out: Dict[str, Optional[Tuple[str, Interval]]] = {}
    for key, at in GATES.items():
        pruned = "pruned15" if at == "k15" else "pruned"
        iv = paired_seed_interval(
            [r["unpruned"] for r in rows], [r[pruned] for r in rows]
        )
        out[key] = (_gate(claims[key], rows), iv)
    return out
