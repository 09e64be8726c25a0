"""The training command line (``python -m attnconv.train``)."""

import subprocess
import sys

import pytest
from conftest import synthetic_cifar

import attnconv.experiments.train_cli as cli_mod
from attnconv.experiments import data as data_mod
from attnconv.experiments.profiles import make_config
from attnconv.experiments.store import CHECKPOINT, HISTORY
from attnconv.experiments.train import train


def test_cli(tmp_path, monkeypatch, capsys):
    with pytest.raises(SystemExit) as e:
        cli_mod.main(["--help"])
    assert e.value.code == 0 and "--run-dir" in capsys.readouterr().out
    seen = {}

    def fake_train(config, run_dir, resume=False, progress=True, **kw):
        seen.update(config=config, run_dir=run_dir, resume=resume, progress=progress)
        return {"epochs": [{"test_acc": 0.5}]}

    monkeypatch.setattr(cli_mod, "train", fake_train)
    rc = cli_mod.main(
        [
            "--model",
            "generalized",
            "--profile",
            "cpu",
            "--run-dir",
            str(tmp_path),
            "--epochs",
            "2",
            "--resume",
            "--seed",
            "4",
            "--no-progress",
        ]
    )
    assert rc == 0 and seen["resume"] and not seen["progress"]
    assert seen["config"] == make_config("generalized", "cpu", epochs=2, seed=4)
    with pytest.raises(SystemExit):
        cli_mod.main(["--model", "vit", "--run-dir", str(tmp_path)])


# ----------------------------------------------------------------- bad requests: one clear error, exit 2

CLI = ["--model", "quadratic", "--profile", "cpu", "--no-progress"]


def folder_state(path):
    return (
        {p.name: p.read_bytes() for p in sorted(path.iterdir())}
        if path.exists()
        else None
    )


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory):
    """A cpu-profile quadratic run of 2 epochs, stopped after epoch 1 (tiny synthetic data: the
    CLI only compares settings)."""
    folder = tmp_path_factory.mktemp("runs") / "stopped"
    train(
        make_config("quadratic", "cpu", epochs=2),
        folder,
        progress=False,
        verbose=False,
        stop_after=1,
        data=synthetic_cifar(20, 10),
    )
    return folder


def run_cli(argv, capsys):
    rc = cli_mod.main(argv)
    err = capsys.readouterr().err
    return rc, err


def test_resume_with_nothing_to_resume(tmp_path, capsys):
    rc, err = run_cli(CLI + ["--run-dir", str(tmp_path / "empty"), "--resume"], capsys)
    assert rc == 2 and "nothing to resume" in err and "Drop --resume" in err
    assert not (tmp_path / "empty").exists()


def test_resume_with_another_epoch_count(stopped_run, capsys):
    before = folder_state(stopped_run)
    rc, err = run_cli(
        CLI + ["--run-dir", str(stopped_run), "--resume", "--epochs", "5"], capsys
    )
    assert (
        rc == 2 and "run of 2 epochs (stopped after 1)" in err and "--epochs 2" in err
    )
    assert folder_state(stopped_run) == before


def test_resume_a_run_of_another_model(stopped_run, capsys):
    before = folder_state(stopped_run)
    argv = [
        "--model",
        "learned",
        "--profile",
        "cpu",
        "--epochs",
        "2",
        "--run-dir",
        str(stopped_run),
        "--resume",
    ]
    rc, err = run_cli(argv, capsys)
    assert (
        rc == 2
        and "other settings" in err
        and "model: saved 'quadratic', asked 'learned'" in err
    )
    assert folder_state(stopped_run) == before


def test_start_over_an_existing_run(stopped_run, capsys):
    before = folder_state(stopped_run)
    rc, err = run_cli(CLI + ["--epochs", "2", "--run-dir", str(stopped_run)], capsys)
    assert rc == 2 and "already holds a run" in err and "--resume" in err
    assert folder_state(stopped_run) == before


def test_truncated_checkpoint(stopped_run, tmp_path, capsys):
    folder = tmp_path / "copy"
    folder.mkdir()
    for name, blob in folder_state(stopped_run).items():
        (folder / name).write_bytes(blob)
    blob = (folder / CHECKPOINT).read_bytes()
    (folder / CHECKPOINT).write_bytes(blob[: len(blob) // 2])
    before = folder_state(folder)
    rc, err = run_cli(
        CLI + ["--epochs", "2", "--run-dir", str(folder), "--resume"], capsys
    )
    assert rc == 2 and f"cannot read {folder / CHECKPOINT}" in err
    assert f"{HISTORY} is intact (1 of 2 epochs)" in err and "Restore" in err
    assert len(err.strip().splitlines()) <= 2
    assert folder_state(folder) == before


def test_continue_a_finished_run_for_more_epochs(tmp_path, capsys):
    folder = tmp_path / "finished"
    train(
        make_config("quadratic", "cpu", epochs=1),
        folder,
        progress=False,
        verbose=False,
        data=synthetic_cifar(20, 10),
    )
    before = folder_state(folder)
    rc, err = run_cli(
        CLI + ["--epochs", "3", "--run-dir", str(folder), "--resume"], capsys
    )
    assert (
        rc == 2
        and "finished its 1 epochs" in err
        and "not supported" in err
        and "new run with --epochs 3" in err
    )
    assert folder_state(folder) == before


def test_missing_data(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(data_mod, "SAMPLE_PATH", tmp_path / "absent.npz")
    rc, err = run_cli(
        CLI + ["--epochs", "1", "--data", "sample", "--run-dir", str(tmp_path / "run")],
        capsys,
    )
    assert rc == 2 and "No CIFAR-10 data could be loaded" in err and "absent.npz" in err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--epochs", "0"], "--epochs must be >= 1"),
        (["--device", "nonsense"], "is not a device name"),
    ],
)
def test_bad_arguments(tmp_path, capsys, extra, message):
    with pytest.raises(SystemExit) as e:
        cli_mod.main(CLI + ["--run-dir", str(tmp_path)] + extra)
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_entry_point_prints_no_traceback(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "attnconv.train",
            *CLI,
            "--run-dir",
            str(tmp_path / "x"),
            "--resume",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and proc.stderr.startswith(
        "error: nothing to resume"
    )
