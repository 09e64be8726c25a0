"""The NCCL side of multi-process training, tested without GPUs: torch.cuda and the process-group
calls are mocked; a real one-process gloo group carries a simulated NCCL failure through the loop."""

import os
from unittest import mock

import pytest
import torch
import torch.distributed as dist
from conftest import synthetic_cifar

import attnconv.experiments.distributed as dist_mod
import attnconv.experiments.train_cli as cli_mod
import attnconv.experiments.train_step as step_mod
from attnconv.experiments.distributed import (
    EXIT_PEER_LOST,
    DistContext,
    DistributedSetupError,
    PeerLostError,
    init_from_environment,
)
from attnconv.experiments.train import train
from attnconv.experiments.train_config import TrainConfig

TINY = dict(hidden_size=8, intermediate_size=8, num_layers=1, num_heads=3, downsample=4)


@pytest.fixture
def two_gpus(monkeypatch):
    """A machine with 2 GPUs, as torch sees it; the process group is recorded, not joined."""
    joined = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "set_device", lambda d: None)
    monkeypatch.setattr(
        dist, "init_process_group", lambda backend, **kw: joined.append((backend, kw))
    )
    monkeypatch.delenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", raising=False)
    return joined


def torchrun_env(monkeypatch, world, rank, local_rank):
    for k, v in dict(WORLD_SIZE=world, RANK=rank, LOCAL_RANK=local_rank).items():
        monkeypatch.setenv(k, str(v))


def test_nccl_error_handling_raises_instead_of_killing(monkeypatch, two_gpus):
    """TORCH_NCCL_ASYNC_ERROR_HANDLING=1 (TearDown) lets NCCL's watchdog kill a surviving
    process before it can say anything; 2 (CleanUpOnly) aborts the communicators and makes the
    waiting call raise, which the loop turns into exit 76 with its message."""
    torchrun_env(monkeypatch, 2, 1, 1)
    ctx = init_from_environment()
    assert ctx.backend == "nccl" and ctx.device == torch.device("cuda", 1)
    assert two_gpus[0][0] == "nccl"
    assert os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "2"


def test_a_users_nccl_setting_is_kept(monkeypatch, two_gpus):
    torchrun_env(monkeypatch, 2, 0, 0)
    monkeypatch.setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "3")
    init_from_environment()
    assert os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "3"


def test_more_processes_than_gpus_is_refused(monkeypatch, two_gpus):
    torchrun_env(monkeypatch, 4, 3, 3)
    with pytest.raises(DistributedSetupError, match="--nproc_per_node=2 or fewer"):
        init_from_environment()
    assert two_gpus == []  # no process group joined


def test_more_processes_than_gpus_exits_2_in_one_line(
    tmp_path, monkeypatch, capsys, two_gpus
):
    torchrun_env(monkeypatch, 4, 3, 3)
    monkeypatch.setattr(cli_mod, "train", mock.Mock(side_effect=AssertionError))
    args = [
        "--model",
        "quadratic",
        "--profile",
        "cpu",
        "--run-dir",
        str(tmp_path / "r"),
    ]
    assert cli_mod.main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: process 3 of this machine")


@pytest.fixture
def one_process_group(tmp_path):
    """A real gloo process group of one process (what the loop talks to)."""
    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    yield DistContext(0, 1, 0, torch.device("cpu"), "gloo", 30.0)
    dist.destroy_process_group()


NCCL_FAILURE = (
    "NCCL error in: ProcessGroupNCCL.cpp:1969, remote process exited or there was a network "
    "error, NCCL version 2.27.3\nncclRemoteError: A call failed possibly due to a network error"
)


def test_a_dead_peer_on_nccl_gives_the_documented_error(
    tmp_path, monkeypatch, one_process_group
):
    """With CleanUpOnly, NCCL's failure surfaces in whatever call waits next (here the third
    step's), as a DistBackendError: the loop stops with PeerLostError, whose message names the
    kept checkpoint and --resume; the command line exits 76 with it."""
    real, calls = step_mod.normalize_batch, {"n": 0}

    def dies_at_step_3_of_epoch_2(x):
        calls["n"] += 1
        if calls["n"] == 6:
            raise dist.DistBackendError(NCCL_FAILURE)
        return real(x)

    monkeypatch.setattr(step_mod, "normalize_batch", dies_at_step_3_of_epoch_2)
    cfg = TrainConfig(
        model="quadratic",
        model_overrides=TINY,
        epochs=2,
        batch_size=10,
        data="sample",
        device="cpu",
    )
    with pytest.raises(PeerLostError) as e:
        train(
            cfg,
            tmp_path / "r",
            progress=False,
            verbose=False,
            data=synthetic_cifar(30, 10),
            distributed=one_process_group,
        )
    text = str(e.value)
    assert text.startswith(
        "rank 0: another process of the run died or stopped answering"
    )
    assert "ncclRemoteError" not in text.splitlines()[0][:40]
    assert "checkpoint of epoch 1" in text and "--resume" in text

    def lost(*a, **kw):
        raise e.value

    monkeypatch.setattr(cli_mod, "train", lost)
    args = [
        "--model",
        "quadratic",
        "--profile",
        "cpu",
        "--run-dir",
        str(tmp_path / "r"),
    ]
    assert cli_mod.main(args) == EXIT_PEER_LOST


def test_peer_lost_exit_status_is_76():
    assert dist_mod.EXIT_PEER_LOST == 76
