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
from pathlib import Path
from typing import Optional

import torch

from .profiles import default_profile_name, make_config
from .train import CHECKPOINT, HISTORY, Run, load_run, train, train_or_load

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


def verify_first_epoch(run: Run, loss_tolerance: float = 1e-3, accuracy_tolerance: float = 0.005) -> dict:
    """Re-train the first epoch of ``run``'s configuration in a temporary folder and compare it
    with the saved history: ``{"match": bool, "saved": {...}, "retrained": {...}}``.

    Losses must agree within ``loss_tolerance`` (relative) and accuracies within
    ``accuracy_tolerance`` (a few images: float sums differ slightly between thread counts)."""
    config = run.config
    with tempfile.TemporaryDirectory() as tmp:
        history = train(config, tmp, progress=False, stop_after=1, verbose=False)
    saved, again = run.epochs[0], history["epochs"][0]
    keys = ("train_loss", "test_loss", "train_acc", "test_acc")
    ok = all(abs(saved[k] - again[k]) <= loss_tolerance * abs(saved[k]) for k in ("train_loss", "test_loss"))
    ok = ok and all(abs(saved[k] - again[k]) <= accuracy_tolerance for k in ("train_acc", "test_acc"))
    return {"match": ok, "saved": {k: saved[k] for k in keys}, "retrained": {k: again[k] for k in keys}}
