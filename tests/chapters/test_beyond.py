"""Chapter 18's reading of the runs: its intervals and verdicts by the book's one rule, and the
claims judged from (stand-in) runs."""

from types import SimpleNamespace

import numpy as np

from attnconv.chapters import beyond
from attnconv.experiments.store import History
from attnconv.experiments.verdicts import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    PAIRED,
    REPRODUCED,
    accuracy_interval,
    accuracy_side,
    difference_interval,
)
from attnconv.experiments.verdicts import test_labels as sample_labels

N = 1017


def test_gain_verdict_is_the_one_rule():
    from attnconv.experiments.verdicts import Side, difference_interval

    base = [0.40, 0.41, 0.42]
    verdict, reason = beyond.gain_verdict([0.48, 0.49, 0.50], base)
    assert verdict == REPRODUCED and "unpaired (conservative), 3 v 3 seeds" in reason
    iv = difference_interval(
        Side((0.48, 0.49, 0.50), None, 1017), Side(tuple(base), None, 1017)
    )
    assert f"[{100 * iv.lo:+.1f}, {100 * iv.hi:+.1f}]" in reason
    # a gain of 2 points within the noise: inconclusive, with what the runs could detect
    verdict, reason = beyond.gain_verdict([0.425, 0.43, 0.435], base)
    assert verdict == INCONCLUSIVE and "could detect" in reason
    assert beyond.gain_verdict([0.30, 0.31, 0.32], base)[0] == NOT_REPRODUCED
    # "over 5 points": an interval reaching below 5 points does not establish it ...
    assert beyond.gain_verdict([0.48, 0.49, 0.50], base, claimed_gain=0.05)[0] == (
        INCONCLUSIVE
    )
    # ... one wholly below it is against it, one wholly above it reproduces it
    assert beyond.gain_verdict([0.40, 0.41, 0.42], base, claimed_gain=0.05)[0] == (
        NOT_REPRODUCED
    )
    assert beyond.gain_verdict([0.58, 0.59, 0.60], base, claimed_gain=0.05)[0] == (
        REPRODUCED
    )
    # one seed on a side: the seed term is unknown, no verdict
    verdict, reason = beyond.gain_verdict([0.60], base)
    assert verdict == INCONCLUSIVE and "unknown" in reason


def _run(seed, accuracy, labels, rng):
    """A saved run of the sample's test images whose predictions are right with probability
    ``accuracy`` (the rule reads the test labels from the data, as for a real run)."""
    right = rng.random(N) < accuracy
    predictions = np.where(right, labels, (labels + 1) % 10)
    history = History.from_json(
        {
            "config": {"data": "sample", "seed": seed},
            "test_size": N,
            "epochs": [
                {
                    "epoch": 1,
                    "test_acc": float(right.mean()),
                    "train_acc": 0.9,
                    "test_predictions": "".join(map(str, predictions)),
                }
            ],
        }
    )
    return SimpleNamespace(config=SimpleNamespace(seed=seed), history=history)


def test_claims_are_judged_from_the_runs_with_their_intervals():
    rng = np.random.default_rng(2)
    labels = np.array(sample_labels("sample", None))
    exp = beyond.Experiment()
    accuracy = {
        "vit": 0.30,
        "random": 0.30,
        "convit": 0.45,
        "impulse": 0.30,
        "mimetic": 0.22,
    }
    for start, acc in accuracy.items():
        for size in (510, 1700, 5085):
            exp.runs[(start, size)] = [_run(s, acc, labels, rng) for s in range(4)]
    claims = {c.source.split(" ")[0]: c for c in beyond.later_claims(exp)}
    assert claims["d'Ascoli"].verdict == REPRODUCED
    assert "paired" in claims["d'Ascoli"].evidence[0].measured
    assert claims["Li"].verdict == INCONCLUSIVE
    assert claims["Trockman"].verdict == NOT_REPRODUCED  # 8 points below
    d = beyond.paired_difference(exp, "convit", "vit", 510)
    assert d[3] == 4 and d[1] > 0.10 and d[2] < 0.20
    convit, vit = exp.runs[("convit", 510)], exp.runs[("vit", 510)]
    iv = difference_interval(accuracy_side(convit), accuracy_side(vit))
    assert d[:3] == (iv.estimate, iv.lo, iv.hi) and iv.method == PAIRED
    row = {(r.start, r.size): r for r in beyond.summaries(exp)}[("convit", 510)]
    one = accuracy_interval(accuracy_side(convit))
    assert row.test == (one.estimate, one.lo, one.hi) and one.lo < 0.45 < one.hi
    assert beyond.paired_difference(exp, "convit", "nothing", 510) is None
    empty = beyond.later_claims(beyond.Experiment())
    assert all(c.verdict == INCONCLUSIVE for c in empty)  # nothing saved


def test_later_claims_quote_no_citation_as_an_elision_and_name_what_is_not_tested():
    """ConViT's abstract has a citation key after "DeiT", not words: the quote is the part the
    chapter tests, its subject named outside the quote; Li et al.'s trained-CNN conversion is
    named as not tested."""
    claims = {
        c.source.split(" ")[0]: c for c in beyond.later_claims(beyond.Experiment())
    }
    convit = claims["d'Ascoli"]
    assert convit.quote == "while offering a much improved sample efficiency"
    assert "ConViT" in convit.source and "DeiT" in convit.source
    assert all("[...]" not in c.quote for c in claims.values())
    assert "Not tested" in claims["Li"].test and "trained CNN" in claims["Li"].test


def test_heads_figure_has_plain_width_ticks_distinct_colours_and_its_legend_apart():
    """Figure 18.3: the width panel's ticks are plain numbers (0, 0.1, 0.3, …), every start has
    its own colour, and the legend sits below the panels, not on a curve."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = 10 * np.arange(4)
    widths = np.array([[0.0, 0.0], [0.05, 0.05], [0.2, 0.1], [0.3, 0.2]])
    heads = {
        start: {
            "steps": steps,
            "gate": np.full((4, 2), 0.7),
            "alpha": widths + (3.0 if start == "impulse" else 0.0),
            "reach": np.ones((4, 2)),
        }
        for start in beyond.GPSA_STARTS
    }
    fig = beyond.plot_heads_over_training(heads)
    fig.canvas.draw()
    ticks = [t.get_text() for t in fig.axes[1].get_yticklabels()]
    assert ticks == ["0", "0.1", "0.3", "1", "3"]
    assert len({beyond.COLOURS[s] for s in beyond.GPSA_STARTS}) == len(
        beyond.GPSA_STARTS
    )
    assert all(ax.get_legend() is None for ax in fig.axes) and len(fig.legends) == 1
    legend = fig.legends[0].get_window_extent()
    assert all(legend.y1 <= ax.get_window_extent().y0 for ax in fig.axes)
    plt.close(fig)
