"""Training profiles: the paper's settings, a GPU budget and a CPU budget.

* ``paper`` — Sec. 4 and Table 2 (App. A.4): the models at paper size (6 layers, 9 heads, hidden
  400, 16×16 tokens), full CIFAR-10, 300 epochs, batch 100, SGD lr 0.1 (warm-up + cosine). The
  paper gives no ResNet18 schedule; its steps at epochs 80/150/250 come from the authors' run
  scripts. Hours per model on one GPU. Chapter 14 compares every profile with Table 2.
* ``gpu`` — the same models and optimiser on full CIFAR-10, fewer epochs, so that each model
  trains in about 15 minutes on one modern GPU (see :data:`GPU_ESTIMATE` for the roofline).
* ``gpu-sample`` — the paper's models at paper size on the bundled sample (5,085 / 1,017 images),
  for a lent GPU without network (``make gpu-window``); its runs are GPU runs of sample data,
  shown as such beside the CPU-scale ones.
* ``cpu`` — the default without CUDA: small models on the bundled CIFAR-10 sample (5,085 / 1,017
  images), each trained within about 5 minutes on 2 CPU cores (:data:`CPU_MEASURED_SECONDS_PER_EPOCH`).
  With a 10× learning rate on the positional encodings the Gaussian heads visibly move: in 8
  epochs of the quadratic model, centres moved 0.55-0.66 token on average and spreads went from
  1 to 0.33-2.4 (first-layer heads near the query sharpened, second-layer heads widened).

* ``deep`` — the paper's depth and token grid (6 layers × 9 heads, 16×16 tokens of 2×2 pixels) at
  hidden 32 on the bundled sample, local attention for the Gaussian models: about 30 s per epoch
  on one core (:data:`DEEP_MEASURED_SECONDS_PER_STEP`).

``make_config("quadratic", "cpu", epochs=3)`` returns the :class:`~attnconv.experiments.train_config.TrainConfig`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from .device import cuda_available
from .models import GAUSSIAN_MODELS, MODEL_NAMES
from .store import results_dir
from .train_config import TrainConfig

__all__ = [
    "Profile",
    "PROFILES",
    "GPU_ESTIMATE",
    "gpu_seconds_per_epoch",
    "CPU_MEASURED_SECONDS_PER_EPOCH",
    "DEEP_MEASURED_SECONDS_PER_STEP",
    "get_profile",
    "default_profile_name",
    "make_config",
]


@dataclass(frozen=True)
class Profile:
    """Settings shared by all models of a profile, with per-model epochs and model overrides."""

    name: str
    description: str
    epochs: Dict[str, int]
    data: str = "auto"
    batch_size: int = 100
    eval_batch_size: int = 500
    lr: float = 0.1
    attention_lr_multiplier: float = 1.0
    self_attention_overrides: Dict[str, Any] = field(default_factory=dict)
    resnet_overrides: Dict[str, Any] = field(default_factory=dict)
    #: ResNet18's milestones (TrainConfig's, for the paper's 300 epochs) are scaled by
    #: epochs/paper_epochs
    paper_epochs: int = 300
    #: models trained with local attention (attnconv.core.local); only the Gaussian-encoding models can be
    local_attention: Tuple[str, ...] = ()

    def config(self, model: str, **changes) -> TrainConfig:
        """The :class:`TrainConfig` of ``model`` under this profile, with ``changes`` applied
        (``epochs`` among them rescales the ResNet18 milestones). Only what differs from
        :class:`TrainConfig`'s defaults is stated (the self-attention models' schedule is the
        default one)."""
        if model not in MODEL_NAMES:
            raise ValueError(f"model must be one of {MODEL_NAMES}, got {model!r}")
        epochs = int(changes.pop("epochs", self.epochs.get(model, self.paper_epochs)))
        base = dict(
            model=model,
            profile=self.name,
            epochs=epochs,
            batch_size=self.batch_size,
            eval_batch_size=self.eval_batch_size,
            lr=self.lr,
            data=self.data,
        )
        if model == "resnet18":
            base.update(
                schedule="step",
                warmup_fraction=0.0,
                model_overrides=dict(self.resnet_overrides),
                milestones=tuple(
                    max(1, round(m * epochs / self.paper_epochs))
                    for m in TrainConfig.milestones
                ),
            )
        else:
            overrides = dict(self.self_attention_overrides)
            if model in self.local_attention and model in GAUSSIAN_MODELS:
                overrides["attention_implementation"] = "local"
            base.update(
                model_overrides=overrides,
                attention_lr_multiplier=self.attention_lr_multiplier,
            )
        base.update(changes)
        return TrainConfig(**base)


#: GPU time until a card measures it (``book/results/gpu-smoke.json``): the GPU audit's roofline
#: of one H100 in bf16 (a dispatch-mode log of every op of a paper-size training step, each op
#: costed at the larger of its FLOPs at the tensor cores' rate and its bytes at HBM's, plus a
#: kernel launch): 12-16 ms a step of 100 images for the position-only models (quadratic,
#: generalized, learned), 45-55 ms for learned + content, so 500 steps and the evaluation of
#: 10,000 images make about 8 s and 26 s an epoch; ResNet18 about 5 s. The six paper runs of
#: 300 epochs (the five models and the 16-head quadratic) take 4.6-6 h on one card.
GPU_ESTIMATE = {
    "source": "roofline of the GPU audit (H100, bf16), not measured",
    "ms_per_step": {
        "quadratic": (12.0, 16.0),
        "generalized": (12.0, 16.0),
        "learned": (12.0, 16.0),
        "learned_content": (45.0, 55.0),
    },
    "seconds_per_epoch": {
        "quadratic": 8.0,
        "generalized": 8.0,
        "learned": 8.0,
        "learned_content": 26.0,
        "resnet18": 5.0,
    },
    "hours_for_the_six_paper_runs": (4.6, 6.0),
}


def gpu_seconds_per_epoch(
    smoke_file: Optional[Path] = None,
) -> Tuple[Dict[str, float], str]:
    """Seconds per epoch of 50,000 images on one GPU, per model, and where they come from: the
    images/s that ``make gpu-smoke`` measured (``book/results/gpu-smoke.json``) once it has run
    on a GPU, else :data:`GPU_ESTIMATE`'s arithmetic (``"estimated"``)."""
    path = smoke_file or results_dir() / "gpu-smoke.json"
    if path.is_file():
        smoke = json.loads(path.read_text())
        measured = {
            name: record["speed"]["seconds_per_epoch_of_50000"]
            for name, record in smoke.get("models", {}).items()
            if "speed" in record
        }
        # a dry run (tiny models on the CPU) measures nothing about a GPU
        if measured and not smoke.get("dry_run") and "cuda" in smoke["device"]:
            return measured, f"measured on {smoke['device']}"
    return dict(GPU_ESTIMATE["seconds_per_epoch"]), "estimated"


#: Seconds per epoch (5,085 training + 1,017 test images) of the ``cpu`` profile, measured on the
#: 2-core development machine with 1 torch thread while other jobs kept its load average near 4
#: (so expect these or better on an idle 2-core machine; ±30% between repeats).
CPU_MEASURED_SECONDS_PER_EPOCH: Dict[str, float] = {
    "quadratic": 11.5,
    "generalized": 11.6,
    "learned": 12.8,
    "learned_content": 39.5,
    "resnet18": 14.4,
}

PROFILES: Dict[str, Profile] = {
    "paper": Profile(
        name="paper",
        description="Sec. 4 of the paper: paper-size models, full CIFAR-10, 300 epochs.",
        epochs={m: 300 for m in MODEL_NAMES},
        data="auto",
    ),
    "gpu": Profile(
        name="gpu",
        description="Paper-size models on full CIFAR-10 with fewer epochs: about 15 minutes per model on one GPU.",
        epochs={
            "quadratic": 50,
            "generalized": 50,
            "learned": 50,
            "learned_content": 25,
            "resnet18": 100,
        },
        data="auto",
    ),
    "gpu-sample": Profile(
        name="gpu-sample",
        description="The paper's models (6 layers, 9 heads, hidden 400, 16×16 tokens) on the bundled "
        "sample, for a lent GPU without network: about a second per epoch on one H100 (estimated).",
        # 100 epochs fix the cosine schedule; `make gpu-window` trains as many of them as its
        # budget allows (the run stays resumable in a later window).
        epochs={m: 100 for m in MODEL_NAMES},
        data="sample",
    ),
    "cpu": Profile(
        name="cpu",
        description="Small models on the bundled CIFAR-10 sample: about 5 minutes per model on 2 CPU cores.",
        # 16 epochs × ~12 s, 6 × ~40 s (content scores cost 3×), 16 × ~14 s: 3.2 to 4 minutes each.
        epochs={
            "quadratic": 16,
            "generalized": 16,
            "learned": 16,
            "learned_content": 6,
            "resnet18": 16,
        },
        data="sample",
        # 8×8 tokens of 4×4 pixels, 2 layers of 9 heads, hidden 64: ~120k parameters.
        self_attention_overrides=dict(
            hidden_size=64, intermediate_size=128, num_layers=2, downsample=4
        ),
        # ResNet18 at 1/8 width (8, 16, 32, 64): 176k parameters, comparable to the attention models.
        resnet_overrides=dict(widths=(8, 16, 32, 64)),
        # Gaussian centres move ~7× further in 8 epochs than with 1 (0.55-0.66 vs 0.08 token units
        # on average) at the same accuracy (0.40 vs 0.39 test accuracy after 8 epochs).
        attention_lr_multiplier=10.0,
    ),
    "deep": Profile(
        name="deep",
        description="The paper's depth and token grid on 2 CPU cores: 6 layers × 9 heads, 16×16 tokens, hidden 32, "
        "bundled sample.",
        # measured (2 threads, idle 2-core Xeon, batch 100, 51 steps per epoch): quadratic 0.51 s/step dense,
        # 0.41 s/step local (0.4 / 0.35 min per epoch with evaluation); learned 0.56 s/step. See
        # DEEP_MEASURED_SECONDS_PER_STEP.
        epochs={
            "quadratic": 40,
            "generalized": 40,
            "learned": 40,
            "learned_content": 20,
            "resnet18": 40,
        },
        data="sample",
        # 2×2-pixel tokens as in the paper (16×16 tokens), 6 layers of 9 heads; hidden 32 instead of 400.
        self_attention_overrides=dict(
            hidden_size=32, intermediate_size=64, num_layers=6, downsample=2
        ),
        # local attention for the quadratic model only: 0.41 vs 0.51 s/step dense. The generalized heads'
        # elongated Gaussians make its windows nearly the whole grid, and local attention ran 2.5x slower
        # than dense there (measured side by side on 1 thread: 9.9-15.4 vs 4.6-4.8 s per step of 100
        # images with the machine loaded; quadratic 1.6-2.7 local vs 2.9-3.3 dense in the same run).
        local_attention=("quadratic",),
        resnet_overrides=dict(widths=(8, 16, 32, 64)),
        attention_lr_multiplier=10.0,
    ),
}

#: Seconds per training step (batch 100) of the ``deep`` profile, measured with 2 threads on the idle
#: 2-core development machine (Xeon, AVX-512), median of 3 steps after a warm-up step.
DEEP_MEASURED_SECONDS_PER_STEP: Dict[str, float] = {
    "quadratic (local)": 0.41,
    "quadratic (dense)": 0.51,
    "learned (dense)": 0.56,
    "quadratic at hidden 64 (local)": 0.96,
    "quadratic at hidden 64 (dense)": 1.33,
}


def get_profile(name: str) -> Profile:
    if name not in PROFILES:
        raise ValueError(f"unknown profile {name!r}; choose one of {sorted(PROFILES)}")
    return PROFILES[name]


def default_profile_name() -> str:
    """``gpu`` when CUDA is available, else ``cpu``."""
    return "gpu" if cuda_available() else "cpu"


def make_config(model: str, profile: Optional[str] = None, **changes) -> TrainConfig:
    """The :class:`TrainConfig` of ``model`` under ``profile`` (default :func:`default_profile_name`)."""
    return get_profile(profile or default_profile_name()).config(model, **changes)
