"""The studies' registry (next to the runs'), the pruning study's retraining through the one
training loop (an interrupted retraining resumes to the same result), and the per-image
predictions every study saves (their accuracy is the accuracy the study stores)."""

import copy
import json

import pytest
import torch

from attnconv.experiments import studies
from attnconv.experiments import studies_pruning as sp
from attnconv.experiments.data import load_cifar10_sample
from attnconv.experiments.models import build_model
from attnconv.experiments.profiles import make_config
from attnconv.experiments.pruning import prune_heads
from attnconv.experiments.registry import RUNS, load_run
from attnconv.experiments.store import (
    CHECKPOINT,
    PRUNING_FILE,
    MissingResultError,
    StaleResultError,
    book_dir,
)
from attnconv.experiments.studies_removal import (
    load_removal,
    removal_accuracies,
    removal_predictions,
)
from attnconv.experiments.train import train_or_load
from attnconv.experiments.train_config import TrainConfig
from attnconv.experiments.train_step import decode_predictions

TINY = dict(
    hidden_size=8, intermediate_size=12, num_layers=2, num_heads=4, downsample=8
)


@pytest.fixture(scope="module")
def data():
    return load_cifar10_sample().subset(200, 100)


def tiny_config(**kw):
    base = dict(
        model="generalized",
        model_overrides=TINY,
        epochs=3,
        batch_size=50,
        eval_batch_size=100,
        data="sample",
        train_subset=200,
        test_subset=100,
    )
    return TrainConfig(**{**base, **kw})


def tiny_pruned(seed=0):
    torch.manual_seed(seed)
    return prune_heads(build_model("generalized", **TINY).eval(), {0: [1], 1: [0, 2]})


def accuracy_of(predictions, labels) -> float:
    """The oracle: the share of images whose saved class is their label."""
    return sum(int(p == int(y)) for p, y in zip(predictions, labels)) / len(labels)


# --------------------------------------------------------------------------- the registry
def test_every_study_is_registered_once_with_its_file_and_command():
    assert set(studies.STUDIES).isdisjoint(RUNS)
    for name, entry in studies.STUDIES.items():
        assert entry.name == name and entry.file.endswith(".json")
        assert entry.command == f"python -m attnconv.regenerate --only {name}"
        assert all(r in RUNS for r in entry.runs), name
    kinds = {n.rsplit("/", 1)[1] for n in studies.STUDIES if n.count("/") > 1}
    # (the protocol's runs add held-out accuracy, once evidence.runs registers them)
    assert {"pruning", "removal", "attention_maps"} <= kinds
    assert kinds <= {"pruning", "removal", "attention_maps", "held-out", "head-paths"}
    assert "results/learn-to-convolve-9-heads" in studies.STUDIES
    with pytest.raises(ValueError, match="registered twice"):
        studies.register_study(studies.STUDIES["cpu/generalized/pruning"])
    with pytest.raises(KeyError, match="--list"):
        studies.study_entry("cpu/no-such/pruning")


def test_a_missing_study_names_the_command_that_makes_it(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNCONV_BOOK_DIR", str(tmp_path))
    assert book_dir() == tmp_path.resolve()
    for name in ("results/learn-to-convolve-9-heads", "results/kernel-spread"):
        entry = studies.study_entry(name)
        assert studies.study_state(entry) == "missing"
        with pytest.raises(MissingResultError, match=f"--only {name}$"):
            entry.read()
    # a study of a missing run: the message names the run's entry
    with pytest.raises(MissingResultError, match="--only deep/learned$"):
        studies.study_entry("deep/learned/removal").read()


def test_committed_studies_read_and_old_ones_have_no_predictions():
    """The committed studies still read; those saved before studies kept per-image predictions
    read with predictions None (and say so in --list)."""
    for name in ("cpu/generalized/pruning", "deep/learned/removal"):
        entry = studies.study_entry(name)
        if not entry.path.is_file():
            pytest.skip(f"book/{entry.file} is not committed")
        assert studies.study_state(entry) == "present"
        assert studies.lacks_predictions(entry) == (not entry.predictions())
    study = sp.load_pruning_study(load_run("cpu/generalized"), verbose=False)
    removal = load_removal(load_run("deep/learned"))
    if "degenerate_first_predictions" not in study["curve"]:
        assert sp.study_predictions(study, 0) is None
        assert (
            sp.study_predictions(study, study["retrained"][0]["k"], "retrained") is None
        )
    if "full_predictions" not in removal:
        assert removal_predictions(removal) is None
        assert removal_predictions(removal, 5, 0) is None


def test_regenerate_list_shows_studies_beside_runs(capsys):
    from attnconv.regenerate import main

    assert main(["--list", "--only", "deep/generalized*", "results/learn*"]) == 0
    lines = capsys.readouterr().out.splitlines()
    kinds = {line.split()[0]: line.split()[1] for line in lines}
    assert kinds["deep/generalized"] == "run"
    assert kinds["deep/generalized/pruning"] == "study"
    assert kinds["deep/generalized/removal"] == "study"
    assert kinds["results/learn-to-convolve-16-heads"] == "study"
    names = list(kinds)
    assert names.index("deep/generalized") < names.index("deep/generalized/pruning")


def test_regenerate_check_verifies_studies(capsys, monkeypatch):
    """--check reads each chosen study (and re-computes it where its weights or code allow)."""
    from attnconv import regenerate

    entry = studies.study_entry("deep/learned/removal")
    if not entry.path.is_file():
        pytest.skip("removal.json not committed")
    monkeypatch.setattr(studies, "_weights_on_disk", lambda name: False)
    assert regenerate._check(entry) is True
    assert "not re-computed" in capsys.readouterr().out
    stale = studies.StudyEntry(
        "x/y/removal", entry.file, entry.runs, entry.make, _raise_stale
    )
    assert regenerate._check(stale) is False
    assert "--only x/y/removal" in capsys.readouterr().out


def _raise_stale():
    raise StaleResultError("made otherwise; make it again with: "
                           "python -m attnconv.regenerate --only x/y/removal")  # fmt: skip


# --------------------------------------------------------------------------- retraining
def test_retrain_resumed_after_interruption_equals_the_uninterrupted_one(
    tmp_path, data
):
    cfg = tiny_config()
    model = tiny_pruned()
    whole = sp.retrain(model, cfg, data, epochs=3, run_dir=tmp_path / "whole")
    part = sp.retrain(model, cfg, data, 3, tmp_path / "part", stop_after=1)
    assert len(part["epochs"]) == 1 and part["status"] == "running"
    assert (tmp_path / "part" / CHECKPOINT).is_file()
    resumed = sp.retrain(model, cfg, data, epochs=3, run_dir=tmp_path / "part")
    keys = ("train_loss", "train_acc", "test_loss", "test_acc", "attention")
    for a, b in zip(whole["epochs"], resumed["epochs"], strict=True):
        assert {k: a[k] for k in keys} == {k: b[k] for k in keys}
    assert (
        whole["epochs"][-1]["test_predictions"]
        == resumed["epochs"][-1]["test_predictions"]
    )
    assert whole["initial"] == resumed["initial"]
    assert resumed["heads_per_layer"] == [3, 2] and resumed["status"] == "complete"
    # a finished retraining is read back, not trained again
    saved = (tmp_path / "part" / CHECKPOINT).stat().st_mtime_ns
    again = sp.retrain(model, cfg, data, epochs=3, run_dir=tmp_path / "part")
    assert again["epochs"] == resumed["epochs"]
    assert (tmp_path / "part" / CHECKPOINT).stat().st_mtime_ns == saved


def test_retrain_of_other_weights_starts_again(tmp_path, data):
    cfg = tiny_config()
    folder = tmp_path / "r"
    sp.retrain(tiny_pruned(0), cfg, data, 2, folder, stop_after=1)
    other = tiny_pruned(1)
    got = sp.retrain(other, cfg, data, epochs=2, run_dir=folder)
    fresh = sp.retrain(other, cfg, data, epochs=2, run_dir=tmp_path / "fresh")
    assert got["start"]["weights_sha256"] == sp.weights_fingerprint(other)
    assert [e["train_loss"] for e in got["epochs"]] == [
        e["train_loss"] for e in fresh["epochs"]
    ]


def test_weights_fingerprint_sees_one_changed_weight():
    model = tiny_pruned()
    twin = copy.deepcopy(model)
    assert sp.weights_fingerprint(model) == sp.weights_fingerprint(twin)
    with torch.no_grad():
        twin.classifier.weight[0, 0] += 1e-6
    assert sp.weights_fingerprint(model) != sp.weights_fingerprint(twin)


# --------------------------------------------------------------------------- predictions
def test_pruning_study_predictions_give_its_accuracies(tmp_path, data):
    torch.manual_seed(0)
    model = build_model("generalized", **TINY).eval()
    cfg = tiny_config()
    study = sp.pruning_study(
        model, cfg, data, retrain_counts=[2], epochs=1, random_orders=2,
        work_dir=tmp_path / "pruned",
    )  # fmt: skip
    y = data.subset(cfg.train_subset, cfg.test_subset).y_test
    curve = study["curve"]
    for k in curve["k"]:
        assert (
            accuracy_of(sp.study_predictions(study, k), y)
            == curve["degenerate_first"][k]
        )
        for i in range(2):
            got = sp.study_predictions(study, k, "random", i)
            assert accuracy_of(got, y) == curve["random"][i][k]
    for row in study["retrained"]:
        assert (
            accuracy_of(sp.study_predictions(study, row["k"], "retrained"), y)
            == (row["test_acc"][-1])
        )
        before = sp.study_predictions(study, row["k"], "retrained_before")
        assert accuracy_of(before, y) == row["test_acc_before"]
        assert row["test_acc_before"] == curve["degenerate_first"][row["k"]]
    # each retraining ran in its own run folder, with its checkpoint (resumable)
    assert (tmp_path / "pruned" / "retrain-k2" / CHECKPOINT).is_file()
    json.dumps(study)


def test_removal_predictions_give_its_accuracies(tmp_path):
    tiny = dict(
        hidden_size=16, intermediate_size=16, num_layers=2, num_heads=2, downsample=8
    )
    config = make_config(
        "quadratic", "cpu", epochs=1, train_subset=100, test_subset=50,
        model_overrides=tiny,
    )  # fmt: skip
    run = train_or_load(config, tmp_path / "q", load_model=True, verbose=False)
    saved = removal_accuracies(run)
    y = load_cifar10_sample().subset(100, 50).y_test
    assert accuracy_of(removal_predictions(saved), y) == saved["full"]
    # the full model is the run's last epoch: the run's own saved predictions
    assert saved["full_predictions"] == run.history["epochs"][-1]["test_predictions"]
    assert decode_predictions(saved["full_predictions"]) == removal_predictions(saved)
    for li, row in enumerate(saved["without_head"]):
        assert (
            accuracy_of(removal_predictions(saved, li), y) == saved["without_layer"][li]
        )
        for h, acc in enumerate(row):
            assert accuracy_of(removal_predictions(saved, li, h), y) == acc


def test_regenerate_imports_no_chapter_module():
    """The recipes live in experiments: the command reaches no chapter module."""
    import ast
    from pathlib import Path

    import attnconv.experiments.studies as registry_of_studies
    import attnconv.regenerate as regenerate

    for module in (regenerate, registry_of_studies):
        tree = ast.parse(Path(module.__file__).read_text())
        found = [
            n.module
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and "chapters" in (n.module or "")
        ]
        assert found == [], module.__name__


def test_a_pruning_study_of_other_weights_is_stale(tmp_path, data):
    from attnconv.experiments.checkpoints import Run, write_json

    cfg = tiny_config()
    torch.manual_seed(0)
    model = build_model("generalized", **TINY).eval()
    study = sp.pruning_study(model, cfg, data, retrain_counts=[], random_orders=0)
    study.pop("pruned_history")
    write_json(tmp_path / PRUNING_FILE, study)
    full = study["curve"]["degenerate_first"][0]
    same = Run(tmp_path, cfg, {"epochs": [{"test_acc": full}]})
    assert sp.load_pruning_study(same, verbose=False) == json.loads(json.dumps(study))
    other = Run(tmp_path, cfg, {"epochs": [{"test_acc": full + 0.01}]})
    with pytest.raises(StaleResultError, match="other weights.*--force"):
        sp.load_pruning_study(other, verbose=False)


def test_the_control_retrains_the_unpruned_model_as_the_training_loop_would(
    tmp_path, data
):
    """``control``: k = 0 is retrained from the unpruned weights, in its own folder, exactly as
    :func:`retrain` trains an unpruned copy (an independent call of the training loop)."""
    torch.manual_seed(0)
    model = build_model("generalized", **TINY).eval()
    cfg = tiny_config()
    study = sp.pruning_study(
        model, cfg, data, retrain_counts=[], epochs=1, random_orders=0,
        work_dir=tmp_path / "pruned", control=True,
    )  # fmt: skip
    control = next(r for r in study["retrained"] if r["k"] == 0)
    assert control["heads"] == []
    assert control["test_acc_before"] == study["curve"]["degenerate_first"][0]
    alone = sp.retrain(sp.pruned_copy(model, []), cfg, data, 1, tmp_path / "alone")
    assert control["test_acc"] == [e["test_acc"] for e in alone["epochs"]]
    assert (tmp_path / "pruned" / "retrain-k0" / CHECKPOINT).is_file()
    # without the control, no k = 0 is retrained
    plain = sp.pruning_study(
        model, cfg, data, retrain_counts=[], epochs=1, random_orders=0,
        work_dir=tmp_path / "plain",
    )  # fmt: skip
    assert all(r["k"] > 0 for r in plain["retrained"])
