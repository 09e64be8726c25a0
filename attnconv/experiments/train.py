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

Command line::

    python -m attnconv.train --model quadratic --profile cpu --run-dir runs/quadratic-cpu
    python -m attnconv.train --model resnet18 --profile gpu --run-dir runs/r18 --resume

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
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .data import CifarData, iterate_batches, load_cifar10, normalize, random_crop_flip
from .models import MODEL_NAMES, build_model, count_parameters, model_config_to_dict, paper_model_config
from .store import CHECKPOINT, CONFIG, HISTORY

__all__ = [
    "TrainConfig",
    "attention_record",
    "RECORDED_STEPS",
    "train_epoch",
    "write_json",
    "NonFiniteLossError",
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

    def __init__(self, epoch: int, step: int, loss: float, last_good_epoch: int, run_dir: Path):
        self.epoch, self.step, self.loss, self.last_good_epoch, self.run_dir = epoch, step, loss, last_good_epoch, run_dir
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
    schedule: str = "warmup_cosine"  # "warmup_cosine" (self-attention) | "step" (ResNet18)
    warmup_fraction: float = 0.05
    milestones: Tuple[int, ...] = (80, 150, 250)  # epochs, for schedule="step"
    gamma: float = 0.1
    attention_lr_multiplier: float = 1.0  # learning rate × this for the positional encodings
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
            raise ValueError(f"schedule must be 'warmup_cosine' or 'step', got {self.schedule!r}")
        if self.data not in ("auto", "full", "sample"):
            raise ValueError(f"data must be 'auto', 'full' or 'sample', got {self.data!r}")
        if self.epochs < 1 or self.batch_size < 1 or self.eval_batch_size < 1:
            raise ValueError("epochs, batch_size and eval_batch_size must be >= 1")
        if not 0 <= self.warmup_fraction < 1:
            raise ValueError("warmup_fraction must be in [0, 1)")
        if self.lr <= 0 or self.attention_lr_multiplier < 0 or self.weight_decay < 0:
            raise ValueError("lr must be > 0, attention_lr_multiplier and weight_decay >= 0")
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
        g = groups.setdefault((wd, mult), {"params": [], "names": [], "weight_decay": wd,
                                           "lr": config.lr * mult, "lr_multiplier": mult})
        g["params"].append(p)
        g["names"].append(name)
    return list(groups.values())


def make_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.SGD:
    groups = parameter_groups(model, config)
    for g in groups:
        g.pop("names")
    return torch.optim.SGD(groups, lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay)


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


def make_scheduler(optimizer, config: TrainConfig, steps_per_epoch: int) -> torch.optim.lr_scheduler.LambdaLR:
    """A ``LambdaLR`` stepped after every batch with :func:`lr_factor`."""
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(s, config, steps_per_epoch))


def _stream_seed(seed: int, epoch: int, stream: int) -> int:
    return (seed * 1_000_003 + epoch * 7_919 + stream) % (2 ** 63 - 1)


def _epoch_generator(seed: int, epoch: int, stream: int) -> torch.Generator:
    """A CPU generator for one epoch's shuffling (stream 0) or augmentation (stream 1): a function
    of (seed, epoch) only, so a resumed run draws the same batches."""
    return torch.Generator().manual_seed(_stream_seed(seed, epoch, stream))


def _autocast(device: torch.device, config: TrainConfig):
    return torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda" and config.bf16)


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


def train_epoch(model: nn.Module, data, config: TrainConfig, optimizer, scheduler, epoch: int, device: torch.device,
                progress: bool = False, step_losses: Optional[List[float]] = None):
    """One epoch of SGD on ``data.x_train``: batches shuffled and augmented from (seed, epoch), so
    that a resumed run repeats them exactly. Returns (mean training loss, training accuracy).

    ``step_losses``: a list that receives the loss of each of the first :data:`RECORDED_STEPS`
    steps (the saved-run check replays them)."""
    from tqdm import tqdm

    n_train = len(data.x_train)
    steps_per_epoch = math.ceil(n_train / config.batch_size)
    model.train()
    order_gen = _epoch_generator(config.seed, epoch, 0)
    aug_gen = _epoch_generator(config.seed, epoch, 1)
    loss_sum = torch.zeros((), device=device)
    correct = torch.zeros((), device=device, dtype=torch.long)
    bar = tqdm(total=steps_per_epoch, desc=f"{config.model} epoch {epoch}/{config.epochs}",
               leave=False, disable=not progress, file=sys.stderr)
    for step, idx in enumerate(iterate_batches(n_train, config.batch_size, order_gen)):
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
        if step_losses is not None and len(step_losses) < RECORDED_STEPS:
            step_losses.append(float(loss.detach()))
        bar.update(1)
        if progress and step % 10 == 0:
            bar.set_postfix(loss=f"{loss.item():.3f}")
    bar.close()
    return float(loss_sum) / n_train, int(correct) / n_train


@torch.no_grad()
def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int = 500,
             device: Optional[torch.device] = None, bf16: bool = True) -> Tuple[float, float]:
    """Mean cross-entropy and accuracy of ``model`` (eval mode) on ``uint8`` images ``x``."""
    device = device or next(model.parameters()).device
    was_training = model.training
    model.eval()
    loss_sum, correct = 0.0, 0
    try:
        for idx in iterate_batches(len(x), batch_size, shuffle=False):
            xb = normalize(x[idx].to(device))
            yb = y[idx].to(device)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda" and bf16):
                logits = model(xb)
            loss_sum += float(F.cross_entropy(logits.float(), yb, reduction="sum"))
            correct += int((logits.argmax(1) == yb).sum())
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
    state = {"torch": torch.get_rng_state(), "python": random.getstate(), "numpy": np.random.get_state()}
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


def _read_checkpoint(run_dir: Path, config: TrainConfig) -> dict:
    """The checkpoint to resume ``config`` from, or a :class:`RunFolderError` that says why not."""
    ckpt_path = run_dir / CHECKPOINT
    if not ckpt_path.is_file():
        if (run_dir / HISTORY).is_file():
            raise NothingToResumeError(
                f"nothing to resume in {run_dir}: it holds {HISTORY} but no {CHECKPOINT} (weights are never "
                "committed). Start a new run in another folder, without --resume.")
        raise NothingToResumeError(f"nothing to resume in {run_dir}: there is no {CHECKPOINT}. "
                                   "Drop --resume to start a new run there.")
    try:
        state = torch.load(ckpt_path, map_location="cpu", weights_only=False)
        for key in ("config", "epoch", "model", "optimizer", "scheduler", "rng", "history"):
            state[key]
    except Exception as e:  # truncated zip, pickle or torch errors: all mean the same to the user
        reason = f"{type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else 'no details'}"
        raise CorruptCheckpointError(
            f"cannot read {ckpt_path} ({reason}); {_describe_history(run_dir)}.\n"
            f"Restore {CHECKPOINT} from a copy to resume, or start again without --resume in another folder.") from None
    saved = state["config"]
    diff = _config_differences(saved, config.to_dict())
    if diff == ["epochs"]:
        done, planned = int(state["epoch"]), int(saved["epochs"])
        if done >= planned:
            raise ResumeMismatchError(
                f"{run_dir} finished its {planned} epochs; continuing it for {config.epochs} is not supported: its "
                f"learning-rate schedule ({saved['schedule']}) was laid out over {planned} epochs and has ended.\n"
                f"Train a new run with --epochs {config.epochs} in another folder.")
        raise ResumeMismatchError(f"{run_dir} is a run of {planned} epochs (stopped after {done}); resume it with "
                                  f"--epochs {planned}, or start a new run of {config.epochs} epochs in another folder.")
    if diff:
        changes = ", ".join(f"{k}: saved {saved.get(k)!r}, asked {config.to_dict().get(k)!r}" for k in diff)
        raise ResumeMismatchError(f"cannot resume {run_dir}: it is a run of other settings ({changes}).\n"
                                  "Resume with the run's own settings, or choose another run folder.")
    return state


# --------------------------------------------------------------------------- training
def train(
    config: TrainConfig,
    run_dir,
    resume: bool = False,
    progress: bool = True,
    stop_after: Optional[int] = None,
    data: Optional[CifarData] = None,
    verbose: bool = True,
) -> dict:
    """Train ``config`` into ``run_dir`` and return the history (the content of ``history.json``).

    Args:
        resume: continue the run in ``run_dir`` from its checkpoint (its config must be the same,
            the device aside). Without it, a folder that already holds a checkpoint is an error.
        progress: tqdm progress bars (on stderr).
        stop_after: return after this epoch as if interrupted (the run stays resumable).
        data: a :class:`~attnconv.experiments.data.CifarData` to use instead of loading ``config.data``.
        verbose: print which data the run uses and one line per epoch.

    Raises:
        NonFiniteLossError: a NaN/inf loss; the last good checkpoint stays in ``run_dir``.
        RunExistsError: ``run_dir`` holds a run and ``resume`` is False.
        NothingToResumeError, CorruptCheckpointError, ResumeMismatchError: ``resume`` is True and
            the folder has no checkpoint, an unreadable one, or one of other settings (a finished
            run cannot be continued for more epochs: its cosine schedule has reached 0).
        Nothing in ``run_dir`` is changed when one of these is raised.
    """
    from tqdm import tqdm

    run_dir = Path(run_dir)
    ckpt_path, hist_path = run_dir / CHECKPOINT, run_dir / HISTORY
    state = _read_checkpoint(run_dir, config) if resume else None
    if not resume and (ckpt_path.exists() or hist_path.exists()):
        what = CHECKPOINT if ckpt_path.exists() else HISTORY
        raise RunExistsError(f"{run_dir} already holds a run ({what}); add --resume (resume=True) to continue it, "
                             "or choose another run folder. Nothing was changed.")
    device = select_device(config.device)
    torch.manual_seed(config.seed)
    random.seed(config.seed)
    np.random.seed(config.seed)

    if data is None:
        data = load_cifar10(config.data, root=config.data_root, verbose=verbose)
    elif verbose:
        print(data.note or f"Data: {data.source} ({len(data.x_train):,} training / {len(data.x_test):,} test images).")
    data = data.subset(config.train_subset, config.test_subset).to(device)
    n_train = len(data.x_train)
    steps_per_epoch = math.ceil(n_train / config.batch_size)

    model = build_model(config.model_config()).to(device)
    optimizer = make_optimizer(model, config)
    scheduler = make_scheduler(optimizer, config, steps_per_epoch)

    start_epoch = 0
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        _set_rng_state(state["rng"], device)
        history = state["history"]
        start_epoch = state["epoch"]
        history["status"] = "complete" if start_epoch >= config.epochs else "running"
        if verbose:
            print(f"Resuming {run_dir} after epoch {start_epoch}.")
    else:
        run_dir.mkdir(parents=True, exist_ok=True)
        write_json(run_dir / CONFIG, config.to_dict())
        history = {
            "config": config.to_dict(),
            "model_config": model_config_to_dict(config.model_config()),
            "num_parameters": count_parameters(model),
            "data": data.source,
            "data_note": data.note,
            "train_size": n_train,
            "test_size": len(data.x_test),
            "steps_per_epoch": steps_per_epoch,
            "initial_attention": attention_record(model),
            "epochs": [],
            "status": "running",
        }
    history["device"] = str(device)

    last_good = start_epoch
    try:
        for epoch in range(start_epoch + 1, config.epochs + 1):
            t0 = time.perf_counter()
            try:
                first = [] if epoch == 1 else None
                train_loss, train_acc = train_epoch(model, data, config, optimizer, scheduler, epoch, device, progress,
                                                    step_losses=first)
                if first is not None:
                    history["first_step_losses"] = first
            except _NonFiniteStep as e:
                raise NonFiniteLossError(epoch, e.step, e.loss, last_good, run_dir) from None
            lr = config.lr * lr_factor(epoch * steps_per_epoch - 1, config, steps_per_epoch)  # of the epoch's last step
            test_loss, test_acc = evaluate(model, data.x_test, data.y_test, config.eval_batch_size, device, config.bf16)
            record = {
                "epoch": epoch, "train_loss": train_loss, "train_acc": train_acc, "test_loss": test_loss,
                "test_acc": test_acc, "lr": lr, "seconds": time.perf_counter() - t0,
                "attention": attention_record(model),
            }
            history["epochs"].append(record)
            if epoch == config.epochs:
                history["status"] = "complete"
            checkpoint = {
                "format": 1, "config": config.to_dict(), "epoch": epoch, "model": model.state_dict(),
                "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                "rng": _rng_state(device), "history": history,
            }
            _atomic_write_bytes(ckpt_path, lambda tmp: torch.save(checkpoint, tmp))
            write_json(hist_path, history)
            last_good = epoch
            if verbose:
                print(f"epoch {epoch}/{config.epochs}: train loss {train_loss:.4f} acc {train_acc:.4f} | "
                      f"test loss {test_loss:.4f} acc {test_acc:.4f} | lr {lr:.4g} | {record['seconds']:.1f}s")
            if stop_after is not None and epoch >= stop_after:
                break
    except NonFiniteLossError as e:
        history["status"] = "failed"
        history["error"] = str(e)
        write_json(hist_path, history)
        raise
    return history


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
            raise FileNotFoundError(f"{run_dir} has a history but no {CHECKPOINT}; the model cannot be loaded")
        state = torch.load(ckpt, map_location=map_location, weights_only=False)
        model = build_model(config.model_config())
        model.load_state_dict(state["model"])
        model.to(map_location).eval()
    return Run(run_dir, config, history, model)


def train_or_load(config: TrainConfig, run_dir, load_model: bool = False, progress: bool = False,
                  verbose: bool = True, data: Optional[CifarData] = None) -> Run:
    """The run of ``config`` in ``run_dir``: loaded if a complete run with the same config is
    saved there, else trained (resumed from its checkpoint if one exists; ``data`` as in
    :func:`train`)."""
    run_dir = Path(run_dir)
    if (run_dir / HISTORY).is_file():
        run = load_run(run_dir)
        if _config_differences(run.history["config"], config.to_dict()):
            raise ValueError(f"{run_dir} holds a run of another config; choose another folder")
        if run.complete:
            if verbose:
                print(f"Using the saved run in {run_dir} ({len(run.epochs)} epochs, data: {run.history['data']}).")
            return load_run(run_dir, load_model=load_model) if load_model else run
    train(config, run_dir, resume=(run_dir / CHECKPOINT).exists(), progress=progress, verbose=verbose, data=data)
    return load_run(run_dir, load_model=load_model)
