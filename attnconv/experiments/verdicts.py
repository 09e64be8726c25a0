"""Verdicts on the paper's experimental claims, and the spread of a result over seeds.

The book's one rule for a verdict on an experimental claim of the paper (arXiv v1 numbering):

1. **quote** the claim as the paper writes it (:attr:`Claim.quote`, with :attr:`Claim.source`);
2. **test it as written** (:attr:`Claim.test`) — an existence claim ("some of the heads ... seem to
   be redundant") is tested for existence; a stronger or comparative reading is a separate claim;
3. gather the **evidence of every run** of the book that bears on it (2-layer and 6-layer runs,
   every seed): :attr:`Claim.evidence`, one :class:`Evidence` row per run;
4. give one of three verdicts (:data:`VERDICTS`): *reproduced at CPU scale*, *not reproduced at
   CPU scale*, or *inconclusive*, always with the reason (:attr:`Claim.reason`).

"Does not hold", "contradicts" and "wrong" are kept for statements that a proof or an exact check
refutes; those are errata, not verdicts of this kind, and :class:`Claim` refuses such words.

**The one rule.** Every verdict of the book on a comparison goes through :func:`judge` (two sides
of runs: :func:`accuracy_side`, :func:`exact_side`) or :func:`judge_same_model` (one model
against itself on the same test images), and :func:`decide`: the 95 % confidence interval of the
difference a − b (:func:`difference_interval`) carries both sources of noise — the seeds
(Welch–Satterthwaite over the seed variances) and the test images (paired, when every run of both
sides kept its per-image predictions: the same images cancel; else a conservative unpaired
binomial term, labelled so); a same-model ablation uses the paired difference of its two
prediction vectors and the exact McNemar test (:func:`same_model_interval`). The verdict follows
from the interval and the claim's kind (:mod:`attnconv.experiments.claims`): superiority
*reproduced* when the interval lies above 0 (or the claimed gain), non-inferiority when its lower
end is above −margin, equivalence when it lies inside ±margin; *not reproduced* when it excludes
what is claimed; otherwise *inconclusive*, with the smallest difference the runs could have
detected (80 % power). A side with one seed leaves the seed term unknown: *inconclusive*, never
support. An existence claim over exact properties of the parameters names its threshold
(:func:`judge_existence`, or :func:`~attnconv.experiments.existence.existence_verdict` over
observations of runs at the claim's setting) and says when the verdict changes between the book's thresholds.
:func:`spread` and :func:`seed_series` read the seed series of the registry.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from .registry import RUNS, SERIES
from .store import HISTORY, runs_dir

__all__ = [
    "plural",
    "k_of",
    "REPRODUCED",
    "NOT_REPRODUCED",
    "INCONCLUSIVE",
    "VERDICTS",
    "Evidence",
    "Claim",
    "paper_text_contains",
    "Spread",
    "spread",
    "SEED_SERIES",
    "SeedSeries",
    "seed_series",
    "final_test_accuracies",
    "compare_seed_series",
    "SUPERIORITY",
    "NON_INFERIORITY",
    "EQUIVALENCE",
    "EXISTENCE",
    "KINDS",
    "PAIRED",
    "UNPAIRED",
    "SEEDS_ONLY",
    "SEEDS_PAIRED",
    "paired_seed_interval",
    "MCNEMAR",
    "MINUS",
    "t_cdf",
    "t_quantile",
    "Side",
    "Interval",
    "difference_interval",
    "accuracy_interval",
    "mcnemar_p",
    "same_model_interval",
    "same_model_unpaired",
    "decide",
    "judge",
    "same_model_difference",
    "judge_same_model",
    "judge_existence",
    "test_labels",
    "accuracy_side",
    "exact_side",
]

REPRODUCED = "reproduced at CPU scale"
NOT_REPRODUCED = "not reproduced at CPU scale"
INCONCLUSIVE = "inconclusive"
#: The three verdicts a CPU-scale run can give on an experimental claim of the paper.
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE)
#: Words kept for what a proof or an exact check settles (errata); a verdict's reason may not use them.
_REFUTATION_WORDS = re.compile(
    r"\b(does not hold|do not hold|contradicts?|wrong|refuted?)\b", re.I
)


@dataclass(frozen=True)
class Evidence:
    """What one run shows about a claim: ``run`` names it (model, depth, seeds), ``measured`` says
    what was measured, in numbers."""

    run: str
    measured: str


@dataclass(frozen=True)
class Claim:
    """One experimental claim of the paper and the book's verdict on it (the module's rule).

    ``quote``: the paper's words, verbatim (arXiv v1); ``source``: where (section, figure, with the
    ICLR number beside where it differs); ``test``: the test as written; ``evidence``: one
    :class:`Evidence` per run that bears on it; ``verdict``: one of :data:`VERDICTS`; ``reason``:
    why (required); ``confounds``: what in the runs' settings could produce or hide the effect
    (named in the verdict); ``where``: the book's label of the section that prints the evidence."""

    quote: str
    source: str
    test: str
    evidence: Tuple[Evidence, ...]
    verdict: str
    reason: str
    confounds: Tuple[str, ...] = ()
    where: str = ""
    key: str = ""
    kind: str = ""
    margin: str = ""
    interval: str = ""

    def __post_init__(self):
        object.__setattr__(self, "evidence", tuple(self.evidence))
        object.__setattr__(self, "confounds", tuple(self.confounds))
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")
        for name in ("quote", "source", "test", "reason"):
            if not getattr(self, name).strip():
                raise ValueError(f"a claim needs a {name}")
        if not self.evidence:
            raise ValueError("a verdict needs the evidence of at least one run")
        if _REFUTATION_WORDS.search(self.reason) or _REFUTATION_WORDS.search(self.test):
            raise ValueError(
                "'does not hold' / 'contradicts' / 'wrong' are for what a proof or an exact "
                f"check settles, not for a run: {self.reason!r}"
            )


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def paper_text_contains(quote: str, paper_text: str) -> bool:
    """Whether ``quote`` occurs verbatim in ``paper_text`` (whitespace runs count as one space;
    an ellipsis "[...]" in the quote stands for any text between its parts, in order)."""
    text = _squash(paper_text)
    pos = 0
    for part in (_squash(p) for p in re.split(r"\[(?:\.\.\.|…)\]", quote)):
        if not part:
            continue
        found = text.find(part, pos)
        if found < 0:
            return False
        pos = found + len(part)
    return True


# --------------------------------------------------------------------------- spread over seeds


@dataclass(frozen=True)
class Spread:
    """A result over a seed series: ``values`` (one per seed) and ``seeds``."""

    values: Tuple[float, ...]
    seeds: Tuple[int, ...] = ()

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return sum(self.values) / len(self.values)

    @property
    def lo(self) -> float:
        return min(self.values)

    @property
    def hi(self) -> float:
        return max(self.values)

    def format(self, scale: float = 100.0, unit: str = " %", digits: int = 1) -> str:
        """``mean 45.2 % (43.0–47.9 %, 5 seeds)``; values multiplied by ``scale``."""
        f = lambda v: f"{scale * v:.{digits}f}"
        return f"mean {f(self.mean)}{unit} ({f(self.lo)}–{f(self.hi)}{unit}, {self.n} seed{'s' * (self.n != 1)})"


def spread(values: Sequence[float], seeds: Sequence[int] = ()) -> Spread:
    """The :class:`Spread` of ``values`` (at least one)."""
    values = tuple(float(v) for v in values)
    if not values:
        raise ValueError("a spread needs at least one value")
    if seeds and len(seeds) != len(values):
        raise ValueError("one seed per value")
    return Spread(values, tuple(int(s) for s in seeds))


# --------------------------------------------------------------------------- seed series


def _registered_series() -> Dict[Tuple[str, str], Dict[int, str]]:
    """``(profile, name)`` → seed → run folder (relative to the runs folder), from the run registry's
    series (:data:`attnconv.experiments.registry.SERIES`, the one place they are defined)."""
    return {
        tuple(key.split("/", 1)): {RUNS[n].seed: n for n in names}
        for key, names in SERIES.items()
    }


#: The seed series the chapters compare, ``(profile, name)`` → seed → run folder under the runs
#: folder, as the registry defines them. Seed 0 of the 2-layer learned series and of the deep series
#: is the chapters' own run.
SEED_SERIES: Dict[Tuple[str, str], Dict[int, str]] = _registered_series()


@dataclass
class SeedSeries:
    """The saved histories of a seed series: ``histories`` (seed → ``history.json`` contents, complete
    runs only) and ``missing`` (one line per seed folder without a complete history)."""

    profile: str
    name: str
    histories: Dict[int, dict] = field(default_factory=dict)
    missing: List[str] = field(default_factory=list)

    @property
    def seeds(self) -> List[int]:
        return sorted(self.histories)

    def message(self) -> str:
        """One line: which seeds are there and what is missing."""
        have = f"{self.profile} {self.name}: {plural(len(self.histories), 'complete seed run')}"
        return have + (f"; missing: {'; '.join(self.missing)}" if self.missing else "")


def seed_series(
    profile: str,
    name: str,
    runs_root=None,
    series: Mapping[Tuple[str, str], Mapping[int, str]] = SEED_SERIES,
) -> SeedSeries:
    """The complete runs of the seed series ``(profile, name)`` of :data:`SEED_SERIES` under
    ``runs_root`` (default: the book's runs folder, :func:`~attnconv.experiments.store.runs_dir`; nothing is trained); a folder without a history, or with an unfinished one, is
    named in ``missing``. An unknown series raises ``KeyError`` naming the known ones."""
    if (profile, name) not in series:
        known = ", ".join(f"{p}/{n}" for p, n in series)
        raise KeyError(f"no seed series {profile}/{name}; known: {known}")
    out = SeedSeries(profile, name)
    root = Path(runs_root) if runs_root is not None else runs_dir()
    for seed, rel in sorted(series[(profile, name)].items()):
        path = root / rel / HISTORY
        if not path.is_file():
            out.missing.append(f"seed {seed} (no {rel}/history.json)")
            continue
        with open(path) as f:
            history = json.load(f)
        if history.get("status") != "complete":
            done = len(history.get("epochs", []))
            out.missing.append(f"seed {seed} ({rel}: {done} epochs, not complete)")
            continue
        out.histories[seed] = history
    return out


def final_test_accuracies(series: SeedSeries, epochs: Optional[int] = None) -> Spread:
    """The test accuracy after the last epoch of every complete run of ``series``, as a
    :class:`Spread`. All runs must have the same number of epochs (``epochs`` when given): a
    comparison is made at equal training."""
    if not series.histories:
        raise ValueError(series.message())
    lengths = {seed: len(h["epochs"]) for seed, h in series.histories.items()}
    want = epochs if epochs is not None else next(iter(lengths.values()))
    wrong = {s: n for s, n in lengths.items() if n != want}
    if wrong:
        raise ValueError(
            f"{series.profile} {series.name}: runs of unequal length, expected {want} epochs: {wrong}"
        )
    seeds = series.seeds
    return spread([series.histories[s]["epochs"][-1]["test_acc"] for s in seeds], seeds)


def compare_seed_series(
    profile: str,
    name_a: str,
    name_b: str,
    runs_root=None,
    labels: Optional[Tuple[str, str]] = None,
) -> List[str]:
    """Lines comparing the final test accuracies of two seed series of ``profile``: each series'
    :meth:`Spread.format` (or what is missing) and the 95 % interval of the difference by the one
    rule (:func:`difference_interval`: seeds and test images, paired where every run kept its
    predictions). Never raises for missing runs: it says what is missing."""
    labels = labels or (name_a, name_b)
    spreads, lines = [], []
    for name, label in zip((name_a, name_b), labels):
        try:
            s = seed_series(profile, name, runs_root)
        except KeyError as e:
            return [str(e).strip("'\"")]
        if not s.histories:
            lines.append(f"{label}: no complete seed run yet ({s.message()})")
            spreads.append(None)
            continue
        try:
            acc = final_test_accuracies(s)
        except ValueError as e:
            lines.append(f"{label}: {e}")
            spreads.append(None)
            continue
        epochs = len(next(iter(s.histories.values()))["epochs"])
        seeds = ", ".join(str(k) for k in acc.seeds)
        lines.append(
            f"{label}, {epochs} epochs, seeds {seeds}: test accuracy {acc.format()}"
        )
        if s.missing:
            lines.append(f"  missing: {'; '.join(s.missing)}")
        spreads.append(acc)
    if all(x is not None for x in spreads):
        sides = [
            accuracy_side(
                [seed_series(profile, n, runs_root).histories[k] for k in acc.seeds],
                lab,
            )
            for n, lab, acc in zip((name_a, name_b), labels, spreads)
        ]
        iv = difference_interval(*sides)
        lines.append(f"{labels[0]} − {labels[1]}: {iv.format()}")
        if not iv.seed_term_known:
            lines.append("  one seed on a side: the spread over seeds is unknown")
    return lines


def _names(items) -> str:
    return "; ".join(items)


def plural(n: int, noun: str = "run") -> str:
    """``1 run``, ``3 runs`` (``noun`` in the singular)."""
    return f"{n} {noun}{'s' * (n != 1)}"


def k_of(k: int, n: int) -> str:
    """``2 of 3 runs``; ``the one run`` when there is one."""
    return "the one run" if n == 1 else f"{k} of {plural(n)}"


# --------------------------------------------------------------------------- the one rule
#
# Every verdict of the book on an experimental claim goes through :func:`judge` (two sides of runs)
# or :func:`judge_same_model` (one model against itself on the same test images) and
# :func:`decide`; an existence claim through :func:`judge_existence`. The claim's record
# (:mod:`attnconv.experiments.claims`) gives its kind, its margin and its threshold.

SUPERIORITY = "superiority"
NON_INFERIORITY = "non-inferiority"
EQUIVALENCE = "equivalence"
EXISTENCE = "existence"
#: The kinds of claim (:class:`~attnconv.experiments.claims.ClaimRecord`): "better", "faster",
#: "more" (superiority); "not much below", "close to" (non-inferiority); "similar", "no gain",
#: "recovers" (equivalence); "some heads ..." (existence).
KINDS = (SUPERIORITY, NON_INFERIORITY, EQUIVALENCE, EXISTENCE)

#: z of 80 % power (one-sided): the smallest detectable difference is (t₉₇.₅ + z₈₀) × SE.
_Z80 = 0.8416212335729143
#: How the interval was made (printed beside it).
PAIRED = "paired"
UNPAIRED = "unpaired (conservative)"
SEEDS_ONLY = "seeds only"
SEEDS_PAIRED = "seeds only, paired within each run"
MCNEMAR = "paired, one model, exact McNemar"
#: The minus sign intervals print (U+2212), as the book's text writes negative numbers.
MINUS = "\u2212"


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularized incomplete beta function (Lentz's method)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function."""
    if x <= 0.0 or x >= 1.0:
        return 0.0 if x <= 0.0 else 1.0
    front = math.exp(
        math.lgamma(a + b)
        - math.lgamma(a)
        - math.lgamma(b)
        + a * math.log(x)
        + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T ≤ t) of Student's t with ``df`` degrees of freedom (``inf``: the normal)."""
    if math.isinf(df):
        return 0.5 * math.erfc(-t / math.sqrt(2.0))
    tail = 0.5 * _incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t (bisection on :func:`t_cdf`; 1e-12 accurate)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"a quantile needs 0 < p < 1, got {p}")
    lo, hi = -1e4, 1e4
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
        if hi - lo < 1e-12:
            break
    return 0.5 * (lo + hi)


@dataclass(frozen=True)
class Side:
    """One side of a comparison: ``values`` one per seed (an accuracy, or an exact property of
    the trained parameters such as a count); ``correct``: for an accuracy, per seed the
    right/wrong of every test image (1/0; ``None`` when a run kept no predictions); ``n_images``
    the test images behind an accuracy (``None``: an exact property, no image noise)."""

    values: Tuple[float, ...]
    correct: Optional[Tuple[Tuple[int, ...], ...]] = None
    n_images: Optional[int] = None
    label: str = ""

    def __post_init__(self):
        object.__setattr__(self, "values", tuple(float(v) for v in self.values))
        if not self.values:
            raise ValueError(f"{self.label or 'a side'}: no run")
        if self.correct is not None:
            c = tuple(tuple(int(x) for x in row) for row in self.correct)
            if len(c) != len(self.values):
                raise ValueError("one correctness vector per seed")
            if len({len(r) for r in c}) != 1:
                raise ValueError("every run of a side on the same test images")
            object.__setattr__(self, "correct", c)
            object.__setattr__(self, "n_images", len(c[0]))

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return sum(self.values) / self.n

    @property
    def seed_variance(self) -> Optional[float]:
        """The sample variance over seeds; ``None`` with one seed (unknown)."""
        if self.n < 2:
            return None
        m = self.mean
        return sum((v - m) ** 2 for v in self.values) / (self.n - 1)

    def image_means(self) -> Optional[List[float]]:
        """Per test image, the share of seeds that got it right."""
        if self.correct is None:
            return None
        return [sum(col) / self.n for col in zip(*self.correct)]


@dataclass(frozen=True)
class Interval:
    """The 95 % confidence interval of a difference a − b: ``estimate``, ``lo``, ``hi``, its
    standard error ``se`` and degrees of freedom ``df``, ``detectable`` (the smallest difference
    these runs detect with 80 % power: (t₉₇.₅ + z₈₀) × SE), ``method`` (:data:`PAIRED`,
    :data:`UNPAIRED`, :data:`SEEDS_ONLY`, :data:`MCNEMAR`), ``seeds`` per side, ``seed_term_known``
    (false when a side has one seed: its spread over seeds is unknown, and the interval carries
    only the test images), and ``p_value`` (the exact McNemar test, same-model comparisons)."""

    estimate: float
    lo: float
    hi: float
    se: float
    df: float
    detectable: float
    method: str
    seeds: Tuple[int, int] = (1, 1)
    seed_term_known: bool = True
    p_value: Optional[float] = None

    def format(
        self, scale: float = 100.0, unit: str = " points", digits: int = 1
    ) -> str:
        """``+4.7 points, 95 % interval [+3.1, +6.3] (paired, 5 v 5 seeds)``; with one run on a side
        (the spread over seeds unknown) no interval: ``+3 heads (1 v 1 seed; one run on a side:
        no interval)``. Negative numbers carry a true minus sign (−, U+2212), as the book's
        text prints them: ``−2.9 points, 95 % interval [−4.8, −1.0]``."""

        def f(v: float) -> str:
            return _signed(v, scale, digits)

        if "one model" in self.method:
            seeds = ""
        elif self.method == SEEDS_PAIRED:
            seeds = f", {plural(self.seeds[0], 'seed')}"
        else:
            a, b = self.seeds
            seeds = f", {a} v {plural(b, 'seed') if a == 1 else f'{b} seeds'}"
        p = f", McNemar p = {self.p_value:.2g}" if self.p_value is not None else ""
        # one run on a side: its spread over seeds is unknown, so no interval is printed
        if not self.seed_term_known:
            one = "one run" if self.method == SEEDS_PAIRED else "one run on a side"
            return f"{f(self.estimate)}{unit} ({seeds[2:]}; {one}: no interval)"
        return (
            f"{f(self.estimate)}{unit}, 95 % interval [{f(self.lo)}, {f(self.hi)}] "
            f"({self.method}{seeds}{p})"
        )

    def ends(
        self, scale: float = 100.0, digits: int = 1, boundaries: Sequence[float] = ()
    ) -> Tuple[str, str]:
        """The interval's two ends as :meth:`format` prints them (``"−4.8", "−1.0"``), except
        that an end which rounds onto one of ``boundaries`` (in printed units: a −1-point
        margin is −1.0) gets one more digit, ``"−0.96"``: the interval does not reach the
        margin, though at ``digits`` it would look as if it touched it."""

        def end(v: float) -> str:
            onto = any(abs(round(scale * v, digits) - b) < 1e-9 for b in boundaries)
            return _signed(v, scale, digits + 1 if onto else digits)

        return end(self.lo), end(self.hi)

    def compact(
        self,
        scale: float = 100.0,
        unit: str = " points",
        digits: int = 1,
        boundaries: Sequence[float] = (),
        named: bool = False,
    ) -> str:
        """The estimate and its interval for a table cell, ``−10.0 points [−12.2, −7.8]``
        (ends as :meth:`ends`), or ``named``: ``−10.0 points, 95 % interval [−12.2, −7.8]``; with one
        run on a side, ``+3 heads: no interval``."""
        head = f"{_signed(self.estimate, scale, digits)}{unit}"
        if not self.seed_term_known:
            return f"{head}: no interval"
        lo, hi = self.ends(scale, digits, boundaries)
        return f"{head}{', 95 % interval ' if named else ' '}[{lo}, {hi}]"


def _signed(v: float, scale: float, digits: int) -> str:
    """``scale · v`` to ``digits`` decimals with its sign, minus as U+2212 (−)."""
    return f"{round(scale * v, digits) + 0.0:+.{digits}f}".replace("-", MINUS)


def _welch_df(parts: Sequence[Tuple[float, float]]) -> float:
    """Welch–Satterthwaite degrees of freedom of a sum of variance terms ``(v, df)``."""
    total = sum(v for v, _ in parts)
    denom = sum(v * v / d for v, d in parts if v > 0 and not math.isinf(d))
    if total <= 0:
        return math.inf
    return total * total / denom if denom > 0 else math.inf


def _interval(estimate: float, parts, method, seeds, known=True, p=None) -> Interval:
    var = sum(v for v, _ in parts)
    se = math.sqrt(max(var, 0.0))
    df = _welch_df(parts)
    t = t_quantile(0.975, df) if se > 0 else 0.0
    return Interval(
        estimate,
        estimate - t * se,
        estimate + t * se,
        se,
        df,
        (t + _Z80) * se,
        method,
        seeds,
        known,
        p,
    )


def _residual_variance(correct) -> float:
    """The seed × image residual mean square of a side's right/wrong matrix (two-way layout,
    seeds × images), σ²_e: the part of the per-image noise that both the seed term and the image
    term would otherwise count."""
    x = np.asarray(correct, dtype=np.float64)
    n, m = x.shape
    if n < 2:
        return 0.0
    r = x - x.mean(1, keepdims=True) - x.mean(0, keepdims=True) + x.mean()
    return float((r * r).sum() / ((n - 1) * (m - 1)))


def _image_term(per_image, sides: Sequence[Side]) -> float:
    """Var of the images' contribution to a mean over seeds and images: the variance over the N
    images of ``per_image`` (seed-averaged right/wrong, or its paired difference), less the seed ×
    image residual of each of ``sides`` already carried by the seed terms, over N (two-way random
    effects)."""
    d = np.asarray(per_image, dtype=np.float64)
    v = float(d.var(ddof=1))
    for s in sides:
        if s.n >= 2:
            v -= _residual_variance(s.correct) / s.n
    return max(v, 0.0) / len(d)


def _paired_image_term(a: Side, b: Side) -> float:
    """Var of the images' contribution to mean(a) − mean(b), paired (the same images): the
    per-image difference of seed-averaged right/wrong (:func:`_image_term`)."""
    return _image_term(
        np.asarray(a.image_means()) - np.asarray(b.image_means()), (a, b)
    )


def accuracy_interval(a: Side) -> Interval:
    """The 95 % interval of one side's mean accuracy, by the rule's two terms for one side: the seeds
    (s²/n) and the test images (:func:`_image_term` of the seeds' mean right/wrong per image when
    every run kept its predictions, :data:`PAIRED`; else the binomial p(1 − p)/N,
    :data:`UNPAIRED`). The interval a table or a figure prints beside a mean accuracy, so that it
    is the same rule as the verdicts' (:func:`difference_interval` against nothing)."""
    if not a.n_images:
        raise ValueError(f"{a.label or 'a side'}: an accuracy needs its test images")
    parts = [(a.seed_variance / a.n, a.n - 1)] if a.seed_variance is not None else []
    if a.correct is not None:
        parts.append((_image_term(a.image_means(), (a,)), a.n_images - 1))
        method = PAIRED
    else:
        p = min(max(a.mean, 0.0), 1.0)
        parts.append((p * (1 - p) / a.n_images, a.n_images - 1))
        method = UNPAIRED
    return _interval(a.mean, parts, method, (a.n, 0), a.seed_variance is not None)


def difference_interval(a: Side, b: Side) -> Interval:
    """The 95 % CI of mean(a) − mean(b) carrying both sources of noise:

    * the **seeds**: s²_a/n_a + s²_b/n_b (sample variances over seeds; unknown, and left out with
      ``seed_term_known`` false, when a side has one seed);
    * the **test images**, for an accuracy: *paired* when every run of both sides kept its
      per-image predictions — the variance over the N images of the per-image difference of the
      seeds' mean right/wrong, less the seed × image residual the seed terms already carry, over N
      (a two-way random-effects decomposition; the images shared by both sides cancel); else
      *unpaired, conservative* — p_a(1 − p_a)/N + p_b(1 − p_b)/N, no covariance (the two sides'
      errors on the same images are positively correlated, so this overstates the noise).

    The quantile is Student's t with Welch–Satterthwaite degrees of freedom (seed terms n − 1,
    image term N − 1). An exact property of the parameters (``n_images`` None) has no image
    term."""
    known = a.seed_variance is not None and b.seed_variance is not None
    parts = [
        (s.seed_variance / s.n, s.n - 1) for s in (a, b) if s.seed_variance is not None
    ]
    method = SEEDS_ONLY
    n_images = a.n_images or b.n_images
    if n_images:
        if a.correct is not None and b.correct is not None:
            if a.n_images != b.n_images:
                raise ValueError("a paired comparison needs the same test images")
            parts.append((_paired_image_term(a, b), n_images - 1))
            method = PAIRED
        else:
            for s in (a, b):
                p = min(max(s.mean, 0.0), 1.0)
                parts.append((p * (1 - p) / n_images, n_images - 1))
            method = UNPAIRED
    return _interval(a.mean - b.mean, parts, method, (a.n, b.n), known)


def paired_seed_interval(a: Sequence[float], b: Sequence[float]) -> Interval:
    """Two exact properties of the same runs (e.g. layers 3-6 and layers 1-2 of each seed): the
    t interval over the seeds of the per-run difference a − b (:data:`SEEDS_PAIRED`); one run
    leaves the seed term unknown."""
    if len(a) != len(b) or not a:
        raise ValueError("one value per run on both sides")
    d = [x - y for x, y in zip(a, b)]
    iv = difference_interval(exact_side(d), exact_side([0.0] * len(d)))
    return replace(iv, method=SEEDS_PAIRED, seeds=(len(d), len(d)))


def mcnemar_p(b: int, c: int) -> float:
    """The exact two-sided McNemar p-value: a binomial(b + c, ½) test on the discordant pairs
    (``b`` images right only with a, ``c`` right only with b)."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n
    return min(1.0, 2.0 * tail)


def same_model_interval(
    pred_a: Sequence[int], pred_b: Sequence[int], labels: Sequence[int]
) -> Interval:
    """One model against itself on the same test images (an ablation: heads removed, pruned,
    retrained): the difference of accuracies a − b from the two prediction vectors, its paired
    95 % interval ((b − c)/N ± z·√(b + c − (b − c)²/N)/N, no seed term: one trained model) and the
    exact McNemar p-value of the discordant pairs."""
    if not len(pred_a) == len(pred_b) == len(labels):
        raise ValueError("one prediction per test image on both sides")
    n = len(labels)
    right_a = [int(p == y) for p, y in zip(pred_a, labels)]
    right_b = [int(p == y) for p, y in zip(pred_b, labels)]
    b = sum(x and not y for x, y in zip(right_a, right_b))
    c = sum(y and not x for x, y in zip(right_a, right_b))
    var = max(b + c - (b - c) ** 2 / n, 0.0) / n**2
    return _interval(
        (b - c) / n, [(var, math.inf)], MCNEMAR, (1, 1), True, mcnemar_p(b, c)
    )


def decide(
    kind: str,
    interval: Interval,
    margin: Optional[float] = None,
    scale: float = 100.0,
    unit: str = " points",
) -> Tuple[str, str]:
    """The verdict on a claim "a <kind> b" from the interval of a − b, and why:

    * superiority — *reproduced* when the interval lies above the claimed gain (``margin``; 0 when
      the claim names no size; for a same-model comparison the exact McNemar p < 0.05 too), *not
      reproduced* when it lies below it;
    * non-inferiority — *reproduced* when lo > −margin, *not reproduced* when hi < −margin;
    * equivalence — *reproduced* when −margin < lo and hi < margin, *not reproduced* when the
      interval lies wholly outside ±margin;
    * otherwise *inconclusive*, with the smallest difference these runs could have detected; and
      always *inconclusive* when a side has one seed (its seed term is unknown).
    """
    if kind not in (SUPERIORITY, NON_INFERIORITY, EQUIVALENCE):
        raise ValueError(
            f"decide() judges superiority, non-inferiority or equivalence, got {kind!r}"
        )
    if kind != SUPERIORITY and (margin is None or margin <= 0):
        raise ValueError(
            f"a {kind} claim needs a positive margin, set before the result"
        )
    digits = 1 if scale == 100.0 else 2
    f = lambda v: f"{round(scale * v, digits) + 0.0:g}{unit}"
    ci = interval.format(scale, unit, digits)
    if not interval.seed_term_known:
        return INCONCLUSIVE, (
            f"{ci}; one seed on a side, so the spread over seeds is unknown and the "
            "interval leaves it out: no verdict"
        )
    lo, hi = interval.lo, interval.hi
    if kind == SUPERIORITY:
        gain = margin or 0.0
        exact = interval.p_value is None or interval.p_value < 0.05
        where = f"the claimed {f(gain)}" if gain else "0"
        if lo > gain and exact:
            return REPRODUCED, f"{ci}: the interval lies above {where}"
        if hi < gain:
            return NOT_REPRODUCED, f"{ci}: the interval lies below {where}"
    elif kind == NON_INFERIORITY:
        if lo > -margin:
            return REPRODUCED, f"{ci}: its lower end is above −{f(margin)} (the margin)"
        if hi < -margin:
            return NOT_REPRODUCED, f"{ci}: it lies below −{f(margin)} (the margin)"
    else:
        if -margin < lo and hi < margin:
            return REPRODUCED, f"{ci}: it lies inside ±{f(margin)} (the margin)"
        if lo > margin or hi < -margin:
            return NOT_REPRODUCED, f"{ci}: it lies outside ±{f(margin)} (the margin)"
    return INCONCLUSIVE, (
        f"{ci}: the interval does not settle it; these runs could detect a difference of "
        f"about {scale * interval.detectable:.{digits}f}{unit} (80 % power)"
    )


def judge(
    claim, side_a: "Side", side_b: "Side", margin: Optional[float] = None
) -> Tuple[str, str, Interval]:
    """The one rule for a comparison of two sides of runs: ``claim`` a
    :class:`~attnconv.experiments.claims.ClaimRecord` (its ``kind`` and ``margin``), or a kind
    string for a superiority claim (``margin``: the claimed gain, overriding the record); returns ``(verdict, reason, interval)``
    (:func:`difference_interval`, :func:`decide`)."""
    kind = getattr(claim, "kind", claim)
    margin = margin if margin is not None else getattr(claim, "margin", None)
    iv = difference_interval(side_a, side_b)
    scale, unit = (
        (100.0, " points") if (side_a.n_images or side_b.n_images) else (1.0, "")
    )
    verdict, reason = decide(kind, iv, margin, scale, unit)
    return verdict, reason, iv


def same_model_unpaired(acc_a: float, acc_b: float, n_images: int) -> Interval:
    """The conservative fallback for a same-model ablation whose per-image predictions were not
    saved: the difference of two accuracies on the same ``n_images`` images with the binomial
    variance of each and no covariance (:data:`UNPAIRED`; one trained model, so no seed term).
    The paired interval (:func:`same_model_interval`) is far narrower."""
    parts = [(p * (1 - p) / n_images, n_images - 1) for p in (acc_a, acc_b)]
    return _interval(acc_a - acc_b, parts, UNPAIRED + ", one model", (1, 1), True)


def same_model_difference(
    pred_a, pred_b, labels, accuracies: Optional[Tuple[float, float]] = None
) -> Interval:
    """The interval of a − b for one model against itself on the same test images: paired
    (:func:`same_model_interval`, exact McNemar) when both prediction vectors and the labels are
    there and agree in length; else the conservative :func:`same_model_unpaired` from
    ``accuracies`` and the number of images (``labels``, or ``labels`` given as that number)."""
    n = labels if isinstance(labels, int) else len(labels)
    if (
        pred_a is not None
        and pred_b is not None
        and not isinstance(labels, int)
        and len(pred_a) == len(pred_b) == n
    ):
        return same_model_interval(pred_a, pred_b, labels)
    if accuracies is None:
        raise ValueError("without predictions a same-model comparison needs accuracies")
    return same_model_unpaired(accuracies[0], accuracies[1], n)


def judge_same_model(
    claim, pred_a, pred_b, labels, accuracies: Optional[Tuple[float, float]] = None
) -> Tuple[str, str, Interval]:
    """The one rule for a same-model ablation (two prediction vectors on the same test images):
    :func:`same_model_difference` and :func:`decide` with the claim's kind and margin."""
    iv = same_model_difference(pred_a, pred_b, labels, accuracies)
    verdict, reason = decide(
        getattr(claim, "kind", claim), iv, getattr(claim, "margin", None)
    )
    return verdict, reason, iv


def judge_existence(
    values: Mapping[str, float],
    threshold: float,
    thresholds: Sequence[float] = (),
    what: str = "value",
    off_setting: Mapping[str, float] = None,
) -> Tuple[str, str]:
    """An existence claim over exact properties of the trained parameters: ``values`` run →
    the largest value of the property in the run at the claim's setting (e.g. the largest
    probability a head of layers 1-2 puts on one key); the claim is shown by a run whose value is
    above ``threshold``. *reproduced* when some run at the setting shows it, *not reproduced*
    when runs at the setting exist and none does, *inconclusive* when none is at the setting.
    ``thresholds``: the book's other thresholds for the same concept; when the verdict differs at
    one of them, the reason says so. ``off_setting``: runs at other settings (listed, not counted)."""

    def at(th):
        shown = [k for k, v in values.items() if v > th]
        if not values:
            return INCONCLUSIVE, shown
        return (REPRODUCED if shown else NOT_REPRODUCED), shown

    verdict, shown = at(threshold)
    if not values:
        reason = "no run at the claim's setting"
    elif shown:
        have = "has" if len(shown) == 1 else "have"
        reason = (
            f"{k_of(len(shown), len(values))} at the claim's setting {have} a {what} "
            f"above {threshold:g} ({_names(shown)})"
        )
    else:
        top = max(values.values())
        nobody = (
            "the one run at the claim's setting does not have"
            if len(values) == 1
            else f"none of the {len(values)} runs at the claim's setting has"
        )
        reason = f"{nobody} a {what} above {threshold:g} (largest {top:.2f})"
    for th in thresholds:
        if th == threshold:
            continue
        other, shown_th = at(th)
        if other != verdict:
            reason += (
                f"; the verdict changes at the book's other threshold {th:g}: "
                f"{other} ({_above(len(shown_th), len(values))})"
            )
    off = [k for k, v in (off_setting or {}).items() if v > threshold]
    if off:
        reason += f"; at other settings (not counted) shown by {_names(off)}"
    return verdict, reason


def _above(k: int, n: int) -> str:
    """``2 of 3 runs above it``; for one run, whether it is above."""
    if n == 1:
        return "its one run is above it" if k else "its one run is not above it"
    return f"{k} of {plural(n)} above it"


_LABELS: Dict[Tuple[str, Optional[int]], Optional[List[int]]] = {}


def test_labels(data: str, test_subset: Optional[int] = None) -> Optional[List[int]]:
    """The class of every test image of the data a run used (``history.config['data']`` and
    ``test_subset``), read once; ``None`` when that data is not on this machine."""
    key = (data, test_subset)
    if key not in _LABELS:
        from .data import DataUnavailableError, load_cifar10

        try:
            d = load_cifar10(data, download=False, verbose=False)
            _LABELS[key] = d.subset(None, test_subset).y_test.tolist()
        except (DataUnavailableError, ValueError, OSError):
            _LABELS[key] = None
    return _LABELS[key]


def _history(run):
    return getattr(run, "history", run)


def _predictions(history) -> Optional[List[int]]:
    last = history["epochs"][-1]
    saved = (
        last.get("test_predictions")
        if isinstance(last, dict)
        else last.test_predictions
    )
    return None if saved is None else [int(c) for c in saved]


def accuracy_side(runs: Sequence, label: str = "") -> Side:
    """A :class:`Side` from runs (:class:`~attnconv.experiments.runs.Run`, typed or dict
    histories): each run's final test accuracy and, when it kept its per-image predictions and
    its test labels can be read, its right/wrong on every test image (the paired rule needs every
    run of both sides to have them)."""
    histories = [_history(r) for r in runs]
    if not histories:
        raise ValueError(f"{label or 'a side'}: no run")
    values = [h["epochs"][-1]["test_acc"] for h in histories]
    n_images = histories[0]["test_size"] or None
    correct = []
    for h in histories:
        pred = _predictions(h)
        config = h["config"] or {}
        labels = (
            test_labels(config.get("data", "sample"), config.get("test_subset"))
            if pred is not None
            else None
        )
        if pred is None or labels is None or len(labels) != len(pred):
            correct = None
            break
        correct.append([int(p == y) for p, y in zip(pred, labels)])
    return Side(values, correct, n_images, label)


def exact_side(values: Sequence[float], label: str = "") -> Side:
    """A :class:`Side` of an exact property of the trained parameters (a count, a distance), one
    value per seed: only the seeds are noise."""
    return Side(tuple(values), None, None, label)
