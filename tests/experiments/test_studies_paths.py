"""attnconv.experiments.studies_paths: a fresh seed's heads at every epoch, from a re-run of its
own configuration. The saved re-run starts where the counted run started, its agreement is what
a plain loop over the two files gives, and a missing or stale file names the command."""

from __future__ import annotations

import math

import pytest

from attnconv.evidence.runs import PATHS_RUN
from attnconv.experiments import studies_paths as sp
from attnconv.experiments.registry import RUNS
from attnconv.experiments.store import (
    HISTORY,
    MissingResultError,
    StaleResultError,
    read_json,
)
from attnconv.experiments.studies import study_entry, study_state


def _history(centres, acc, preds):
    """A history whose last epoch's layers hold ``centres`` (one list of (row, col) per layer)."""
    layers = [{"centers": c} for c in centres] + [
        {}
    ]  # a layer without heads is skipped
    return {
        "epochs": [{"attention": layers, "test_acc": acc, "test_predictions": preds}]
    }


def test_end_agreement_against_a_plain_loop():
    a = _history([[[0, 0], [1, 2]], [[3, 4]]], 0.5, [1, 2, 3])
    b = _history([[[0, 1], [1, 2]], [[0, 0]]], 0.6, [1, 0, 3])
    got = sp.end_agreement(a, b)
    worst = 0.0
    for la, lb in zip(a["epochs"][0]["attention"], b["epochs"][0]["attention"]):
        for (x1, y1), (x2, y2) in zip(la.get("centers", []), lb.get("centers", [])):
            worst = max(worst, math.hypot(x1 - x2, y1 - y2))
    assert got["largest_centre_gap"] == pytest.approx(worst) == 5.0
    assert got["predictions_differ"] == 1
    assert (got["test_acc_rerun"], got["test_acc_saved"]) == (0.5, 0.6)
    assert (
        sp.end_agreement(a, {"epochs": [dict(b["epochs"][0], test_predictions=None)]})[
            "predictions_differ"
        ]
        is None
    )


def test_the_study_is_registered_for_the_drawn_seed():
    entry = study_entry(f"{PATHS_RUN}/head-paths")
    assert entry.runs == (PATHS_RUN,) and entry.file.endswith(sp.HEAD_PATHS_FILE)
    assert entry.command.endswith(f"--only {PATHS_RUN}/head-paths")


def test_a_missing_or_stale_file_names_the_command(tmp_path, monkeypatch):
    entry = sp.head_paths_study(PATHS_RUN)
    path = RUNS[PATHS_RUN].path / sp.HEAD_PATHS_FILE
    if not path.is_file():
        with pytest.raises(MissingResultError, match=f"--only {PATHS_RUN}/head-paths"):
            entry.read()
        return
    saved = read_json(path)
    monkeypatch.setattr(sp, "read_json", lambda p: dict(saved, epochs_saved=1))
    with pytest.raises(StaleResultError, match="--force"):
        entry.read()


def test_the_saved_rerun_starts_where_the_counted_run_started_and_keeps_every_epoch():
    entry = study_entry(f"{PATHS_RUN}/head-paths")
    if study_state(entry) != "present":
        pytest.skip("the head-paths study is not saved")
    got, run = entry.read(), read_json(RUNS[PATHS_RUN].path / HISTORY)
    # the same seed: the same initial heads, exactly
    assert got["initial_attention"] == run["initial_attention"]
    assert [e["epoch"] for e in got["epochs"]] == [e["epoch"] for e in run["epochs"]]
    assert all("centers" in layer for e in got["epochs"] for layer in e["attention"])
    again = {"epochs": [dict(got["epochs"][-1], test_acc=None, test_predictions=None)]}
    assert sp.end_agreement(again, run)["largest_centre_gap"] == pytest.approx(
        got["agreement"]["largest_centre_gap"]
    )
