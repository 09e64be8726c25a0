"""The registry of runs and the store: every committed run is registered with the settings it was
made with, paths do not depend on the working directory, readers never write, and making a run
resumes and replaces without losing the saved one."""

import json

import pytest

import attnconv.evidence.followup_runs  # noqa: F401 (registers the follow-up's runs)
import attnconv.evidence.runs  # noqa: F401 (registers the protocol's runs)
from attnconv.experiments import registry
from attnconv.experiments.profiles import make_config
from attnconv.experiments.store import (
    HISTORY,
    History,
    MissingResultError,
    StaleResultError,
    read_json,
    read_keyed,
    runs_dir,
)
from attnconv.experiments.train import train

TINY = dict(hidden_size=8, intermediate_size=8, num_layers=1, num_heads=2, downsample=8)


def committed_histories():
    return sorted(runs_dir().rglob(HISTORY))


def test_every_committed_run_is_registered_with_its_settings():
    names = {p.parent.relative_to(runs_dir()).as_posix() for p in committed_histories()}
    # retraining after pruning, a study's output (its retrain-k* steps are never committed)
    made_by_studies = {n for n in names if n.endswith("-pruned") or "-pruned/" in n}
    assert names - made_by_studies <= set(registry.RUNS)
    for name in names - made_by_studies:
        assert registry.run_state(registry.RUNS[name]) == "present", name
    # every committed book run is there (the seed series are made by the regenerate command)
    # (nor the protocol's runs, made in the background over several sessions: evidence.freeze)
    from attnconv.evidence.freeze import BACKGROUND_PATHS

    background = tuple(p.removeprefix("runs/") + "/" for p in BACKGROUND_PATHS)
    for entry in registry.RUNS.values():
        if entry.committed and not entry.name.startswith(("seeds/",) + background):
            assert entry.name in names, entry.name


def test_entries_are_complete_and_match_the_profiles():
    assert (
        registry.run_entry("cpu/quadratic").config.epochs == 40
    )  # not the profile's 16
    assert registry.run_entry("cpu/learned").config == make_config("learned", "cpu")
    sixteen = registry.run_entry("deep/quadratic-16heads").config
    assert sixteen.model_overrides == {
        **make_config("quadratic", "deep").model_overrides,
        "num_heads": 16,
    }
    assert registry.run_entry("cpu/quadratic-16heads").changes()["epochs"] == 40
    with pytest.raises(ValueError, match="epochs"):
        registry.register_run("x/y", "quadratic", "cpu")


def test_series_over_seeds():
    deep = registry.series("deep/learned")
    assert [e.name for e in deep] == [
        "deep/learned",
        "seeds/deep/learned/seed1",
        "seeds/deep/learned/seed2",
    ]
    assert [e.seed for e in deep] == [0, 1, 2]
    assert all(e.config == make_config("learned", "deep", seed=e.seed) for e in deep)
    cpu = registry.series("cpu/quadratic-16heads")
    assert [e.seed for e in cpu] == list(range(5)) and all(
        e.config.epochs == 16 for e in cpu
    )
    assert all(e.config.model_config().num_heads == 16 for e in cpu)
    assert registry.series("cpu/learned")[0].name == "cpu/learned"
    assert [e.name for e in registry.series("deep/quadratic")][1:] == [
        f"seeds/deep/quadratic/seed{k}" for k in (1, 2)
    ]
    with pytest.raises(KeyError):
        registry.series("cpu/nope")


def test_history_round_trip_and_typed_access():
    for path in committed_histories():
        d = read_json(path)
        h = History.from_json(d)
        assert h.to_json() == d, path
        assert h["epochs"] is h.epochs and len(h) == len(d)
    h = History.from_json(read_json(runs_dir() / "cpu" / "quadratic" / HISTORY))
    assert h.complete and h.epochs[-1].test_acc == h["epochs"][-1]["test_acc"]
    assert (
        h.layer_records(-1)[0].spreads is not None
        and "inv_sqrt_sigma" not in h.layer_records(-1)[0]
    )
    assert h.seconds > 0 and h.series("epoch") == list(range(1, 41))


def test_paths_do_not_depend_on_the_working_directory(tmp_path, monkeypatch):
    here = registry.run_entry("cpu/quadratic").path
    monkeypatch.chdir(tmp_path)
    assert registry.run_entry("cpu/quadratic").path == here and here.is_absolute()
    assert registry.load_run("cpu/quadratic").complete


def test_missing_and_stale_name_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNCONV_BOOK_DIR", str(tmp_path))
    with pytest.raises(
        MissingResultError, match=r"python -m attnconv.regenerate --only cpu/learned$"
    ):
        registry.load_run("cpu/learned")
    folder = tmp_path / "runs" / "cpu" / "learned"
    folder.mkdir(parents=True)
    cfg = make_config("learned", "cpu", seed=7).to_dict()
    (folder / HISTORY).write_text(
        json.dumps({"config": cfg, "status": "complete", "epochs": []})
    )
    with pytest.raises(StaleResultError, match="seed"):
        registry.load_run("cpu/learned")
    assert registry.load_series("cpu/learned", skip_missing=True) == []
    path = tmp_path / "r.json"
    with pytest.raises(MissingResultError, match="--only r"):
        read_keyed(path, {"a": 1}, "r")
    path.write_text(json.dumps({"key": {"a": [1, 2]}, "rows": 3}))
    assert read_keyed(path, {"a": (1, 2)}, "r")["rows"] == 3
    with pytest.raises(StaleResultError, match="--only r"):
        read_keyed(path, {"a": (1, 3)}, "r")


def test_train_entry_trains_resumes_and_replaces(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNCONV_BOOK_DIR", str(tmp_path))
    monkeypatch.setattr(registry, "RUNS", dict(registry.RUNS))
    monkeypatch.setattr(registry, "SERIES", {})
    entry = registry.register_run(
        "test/tiny",
        "quadratic",
        "cpu",
        epochs=2,
        train_subset=40,
        test_subset=20,
        model_overrides=TINY,
    )
    train(
        entry.config, entry.path, progress=False, verbose=False, stop_after=1
    )  # interrupted after epoch 1
    assert registry.run_state(entry) == "incomplete"
    run = registry.train_entry("test/tiny", progress=False, verbose=False)  # resumed
    assert run.complete and [e.epoch for e in run.history.epochs] == [1, 2]
    first = (entry.path / HISTORY).read_bytes()
    assert registry.train_entry(
        "test/tiny", progress=False, verbose=False
    ).complete  # present: nothing to do
    assert (entry.path / HISTORY).read_bytes() == first
    again = registry.train_entry("test/tiny", force=True, progress=False, verbose=False)
    assert again.complete and not entry.path.with_name("tiny.regenerating").exists()
    assert [e.train_loss for e in again.history.epochs] == [
        e.train_loss for e in run.history.epochs
    ]


def test_regenerate_list_and_bad_pattern(capsys):
    from attnconv.experiments.studies import STUDIES
    from attnconv.regenerate import entries, main

    assert main(["--list", "--only", "deep"]) == 0
    out = capsys.readouterr().out
    assert (
        "deep/learned " in out
        and "book/runs/deep/learned/removal.json" in out
        and "present" in out
    )
    assert main(["--only", "no/such"]) == 2
    assert "no entry matches" in capsys.readouterr().err
    names = [e.name for e in entries(["seeds/deep"])]
    assert names == [
        "seeds/deep/quadratic/seed1",
        "seeds/deep/quadratic/seed2",
        "seeds/deep/learned/seed1",
        "seeds/deep/learned/seed2",
    ]
    from attnconv.evidence.freeze import BACKGROUND_PATHS

    for r in STUDIES.values():  # every committed result file is listed with its maker
        assert (
            r.path.is_file()
            or r.name.startswith("results/benchmark")
            or r.file.startswith(BACKGROUND_PATHS)  # the protocol's, made over sessions
            or not r.committed
        ), r.name
    listed = {r.file for r in STUDIES.values()}
    book = runs_dir().parent
    for p in list((book / "results").glob("*.json")) + [
        p
        for p in runs_dir().rglob("*.json")
        if p.name not in ("history.json", "config.json")
    ]:
        assert p.relative_to(book).as_posix() in listed, p


def write_history(entry, used="sample", status="complete", **config_changes):
    """A minimal history of the registered ``entry`` in its folder, its config changed by
    ``config_changes``, trained on ``data``."""
    entry.path.mkdir(parents=True, exist_ok=True)
    cfg = {**entry.config.to_dict(), **config_changes}
    (entry.path / HISTORY).write_text(
        json.dumps({"config": cfg, "data": used, "status": status, "epochs": []})
    )


def test_where_a_run_ran_and_found_its_data_are_not_other_settings(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("ATTNCONV_BOOK_DIR", str(tmp_path))
    paper = registry.run_entry("paper/quadratic")
    assert paper.config.data == "auto"
    for changes in (
        dict(data="full"),
        dict(data_root="/shared/cifar"),
        dict(device="cuda:3"),
        dict(data="full", data_root="/scratch/c10", device="cpu"),
    ):
        write_history(paper, used="full", **changes)
        assert registry.run_state(paper) == "present", changes
    # a paper run that fell back to the sample is the paper entry's run (its chapters say so)
    write_history(paper, used="sample")
    assert registry.run_state(paper) == "present"
    # ... but a run of other training settings is not
    write_history(paper, used="full", lr=0.05)
    assert registry.run_state(paper) == "stale"
    # a cpu run (data="sample") trained on the full set is a run of other settings
    cpu = registry.run_entry("cpu/learned")
    write_history(cpu, used="full", data="full")
    assert registry.run_state(cpu) == "stale"
    with pytest.raises(StaleResultError, match=r"other settings \(data\)"):
        registry.load_run("cpu/learned")
    write_history(cpu, used="sample", data_root="/elsewhere", device="cuda:0")
    assert registry.run_state(cpu) == "present"
