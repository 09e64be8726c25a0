"""Chapter 18's fair test, as the chapter shows it: the frozen protocol's five arms on 8×8 tokens
(:data:`attnconv.evidence.protocol.BEYOND`), tuned on validation, judged on fresh seeds. Reads
:mod:`attnconv.evidence.beyond` and the saved tuning (never trains, never judges).

* :func:`tuning_table` — each arm's validation accuracy at each learning rate, and its choice;
* :func:`fair_table`, :func:`plot_fair` — final test and training accuracy per arm and size;
* :func:`plot_fair_curves` — training against validation accuracy over the steps;
* :func:`fair_contrasts_table` — each pair of arms at each size, with both its verdicts;
* :func:`fair_claims_table`, :func:`fair_badges` — each contrast's verdict over its sizes.
"""

from __future__ import annotations

from typing import Mapping, Optional

import numpy as np

from ..evidence import beyond as fair
from ..evidence.protocol import BEYOND
from ..evidence.runs import BEYOND_LRS, beyond_tuning
from .shared.badges import VERDICT_BADGES, verdict_badge
from .shared.plotting import COLUMN_INCHES, model_colour
from .shared.tables import markdown_table, signed_number

__all__ = [
    "FAIR_LABELS",
    "FAIR_TICKS",
    "CONTRAST_TITLES",
    "tuning_table",
    "fair_table",
    "plot_fair",
    "plot_fair_curves",
    "fair_contrasts_table",
    "fair_claims_table",
    "fair_badges",
]

#: How the fair test names each arm.
FAIR_LABELS = {
    "vit": "plain ViT",
    "vit_mimetic": "plain ViT, mimetic start",
    "gpsa": "GPSA, default start",
    "convit": "GPSA, ConViT start",
    "impulse": "GPSA, impulse start (Thm. 1)",
}
#: Each arm's short name under its column of Figure 18.1 (two lines of at most 7 characters: at
#: the book's 8.5 pt they fit the fifth of a panel each arm has in the column).
FAIR_TICKS = {
    "vit": "ViT",
    "vit_mimetic": "ViT\nmimetic",
    "gpsa": "GPSA\ndefault",
    "convit": "GPSA\nConViT",
    "impulse": "GPSA\nimpulse",
}
#: Each frozen contrast in words: what a − b compares.
CONTRAST_TITLES = {
    "architecture": "GPSA − plain ViT, both at the default start",
    "convit_start": "ConViT start − default start, in GPSA",
    "impulse_start": "impulse start − default start, in GPSA",
    "starts_level_convit": "ConViT start ≈ default start, in GPSA",
    "starts_level_impulse": "impulse start ≈ default start, in GPSA",
    "mimetic": "mimetic start − default start, in the plain ViT",
    "convit_claim": "ConViT (GPSA + its start) − plain ViT",
}


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def tuning_table():
    """Each arm's mean validation accuracy (%) at each size and learning rate, one column each,
    the chosen rate in bold (a Markdown table; a size whose tuning is not saved says so)."""
    rows = []
    for arm in fair.ARMS:
        cells = [FAIR_LABELS[arm]]
        for size in fair.SIZES:
            got = beyond_tuning(size)
            if got is None or arm not in got:
                cells += ["pending"] * len(BEYOND_LRS)
                continue
            scores, choice = got[arm]["scores"], got[arm]["choice"]
            by_rate = {float(lr): v for lr, v in scores.items()}
            cells += [
                f"**{_pct(by_rate[r])}**" if r == choice else _pct(by_rate[r])
                for r in map(float, BEYOND_LRS)
            ]
        rows.append(cells)
    columns = ["arm"] + [
        f"{n // 1000}k · lr {r:g}" for n in fair.SIZES for r in BEYOND_LRS
    ]
    return markdown_table(columns, rows)


def fair_table():
    """Each arm at each size: final test accuracy, mean [95 % interval over seeds and test
    images], and mean final training accuracy (a Markdown table; pending rows say so)."""
    rows = []
    for arm in fair.ARMS:
        cells = [FAIR_LABELS[arm]]
        for size in fair.SIZES:
            s = fair.arm_summary(arm, size)
            if s is None:
                cells += ["pending", "—"]
                continue
            t = s.test
            cells += [
                f"{_pct(t.estimate)} [{_pct(t.lo)}, {_pct(t.hi)}]",
                f"{100 * s.train:.0f}",
            ]
        rows.append(cells)
    columns = ["arm"] + [
        h for n in fair.SIZES for h in (f"test, {n:,} images", f"train, {n:,}")
    ]
    return markdown_table(columns, rows)


def plot_fair(linear: Optional[Mapping] = None):
    """Figure: test accuracy of every arm at each size (mean, 95 % interval over seeds and test
    images), with the linear-on-pixels reference; the panels share one y scale, labelled on each."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    fig, axes = plt.subplots(
        1, len(fair.SIZES), figsize=(COLUMN_INCHES, 3.4), sharey=True,
        layout="constrained",
    )  # fmt: skip
    for ax, size in zip(axes, fair.SIZES):
        for i, arm in enumerate(fair.ARMS):
            s = fair.arm_summary(arm, size)
            if s is None:
                continue
            t = s.test
            ax.errorbar(
                [i], [100 * t.estimate],
                yerr=[[100 * (t.estimate - t.lo)], [100 * (t.hi - t.estimate)]],
                color=model_colour(arm), marker="o", ms=5, capsize=3,
            )  # fmt: skip
        if linear is not None:
            ref = 100 * linear["sizes"][str(size)]["test"]
            ax.axhline(ref, color="0.4", lw=1, ls="--")
        # each arm named under its own column (its colour is the legend's)
        ax.set_xticks(range(len(fair.ARMS)), [FAIR_TICKS[a] for a in fair.ARMS])
        ax.set_xlim(-0.6, len(fair.ARMS) - 0.4)
        ax.set_title(f"{size:,} training images")
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("final test accuracy (%)")
    # one y scale for both sizes (sharey), labelled on each panel so that it reads as one
    for ax in axes[1:]:
        ax.tick_params(labelleft=True)
    # the arms' full names, by colour, in a legend under the panels
    handles = [
        Line2D(
            [], [], color=model_colour(a), marker="o", ms=5, ls="", label=FAIR_LABELS[a]
        )
        for a in fair.ARMS
    ]
    if linear is not None:
        # the reference line named in the legend: at the book's 8.5 pt its name no longer fits
        # between two arms' intervals in the column
        handles.append(
            Line2D([], [], color="0.4", lw=1, ls="--", label="linear on pixels")
        )
    fig.legend(handles=handles, frameon=False, ncol=2, loc="outside lower center")
    return fig


def _curves(arm: str, size: int):
    runs = fair.arm_runs(arm, size)
    if runs is None:
        return None
    steps = runs[0].history.steps_per_epoch
    train = np.mean([[e.train_acc for e in r.history.epochs] for r in runs], axis=0)
    evals = [i for i, e in enumerate(runs[0].history.epochs) if e.val_acc is not None]
    val = np.mean([[r.history.epochs[i].val_acc for i in evals] for r in runs], axis=0)
    return (
        steps * (np.arange(len(train)) + 1),
        train,
        steps * (np.array(evals) + 1),
        val,
    )


#: One marker per arm of :func:`plot_fair_curves`, in the order of the arms.
ARM_MARKERS = ("o", "s", "^", "D", "v", "P")


def plot_fair_curves(size: int = 1000):
    """Figure: mean training accuracy (left) and validation accuracy (right, on its own scale, so
    that curves a few points apart stay apart) of each arm over the steps at ``size`` images,
    each arm in its colour with its own marker (:data:`ARM_MARKERS`); one legend below both
    panels."""
    import matplotlib.pyplot as plt

    fig, (train_ax, val_ax) = plt.subplots(
        1, 2, figsize=(COLUMN_INCHES, 3.4), layout="constrained"
    )
    for k, arm in enumerate(fair.ARMS):
        got = _curves(arm, size)
        if got is None:
            continue
        x, train, xv, val = got
        # a colour and a marker of its own: the GPSA pink and the ConViT violet stay apart
        style = dict(
            lw=1.4, color=model_colour(arm), marker=ARM_MARKERS[k % len(ARM_MARKERS)]
        )
        train_ax.plot(x, 100 * train, ms=4, markevery=max(1, len(x) // 6), **style)
        val_ax.plot(xv, 100 * val, ms=4, label=FAIR_LABELS[arm], **style)
    for ax, what in ((train_ax, "training"), (val_ax, "validation")):
        ax.set_xlabel("optimizer step")
        ax.set_ylabel(f"{what} accuracy (%)")
        ax.set_title(f"({'ab'[ax is val_ax]}) {what}, {size:,} images")
        ax.grid(alpha=0.3)
    fig.legend(loc="outside lower center", ncol=2, frameon=False)
    return fig


def _signed(iv) -> str:
    """``+5.4 [+3.1, +7.7]`` in points, negative numbers with a true minus sign (−) and no
    "−0.0" (:func:`~attnconv.chapters.shared.tables.signed_number`)."""
    ends = (signed_number(100 * x) for x in (iv.estimate, iv.lo, iv.hi))
    return "{} [{}, {}]".format(*ends)


def _p(p: Optional[float]) -> str:
    """A p-value for a table cell: two significant digits, "< 0.001" below that."""
    if p is None:
        return "—"
    return "< 0.001" if p < 0.001 else f"{p:.2g}"


#: Each frozen contrast by its key, in the frozen order: the one lookup the tables use.
FROZEN = {c["key"]: c for c in BEYOND["contrasts"]}


def _pair(key: str) -> tuple:
    """The two arms a frozen contrast compares, (a, b); the key itself if it is not frozen."""
    c = FROZEN.get(key)
    return (c["a"], c["b"]) if c else (key, "")


def _pair_title(pair: tuple, key: str) -> str:
    """A pair of arms in words: the title of the first frozen contrast that compares them."""
    first = next((k for k in FROZEN if _pair(k) == pair), key)
    return CONTRAST_TITLES.get(first, first)


def _points(margin: float) -> str:
    """A margin in points: ``±2 points``."""
    return f"±{100 * margin:g} points"


def _verdict_cell(r, margin: bool = False) -> str:
    """A verdict with Holm's p for its claimed direction, or a dash where no test is asked;
    ``margin``: the contrast's own margin after it (``within ±2 points``)."""
    if r is None:
        return "—"
    within = f", within {_points(r.margin)}" if margin else ""
    return f"{verdict_badge(r.verdict)} (p {_p(r.holm_p)}){within}"


def fair_contrasts_table(results, held_out: Optional[Mapping] = None):
    """One row per pair of arms and size: a − b with its 95 % interval over seeds and test images,
    the per-seed paired t interval, and (``held_out``: contrast key → interval) the same
    difference on the 3,000 held-out training images at 1,000 images. Two verdict columns read
    the one interval: is a above b (superiority), and are a and b level within the margin
    (equivalence)? Each gives its verdict and Holm's adjusted p; a dash where the frozen
    protocol does not ask that question of the pair."""
    by_row: dict = {}  # (a, b, size) -> {kind: result}, in the results' order
    for r in results:
        by_row.setdefault((*_pair(r.key), r.size), {})[r.kind] = r
    # the level question's margin: in the column's head when every contrast shares it, else
    # in each row, each contrast's own
    margins = {r.margin for r in results if r.kind == "equivalence"}
    shared = len(margins) == 1
    margin = f" within {_points(margins.pop())}" if shared else ""
    rows = []
    for (a, b, size), tests in by_row.items():
        first = next(iter(tests.values()))
        extra = None
        if held_out is not None and size == 1000:
            extra = next(
                (held_out[t.key] for t in tests.values() if t.key in held_out), None
            )
        row = [
            _pair_title((a, b), first.key),
            f"{size:,}",
            _signed(first.interval),
            _signed(first.cross_check),
            _verdict_cell(tests.get("superiority")),
            _verdict_cell(tests.get("equivalence"), margin=not shared),
        ]
        if held_out is not None:
            row.insert(3, "—" if extra is None else _signed(extra))
        rows.append(row)
    columns = [
        "contrast (a − b)",
        "images",
        "test, points",
        "per-seed t",
        "a above b? (Holm p)",
        f"a ≈ b{margin}? (Holm p)",
    ]
    if held_out is not None:
        columns.insert(3, "held-out, points")
    return markdown_table(columns, rows, "lr" + "r" * (len(columns) - 4) + "ll")


def _kind(c: Mapping) -> str:
    if c["kind"] == "equivalence":
        return f"equivalence, {_points(c['margin'])}"
    return c["kind"]


#: Contrasts whose frozen source is a later paper's claim they test only in part: what they test.
IN_PART = {
    "convit_start": "ConViT's claim, in part: the start alone. The last row tests the whole "
    "ConViT.",
}


def fair_claims_table(verdicts: Mapping[str, str]):
    """One row per frozen contrast: what it compares, its type, the sizes it names, whose claim it
    tests (quoted source), and its verdict over those sizes."""
    rows = []
    for c in FROZEN.values():
        v = verdicts.get(c["key"], "pending")
        rows.append(
            [
                CONTRAST_TITLES.get(c["key"], c["key"]),
                _kind(c),
                ", ".join(f"{n:,}" for n in c["sizes"]),
                IN_PART.get(c["key"]) or c.get("source") or "the book's question",
                verdict_badge(v) if v in VERDICT_BADGES else v,
            ]
        )
    return markdown_table(
        ["contrast", "type", "images", "claim it tests", "verdict"], rows, "lllll"
    )


def fair_badges(verdicts: Mapping[str, str]) -> str:
    """The contrasts' verdicts as badges with counts (``{bdg-success}`2 reproduced` ...``), in the
    order of :data:`VERDICT_BADGES`; pending contrasts are counted in words."""
    out = []
    for verdict, (role, word) in VERDICT_BADGES.items():
        n = sum(v == verdict for v in verdicts.values())
        if n:
            out.append(f"{{{role}}}`{n} {word}`")
    pending = sum(v not in VERDICT_BADGES for v in verdicts.values())
    if pending:
        out.append(f"{pending} pending")
    return " ".join(out)
