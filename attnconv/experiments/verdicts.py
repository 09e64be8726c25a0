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

A comparison between two models (an accuracy, a count) is made over seeds: :func:`spread` gives the
mean and the min–max of a result over a seed series, and :func:`ordering` states an ordering only
when the two seed ranges separate (:func:`ranges_separate`). :func:`seed_series` finds the saved
histories of a seed series (see :data:`SEED_SERIES`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from .registry import RUNS, SERIES
from .store import HISTORY, runs_dir

__all__ = [
    "REPRODUCED",
    "NOT_REPRODUCED",
    "INCONCLUSIVE",
    "VERDICTS",
    "Evidence",
    "Claim",
    "paper_text_contains",
    "verdict_table",
    "Spread",
    "spread",
    "ranges_separate",
    "ordering",
    "SEED_SERIES",
    "SeedSeries",
    "seed_series",
    "final_test_accuracies",
    "compare_seed_series",
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
    why (required)."""

    quote: str
    source: str
    test: str
    evidence: Tuple[Evidence, ...]
    verdict: str
    reason: str

    def __post_init__(self):
        object.__setattr__(self, "evidence", tuple(self.evidence))
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


def _cell(text: str) -> str:
    return _squash(text).replace("|", "\\|")


def verdict_table(claims: Sequence[Claim]) -> str:
    """The claims as one Markdown table (the book renders it as an HTML table that wraps to the
    column): one row per piece of evidence; the claim (quote, source, test as written) and the
    verdict with its reason stand in the first row of each claim."""
    lines = [
        "| the paper (arXiv v1) and the test as written | run | what it shows | verdict |",
        "| :--- | :--- | :--- | :--- |",
    ]
    for c in claims:
        for i, e in enumerate(c.evidence):
            claim = f"“{c.quote}” ({c.source}). Test: {c.test}" if i == 0 else ""
            verdict = f"**{c.verdict}**: {c.reason}" if i == 0 else ""
            lines.append(
                f"| {_cell(claim)} | {_cell(e.run)} | {_cell(e.measured)} | {_cell(verdict)} |"
            )
    return "\n".join(lines)


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


def ranges_separate(a: Spread, b: Spread) -> bool:
    """Whether the min–max ranges of two seed series do not touch (every value of one above every
    value of the other)."""
    return a.lo > b.hi or b.lo > a.hi


def ordering(name_a: str, a: Spread, name_b: str, b: Spread, min_seeds: int = 3) -> str:
    """The ordering of two seed series in words, stated only when their ranges separate and each
    has at least ``min_seeds`` seeds; otherwise says why no ordering is stated."""
    if a.n < min_seeds or b.n < min_seeds:
        return f"no ordering stated: {a.n} and {b.n} seeds (at least {min_seeds} each are needed)"
    if not ranges_separate(a, b):
        return f"no ordering stated: the seed ranges of {name_a} and {name_b} overlap"
    hi, lo = (name_a, name_b) if a.lo > b.hi else (name_b, name_a)
    return f"{hi} above {lo} in every seed (the seed ranges separate)"


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
        have = f"{self.profile} {self.name}: {len(self.histories)} complete seed run(s)"
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
    :meth:`Spread.format` (or what is missing) and the :func:`ordering`, stated only when the seed
    ranges separate. Never raises for missing runs: it says what is missing."""
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
        lines.append(ordering(labels[0], spreads[0], labels[1], spreads[1]))
    return lines
