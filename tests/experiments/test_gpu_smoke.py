"""``python -m attnconv.gpu_smoke`` runs on the CPU with tiny models: the GPU smoke test is known
to work before a GPU is ever seen (the checks and the results file are the same code)."""

import json

import torch

from attnconv import gpu_smoke
from attnconv.experiments.profiles import GPU_ESTIMATE, gpu_seconds_per_epoch


def test_smoke_runs_tiny_on_the_cpu(tmp_path, capsys):
    out = tmp_path / "gpu-smoke.json"
    models = [m[0] for m in gpu_smoke.MODELS]  # all six, tiny: seconds
    code = gpu_smoke.main(
        ["--tiny", "--steps", "3", "--device", "cpu", "--out", str(out)]
    )
    printed = capsys.readouterr().out
    results = json.loads(out.read_text())
    assert code == 0 and results["ok"] and "all checks passed" in printed
    assert set(results["models"]) == set(models)
    for label, record in results["models"].items():
        b = record["bf16_against_fp32"]
        assert len(b["fp32_losses"]) == len(b["bf16_losses"]) == 3
        assert b["fp32_losses"] != b["bf16_losses"]  # bf16 did run
        assert b["first_step_difference"] <= gpu_smoke.FIRST_STEP_TOLERANCE
        assert record["stop_and_resume"]["equal"]
        assert record["speed"]["images_per_second"] > 0
        assert record["speed"]["sync_warnings"] is None  # CUDA's debug mode only
    assert results["device"] == "cpu" and "torchrun" not in results
    # the results file replaces the estimate: seconds per epoch of 50,000 images, measured
    seconds, source = gpu_seconds_per_epoch(out)
    assert source == "measured on cpu" and set(seconds) == set(models)
    for label, record in results["models"].items():
        images_per_second = record["speed"]["images_per_second"]
        assert abs(seconds[label] * images_per_second - 50_000) < 1e-6 * 50_000


def test_without_a_smoke_run_the_gpu_times_are_the_estimate(tmp_path):
    seconds, source = gpu_seconds_per_epoch(tmp_path / "gpu-smoke.json")
    assert source == "estimated" and seconds == GPU_ESTIMATE["seconds_per_epoch"]


def test_smoke_wants_a_gpu_unless_tiny(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu_smoke.main([]) == 2
    assert "no CUDA device here" in capsys.readouterr().err
