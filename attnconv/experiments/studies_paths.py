"""Head paths (arXiv v1 Fig. 2): every layer's attention parameters after every epoch of a saved
run whose history kept only its start and end.

A fresh seed's history is thinned (:func:`~attnconv.experiments.store.thin_history`), so the
path its heads took is not saved. :func:`head_paths` trains the run's own configuration again,
on the device type the run was made on, and keeps every epoch's heads. The file also says how
far the re-run's last heads lie from the saved run's (:func:`end_agreement`): a figure drawing
the path says whether it ends where the counted run ended. Registered as ``<run>/head-paths``
(:func:`head_paths_study`); only ``python -m attnconv.regenerate`` makes it.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Mapping

import numpy as np

from .checkpoints import write_json
from .registry import RUNS, load_run
from .runs import device_kind
from .store import (
    HISTORY,
    MissingResultError,
    StaleResultError,
    read_json,
    regenerate_command,
    relative_to_book,
)
from .studies import StudyEntry
from .train import train

__all__ = ["HEAD_PATHS_FILE", "end_agreement", "head_paths", "head_paths_study"]

#: The file beside the run's ``history.json``.
HEAD_PATHS_FILE = "head-paths.json"


def _centres(records) -> np.ndarray:
    """Every head centre of every layer with heads, one array ``(heads, 2)``."""
    return np.concatenate(
        [
            np.asarray(r["centers"], float).reshape(-1, 2)
            for r in records
            if "centers" in r
        ]
    )


def end_agreement(again: Mapping, saved: Mapping) -> dict:
    """How far a re-run's end lies from the saved run's: the largest distance between a head's
    two last centres (tokens), the test accuracy of each, and the test images they classify
    differently (``None`` where either kept no predictions)."""
    a, s = again["epochs"][-1], saved["epochs"][-1]
    gap = np.linalg.norm(_centres(a["attention"]) - _centres(s["attention"]), axis=-1)
    pa, ps = a.get("test_predictions"), s.get("test_predictions")
    differ = None
    if pa is not None and ps is not None:
        differ = sum(x != y for x, y in zip(pa, ps)) + abs(len(pa) - len(ps))
    return {
        "largest_centre_gap": float(gap.max()),
        "test_acc_rerun": a.get("test_acc"),
        "test_acc_saved": s.get("test_acc"),
        "predictions_differ": differ,
    }


def head_paths(name: str, progress: bool = True) -> dict:
    """Train the registered run ``name``'s configuration again and return its heads before training
    and after every epoch (a history's ``initial_attention`` and ``epochs[i]["attention"]``, so
    :func:`~attnconv.chapters.shared.trained_heads.center_trajectories` reads it), with
    :func:`end_agreement` against the saved run."""
    saved = read_json(RUNS[name].path / HISTORY)
    config = load_run(name).config
    if device_kind(saved) == "cpu" and config.device is None:
        config = replace(config, device="cpu")
    with tempfile.TemporaryDirectory() as tmp:
        again = train(config, tmp, progress=progress, verbose=False)
    return {
        "rerun_of": name,
        "epochs_saved": len(saved["epochs"]),
        "initial_attention": again["initial_attention"],
        "epochs": [
            {"epoch": e["epoch"], "attention": e["attention"]} for e in again["epochs"]
        ],
        "agreement": end_agreement(again, saved),
    }


def head_paths_study(name: str) -> StudyEntry:
    """The study ``<name>/head-paths``: :func:`head_paths` of run ``name``, saved beside it. Read,
    it is stale when the run now has another number of epochs."""
    command = regenerate_command(f"{name}/head-paths")

    def where() -> (
        Path
    ):  # resolved when used: the book's folder may be moved (a test's copy)
        return RUNS[name].path / HEAD_PATHS_FILE

    def make():
        write_json(where(), head_paths(name))

    def read():
        path = where()
        if not Path(path).is_file():
            raise MissingResultError(
                f"{relative_to_book(path)} is missing; make it with: {command}"
            )
        got = read_json(path)
        if got.get("epochs_saved") != len(load_run(name).history.epochs):
            raise StaleResultError(
                f"{relative_to_book(path)} was made from another run; make it again with: "
                f"{command} --force"
            )
        return got

    return StudyEntry(
        f"{name}/head-paths",
        f"runs/{name}/{HEAD_PATHS_FILE}",
        (name,),
        make,
        read,
        description="the heads after every epoch of a re-run (the saved run kept start and end)",
    )
