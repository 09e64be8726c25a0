"""Training the paper's CIFAR-10 models (Sec. 4) with checkpoints, resume and a JSON history.

Optimisation as in the authors' code (epfml/attention-cnn): SGD, learning rate 0.1, momentum 0.9,
weight decay 1e-4 (none on the Gaussian attention parameters: centres Δ, spreads s, matrices M),
batch 100; self-attention models: linear warm-up over the first 5% of the steps, then cosine
decay to 0, stepped every batch; ResNet18: learning rate divided by 10 at epochs 80, 150 and 250 (the authors' run scripts;
the paper states no ResNet18 schedule).
300 epochs in the paper. bf16 autocast on CUDA (fp16 with loss scaling on cards without bf16;
:mod:`attnconv.experiments.device` makes every device decision).

The pieces live in their own modules: the settings and the schedule in
:mod:`~attnconv.experiments.train_config`, the step and the evaluation in
:mod:`~attnconv.experiments.train_step`, the run folder in :mod:`~attnconv.experiments.checkpoints`,
the optional logs in :mod:`~attnconv.experiments.train_logs`; this module is the loop.

Everything of a run lives in its folder:

* ``config.json`` — the :class:`TrainConfig`;
* ``checkpoint.pt`` — after every epoch, written atomically: model, optimizer, scheduler, RNG
  states, epoch, history. ``--resume`` continues exactly where it stopped (same losses as an
  uninterrupted run);
* ``history.json`` — the data set (``data``, ``train_size``, ``test_size``), the device and
  precision of the last session (``device``, ``precision``), every session's device, precision
  and first epoch (``sessions``: a resume in another precision is refused unless allowed), and per
  epoch: train/test loss and accuracy, learning rate, seconds, and the attention parameters of
  every head (:meth:`SelfAttentionClassifier.attention_parameters`).

A NaN/inf loss stops the run with :class:`NonFiniteLossError` at the end of its epoch (the step is
named; steps are never held up to check it); the last good checkpoint is kept.
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

Python: ``history = train(config, run_dir)``, ``run = load_run(run_dir)`` (:mod:`~attnconv.experiments.checkpoints`),
``run = train_or_load(config, run_dir)``.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np
import torch
import torch.distributed as dist

from .allocator import retain_freed_memory
from .checkpoints import (
    ResumeMismatchError,
    Run,
    RunExistsError,
    RunFolderError,
    attention_record,
    config_differences,
    load_run,
    read_checkpoint,
    save_checkpoint,
    write_json,
)
from .data import CifarData, load_cifar10
from .device import (
    resolve_precision,
    rng_state,
    select_device,
    set_rng_state,
    start_line,
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
    gather_objects,
    wrap_model,
)
from .models import build_model, count_parameters, model_config_to_dict
from .store import (
    CHECKPOINT,
    CONFIG,
    HISTORY,
    PARTIAL_CHECKPOINT,
    json_form,
)
from .train_config import (
    TrainConfig,
    lr_factor,
    make_optimizer,
    make_scheduler,
)
from .train_logs import RunLogs
from .train_step import (
    NonFiniteStep,
    StopRequested,
    encode_predictions,
    evaluate,
    stream_seed,
    train_epoch,
)

__all__ = [
    "StartFrom",
    "NonFiniteLossError",
    "PreemptedError",
    "train",
    "train_or_load",
]


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


def _format_duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


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


def _state_to_resume(run_dir: Path, config: TrainConfig, resume: bool):
    """The checkpoint to continue from (``None`` for a new run), or a :class:`RunFolderError`."""
    if resume:
        return read_checkpoint(run_dir, config)
    paths = [run_dir / n for n in (CHECKPOINT, PARTIAL_CHECKPOINT, HISTORY)]
    existing = [p for p in paths if p.exists()]
    if existing:
        raise RunExistsError(
            f"{run_dir} already holds a run ({existing[0].name}); add --resume (resume=True) "
            "to continue it, or choose another run folder. Nothing was changed."
        )
    return None


def _check_same_precision(history: dict, precision, run_dir: Path) -> None:
    """A resume computes in the precision of the run's last session (a run's numbers come from
    one precision), or raises :class:`ResumeMismatchError` in one line; histories from before the
    field are not checked."""
    saved = history.get("precision")
    if saved is not None and saved != precision.name:
        raise ResumeMismatchError(
            f"cannot resume {run_dir}: its last session computed in {saved} on "
            f"{history.get('device')}, this one would compute in {precision.name} on "
            f"{precision.device}; resume where it computes in {saved}, or allow the change "
            "(allow_precision_change=True, --allow-precision-change): the history records "
            "each session."
        )


def _seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)


def _load_data(
    config: TrainConfig, ctx: Optional[DistContext], verbose: bool
) -> CifarData:
    """The data set, loaded by every process before any barrier: a download, if needed, happens
    once per data root under a file lock (:func:`~attnconv.experiments.data.fetch_cifar10`), so
    no barrier waits on it. Under torchrun the processes then check that they all hold the same
    data (``auto`` could fall back to the sample on one machine and not on another)."""
    data = load_cifar10(
        config.data,
        root=config.data_root,
        verbose=verbose and (ctx is None or ctx.is_writer),
    )
    if ctx is not None:
        sources = gather_objects(data.source)
        if len(set(sources)) > 1:
            raise DistributedSetupError(
                f"the processes loaded different data ({', '.join(sources)} by rank); "
                "give every machine the same --data and --data-root"
            )
    return data


def _prepare_data(config, data, ctx, verbose, device):
    """The run's data (loaded unless given), cut to the config's subsets, on ``device``, and its
    validation set (the last ``config.validation`` training images, on ``device``; ``None``
    without one)."""
    if data is None:
        data = _load_data(config, ctx, verbose)
    elif verbose:
        print(
            data.note
            or f"Data: {data.source} ({len(data.x_train):,} training / "
            f"{len(data.x_test):,} test images)."
        )
    validation = None
    if config.validation:
        data, validation = data.split_validation(config.validation)
        validation = validation.to(device)
    data = data.subset(config.train_subset, config.test_subset).to(device)
    n = len(data.x_train)
    if ctx is not None and 0 < n % config.batch_size < ctx.world_size:
        raise DistributedSetupError(
            f"the last batch of each epoch holds {n % config.batch_size} images, fewer than "
            f"the {ctx.world_size} processes; use fewer processes or another training-set size."
        )
    return data, validation


@dataclass(frozen=True)
class StartFrom:
    """Start a run from given weights instead of ``build_model(config.model_config())``: ``build()``
    returns the model to train (e.g. a trained model with some heads pruned; it may differ from
    the config's architecture), ``record`` (JSON-ready) says what it is. The history then holds
    ``start`` (the record), ``heads_per_layer`` and ``initial`` (test loss, accuracy and per-image
    predictions of the weights before any step, evaluated like every epoch). Resuming needs the
    same ``record`` (:class:`ResumeMismatchError` otherwise): the checkpoint's weights replace
    those of ``build()``."""

    build: Callable[[], torch.nn.Module]
    record: dict = field(default_factory=dict)


class _Session:
    """One session of a run: the model, optimiser and history :func:`train` builds (new or
    resumed), and the steps of its loop (an epoch, its record, its checkpoints)."""

    def __init__(
        self,
        config,
        run_dir,
        ctx,
        data,
        precision,
        sync_batchnorm,
        state,
        start=None,
        validation=None,
    ):
        self.config, self.run_dir, self.ctx, self.data = config, run_dir, ctx, data
        self.start, self.validation = start, validation
        self.precision, self.device = precision, precision.device
        self.writer = ctx is None or ctx.is_writer
        self.n_train = len(data.x_train)
        self.steps_per_epoch = math.ceil(self.n_train / config.batch_size)
        net = build_model(config.model_config()) if start is None else start.build()
        if ctx is not None and sync_batchnorm:
            net = convert_sync_batchnorm(net, ctx)
        self.net = net.to(self.device)
        self.optimizer = make_optimizer(self.net, config)
        self.scheduler = make_scheduler(self.optimizer, config, self.steps_per_epoch)
        self.scaler = precision.grad_scaler()
        self.start_epoch, self.partial = 0, None
        if state is not None:
            self._restore(state)
        else:
            self._start_history()
        self._describe(sync_batchnorm)
        self.model = (
            wrap_model(self.net, ctx, sync_batchnorm) if ctx is not None else self.net
        )
        self.last_good = self.start_epoch

    def _restore(self, state: dict) -> None:
        ctx, config = self.ctx, self.config
        if self.start is not None and state["history"].get("start") != json_form(
            self.start.record
        ):
            raise ResumeMismatchError(
                f"cannot resume {self.run_dir}: it was started from other weights "
                f"({state['history'].get('start')}, asked {self.start.record}). "
                "Nothing was changed."
            )
        self.net.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        if self.scaler is not None and state.get("scaler") is not None:
            self.scaler.load_state_dict(state["scaler"])
        ranks = state.get("rng_ranks")
        same_world = ctx is not None and ranks and len(ranks) == ctx.world_size
        set_rng_state(ranks[ctx.rank] if same_world else state["rng"], self.device)
        if ctx is not None and not same_world:  # dropout, per rank
            torch.manual_seed(
                stream_seed(config.seed, state["epoch"] * 1_000 + ctx.rank, 2)
            )
        self.history = state["history"]
        self.start_epoch = state["epoch"]
        self.partial = state.get("partial")
        done = self.start_epoch >= config.epochs
        self.history["status"] = "complete" if done else "running"

    def _start_history(self) -> None:
        config, data = self.config, self.data
        if self.writer:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            write_json(self.run_dir / CONFIG, config.to_dict())
        self.history = {
            "config": config.to_dict(),
            "model_config": model_config_to_dict(config.model_config()),
            "num_parameters": count_parameters(self.net),
            "data": data.source,
            "data_note": data.note,
            "train_size": self.n_train,
            "test_size": len(data.x_test),
            "steps_per_epoch": self.steps_per_epoch,
            **(
                {"validation_size": len(self.validation.x_test)}
                if self.validation is not None
                else {}
            ),
            "initial_attention": attention_record(self.net),
            "epochs": [],
            "status": "running",
        }
        if self.start is not None:
            self._record_start()
        if self.ctx is not None:  # dropout masks: per rank
            torch.manual_seed(stream_seed(config.seed, self.ctx.rank, 2))

    def _evaluate(self, predictions: Optional[list] = None, held=None):
        """Test loss and accuracy of the weights now, in the session's precision (those on the
        ``x_test`` images of ``held``, e.g. the validation set, when given)."""
        held = self.data if held is None else held
        return evaluate(
            self.net,
            held.x_test,
            held.y_test,
            self.config.eval_batch_size,
            self.device,
            self.config.bf16,
            distributed=self.ctx,
            precision=self.precision,
            predictions=predictions,
        )

    def _record_start(self) -> None:
        """What :class:`StartFrom` started from, and its test accuracy before any step."""
        classes = []
        test_loss, test_acc = self._evaluate(classes)
        self.history["start"] = json_form(self.start.record)
        if hasattr(self.net, "heads_per_layer"):
            self.history["heads_per_layer"] = list(self.net.heads_per_layer)
        self.history["initial"] = {
            "test_loss": test_loss,
            "test_acc": test_acc,
            "test_predictions": encode_predictions(classes),
        }

    def _describe(self, sync_batchnorm: bool) -> None:
        """Where and how this session computes, in the history (the last session's)."""
        self.history["device"] = str(self.device)
        self.history["precision"] = self.precision.name
        self.history.setdefault("sessions", []).append(
            {
                "device": str(self.device),
                "precision": self.precision.name,
                "first_epoch": self.start_epoch + 1,
            }
        )
        if self.ctx is not None:
            self.history["distributed"] = {
                **self.ctx.describe(),
                "sync_batchnorm": bool(sync_batchnorm),
            }
        else:
            self.history.pop("distributed", None)

    def resumed_where(self) -> str:
        if self.partial is not None:
            return f"at step {self.partial['step']} of epoch {self.start_epoch + 1}"
        return f"after epoch {self.start_epoch}"

    def rng_states(self) -> dict:
        own = rng_state(self.device)
        ranks = {"rng_ranks": gather_objects(own)} if self.ctx is not None else {}
        return {"rng": own, **ranks}

    def checkpoint(self, epoch: int, partial: Optional[dict] = None) -> dict:
        """The state a checkpoint holds after ``epoch`` epochs (and ``partial``'s steps)."""
        state = {
            "format": 1,
            "config": self.config.to_dict(),
            "epoch": epoch,
            "model": self.net.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            **self.rng_states(),
            "history": self.history,
        }
        if self.scaler is not None:
            state["scaler"] = self.scaler.state_dict()
        if partial is not None:
            state["partial"] = partial
        return state

    def train_one_epoch(self, epoch, resumed, progress, stop, logs):
        """:func:`~attnconv.experiments.train_step.train_epoch` of ``epoch``; the first steps'
        losses of epoch 1 go into the history."""
        first = None
        if epoch == 1:
            saved = (resumed or {}).get("step_losses")
            first = list(saved) if saved is not None else []
        result = train_epoch(
            self.model,
            self.data,
            self.config,
            self.optimizer,
            self.scheduler,
            epoch,
            self.device,
            progress and self.writer,
            step_losses=first,
            distributed=self.ctx,
            partial=resumed,
            stop=stop,
            on_step=self._step_logger(epoch, logs),
            scaler=self.scaler,
            precision=self.precision,
        )
        if first is not None:
            self.history["first_step_losses"] = first
        return result

    def _step_logger(self, epoch: int, logs):
        if logs is None:
            return None
        config, steps = self.config, self.steps_per_epoch

        def on_step(step, loss):
            g = (epoch - 1) * steps + step
            logs.step(g + 1, epoch, loss, config.lr * lr_factor(g, config, steps))

        return on_step

    def save_partial(self, epoch: int, state: dict, seconds: float, signal_name: str):
        """The mid-epoch checkpoint of a stop request; raises :class:`PreemptedError`."""
        checkpoint = self.checkpoint(epoch - 1, {**state, "seconds": seconds})
        if self.writer:
            save_checkpoint(self.run_dir / PARTIAL_CHECKPOINT, checkpoint)
        if self.ctx is not None:
            barrier()  # the others wait for the checkpoint before they exit
        raise PreemptedError(
            self.run_dir, epoch, state["step"], self.steps_per_epoch, signal_name
        )

    def finish_epoch(self, epoch: int, train_result, seconds_before: float, t0: float):
        """Evaluate, record the epoch in the history and write the epoch checkpoint."""
        config = self.config
        last = epoch == config.epochs
        classes = [] if last else None  # the last epoch's per-image predictions
        test_loss = test_acc = None  # not read this epoch (evaluate_every, validation)
        if config.reads_test(epoch):
            test_loss, test_acc = self._evaluate(classes)
        held = {}
        if self.validation is not None and config.evaluates(epoch):
            val_loss, val_acc = self._evaluate(None, self.validation)
            held = {"val_loss": val_loss, "val_acc": val_acc}
        last_step = epoch * self.steps_per_epoch - 1
        record = {
            "epoch": epoch,
            "train_loss": train_result[0],
            "train_acc": train_result[1],
            "test_loss": test_loss,
            "test_acc": test_acc,
            **held,
            "lr": config.lr * lr_factor(last_step, config, self.steps_per_epoch),
            "seconds": seconds_before + time.perf_counter() - t0,
            "attention": attention_record(self.net),
        }
        if last:
            record["test_predictions"] = encode_predictions(classes)
        self.history["epochs"].append(record)
        if last:
            self.history["status"] = "complete"
        checkpoint = self.checkpoint(epoch)
        if self.writer:
            save_checkpoint(self.run_dir / CHECKPOINT, checkpoint)
            write_json(self.run_dir / HISTORY, self.history)
            partial_path = self.run_dir / PARTIAL_CHECKPOINT
            if partial_path.exists():
                partial_path.unlink()
        self.last_good = epoch
        return record

    def fail(self, error: Exception) -> None:
        """Mark the history failed (a NaN/inf loss); the last good checkpoint stays."""
        self.history["status"] = "failed"
        self.history["error"] = str(error)
        if self.writer:
            write_json(self.run_dir / HISTORY, self.history)


def _epoch_line(config, record, train_seconds, images, eta_seconds) -> str:
    """The progress line of an epoch. A run with a validation split (the protocol's runs, whose
    test set is read once, by the verdict) does not print its test numbers: "test evaluated"."""
    r = record
    validated = r.get("val_acc") is not None
    test = (
        "not evaluated"
        if r["test_acc"] is None
        else "evaluated"
        if validated
        else f"loss {r['test_loss']:.4f} acc {r['test_acc']:.4f}"
    )
    if validated:
        test = f"{test} | val loss {r['val_loss']:.4f} acc {r['val_acc']:.4f}"
    return (
        f"epoch {r['epoch']}/{config.epochs}: train loss {r['train_loss']:.4f} "
        f"acc {r['train_acc']:.4f} | test {test} "
        f"| lr {r['lr']:.4g} | {r['seconds']:.1f}s | "
        f"{images / max(train_seconds, 1e-9):,.0f} img/s | "
        f"ETA {_format_duration(eta_seconds)}"
    )


def _run_epochs(session: _Session, progress, stop_after, stop, logs, verbose) -> None:
    """The loop over the epochs left; returns when the run is done or ``stop_after`` is reached."""
    config, steps = session.config, session.steps_per_epoch
    partial, session_start, session_epochs = session.partial, time.perf_counter(), 0
    for epoch in range(session.start_epoch + 1, config.epochs + 1):
        t0 = time.perf_counter()
        resumed = (
            partial if partial is not None and int(partial["epoch"]) == epoch else None
        )
        partial = None
        before = (resumed or {}).get("seconds", 0.0)
        try:
            result = session.train_one_epoch(epoch, resumed, progress, stop, logs)
        except NonFiniteStep as e:
            raise NonFiniteLossError(
                epoch, e.step, e.loss, session.last_good, session.run_dir
            ) from None
        except StopRequested as e:
            seconds = before + time.perf_counter() - t0
            session.save_partial(epoch, e.state, seconds, stop.name)
        train_seconds = time.perf_counter() - t0
        record = session.finish_epoch(epoch, result, before, t0)
        if logs is not None:
            logs.epoch(record, epoch * steps)
        session_epochs += 1
        if verbose:
            done = steps - (int(resumed["step"]) if resumed is not None else 0)
            per_epoch = (time.perf_counter() - session_start) / session_epochs
            eta = per_epoch * (config.epochs - epoch)
            images = done / steps * session.n_train
            print(_epoch_line(config, record, train_seconds, images, eta), flush=True)
        if stop_after is not None and epoch >= stop_after:
            return
        _stop_between_epochs(session, stop, epoch, steps)


def _stop_between_epochs(session: _Session, stop, epoch: int, steps: int) -> None:
    ctx = session.ctx
    stopping = bool(stop) if ctx is None else any_rank(bool(stop), session.device)
    if stopping and epoch < session.config.epochs:
        if ctx is not None:
            barrier()
        raise PreemptedError(session.run_dir, epoch, steps, steps, stop.name)


def _as_peer_lost(e: RuntimeError, ctx, run_dir: Path, last_good: int):
    """The :class:`PeerLostError` a failed collective operation means, else ``None``."""
    if isinstance(e, (PreemptedError, NonFiniteLossError)):
        return None
    if isinstance(e, PeerLostError):
        reason = str(e)
    elif ctx is not None and _is_communication_error(e):
        text = str(e).strip()
        reason = f"{type(e).__name__}: {text.splitlines()[0][:200] if text else ''}"
    else:
        return None
    return PeerLostError(_peer_lost_message(ctx, run_dir, last_good, reason))


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
    start: Optional[StartFrom] = None,
    allow_precision_change: bool = False,
) -> dict:
    """Train ``config`` into ``run_dir`` and return the history (the content of ``history.json``).

    Args:
        resume: continue the run in ``run_dir`` from its checkpoint (its config must be the same,
            the device aside). Without it, a folder that already holds a checkpoint is an error.
        allow_precision_change: resume in another precision than the run's last session's.
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
        start: a :class:`StartFrom` — train given weights (e.g. a pruned model) instead of a
            fresh model of ``config``; the same loop, checkpoints and resume.

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
    if ctx is not None:
        check_world_size(config.batch_size, ctx.world_size)
    state = _share(ctx, lambda: _state_to_resume(run_dir, config, resume))
    device = ctx.device if ctx is not None else select_device(config.device)
    precision = resolve_precision(device, config.bf16, config.precision)
    if state is not None and not allow_precision_change:
        _check_same_precision(state["history"], precision, run_dir)
    _seed_everything(config.seed)
    data, validation = _prepare_data(config, data, ctx, verbose, device)
    session = _Session(
        config, run_dir, ctx, data, precision, sync_batchnorm, state, start, validation
    )
    if verbose:
        print(start_line(precision))
        if state is not None:
            print(f"Resuming {run_dir} {session.resumed_where()}.")
    return _train_session(
        session, progress, stop_after, stop_signals, csv, tensorboard, verbose
    )


def _train_session(
    session, progress, stop_after, stop_signals, csv, tensorboard, verbose
):
    """Run ``session``'s epochs with its logs, turning failures into the documented errors."""
    done_steps = session.start_epoch * session.steps_per_epoch + (
        int(session.partial["step"]) if session.partial is not None else 0
    )
    logs = None
    if session.writer and (csv or tensorboard is not None):
        logs = RunLogs(
            session.run_dir, csv, tensorboard, done_steps, session.start_epoch
        )
    try:
        with StopRequest(stop_signals) as stop:
            _run_epochs(session, progress, stop_after, stop, logs, verbose)
    except NonFiniteLossError as e:
        session.fail(e)
        raise
    except RuntimeError as e:
        lost = _as_peer_lost(e, session.ctx, session.run_dir, session.last_good)
        if lost is None:
            raise
        raise lost from None
    finally:
        if logs is not None:
            logs.close()
    return session.history


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
        if config_differences(run.history["config"], config.to_dict()):
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
