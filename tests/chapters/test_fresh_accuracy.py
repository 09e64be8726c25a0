"""Figure 12.4: each arm's fresh seeds as plotted, against their histories read plainly from
book/runs/confirm/<arm>/seed<k>/history.json; the mean and its interval by the one rule."""

import json
import math
from pathlib import Path

import pytest

from attnconv.chapters import fresh_accuracy as fa
from attnconv.evidence.protocol import CONFIRMATORY_SEEDS

RUNS = Path(__file__).resolve().parents[2] / "book" / "runs" / "confirm"


def _plain(arm):
    """The last epoch's test accuracy of each fresh seed, from the history file itself."""
    out = []
    for seed in CONFIRMATORY_SEEDS:
        path = RUNS / arm / f"seed{seed}" / "history.json"
        if not path.is_file():
            return None
        out.append(json.loads(path.read_text())["epochs"][-1]["test_acc"])
    return out


@pytest.fixture(scope="module")
def accuracies():
    return fa.fresh_accuracies()


def test_the_plotted_seeds_are_the_histories(accuracies):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    assert accuracies, "no arm has all its fresh seeds"
    fig = fa.plot_fresh_accuracy(accuracies, "a note")
    ax = fig.axes[0]
    dots = [line for line in ax.lines if line.get_marker() == "o"]
    assert len(dots) == len(accuracies)
    for line, arm in zip(dots, [a for a in fa.ARM_ORDER if a in accuracies]):
        plain = _plain(arm)
        assert plain is not None
        assert list(line.get_ydata()) == pytest.approx([100 * v for v in plain])
        a = accuracies[arm]
        # the mean, inside its interval, is the plain mean of the seeds
        assert a.mean == pytest.approx(sum(plain) / len(plain))
        assert a.lo < a.mean < a.hi
    texts = [t.get_text() for t in ax.texts]
    assert "a note" in texts
    plt.close(fig)


def test_the_interval_is_at_least_the_seeds_own_t_interval(accuracies):
    """The rule's interval of a mean accuracy adds the test images' term to the seeds' s²/n,
    so it is never narrower than the seeds' t interval alone (t₀.₉₇₅ with 7 df = 2.365)."""
    for arm, a in accuracies.items():
        n = len(a.values)
        s2 = sum((v - a.mean) ** 2 for v in a.values) / (n - 1)
        half = 2.3646 * math.sqrt(s2 / n) if n == 8 else 0.0
        assert (a.hi - a.lo) / 2 >= half - 1e-9, arm
