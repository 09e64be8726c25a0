"""The GPU audit's findings that live outside one module's own tests, each tested on the CPU
(fake CUDA tensors, mocks, a made-up data root): a quadratic encoding parametrised by α read on
CUDA, a paper run trained on the sample once the full CIFAR-10 is there, and the size of the
tracked tree (the project must travel to a lent card: at most 64 MiB of working tree goes)."""

import json
import subprocess
from pathlib import Path

import pytest
import torch

from attnconv.core.encodings import QuadraticEncoding
from attnconv.experiments import registry
from attnconv.experiments.models import build_model, paper_model_config
from attnconv.experiments.store import HISTORY

ROOT = Path(__file__).resolve().parents[1]


def test_alpha_parametrised_quadratic_heads_read_on_fake_cuda():
    """``attention_parameters`` of a quadratic encoding parametrised by α on CUDA: every tensor it
    returns is a CPU tensor (the bug: s = √(2α) stayed on CUDA and met a CPU ``torch.eye(2)``)."""
    from unittest import mock

    from torch._subclasses.fake_tensor import FakeTensorMode

    cfg = paper_model_config("quadratic", num_layers=1, hidden_size=18)
    model = build_model(cfg).requires_grad_(False)
    layer = model.layers[0].attention
    layer.encoding = QuadraticEncoding(cfg.num_heads, alpha=torch.full((9,), 2.0))
    model.requires_grad_(False)
    import contextlib

    import torch._subclasses.fake_tensor as fake_tensor

    # torch 2.11's fake CUDA tensors make one real CUDA tensor first when CUDA is "available"
    quiet = (
        mock.patch.object(fake_tensor, "init_gpu_context", lambda device: None)
        if hasattr(fake_tensor, "init_gpu_context")
        else contextlib.nullcontext()
    )
    with (
        mock.patch("torch.cuda.is_available", return_value=True),
        quiet,
        FakeTensorMode(),
    ):
        model._apply(lambda t: torch.empty(t.shape, dtype=t.dtype, device="cuda"))
        params = model.attention_parameters()
    assert params[0]["spreads"].device.type == "cpu"
    assert params[0]["inverse_covariance"].device.type == "cpu"
    assert params[0]["inverse_covariance"].shape == (9, 2, 2)


def test_a_paper_run_on_the_sample_is_superseded_once_cifar10_is_there(
    tmp_path, monkeypatch
):
    """A complete paper run (``data="auto"``) that trained on the sample is ``present`` while the
    full CIFAR-10 is absent, and ``superseded`` once it is there: ``regenerate --only 'paper/*'``
    then trains it again on the full data (the bug: it stayed ``present`` for ever)."""
    monkeypatch.setenv("ATTNCONV_BOOK_DIR", str(tmp_path / "book"))
    data_root = tmp_path / "data"
    monkeypatch.setenv("ATTNCONV_DATA_ROOT", str(data_root))
    entry = registry.run_entry("paper/quadratic")
    assert entry.config.data == "auto"
    entry.path.mkdir(parents=True)
    history = {
        "config": entry.config.to_dict(),
        "status": "complete",
        "data": "sample",
        "epochs": [],
    }
    (entry.path / HISTORY).write_text(json.dumps(history))
    assert registry.run_state(entry) == "present"
    folder = data_root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        (folder / name).write_bytes(b"")
    assert registry.run_state(entry) == "superseded"
    assert registry.load_run("paper/quadratic").complete  # still readable meanwhile
    trained = []
    monkeypatch.setattr(
        registry, "train", lambda config, target, **kw: trained.append(target)
    )
    with pytest.raises(Exception):  # the fake train leaves nothing to load
        registry.train_entry("paper/quadratic", progress=False, verbose=False)
    assert trained and trained[0].name == "quadratic.regenerating"
    history["data"] = "full"
    (entry.path / HISTORY).write_text(json.dumps(history))
    assert registry.run_state(entry) == "present"


def test_the_tracked_tree_stays_below_56_mib():
    """At most 64 MiB of working tree travels to a lent GPU; 56 MiB leaves room for the untracked
    files a session adds. (Sizes of the tracked files as checked out.)"""
    try:
        files = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout.split(b"\0")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    total = sum(
        (ROOT / f.decode()).stat().st_size
        for f in files
        if f and (ROOT / f.decode()).is_file()
    )
    assert total < 56 * 2**20, f"tracked tree {total / 2**20:.1f} MiB"
