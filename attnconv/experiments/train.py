"""Training the paper's CIFAR-10 models (Sec. 4) with checkpoints, resume and a JSON history.

Optimisation as in the authors' code (epfml/attention-cnn): SGD, learning rate 0.1, momentum 0.9,
weight decay 1e-4 (none on the Gaussian attention parameters: centres Δ, spreads s, matrices M),
batch 100; self-attention models: linear warm-up over the first 5% of the steps, then cosine
decay to 0, stepped every batch; ResNet18: learning rate divided by 10 at epochs 80, 150 and 250 (the authors' run scripts;
the paper states no ResNet18 schedule).
300 epochs in the paper. bf16 autocast on CUDA.

Everything of a run lives in its folder:

* ``config.json`` — the :class:`TrainConfig`;
* ``checkpoint.pt`` — after every epoch, written atomically: model, optimizer, scheduler, RNG
  states, epoch, history. ``--resume`` continues exactly where it stopped (same losses as an
  uninterrupted run);
* ``history.json`` — per epoch: train/test loss and accuracy, learning rate, seconds, and the
  attention parameters of every head (:meth:`SelfAttentionClassifier.attention_parameters`).

A NaN/inf loss stops the run with :class:`NonFiniteLossError`; the last good checkpoint is kept.
With ``stop_signals`` (the command line: SIGTERM, SIGUSR1) a signal finishes the current step,
writes ``checkpoint-partial.pt`` (mid-epoch: model, optimizer, RNG and augmentation states, the
epoch's sums so far) and raises :class:`PreemptedError`; ``--resume`` continues from the next step.

Under ``torchrun`` (``distributed=``, see :mod:`attnconv.experiments.distributed`) the config's
batch is the global batch, split over the processes; every process draws the same batches and
augmentation as one process; rank 0 alone writes the run folder. Without it nothing changes.

Command line::

    python -m attnconv.train --model quadratic --profile cpu --run-dir runs/quadratic-cpu
    python -m attnconv.train --model resnet18 --profile gpu --run-dir runs/r18 --resume
    torchrun --standalone --nproc_per_node=4 -m attnconv.train --model quadratic --profile paper --run-dir runs/q

Python: ``history = train(config, run_dir)``, ``run = load_run(run_dir)``,
``run = train_or_load(config, run_dir)``.
"""

from __future__ import annotations

import json
import math
import os
import random
import sys
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from .allocator import retain_freed_memory
from .data import (
    CifarData,
    augmentation_draws,
    crop_flip,
    iterate_batches,
    load_cifar10,
    normalize,
    random_crop_flip,
)
from .distributed import (
    DistContext,
    DistributedSetupError,
    PeerLostError,
    StopRequest,
    any_rank,
    barrier,
    broadcast_object,
    check_world_size,
    convert_sync_batchnorm,
    eval_batches_of_rank,
    gather_objects,
    shard_bounds,
    sum_over_ranks,
    wrap_model,
)
from .models import (
    MODEL_NAMES,
    build_model,
    count_parameters,
    model_config_to_dict,
    paper_model_config,
)
from .store import (
    CHECKPOINT,
    CONFIG,
    EPOCHS_CSV,
    HISTORY,
    PARTIAL_CHECKPOINT,
    STEPS_CSV,
)

__all__ = [
    "TrainConfig",
    "attention_record",
    "RECORDED_STEPS",
    "train_epoch",
    "write_json",
    "NonFiniteLossError",
    "PreemptedError",
    "RunFolderError",
    "RunExistsError",
    "NothingToResumeError",
    "CorruptCheckpointError",
    "ResumeMismatchError",
    "Run",
    "select_device",
    "parameter_groups",
    "make_optimizer",
    "lr_factor",
    "make_scheduler",
    "evaluate",
    "train",
    "load_run",
    "train_or_load",
]

GAUSSIAN_PARAMETER_NAMES = ("centers", "spread", "alpha", "inv_sqrt_sigma")


class NonFiniteLossError(RuntimeError):
    """The training loss became NaN or infinite; the run folder keeps the last good checkpoint."""

    def __init__(
        self, epoch: int, step: int, loss: float, last_good_epoch: int, run_dir: Path
    ):
        self.epoch, self.step, self.loss, self.last_good_epoch, self.run_dir = (
            epoch,
            step,
            loss,
            last_good_epoch,
            run_dir,
        )
        kept = (
            f"the last good checkpoint (epoch {last_good_epoch}) is kept in {run_dir}"
            if last_good_epoch
            else f"no epoch had finished, so {run_dir} holds no checkpoint"
        )
        super().__init__(
            f"training loss became {loss} at epoch {epoch}, step {step}; the run was stopped and {kept}. "
            "Lower the learning rate (or the attention learning-rate multiplier) and start a new run."
        )


class RunFolderError(RuntimeError):
    """A run folder cannot be used as asked; the message names the problem and the way out, and
    nothing in the folder was changed."""


class RunExistsError(RunFolderError):
    """The run folder already holds a run and resuming was not asked for."""


class NothingToResumeError(RunFolderError):
    """Resuming was asked for, but the run folder holds no checkpoint."""


class CorruptCheckpointError(RunFolderError):
    """The run folder's checkpoint cannot be read (truncated or damaged)."""


class ResumeMismatchError(RunFolderError):
    """The run folder holds a run of other settings than the ones asked for."""


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
    bf16: bool = True  # bf16 autocast on CUDA (ignored on CPU)

    def __post_init__(self):
        self.milestones = tuple(int(m) for m in self.milestones)
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
        self.model_config()  # validates the overrides

    def model_config(self):
        """The model's config: the paper's, with ``model_overrides``."""
        return paper_model_config(self.model, **self.model_overrides)

    def to_dict(self) -> dict:
        """A JSON-ready dict (tuples become lists)."""
        return json.loads(json.dumps(asdict(self)))

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"unknown TrainConfig fields: {sorted(unknown)}")
        return cls(**d)


# --------------------------------------------------------------------------- pieces
def select_device(name: Optional[str] = None) -> torch.device:
    """``name`` if given, else CUDA when available, else CPU."""
    if name:
        return torch.device(name)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def parameter_groups(model: nn.Module, config: TrainConfig) -> List[dict]:
    """SGD parameter groups: weight decay on everything except the Gaussian attention parameters
    (Δ, s, M); learning rate × ``attention_lr_multiplier`` on every positional-encoding parameter."""
    groups: Dict[Tuple[float, float], dict] = {}
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        encoding = ".encoding." in f".{name}"
        gaussian = encoding and name.rsplit(".", 1)[-1] in GAUSSIAN_PARAMETER_NAMES
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


def make_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.SGD:
    groups = parameter_groups(model, config)
    for g in groups:
        g.pop("names")
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


def _stream_seed(seed: int, epoch: int, stream: int) -> int:
    return (seed * 1_000_003 + epoch * 7_919 + stream) % (2**63 - 1)


def _epoch_generator(seed: int, epoch: int, stream: int) -> torch.Generator:
    """A CPU generator for one epoch's shuffling (stream 0) or augmentation (stream 1): a function
    of (seed, epoch) only, so a resumed run draws the same batches."""
    return torch.Generator().manual_seed(_stream_seed(seed, epoch, stream))


def _autocast(device: torch.device, config: TrainConfig):
    return torch.autocast(
        "cuda", dtype=torch.bfloat16, enabled=device.type == "cuda" and config.bf16
    )


def _compute_loss(model: nn.Module, images: torch.Tensor, labels: torch.Tensor):
    """Cross-entropy of one batch; returns (loss, logits)."""
    logits = model(images)
    return F.cross_entropy(logits.float(), labels), logits


#: Training losses of the first steps of epoch 1 that a history keeps (``first_step_losses``), so
#: that :func:`attnconv.experiments.runs.verify_saved_run` can replay them on another machine.
RECORDED_STEPS = 20


class _NonFiniteStep(Exception):
    def __init__(self, step: int, loss: float):
        super().__init__(f"non-finite loss {loss} at step {step}")
        self.step, self.loss = step, loss


class _StopRequested(Exception):
    """A stop signal arrived; the step ``state['step']`` (steps done) of the epoch was finished."""

    def __init__(self, state: dict):
        super().__init__(f"stopped after step {state['step']}")
        self.state = state


def train_epoch(
    model: nn.Module,
    data,
    config: TrainConfig,
    optimizer,
    scheduler,
    epoch: int,
    device: torch.device,
    progress: bool = False,
    step_losses: Optional[List[float]] = None,
    distributed: Optional[DistContext] = None,
    partial: Optional[dict] = None,
    stop=None,
    on_step=None,
):
    """One epoch of SGD on ``data.x_train``: batches shuffled and augmented from (seed, epoch), so
    that a resumed run repeats them exactly. Returns (mean training loss, training accuracy).

    ``step_losses``: a list that receives the loss of each of the first :data:`RECORDED_STEPS`
    steps (the saved-run check replays them).

    Multi-process (``distributed``, ``model`` wrapped by
    :func:`~attnconv.experiments.distributed.wrap_model`): every rank draws the global batch and its
    augmentation as one process would and trains on its slice
    (:func:`~attnconv.experiments.distributed.shard_bounds`); the loss and accuracy are those of the
    global batch. ``partial``: the state of a mid-epoch checkpoint to continue from. ``stop``: a
    :class:`~attnconv.experiments.distributed.StopRequest`; when it is raised (on any rank), the
    current step is finished and the epoch's state so far is raised (``_StopRequested``), unless it
    was the epoch's last step. ``on_step(step, loss)``: called after every step with the step's
    0-based index in the epoch and its loss."""
    from tqdm import tqdm

    n_train = len(data.x_train)
    steps_per_epoch = math.ceil(n_train / config.batch_size)
    model.train()
    order_gen = _epoch_generator(config.seed, epoch, 0)
    aug_gen = _epoch_generator(config.seed, epoch, 1)
    loss_sum = torch.zeros((), device=device)
    correct = torch.zeros((), device=device, dtype=torch.long)
    start_step = 0
    if partial is not None:
        start_step = int(partial["step"])
        aug_gen.set_state(partial["aug_state"])
        loss_sum += partial["loss_sum"].to(device)
        correct += partial["correct"].to(device)
    bar = tqdm(
        total=steps_per_epoch,
        initial=start_step,
        desc=f"{config.model} epoch {epoch}/{config.epochs}",
        leave=False,
        disable=not progress,
        file=sys.stderr,
    )
    for step, idx in enumerate(iterate_batches(n_train, config.batch_size, order_gen)):
        if (
            step < start_step
        ):  # done before the mid-epoch checkpoint; its augmentation is in aug_gen's state
            continue
        if distributed is None:
            idx = idx.to(device)
            xb = data.x_train[idx]
            if config.augment:
                xb = random_crop_flip(xb, aug_gen)
            xb, yb = normalize(xb), data.y_train[idx]
            with _autocast(device, config):
                loss, logits = _compute_loss(model, xb, yb)
            if not bool(torch.isfinite(loss)):
                raise _NonFiniteStep(step, loss.item())
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            scheduler.step()
            loss_sum += loss.detach() * len(idx)
            correct += (logits.detach().argmax(1) == yb).sum()
            stopping = stop is not None and bool(stop)
        else:
            loss, stopping = _distributed_step(
                model,
                data,
                config,
                optimizer,
                scheduler,
                idx,
                aug_gen,
                device,
                distributed,
                stop,
                loss_sum,
                correct,
                step,
            )
        if step_losses is not None and len(step_losses) < RECORDED_STEPS:
            step_losses.append(float(loss.detach()))
        if on_step is not None:
            on_step(step, float(loss.detach()))
        bar.update(1)
        if progress and step % 10 == 0:
            bar.set_postfix(loss=f"{loss.item():.3f}")
        if stopping and step + 1 < steps_per_epoch:
            bar.close()
            raise _StopRequested(
                {
                    "epoch": epoch,
                    "step": step + 1,
                    "loss_sum": loss_sum.detach().cpu(),
                    "correct": correct.detach().cpu(),
                    "aug_state": aug_gen.get_state(),
                    "step_losses": list(step_losses)
                    if step_losses is not None
                    else None,
                }
            )
    bar.close()
    return float(loss_sum) / n_train, int(correct) / n_train


def _distributed_step(
    model,
    data,
    config: TrainConfig,
    optimizer,
    scheduler,
    idx: torch.Tensor,
    aug_gen,
    device,
    ctx: DistContext,
    stop,
    loss_sum: torch.Tensor,
    correct: torch.Tensor,
    step: int,
):
    """One step of a multi-process run on this rank's slice of the global batch ``idx``; returns the
    global batch's mean loss and whether a stop was requested on any rank. Adds the global batch's
    loss sum and correct count to ``loss_sum`` and ``correct``."""
    lo, hi = shard_bounds(len(idx), ctx.rank, ctx.world_size)
    local = idx[lo:hi].to(device)
    xb = data.x_train[local]
    if config.augment:  # the draws of the whole global batch, as one process makes them; this rank's rows
        offsets, flips = augmentation_draws(len(idx), aug_gen)
        xb = crop_flip(xb, offsets[lo:hi], flips[lo:hi])
    xb, yb = normalize(xb), data.y_train[local]
    with _autocast(device, config):
        logits = model(xb)
        local_sum = F.cross_entropy(logits.float(), yb, reduction="sum")
    flag = 1.0 if stop is not None and bool(stop) else 0.0
    stats = torch.stack(
        [
            local_sum.detach().float(),
            (logits.detach().argmax(1) == yb).sum().float(),
            torch.tensor(flag, device=device),
        ]
    )
    sum_over_ranks(
        stats
    )  # global loss sum, global correct count, number of ranks asked to stop
    loss = stats[0] / len(idx)
    if not bool(
        torch.isfinite(loss)
    ):  # the same value on every rank: all stop together
        raise _NonFiniteStep(step, loss.item())
    optimizer.zero_grad(set_to_none=True)
    (
        local_sum / len(idx)
    ).backward()  # gradients summed over ranks by the DDP hook: the global mean's
    optimizer.step()
    scheduler.step()
    loss_sum += stats[0]
    correct += stats[1].round().long()
    return loss, bool(stats[2] > 0)


@torch.no_grad()
def evaluate(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    batch_size: int = 500,
    device: Optional[torch.device] = None,
    bf16: bool = True,
    distributed: Optional[DistContext] = None,
) -> Tuple[float, float]:
    """Mean cross-entropy and accuracy of ``model`` (eval mode) on ``uint8`` images ``x``.

    ``distributed``: each rank computes its share of the evaluation batches
    (:func:`~attnconv.experiments.distributed.eval_batches_of_rank`, whole batches of the
    single-process evaluation), the per-batch sums are summed over ranks and added in the
    single-process order: the same result as one process with the same weights."""
    device = device or next(model.parameters()).device
    was_training = model.training
    model.eval()
    loss_sum, correct = 0.0, 0
    try:
        batches = list(iterate_batches(len(x), batch_size, shuffle=False))
        mine = (
            range(len(batches))
            if distributed is None
            else eval_batches_of_rank(
                len(batches), distributed.rank, distributed.world_size
            )
        )
        sums = torch.zeros(len(batches), 2, dtype=torch.float64)
        for b in mine:
            idx = batches[b]
            xb = normalize(x[idx].to(device))
            yb = y[idx].to(device)
            with torch.autocast(
                "cuda", dtype=torch.bfloat16, enabled=device.type == "cuda" and bf16
            ):
                logits = model(xb)
            sums[b, 0] = float(F.cross_entropy(logits.float(), yb, reduction="sum"))
            sums[b, 1] = int((logits.argmax(1) == yb).sum())
        if (
            distributed is not None
        ):  # each slot is filled by one rank, zeros elsewhere: exact sums
            sums = sum_over_ranks(sums.to(distributed.device)).cpu()
        for b in range(len(batches)):  # the single-process order of the additions
            loss_sum += float(sums[b, 0])
            correct += int(sums[b, 1])
    finally:
        model.train(was_training)
    return loss_sum / len(x), correct / len(x)


def _jsonable(obj):
    if isinstance(obj, torch.Tensor):
        return obj.tolist()
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    return obj


def attention_record(model: nn.Module):
    """The attention parameters of every layer of ``model`` (centres, spreads, Σ⁻¹ …) as JSON-ready
    lists: what a history saves per epoch (``[]`` for models without attention)."""
    fn = getattr(model, "attention_parameters", None)
    return _jsonable(fn()) if fn is not None else []


def _atomic_write_bytes(path: Path, write) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_json(path: Path, obj) -> None:
    """Write ``obj`` as JSON to ``path`` atomically (a crash never leaves a half-written file)."""

    def write(tmp):
        with open(tmp, "w") as f:
            json.dump(obj, f, indent=1)
            f.flush()
            os.fsync(f.fileno())

    _atomic_write_bytes(path, write)


def _rng_state(device: torch.device) -> dict:
    state = {
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "numpy": np.random.get_state(),
    }
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict, device: torch.device) -> None:
    torch.set_rng_state(state["torch"].cpu())
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])


_IGNORED_ON_RESUME = ("device",)


def _config_differences(a: dict, b: dict) -> List[str]:
    """Keys whose values differ, compared in JSON form (tuples and lists alike), device aside."""
    a, b = json.loads(json.dumps(a)), json.loads(json.dumps(b))
    keys = (set(a) | set(b)) - set(_IGNORED_ON_RESUME)
    return sorted(k for k in keys if a.get(k) != b.get(k))


def _describe_history(run_dir: Path) -> str:
    try:
        h = json.loads((run_dir / HISTORY).read_text())
        return f"{HISTORY} is intact ({len(h['epochs'])} of {h['config']['epochs']} epochs)"
    except (OSError, ValueError, KeyError, TypeError):
        return f"{HISTORY} is absent or unreadable too"


def _load_checkpoint_file(path: Path, run_dir: Path) -> dict:
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
        for key in (
            "config",
            "epoch",
            "model",
            "optimizer",
            "scheduler",
            "rng",
            "history",
        ):
            state[key]
    except (
        Exception
    ) as e:  # truncated zip, pickle or torch errors: all mean the same to the user
        reason = f"{type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else 'no details'}"
        raise CorruptCheckpointError(
            f"cannot read {path} ({reason}); {_describe_history(run_dir)}.\n"
            f"Restore {path.name} from a copy to resume, or start again without --resume in another folder."
        ) from None
    return state


def _read_checkpoint(run_dir: Path, config: TrainConfig) -> dict:
    """The checkpoint to resume ``config`` from, or a :class:`RunFolderError` that says why not: the
    mid-epoch checkpoint of a stopped run (:data:`PARTIAL_CHECKPOINT`) when it is ahead of the
    epoch checkpoint, else the epoch checkpoint."""
    ckpt_path, partial_path = run_dir / CHECKPOINT, run_dir / PARTIAL_CHECKPOINT
    if not ckpt_path.is_file() and not partial_path.is_file():
        if (run_dir / HISTORY).is_file():
            raise NothingToResumeError(
                f"nothing to resume in {run_dir}: it holds {HISTORY} but no {CHECKPOINT} (weights are never "
                "committed). Start a new run in another folder, without --resume."
            )
        raise NothingToResumeError(
            f"nothing to resume in {run_dir}: there is no {CHECKPOINT}. "
            "Drop --resume to start a new run there."
        )
    state = _load_checkpoint_file(ckpt_path, run_dir) if ckpt_path.is_file() else None
    if partial_path.is_file():
        partial = _load_checkpoint_file(partial_path, run_dir)
        if state is None or int(partial["epoch"]) >= int(state["epoch"]):
            state = partial
    saved = state["config"]
    diff = _config_differences(saved, config.to_dict())
    if diff == ["epochs"]:
        done, planned = int(state["epoch"]), int(saved["epochs"])
        if done >= planned:
            raise ResumeMismatchError(
                f"{run_dir} finished its {planned} epochs; continuing it for {config.epochs} is not supported: its "
                f"learning-rate schedule ({saved['schedule']}) was laid out over {planned} epochs and has ended.\n"
                f"Train a new run with --epochs {config.epochs} in another folder."
            )
        raise ResumeMismatchError(
            f"{run_dir} is a run of {planned} epochs (stopped after {done}); resume it with "
            f"--epochs {planned}, or start a new run of {config.epochs} epochs in another folder."
        )
    if diff:
        changes = ", ".join(
            f"{k}: saved {saved.get(k)!r}, asked {config.to_dict().get(k)!r}"
            for k in diff
        )
        raise ResumeMismatchError(
            f"cannot resume {run_dir}: it is a run of other settings ({changes}).\n"
            "Resume with the run's own settings, or choose another run folder."
        )
    return state


# --------------------------------------------------------------------------- training
class PreemptedError(RuntimeError):
    """A stop signal (SIGTERM/SIGUSR1) arrived: the current step was finished and a checkpoint saved;
    ``--resume`` continues exactly from there."""

    def __init__(
        self,
        run_dir: Path,
        epoch: int,
        step: int,
        steps_per_epoch: int,
        signal_name: str,
    ):
        self.run_dir, self.epoch, self.step, self.signal_name = (
            run_dir,
            epoch,
            step,
            signal_name,
        )
        where = (
            f"after step {step} of {steps_per_epoch} of epoch {epoch} (mid-epoch checkpoint {PARTIAL_CHECKPOINT})"
            if step < steps_per_epoch
            else f"after epoch {epoch} ({CHECKPOINT})"
        )
        super().__init__(
            f"stopped by {signal_name or 'a stop request'} {where} in {run_dir}; "
            "run the same command with --resume to continue exactly from there."
        )


def _is_communication_error(e: BaseException) -> bool:
    text = f"{type(e).__name__} {e}"
    return isinstance(e, dist.DistError) or any(
        w in text
        for w in (
            "gloo",
            "Gloo",
            "NCCL",
            "Connection",
            "connection",
            "timed out",
            "Timed out",
            "Broken pipe",
            "peer",
        )
    )


class _Logs:
    """Rank 0's optional logs beside the history: ``steps.csv`` / ``epochs.csv`` (``csv``) and
    TensorBoard scalars (``tensorboard``: a folder; needs the ``tensorboard`` package)."""

    def __init__(
        self,
        run_dir: Path,
        csv: bool,
        tensorboard,
        resumed_step: int,
        resumed_epoch: int,
    ):
        self.steps = self.epochs = self.tb = None
        if csv:
            self.steps = self._open(
                run_dir / STEPS_CSV, "step,epoch,loss,lr", resumed_step
            )
            self.epochs = self._open(
                run_dir / EPOCHS_CSV,
                "epoch,train_loss,train_acc,test_loss,test_acc,lr,seconds",
                resumed_epoch,
            )
        if tensorboard is not None:
            from torch.utils.tensorboard import (
                SummaryWriter,  # ImportError without the package: the CLI says so
            )

            self.tb = SummaryWriter(
                str(tensorboard), purge_step=resumed_step + 1 if resumed_step else None
            )

    @staticmethod
    def _open(path: Path, header: str, keep: int):
        """Open for appending, keeping only the rows of the steps (epochs) ``<= keep`` (what the
        checkpoint holds: rows of steps after it, from a crashed run, are dropped)."""
        rows = []
        if keep and path.is_file():
            for line in path.read_text().splitlines()[1:]:
                key = line.split(",", 1)[0]
                if key.isdigit() and int(key) <= keep:
                    rows.append(line)
        f = open(path, "w")
        f.write("\n".join([header] + rows) + "\n")
        f.flush()
        return f

    def step(self, global_step: int, epoch: int, loss: float, lr: float):
        if self.steps is not None:
            self.steps.write(f"{global_step},{epoch},{loss!r},{lr!r}\n")
            self.steps.flush()
        if self.tb is not None:
            self.tb.add_scalar("train/step_loss", loss, global_step)
            self.tb.add_scalar("train/lr", lr, global_step)

    def epoch(self, record: dict, global_step: int):
        if self.epochs is not None:
            self.epochs.write(
                ",".join(
                    repr(record[k])
                    for k in (
                        "epoch",
                        "train_loss",
                        "train_acc",
                        "test_loss",
                        "test_acc",
                        "lr",
                        "seconds",
                    )
                )
                + "\n"
            )
            self.epochs.flush()
        if self.tb is not None:
            for k in ("train_loss", "train_acc", "test_loss", "test_acc"):
                self.tb.add_scalar(f"epoch/{k}", record[k], global_step)
            self.tb.flush()

    def close(self):
        for f in (self.steps, self.epochs):
            if f is not None:
                f.close()
        if self.tb is not None:
            self.tb.close()


def _share(ctx: Optional[DistContext], compute):
    """``compute()`` on rank 0 and its result (or the exception it raised) on every rank."""
    if ctx is None:
        return compute()
    outcome = None
    if ctx.is_writer:
        try:
            outcome = ("ok", compute())
        except RunFolderError as e:
            outcome = ("error", e)
    outcome = broadcast_object(outcome)
    if outcome[0] == "error":
        raise outcome[1]
    return outcome[1]


def _load_data(
    config: TrainConfig, ctx: Optional[DistContext], verbose: bool
) -> CifarData:
    """The data set; under torchrun the first process of each machine loads (and, if needed,
    downloads) it before the others read it."""
    if ctx is None:
        return load_cifar10(config.data, root=config.data_root, verbose=verbose)
    first = ctx.local_rank == 0
    if not first:
        barrier()
    data = load_cifar10(
        config.data, root=config.data_root, verbose=verbose and ctx.is_writer
    )
    if first:
        barrier()
    return data


def _format_duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def train(
    config: TrainConfig,
    run_dir,
    resume: bool = False,
    progress: bool = True,
    stop_after: Optional[int] = None,
    data: Optional[CifarData] = None,
    verbose: bool = True,
    distributed: Optional[DistContext] = None,
    sync_batchnorm: bool = True,
    stop_signals: Sequence[int] = (),
    csv: bool = False,
    tensorboard=None,
) -> dict:
    """Train ``config`` into ``run_dir`` and return the history (the content of ``history.json``).

    Args:
        resume: continue the run in ``run_dir`` from its checkpoint (its config must be the same,
            the device aside). Without it, a folder that already holds a checkpoint is an error.
        progress: tqdm progress bars (on stderr).
        stop_after: return after this epoch as if interrupted (the run stays resumable).
        data: a :class:`~attnconv.experiments.data.CifarData` to use instead of loading ``config.data``.
        verbose: print which data the run uses and one line per epoch (with images/s and ETA).
        distributed: this process's :class:`~attnconv.experiments.distributed.DistContext` in a
            torchrun job (see :mod:`attnconv.experiments.distributed`): ``config.batch_size`` is the
            global batch, split over the ranks; rank 0 alone writes the run folder and prints.
        sync_batchnorm: under ``distributed``, batch-norm statistics over the global batch (ResNet18).
        stop_signals: signals (e.g. SIGTERM, SIGUSR1) that stop the run after the current step
            with a checkpoint (:class:`PreemptedError`); a mid-epoch stop writes
            :data:`PARTIAL_CHECKPOINT`, which ``resume`` continues from.
        csv: also write ``steps.csv`` (loss and learning rate per step) and ``epochs.csv``.
        tensorboard: a folder for TensorBoard scalars (needs the ``tensorboard`` package).

    Raises:
        NonFiniteLossError: a NaN/inf loss; the last good checkpoint stays in ``run_dir``.
        PreemptedError: a stop signal arrived; the checkpoint was saved.
        PeerLostError: under ``distributed``, another rank died or did not answer within the timeout.
        RunExistsError: ``run_dir`` holds a run and ``resume`` is False.
        NothingToResumeError, CorruptCheckpointError, ResumeMismatchError: ``resume`` is True and
            the folder has no checkpoint, an unreadable one, or one of other settings (a finished
            run cannot be continued for more epochs: its cosine schedule has reached 0).
        DistributedSetupError: the number of processes does not divide the global batch.
        Nothing in ``run_dir`` is changed when one of these is raised.

    The process keeps the memory it frees from then on (:func:`~attnconv.experiments.allocator.retain_freed_memory`).
    """
    retain_freed_memory()
    ctx = distributed
    writer = ctx is None or ctx.is_writer
    verbose = verbose and writer
    run_dir = Path(run_dir)
    ckpt_path, hist_path, partial_path = (
        run_dir / CHECKPOINT,
        run_dir / HISTORY,
        run_dir / PARTIAL_CHECKPOINT,
    )
    if ctx is not None:
        check_world_size(config.batch_size, ctx.world_size)

    def read_state():
        state = _read_checkpoint(run_dir, config) if resume else None
        if not resume and (
            ckpt_path.exists() or hist_path.exists() or partial_path.exists()
        ):
            what = next(
                p.name for p in (ckpt_path, partial_path, hist_path) if p.exists()
            )
            raise RunExistsError(
                f"{run_dir} already holds a run ({what}); add --resume (resume=True) to continue "
                "it, or choose another run folder. Nothing was changed."
            )
        return state

    state = _share(ctx, read_state)
    device = ctx.device if ctx is not None else select_device(config.device)
    torch.manual_seed(config.seed)
    random.seed(config.seed)
    np.random.seed(config.seed)

    if data is None:
        data = _load_data(config, ctx, verbose)
    elif verbose:
        print(
            data.note
            or f"Data: {data.source} ({len(data.x_train):,} training / {len(data.x_test):,} test images)."
        )
    data = data.subset(config.train_subset, config.test_subset).to(device)
    n_train = len(data.x_train)
    steps_per_epoch = math.ceil(n_train / config.batch_size)
    if ctx is not None and 0 < n_train % config.batch_size < ctx.world_size:
        raise DistributedSetupError(
            f"the last batch of each epoch holds {n_train % config.batch_size} images, fewer than the "
            f"{ctx.world_size} processes; use fewer processes or another training-set size."
        )

    net = build_model(config.model_config())
    if ctx is not None and sync_batchnorm:
        net = convert_sync_batchnorm(net, ctx)
    net = net.to(device)
    optimizer = make_optimizer(net, config)
    scheduler = make_scheduler(optimizer, config, steps_per_epoch)

    start_epoch, partial = 0, None
    if state is not None:
        net.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        rng = state["rng"]
        ranks = state.get("rng_ranks")
        if ctx is not None and ranks and len(ranks) == ctx.world_size:
            rng = ranks[ctx.rank]
        _set_rng_state(rng, device)
        if ctx is not None and not (ranks and len(ranks) == ctx.world_size):
            torch.manual_seed(
                _stream_seed(config.seed, state["epoch"] * 1_000 + ctx.rank, 2)
            )  # dropout, per rank
        history = state["history"]
        start_epoch = state["epoch"]
        partial = state.get("partial")
        history["status"] = "complete" if start_epoch >= config.epochs else "running"
        if verbose:
            where = (
                f"at step {partial['step']} of epoch {start_epoch + 1}"
                if partial is not None
                else f"after epoch {start_epoch}"
            )
            print(f"Resuming {run_dir} {where}.")
    else:
        if writer:
            run_dir.mkdir(parents=True, exist_ok=True)
            write_json(run_dir / CONFIG, config.to_dict())
        history = {
            "config": config.to_dict(),
            "model_config": model_config_to_dict(config.model_config()),
            "num_parameters": count_parameters(net),
            "data": data.source,
            "data_note": data.note,
            "train_size": n_train,
            "test_size": len(data.x_test),
            "steps_per_epoch": steps_per_epoch,
            "initial_attention": attention_record(net),
            "epochs": [],
            "status": "running",
        }
        if ctx is not None:
            torch.manual_seed(
                _stream_seed(config.seed, ctx.rank, 2)
            )  # dropout masks: per rank
    history["device"] = str(device)
    if ctx is not None:
        history["distributed"] = {
            **ctx.describe(),
            "sync_batchnorm": bool(sync_batchnorm),
        }
    else:
        history.pop("distributed", None)
    model = wrap_model(net, ctx, sync_batchnorm) if ctx is not None else net

    done_steps = start_epoch * steps_per_epoch + (
        int(partial["step"]) if partial is not None else 0
    )
    logs = (
        _Logs(run_dir, csv, tensorboard, done_steps, start_epoch)
        if writer and (csv or tensorboard is not None)
        else None
    )

    def rng_states() -> dict:
        own = _rng_state(device)
        return {
            "rng": own,
            **({"rng_ranks": gather_objects(own)} if ctx is not None else {}),
        }

    last_good = start_epoch
    session_start, session_epochs = time.perf_counter(), 0
    try:
        with StopRequest(stop_signals) as stop:
            for epoch in range(start_epoch + 1, config.epochs + 1):
                t0 = time.perf_counter()
                resumed = (
                    partial
                    if partial is not None and int(partial["epoch"]) == epoch
                    else None
                )
                partial = None
                steps_before = int(resumed["step"]) if resumed is not None else 0
                try:
                    if epoch == 1:
                        first = (
                            list(resumed["step_losses"])
                            if resumed is not None
                            and resumed.get("step_losses") is not None
                            else []
                        )
                    else:
                        first = None
                    on_step = None
                    if logs is not None:

                        def on_step(step, loss, epoch=epoch):
                            g = (epoch - 1) * steps_per_epoch + step
                            logs.step(
                                g + 1,
                                epoch,
                                loss,
                                config.lr * lr_factor(g, config, steps_per_epoch),
                            )

                    train_loss, train_acc = train_epoch(
                        model,
                        data,
                        config,
                        optimizer,
                        scheduler,
                        epoch,
                        device,
                        progress and writer,
                        step_losses=first,
                        distributed=ctx,
                        partial=resumed,
                        stop=stop,
                        on_step=on_step,
                    )
                    if first is not None:
                        history["first_step_losses"] = first
                except _NonFiniteStep as e:
                    raise NonFiniteLossError(
                        epoch, e.step, e.loss, last_good, run_dir
                    ) from None
                except _StopRequested as e:
                    seconds = (
                        (resumed or {}).get("seconds", 0.0) + time.perf_counter() - t0
                    )
                    checkpoint = {
                        "format": 1,
                        "config": config.to_dict(),
                        "epoch": epoch - 1,
                        "model": net.state_dict(),
                        "optimizer": optimizer.state_dict(),
                        "scheduler": scheduler.state_dict(),
                        **rng_states(),
                        "history": history,
                        "partial": {**e.state, "seconds": seconds},
                    }
                    if writer:
                        _atomic_write_bytes(
                            partial_path, lambda tmp: torch.save(checkpoint, tmp)
                        )
                    if ctx is not None:
                        barrier()  # the others wait for the checkpoint before they exit
                    raise PreemptedError(
                        run_dir, epoch, e.state["step"], steps_per_epoch, stop.name
                    ) from None
                train_seconds = time.perf_counter() - t0
                lr = config.lr * lr_factor(
                    epoch * steps_per_epoch - 1, config, steps_per_epoch
                )  # of the last step
                test_loss, test_acc = evaluate(
                    net,
                    data.x_test,
                    data.y_test,
                    config.eval_batch_size,
                    device,
                    config.bf16,
                    distributed=ctx,
                )
                seconds = (resumed or {}).get("seconds", 0.0) + time.perf_counter() - t0
                record = {
                    "epoch": epoch,
                    "train_loss": train_loss,
                    "train_acc": train_acc,
                    "test_loss": test_loss,
                    "test_acc": test_acc,
                    "lr": lr,
                    "seconds": seconds,
                    "attention": attention_record(net),
                }
                history["epochs"].append(record)
                if epoch == config.epochs:
                    history["status"] = "complete"
                checkpoint = {
                    "format": 1,
                    "config": config.to_dict(),
                    "epoch": epoch,
                    "model": net.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(),
                    **rng_states(),
                    "history": history,
                }
                if writer:
                    _atomic_write_bytes(
                        ckpt_path, lambda tmp: torch.save(checkpoint, tmp)
                    )
                    write_json(hist_path, history)
                    if partial_path.exists():
                        partial_path.unlink()
                    if logs is not None:
                        logs.epoch(record, epoch * steps_per_epoch)
                last_good = epoch
                session_epochs += 1
                if verbose:
                    images = (
                        (steps_per_epoch - steps_before) / steps_per_epoch * n_train
                    )
                    eta = (
                        (time.perf_counter() - session_start)
                        / session_epochs
                        * (config.epochs - epoch)
                    )
                    print(
                        f"epoch {epoch}/{config.epochs}: train loss {train_loss:.4f} acc {train_acc:.4f} | "
                        f"test loss {test_loss:.4f} acc {test_acc:.4f} | lr {lr:.4g} | {seconds:.1f}s | "
                        f"{images / max(train_seconds, 1e-9):,.0f} img/s | ETA {_format_duration(eta)}",
                        flush=True,
                    )
                if stop_after is not None and epoch >= stop_after:
                    break
                stopping = bool(stop) if ctx is None else any_rank(bool(stop), device)
                if stopping and epoch < config.epochs:
                    if ctx is not None:
                        barrier()
                    raise PreemptedError(
                        run_dir, epoch, steps_per_epoch, steps_per_epoch, stop.name
                    )
    except NonFiniteLossError as e:
        history["status"] = "failed"
        history["error"] = str(e)
        if writer:
            write_json(hist_path, history)
        raise
    except PeerLostError as e:
        raise PeerLostError(
            _peer_lost_message(ctx, run_dir, last_good, str(e))
        ) from None
    except RuntimeError as e:
        if (
            ctx is None
            or isinstance(e, (PreemptedError, NonFiniteLossError))
            or not _is_communication_error(e)
        ):
            raise
        raise PeerLostError(
            _peer_lost_message(
                ctx,
                run_dir,
                last_good,
                f"{type(e).__name__}: "
                f"{str(e).strip().splitlines()[0][:200] if str(e).strip() else ''}",
            )
        ) from None
    finally:
        if logs is not None:
            logs.close()
    return history


def _peer_lost_message(
    ctx: Optional[DistContext], run_dir: Path, last_good: int, reason: str
) -> str:
    rank = f"rank {ctx.rank}" if ctx is not None else "this process"
    kept = (
        f"the checkpoint of epoch {last_good} in {run_dir} is intact"
        if last_good
        else f"no epoch had finished, so {run_dir} holds no epoch checkpoint"
    )
    return (
        f"{rank}: another process of the run died or stopped answering ({reason}); stopped, and {kept}. "
        "Run the same command with --resume to continue."
    )


# --------------------------------------------------------------------------- saved runs
@dataclass
class Run:
    """A saved run folder: its config, its history and (optionally) its trained model."""

    run_dir: Path
    config: TrainConfig
    history: dict
    model: Optional[nn.Module] = None

    @property
    def complete(self) -> bool:
        return self.history.get("status") == "complete"

    @property
    def epochs(self) -> List[dict]:
        return self.history["epochs"]

    def series(self, key: str) -> List[float]:
        """One per-epoch quantity, e.g. ``run.series("test_acc")``."""
        return [e[key] for e in self.epochs]


def load_run(run_dir, load_model: bool = False, map_location="cpu") -> Run:
    """Read a run folder: ``history.json`` (and ``config.json``), plus the model of
    ``checkpoint.pt`` with ``load_model`` (an error if the folder has no checkpoint)."""
    run_dir = Path(run_dir)
    hist_path = run_dir / HISTORY
    if not hist_path.is_file():
        raise FileNotFoundError(f"{run_dir} holds no run ({HISTORY} missing)")
    with open(hist_path) as f:
        history = json.load(f)
    config = TrainConfig.from_dict(history["config"])
    model = None
    if load_model:
        ckpt = run_dir / CHECKPOINT
        if not ckpt.is_file():
            raise FileNotFoundError(
                f"{run_dir} has a history but no {CHECKPOINT}; the model cannot be loaded"
            )
        state = torch.load(ckpt, map_location=map_location, weights_only=False)
        model = build_model(config.model_config())
        model.load_state_dict(state["model"])
        model.to(map_location).eval()
    return Run(run_dir, config, history, model)


def train_or_load(
    config: TrainConfig,
    run_dir,
    load_model: bool = False,
    progress: bool = False,
    verbose: bool = True,
    data: Optional[CifarData] = None,
) -> Run:
    """The run of ``config`` in ``run_dir``: loaded if a complete run with the same config is
    saved there, else trained (resumed from its checkpoint if one exists; ``data`` as in
    :func:`train`)."""
    run_dir = Path(run_dir)
    if (run_dir / HISTORY).is_file():
        run = load_run(run_dir)
        if _config_differences(run.history["config"], config.to_dict()):
            raise ValueError(
                f"{run_dir} holds a run of another config; choose another folder"
            )
        if run.complete:
            if verbose:
                print(
                    f"Using the saved run in {run_dir} ({len(run.epochs)} epochs, data: {run.history['data']})."
                )
            return load_run(run_dir, load_model=load_model) if load_model else run
    resume = (run_dir / CHECKPOINT).exists() or (run_dir / PARTIAL_CHECKPOINT).exists()
    train(config, run_dir, resume=resume, progress=progress, verbose=verbose, data=data)
    return load_run(run_dir, load_model=load_model)
