"""What "CPU scale" means, said once: the full box where the training chapters begin and where
the verdicts are gathered, a one-line link to it in the others (:func:`scale_box`). Its numbers are read from the run settings
(:mod:`attnconv.experiments.profiles`), the bundled sample and the frozen protocol's split, so the
box cannot disagree with the runs it describes."""

from __future__ import annotations

import functools
from typing import Tuple

from ...evidence.protocol import CONFIRMATORY_SEEDS, SPLIT
from ...experiments.data import CIFAR10_TRAIN_IMAGES, load_cifar10_sample
from ...experiments.profiles import make_config

__all__ = ["scale_title", "scale_box", "SCALE_LABEL"]


@functools.lru_cache(maxsize=None)
def _sample_sizes() -> Tuple[int, int]:
    """Training and test images of the bundled CIFAR-10 sample."""
    data = load_cifar10_sample()
    return len(data.y_train), len(data.y_test)


def scale_title() -> str:
    """The box's title, which carries the three numbers that make the scale: ``At CPU scale:
    hidden size 32, 5,085 images, 40 epochs``."""
    deep = make_config("quadratic", "deep")
    n_train, _ = _sample_sizes()
    hidden = deep.model_config().hidden_size
    return (
        f"At CPU scale: hidden size {hidden}, {n_train:,} images, {deep.epochs} epochs"
    )


#: The label of the full box, which the one-line form links to.
SCALE_LABEL = "sec-cpu-scale"


def scale_box(runs: str = "", full: bool = False, label: bool = False) -> str:
    """What CPU scale means, in MyST. ``full``: the box, collapsed under :func:`scale_title`:
    the six-layer models against the paper's, the data and its split, and what a verdict at
    this scale can say; ``runs`` (one sentence) says which runs the chapter reads, and
    ``label`` makes it the target (:data:`SCALE_LABEL`) of the one-line form. Otherwise one
    line: the title, linked to the full box."""
    if not full:
        return f"*{scale_title()}* ({{ref}}`what that means <{SCALE_LABEL}>`)."
    deep, paper = (make_config("quadratic", p) for p in ("deep", "paper"))
    ours, theirs = deep.model_config(), paper.model_config()
    side = ours.tokens_per_side
    n_train, n_test = _sample_sizes()
    content = make_config("learned_content", "deep").epochs
    seeds = f"{CONFIRMATORY_SEEDS[0]}–{CONFIRMATORY_SEEDS[-1]}"
    body = (
        f"The six-layer models keep the paper's depth and grid: {ours.num_layers} layers of "
        f"{ours.num_heads} heads on {side}×{side} tokens of {ours.downsample}×"
        f"{ours.downsample} pixels, with the paper's initialisations. They are narrow, hidden "
        f"size {ours.hidden_size} instead of {theirs.hidden_size}. They train {deep.epochs} "
        f"epochs instead of {paper.epochs} (the content model {content}), on a "
        f"{n_train:,}-image sample of CIFAR-10 instead of {CIFAR10_TRAIN_IMAGES:,}, and are "
        f"tested on its {n_test:,} test images. The fresh seeds ({seeds}) hold "
        f"{SPLIT['validation_images']:,} training images out, to choose learning rates. Two "
        "CPU cores can train them; some runs were made on a GPU.\n\n"
        "So their numbers are never the paper's. A verdict says what such runs show: a claim "
        "they do not reproduce is not shown wrong, since wide models trained on the full data "
        "for the paper's epochs may behave as it says."
    )
    more = f"\n\n{runs}" if runs else ""
    target = f"({SCALE_LABEL})=\n" if label else ""
    return (
        f"{target}```{{admonition}} {scale_title()}\n:class: dropdown scale-box\n\n"
        f"{body}{more}\n```"
    )
