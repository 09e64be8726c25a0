"""The headline comparison on the fresh seeds: the test accuracy of each six-layer arm of the
frozen protocol on its confirmatory seeds, beside the tuned ResNet18 (ch. 12). Reads the saved
runs only (:func:`attnconv.evidence.judge.arm_runs`); each arm's mean carries the 95 % interval
of the one rule (:func:`~attnconv.experiments.verdicts.accuracy_interval`). Nothing is judged
here: the verdicts are the judge's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Sequence, Tuple

from ..evidence.judge import arm_runs
from ..evidence.protocol import CONFIRMATORY_SEEDS
from ..experiments.verdicts import accuracy_interval, accuracy_side

__all__ = ["ARM_ORDER", "ArmAccuracy", "fresh_accuracies", "plot_fresh_accuracy"]

#: The arms in the figure's order: the four six-layer models, then the ResNet18 beside them.
ARM_ORDER: Tuple[str, ...] = (
    "quadratic",
    "quadratic-16heads",
    "learned",
    "generalized",
    "resnet18",
)
_LABELS = {
    "quadratic": "quadratic",
    "quadratic-16heads": "quadratic,\n16 heads",
    "learned": "learned",
    "generalized": "generalized",
    "resnet18": "ResNet18\n(tuned)",
}


@dataclass(frozen=True)
class ArmAccuracy:
    """One arm's final test accuracy per fresh seed (``seeds``, ``values``), its mean and the
    rule's 95 % interval of the mean (``lo``, ``hi``)."""

    arm: str
    seeds: Tuple[int, ...]
    values: Tuple[float, ...]
    mean: float
    lo: float
    hi: float


def fresh_accuracies(
    arms: Sequence[str] = ARM_ORDER, seeds: Sequence[int] = CONFIRMATORY_SEEDS
) -> Dict[str, ArmAccuracy]:
    """Each arm of ``arms`` whose runs at every one of ``seeds`` are saved: its
    :class:`ArmAccuracy` (an arm still missing a seed is left out)."""
    out = {}
    for arm in arms:
        runs: Optional[list] = arm_runs(arm, seeds)
        if runs is None:
            continue
        side = accuracy_side(runs, arm)
        iv = accuracy_interval(side)
        out[arm] = ArmAccuracy(
            arm, tuple(seeds), tuple(side.values), iv.estimate, iv.lo, iv.hi
        )
    return out


def plot_fresh_accuracy(accuracies: Dict[str, ArmAccuracy], note: str = ""):
    """Test accuracy of each arm on its fresh seeds: one dot per seed (spread sideways by seed),
    the mean as a bar with its 95 % interval beside them, in the arm's book colour; a dashed
    line at the ResNet18's mean, where there is one; ``note`` (the judge's words on a
    comparison) in the empty space above the six-layer arms. Returns the figure."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MultipleLocator

    from .shared.plotting import COLUMN_INCHES, model_colour

    fig, ax = plt.subplots(figsize=(COLUMN_INCHES * 0.8, 2.9), constrained_layout=True)
    arms = [a for a in ARM_ORDER if a in accuracies] + [
        a for a in accuracies if a not in ARM_ORDER
    ]
    if "resnet18" in accuracies:
        ax.axhline(
            100 * accuracies["resnet18"].mean, color="0.6", ls="--", lw=0.8, zorder=0
        )
    for i, arm in enumerate(arms):
        a = accuracies[arm]
        colour = model_colour(arm)
        n = len(a.values)
        xs = [i - 0.28 + 0.3 * j / max(n - 1, 1) for j in range(n)]
        ax.plot(xs, [100 * v for v in a.values], "o", color=colour, ms=3.5, alpha=0.8)
        ax.errorbar(
            i + 0.2,
            100 * a.mean,
            yerr=[[100 * (a.mean - a.lo)], [100 * (a.hi - a.mean)]],
            fmt="_",
            color=colour,
            ms=12,
            mew=2,
            elinewidth=1.6,
            capsize=3,
        )
    ax.set_xticks(range(len(arms)), [_LABELS.get(a, a) for a in arms])
    ax.set_xlim(-0.6, len(arms) - 0.4)
    ax.set_ylabel("test accuracy (%)")
    ax.yaxis.set_major_locator(MultipleLocator(5))
    if note:
        ax.text(0.02, 0.74, note, transform=ax.transAxes, ha="left", va="top")
    ax.spines[["top", "right"]].set_visible(False)
    return fig
