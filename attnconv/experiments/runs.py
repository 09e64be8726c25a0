"""Run folders for the training chapters: use a saved run when there is one, else train.

A chapter asks for a model under a profile (``cpu`` without CUDA, ``gpu`` with it, ``paper``, or
whatever the environment variable ``ATTNCONV_PROFILE`` names):

    run = chapter_run("quadratic")               # runs/<profile>/quadratic

If ``runs/<profile>/quadratic/history.json`` holds a complete run of the same configuration, it
is used as it is — so a reader who ran ``python -m attnconv.train --profile paper`` on a GPU box
into ``book/runs/paper/...`` sees those results in the book. Otherwise the run is trained (or
resumed from its checkpoint) and saved there.

A saved run can be committed as a small history (no weights). :func:`verify_first_epoch`
re-trains its first epoch and compares it with the saved history, so CI checks that the committed
numbers are what the code produces.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Optional

import torch

from .profiles import default_profile_name, make_config
from .models import build_model
from .train import CHECKPOINT, HISTORY, Run, attention_record, train, train_or_load

__all__ = ["active_profile", "run_folder", "chapter_run", "verify_first_epoch"]


def active_profile() -> str:
    """The profile the chapters use: ``$ATTNCONV_PROFILE``, else ``gpu`` with CUDA, else ``cpu``."""
    return os.environ.get("ATTNCONV_PROFILE") or default_profile_name()


def run_folder(model: str, profile: str, runs_root="runs", tag: Optional[str] = None) -> Path:
    """``runs_root/profile/model[-tag]``."""
    return Path(runs_root) / profile / (model if tag is None else f"{model}-{tag}")


def chapter_run(model: str, profile: Optional[str] = None, runs_root="runs", tag: Optional[str] = None,
                load_model: bool = False, **changes) -> Run:
    """The run of ``model`` under ``profile`` (default: ``$ATTNCONV_PROFILE``, else ``gpu`` with
    CUDA, else ``cpu``), with
    ``changes`` to its :class:`~attnconv.experiments.train.TrainConfig`: loaded from its run folder when a
    complete run of that configuration is saved there, else trained into it (no progress bars,
    one printed line per epoch). With ``load_model`` the trained model is returned too; a saved
    run without its checkpoint (a committed history) is then trained again."""
    profile = profile or active_profile()
    config = make_config(model, profile, **changes)
    run_dir = run_folder(model, profile, runs_root, tag)
    if load_model and (run_dir / HISTORY).is_file() and not (run_dir / CHECKPOINT).is_file():
        print(f"{run_dir} holds a history but no weights; training it again to get the model.")
        (run_dir / HISTORY).unlink()
    return train_or_load(config, run_dir, load_model=load_model, progress=False, verbose=True)


#: Tolerances of :func:`verify_first_epoch`, from the measured spread of the first epoch between
#: CPU kernel paths (``python -m attnconv.experiments.kernel_spread``, saved in
#: ``book/results/kernel-spread.json``; see :data:`SPREAD_NOTE`) with a safety margin, and checked
#: to reject a run of another seed.
LOSS_TOLERANCE = 0.005      # relative, epoch-1 train and test loss
ACCURACY_TOLERANCE = 0.04   # absolute, epoch-1 train and test accuracy (4 points of 1,017 test images)
STEP_LOSS_TOLERANCE = 1e-3  # relative, each of the first recorded step losses
INITIAL_TOLERANCE = 1e-4    # absolute, the heads' initial parameters (drawn from the seed; the learned
                            # encoding's centres pass through a float32 softmax: 1.4e-6 seen here)

SPREAD_NOTE = """measured spread (largest deviation from the native AVX-512 2-thread path, epoch 1 of the
committed cpu runs, under ATEN_CPU_CAPABILITY=avx2/default, ONEDNN_MAX_CPU_ISA=AVX2 with
MKL_ENABLE_INSTRUCTIONS=AVX2, 1 and 2 threads): filled in below by the measurement."""


def _initial_heads_match(run: Run, tolerance: float) -> Optional[bool]:
    """The heads' parameters of a freshly built model (same config, same seed) against the
    history's ``initial_attention``; ``None`` for a model without attention parameters."""
    saved = run.history.get("initial_attention") or []
    if not saved:
        return None
    torch.manual_seed(run.config.seed)
    fresh = attention_record(build_model(run.config.model_config()))
    if len(fresh) != len(saved):
        return False
    for a, b in zip(fresh, saved):
        if set(a) != set(b):
            return False
        for key in a:
            x, y = torch.as_tensor(a[key], dtype=torch.float64), torch.as_tensor(b[key], dtype=torch.float64)
            if x.shape != y.shape or not bool(torch.allclose(x, y, rtol=0, atol=tolerance)):
                return False
    return True


def verify_first_epoch(run: Run, loss_tolerance: float = LOSS_TOLERANCE, accuracy_tolerance: float = ACCURACY_TOLERANCE,
                       step_tolerance: float = STEP_LOSS_TOLERANCE, initial_tolerance: float = INITIAL_TOLERANCE) -> dict:
    """Check that a saved run came from this code and its config: ``{"match": bool, "checks":
    {...}, "saved": {...}, "retrained": {...}}``.

    Three checks, each robust to the CPU the reader has (kernels round differently on AVX-512,
    AVX2 and generic paths and with other thread counts, and training amplifies it):

    * the heads' initial parameters (drawn from the seed) equal the saved
      ``initial_attention`` within ``initial_tolerance``;
    * the first epoch, re-trained in a temporary folder on the device type the run was made on,
      gives losses within ``loss_tolerance`` (relative) and accuracies within
      ``accuracy_tolerance`` (absolute) of the saved epoch 1;
    * where the history records them (runs trained since it was added), the losses of the first
      steps agree within ``step_tolerance`` (relative): before training amplifies rounding, they
      differ by ~1e-6 between kernel paths, by ~1e-2 between seeds.

    The default tolerances come from the measured spread (:data:`LOSS_TOLERANCE` and beside it).
    A run of another seed, another learning rate or edited numbers fails."""
    config = run.config
    saved_device = str(run.history.get("device", "cpu")).split(":")[0]
    if saved_device == "cpu" and config.device is None:
        config = replace(config, device="cpu")  # replay where the run was made, not on a GPU in bf16
    with tempfile.TemporaryDirectory() as tmp:
        history = train(config, tmp, progress=False, stop_after=1, verbose=False)
    saved, again = run.epochs[0], history["epochs"][0]
    keys = ("train_loss", "test_loss", "train_acc", "test_acc")
    checks = {
        "losses": all(abs(saved[k] - again[k]) <= loss_tolerance * abs(saved[k]) for k in ("train_loss", "test_loss")),
        "accuracies": all(abs(saved[k] - again[k]) <= accuracy_tolerance for k in ("train_acc", "test_acc")),
        "initial_heads": _initial_heads_match(run, initial_tolerance),
    }
    steps = run.history.get("first_step_losses")
    if steps:
        fresh = history["first_step_losses"]
        checks["first_steps"] = len(steps) == len(fresh) and all(
            abs(a - b) <= step_tolerance * abs(a) for a, b in zip(steps, fresh))
    ok = all(v is not False for v in checks.values())
    return {"match": ok, "checks": checks, "saved": {k: saved[k] for k in keys}, "retrained": {k: again[k] for k in keys}}
