import copy
import json
import os
import subprocess
import sys

import pytest
import torch

from attnconv.experiments.bench import BenchSettings, run_benchmark
from attnconv.experiments.bench_tables import format_table
from attnconv.experiments.bench_timing import matmul_rate, set_attention_implementation
from attnconv.experiments.checkpoints import Run
from attnconv.experiments.models import build_model, paper_model_config
from attnconv.experiments.profiles import make_config
from attnconv.experiments.runs import add_first_step_losses, verify_first_epoch
from attnconv.experiments.train import train_or_load
from attnconv.experiments.train_config import TrainConfig

TINY = dict(hidden_size=8, intermediate_size=8, num_layers=1, downsample=4)


def test_set_attention_implementation_switches_every_layer():
    model = build_model(paper_model_config("quadratic", **TINY, num_heads=2))
    set_attention_implementation(model, "local")
    assert all(layer.attention.implementation == "local" for layer in model.layers)
    with pytest.raises(ValueError, match="no attention"):
        set_attention_implementation(
            build_model("resnet18", widths=(2, 2, 2, 2)), "dense"
        )
    with pytest.raises(ValueError, match="position-only"):
        set_attention_implementation(
            build_model(paper_model_config("learned_content", **TINY)), "local"
        )


def test_benchmark_runs_side_by_side_and_reports_ratios():
    settings = BenchSettings(
        models=("quadratic", "learned"),
        batch_size=2,
        model_overrides=dict(TINY, num_heads=2),
        repeats=1,
        grid_sizes=(4,),
        grid_batch_size=2,
        grid_overrides=dict(TINY, num_heads=2),
        grid_repeats=1,
        accuracy_epochs=0,
        denormals=False,
    )
    result = run_benchmark(settings, torch.device("cpu"), progress=lambda *_: None)
    quad = {r["implementation"]: r for r in result["models"]["quadratic"]}
    assert set(quad) == {"naive", "dense", "local"}
    assert {r["implementation"] for r in result["models"]["learned"]} == {
        "naive",
        "dense",
    }  # no local for learned
    assert quad["naive"]["train_speedup_vs_naive"] == 1.0
    assert (
        quad["local"]["train_speedup_vs_naive"]
        == quad["local"]["train_images_per_s"] / quad["naive"]["train_images_per_s"]
    )
    assert (
        quad["local"]["train_gflops_per_step"] < quad["dense"]["train_gflops_per_step"]
    )  # T(H+W) < T²
    assert len(result["grid"]) == 2 and result["machine"]["matmul_gflop_per_s"] > 0
    text = format_table(json.loads(json.dumps(result)))
    assert "naive" in text and "local ×" in text


def test_matmul_rate_is_positive():
    assert matmul_rate(torch.device("cpu"), size=64, seconds=0.05) > 0


def test_saved_run_trains_then_loads_and_verifies(tmp_path, capsys):
    config = make_config(
        "quadratic",
        "cpu",
        epochs=2,
        train_subset=100,
        test_subset=50,
        model_overrides=dict(TINY, num_heads=2),
    )
    run = train_or_load(config, tmp_path / "quadratic", verbose=True)
    assert run.complete and len(run.epochs) == 2
    assert (tmp_path / "quadratic" / "history.json").is_file()
    again = train_or_load(config, tmp_path / "quadratic", verbose=True)
    assert "Using the saved run" in capsys.readouterr().out
    assert again.epochs == run.epochs
    check = verify_first_epoch(again)
    assert (
        check["match"]
        and check["checks"]["first_steps"]
        and check["checks"]["initial_heads"]
    ), check


def tampered(run, edit):
    history = copy.deepcopy(run.history)
    edit(history)
    return Run(run.run_dir, TrainConfig.from_dict(history["config"]), history)


@pytest.fixture(scope="module")
def honest_run(tmp_path_factory):
    # 5 steps per epoch, so that the learning rate acts within the recorded first steps
    config = make_config(
        "quadratic",
        "cpu",
        epochs=2,
        train_subset=500,
        test_subset=50,
        model_overrides=dict(TINY, num_heads=2),
    )
    return train_or_load(
        config, tmp_path_factory.mktemp("runs") / "quadratic", verbose=False
    )


@pytest.mark.parametrize(
    "what, edit",
    [
        (
            "epoch-1 loss +5 %",
            lambda h: h["epochs"][0].update(
                train_loss=h["epochs"][0]["train_loss"] * 1.05
            ),
        ),
        (
            "epoch-1 training accuracy +10 points",
            lambda h: h["epochs"][0].update(
                train_acc=h["epochs"][0]["train_acc"] + 0.1
            ),
        ),
        (
            "a head's initial centre moved",
            lambda h: h["initial_attention"][0]["centers"][0].__setitem__(0, 0.5),
        ),
        (
            "first step losses of another run",
            lambda h: h.update(
                first_step_losses=[x * 1.001 for x in h["first_step_losses"]]
            ),
        ),
        (
            "produced with another seed",
            lambda h: h["config"].update(seed=h["config"]["seed"] + 1),
        ),
        (
            "produced with another learning rate",
            lambda h: h["config"].update(lr=h["config"]["lr"] * 1.5),
        ),
    ],
)
def test_verify_first_epoch_rejects_other_runs(honest_run, what, edit):
    check = verify_first_epoch(tampered(honest_run, edit))
    assert not check["match"], (what, check)


def test_add_first_step_losses_only_to_a_verified_history(honest_run, tmp_path):
    for name, edit, ok in (
        ("old", lambda h: h.pop("first_step_losses"), True),
        (
            "edited",
            lambda h: (
                h.pop("first_step_losses"),
                h["epochs"][0].update(train_loss=h["epochs"][0]["train_loss"] * 1.05),
            ),
            False,
        ),
    ):
        folder = tmp_path / name
        folder.mkdir()
        history = copy.deepcopy(honest_run.history)
        edit(history)
        (folder / "history.json").write_text(json.dumps(history))
        if ok:
            add_first_step_losses(folder, note="test")
            again = json.loads((folder / "history.json").read_text())
            assert again["first_step_losses"] == honest_run.history["first_step_losses"]
        else:
            with pytest.raises(ValueError, match="does not verify"):
                add_first_step_losses(folder, note="test")
            assert "first_step_losses" not in json.loads(
                (folder / "history.json").read_text()
            )


def test_verify_first_epoch_passes_under_another_kernel_path(honest_run):
    """The honest run, re-checked in a process on ATen's generic (non-vectorised) kernels with 1 thread."""
    code = (
        "import sys; from attnconv.experiments.train import load_run; "
        "from attnconv.experiments.runs import verify_first_epoch; "
        "c = verify_first_epoch(load_run(sys.argv[1])); print(c); sys.exit(0 if c['match'] else 1)"
    )
    env = {**os.environ, "ATEN_CPU_CAPABILITY": "default", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", code, str(honest_run.run_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_compare_with_reference_times_two_checkouts_side_by_side(tmp_path):
    """This checkout against itself, imported a second time under another name: the same model
    from the same seed, so the losses agree exactly and every figure is filled in."""
    from pathlib import Path

    from attnconv.experiments.bench_compare import (
        compare_with_reference,
        load_reference,
    )
    from attnconv.experiments.bench_tables import (
        COMPARISON_COLUMNS,
        book_run_hours,
        comparison_table,
    )

    root = Path(__file__).resolve().parents[2]
    case = ("cpu", "quadratic", dict(TINY, num_heads=2))
    result = compare_with_reference(
        root,
        cases=(case,),
        threads=(1,),
        batch_size=2,
        repeats=2,
        progress=lambda *_: None,
    )
    (row,) = result["rows"]
    assert row["max_relative_loss_difference"] == 0.0
    assert len(row["before_times_s"]) == len(row["after_times_s"]) == 2
    assert row["speedup"] == row["before_s"] / row["after_s"] > 0
    assert (
        0 < row["fraction_of_matmul_rate"]
        and row["breakdown"]
        and row["breakdown"][0]["op"].startswith("aten::")
    )
    # 2× the reference at the same products needs this share of the matmul rate
    assert row["fraction_needed_for_2x"] == pytest.approx(
        row["train_gflops_per_step"] * 2 / row["before_s"] / row["matmul_gflop_per_s"]
    )
    assert (
        row["before_page_faults_per_step"] >= 0
        and row["after_page_faults_per_step"] >= 0
    )
    assert (
        row["after_retains_freed_memory"] is True
    )  # each side is a process of its own: only "after" sets it
    assert (
        len(comparison_table(json.loads(json.dumps(result)))[0])
        == len(COMPARISON_COLUMNS)
        == 11
    )
    # a side whose process dies is an error naming the case, not a hang
    with pytest.raises(RuntimeError, match="died"):
        compare_with_reference(
            root,
            cases=(("cpu", "no_such_model", {}),),
            threads=(1,),
            batch_size=2,
            repeats=1,
            breakdown=False,
            progress=lambda *_: None,
        )
    with pytest.raises(FileNotFoundError):
        load_reference(tmp_path, name="attnconv_nowhere")
    # a saved run of the measured case gets its hours: epochs × steps × s/step
    run = tmp_path / "cpu" / "quadratic"
    run.mkdir(parents=True)
    history = {
        "config": {
            "profile": "cpu",
            "model": "quadratic",
            "epochs": 3,
            "model_overrides": {"num_heads": 2},
        },
        "steps_per_epoch": 5,
        "epochs": [{"seconds": 36.0}] * 3,
    }
    (run / "history.json").write_text(json.dumps(history))
    (hours,) = book_run_hours(result, tmp_path)
    assert (
        hours["after_hours"] == 15 * row["after_s"] / 3600
        and hours["recorded_hours"] == 0.03
        and hours["made_on"] == "cpu"
    )
    # a run its history says trained on CUDA is marked as made on a GPU
    (run / "history.json").write_text(json.dumps(dict(history, device="cuda:0")))
    assert book_run_hours(result, tmp_path)[0]["made_on"] == "gpu"
    # a run still training, and a folder under an excluded prefix, are left out
    (run / "history.json").write_text(json.dumps(dict(history, status="running")))
    assert book_run_hours(result, tmp_path) == []
    (run / "history.json").write_text(json.dumps(dict(history, status="complete")))
    assert [h["run"] for h in book_run_hours(result, tmp_path)] == ["cpu/quadratic"]
    assert book_run_hours(result, tmp_path, exclude=("cpu",)) == []
    assert (
        len(book_run_hours(result, tmp_path, exclude=("cp",))) == 1
    )  # a prefix of folders


def test_sparse_dropout_correction_times_the_dropped_entries_against_the_dense_product():
    """Small shapes: the sparse matrix holds the dropped share of the entries (counted against a
    binomial range), every time is measured and the ratios are the times' quotients."""
    import warnings

    from attnconv.experiments.bench_compare import sparse_dropout_correction

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        r = sparse_dropout_correction(
            heads=2, tokens=32, columns=40, dropout=0.25, repeats=1
        )
    n = 2 * 32 * 32
    assert abs(r["shape"]["stored_entries"] - 0.25 * n) < 5 * (n * 0.25 * 0.75) ** 0.5
    s = r["seconds"]
    assert all(v > 0 for v in s.values())
    assert r["csr_over_dense"] == s["csr_product"] / s["dense_product"]
    assert (
        r["sampled_over_dense_gradient"] == s["sampled_gradient"] / s["dense_gradient"]
    )


def test_case_label_names_the_heads_only_when_not_nine():
    from attnconv.experiments.bench_tables import case_label

    assert (
        case_label({"profile": "deep", "model_name": "quadratic", "num_heads": 9})
        == "deep quadratic"
    )
    assert (
        case_label({"profile": "cpu", "model_name": "quadratic", "num_heads": 16})
        == "cpu quadratic, 16 heads"
    )
