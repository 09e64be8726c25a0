"""``make gpu-window`` dry-run on the CPU: the smoke test, then the gpu-sample models trained
tiny, each into its registered run folder under ``--out``, with histories written as it goes;
a budget that runs out stops a run with a checkpoint that the next window resumes."""

import json
import os

import pytest

from attnconv.experiments import gpu_window
from attnconv.experiments.profiles import make_config
from attnconv.experiments.registry import GPU_SAMPLE_MODELS, run_entry


@pytest.fixture(autouse=True)
def _book_dir_restored():
    """The window points ATTNCONV_BOOK_DIR at its output folder for its own process; a test that
    runs it in-process must not leave it set for the tests after it."""
    before = os.environ.get("ATTNCONV_BOOK_DIR")
    yield
    if before is None:
        os.environ.pop("ATTNCONV_BOOK_DIR", None)
    else:
        os.environ["ATTNCONV_BOOK_DIR"] = before


def test_gpu_sample_profile_is_the_papers_models_on_the_sample():
    for model in GPU_SAMPLE_MODELS:
        entry = run_entry(f"gpu-sample/{model}")
        cfg = entry.config.model_config()
        assert not entry.committed and entry.config.data == "sample"
        assert (cfg.num_layers, cfg.num_heads, cfg.hidden_size) == (6, 9, 400)
        assert cfg.grid == (16, 16)
    assert make_config("quadratic", "gpu-sample").batch_size == 100


def test_dry_run_trains_every_model_and_writes_histories(tmp_path, monkeypatch):
    monkeypatch.delenv("ATTNCONV_BOOK_DIR", raising=False)
    record = gpu_window.window(
        tmp_path, budget=3600, dry_run=True, smoke_models=("quadratic",)
    )
    monkeypatch.delenv("ATTNCONV_BOOK_DIR", raising=False)
    assert record["smoke_ok"] and list(record["models"]) == list(GPU_SAMPLE_MODELS)
    for model in GPU_SAMPLE_MODELS:
        r = record["models"][model]
        assert r["state"] == "complete" and r["epochs_done"] == gpu_window.DRY_EPOCHS
        history = tmp_path / "book" / "runs" / "gpu-sample" / model / "history.json"
        assert json.loads(history.read_text())["status"] == "complete"
    assert json.loads((tmp_path / "gpu-window.json").read_text())["models"]
    assert (tmp_path / "gpu-smoke.json").is_file()


def test_a_spent_share_stops_the_run_with_a_checkpoint(tmp_path):
    from dataclasses import replace

    config = replace(gpu_window._entry_config("quadratic", dry_run=True), epochs=200)
    first = gpu_window._train_for(config, tmp_path / "run", seconds=1.0)
    assert first["state"].startswith("stopped by the budget")
    assert first["epochs_done"] < 200
    assert any((tmp_path / "run").glob("*.pt"))  # what finished comes back
    config = replace(config, epochs=200)
    again = gpu_window._train_for(config, tmp_path / "run", seconds=1.0)
    assert again["resumed"] and again["epochs_done"] >= first["epochs_done"]
