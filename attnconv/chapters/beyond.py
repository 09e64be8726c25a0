"""Chapter 18, *Beyond the paper*: does starting attention as a convolution make it learn better
from little data? Reads the saved runs of :mod:`attnconv.experiments.beyond` (never trains),
reduces them to the numbers the chapter shows, draws its figures and gives the verdicts on the
later papers' claims.

* :func:`load_experiment` — every saved run, and the names of those not there yet;
* :func:`accuracy_summaries`, :func:`plot_accuracy_vs_size`, :func:`results_table` — final test
  accuracy against training-set size, over seeds;
* :func:`locality_over_epochs`, :func:`plot_locality` — the gates σ(λ) and attention distances
  per layer during training;
* :func:`learning_curves`, :func:`plot_learning_curves`, :func:`speed_table` — what each
  initialisation costs and gains in time;
* :func:`test_set_noise`, :func:`gain_verdict`, :func:`later_claims`, :func:`claims_markdown` — the
  book's verdict rule (:mod:`attnconv.experiments.verdicts`) applied to the later papers' claims.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..experiments.beyond import (
    EPOCHS,
    FRACTIONS,
    MODELS,
    SAMPLE_TRAIN_SIZE,
    STEPS_FRACTIONS,
    SizeSummary,
    accuracy_summary,
    equal_steps_epochs,
    series_name,
    steps_series_name,
    subset_size,
)
from ..experiments.registry import SERIES, load_series
from ..experiments.store import regenerate_command
from ..experiments.train import Run
from ..experiments.verdicts import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    SUPERIORITY,
    Claim,
    Evidence,
    Side,
    accuracy_side,
    judge,
)
from .shared.plotting import COLUMN_INCHES
from .shared.tables import markdown_table

__all__ = [
    "LABELS",
    "COLOURS",
    "LANES",
    "SAMPLE_TEST_SIZE",
    "theorem1_errors",
    "initial_position_maps",
    "plot_initial_position_maps",
    "Experiment",
    "load_experiment",
    "final_accuracies",
    "accuracy_summaries",
    "steps_summaries",
    "plot_accuracy_vs_size",
    "results_table",
    "locality_over_epochs",
    "plot_locality",
    "learning_curves",
    "plot_learning_curves",
    "speed_table",
    "total_minutes",
    "test_set_noise",
    "gain_verdict",
    "later_claims",
    "later_claims_from",
    "claims_markdown",
]

#: How the chapter names each model.
LABELS = {
    "random": "random (ViT default)",
    "convit": "ConViT local",
    "impulse": "impulse (Thm. 1)",
    "mimetic": "mimetic",
    "resnet18": "ResNet18",
}
COLOURS = {
    "random": "tab:gray",
    "convit": "tab:blue",
    "impulse": "tab:orange",
    "mimetic": "tab:green",
    "resnet18": "black",
}
#: The two background lanes the runs were made in (``python -m attnconv.regenerate --only ...``).
LANES = (
    "beyond/random beyond/convit 'beyond/resnet18/frac100/seed[0-3]'",
    "beyond/impulse beyond/mimetic beyond/resnet18/frac100/seed4 beyond/resnet18/frac50 "
    "beyond/resnet18/frac25 beyond/resnet18/frac10",
)
#: Test images of the bundled sample: every accuracy of the experiment is measured on them.
SAMPLE_TEST_SIZE = 1017
#: Why a difference proves nothing (the reason :func:`gain_verdict` gives).
WITHIN_NOISE = "within the seed spread or the test set's noise"
#: Seeds each side needs before :func:`gain_verdict` states anything but *inconclusive*.
MIN_SEEDS = 3


# --------------------------------------------------------------------------- the layer
def theorem1_errors(
    alphas: Sequence[float] = (0.5, 2.0, 8.0, 32.0, 128.0), seed: int = 0
) -> List[Tuple[float, float]]:
    """(α, largest difference) between a GPSA layer built from a random 3×3 convolution of 18
    channels (:func:`~attnconv.experiments.initialisations.gpsa_from_conv`, gate closed on
    position) and the book's Theorem 1 layer with exactly one-hot heads
    (:func:`~attnconv.core.conv.conv_to_mhsa`), on a 7×7 image in float64, at the queries whose
    3×3 window lies inside the image."""
    import torch
    from torch import nn

    from ..core.conv import conv_to_mhsa
    from ..experiments.initialisations import gpsa_from_conv

    torch.manual_seed(seed)
    conv = nn.Conv2d(18, 18, 3, padding=1).double()
    x = torch.randn(2, 18, 7, 7, dtype=torch.float64)
    inside = [7 * i + j for i in range(1, 6) for j in range(1, 6)]
    with torch.no_grad():
        want = conv_to_mhsa(conv, head_dim=2, hard=True)(x).flatten(2).transpose(1, 2)
        tokens = x.flatten(2).transpose(1, 2)
        out = []
        for a in alphas:
            got = gpsa_from_conv(conv, a)(tokens, (7, 7))
            out.append((a, (got - want)[:, inside].abs().max().item()))
    return out


def initial_position_maps(seed: int = 0):
    """Per GPSA initialisation, the positional attention of the 9 heads of one layer for the
    query at token (4, 4) of the 8×8 grid, right after initialisation: ``{init: (9, 8, 8)}``."""
    import torch

    from ..core.gpsa import GatedPositionalSelfAttention
    from ..experiments.initialisations import INITIALISATIONS

    maps = {}
    for name, init in INITIALISATIONS.items():
        torch.manual_seed(seed)
        layer = GatedPositionalSelfAttention(72, 9)
        init(layer)
        with torch.no_grad():
            maps[name] = layer.positional_attention((8, 8))[:, 4 * 8 + 4].view(9, 8, 8)
    return maps


def plot_initial_position_maps(maps):
    """One row per initialisation, one panel per head; the query's token outlined."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    names = list(maps)
    fig, axes = plt.subplots(
        len(names), 9, figsize=(COLUMN_INCHES, 0.95 * len(names) + 0.3)
    )
    for i, name in enumerate(names):
        for h in range(9):
            ax = axes[i, h]
            ax.imshow(maps[name][h].numpy(), cmap="viridis", vmin=0, vmax=1)
            ax.add_patch(Rectangle((3.5, 3.5), 1, 1, fill=False, ec="white", lw=0.8))
            ax.set_xticks([])
            ax.set_yticks([])
            if i == 0:
                ax.set_title(f"head {h + 1}")
        axes[i, 0].set_ylabel(LABELS[name], fontsize=7)
    fig.tight_layout(pad=0.3)
    return fig


# --------------------------------------------------------------------------- loading
@dataclass
class Experiment:
    """The saved runs by series name (``beyond/<model>/frac<percent>``, seed 0 first) and the
    registered runs that are not there yet."""

    runs: Dict[str, List[Run]] = field(default_factory=dict)
    missing: List[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.missing

    def message(self) -> str:
        """What is missing and the command that makes it."""
        if not self.missing:
            return f"all {sum(map(len, self.runs.values()))} runs are saved"
        return (
            f"{len(self.missing)} of the experiment's runs are not saved yet "
            f"(e.g. {self.missing[0]}); make them with: "
            f"{regenerate_command('beyond')} beyond-steps"
        )


def load_experiment() -> Experiment:
    """Every saved run of the experiment (reads only)."""
    exp = Experiment()
    names = [series_name(m, f) for m in MODELS for f in FRACTIONS]
    names += [steps_series_name(m, f) for m in MODELS for f in STEPS_FRACTIONS]
    for name in names:
        runs = load_series(name, skip_missing=True)
        exp.runs[name] = runs
        saved = {str(r.run_dir) for r in runs}
        exp.missing += [
            n for n in SERIES[name] if not any(s.endswith(n) for s in saved)
        ]
    return exp


def final_accuracies(exp: Experiment) -> Dict[str, List[float]]:
    """Series name → the final test accuracy of each saved seed."""
    return {
        name: [r.history.epochs[-1]["test_acc"] for r in runs]
        for name, runs in exp.runs.items()
    }


def accuracy_summaries(exp: Experiment) -> List[SizeSummary]:
    """One :class:`~attnconv.experiments.beyond.SizeSummary` per model and size with saved runs
    (equal epochs)."""
    return accuracy_summary(final_accuracies(exp))


def steps_summaries(exp: Experiment) -> List[SizeSummary]:
    """The same for the equal-steps runs (the small sizes trained for the full sample's steps)."""
    acc = final_accuracies(exp)
    return [
        SizeSummary(m, f, tuple(acc[steps_series_name(m, f)]))
        for m in MODELS
        for f in STEPS_FRACTIONS
        if acc.get(steps_series_name(m, f))
    ]


def _size(fraction: float) -> int:
    return subset_size(fraction) or SAMPLE_TRAIN_SIZE


# --------------------------------------------------------------------------- accuracy vs data
def plot_accuracy_vs_size(
    summaries: Sequence[SizeSummary], steps: Sequence[SizeSummary] = ()
):
    """Final test accuracy against the number of training images (log scale), one line per
    model through the means, each seed a dot, the seed range as a bar; ``steps`` (the
    equal-steps runs) as open markers joined by a dotted line to the full sample's point."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(COLUMN_INCHES, 3.4))
    offsets = dict(zip(MODELS, np.linspace(-0.04, 0.04, len(MODELS))))
    for model in MODELS:
        rows = [s for s in summaries if s.model == model]
        if not rows:
            continue
        x = np.array([_size(s.fraction) for s in rows]) * np.exp(offsets[model])
        mean = np.array([s.mean for s in rows]) * 100
        lo = mean - np.array([s.low for s in rows]) * 100
        hi = np.array([s.high for s in rows]) * 100 - mean
        style = dict(color=COLOURS[model], lw=1.4)
        if model == "resnet18":
            style.update(ls="--")
        ax.errorbar(x, mean, yerr=[lo, hi], capsize=2.5, marker="o", ms=3.5, **style)
        for xi, s in zip(x, rows):
            ax.plot(
                [xi] * len(s.accuracies),
                np.array(s.accuracies) * 100,
                ".",
                color=COLOURS[model],
                alpha=0.35,
                ms=3,
            )
        ax.plot(
            [], [], color=COLOURS[model], ls=style.get("ls", "-"), label=LABELS[model]
        )
        extra = [s for s in steps if s.model == model]
        if extra:
            xs = np.array([_size(s.fraction) for s in extra]) * np.exp(offsets[model])
            ms = np.array([s.mean for s in extra]) * 100
            low = ms - np.array([s.low for s in extra]) * 100
            high = np.array([s.high for s in extra]) * 100 - ms
            ax.errorbar(
                xs,
                ms,
                yerr=[low, high],
                fmt="o",
                mfc="white",
                ms=4,
                capsize=2.5,
                color=COLOURS[model],
                lw=1.0,
            )
            ax.plot([*xs, x[-1]], [*ms, mean[-1]], ":", color=COLOURS[model], lw=1)
    sizes = [_size(f) for f in FRACTIONS]
    ax.set_xscale("log")
    ax.set_xticks(sizes)
    ax.set_xticklabels(
        [f"{n:,}\n({round(100 * f)} %)" for n, f in zip(sizes, FRACTIONS)]
    )
    ax.minorticks_off()
    ax.set_xlabel("training images (share of the 5,085-image sample)")
    ax.set_ylabel("test accuracy after training (%)")
    ax.grid(alpha=0.3)
    if steps:
        ax.plot([], [], "o:", mfc="white", color="0.4", label="same steps as 100 %")
    ax.legend(loc="upper left", frameon=False, ncol=2)
    budget = f"filled: {EPOCHS} epochs at every size"
    if steps:
        budget += "; open: the full sample's number of steps"
    ax.set_title(f"{budget} (line: mean over seeds; bar: seed range; dots: seeds)")
    fig.tight_layout()
    return fig


def results_table(
    summaries: Sequence[SizeSummary], fractions: Sequence[float] = FRACTIONS
):
    """Mean and seed range ("low to high": no number breaks in a narrow cell) of the final
    test accuracy (%) per model (rows) and size (columns)."""
    cells: Dict[Tuple[str, float], str] = {
        (
            s.model,
            s.fraction,
        ): f"{100 * s.mean:.1f} ({100 * s.low:.1f} to {100 * s.high:.1f})"
        for s in summaries
    }
    rows = [
        [LABELS[m]] + [cells.get((m, f), "not saved") for f in fractions]
        for m in MODELS
    ]
    columns = ["model"] + [f"{round(100 * f)} %" for f in fractions]
    return markdown_table(columns, rows)


# --------------------------------------------------------------------------- locality
def locality_over_epochs(
    exp: Experiment, fraction: float = 1.0
) -> Dict[str, Dict[str, np.ndarray]]:
    """Per GPSA initialisation, over the seeds at ``fraction``: ``gate`` (epochs+1, layers), the
    mean over heads of σ(λ_h) after each epoch (row 0: at initialisation), and ``distance``
    (epochs, layers), the mean attention distance (tokens) over heads and test images after each
    epoch. Averaged over seeds."""
    out = {}
    for model in MODELS:
        runs = exp.runs.get(series_name(model, fraction)) or []
        if model == "resnet18" or not runs:
            continue
        gates, dists = [], []
        for r in runs:
            h = r.history
            records = [h.initial_attention] + [e.attention for e in h.epochs]
            gates.append([[np.mean(l["gate"]) for l in rec] for rec in records])
            dists.append(
                [[np.mean(l["distance"]) for l in e.attention] for e in h.epochs]
            )
        out[model] = {
            "gate": np.mean(gates, axis=0),
            "distance": np.mean(dists, axis=0),
        }
    return out


def plot_locality(locality: Mapping[str, Mapping[str, np.ndarray]]):
    """Two rows (gate on position; attention distance) by one column per layer, one line per
    initialisation."""
    import matplotlib.pyplot as plt

    if not locality:
        print("no saved GPSA run on the full sample yet")
        return None
    layers = next(iter(locality.values()))["gate"].shape[1]
    fig, axes = plt.subplots(
        2, layers, figsize=(COLUMN_INCHES, 4.2), sharex=True, sharey="row"
    )
    axes = np.asarray(axes).reshape(2, layers)
    for model, rec in locality.items():
        e = np.arange(rec["gate"].shape[0])
        for j in range(layers):
            axes[0, j].plot(
                e, rec["gate"][:, j], color=COLOURS[model], label=LABELS[model]
            )
            axes[1, j].plot(e[1:], rec["distance"][:, j], color=COLOURS[model])
    for j in range(layers):
        axes[0, j].set_title(f"layer {j + 1}")
        axes[1, j].set_xlabel("epoch")
        for ax in axes[:, j]:
            ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("mean gate σ(λ) on position")
    axes[1, 0].set_ylabel("attention distance (tokens)")
    axes[0, 0].legend(frameon=False, loc="lower left")
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- speed
def learning_curves(exp: Experiment, fraction: float = 1.0) -> Dict[str, np.ndarray]:
    """Per model, the test accuracy after each epoch for each seed at ``fraction``: ``(seeds,
    epochs)``."""
    return {
        m: np.array([r.history.series("test_acc") for r in runs])
        for m in MODELS
        if (runs := exp.runs.get(series_name(m, fraction)))
    }


def plot_learning_curves(curves: Mapping[str, np.ndarray]):
    """Test accuracy against epoch at the full sample: mean over seeds, band = seed range."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(COLUMN_INCHES, 2.9))
    for m, acc in curves.items():
        e = np.arange(1, acc.shape[1] + 1)
        ls = "--" if m == "resnet18" else "-"
        ax.plot(e, 100 * acc.mean(0), color=COLOURS[m], ls=ls, label=LABELS[m])
        ax.fill_between(
            e, 100 * acc.min(0), 100 * acc.max(0), color=COLOURS[m], alpha=0.15, lw=0
        )
    ax.set_xlabel("epoch")
    ax.set_ylabel("test accuracy (%)")
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, ncol=3, loc="lower right")
    fig.tight_layout()
    return fig


def _run_seconds(run: Run) -> float:
    """A run's recorded time: the sum of its epochs' seconds (training + evaluation)."""
    return sum(e["seconds"] for e in run.history.epochs)


def speed_table(exp: Experiment):
    """Seconds per epoch on the full sample (training + evaluation; the median over seeds and
    epochs, as the machine's load varied) and the total recorded time of each model's runs."""
    rows = []
    for m in MODELS:
        full = exp.runs.get(series_name(m, 1.0)) or []
        per_epoch = [e["seconds"] for r in full for e in r.history.epochs]
        total = sum(
            _run_seconds(r)
            for f in FRACTIONS
            for r in exp.runs.get(series_name(m, f)) or []
        )
        rows.append(
            [
                LABELS[m],
                f"{np.median(per_epoch):.1f}" if per_epoch else "not saved",
                f"{total / 60:.1f}",
            ]
        )
    return markdown_table(
        ["model", "median s per epoch, 100 %", "minutes, 6-epoch runs"], rows
    )


def total_minutes(exp: Experiment) -> float:
    """The recorded time of every saved run of the experiment, in minutes."""
    return sum(_run_seconds(r) for runs in exp.runs.values() for r in runs) / 60


# --------------------------------------------------------------------------- verdicts
def test_set_noise(accuracy: float, n: int = SAMPLE_TEST_SIZE) -> float:
    """The binomial standard error √(p(1 − p)/n) of an accuracy p measured on n test images: the
    noise of one accuracy from the finite test set alone (1.5 points at p = 0.4, n = 1,017)."""
    return math.sqrt(max(accuracy * (1 - accuracy), 0.0) / n)


def gain_verdict(
    init: Sequence[float],
    base: Sequence[float],
    claimed_gain: float = 0.0,
    n_images: int = SAMPLE_TEST_SIZE,
    init_runs: Optional[Sequence] = None,
    base_runs: Optional[Sequence] = None,
) -> Tuple[str, str]:
    """The verdict on "``init`` is above ``base``" (by more than ``claimed_gain``, a fraction)
    by the book's one rule (:func:`attnconv.experiments.verdicts.judge`, a superiority claim): the
    95 % interval of the mean difference carrying the seeds and the ``n_images`` test images —
    paired when ``init_runs`` and ``base_runs`` (the runs themselves) kept their per-image
    predictions, else the conservative unpaired interval from the final accuracies ``init`` and
    ``base``. *reproduced* when the interval lies above ``claimed_gain``, *not reproduced* when it
    lies below, *inconclusive* otherwise (with the smallest difference the runs could detect)."""
    if init_runs and base_runs:
        a, b = accuracy_side(init_runs), accuracy_side(base_runs)
    else:
        a, b = Side(tuple(init), None, n_images), Side(tuple(base), None, n_images)
    verdict, reason, _ = judge(SUPERIORITY, a, b, margin=claimed_gain or None)
    numbers = (
        f"{100 * a.mean:.1f} vs {100 * b.mean:.1f} % (seeds {100 * min(a.values):.1f} to "
        f"{100 * max(a.values):.1f} vs {100 * min(b.values):.1f} to {100 * max(b.values):.1f} %)"
    )
    return verdict, f"{numbers}; {reason}"


def _combine(verdicts: Sequence[str]) -> str:
    """A claim tested at several sizes: reproduced when every size reproduces it, not reproduced
    when some size lies against it, inconclusive otherwise."""
    if all(v == REPRODUCED for v in verdicts):
        return REPRODUCED
    if any(v == NOT_REPRODUCED for v in verdicts):
        return NOT_REPRODUCED
    return INCONCLUSIVE


@dataclass(frozen=True)
class _Spec:
    quote: str
    source: str
    test: str
    init: str
    fractions: Tuple[float, ...]
    claimed_gain: float = 0.0


#: The later papers' claims, quoted from their abstracts, and how each is tested here.
_SPECS = (
    _Spec(
        "The resulting convolutional-like ViT architecture, ConViT, outperforms the DeiT "
        "[...] on ImageNet, while offering a much improved sample efficiency.",
        "d'Ascoli et al. 2021, abstract",
        "the sample-efficiency part: the ConViT-initialised GPSA model above the same model "
        "at the default initialisation at 10 % and 25 % of the sample.",
        "convit",
        (0.10, 0.25),
    ),
    _Spec(
        "experimental results show that the construction in our proof can help inject "
        "convolutional bias into Transformers and significantly improve the performance of "
        "ViT in low data regimes.",
        "Li et al. 2021, abstract",
        "the paper's construction (heads on random shifts of the 3×3 window at Lemma 2's "
        "near one-hot width) above the default initialisation at 10 % and 25 % of the sample.",
        "impulse",
        (0.10, 0.25),
    ),
    _Spec(
        "Our approach achieves state-of-the-art performance for data-efficient ViT learning "
        "across numerous benchmarks including CIFAR-10, CIFAR-100, and SVHN.",
        "Zheng et al. 2024, abstract",
        "the impulse initialisation above the default initialisation at every size of the "
        "sample (state of the art is not testable here).",
        "impulse",
        FRACTIONS,
    ),
    _Spec(
        'simply initializing the weights of self-attention layers so that they "look" more '
        "like their pre-trained counterparts allows us to train vanilla Transformers faster "
        "and to higher final accuracies, particularly on vision tasks such as CIFAR-10 and "
        "ImageNet classification, where we see gains in accuracy of over 5% and 4%, "
        "respectively.",
        "Trockman & Kolter 2023, abstract",
        "the mimetic-initialised model above the default initialisation by more than 5 points "
        "on the full sample.",
        "mimetic",
        (1.0,),
        0.05,
    ),
)


def later_claims(exp: Experiment) -> List[Claim]:
    """The later papers' claims with the book's verdict, from the saved runs (a size without runs
    of both models is left out; a claim with no size left is inconclusive for want of runs)."""
    return later_claims_from(final_accuracies(exp), exp.runs)


def later_claims_from(
    acc: Mapping[str, Sequence[float]], runs: Optional[Mapping[str, Sequence]] = None
) -> List[Claim]:
    """:func:`later_claims` from ``{series name: final test accuracy of each seed}`` (and the runs
    themselves, ``runs``, for the paired interval where they kept their predictions)."""
    runs = runs or {}
    claims = []
    for spec in _SPECS:
        evidence, verdicts = [], []
        cases = [(f, series_name, f"{EPOCHS} epochs") for f in spec.fractions]
        cases += [
            (f, steps_series_name, f"{equal_steps_epochs(f)} epochs, same steps")
            for f in spec.fractions
            if f in STEPS_FRACTIONS
        ]
        for f, name, budget in cases:
            mine = acc.get(name(spec.init, f)) or []
            base = acc.get(name("random", f)) or []
            if not mine or not base:
                continue
            verdict, numbers = gain_verdict(
                mine,
                base,
                spec.claimed_gain,
                init_runs=runs.get(name(spec.init, f)),
                base_runs=runs.get(name("random", f)),
            )
            verdicts.append(verdict)
            evidence.append(
                Evidence(f"{round(100 * f)} %, {budget}", f"{numbers}: {verdict}")
            )
        if not evidence:
            evidence = [Evidence("none saved", "the runs are not saved yet")]
            verdict, reason = INCONCLUSIVE, "the runs are not saved yet"
        else:
            verdict = _combine(verdicts)
            reason = (
                "the same verdict at every size tested"
                if len(set(verdicts)) == 1
                else "the sizes tested disagree: " + ", ".join(verdicts)
            )
        claims.append(
            Claim(spec.quote, spec.source, spec.test, evidence, verdict, reason)
        )
    return claims


def claims_markdown(claims: Sequence[Claim]):
    """The claims as Markdown (an ``IPython.display.Markdown``): per claim the quote and its
    source, the test as written, one line of evidence per size and budget, and the verdict."""
    from IPython.display import Markdown

    blocks = []
    for c in claims:
        lines = [
            f"**“{c.quote}”** ({c.source})",
            "",
            f"*Tested as:* {c.test}",
            "",
        ]
        lines += [
            f"* {e.run}: {e.measured.replace('; ' + WITHIN_NOISE, '')}"
            for e in c.evidence
        ]
        lines += ["", f"**Verdict: {c.verdict}** ({c.reason}).", ""]
        blocks.append("\n".join(lines))
    return Markdown("\n".join(blocks))
