"""The data-efficiency experiment of the chapter *Beyond the paper*: the GPSA classifier
(:mod:`attnconv.experiments.gpsa_models`) under each initialisation, and ResNet18 as the
convolutional reference, trained on nested subsets of the bundled CIFAR-10 sample.

* Sizes: :data:`FRACTIONS` of the 5,085 training images, the first n of the sample (so each subset
  holds the smaller ones), the same 1,017 test images for all.
* Seeds: 3 at each fraction below 100 %, 5 at 100 % (:data:`SEEDS`).
* Budget: :data:`EPOCHS` epochs at every size (equal epochs, so a run on 10 % takes 6 steps per
  epoch where a run on 100 % takes 51), the ``cpu`` profile's optimiser (SGD, lr 0.1, warm-up +
  cosine for the attention models; ResNet18's step schedule), the same architecture and settings
  for every initialisation.

:func:`beyond_runs` lists the runs for the registry (registered at the end of
:mod:`attnconv.experiments.registry`); :func:`accuracy_summary` reduces the saved runs to the
numbers the chapter plots.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from .initialisations import INITIALISATIONS

__all__ = [
    "SAMPLE_TRAIN_SIZE",
    "FRACTIONS",
    "SEEDS",
    "EPOCHS",
    "GPSA_OVERRIDES",
    "MODELS",
    "BeyondRun",
    "subset_size",
    "run_name",
    "series_name",
    "beyond_runs",
    "STEPS_FRACTIONS",
    "STEPS_SEEDS",
    "steps_per_epoch",
    "equal_steps_epochs",
    "steps_series_name",
    "steps_runs",
    "SizeSummary",
    "accuracy_summary",
]

#: Training images of the bundled sample (attnconv/data/cifar10-sample.npz).
SAMPLE_TRAIN_SIZE = 5085
#: Fractions of the sample each model is trained on.
FRACTIONS: Tuple[float, ...] = (0.10, 0.25, 0.50, 1.00)
#: Seeds per fraction: 5 at the full sample, 3 below.
SEEDS: Dict[float, int] = {0.10: 3, 0.25: 3, 0.50: 3, 1.00: 5}
#: Epochs of every run (equal epochs at every size; see the module docstring).
EPOCHS = 6
#: The GPSA classifier of the experiment: 2 layers of 9 heads (a 3×3 lattice), hidden 54 (6 per
#: head), 8×8 tokens of 4×4 pixels: 51k parameters, small enough for 70 runs on two shared cores.
GPSA_OVERRIDES = dict(
    hidden_size=54, intermediate_size=108, num_layers=2, num_heads=9, downsample=4
)
#: The compared models: the four initialisations of the GPSA classifier, then ResNet18.
MODELS: Tuple[str, ...] = tuple(INITIALISATIONS) + ("resnet18",)


def subset_size(fraction: float) -> Optional[int]:
    """The number of training images at ``fraction`` (``None``: the whole sample)."""
    return None if fraction >= 1 else round(fraction * SAMPLE_TRAIN_SIZE)


def _percent(fraction: float) -> int:
    return round(100 * fraction)


def series_name(model: str, fraction: float) -> str:
    """``beyond/<model>/frac<percent>``: the runs of one model at one size, over seeds."""
    return f"beyond/{model}/frac{_percent(fraction)}"


def run_name(model: str, fraction: float, seed: int) -> str:
    """``beyond/<model>/frac<percent>/seed<k>``."""
    return f"{series_name(model, fraction)}/seed{seed}"


@dataclass(frozen=True)
class BeyondRun:
    """One run to register: its name, the registry's model name, its series and the changes to
    the ``cpu`` profile's :class:`~attnconv.experiments.train.TrainConfig`."""

    name: str
    model: str
    series: str
    changes: dict
    description: str


#: The equal-steps complement: the small sizes trained for as many steps as the full sample
#: (:data:`EPOCHS` × 51 steps of 100 images), 3 seeds each, under ``beyond-steps/``.
STEPS_FRACTIONS: Tuple[float, ...] = (0.10, 0.25)
STEPS_SEEDS = 3


def steps_per_epoch(fraction: float, batch_size: int = 100) -> int:
    """Optimizer steps per epoch on ``fraction`` of the sample (the last batch may be short)."""
    return -(-(subset_size(fraction) or SAMPLE_TRAIN_SIZE) // batch_size)


def equal_steps_epochs(fraction: float) -> int:
    """Epochs on ``fraction`` of the sample that give the steps of :data:`EPOCHS` epochs on all
    of it (rounded)."""
    return round(EPOCHS * steps_per_epoch(1.0) / steps_per_epoch(fraction))


def steps_series_name(model: str, fraction: float) -> str:
    """``beyond-steps/<model>/frac<percent>``."""
    return f"beyond-steps/{model}/frac{_percent(fraction)}"


def steps_runs() -> Iterator[BeyondRun]:
    """The equal-steps runs, seed by seed."""
    for seed in range(STEPS_SEEDS):
        for fraction in STEPS_FRACTIONS:
            for model in MODELS:
                changes = dict(
                    epochs=equal_steps_epochs(fraction),
                    seed=seed,
                    train_subset=subset_size(fraction),
                )
                if model != "resnet18":
                    changes["model_overrides"] = dict(GPSA_OVERRIDES, init=model)
                yield BeyondRun(
                    f"{steps_series_name(model, fraction)}/seed{seed}",
                    "resnet18" if model == "resnet18" else "gpsa",
                    steps_series_name(model, fraction),
                    changes,
                    f"{model} on {_percent(fraction)} % of the sample for the full sample's "
                    f"steps, seed {seed}",
                )


def beyond_runs() -> Iterator[BeyondRun]:
    """Every run of the experiment, seed by seed (so that the regenerate command makes a complete
    first seed of every model and size before the next seed), the full sample first."""
    for seed in range(max(SEEDS.values())):
        for fraction in sorted(FRACTIONS, reverse=True):
            if seed >= SEEDS[fraction]:
                continue
            for model in MODELS:
                changes = dict(epochs=EPOCHS, seed=seed)
                if subset_size(fraction) is not None:
                    changes["train_subset"] = subset_size(fraction)
                if model != "resnet18":
                    changes["model_overrides"] = dict(GPSA_OVERRIDES, init=model)
                yield BeyondRun(
                    run_name(model, fraction, seed),
                    "resnet18" if model == "resnet18" else "gpsa",
                    series_name(model, fraction),
                    changes,
                    f"{model} on {_percent(fraction)} % of the sample, seed {seed}",
                )


@dataclass(frozen=True)
class SizeSummary:
    """The final test accuracies of one model at one size over its seeds."""

    model: str
    fraction: float
    accuracies: Tuple[float, ...]

    @property
    def mean(self) -> float:
        return sum(self.accuracies) / len(self.accuracies)

    @property
    def low(self) -> float:
        return min(self.accuracies)

    @property
    def high(self) -> float:
        return max(self.accuracies)


def accuracy_summary(
    final_accuracy: Dict[str, List[float]],
    models: Sequence[str] = MODELS,
) -> List[SizeSummary]:
    """Summaries from ``{series name: [final test accuracy of each seed]}`` (series with no saved
    run left out)."""
    out = []
    for model in models:
        for fraction in FRACTIONS:
            accs = final_accuracy.get(series_name(model, fraction)) or []
            if accs:
                out.append(SizeSummary(model, fraction, tuple(accs)))
    return out
