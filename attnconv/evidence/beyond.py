"""Chapter 18's confirmatory results: the frozen contrasts (:data:`attnconv.evidence.protocol.
BEYOND`) judged on the fresh seeds' runs (``beyond3/<arm>/n<size>/seed<k>``), by the one rule's
interval over paired seeds and test images, with Holm's adjustment over the family of (contrast,
size) tests and the per-seed paired t interval as a cross-check. Also the setting's own check
(the fitted regime at 1,000 images) and the linear-on-pixels reference.

Nothing here chooses: arms, sizes, seeds, margins and the rule come from the protocol.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import torch

from ..experiments.registry import RUNS, load_run, run_state
from ..experiments.store import MissingResultError, results_dir
from ..experiments.verdicts import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Interval,
    Side,
    accuracy_interval,
    accuracy_side,
    decide,
    difference_interval,
    paired_seed_interval,
)
from .protocol import BEYOND
from .rule import COMPARISON_ALPHA, SHARE_ALPHA, holm, one_sided_p
from .runs import beyond_run_name

__all__ = [
    "ARMS",
    "SIZES",
    "SEEDS",
    "FIT_GAP",
    "arm_runs",
    "ArmSummary",
    "arm_summary",
    "ContrastResult",
    "contrast_results",
    "claim_verdicts",
    "held_out_side",
    "held_out_contrasts",
    "fitted_regime",
    "LINEAR_FILE",
    "linear_on_pixels",
    "read_linear",
]

ARMS: Tuple[str, ...] = tuple(BEYOND["arms"])
SIZES: Tuple[int, ...] = tuple(BEYOND["sizes"])
SEEDS: Tuple[int, ...] = tuple(BEYOND["seeds"])
#: The fitted regime: training accuracy at least this far above test accuracy at 1,000 images.
FIT_GAP = 0.15


def arm_runs(arm: str, size: int) -> Optional[list]:
    """The saved runs of ``arm`` at ``size`` over the protocol's seeds, or ``None`` while one
    is missing."""
    out = []
    for seed in SEEDS:
        name = beyond_run_name(arm, size, seed)
        if name not in RUNS or run_state(RUNS[name]) != "present":
            return None
        out.append(load_run(name))
    return out


@dataclass(frozen=True)
class ArmSummary:
    """One arm at one size: mean final test accuracy with its 95 % interval over seeds and test
    images, mean final training accuracy, and the seeds."""

    arm: str
    size: int
    test: Interval
    train: float
    seeds: int


def arm_summary(arm: str, size: int) -> Optional[ArmSummary]:
    runs = arm_runs(arm, size)
    if runs is None:
        return None
    side = accuracy_side(runs, arm)
    train = sum(r.history.epochs[-1].train_acc for r in runs) / len(runs)
    return ArmSummary(arm, size, accuracy_interval(side), train, len(runs))


def fitted_regime() -> Dict[str, Tuple[float, bool]]:
    """Per arm at the smaller size: (training − test accuracy, whether it is at least
    :data:`FIT_GAP`)."""
    out = {}
    for arm in ARMS:
        s = arm_summary(arm, min(SIZES))
        if s is not None:
            gap = s.train - s.test.estimate
            out[arm] = (gap, gap >= FIT_GAP)
    return out


@dataclass
class ContrastResult:
    """One contrast at one size: the interval of a − b, the verdict of the one rule, the
    one-sided p-value of the test that reproduces it, Holm's adjusted value and the verdict
    with it (the reported one), and the per-seed paired t interval (the cross-check)."""

    key: str
    size: int
    kind: str
    margin: Optional[float]
    interval: Interval
    unadjusted: str
    reason: str
    p: Optional[float]
    cross_check: Interval
    holm_p: Optional[float] = None
    verdict: str = INCONCLUSIVE


def _contrast(c: dict, size: int) -> Optional[ContrastResult]:
    a, b = arm_runs(c["a"], size), arm_runs(c["b"], size)
    if a is None or b is None:
        return None
    iv = difference_interval(accuracy_side(a, c["a"]), accuracy_side(b, c["b"]))
    verdict, reason = decide(c["kind"], iv, c["margin"])
    p = (
        one_sided_p(c["kind"], iv.estimate, iv.se, iv.df, c["margin"])
        if iv.se > 0
        else None
    )
    t = paired_seed_interval(
        [r.history.epochs[-1].test_acc for r in a],
        [r.history.epochs[-1].test_acc for r in b],
    )
    return ContrastResult(
        c["key"], size, c["kind"], c["margin"], iv, verdict, reason, p, t
    )


def contrast_results() -> List[ContrastResult]:
    """Every (contrast, size) whose runs are saved, with Holm's adjustment over them: a
    *reproduced* of the one rule stands only when its adjusted p is below 5 % (on the 5 %
    scale: p × 2 for a comparison at one-sided 2.5 %); a *not reproduced* stands as the rule
    gives it."""
    results = [
        r
        for c in BEYOND["contrasts"]
        for size in c["sizes"]
        if (r := _contrast(c, size)) is not None
    ]
    tested = {f"{r.key}@{r.size}": r for r in results if r.p is not None}
    adjusted = holm(
        {k: r.p for k, r in tested.items()}, {k: COMPARISON_ALPHA for k in tested}
    )
    for r in results:
        r.holm_p = adjusted.get(f"{r.key}@{r.size}")
        held = r.holm_p is not None and r.holm_p < SHARE_ALPHA
        r.verdict = (
            r.unadjusted if (r.unadjusted != REPRODUCED or held) else INCONCLUSIVE
        )
    return results


def claim_verdicts(results: List[ContrastResult]) -> Dict[str, str]:
    """Each contrast's verdict over the sizes it names: reproduced when reproduced at every one,
    not reproduced when not reproduced at one, inconclusive otherwise (pending while a size
    lacks its runs)."""
    out = {}
    for c in BEYOND["contrasts"]:
        got = [r.verdict for r in results if r.key == c["key"]]
        if len(got) < len(c["sizes"]):
            out[c["key"]] = "pending"
        elif all(v == REPRODUCED for v in got):
            out[c["key"]] = REPRODUCED
        elif any(v == NOT_REPRODUCED for v in got):
            out[c["key"]] = NOT_REPRODUCED
        else:
            out[c["key"]] = INCONCLUSIVE
    return out


# --------------------------------------------------------------------------- held-out images
def held_out_side(arm: str, size: int = 1000) -> Optional[Side]:
    """The runs of ``arm`` at ``size`` measured on the 3,000 training images they left out
    (images 1,000-3,999; the ``held-out`` study of each run), as a :class:`Side` with each seed's
    right/wrong per image; ``None`` while a run or its study is missing."""
    from ..experiments.data import load_cifar10
    from ..experiments.studies import study_entry
    from ..experiments.train_step import decode_predictions
    from .runs import HELD_OUT

    runs = arm_runs(arm, size)
    if runs is None:
        return None
    labels = None
    values, correct = [], []
    for seed in SEEDS:
        try:
            got = study_entry(f"{beyond_run_name(arm, size, seed)}/held-out").read()
        except (KeyError, MissingResultError, FileNotFoundError):
            return None
        if labels is None:
            data = load_cifar10(runs[0].config.data, verbose=False)
            labels = [int(v) for v in data.y_train[HELD_OUT[0] : HELD_OUT[1]]]
        pred = decode_predictions(got["predictions"])
        values.append(got["accuracy"])
        correct.append([int(p == y) for p, y in zip(pred, labels)])
    return Side(values, correct, len(labels), arm)


def held_out_contrasts() -> List[Tuple[str, Interval]]:
    """Every contrast that names 1,000 images, measured again on the 3,000 held-out training
    images (a − b with the one rule's interval over seeds and images): reported beside the
    verdict, which the protocol reads on the test set."""
    out = []
    for c in BEYOND["contrasts"]:
        if 1000 not in c["sizes"]:
            continue
        a, b = held_out_side(c["a"]), held_out_side(c["b"])
        if a is not None and b is not None:
            out.append((c["key"], difference_interval(a, b)))
    return out


# --------------------------------------------------------------------------- linear reference
LINEAR_FILE = "beyond3/linear-pixels.json"
#: Weight decays tried for the linear reference, chosen on the validation images.
_DECAYS = (1e-4, 1e-3, 1e-2)


def _fit_linear(x: torch.Tensor, y: torch.Tensor, decay: float) -> torch.nn.Linear:
    """Multinomial logistic regression on ``x`` by full-batch L-BFGS (200 iterations)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(x.shape[1], 10).double()
    opt = torch.optim.LBFGS(
        model.parameters(), max_iter=200, line_search_fn="strong_wolfe"
    )

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss = loss + decay * model.weight.pow(2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return model


def linear_on_pixels() -> dict:
    """The reference line: a linear classifier on raw pixels (standardised per feature on the
    training images) at each size, its weight decay chosen on the validation images, test read
    once. Written to ``book/results/beyond3/linear-pixels.json``."""
    from ..experiments.data import load_cifar10

    data = load_cifar10("sample", verbose=False)
    flat = lambda t: t.reshape(len(t), -1).double() / 255.0  # noqa: E731
    n_val = 1000
    xv, yv = flat(data.x_train[-n_val:]), data.y_train[-n_val:]
    xt, yt = flat(data.x_test), data.y_test
    out = {"sizes": {}, "decays": list(_DECAYS)}
    for size in SIZES:
        x, y = flat(data.x_train[:size]), data.y_train[:size]
        mu, sd = x.mean(0), x.std(0).clamp_min(1e-6)
        norm = lambda t: (t - mu) / sd  # noqa: E731
        val = {}
        for d in _DECAYS:
            m = _fit_linear(norm(x), y, d)
            val[d] = float((m(norm(xv)).argmax(1) == yv).double().mean())
        best = max(_DECAYS, key=lambda d: (val[d], -d))
        m = _fit_linear(norm(x), y, best)
        test = float((m(norm(xt)).argmax(1) == yt).double().mean())
        out["sizes"][str(size)] = {
            "validation": {f"{d:g}": v for d, v in val.items()},
            "decay": best,
            "test": test,
        }
    path = results_dir() / LINEAR_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return out


def read_linear() -> dict:
    path = results_dir() / LINEAR_FILE
    if not path.is_file():
        raise MissingResultError(
            f"book/results/{LINEAR_FILE} is missing; make it with: python -m "
            "attnconv.regenerate --only results/beyond3-linear-pixels"
        )
    return json.loads(path.read_text())


def _register() -> None:
    from ..experiments.studies import STUDIES, StudyEntry, register_study

    if "results/beyond3-linear-pixels" not in STUDIES:
        register_study(
            StudyEntry(
                "results/beyond3-linear-pixels",
                f"results/{LINEAR_FILE}",
                (),
                linear_on_pixels,
                read_linear,
                description="chapter 18's reference: a linear classifier on raw pixels",
            )
        )


_register()
