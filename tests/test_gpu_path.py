"""The GPU box path without a GPU: the install's checks (Makefile), the test targets pinned to the
committed cpu runs even where CUDA is present, every "make it with" message naming an entry that
exists (for every profile), and the chapters' reading code on fake ``gpu`` and ``paper`` runs
written into a temporary book folder (paper-size histories; the studies made by regenerate's own
recipes from a small stand-in model of the same layers, heads and token grid)."""

import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from attnconv import regenerate
from attnconv.chapters import generalized_pruning as gp
from attnconv.chapters.how_convolutional import (
    format_peaks,
    locality_summary,
    measures_rows,
)
from attnconv.chapters.quadratic_training import format_table1, table1_rows
from attnconv.chapters.shared import attention_maps as am
from attnconv.chapters.shared import depth_measures as depth
from attnconv.chapters.shared.checks import Checks
from attnconv.chapters.shared.recheck import recheck
from attnconv.chapters.shared.saved_runs import (
    book_run,
    book_run_changes,
    load_saved_runs,
    run_caption,
    runs_list,
)
from attnconv.experiments import data as data_mod
from attnconv.experiments import (
    registry,
    studies,
    studies_maps,
    studies_pruning,
    studies_removal,
)
from attnconv.experiments.checkpoints import Run, attention_record, write_json
from attnconv.experiments.models import (
    build_model,
    count_parameters,
    model_config_to_dict,
)
from attnconv.experiments.runs import verify_first_epoch
from attnconv.experiments.store import (
    HISTORY,
    MissingResultError,
    StaleResultError,
    runs_dir,
)
from attnconv.experiments.train_step import evaluate
from attnconv.experiments.verdicts import compare_seed_series

ROOT = Path(__file__).resolve().parents[1]
FULL_SCALE = ("gpu", "paper")
COMMAND = re.compile(r"python -m attnconv\.regenerate --only (\S+)")


# --------------------------------------------------------------------------- install
def make(*args, env=None):
    return subprocess.run(
        ["make", "-C", str(ROOT), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_make_setup_refuses_an_old_python_in_one_line(tmp_path):
    old = tmp_path / "python3.10"
    old.write_text(
        '#!/bin/sh\n[ "$1" = "-V" ] && { echo "Python 3.10.12"; exit 0; }\nexit 1\n'
    )
    old.chmod(0o755)
    out = make("setup", f"PYTHON={old}", f"VENV={tmp_path / 'venv'}")
    assert out.returncode != 0
    ours = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(ours) == 1 and "Python >= 3.11" in ours[0] and "3.10.12" in ours[0]
    assert not (tmp_path / "venv").exists()  # nothing was installed


def test_make_setup_installs_another_cuda_build_of_the_pinned_torch(tmp_path):
    out = make(
        "-n",
        "setup",
        "TORCH_INDEX=https://download.pytorch.org/whl/cu126",
        f"VENV={tmp_path / 'venv'}",
    )
    lines = out.stdout.splitlines()
    pins = [
        line.strip()
        for line in (ROOT / "requirements.txt").read_text().splitlines()
        if line.startswith(("torch==", "torchvision=="))
    ]
    index = next(i for i, line in enumerate(lines) if "--index-url" in line)
    assert "uninstall -y torch torchvision" in lines[index - 1]  # else pip keeps PyPI's
    assert lines[index].endswith(
        "install --index-url https://download.pytorch.org/whl/cu126 " + " ".join(pins)
    )
    assert index < next(
        i for i, line in enumerate(lines) if "-r requirements.txt" in line
    )
    # the pyproject, the Makefile's check and every Python version the README names agree
    need = re.search(
        r'requires-python = ">=3\.(\d+)"', (ROOT / "pyproject.toml").read_text()
    )
    minor = int(need.group(1))
    assert f"sys.version_info < (3, {minor})" in (ROOT / "Makefile").read_text()
    named = {
        int(m) for m in re.findall(r"3\.(\d+)", python_mentions(ROOT / "README.md"))
    }
    assert named == {minor}, named


def python_mentions(path) -> str:
    """The lines of a text that name a Python version (``Python 3.x``, ``python3.x``)."""
    return "\n".join(
        line
        for line in path.read_text().splitlines()
        if re.search(r"[Pp]ython\s*(>=|≥)?\s*3\.\d+|python3\.\d+", line)
    )


def test_gpu_targets_need_no_setup_and_no_network(tmp_path):
    """Finding 11: ``make gpu-smoke`` / ``make gpu-window`` run with the torch that is there,
    offline: no venv stamp (which runs pip), only ``PYTHONPATH=.`` and a python."""
    text = (ROOT / "Makefile").read_text()
    for target in ("gpu-smoke", "gpu-window"):
        rule = re.search(rf"^{target}:(.*)$", text, re.M)
        assert rule and rule.group(1).strip() == "", f"{target} has prerequisites"
        out = make("-n", target, "GPU_PYTHON=python3", f"GPU_OUT={tmp_path}")
        assert out.returncode == 0, out.stderr
        lines = [
            l for l in out.stdout.splitlines() if l.strip() and "directory" not in l
        ]
        assert len(lines) == 1 and lines[0].startswith("PYTHONPATH=. python3 -m ")
        assert "pip" not in out.stdout and "--out " + str(tmp_path) in lines[0]
    dry = make("-n", "gpu-window", "DRY_RUN=1", "BUDGET=600", "GPU_PYTHON=python3")
    assert "--budget 600" in dry.stdout and "--dry-run" in dry.stdout


def test_the_test_targets_read_the_cpu_runs_even_with_cuda(monkeypatch):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTNCONV_")}
    out = make("-n", "unit", "nbval", "test", env=env)
    pytest_lines = [line for line in out.stdout.splitlines() if "-m pytest" in line]
    assert len(pytest_lines) == 3, out.stdout
    pinned = re.search(r"^TEST_ENV := (.*)$", (ROOT / "Makefile").read_text(), re.M)
    pins = dict(kv.split("=", 1) for kv in pinned.group(1).split())
    assert pins == {"ATTNCONV_PROFILE": "cpu", "ATTNCONV_DEEP_PROFILE": "deep"}
    for line in pytest_lines:
        assert re.search(
            r"(^|[(,] ?)ATTNCONV_PROFILE=cpu ATTNCONV_DEEP_PROFILE=deep \S+/python -m pytest",
            line,
        ), line
    # what the chapters then read on a CUDA machine
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.delenv("ATTNCONV_PROFILE", raising=False)
    assert registry.active_profile() == "gpu"  # unpinned: the uncommitted gpu runs
    for key, value in pins.items():
        monkeypatch.setenv(key, value)
    assert registry.active_profile() == "cpu"
    assert book_run("quadratic").run_dir == runs_dir() / "cpu" / "quadratic"


# --------------------------------------------------------------------------- fake gpu/paper runs
def tiny_data(test: int):
    """20 training and ``test`` test images of the sample (the attention maps average 100)."""
    data = data_mod.load_cifar10_sample().subset(20, test)
    data.source = "full"  # as the gpu and paper profiles' runs see it
    return data


def stand_in(entry):
    """The entry's model with hidden and MLP width 9: its layers and heads, cheap to run; the
    paper's 16×16 token grid for the learned encodings (their saved attention maps are drawn),
    8×8 for the Gaussian ones (only accuracies are made from them: pruning and removal)."""
    config = entry.config
    if config.model == "resnet18":
        return None
    small = replace(
        config,
        model_overrides={
            **config.model_overrides,
            "hidden_size": 9,
            "intermediate_size": 9,
            **(
                {"downsample": 4}
                if config.model in ("quadratic", "generalized")
                else {}
            ),
        },
    )
    torch.manual_seed(config.seed)
    return build_model(small.model_config())


def write_fake_history(entry, test_acc: float, epochs: int = 2):
    """A complete history of the entry's paper-size config, as train() writes it."""
    torch.manual_seed(entry.config.seed)
    model = build_model(entry.config.model_config())
    heads = attention_record(model)
    history = {
        "config": entry.config.to_dict(),
        "model_config": model_config_to_dict(entry.config.model_config()),
        "num_parameters": count_parameters(model),
        "data": "full",
        "data_note": "Data: the full CIFAR-10 (50,000 training / 10,000 test images).",
        "train_size": 50_000,
        "test_size": 10_000,
        "steps_per_epoch": 500,
        "initial_attention": heads,
        "epochs": [
            {
                "epoch": k,
                "train_loss": 2.0 - 0.1 * k,
                "train_acc": 0.2 + 0.05 * k,
                "test_loss": 2.0 - 0.1 * k,
                "test_acc": test_acc if k == epochs else 0.2,
                "lr": 0.1,
                "seconds": 10.0,
                "attention": heads,
            }
            for k in range(1, epochs + 1)
        ],
        "status": "complete",
        "device": "cuda:0",
        "first_step_losses": [2.3] * 20,
    }
    entry.path.mkdir(parents=True, exist_ok=True)
    write_json(entry.path / HISTORY, history)


@pytest.fixture(scope="module")
def fake_book(tmp_path_factory):
    """A book folder with every registered gpu and paper run and every study regenerate makes
    for them, made by regenerate's recipes from the stand-in models on tiny data."""
    folder = tmp_path_factory.mktemp("book")
    patch = pytest.MonkeyPatch()
    patch.setenv("ATTNCONV_BOOK_DIR", str(folder))
    data, hundred = tiny_data(10), tiny_data(100)
    patch.setattr(data_mod, "load_cifar10", lambda *a, **k: data)  # pruning, removal
    patch.setattr(studies_maps, "load_cifar10", lambda *a, **k: hundred)  # maps
    patch.setattr(studies_pruning, "retrain_epochs", lambda config: 1)  # not 300 / 3
    models = {}
    for profile in FULL_SCALE:
        for entry in registry.book_runs(profile):
            model = stand_in(entry)
            acc = (
                0.5
                if model is None
                else evaluate(model, data.x_test, data.y_test, 500)[1]
            )
            write_fake_history(entry, acc)
            models[entry.name] = model

    def trained(name):
        entry = registry.run_entry(name)
        return Run(
            entry.path, entry.config, registry.load_run(name).history, models[name]
        )

    patch.setattr(studies, "trained_run", trained)
    made = []
    for result in studies.STUDIES.values():
        if result.runs and all(r.split("/")[0] in FULL_SCALE for r in result.runs):
            result.make()
            made.append(result.name)
    patch.undo()
    return folder, made


def use(monkeypatch, folder, profile):
    monkeypatch.setenv("ATTNCONV_BOOK_DIR", str(folder))
    monkeypatch.setenv("ATTNCONV_PROFILE", profile)


def test_regenerate_makes_every_study_of_the_full_scale_runs(fake_book):
    folder, made = fake_book
    for profile in FULL_SCALE:
        assert {
            f"{profile}/learned/attention_maps",
            f"{profile}/learned_content/attention_maps",
            f"{profile}/generalized/pruning",
            f"{profile}/quadratic/removal",
            f"{profile}/generalized/removal",
            f"{profile}/learned/removal",
        } <= set(made)
        names = [e.name for e in regenerate.entries([f"{profile}/*"])]
        assert f"{profile}/quadratic-16heads" in names  # chapter 10's run
        assert set(names) >= {r.name for r in registry.book_runs(profile)}
        assert names.index(f"{profile}/learned") < names.index(
            f"{profile}/learned/attention_maps"
        )  # runs first, then what is made from them
    # not committed: left out of a plain regenerate, like their runs
    plain = {e.name for e in regenerate.entries()}
    assert not any(n.split("/")[0] in FULL_SCALE for n in plain)


@pytest.mark.parametrize("profile", FULL_SCALE)
def test_every_training_chapter_reads_the_full_scale_runs(
    fake_book, profile, monkeypatch, capsys
):
    folder, _ = fake_book
    use(monkeypatch, folder, profile)
    # chapter 7: the runs, their summaries, the accuracy table, the heads' maps
    runs = {
        m: book_run(m) for m in ("resnet18", "quadratic", "learned", "learned_content")
    }
    for run in runs.values():
        assert "2 epochs on the full data" in runs_list({"run": run})
        assert run_caption(run).startswith(f"{profile.upper()} profile (")
    assert format_table1(table1_rows(runs), profile)
    g = 16
    maps = am.layer_attention_maps(runs["quadratic"], (g // 2, g // 2))
    assert len(maps) == 6 and maps[0].shape == (9, g, g)
    assert compare_seed_series(profile, "quadratic", "learned")  # says what is missing
    # paper-size runs are not re-trained by a chapter on a CPU; it says why
    t0 = time.perf_counter()
    check = verify_first_epoch(runs["quadratic"])
    assert check["match"] is None and not check["checked"]
    assert f"regenerate --check --only {profile}/quadratic" in check["reason"]
    assert check["reason"] in capsys.readouterr().out
    rows = Checks()
    recheck(rows, runs["resnet18"])
    assert [r.measured for r in rows.rows] == ["not here: hours on a CPU"]
    assert time.perf_counter() - t0 < 5
    # chapter 8: the generalized run's heads, its pruning study and retraining
    run = registry.load_run(registry.book_run_name("generalized", profile))
    assert gp.generalized_run_changes(profile) is not None
    heads = gp.attention_only_model(run.history)
    rows = studies_pruning.head_table(heads)
    assert len(rows) == 54
    study = studies_pruning.load_pruning_study(run)
    k = studies_pruning.count_selected(study["selected"])
    if k:  # the retraining after pruning the degenerate heads, when there are any
        assert any(r["k"] == k for r in study["retrained"])
        assert studies_pruning.load_pruned_run(run).epochs
    assert len(study["curve"]["degenerate_first"]) == 55
    assert gp.pruning_table(study)
    # chapter 9: the learned encodings' saved attention maps
    for model in ("learned", "learned_content"):
        saved = studies_maps.run_attention_maps(book_run(model))
        assert len(saved["layers"]) == 6
        assert locality_summary(saved["layers"], (8, 8)) is not None
        assert format_peaks(model, saved["layers"], (8, 8))
    # chapter 10: 16 heads
    assert (
        book_run_changes("quadratic", profile, tag="16heads")["model_overrides"][
            "num_heads"
        ]
        == 16
    )
    sixteen = book_run("quadratic", tag="16heads")
    assert am.layer_attention_maps(sixteen, (8, 8))[0].shape == (16, 16, 16)
    # the pilots appendix, C.5: every run it measures is there
    specs = {
        "quadratic": ("quadratic", None),
        "generalized": ("generalized", None),
        "learned": ("learned", None),
        "quadratic, 16 heads": ("quadratic", "16heads"),
    }
    found, missing = load_saved_runs(specs, profile)
    assert missing == [] and measures_rows(found)
    # chapter 12 with ATTNCONV_DEEP_PROFILE=<profile>: runs, removal, pruning, maps
    deep, missing = load_saved_runs(depth.DEEP_RUNS, profile)
    assert missing == []
    removal = {label: studies_removal.load_removal(r) for label, r in deep.items()}
    assert all(removal[m] is not None for m in ("quadratic", "generalized", "learned"))
    assert depth.removal_rows({k: v for k, v in removal.items() if v is not None})
    assert studies_pruning.load_pruning_study(deep["generalized"])
    assert am.layer_attention_maps(deep["learned"])[0].shape == (9, 16, 16)


def test_a_paper_run_on_the_sample_is_shown_as_such(fake_book, monkeypatch, tmp_path):
    folder, _ = fake_book
    copy = tmp_path / "book"
    shutil.copytree(folder, copy)
    use(monkeypatch, copy, "paper")
    path = registry.run_entry("paper/quadratic").path / HISTORY
    h = json.loads(path.read_text())
    h.update(data="sample", train_size=5085, test_size=1017)
    path.write_text(json.dumps(h))
    run = book_run(
        "quadratic"
    )  # the paper entry's run (data="auto" allowed the sample)
    summary, caption = runs_list({"run": run}), run_caption(run)
    assert "on the sample data (5,085 training" in summary
    assert "Not the paper profile's run: it trained on the bundled sample" in summary
    assert "not the full CIFAR-10 (50,000)" in summary
    assert caption.startswith(
        "PAPER profile on the 5,085-image sample, not the paper's data"
    )
    monkeypatch.delenv(
        "ATTNCONV_BOOK_DIR"
    )  # the committed cpu runs are shown as before
    cpu = registry.load_run("cpu/quadratic")
    assert len(runs_list({"cpu": cpu}).splitlines()) == 1  # one item, no caveat
    assert "Not the" not in runs_list({"cpu": cpu})
    assert run_caption(cpu).startswith("CPU profile (2 layers")


# --------------------------------------------------------------------------- every message
def named_entries(messages):
    return [m.group(1) for text in messages for m in COMMAND.finditer(text)]


def assert_entries_exist(messages):
    names = {e.name for e in registry.RUNS.values()} | {
        r.name for r in studies.STUDIES.values()
    }
    named = named_entries(messages)
    assert named, messages
    missing = [n for n in named if n not in names]
    assert not missing, missing
    for n in named:  # and the command finds it
        assert n in [e.name for e in regenerate.entries([n])]
    return named


def read_message(call):
    try:
        got = call()
    except (MissingResultError, StaleResultError) as e:
        return str(e)
    return None if got is not None else "returned nothing"


#: The chapters' reader of each kind of study (the last part of a result's name).
STUDY_READERS = {
    "attention_maps": [studies_maps.run_attention_maps],
    "pruning": [
        lambda run: studies_pruning.load_pruning_study(run, verbose=False),
        studies_pruning.load_pruned_run,
    ],
    "removal": [lambda run: studies_removal.load_removal(run) or 1],
}


@pytest.mark.parametrize("profile", ["cpu", "deep"] + list(FULL_SCALE))
def test_every_make_it_with_message_names_an_entry(
    profile, fake_book, tmp_path, monkeypatch
):
    # missing runs: every registered run of the profile (and the seed runs) in an empty book
    monkeypatch.setenv("ATTNCONV_BOOK_DIR", str(tmp_path / "empty"))
    entries = [e for e in registry.RUNS.values() if e.profile == profile]
    messages = [read_message(lambda e=e: registry.load_run(e.name)) for e in entries]
    assert all(messages)
    assert sorted(assert_entries_exist(messages)) == sorted(e.name for e in entries)
    # the results' readers with their runs absent, then with the runs but not the studies
    results = [
        r
        for r in studies.STUDIES.values()
        if r.runs
        and r.runs[0].split("/")[0] == profile
        and r.name.rsplit("/", 1)[1] in STUDY_READERS
    ]
    assert_entries_exist([read_message(r.read) for r in results])
    book = tmp_path / "runs-only"
    source = fake_book[0] if profile in FULL_SCALE else ROOT / "book"
    for entry in entries:
        if (source / "runs" / entry.name / HISTORY).is_file():
            (book / "runs" / entry.name).mkdir(parents=True)
            shutil.copy(
                source / "runs" / entry.name / HISTORY, book / "runs" / entry.name
            )
    monkeypatch.setenv("ATTNCONV_BOOK_DIR", str(book))
    messages = [read_message(r.read) for r in results]
    assert all(messages), [r.name for r, m in zip(results, messages) if not m]
    named = assert_entries_exist(messages)
    assert set(named) >= {r.name for r in results}
    # the chapters' own readers of every study (the removal's reader returns None when missing)
    for r in results:
        run = registry.load_run(r.runs[0])
        for reader in STUDY_READERS[r.name.rsplit("/", 1)[1]]:
            text = read_message(lambda: reader(run))
            if text is not None:
                assert assert_entries_exist([text]) == [r.name]
    # stale and unfinished runs
    entry = registry.run_entry(f"{profile}/quadratic")
    path = book / "runs" / entry.name / HISTORY
    h = json.loads(path.read_text())
    h["config"]["lr"] = 0.5
    path.write_text(json.dumps(h))
    stale = read_message(lambda: registry.load_run(entry.name))
    assert "--force" in stale and assert_entries_exist([stale]) == [entry.name]
    h["config"]["lr"], h["status"] = entry.config.lr, "running"
    path.write_text(json.dumps(h))
    assert assert_entries_exist([read_message(lambda: registry.load_run(entry.name))])


def test_every_result_names_an_entry_when_missing(tmp_path, monkeypatch):
    """In an empty book every result's reader (sweeps, benchmarks and the kernel spread included)
    names an entry that exists: the result itself, or the run it is made from."""
    monkeypatch.setenv("ATTNCONV_BOOK_DIR", str(tmp_path))
    for result in studies.STUDIES.values():
        message = read_message(result.read)
        assert message is not None, result.name
        named = assert_entries_exist([message])
        assert set(named) <= {result.name, *result.runs}, (result.name, named)
