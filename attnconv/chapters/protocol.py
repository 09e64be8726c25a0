"""The protocol page: the frozen confirmatory protocol as the reader sees it (its claims, rule,
arms, tuning and chapter 18's contrasts), the freeze record checked, and the confirmatory
verdicts beside the exploratory ones. Reads only (:mod:`attnconv.evidence`)."""

from __future__ import annotations

import re
from typing import Dict, List

from ..evidence import freeze, protocol
from ..evidence.judge import (
    PENDING,
    ConfirmatoryVerdict,
    arm_runs,
    interim_words,
    tally,
)
from ..evidence.runs import beyond_tuning_runs, grid_ends, tuning_record, tuning_runs
from ..experiments.claims import CLAIMS
from ..experiments.registry import RUNS, run_state
from ..experiments.verdicts import NOT_REPRODUCED, REPRODUCED
from .shared.badges import verdict_badge, verdict_number, verdict_word
from .shared.followup_words import FOLLOWUP
from .shared.tables import keep_words, markdown_table, threshold_text

__all__ = [
    "freeze_table",
    "claims_table",
    "claims_text",
    "arms_table",
    "tuning_table",
    "tuning_points",
    "tuning_curves_figure",
    "fresh_arms_table",
    "contrasts_table",
    "progress_table",
    "verdicts_table",
    "tally_words",
    "robustness_table",
    "holm_floor",
    "why_fragile_text",
    "followup_record_table",
    "followup_arms_table",
    "followup_claims_table",
    "followup_amendments_table",
    "followup_progress",
    "followup_table",
    "followup_status",
    "runs_made_sentence",
    "hurts_mcnemar_table",
]


def _table(rows: List[dict]):
    """Rows of dicts (same keys) as a left-aligned Markdown table."""
    columns = list(rows[0])
    cells = [[keep_words(r[c]) for c in columns] for r in rows]
    return markdown_table(columns, cells, "l" * len(columns))


def freeze_table():
    """The freeze record, checked: the digest now against the frozen one (asserted)."""
    now = protocol.digest()
    assert now == freeze.FROZEN_DIGEST, "the protocol changed after its freeze"
    return _table(
        [
            {"item": "freeze commit", "value": f"`{freeze.FREEZE_COMMIT[:10]}`"},
            {"item": "frozen on (UTC, git's commit date)", "value": freeze.FREEZE_DATE},
            {"item": "digest of the content (SHA-256)", "value": f"`{now[:16]}…`"},
            {"item": "digest now", "value": "the same (checked)"},
            {"item": "amendments since", "value": str(len(protocol.AMENDMENTS))},
        ]
    )


def claim_name(key: str) -> str:
    """The name a reader meets for claim ``key`` in the other tables (its registry title,
    "Fig. 3: local first, further away deeper"), else its key in words."""
    return CLAIMS[key].title if key in CLAIMS else key.replace("_", " ")


def _number(x: float) -> str:
    """A threshold as printed (:func:`~.shared.tables.threshold_text`): 0.5, 10⁵."""
    return threshold_text(x)


def _bound(c) -> str:
    """A frozen claim's type with its threshold or margin: "share, > 0.5"."""
    if c.margin is not None:
        return f"{c.kind}, margin {100 * c.margin:g} pt"
    return f"{c.kind}, > {_number(c.threshold)}" if c.threshold is not None else c.kind


def claims_table():
    """One row per claim of the family, compact: the claim, where the paper makes it, the arms
    it reads, its type with its threshold or margin. The full frozen text of each claim
    (quotation, measure, null) is :func:`claims_text`; nothing here is cut."""
    return _table(
        [
            {
                "claim": claim_name(c.key),
                "paper": re.split(r",| \(", c.source)[0],
                "arms": ", ".join(c.arms),
                "type, bound": _bound(c),
            }
            for c in protocol.CLAIMS.values()
        ]
    )


def _sentence(text: str) -> str:
    return text if text.endswith(".") else text + "."


def claims_text(title: str) -> str:
    """Each claim of the family as frozen, in full and unshortened, as one collapsed MyST
    dropdown titled ``title``: the paper's words, where, the per-seed measure or compared
    quantity, the null model, and the reason for the threshold or margin."""
    items = []
    for c in protocol.CLAIMS.values():
        parts = [
            f"- **{c.key.replace('_', ' ')}** ({c.source}): “{c.quote}”",
            f"  - *Measure:* {_sentence(c.prop)}",
            f"  - *Type and bound:* {_bound(c)}."
            + (f" {_sentence(c.reason)}" if c.reason else ""),
        ]
        if c.null:
            parts.append(f"  - *Null:* {_sentence(c.null)}")
        items.append("\n".join(parts))
    body = "\n".join(items)
    return f"::::{{dropdown}} {title}\n{body}\n::::"


def arms_table():
    """The six-layer arms, what each tunes on validation and with which values."""
    rows = []
    for a in protocol.ARMS.values():
        grid = "; ".join(f"{k} ∈ {list(v)}" for k, v in a.grid.items())
        rows.append(
            {
                "arm": a.key,
                "model": a.description,
                "tuned on validation": grid or f"as {a.tuned_as}",
            }
        )
    return _table(rows)


def _value_words(values: dict) -> str:
    return ", ".join(
        f"{k} {v[0]}\u2060–\u2060{v[-1]}" if k == "widths" else f"{k} {v}"  # unbroken
        for k, v in values.items()
    )


def tuning_table():
    """Each tuned arm's grid on the validation images: every combination's mean validation
    accuracy (last 3 epochs) and last training accuracy (one tuning seed), the choice marked,
    and whether the choice sits at an end of a value's range in the grid."""
    rows = []
    for arm, a in protocol.ARMS.items():
        if not a.grid:
            continue
        saved = tuning_record(arm)
        choice = saved["choice"]
        edge = grid_ends(arm)
        for r in saved["runs"]:
            chosen = r["values"] == choice
            rows.append(
                {
                    "arm": arm,
                    "values": _value_words(r["values"]),
                    "validation": f"{100 * r['val_acc_last3']:.1f} %",
                    "training": f"{100 * r['train_acc_last']:.1f} %",
                    "chosen": (
                        "chosen"
                        + (f" (at the grid's end: {', '.join(edge)})" if edge else "")
                        if chosen
                        else ""
                    ),
                }
            )
    return _table(rows)


def tuning_points() -> Dict[str, List[dict]]:
    """Every tuning run made so far, frozen and follow-up, by series (``"frozen: learned"``,
    ``"follow-up: resnet18-matched"``, ``"frozen: resnet18, width 8"``): its learning rate, mean
    validation accuracy of its last 3 epochs, and whether it is its arm's choice (``None`` while
    the follow-up's choice is not made)."""
    from ..evidence import followup
    from ..evidence.followup_runs import followup_tuned_values, followup_tuning_runs
    from ..evidence.runs import tuning_row

    out: Dict[str, List[dict]] = {}
    for arm, a in protocol.ARMS.items():
        if not a.grid:
            continue
        saved = tuning_record(arm)
        for r in saved["runs"]:
            v = r["values"]
            width = f", width {v['widths'][0]}" if "widths" in v else ""
            out.setdefault(f"frozen: {arm}{width}", []).append(
                {
                    "lr": v["lr"],
                    "val": r["val_acc_last3"],
                    "chosen": v == saved["choice"],
                }
            )
    for arm, runs in followup_tuning_runs().items():
        choice = followup_tuned_values(arm)
        for name, v in runs:
            if _present([name]):
                out.setdefault(f"follow-up: {arm}", []).append(
                    {
                        "lr": v["lr"],
                        "val": tuning_row(name, v)["val_acc_last3"],
                        "chosen": None if choice is None else v == choice,
                    }
                )
    assert set(followup.ARMS) >= {k.split(": ")[1] for k in out if "follow" in k}
    return out


def tuning_curves_figure():
    """The tuning curves: validation accuracy (last 3 epochs' mean) against the learning rate,
    the frozen protocol's (tuning seed 900) and the follow-up's (902) side by side, each point
    with ±1 binomial standard error over the validation images; the choice ringed."""
    import matplotlib.pyplot as plt

    from ..evidence import followup
    from .shared.plotting import COLUMN_INCHES, model_colour

    n = protocol.SPLIT["validation_images"]
    points = tuning_points()
    fig, axes = plt.subplots(
        1,
        2,
        figsize=(COLUMN_INCHES, 3.0),
        sharex=True,
        sharey=True,
        constrained_layout=True,
    )
    for ax, part, title in zip(
        axes, ("frozen", "follow-up"), ("frozen protocol", "second test on new seeds")
    ):
        for series, rows in points.items():
            if not series.startswith(part + ":"):
                continue
            label = series.split(": ")[1]
            model = label.split(",")[0].removesuffix("-matched")
            rows = sorted(rows, key=lambda r: r["lr"])
            x = [r["lr"] for r in rows]
            y = [100 * r["val"] for r in rows]
            se = [100 * (r["val"] * (1 - r["val"]) / n) ** 0.5 for r in rows]
            style = ":" if "matched" in label else "--" if "width 16" in label else "-"
            ax.errorbar(
                x,
                y,
                yerr=se,
                color=model_colour(model),
                ls=style,
                marker="o",
                ms=3.5,
                capsize=2,
                lw=1.2,
                label=label.replace("resnet18", "ResNet18"),
            )
            for r in rows:
                if r["chosen"]:
                    ax.plot(
                        r["lr"],
                        100 * r["val"],
                        "o",
                        ms=9,
                        mfc="none",
                        mec=model_colour(model),
                        mew=1.3,
                    )
        ax.set_xscale("log", base=2)
        grid = followup.LR_GRID["lr"]
        ax.set_xticks(grid, [f"{g:g}" for g in grid], rotation=45)
        ax.minorticks_off()
        ax.set_title(title)
        ax.set_xlabel("learning rate")
        ax.legend(loc="lower left", frameon=False)
    axes[0].set_ylabel("validation accuracy (%)")
    return fig


def fresh_arms_table():
    """Each six-layer arm's fresh seeds at a glance (:func:`judge.arm_runs`): parameters, the
    mean last-epoch training accuracy and the mean test accuracy with its spread over seeds
    (sample standard deviation), and the devices the runs were made on."""
    import statistics

    rows = []
    for arm in protocol.ARMS:
        runs = arm_runs(arm, protocol.CONFIRMATORY_SEEDS)
        if not runs:
            continue
        hs = [r.history for r in runs]
        test = [100 * h.epochs[-1]["test_acc"] for h in hs]
        train = [100 * h.epochs[-1]["train_acc"] for h in hs]
        devices = sorted({s["device"] for h in hs for s in h.get("sessions") or []})
        rows.append(
            {
                "arm": arm,
                "seeds": str(len(hs)),
                "parameters": f"{hs[0].num_parameters:,}",
                "training": f"{statistics.mean(train):.1f} %",
                "test": f"{statistics.mean(test):.1f} % ± {statistics.stdev(test):.1f}",
                "devices": ", ".join(devices),
            }
        )
    return _table(rows)


def contrasts_table():
    """Chapter 18's contrasts."""
    rows = [
        {
            "contrast": c["key"],
            "a − b": f"{c['a']} − {c['b']}",
            "type": c["kind"]
            + (f", margin {100 * c['margin']:g} pt" if c["margin"] else ""),
            "sizes": ", ".join(f"{n:,}" for n in c["sizes"]),
            "claim of": c["source"].split(",")[0] or "the book",
        }
        for c in protocol.BEYOND["contrasts"]
    ]
    return _table(rows)


def _present(names) -> int:
    return sum(n in RUNS and run_state(RUNS[n]) == "present" for n in names)


def progress_table():
    """How many of the protocol's runs are made, by kind."""
    tuning = [n for runs in tuning_runs().values() for n, _ in runs]
    beyond_tuning = [r[0] for r in beyond_tuning_runs()]
    confirm = [n for n in RUNS if n.startswith("confirm/")]
    beyond = [n for n in RUNS if n.startswith("beyond3/")]
    seeds = len(protocol.CONFIRMATORY_SEEDS) * len(protocol.ARMS)
    n_beyond = (
        len(protocol.BEYOND["seeds"])
        * len(protocol.BEYOND["sizes"])
        * len(protocol.BEYOND["arms"])
    )
    return _table(
        [
            {
                "runs": "six-layer tuning (validation)",
                "made": f"{_present(tuning)} of {len(tuning)}",
            },
            {
                "runs": "six-layer fresh seeds",
                "made": f"{_present(confirm)} of {seeds}",
            },
            {
                "runs": "chapter 18 tuning (validation)",
                "made": f"{_present(beyond_tuning)} of {len(beyond_tuning)}",
            },
            {
                "runs": "chapter 18 fresh seeds",
                "made": f"{_present(beyond)} of {n_beyond}",
            },
        ]
    )


def verdicts_table(
    confirmatory: Dict[str, ConfirmatoryVerdict], exploratory: Dict[str, str]
):
    """Two columns per claim: the exploratory verdict (runs made before the freeze, never
    counted) and the confirmatory one (fresh seeds, frozen protocol); fragile marked."""
    rows = []
    for key, v in confirmatory.items():
        flags = [f for f, on in (("fragile", v.fragile), ("interim", v.interim)) if on]
        mark = f" ({', '.join(flags)})" if v.verdict != PENDING and flags else ""
        rows.append(
            {
                "claim": claim_name(key),
                "exploratory (not counted)": exploratory.get(key, "—"),
                "confirmatory": v.verdict + mark,
            }
        )
    return _table(rows)


def tally_words(confirmatory: Dict[str, ConfirmatoryVerdict]) -> str:
    """The confirmatory tally in words."""
    t = tally(confirmatory)
    n = len(confirmatory)
    if t[PENDING] == n:
        return f"all {n} claims pending: their fresh seeds are being made"
    return (
        f"of {n} claims{interim_words(confirmatory)}: {t['reproduced at CPU scale']} reproduced at CPU scale, "
        f"{t['not reproduced at CPU scale']} not reproduced, {t['inconclusive']} "
        f"inconclusive, {t[PENDING]} pending"
    )


#: An alternative read on the exploratory runs only: no verdict on the fresh seeds to compare.
NOT_COMPUTED = "not computed (exploratory runs only)"


def robustness_table(confirmatory: Dict[str, ConfirmatoryVerdict]):
    """One row per claim: its confirmatory verdict, each frozen alternative under which that
    verdict changes (with the verdict there), and those under which it holds; a claim whose
    verdict changes under one is fragile (*pending* and *not computed* are shown as such)."""
    rows = []
    for key, claim in protocol.CLAIMS.items():
        v = confirmatory[key]
        changes, holds = [], []
        for alt in claim.alternatives:
            got = v.alternatives.get(alt)
            if v.verdict == PENDING or got is None:
                holds.append(
                    f"{alt}: {PENDING if v.verdict == PENDING else NOT_COMPUTED}"
                )
            elif got != v.verdict:
                changes.append(f"{alt}: **{verdict_word(got)}**")
            else:
                holds.append(alt)
        rows.append(
            {
                "claim": claim_name(key),
                "verdict": verdict_word(v.verdict),
                "changes under": "; ".join(changes) or "—",
                "holds under (or not computed)": "; ".join(holds) or "—",
            }
        )
    return _table(rows)


def holm_floor() -> Dict[str, float]:
    """Why no share of the fresh seeds survives a family-wide correction: ``seeds`` fresh seeds
    per arm, ``claims`` in the family, the share test's level ``alpha``, the smallest p its exact
    one-sided binomial test can give (``best_p``: every seed shows the property, against a share
    of one half, 0.5 ** seeds) and Holm's first threshold (``first_threshold``: alpha / claims),
    which ``best_p`` must reach for any claim to pass."""
    from ..evidence.rule import SHARE_ALPHA, binomial_upper_tail

    n, m = len(protocol.CONFIRMATORY_SEEDS), len(protocol.CLAIMS)
    return {
        "seeds": n,
        "claims": m,
        "alpha": SHARE_ALPHA,
        "best_p": binomial_upper_tail(n, n, 0.5),
        "first_threshold": SHARE_ALPHA / m,
    }


#: The robustness table's name for the family-wide correction: the frozen alternative that
#: every share claim names, read from the protocol rather than repeated.
HOLM = next(
    a
    for c in protocol.CLAIMS.values()
    for a in c.alternatives
    if a.startswith("Holm's adjustment")
)


def why_fragile_text(confirmatory: Dict[str, ConfirmatoryVerdict]) -> str:
    """Chapter 17's "Why every reproduced is fragile", its numbers from :func:`holm_floor` and
    the judge: the smallest p of a share of the fresh seeds against Holm's first threshold, and
    how many reproduced verdicts change under Holm's adjustment."""
    f = holm_floor()
    reproduced = [v for v in confirmatory.values() if v.verdict == REPRODUCED]
    turned = [v for v in reproduced if v.alternatives.get(HOLM) != REPRODUCED]
    n, m = f["seeds"], f["claims"]
    fails = f["best_p"] > f["first_threshold"]
    # what Holm's adjustment turns them into, said where it is one verdict for all
    to = sorted({str(v.alternatives.get(HOLM)) for v in turned})
    return "\n\n".join(
        [
            f"Each model was trained from {n} fresh seeds. A claim about trained models is "
            "reproduced when most seeds show the property. An exact one-sided sign test "
            f"decides it, at level {f['alpha']:g}.",
            f"The best case is all {n} seeds showing it. The test then gives "
            f"$p = 0.5^{{{n}}} = {f['best_p']:.4f}$. With {m} claims tested, one could pass "
            "by luck alone; Holm's correction guards the whole family against that. It asks "
            f"the first claim for $p \\le {f['alpha']:g}/{m} = {f['first_threshold']:.4f}$.",
            (
                f"So with {n} seeds no share of seeds can pass a family-wide correction. "
                if fails
                else f"So with {n} seeds a share of seeds can pass a family-wide correction. "
            )
            + (
                f"Under Holm's adjustment all {len(reproduced)} reproduced verdicts change"
                if len(turned) == len(reproduced)
                else f"Under Holm's adjustment {len(turned)} of the {len(reproduced)} "
                "reproduced verdicts change"
            )
            + (f", each to *{to[0]}*." if len(to) == 1 else "."),
            "Read each *reproduced* as a share: how many of the "
            f"{n} seeds show the property (Table 17.2). It is evidence for most seeds at CPU "
            "scale, judged claim by claim, not a family-wide result.",
            both_ways_text(confirmatory),
        ]
    )


def both_ways_text(confirmatory: Dict[str, ConfirmatoryVerdict]) -> str:
    """What Holm's adjustment does when it also holds back the *not reproduced* verdicts (an
    alternative the frozen protocol does not name, :func:`~.shared.holm_both.holm_both_ways`):
    which of them stand, which would read inconclusive, and the p of the best share against it."""
    from .shared.holm_both import holm_both_ways

    both = holm_both_ways(confirmatory, protocol.CLAIMS)
    against = [k for k, v in confirmatory.items() if v.verdict == NOT_REPRODUCED]
    stand = [claim_name(k) for k in against if both[k] == NOT_REPRODUCED]
    fall = [claim_name(k) for k in against if both[k] != NOT_REPRODUCED]
    f = holm_floor()

    def listed(names):  # one claim a line, not a run of titles joined by semicolons
        return "\n\n" + "\n".join(f"- {n}" for n in names) + "\n\n"

    return (
        "The protocol holds back only the *reproduced* verdicts. A *not reproduced* is a "
        "rejection too, in the other direction. The same bound applies to it: no seed of "
        f"{f['seeds']} showing the property has $p = {f['best_p']:.4f}$. Applied in both "
        f"directions, Holm's adjustment leaves {len(stand)} of the {len(against)} *not "
        "reproduced* standing"
        + (f":{listed(stand)}" if stand else ". ")
        + (
            f"The other {len(fall)} would read *inconclusive*:{listed(fall)}They are "
            "fragile too, under an alternative the frozen protocol does not name."
            if fall
            else ""
        )
    ).rstrip()


# --------------------------------------------------------------------------- the follow-up
def followup_record_table():
    """The registered follow-up's freeze record (its digest checked, asserted) and its runs made
    so far, by kind."""
    from ..evidence import followup

    now = followup.digest()
    assert now == freeze.FOLLOWUP_DIGEST, "the follow-up changed after its freeze"
    amended = followup.amendment_digest()
    assert amended == freeze.FOLLOWUP_AMENDMENTS[-1][1], "the amendments changed"
    made = followup_progress()
    return _table(
        [
            {
                "item": "freeze commit",
                "value": f"`{freeze.FOLLOWUP_FREEZE_COMMIT[:10]}`",
            },
            {"item": "frozen on (UTC)", "value": freeze.FOLLOWUP_FREEZE_DATE},
            {"item": "digest now", "value": f"`{now[:16]}…`, the frozen one (checked)"},
            *_amendment_rows(),
            {"item": "fresh seeds", "value": ", ".join(map(str, followup.SEEDS))},
            {
                "item": "tuning runs made (validation)",
                "value": "{} of {}".format(*made["tuning"]),
            },
            {
                "item": "fresh runs made",
                "value": "{} of {}".format(*made["fresh"]),
            },
        ]
    )


def followup_progress() -> Dict[str, tuple]:
    """The registered follow-up's runs made so far, from the run registry: ``{"tuning": (made,
    of), "fresh": (made, of)}``."""
    from ..evidence import followup
    from ..evidence.followup_runs import followup_run_name, followup_tuning_runs

    tuning = [n for runs in followup_tuning_runs().values() for n, _ in runs]
    seeds = [followup_run_name(a, s) for a in followup.ARMS for s in followup.SEEDS]
    return {
        "tuning": (_present(tuning), len(tuning)),
        "fresh": (_present(seeds), len(seeds)),
    }


def _amendment_rows() -> List[dict]:
    """One row per amendment: its commit (or "this version" until one names it)."""
    rows = []
    for i, (_, _, commit) in enumerate(freeze.FOLLOWUP_AMENDMENTS, 1):
        where = f"`{commit[:10]}`" if commit else "this version"
        last = i == len(freeze.FOLLOWUP_AMENDMENTS)
        rows.append(
            {
                "item": f"amendment {i}"
                + (" (code only)" if i > 1 else " (before any fresh run)"),
                "value": where + (", digest checked" if last else ", digest recorded"),
            }
        )
    return rows


def _followup_choice(arm: str) -> str:
    from ..evidence.followup_runs import followup_tuned_values

    chosen = followup_tuned_values(arm)
    return "not yet chosen" if chosen is None else f"lr {chosen['lr']:g}"


def followup_arms_table():
    """The follow-up's arms: parameters, multiply-accumulates per image (counted while the model
    runs), its one grid and the value chosen on validation."""
    from ..evidence import followup
    from ..evidence.runs import arm_changes
    from ..experiments.flops import count_macs
    from ..experiments.models import build_model
    from ..experiments.profiles import make_config

    rows = []
    for a in followup.ARMS.values():
        overrides = arm_changes(a, {}).get("model_overrides")
        base = make_config(a.model, "deep").model_overrides
        model = build_model(a.model, **(overrides or base))
        macs = count_macs(model)
        rows.append(
            {
                "arm": a.key,
                "parameters": f"{sum(p.numel() for p in model.parameters()):,}",
                "MACs per image": f"{(macs.total) / 1e6:.1f} M",
                "grid": "lr ∈ {" + ", ".join(f"{v:g}" for v in a.grid["lr"]) + "}",
                "chosen on validation": _followup_choice(a.key),
            }
        )
    return _table(rows)


def followup_claims_table(verdicts: Dict[str, ConfirmatoryVerdict]):
    """The follow-up's claims: type, measure, margin and the verdict (pending until made)."""
    from ..evidence import followup

    rows = []
    for key, c in followup.all_claims().items():
        v = verdicts[key]
        mark = " (fragile)" if v.verdict != PENDING and v.fragile else ""
        rows.append(
            {
                "claim": claim_name(key),
                "type": c.kind,
                "measure": c.prop,
                "margin": "—" if c.margin is None else f"{100 * c.margin:g} point(s)",
                "difference": "—" if v.verdict == PENDING else verdict_number(v),
                "verdict": v.verdict + mark,
            }
        )
    return _table(rows)


#: Where each recovery claim's gate prunes (:func:`attnconv.evidence.judge.followup_gates`).
_GATE_AT = {
    "pruning_recovers_controlled": "the rule's heads",
    "pruning_recovers_15": "the paper's 15 heads",
}


def followup_details(verdicts: Dict[str, ConfirmatoryVerdict]) -> str:
    """Each judged follow-up verdict in full, as the judge states it (its difference, interval,
    detectable difference and, for a recovery claim, each seed's exact McNemar p and the gate it
    passed first: pruning hurts, unpruned minus pruned before retraining), with every
    alternative's verdict: a Markdown list; pending claims are named as such."""
    from ..evidence.judge import followup_gates

    gates = followup_gates()
    items = []
    for key, v in verdicts.items():
        if v.verdict == PENDING:
            items.append(f"- **{claim_name(key)}:** *pending* ({v.detail}).")
            continue
        alts = "; ".join(f"{a}: *{w}*" for a, w in v.alternatives.items())
        gate = gates.get(key)
        first = (
            f" Its gate, pruning hurts first ({_GATE_AT[key]}): *{gate[0]}*, "
            f"{gate[1].format(100)}."
            if gate
            else ""
        )
        if key == "pruning_hurts_fresh":
            first = " Each seed's exact McNemar p: Table P.15."
        items.append(
            f"- **{claim_name(key)}:** {verdict_badge(v.verdict)} {v.detail}.{first} "
            f"Under its alternatives: {alts}."
        )
    return "\n".join(items)


def followup_amendments_table():
    """The follow-up's amendments: date, claims touched, what changed, what existed then."""
    from ..evidence import followup

    return _table(
        [
            {
                "date": a.date,
                "claims": "every claim"
                if set(a.claims) == set(followup.CLAIMS)
                else ", ".join(claim_name(k) for k in a.claims),
                "what": a.what,
                "runs that existed then": "the same as above"
                if i and a.visible == followup.AMENDMENTS[i - 1].visible
                else a.visible,
            }
            for i, a in enumerate(followup.AMENDMENTS)
        ]
    )


#: Each follow-up claim and the frozen claim it asks again.
FOLLOWUP_OF = {key: words.asks_again for key, words in FOLLOWUP.items()}


def _followup_number(v: ConfirmatoryVerdict) -> str:
    """A judged follow-up verdict's difference and its 95 % interval for a table cell whose
    header names the interval (``−3.8 points [−6.3, −1.2]``); "pending" while unjudged."""
    if v.verdict == PENDING:
        return "pending"
    if v.interval is not None:
        return v.interval.compact(v.scale, v.unit, v.digits)
    # an interval over seeds only is not kept: the judge's detail states it
    return verdict_number(v).replace(", 95 % interval ", " ")


def followup_table(
    frozen: Dict[str, ConfirmatoryVerdict], followup: Dict[str, ConfirmatoryVerdict]
):
    """The registered follow-up's answers beside the frozen verdicts (its reporting rule: side
    by side, neither replacing the other): one row per question, with the paper's claim it asks
    again, the frozen protocol's verdict, the follow-up's verdict and the difference it rests
    on, with its 95 % interval. A pending question says so."""
    rows = []
    for key, base in FOLLOWUP_OF.items():
        v = followup[key]
        mark = "pending" if v.verdict == PENDING else verdict_badge(v.verdict)
        rows.append(
            [
                keep_words(claim_name(base)),
                keep_words(FOLLOWUP[key].short),
                verdict_badge(frozen[base].verdict),  # a role: no span inside
                mark,
                _followup_number(v),
            ]
        )
    columns = [
        "asks again",
        "the follow-up's question",
        "frozen protocol",
        "follow-up",
        "difference [95 % interval]",
    ]
    return markdown_table(columns, rows, "lllll")


def runs_made_sentence() -> str:
    """How far the follow-up's runs are, from the run registry: one sentence."""
    made = followup_progress()
    return "Of the second test's runs, {} of {} tuning runs and {} of {} fresh runs are made.".format(
        *made["tuning"], *made["fresh"]
    )


def followup_status(followup: Dict[str, ConfirmatoryVerdict]) -> str:
    """How the follow-up's verdicts are reported and where the protocol page gives its design:
    two sentences under its table (how far its runs are: :func:`runs_made_sentence`)."""
    from ..evidence import followup as registered

    pending = all(followup[k].verdict == PENDING for k in FOLLOWUP_OF)
    status = (
        "No follow-up verdict yet: each waits for its fresh runs."
        if pending
        else "Its verdicts stand beside the frozen ones, never in the tally."
    )
    return (
        f"It was frozen in git before any of its runs was committed, and trains "
        f"{len(registered.SEEDS)} new seeds per arm. "
        + status
        + " Its design, amendments and claims: {ref}`the protocol page "
        "<sec-protocol-followup>`."
    )


def pruning_followup_sentence(followup: Dict[str, ConfirmatoryVerdict]) -> str:
    """The registered follow-up's answers on pruning, for the intro and ch. 8: whether pruning
    hurts at first, and whether retraining recovers against a retrained control and with the
    paper's 15 heads pruned, each verdict's badge and number; nothing while one is pending."""
    hurts, control, fifteen = (
        followup["pruning_hurts_fresh"],
        followup["pruning_recovers_controlled"],
        followup["pruning_recovers_15"],
    )
    if PENDING in (hurts.verdict, control.verdict, fifteen.verdict):
        return ""
    from ..evidence import followup as registered

    margin = 100 * registered.all_claims()["pruning_recovers_controlled"].margin
    unit = f"{margin:g} point{'s' * (margin != 1)}"
    return (
        f"Pruning hurts at first, {verdict_badge(hurts.verdict)}: the unpruned model leads "
        f"by {verdict_number(hurts)}. Retraining recovers when the pruned model ends within "
        f"{unit} of the same model retrained unpruned: the interval of pruned minus control "
        f"must lie above −{unit}. Against that control it is "
        f"{verdict_badge(control.verdict)} ({verdict_number(control)}), and "
        f"{verdict_badge(fifteen.verdict)} with the paper's 15 heads pruned "
        f"({verdict_number(fifteen)})."
    )


def _p_value(p: float) -> str:
    """A p-value as Table P.15 prints it: three decimals, or "< 0.001"."""
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def hurts_mcnemar_table():
    """Each seed's exact McNemar p for "pruning initially hurts a bit" (the unpruned model
    against the same model pruned by the rule, before retraining, on the same test images), on
    the frozen protocol's fresh seeds and on the follow-up's, side by side, with the heads the
    rule pruned in each layer: the per-seed test the claim's measure promises beside its
    interval, computed after both verdicts and reported, not judged. A set whose runs are
    missing shows dashes."""
    from ..evidence.judge import pruning_hurts_mcnemar

    got = pruning_hurts_mcnemar()
    n = max(len(rows or ()) for rows in got.values())
    cells = {
        key: [
            (str(s), f"{sum(per)} ({' '.join(map(str, per))})", _p_value(p))
            for s, per, p in rows or ()
        ]
        + [("—", "—", "—")] * (n - len(rows or ()))
        for key, rows in got.items()
    }
    pruned = "heads pruned (per layer)"
    head = ("fresh seed", pruned, "McNemar p", "follow-up seed", pruned, "McNemar p")
    rows = [[*cells["fresh"][i], *cells["followup"][i]] for i in range(n)]
    return markdown_table(head, rows, "rlrrlr")
