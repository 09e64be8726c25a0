"""``python -m attnconv.gpu_smoke --dry-run`` runs every phase on the CPU with tiny models: the GPU
smoke test is known to work before a GPU is ever seen (the phases and the results file are the
same code), and the audit's findings on it are tested one by one."""

import json

import pytest
import torch

from attnconv import gpu_smoke
from attnconv.experiments.profiles import GPU_ESTIMATE, gpu_seconds_per_epoch


def test_dry_run_runs_every_phase(tmp_path, capsys):
    code = gpu_smoke.main(
        ["--dry-run", "--out", str(tmp_path), "--models", "quadratic", "resnet18"]
    )
    printed = capsys.readouterr().out
    results = json.loads((tmp_path / gpu_smoke.RESULTS_FILE).read_text())
    assert code == 0 and results["ok"], results.get("failed_phases")
    assert printed.strip().splitlines()[-1] == "ALL PHASES RAN"
    assert list(results["phases"]) == list(gpu_smoke.PHASES)
    assert all(p["ok"] for p in results["phases"].values())
    env = results["phases"]["environment"]
    assert env["torch"] == torch.__version__ and env["doctor"]
    loop = results["phases"]["real_loop"]  # stopped and resumed = uninterrupted
    assert loop["step_losses_equal"] and loop["epochs_equal"] and loop["steps"] == 4
    assert set(results["models"]) == {"quadratic", "resnet18"}
    for label, record in results["models"].items():
        assert f"{label}: bf16-fp32" in printed  # one summary line per model
        b, s = record["bf16_against_fp32"], record["speed"]
        assert len(b["fp32_losses"]) == len(b["bf16_losses"]) == 3
        assert b["fp32_losses"] != b["bf16_losses"]  # bf16 did run
        assert s["images_per_second"] > 0 and s["kernels_per_step"] > 0
        assert len(s["epoch_seconds"]) == 2 and s["syncs_per_epoch"] is None
        assert s["hours_for_300_epochs"] > 0
    scaling = results["phases"]["batch_scaling"]
    assert [r["batch"] for r in scaling["quadratic"]] == [5, 10]
    studies = results["phases"]["checkpoints_and_studies"]
    assert studies["save_seconds"] > 0 and len(studies["removal"]["without_layer"]) == 2
    # a dry run measures nothing about a GPU: the book keeps the estimate
    assert gpu_seconds_per_epoch(tmp_path / gpu_smoke.RESULTS_FILE)[1] == "estimated"


def test_a_failing_phase_is_named_and_the_rest_still_run(tmp_path, capsys, monkeypatch):
    def broken(*a, **k):
        raise RuntimeError("no such kernel")

    monkeypatch.setattr(gpu_smoke, "batch_scaling", broken)
    code = gpu_smoke.main(
        [
            "--dry-run",
            "--out",
            str(tmp_path),
            "--phases",
            "environment",
            "batch_scaling",
            "checkpoints_and_studies",
        ]
    )
    out = capsys.readouterr().out
    results = json.loads((tmp_path / gpu_smoke.RESULTS_FILE).read_text())
    assert code == 1 and out.strip().endswith("FAILED PHASES: batch_scaling")
    assert "no such kernel" in results["phases"]["batch_scaling"]["error"]
    assert results["phases"]["checkpoints_and_studies"]["ok"]


def test_phases_past_the_budget_are_skipped_and_named(tmp_path, capsys):
    code = gpu_smoke.main(
        ["--dry-run", "--out", str(tmp_path), "--budget", "0", "--phases"]
        + ["environment", "batch_scaling"]
    )
    results = json.loads((tmp_path / gpu_smoke.RESULTS_FILE).read_text())
    assert code == 1 and "budget" in results["phases"]["batch_scaling"]["skipped"]


def test_resnet18_is_judged_at_step_1_only():
    """Finding 1: the audit's full-width ResNet18 trajectory (batch 100, lr 0.1): step 1 differs
    by 0.0011, step 3 by 0.38, step 7 by 2.98, because the fp32 run itself swings to 5.6. A
    healthy card must pass; an attention model with the same divergence must not."""
    fp32 = [2.30, 2.45, 2.90, 3.80, 4.70, 5.20, 5.60, 4.10]
    bf16 = [2.3011, 2.47, 3.28, 2.90, 3.10, 3.40, 2.62, 3.00]
    assert gpu_smoke.judge_bf16("resnet18", fp32, bf16, dry=False)["ok"]
    assert not gpu_smoke.judge_bf16("quadratic", fp32, bf16, dry=False)["ok"]
    bad_first = [2.40] + bf16[1:]
    assert not gpu_smoke.judge_bf16("resnet18", fp32, bad_first, dry=False)["ok"]
    near = [x + 0.05 for x in fp32]
    near[0] = fp32[0] + 0.001
    assert gpu_smoke.judge_bf16("quadratic", fp32, near, dry=False)["ok"]


@pytest.fixture
def spy_epochs(monkeypatch):
    """The real train_epoch, with what each call saw recorded."""
    calls = []
    real = gpu_smoke.train_epoch

    def spy(model, data, config, *a, **k):
        calls.append(
            dict(
                precision=config.precision,
                deterministic=torch.are_deterministic_algorithms_enabled(),
                tf32=(
                    torch.backends.cuda.matmul.allow_tf32,
                    torch.backends.cudnn.allow_tf32,
                ),
            )
        )
        return real(model, data, config, *a, **k)

    monkeypatch.setattr(gpu_smoke, "train_epoch", spy)
    return calls


def test_speed_times_the_real_epoch_with_deterministic_mode_off(spy_epochs):
    """Finding 5: the timed epochs are real train_epochs (tally, progress bar), and deterministic
    algorithms (left on by the resume phase) are off while they run, restored afterwards."""
    from attnconv.experiments.data import load_cifar10_sample

    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        s = gpu_smoke._speed(
            "quadratic",
            {},
            gpu_smoke._Sizes(True),
            load_cifar10_sample(),
            torch.device("cpu"),
        )
        assert torch.are_deterministic_algorithms_enabled()
    finally:
        torch.use_deterministic_algorithms(False)
    assert len(spy_epochs) == 5  # warm-up, two timed, sync count, profile
    assert not any(c["deterministic"] for c in spy_epochs)
    assert s["ms_per_step"] > 0


def test_the_fp32_reference_runs_without_tf32(spy_epochs):
    """Finding 11: the fp32 reference must be fp32, not TF32 convolutions and products."""
    from attnconv.experiments.data import load_cifar10_sample

    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cudnn.allow_tf32 = True  # PyTorch's default for cuDNN
    try:
        gpu_smoke._bf16_against_fp32(
            "resnet18",
            "resnet18",
            {},
            gpu_smoke._Sizes(True),
            load_cifar10_sample(),
            torch.device("cpu"),
        )
        fp32 = [c for c in spy_epochs if c["precision"] == "fp32"]
        assert fp32 and all(c["tf32"] == (False, False) for c in fp32)
        assert torch.backends.cudnn.allow_tf32  # restored
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def test_without_a_smoke_run_the_gpu_times_are_the_estimate(tmp_path):
    seconds, source = gpu_seconds_per_epoch(tmp_path / "gpu-smoke.json")
    assert source == "estimated" and seconds == GPU_ESTIMATE["seconds_per_epoch"]
    measured = {
        "device": "cuda:0 (NVIDIA H100 80GB HBM3)",
        "dry_run": False,
        "models": {"quadratic": {"speed": {"seconds_per_epoch_of_50000": 9.5}}},
    }
    (tmp_path / "gpu-smoke.json").write_text(json.dumps(measured))
    seconds, source = gpu_seconds_per_epoch(tmp_path / "gpu-smoke.json")
    assert seconds == {"quadratic": 9.5} and source.startswith("measured on cuda:0")


def test_smoke_wants_a_gpu_unless_dry_run(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu_smoke.main([]) == 2
    assert "no CUDA device here" in capsys.readouterr().err


def test_the_judged_steps_are_the_first_steps_of_the_papers_schedule():
    """Finding 1 of issue 41: the judged steps' learning rate ramps up as the paper's warm-up
    (5 % of 300 epochs of 500 steps), not the warm-up of a 30-step run (one step, then 0.1)."""
    from attnconv.experiments.data import load_cifar10_sample

    sizes = gpu_smoke._Sizes(True)
    config = gpu_smoke._config("quadratic", {}, sizes, "fp32", 20)
    seen = []
    real = gpu_smoke._Trainer

    def spy(config, data, device, schedule_steps=None):
        trainer = real(config, data, device, schedule_steps)
        seen.append(trainer)
        return trainer

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gpu_smoke, "_Trainer", spy)
        gpu_smoke._step_losses(config, load_cifar10_sample(), torch.device("cpu"))
    (trainer,) = seen
    warm = int(0.05 * gpu_smoke.PAPER_EPOCHS * gpu_smoke.PAPER_STEPS_PER_EPOCH)
    factor = trainer.scheduler.lr_lambdas[0]
    assert [factor(s) for s in (0, 1, 29)] == [0.0, 1 / warm, 29 / warm]
    assert config.eval_batch_size == gpu_smoke.EVAL_BATCH == 500


def test_bf16_judgement_passes_on_the_cpu_stand_in_with_cudas_rules():
    """A healthy card's bf16 must pass the smoke test: a two-layer paper-width quadratic model,
    bf16 autocast with CUDA's dtype rules (:mod:`cuda_standin`) against fp32, over the first
    steps of the paper's schedule, judged at every step (batch 10 here for the CPU's sake)."""
    from cuda_standin import cuda_autocast_rules

    from attnconv.experiments.data import load_cifar10_sample

    sizes = gpu_smoke._Sizes(False, batch=10, steps=10)
    with cuda_autocast_rules():
        judged = gpu_smoke._bf16_against_fp32(
            "quadratic",
            "quadratic",
            {"num_layers": 2},
            sizes,
            load_cifar10_sample(),
            torch.device("cpu"),
        )
    assert judged["judged"] == "every step" and len(judged["bf16_losses"]) == 10
    assert judged["ok"], judged["max_loss_difference"]
    assert judged["max_loss_difference"] < 0.01
    assert judged["fp32_losses"] != judged["bf16_losses"]
