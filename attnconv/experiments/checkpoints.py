"""A run folder on disk: its files written atomically, its checkpoint read back (or a one-line
reason why not), and the saved run (:class:`Run`, :func:`load_run`).

Every file of a run folder is named in :mod:`attnconv.experiments.store`."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

import torch
from torch import nn

from .models import build_model
from .store import CHECKPOINT, HISTORY, PARTIAL_CHECKPOINT
from .train_config import TrainConfig

__all__ = [
    "RunFolderError",
    "RunExistsError",
    "NothingToResumeError",
    "CorruptCheckpointError",
    "ResumeMismatchError",
    "IGNORED_ON_RESUME",
    "attention_record",
    "atomic_write_bytes",
    "write_json",
    "save_checkpoint",
    "config_differences",
    "read_checkpoint",
    "Run",
    "load_run",
]


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


def atomic_write_bytes(path: Path, write) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


#: ``json.dump`` separators of every stored run file: no whitespace.
COMPACT = (",", ":")


def write_json(path: Path, obj) -> None:
    """Write ``obj`` as compact JSON to ``path`` atomically (a crash never leaves a half-written
    file). Compact: no indentation or spaces, a third smaller than ``indent=1``, so the stored runs
    fit what travels to a lent GPU; floats keep their full ``repr``, so nothing is lost."""

    def write(tmp):
        with open(tmp, "w") as f:
            json.dump(obj, f, separators=COMPACT)
            f.flush()
            os.fsync(f.fileno())

    atomic_write_bytes(path, write)


#: Config fields that say where a run computes or reads, not what it computes: resuming with
#: another value is allowed.
IGNORED_ON_RESUME = ("device", "data_root")


def save_checkpoint(path: Path, state: dict) -> None:
    """``torch.save(state)`` to ``path`` atomically (the previous checkpoint stays whole until
    the new one is complete)."""
    atomic_write_bytes(path, lambda tmp: torch.save(state, tmp))


def config_differences(a: dict, b: dict) -> List[str]:
    """Keys whose values differ, compared in JSON form (tuples and lists alike), the fields of
    :data:`IGNORED_ON_RESUME` aside."""
    a, b = json.loads(json.dumps(a)), json.loads(json.dumps(b))
    keys = (set(a) | set(b)) - set(IGNORED_ON_RESUME)
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


def read_checkpoint(run_dir: Path, config: TrainConfig) -> dict:
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
    diff = config_differences(saved, config.to_dict())
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
