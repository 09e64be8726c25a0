"""The data-efficiency experiment of the chapter *Beyond the paper*: a plain vision transformer
and the GPSA classifier (:mod:`attnconv.experiments.gpsa_models`) under each start
(:mod:`attnconv.experiments.initialisations`), trained with the later papers' recipe scaled down
on nested subsets of the bundled CIFAR-10 sample, every run for the same number of steps.

* Models (:data:`STARTS`): ``vit`` — plain multi-head self-attention with a learned absolute
  position embedding (DeiT-style), the baseline ConViT is compared with; ``random`` — GPSA at the
  vision transformers' default start; ``convit`` — ConViT's local start; ``mimetic`` —
  Trockman & Kolter's; ``impulse`` — Theorem 1's layer on impulse filters. Every model has the
  same width, depth, heads, patch embedding and position embedding; only the attention layer
  (MHSA or GPSA) and its starting weights differ.
* The ablation (:data:`ABLATION_STARTS`): mimetic's query–key half alone, its value/output half
  alone, at :data:`ABLATION_SIZES`.
* Sizes (:data:`SIZES`): the first n training images of the sample (each subset holds the
  smaller ones), the same 1,017 test images for all.
* Budget: :data:`STEPS` optimizer steps of :data:`BATCH` images at every size (51 epochs at 510
  images, 18 at 1,700, 6 at 5,085), test evaluation about every :data:`STEPS`/3 steps and after
  the last; :data:`SEEDS` seeds, paired across starts (seed k of every start sees the same batches
  and augmentation).
* Recipe (:data:`RECIPE`, the later papers' — DeiT/ConViT: AdamW, weight decay 0.05 off for
  biases, norms, gates and position parameters, linear warm-up then cosine decay, label smoothing
  0.1 — scaled to 306 steps): learning rate :data:`LR` and no crop-and-flip augmentation, chosen
  on a five-run sweep at 510 images and 306 steps (:data:`SWEEP`): with crop and flip the model
  does not fit 510 images in 306 steps (31 % train accuracy) and tests lower; the positional
  learning-rate multiplier of the paper's models is not used (1).

:func:`beyond_runs` lists the runs for the registry (registered at the end of
:mod:`attnconv.experiments.registry`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterator, Tuple

__all__ = [
    "SAMPLE_TRAIN_SIZE",
    "SIZES",
    "SEEDS",
    "BATCH",
    "STEPS",
    "LR",
    "SWEEP",
    "STARTS",
    "ABLATION_STARTS",
    "ABLATION_SIZES",
    "MODEL",
    "RECIPE",
    "BeyondRun",
    "steps_per_epoch",
    "epochs_for",
    "evaluate_every",
    "model_overrides",
    "series_name",
    "run_name",
    "ORDER",
    "beyond_runs",
]

#: Training images of the bundled sample (attnconv/data/cifar10-sample.npz).
SAMPLE_TRAIN_SIZE = 5085
#: Training-set sizes: about 500 images to the whole sample (6, 17 and 51 steps per epoch).
SIZES: Tuple[int, ...] = (510, 1700, 5085)
#: Seeds per start and size, paired across starts.
SEEDS = 4
#: Images per step.
BATCH = 100
#: Optimizer steps of every run (6 epochs of the whole sample; a multiple of 6, 17 and 51).
STEPS = 306
#: AdamW's learning rate (peak, after the warm-up).
LR = 1e-2
#: The settings tried before the grid (GPSA at the default start, 510 images, seed 0, 306 steps:
#: the grid's length, AdamW with warm-up and cosine decay): (learning rate, crop and
#: flip, label smoothing, weight decay) → (final train accuracy, final test accuracy). The last
#: is the grid's recipe.
SWEEP: Dict[Tuple[float, bool, float, float], Tuple[float, float]] = {
    (3e-3, True, 0.1, 0.05): (0.2804, 0.2380),
    (1e-2, True, 0.1, 0.05): (0.3137, 0.2566),
    (3e-3, False, 0.0, 0.05): (0.4314, 0.2852),
    (1e-2, False, 0.0, 0.0): (0.6373, 0.3038),
    (1e-2, False, 0.1, 0.05): (0.7059, 0.2970),
}
#: The compared models (the first is the plain ViT).
STARTS: Tuple[str, ...] = ("vit", "random", "convit", "mimetic", "impulse")
#: Mimetic's halves alone.
ABLATION_STARTS: Tuple[str, ...] = ("mimetic_qk", "mimetic_vo")
#: The sizes of the ablation.
ABLATION_SIZES: Tuple[int, ...] = (510, 5085)
#: The architecture of every model: 2 layers of 9 heads (a 3×3 lattice), hidden 36 (4 per head),
#: 4×4 tokens of 8×8 pixels (a step costs 0.03 s of one core against 0.22 s with 8×8 tokens of
#: 4×4 pixels: what lets 76 runs fit in the budget), a learned absolute position embedding, no
#: dropout (the models should be able to fit a small training set): 29k parameters.
MODEL = dict(
    hidden_size=36,
    intermediate_size=72,
    num_layers=2,
    num_heads=9,
    downsample=8,
    hidden_dropout=0.0,
    position_embedding=True,
)
#: The recipe's changes to the ``cpu`` profile (see the module docstring).
RECIPE = dict(
    optimizer="adamw",
    lr=LR,
    weight_decay=0.05,
    schedule="warmup_cosine",
    warmup_fraction=0.1,
    label_smoothing=0.1,
    augment=False,
    attention_lr_multiplier=1.0,
    batch_size=BATCH,
    eval_batch_size=100,
)


def steps_per_epoch(size: int) -> int:
    """Optimizer steps per epoch on ``size`` images (the last batch may be short)."""
    return -(-size // BATCH)


def epochs_for(size: int) -> int:
    """Epochs of :data:`STEPS` steps on ``size`` images (a one-line error if they do not divide)."""
    per = steps_per_epoch(size)
    if STEPS % per:
        raise ValueError(f"{STEPS} steps are not whole epochs of {per} steps")
    return STEPS // per


def evaluate_every(size: int) -> int:
    """Epochs between test evaluations: about three evaluations per run, the last after the
    last epoch."""
    return max(1, epochs_for(size) // 3)


def model_overrides(start: str) -> dict:
    """The GPSA classifier's settings for ``start`` (``vit``: plain MHSA, default weights)."""
    if start == "vit":
        return dict(MODEL, attention="mhsa", init="random")
    return dict(MODEL, init=start)


def series_name(start: str, size: int) -> str:
    """``beyond2/<start>/n<size>``: the runs of one start at one size, over seeds."""
    return f"beyond2/{start}/n{size}"


def run_name(start: str, size: int, seed: int) -> str:
    """``beyond2/<start>/n<size>/seed<k>``."""
    return f"{series_name(start, size)}/seed{seed}"


@dataclass(frozen=True)
class BeyondRun:
    """One run to register: its name, the registry's model name, its series and the changes to
    the ``cpu`` profile's :class:`~attnconv.experiments.train_config.TrainConfig`."""

    name: str
    model: str
    series: str
    changes: dict
    description: str


def _run(start: str, size: int, seed: int) -> BeyondRun:
    changes = dict(
        RECIPE,
        epochs=epochs_for(size),
        evaluate_every=evaluate_every(size),
        seed=seed,
        model_overrides=model_overrides(start),
    )
    if size < SAMPLE_TRAIN_SIZE:
        changes["train_subset"] = size
    return BeyondRun(
        run_name(start, size, seed),
        "gpsa",
        series_name(start, size),
        changes,
        f"{start} on {size} images for {STEPS} steps, seed {seed}",
    )


#: The order the runs are made in (seeds, sizes), so that a run cut short by the machine's load
#: still holds three seeds at the smallest and largest sizes, ablation included: then the middle
#: size, then the fourth seed.
ORDER: Tuple[Tuple[Tuple[int, ...], Tuple[int, ...]], ...] = (
    ((0, 1, 2), (510, 5085)),
    ((0, 1, 2), (1700,)),
    (tuple(range(3, SEEDS)), SIZES),
)


def beyond_runs() -> Iterator[BeyondRun]:
    """Every run of the experiment once, in :data:`ORDER`; at each seed and size every start,
    then the ablation's."""
    for seeds, sizes in ORDER:
        for seed in seeds:
            for size in sizes:
                for start in STARTS:
                    yield _run(start, size, seed)
                if size in ABLATION_SIZES:
                    for start in ABLATION_STARTS:
                        yield _run(start, size, seed)
