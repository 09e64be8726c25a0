"""``python -m attnconv.gpu_window`` (``make gpu-window``), tested by its dry run on the CPU: every
phase as child processes under a hard limit, at most 8 flat files of under 16 MiB back, a second
call resumes, ``--unpack`` puts what came back into the book; a phase that overruns its share is
stopped (killed) and recorded, and the next phase runs."""

import json
import sys
import tarfile
import time

import pytest

from attnconv import gpu_window
from attnconv.experiments.profiles import make_config
from attnconv.experiments.registry import GPU_SAMPLE_MODELS, run_entry


def test_gpu_sample_profile_is_the_papers_models_on_the_sample():
    for model in GPU_SAMPLE_MODELS:
        entry = run_entry(f"gpu-sample/{model}")
        cfg = entry.config.model_config()
        assert not entry.committed and entry.config.data == "sample"
        assert (cfg.num_layers, cfg.num_heads, cfg.hidden_size) == (6, 9, 400)
        assert cfg.grid == (16, 16)
    assert make_config("quadratic", "gpu-sample").batch_size == 100


def test_dry_run_returns_a_flat_folder_resumes_and_unpacks(tmp_path, capsys):
    out, work, book = tmp_path / "out", tmp_path / "work", tmp_path / "book"
    args = ["--dry-run", "--budget", "500", "--workers", "2", "--out", str(out)]
    args += ["--work", str(work), "--book", str(book)]
    assert gpu_window.main(args) == 0, (out / "summary.json").read_text()
    files = list(out.iterdir())
    assert len(files) <= gpu_window.MAX_FILES and all(f.is_file() for f in files)
    assert all(f.stat().st_size < gpu_window.MAX_FILE_BYTES for f in files)
    names = {f.name for f in files}
    assert {
        "summary.json",
        "gpu-smoke.json",
        "paper-epoch.json",
        "runs.tar.gz",
    } <= names
    summary = json.loads((out / "summary.json").read_text())
    assert [n for n in summary["phases"]] == [p.name for p in gpu_window.PHASES]
    assert all(p["state"] == "complete" for p in summary["phases"].values())
    assert summary["phases"]["confirm"]["processes"] == 2  # side by side
    epochs = json.loads((out / "paper-epoch.json").read_text())["models"]
    assert set(epochs) == set(gpu_window.PAPER_EPOCH_MODELS)
    assert all(
        m["seconds_per_epoch"] > 0 and m["checkpoint_mib"] > 0 for m in epochs.values()
    )
    with tarfile.open(out / "runs.tar.gz") as tar:
        members = tar.getnames()
    assert members and all(
        m.startswith(("runs/confirm", "runs/beyond3", "runs/followup")) for m in members
    )
    assert any(
        m.startswith("runs/followup-dry") for m in members
    )  # the follow-up's phase
    assert not any(m.endswith(".pt") for m in members)  # no checkpoints come back
    # a second call with the same folder skips what finished
    t0 = time.monotonic()
    assert gpu_window.main(args) == 0
    assert time.monotonic() - t0 < 10
    assert json.loads((out / "summary.json").read_text())["calls"] == 2
    # what came back, into another book
    other = tmp_path / "other"
    assert gpu_window.main(["--unpack", str(out), "--book", str(other)]) == 0
    assert (other / "results" / "gpu-smoke.json").is_file()
    assert (other / "results" / "paper-epoch.json").is_file()
    assert sorted(
        str(p.relative_to(other)) for p in other.glob("runs/**/*.json")
    ) == sorted(m for m in members)


def _python(code: str):
    return [sys.executable, "-c", code]


def test_a_phase_that_overruns_is_stopped_and_the_next_one_runs(tmp_path):
    """Two children sleep past their phase's limit (one ignores SIGTERM: it is killed after the
    grace); the phase is recorded as stopped and the next phase still runs."""
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    phases = (
        gpu_window.Phase(
            "sleeper",
            0.5,
            lambda ctx: [_python("import time; time.sleep(60)"), _python(stubborn)],
        ),
        gpu_window.Phase("after", 0.5, lambda ctx: [_python("pass")]),
    )
    budget = gpu_window.MARGIN_SECONDS + 8
    t0 = time.monotonic()
    summary = gpu_window.window(
        tmp_path / "out", budget, work=tmp_path / "work", book=tmp_path, phases=phases
    )
    sleeper = summary["phases"]["sleeper"]
    assert (
        sleeper["state"] == "stopped at its limit" and sleeper["limit_seconds"] <= 4.5
    )
    assert sleeper["seconds"] < sleeper["limit_seconds"] + 1
    assert summary["phases"]["after"]["state"] == "complete"
    assert time.monotonic() - t0 < budget
    # the stopped phase runs again on the next call, the finished one does not
    again = gpu_window.window(
        tmp_path / "out", 0, work=tmp_path / "work", book=tmp_path, phases=phases
    )
    assert again["phases"]["sleeper"]["state"].startswith("not started")
    assert again["phases"]["after"]["state"] == "complete"


def test_a_budget_over_one_remote_command_is_refused_in_one_line(capsys):
    assert gpu_window.main(["--budget", "600", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "570" in err


def test_unpack_refuses_an_archive_outside_runs_and_results(tmp_path):
    (tmp_path / "evil.json").write_text("{}")
    with tarfile.open(tmp_path / "runs.tar.gz", "w:gz") as tar:
        tar.add(tmp_path / "evil.json", arcname="chapters/evil.json")
    with pytest.raises(ValueError, match="outside runs/ and results/"):
        gpu_window.unpack(tmp_path, tmp_path / "book")


def test_histories_past_one_archive_go_into_more_and_all_unpack(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_window, "ARCHIVE_PART_BYTES", 1)  # one file each
    monkeypatch.setattr(gpu_window, "ARCHIVE_PARTS", 2)
    book, out = tmp_path / "book", tmp_path / "out"
    for i in range(3):
        run = book / "runs" / "confirm" / f"seed{i}"
        run.mkdir(parents=True)
        (run / "history.json").write_text(json.dumps({"seed": i, "status": "complete"}))
        (run / "checkpoint.pt").write_bytes(b"weights")
    out.mkdir()
    gpu_window._archive(book, out / "runs.tar.gz")
    assert sorted(f.name for f in out.iterdir()) == ["runs-2.tar.gz", "runs.tar.gz"]
    written = gpu_window.unpack(out, tmp_path / "other")
    assert sorted(written) == [f"runs/confirm/seed{i}/history.json" for i in range(2)]


def test_a_run_stopped_part_way_comes_back_with_its_checkpoint(tmp_path):
    book, out = tmp_path / "book", tmp_path / "out"
    for name, status in (("done", "complete"), ("cut", "running")):
        run = book / "runs" / "confirm" / name
        run.mkdir(parents=True)
        (run / "history.json").write_text(json.dumps({"status": status}))
        (run / "checkpoint.pt").write_bytes(b"weights")
    (book / "runs" / "confirm" / "cut" / "checkpoint-partial.pt").write_bytes(b"mid")
    out.mkdir()
    gpu_window._archive(book, out / "runs.tar.gz")
    written = gpu_window.unpack(out, tmp_path / "other")
    assert sorted(written) == [
        "runs/confirm/cut/checkpoint-partial.pt",
        "runs/confirm/cut/checkpoint.pt",
        "runs/confirm/cut/history.json",
        "runs/confirm/done/history.json",
    ]
    assert (
        tmp_path / "other/runs/confirm/cut/checkpoint.pt"
    ).read_bytes() == b"weights"


def test_the_weights_an_unmade_study_reads_come_back(tmp_path, monkeypatch):
    """A complete run whose study (a pruning study) is not made yet comes back with its
    checkpoint; one whose study is made does not."""
    from types import SimpleNamespace

    from attnconv.experiments import registry, studies
    from attnconv.experiments.store import MissingResultError

    book, out = tmp_path / "book", tmp_path / "out"
    runs = {}
    for name in ("a", "b"):
        run = book / "runs" / "confirm" / name
        run.mkdir(parents=True)
        (run / "history.json").write_text(json.dumps({"status": "complete"}))
        (run / "checkpoint.pt").write_bytes(b"weights")
        runs[f"confirm/{name}"] = SimpleNamespace(path=run)

    def missing():
        raise MissingResultError("not made")

    monkeypatch.setattr(registry, "RUNS", runs)
    monkeypatch.setattr(
        studies,
        "STUDIES",
        {
            "confirm/a/pruning": SimpleNamespace(
                name="confirm/a/pruning", runs=("confirm/a",), read=missing
            ),
            "confirm/b/pruning": SimpleNamespace(
                name="confirm/b/pruning", runs=("confirm/b",), read=lambda: {}
            ),
        },
    )
    out.mkdir()
    gpu_window._archive(book, out / "runs.tar.gz")
    written = gpu_window.unpack(out, tmp_path / "other")
    assert "runs/confirm/a/checkpoint.pt" in written
    assert "runs/confirm/b/checkpoint.pt" not in written


def test_phases_runs_only_those_and_gives_them_the_budget(tmp_path):
    out, work, book = tmp_path / "out", tmp_path / "work", tmp_path / "book"
    args = ["--dry-run", "--budget", "200", "--workers", "2", "--out", str(out)]
    args += ["--work", str(work), "--book", str(book), "--phases", "confirm"]
    assert gpu_window.main(args) == 0, (out / "summary.json").read_text()
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["phases"]) == ["confirm"]
    # the only phase gets the whole budget less the margin, not its share of it
    limit = summary["phases"]["confirm"]["limit_seconds"]
    assert limit > 200 - gpu_window.MARGIN_SECONDS - 5, limit


def test_a_long_phase_packs_what_it_made_while_it_runs(tmp_path, monkeypatch):
    """A window cut short from outside still returns the runs finished before the cut."""
    monkeypatch.setattr(gpu_window, "PACK_EVERY_SECONDS", 0.5)
    ctx = gpu_window._Context(tmp_path / "o", tmp_path / "w", None, True, 1, limit=30)
    phase = gpu_window.Phase(
        "slow", 1.0, lambda c: [_python("import time; time.sleep(2)")]
    )
    ticks = []
    assert (
        gpu_window.run_phase(phase, ctx, lambda: ticks.append(1))["state"] == "complete"
    )
    assert len(ticks) >= 2
