import json

import pytest
import torch

from attnconv.experiments.bench import BenchSettings, format_table, matmul_rate, run_benchmark, set_attention_implementation
from attnconv.experiments.models import build_model, paper_model_config
from attnconv.experiments.runs import chapter_run, run_folder, verify_first_epoch

TINY = dict(hidden_size=8, intermediate_size=8, num_layers=1, downsample=4)


def test_set_attention_implementation_switches_every_layer():
    model = build_model(paper_model_config("quadratic", **TINY, num_heads=2))
    set_attention_implementation(model, "local")
    assert all(layer.attention.implementation == "local" for layer in model.layers)
    with pytest.raises(ValueError, match="no attention"):
        set_attention_implementation(build_model("resnet18", widths=(2, 2, 2, 2)), "dense")
    with pytest.raises(ValueError, match="position-only"):
        set_attention_implementation(build_model(paper_model_config("learned_content", **TINY)), "local")


def test_benchmark_runs_side_by_side_and_reports_ratios():
    settings = BenchSettings(models=("quadratic", "learned"), batch_size=2, model_overrides=dict(TINY, num_heads=2),
                             repeats=1, grid_sizes=(4,), grid_batch_size=2, grid_overrides=dict(TINY, num_heads=2),
                             grid_repeats=1, accuracy_epochs=0, denormals=False)
    result = run_benchmark(settings, torch.device("cpu"), progress=lambda *_: None)
    quad = {r["implementation"]: r for r in result["models"]["quadratic"]}
    assert set(quad) == {"naive", "dense", "local"}
    assert {r["implementation"] for r in result["models"]["learned"]} == {"naive", "dense"}  # no local for learned
    assert quad["naive"]["train_speedup_vs_naive"] == 1.0
    assert quad["local"]["train_speedup_vs_naive"] == quad["local"]["train_images_per_s"] / quad["naive"]["train_images_per_s"]
    assert quad["local"]["train_gflops_per_step"] < quad["dense"]["train_gflops_per_step"]  # T(H+W) < T²
    assert len(result["grid"]) == 2 and result["machine"]["matmul_gflop_per_s"] > 0
    text = format_table(json.loads(json.dumps(result)))
    assert "naive" in text and "local ×" in text


def test_matmul_rate_is_positive():
    assert matmul_rate(torch.device("cpu"), size=64, seconds=0.05) > 0


def test_chapter_run_trains_then_loads_and_verifies(tmp_path, capsys):
    changes = dict(epochs=2, train_subset=100, test_subset=50, model_overrides=dict(TINY, num_heads=2))
    run = chapter_run("quadratic", "cpu", runs_root=tmp_path, **changes)
    assert run.complete and len(run.epochs) == 2
    assert (run_folder("quadratic", "cpu", tmp_path) / "history.json").is_file()
    again = chapter_run("quadratic", "cpu", runs_root=tmp_path, **changes)
    assert "Using the saved run" in capsys.readouterr().out
    assert again.epochs == run.epochs
    check = verify_first_epoch(again)
    assert check["match"], check
    again.history["epochs"][0]["train_loss"] *= 1.01  # a tampered history is caught
    assert not verify_first_epoch(again)["match"]
