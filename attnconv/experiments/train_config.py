"""The settings of a training run and the optimisation they define (paper Sec. 4, the authors'
code epfml/attention-cnn): :class:`TrainConfig`, the SGD parameter groups and the learning-rate
schedule."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Dict, List, Optional, Tuple

import torch
from torch import nn

from .device import PRECISIONS
from .models import MODEL_NAMES, paper_model_config

__all__ = [
    "GAUSSIAN_PARAMETER_NAMES",
    "OPTIMIZERS",
    "RECIPE_DEFAULTS",
    "TrainConfig",
    "decays",
    "parameter_groups",
    "make_optimizer",
    "lr_factor",
    "make_scheduler",
]

GAUSSIAN_PARAMETER_NAMES = ("centers", "spread", "alpha", "inv_sqrt_sigma")
OPTIMIZERS = ("sgd", "adamw")
#: Fields a saved config lists only when they differ from these defaults.
RECIPE_DEFAULTS = {
    "optimizer": "sgd",
    "betas": [0.9, 0.999],
    "label_smoothing": 0.0,
    "evaluate_every": 1,
    "validation": 0,
}
#: Parameter names (last component) AdamW never decays: GPSA's gates and positional weights, the
#: absolute position embedding. Only the position embedding is in ConViT/DeiT's
#: ``no_weight_decay`` set (timm's ConViT leaves the 1-D gates undecayed as every 1-D parameter,
#: and decays ``pos_proj.weight``): exempting GPSA's positional weights (:data:`NO_DECAY_MODULES`)
#: is the book's choice, kept because the saved runs were made with it. Biases and norm weights
#: (every 1-D parameter) are not decayed either.
NO_DECAY_NAMES = ("gating_param", "pos_embed")
NO_DECAY_MODULES = ("pos_proj",)


@dataclass
class TrainConfig:
    """Everything that defines a training run (the model is ``model`` at paper size plus
    ``model_overrides``, fields of :class:`~attnconv.experiments.models.SelfAttentionConfig` or
    :class:`~attnconv.experiments.models.ResNetConfig`)."""

    model: str = "quadratic"
    model_overrides: Dict[str, Any] = field(default_factory=dict)
    profile: str = "custom"
    epochs: int = 300
    batch_size: int = 100
    eval_batch_size: int = 500
    lr: float = 0.1
    momentum: float = 0.9
    weight_decay: float = 1e-4
    schedule: str = (
        "warmup_cosine"  # "warmup_cosine" (self-attention) | "step" (ResNet18)
    )
    warmup_fraction: float = 0.05
    milestones: Tuple[int, ...] = (80, 150, 250)  # epochs, for schedule="step"
    gamma: float = 0.1
    attention_lr_multiplier: float = (
        1.0  # learning rate × this for the positional encodings
    )
    data: str = "auto"  # "auto" | "full" | "sample"
    data_root: Optional[str] = None
    train_subset: Optional[int] = None  # first n training images only
    test_subset: Optional[int] = None
    augment: bool = True
    seed: int = 0
    device: Optional[str] = None  # None: cuda if available, else cpu
    bf16: bool = True  # bf16 autocast on CUDA (ignored on CPU) when precision is None
    # None: the default above; "fp32" | "bf16" | "fp16" on any device (bf16 on the CPU runs the
    # CUDA code path; a card without bf16 falls back to fp16 with loss scaling), see
    # attnconv.experiments.device.resolve_precision.
    precision: Optional[str] = None
    # The later papers' recipe (chapter 18), all off by default so earlier runs train as before:
    # "sgd" (momentum, weight decay on every parameter but the Gaussian ones) | "adamw" (decoupled
    # weight decay, none on biases, norms, gates and position parameters: see parameter_groups;
    # sparing GPSA's pos_proj is the book's choice, timm's ConViT decays it).
    optimizer: str = "sgd"
    betas: Tuple[float, float] = (0.9, 0.999)  # adamw only
    label_smoothing: float = 0.0  # of the training loss
    evaluate_every: int = (
        1  # test evaluation every k-th epoch (and always after the last)
    )
    # The last n images of the training set held out as the validation set: every evaluated
    # epoch is then measured on them, and the test set is read once, after the last epoch.
    # train_subset takes the first images of what is left.
    validation: int = 0

    def __post_init__(self):
        self.milestones = tuple(int(m) for m in self.milestones)
        self.betas = tuple(float(b) for b in self.betas)
        self.model_overrides = dict(self.model_overrides)
        if self.model not in MODEL_NAMES:
            raise ValueError(f"model must be one of {MODEL_NAMES}, got {self.model!r}")
        if self.schedule not in ("warmup_cosine", "step"):
            raise ValueError(
                f"schedule must be 'warmup_cosine' or 'step', got {self.schedule!r}"
            )
        if self.data not in ("auto", "full", "sample"):
            raise ValueError(
                f"data must be 'auto', 'full' or 'sample', got {self.data!r}"
            )
        if self.epochs < 1 or self.batch_size < 1 or self.eval_batch_size < 1:
            raise ValueError("epochs, batch_size and eval_batch_size must be >= 1")
        if not 0 <= self.warmup_fraction < 1:
            raise ValueError("warmup_fraction must be in [0, 1)")
        if self.lr <= 0 or self.attention_lr_multiplier < 0 or self.weight_decay < 0:
            raise ValueError(
                "lr must be > 0, attention_lr_multiplier and weight_decay >= 0"
            )
        if self.precision is not None and self.precision not in PRECISIONS:
            raise ValueError(
                f"precision must be one of {PRECISIONS} or None, got {self.precision!r}"
            )
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(
                f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}"
            )
        if not 0 <= self.label_smoothing < 1 or self.evaluate_every < 1:
            raise ValueError("label_smoothing must be in [0, 1), evaluate_every >= 1")
        if self.validation < 0:
            raise ValueError(f"validation must be >= 0 images, got {self.validation}")
        self.model_config()  # validates the overrides

    def model_config(self):
        """The model's config: the paper's, with ``model_overrides``."""
        return paper_model_config(self.model, **self.model_overrides)

    def to_dict(self) -> dict:
        """A JSON-ready dict (tuples become lists). ``precision`` and the recipe fields
        (:data:`RECIPE_DEFAULTS`) are left out while they are the default, so the configs of runs
        saved before they existed stay the same."""
        d = json.loads(json.dumps(asdict(self)))
        if d["precision"] is None:
            del d["precision"]
        for name, default in RECIPE_DEFAULTS.items():
            if d[name] == default:
                del d[name]
        return d

    def evaluates(self, epoch: int) -> bool:
        """Whether the held-out set (the validation set when there is one, else the test set) is
        evaluated after ``epoch`` (1-based)."""
        return epoch % self.evaluate_every == 0 or epoch == self.epochs

    def reads_test(self, epoch: int) -> bool:
        """Whether the test set is evaluated after ``epoch``: with a validation set only after
        the last epoch (the test set is read once), else whenever :meth:`evaluates`."""
        return epoch == self.epochs if self.validation else self.evaluates(epoch)

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"unknown TrainConfig fields: {sorted(unknown)}")
        return cls(**d)


def decays(name: str, parameter: torch.Tensor) -> bool:
    """Whether AdamW decays the parameter ``name``: not biases and norm weights (1-D), gates,
    positional weights or position embeddings (:data:`NO_DECAY_NAMES`, :data:`NO_DECAY_MODULES`),
    nor the Gaussian attention parameters."""
    parts = name.split(".")
    return not (
        parameter.ndim <= 1
        or parts[-1] in NO_DECAY_NAMES + GAUSSIAN_PARAMETER_NAMES
        or any(m in parts for m in NO_DECAY_MODULES)
    )


def parameter_groups(model: nn.Module, config: TrainConfig) -> List[dict]:
    """The optimiser's parameter groups. SGD: weight decay on everything except the Gaussian
    attention parameters (Δ, s, M); AdamW: weight decay only where :func:`decays`. Learning rate ×
    ``attention_lr_multiplier`` on every positional-encoding parameter (names containing
    ``.encoding.``: the paper's models; GPSA models have none, their configs keep it at 1)."""
    groups: Dict[Tuple[float, float], dict] = {}
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        encoding = ".encoding." in f".{name}"
        gaussian = encoding and name.rsplit(".", 1)[-1] in GAUSSIAN_PARAMETER_NAMES
        if config.optimizer == "adamw":
            wd = config.weight_decay if decays(name, p) else 0.0
        else:
            wd = 0.0 if gaussian else config.weight_decay
        mult = config.attention_lr_multiplier if encoding else 1.0
        g = groups.setdefault(
            (wd, mult),
            {
                "params": [],
                "names": [],
                "weight_decay": wd,
                "lr": config.lr * mult,
                "lr_multiplier": mult,
            },
        )
        g["params"].append(p)
        g["names"].append(name)
    return list(groups.values())


def make_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    """SGD with momentum (the paper's) or AdamW (``config.optimizer``) on
    :func:`parameter_groups`."""
    groups = parameter_groups(model, config)
    for g in groups:
        g.pop("names")
    if config.optimizer == "adamw":
        return torch.optim.AdamW(
            groups, lr=config.lr, betas=config.betas, weight_decay=config.weight_decay
        )
    return torch.optim.SGD(
        groups, lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay
    )


def lr_factor(step: int, config: TrainConfig, steps_per_epoch: int) -> float:
    """Multiplier of the base learning rate at optimizer step ``step`` (0-based).

    ``warmup_cosine`` (the authors' ``linear_warmup_cosine_lr_scheduler``): with S total steps and
    W = int(S·warmup_fraction), step/W for step < W, then ½(1 + cos(π (step − W)/(S − W))).
    ``step``: gamma^(number of milestones ≤ the step's epoch), epochs counted from 0.
    """
    if step < 0 or steps_per_epoch < 1:
        raise ValueError("step must be >= 0 and steps_per_epoch >= 1")
    total = config.epochs * steps_per_epoch
    if config.schedule == "warmup_cosine":
        warm = int(total * config.warmup_fraction)
        if step < warm:
            return step / warm
        progress = min(1.0, (step - warm) / max(1, total - warm))
        return 0.5 * (1.0 + math.cos(math.pi * progress))
    epoch = step // steps_per_epoch
    return config.gamma ** sum(epoch >= m for m in config.milestones)


def make_scheduler(
    optimizer, config: TrainConfig, steps_per_epoch: int
) -> torch.optim.lr_scheduler.LambdaLR:
    """A ``LambdaLR`` stepped after every batch with :func:`lr_factor`."""
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_factor(s, config, steps_per_epoch)
    )
