"""The one rule (attnconv.experiments.verdicts): every case of the verdict pinned on synthetic
data with a known answer, the interval against plain-loop oracles, and a coverage simulation."""

import math

import numpy as np
import pytest

from attnconv.experiments import verdicts as v
from attnconv.experiments.claims import CLAIMS


def test_t_quantile_against_published_tables():
    # Student's t, two-sided 95 % (any statistics table)
    for df, want in ((1, 12.7062), (2, 4.3027), (4, 2.7764), (8, 2.3060), (30, 2.0423)):
        assert v.t_quantile(0.975, df) == pytest.approx(want, abs=1e-4)
    assert v.t_quantile(0.975, math.inf) == pytest.approx(1.959964, abs=1e-6)


def test_mcnemar_exact_against_a_plain_binomial_sum():
    for b, c in ((10, 2), (0, 0), (7, 7), (3, 20), (50, 30)):
        n, k = b + c, min(b, c)
        tail = sum(
            math.factorial(n) / (math.factorial(i) * math.factorial(n - i))
            for i in range(k + 1)
        )
        assert v.mcnemar_p(b, c) == pytest.approx(min(1.0, 2 * tail / 2**n), rel=1e-12)
    assert v.mcnemar_p(10, 2) == pytest.approx(0.0386, abs=1e-4)


def _predictions(n, b, c, both_right):
    """Labels all 0; a right only on b images, b right only on c images, both right on
    ``both_right``, both wrong on the rest."""
    labels = [0] * n
    pa, pb = [1] * n, [1] * n
    i = 0
    for _ in range(b):
        pa[i] = 0
        i += 1
    for _ in range(c):
        pb[i] = 0
        i += 1
    for _ in range(both_right):
        pa[i] = pb[i] = 0
        i += 1
    return pa, pb, labels


def test_same_model_interval_is_the_paired_difference_and_mcnemar():
    pa, pb, labels = _predictions(1000, 30, 10, 500)
    iv = v.same_model_interval(pa, pb, labels)
    d = [int(x == y) - int(z == y) for x, z, y in zip(pa, pb, labels)]
    mean = sum(d) / 1000
    var = (
        sum((x - mean) ** 2 for x in d) / 1000 / 1000
    )  # plain loop, population variance / n
    assert iv.estimate == pytest.approx(0.02)
    assert iv.se == pytest.approx(math.sqrt(var), rel=1e-12)
    assert iv.p_value == pytest.approx(v.mcnemar_p(30, 10))
    assert v.judge_same_model(v.SUPERIORITY, pa, pb, labels)[0] == v.REPRODUCED


def _iv(lo, hi, known=True, p=None):
    est = (lo + hi) / 2
    return v.Interval(
        est, lo, hi, (hi - lo) / 4, 30.0, 0.7 * (hi - lo), v.PAIRED, (5, 5), known, p
    )


@pytest.mark.parametrize(
    "kind, margin, lo, hi, want",
    [
        (v.SUPERIORITY, None, 0.01, 0.05, v.REPRODUCED),
        (v.SUPERIORITY, None, -0.05, -0.01, v.NOT_REPRODUCED),
        (v.SUPERIORITY, None, -0.01, 0.03, v.INCONCLUSIVE),
        (
            v.SUPERIORITY,
            0.05,
            0.038,
            0.072,
            v.INCONCLUSIVE,
        ),  # "over 5 points": not established
        (v.SUPERIORITY, 0.05, 0.055, 0.08, v.REPRODUCED),
        (v.SUPERIORITY, 0.05, 0.01, 0.04, v.NOT_REPRODUCED),
        (v.NON_INFERIORITY, 0.02, -0.015, 0.03, v.REPRODUCED),
        (v.NON_INFERIORITY, 0.02, -0.06, -0.025, v.NOT_REPRODUCED),
        (v.NON_INFERIORITY, 0.02, -0.04, 0.01, v.INCONCLUSIVE),
        (v.EQUIVALENCE, 0.01, -0.008, 0.009, v.REPRODUCED),
        (v.EQUIVALENCE, 0.01, 0.012, 0.03, v.NOT_REPRODUCED),
        (v.EQUIVALENCE, 0.01, -0.03, -0.011, v.NOT_REPRODUCED),
        (v.EQUIVALENCE, 0.01, -0.02, 0.005, v.INCONCLUSIVE),
    ],
)
def test_every_case_of_the_verdict(kind, margin, lo, hi, want):
    verdict, reason = v.decide(kind, _iv(lo, hi), margin)
    assert verdict == want
    assert "95 % interval" in reason
    if want == v.INCONCLUSIVE:
        assert "could detect a difference of about" in reason


def test_one_seed_on_a_side_is_inconclusive_never_support():
    a = v.Side((0.60, 0.61, 0.62), None, 1017)
    b = v.Side((0.50,), None, 1017)
    iv = v.difference_interval(a, b)
    assert (
        not iv.seed_term_known and iv.lo > 0
    )  # the image-only interval excludes 0 ...
    verdict, reason = v.decide(v.SUPERIORITY, iv)
    assert (
        verdict == v.INCONCLUSIVE and "spread over seeds is unknown" in reason
    )  # ... no verdict


def test_a_test_that_cannot_see_a_difference_does_not_support_no_difference():
    # two noisy 3-seed series 0.2 points apart: "similar" (±1 point) cannot be shown
    a = v.Side((0.55, 0.60, 0.65), None, 1017)
    b = v.Side((0.548, 0.598, 0.648), None, 1017)
    verdict, _, iv = v.judge(CLAIMS["no_gain"], a, b)
    assert verdict == v.INCONCLUSIVE and iv.lo < -0.01 < 0.01 < iv.hi


def test_paired_is_narrower_than_unpaired_on_correlated_sides_and_says_which():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.2, 0.9, 1017)
    u = rng.random((5, 1017))
    a_c = (u < p[None] + 0.03).astype(int)
    b_c = (u < p[None]).astype(int)  # same draws: strongly correlated
    paired = v.difference_interval(
        v.Side(a_c.mean(1), a_c, 1017), v.Side(b_c.mean(1), b_c, 1017)
    )
    unpaired = v.difference_interval(
        v.Side(a_c.mean(1), None, 1017), v.Side(b_c.mean(1), None, 1017)
    )
    assert paired.method == v.PAIRED and unpaired.method == v.UNPAIRED
    assert paired.estimate == pytest.approx(unpaired.estimate)
    assert paired.se < unpaired.se / 2
    assert "paired" in paired.format() and "conservative" in unpaired.format()


def test_seed_term_is_welch_on_exact_properties():
    a, b = v.exact_side([4.1, 4.3, 4.4]), v.exact_side([2.1, 2.5, 2.7])
    iv = v.difference_interval(a, b)
    va, vb = np.var([4.1, 4.3, 4.4], ddof=1) / 3, np.var([2.1, 2.5, 2.7], ddof=1) / 3
    df = (va + vb) ** 2 / (va**2 / 2 + vb**2 / 2)
    assert iv.method == v.SEEDS_ONLY
    assert iv.se == pytest.approx(math.sqrt(va + vb))
    assert iv.df == pytest.approx(df)
    assert iv.hi - iv.estimate == pytest.approx(
        v.t_quantile(0.975, df) * math.sqrt(va + vb)
    )


def test_existence_names_its_threshold_and_when_the_verdict_changes():
    peaks = {"seed 0": 0.81, "seed 1": 0.67, "seed 2": 0.45}
    verdict, reason = v.judge_existence(
        peaks, 0.5, (0.5, 0.9), "largest probability on one key"
    )
    assert verdict == v.REPRODUCED
    assert (
        "above 0.5" in reason and "changes at the book's other threshold 0.9" in reason
    )
    assert v.judge_existence({"a": 0.95}, 0.5, (0.5, 0.9))[1].count("changes") == 0
    assert v.judge_existence({"a": 0.3}, 0.5)[0] == v.NOT_REPRODUCED
    assert v.judge_existence({}, 0.5, off_setting={"x": 0.9})[0] == v.INCONCLUSIVE


def _simulate(rng, na, nb, n_images, delta, paired):
    p = rng.uniform(
        0.35, 0.85, n_images
    )  # the images' difficulty, shared by both sides

    def side(n, shift):
        s = rng.normal(0, 0.02, n)  # the seeds' spread
        c = (rng.random((n, n_images)) < p[None] + shift + s[:, None]).astype(int)
        return v.Side(tuple(c.mean(1)), c if paired else None, n_images)

    return v.difference_interval(side(na, delta / 2), side(nb, -delta / 2))


def test_the_interval_covers_the_true_difference_about_95_percent():
    rng = np.random.default_rng(31)  # fixed: the same draws on every machine
    reps, delta = 300, 0.03
    hits = 0
    for _ in range(reps):
        iv = _simulate(rng, 5, 5, 300, delta, True)
        hits += iv.lo < delta < iv.hi
    # 300 draws: a binomial standard error of 1.3 %
    assert 0.92 <= hits / reps <= 0.98, hits / reps
    unpaired = sum(
        (lambda iv: iv.lo < delta < iv.hi)(_simulate(rng, 5, 5, 300, delta, False))
        for _ in range(100)
    )
    assert unpaired / 100 >= 0.95  # the fallback is conservative


def test_paired_seed_interval_is_the_one_sample_t_interval():
    a, b = [4.1, 4.4, 4.2, 4.6], [2.0, 2.5, 2.1, 2.2]
    d = np.subtract(a, b)
    iv = v.paired_seed_interval(a, b)
    half = v.t_quantile(0.975, 3) * d.std(ddof=1) / 2
    assert (iv.lo, iv.hi) == pytest.approx((d.mean() - half, d.mean() + half))
    assert iv.method == v.SEEDS_PAIRED and "4 seeds" in iv.format(1.0, "")
    assert not v.paired_seed_interval([5.0], [1.0]).seed_term_known


def test_accuracy_side_pairs_only_when_every_run_kept_its_predictions():
    labels = v.test_labels("sample")
    rng = np.random.default_rng(0)

    def history(p, keep=True):
        pred = [c if rng.random() < p else (c + 1) % 10 for c in labels]
        acc = sum(x == c for x, c in zip(pred, labels)) / len(labels)
        last = {"test_acc": acc}
        if keep:
            last["test_predictions"] = "".join(map(str, pred))
        return {
            "config": {"data": "sample"},
            "test_size": len(labels),
            "epochs": [last],
        }

    a = v.accuracy_side([history(0.6), history(0.62)])
    assert a.correct is not None and a.values[0] == pytest.approx(np.mean(a.correct[0]))
    b = v.accuracy_side([history(0.5), history(0.52, keep=False)])
    assert b.correct is None  # one run without predictions: the side falls back
    assert v.difference_interval(a, b).method == v.UNPAIRED
    c = v.accuracy_side([history(0.5), history(0.52)])
    assert v.difference_interval(a, c).method == v.PAIRED


def test_accuracy_interval_of_one_seed_is_the_t_interval_over_images():
    """One seed: only the test images vary; the oracle is the one-sample t interval of the
    run's right/wrong over its images, written out."""
    right = (np.random.default_rng(0).random(1017) < 0.4).astype(int)
    iv = v.accuracy_interval(v.Side((right.mean(),), right[None], 1017))
    half = v.t_quantile(0.975, 1016) * right.std(ddof=1) / math.sqrt(1017)
    assert iv.estimate == pytest.approx(right.mean())
    assert (iv.lo, iv.hi) == pytest.approx((right.mean() - half, right.mean() + half))
    assert not iv.seed_term_known and iv.method == v.PAIRED
    binomial = v.accuracy_interval(v.Side((right.mean(),), None, 1017))
    assert binomial.method == v.UNPAIRED and binomial.hi - binomial.lo == pytest.approx(
        iv.hi - iv.lo, rel=1e-3
    )
    with pytest.raises(ValueError, match="test images"):
        v.accuracy_interval(v.exact_side([1.0, 2.0]))


def test_accuracy_interval_covers_the_true_accuracy_about_95_percent():
    """Seeds and images both drawn anew each time (images of difficulty uniform on
    [0.35, 0.85], seeds shifting every image by N(0, 0.02)): the true accuracy is 0.6."""
    rng = np.random.default_rng(18)  # fixed: the same draws on every machine
    reps, hits = 300, 0
    for _ in range(reps):
        p = rng.uniform(0.35, 0.85, 300)
        seeds = rng.normal(0, 0.02, 4)
        c = (rng.random((4, 300)) < p[None] + seeds[:, None]).astype(int)
        iv = v.accuracy_interval(v.Side(tuple(c.mean(1)), c, 300))
        hits += iv.lo < 0.6 < iv.hi
    assert 0.92 <= hits / reps <= 0.98, hits / reps


def test_one_run_on_a_side_prints_no_interval():
    """A degenerate interval ([+3.00, +3.00]) is not printed: one run on a side says so."""
    one = v.difference_interval(v.exact_side([3.0]), v.exact_side([0.0]))
    text = one.format(1.0, " heads", 2)
    assert text == "+3.00 heads (1 v 1 seed; one run on a side: no interval)"
    assert "CI" not in v.paired_seed_interval([4.0], [0.0]).format(1.0, "", 2)
    assert "(1 seed; one run: no interval)" in v.paired_seed_interval(
        [4.0], [0.0]
    ).format(1.0, "", 2)
    three = v.difference_interval(v.exact_side([3.0, 4.0, 5.0]), v.exact_side([0.0]))
    assert three.format(1.0, "")[
        -len("(3 v 1 seeds; one run on a side: no interval)") :
    ] == ("(3 v 1 seeds; one run on a side: no interval)")
    two = v.difference_interval(v.exact_side([3.0, 4.0]), v.exact_side([0.0, 1.0]))
    assert "95 % interval [" in two.format(1.0, "") and "2 v 2 seeds" in two.format(
        1.0, ""
    )


def test_intervals_print_a_true_minus_sign():
    """Negative numbers of an interval carry the book's minus sign (U+2212), never "-"; zero
    prints as +0.0, not −0.0."""
    iv = v.difference_interval(v.exact_side([0.0, 1.0]), v.exact_side([3.0, 3.5]))
    text = iv.format(1.0, " heads", 1)
    assert (
        text.startswith("−2.8 heads, 95 % interval [−")
        and "-" not in text.split(" (")[0]
    )
    one = v.difference_interval(v.exact_side([0.0]), v.exact_side([3.0]))
    assert one.format(1.0, " heads", 2).startswith("−3.00 heads (")
    zero = v.difference_interval(v.exact_side([1.0, 2.0]), v.exact_side([1.0, 2.0]))
    assert zero.format(1.0, "").startswith("+0.0, 95 % interval")


def test_existence_reasons_count_runs_in_words():
    """No "run(s)" template: one run is "the one run", several are "k of n runs"."""
    _, one = v.judge_existence({"a": 0.8}, 0.5, (0.9,))
    assert one.startswith("the one run at the claim's setting has")
    assert "its one run is not above it" in one
    _, none = v.judge_existence({"a": 0.2}, 0.5)
    assert none.startswith("the one run at the claim's setting does not have")
    _, some = v.judge_existence({"a": 0.8, "b": 0.2, "c": 0.1}, 0.5, (0.9,))
    assert some.startswith("1 of 3 runs at the claim's setting has")
    assert "(0 of 3 runs above it)" in some
    for reason in (one, none, some):
        assert "(s)" not in reason
    assert v.plural(1) == "1 run" and v.plural(2, "seed") == "2 seeds"
