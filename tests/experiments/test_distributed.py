"""Multi-process training under torchrun (gloo, CPU) against single-process training.

Every run goes through the real entry point, ``python -m torch.distributed.run … -m attnconv.train``,
on 127.0.0.1 with ports chosen at run time; every subprocess has a timeout and every process
group a collective timeout (``--dist-timeout``), so nothing can hang.

Tolerances (measured figures in the book page "Reproducing the paper at full scale"): the two
processes add the same numbers in another order (the loss of a batch as the sum of two halves,
gradients as the sum of two partial gradients), so per-step losses and final parameters of the
self-attention models agree with one process to 1e-5 (losses relative; parameters and
buffers: the largest difference in a tensor over max(1, its largest magnitude)); ResNet18 with synchronised batch norm
(statistics as sums over ranks) to 1e-4 for the losses and 1e-3 for the parameters and
running statistics, at a learning rate of 0.01: at 0.1 on batches of 20 it amplifies rounding
about 10× per step, in one process as well (a 1e-7 relative nudge of the initial weights moves
its losses by 1e-3 within 10 steps).
The test accuracy of the same weights is exactly the single-process one.
"""

import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import attnconv.experiments.train_cli as cli_mod
from attnconv.experiments.checkpoints import load_run
from attnconv.experiments.data import load_cifar10_sample
from attnconv.experiments.distributed import (
    EXIT_PREEMPTED,
    DistributedSetupError,
    check_world_size,
    eval_batches_of_rank,
    shard_bounds,
)
from attnconv.experiments.models import build_model
from attnconv.experiments.store import (
    CHECKPOINT,
    HISTORY,
    PARTIAL_CHECKPOINT,
    STEPS_CSV,
)
from attnconv.experiments.train import train
from attnconv.experiments.train_config import TrainConfig
from attnconv.experiments.train_step import evaluate

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
TIMEOUT = 150  # seconds, per subprocess
DIST_TIMEOUT = "30"  # seconds a rank waits for the others
LOSS_RTOL, PARAM_RTOL = 1e-5, 1e-5
RESNET_LOSS_RTOL, RESNET_PARAM_RTOL = 1e-4, 1e-3

NO_DROPOUT = dict(
    hidden_dropout=0.0, attention_dropout=0.0
)  # dropout masks are drawn per rank
TINY_ATTENTION = dict(
    hidden_size=8,
    intermediate_size=8,
    num_layers=1,
    num_heads=3,
    downsample=4,
    **NO_DROPOUT,
)
# 600 images in global batches of 20: 30 steps per epoch, 10 images per rank and step
BASE = dict(
    epochs=2,
    batch_size=20,
    eval_batch_size=50,
    data="sample",
    train_subset=600,
    test_subset=200,
    device="cpu",
    seed=3,
)
CONFIGS = {
    "quadratic": TrainConfig(model="quadratic", model_overrides=TINY_ATTENTION, **BASE),
    "learned_content": TrainConfig(
        model="learned_content",
        model_overrides=TINY_ATTENTION,
        **{**BASE, "train_subset": 200},
    ),
    # ResNet18 amplifies rounding ~10× per step at lr 0.1 on batches of 20 (a 1e-7 nudge of the
    # weights of one process moves the losses by 1e-3 within 10 steps): a smaller learning rate
    "resnet18": TrainConfig(
        model="resnet18",
        model_overrides=dict(num_blocks=(1, 1), widths=(8, 16)),
        schedule="step",
        warmup_fraction=0.0,
        milestones=(2,),
        lr=0.01,
        **{**BASE, "train_subset": 200},
    ),
}


# ----------------------------------------------------------------- helpers
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env():
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "OMP_NUM_THREADS": "1",
        "PYTHONUNBUFFERED": "1",
    }


def write_config(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(CONFIGS[name].to_dict()))
    return path


def torchrun_args(nproc: int, port: int, nnodes: int = 1):
    return [
        PYTHON,
        "-m",
        "torch.distributed.run",
        f"--nnodes={nnodes}",
        f"--nproc_per_node={nproc}",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint=127.0.0.1:{port}",
        "--rdzv-id=attnconv-test",
        "--max-restarts=0",
        "--monitor-interval=0.2",
    ]


def train_args(config: Path, run_dir: Path, *extra):
    return [
        "-m",
        "attnconv.train",
        "--config",
        str(config),
        "--run-dir",
        str(run_dir),
        "--no-progress",
        "--csv",
        "--dist-timeout",
        DIST_TIMEOUT,
        *extra,
    ]


def run(cmd, timeout=TIMEOUT):
    p = subprocess.run(
        cmd, cwd=ROOT, env=env(), capture_output=True, text=True, timeout=timeout
    )
    return p.returncode, p.stdout + p.stderr


def torchrun(config: Path, run_dir: Path, nproc: int = 2, *extra):
    return run(torchrun_args(nproc, free_port()) + train_args(config, run_dir, *extra))


def step_losses(run_dir: Path):
    lines = (run_dir / STEPS_CSV).read_text().splitlines()[1:]
    return [float(line.split(",")[2]) for line in lines]


def epochs_without_seconds(history: dict):
    return [{k: v for k, v in e.items() if k != "seconds"} for e in history["epochs"]]


def parameters(run_dir: Path) -> dict:
    return torch.load(run_dir / CHECKPOINT, map_location="cpu", weights_only=False)[
        "model"
    ]


def max_differences(a: Path, b: Path):
    """(max |Δ loss| / |loss| over the steps, max over the parameters and buffers of
    max |Δ| / max(1, max |value|): absolute for tensors below 1, relative above)."""
    la, lb = step_losses(a), step_losses(b)
    assert len(la) == len(lb)
    loss = max(abs(x - y) / abs(y) for x, y in zip(la, lb))
    pa, pb = parameters(a), parameters(b)
    assert pa.keys() == pb.keys()
    param = max(
        float(
            (pa[k].double() - pb[k].double()).abs().max()
            / pb[k].double().abs().max().clamp_min(1.0)
        )
        for k in pa
        if pa[k].numel() and pa[k].is_floating_point()
    )
    return loss, param


def workers_of(pid: int) -> dict:
    """{rank: pid} of the training processes under the launcher ``pid`` (Linux /proc)."""
    found, todo = {}, [pid]
    while todo:
        p = todo.pop()
        try:
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        for c in map(int, children):
            todo.append(c)
            try:
                environ = Path(f"/proc/{c}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            ranks = [e.split(b"=", 1)[1] for e in environ if e.startswith(b"RANK=")]
            if ranks:
                found[int(ranks[0])] = c
    return found


def wait_for(predicate, timeout: float, what: str):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def interrupt(cmd, run_dir: Path, after_steps: int, send, timeout: float = TIMEOUT):
    """Start ``cmd``, wait until the run has logged ``after_steps`` steps, ``send(process)`` a signal,
    and wait up to ``timeout`` s for the end: ``(return code, output, seconds waited after the signal)``."""
    p = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_for(lambda: rows(run_dir) >= after_steps, TIMEOUT, f"{after_steps} steps")
        send(p)
        t0 = time.monotonic()
        out = p.communicate(timeout=timeout)[0]
        return p.returncode, out, time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()


def to_rank_1(signum):
    """A sender for :func:`interrupt`: ``signum`` to rank 1 of a torchrun launcher."""
    return lambda launcher: os.kill(workers_of(launcher.pid)[1], signum)


def rows(run_dir: Path) -> int:
    try:
        return len((run_dir / STEPS_CSV).read_text().splitlines()) - 1
    except OSError:
        return 0


@pytest.fixture(scope="module")
def sample():
    return load_cifar10_sample()


@pytest.fixture(scope="module")
def single(tmp_path_factory, sample):
    """Single-process runs of the three configs (in this process)."""
    out = {}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for name, config in CONFIGS.items():
            run_dir = tmp_path_factory.mktemp("single") / name
            train(config, run_dir, progress=False, verbose=False, data=sample, csv=True)
            out[name] = run_dir
    finally:
        torch.set_num_threads(threads)
    return out


@pytest.fixture(scope="module")
def two_machines(tmp_path_factory):
    """The quadratic config trained by two torchrun launchers with --nnodes 2 (one process each),
    as on two machines, both on 127.0.0.1."""
    tmp = tmp_path_factory.mktemp("two_machines")
    config, run_dir, port = write_config(tmp, "quadratic"), tmp / "run", free_port()
    launchers = [
        subprocess.Popen(
            torchrun_args(1, port, nnodes=2) + train_args(config, run_dir),
            cwd=ROOT,
            env=env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = []
    try:
        for p in launchers:
            outputs.append((p.wait(timeout=TIMEOUT), p.stdout.read()))
    finally:
        for p in launchers:
            if p.poll() is None:
                p.kill()
    for rc, out in outputs:
        assert rc == 0, out
    assert (
        sum("on 2 processes (gloo)" in out for _, out in outputs) == 1
    )  # rank 0 alone speaks
    return run_dir


# ----------------------------------------------------------------- pieces
def test_shards_cover_the_batch_in_order():
    for n in (1, 2, 7, 20, 85, 100):
        for world in (1, 2, 3, 4):
            bounds = [shard_bounds(n, r, world) for r in range(world)]
            assert bounds[0][0] == 0 and bounds[-1][1] == n
            assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
            assert (
                max(hi - lo for lo, hi in bounds) - min(hi - lo for lo, hi in bounds)
                <= 1
            )
    assert sorted(b for r in range(3) for b in eval_batches_of_rank(8, r, 3)) == list(
        range(8)
    )


def test_world_size_must_divide_the_global_batch(tmp_path, monkeypatch, capsys):
    check_world_size(100, 4)
    with pytest.raises(
        DistributedSetupError, match="do not divide the global batch of 100"
    ):
        check_world_size(100, 3)
    monkeypatch.setenv("WORLD_SIZE", "3")
    code = cli_mod.main(
        [
            "--config",
            str(write_config(tmp_path, "quadratic")),
            "--run-dir",
            str(tmp_path / "r"),
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        code == 2
        and len(err) == 1
        and "3 processes do not divide the global batch of 20" in err[-1]
    )
    assert not (tmp_path / "r").exists()


# ----------------------------------------------------------------- equality with one process
def test_two_machines_match_one_process(two_machines, single, sample):
    loss, param = max_differences(two_machines, single["quadratic"])
    print(
        f"quadratic: max relative step-loss difference {loss:.2e}, max parameter difference {param:.2e}"
    )
    assert loss <= LOSS_RTOL and param <= PARAM_RTOL, (loss, param)
    ddp, one = load_run(two_machines).history, load_run(single["quadratic"]).history
    assert [e["test_acc"] for e in ddp["epochs"]] == [
        e["test_acc"] for e in one["epochs"]
    ]
    assert ddp["distributed"]["world_size"] == 2 and "distributed" not in one
    # the sharded evaluation is exactly the single-process one for the same weights
    config = CONFIGS["quadratic"]
    model = build_model(config.model_config())
    model.load_state_dict(parameters(two_machines))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        data = sample.subset(config.train_subset, config.test_subset)
        again = evaluate(model, data.x_test, data.y_test, config.eval_batch_size)
    finally:
        torch.set_num_threads(threads)
    assert again == (ddp["epochs"][-1]["test_loss"], ddp["epochs"][-1]["test_acc"])


@pytest.mark.parametrize(
    "name, loss_rtol, param_rtol",
    [
        ("learned_content", LOSS_RTOL, PARAM_RTOL),
        ("resnet18", RESNET_LOSS_RTOL, RESNET_PARAM_RTOL),
    ],
)
def test_two_processes_match_one_process(tmp_path, single, name, loss_rtol, param_rtol):
    run_dir = tmp_path / "run"
    rc, out = torchrun(write_config(tmp_path, name), run_dir)
    assert rc == 0, out
    loss, param = max_differences(run_dir, single[name])
    print(
        f"{name}: max relative step-loss difference {loss:.2e}, max parameter difference {param:.2e}"
    )
    assert loss <= loss_rtol and param <= param_rtol, (loss, param)
    ddp, one = load_run(run_dir).history, load_run(single[name]).history
    assert [e["test_acc"] for e in ddp["epochs"]] == [
        e["test_acc"] for e in one["epochs"]
    ]
    if name == "resnet18":
        assert ddp["distributed"]["sync_batchnorm"] is True


# ----------------------------------------------------------------- preemption and a dead rank
def test_stop_signal_mid_epoch_then_resume(tmp_path, two_machines):
    """SIGTERM to one worker (as a scheduler signals the job's processes): both ranks finish the
    step, rank 0 saves a mid-epoch checkpoint, both exit 75; --resume gives the uninterrupted
    history exactly."""
    config, run_dir = write_config(tmp_path, "quadratic"), tmp_path / "run"
    rc, out, _ = interrupt(
        torchrun_args(2, free_port()) + train_args(config, run_dir),
        run_dir,
        2,
        to_rank_1(signal.SIGTERM),
    )
    assert rc != 0
    assert f"exitcode  : {EXIT_PREEMPTED}" in out, out
    line = next(l for l in out.splitlines() if l.startswith("preempted:"))
    assert "mid-epoch checkpoint" in line and "--resume" in line
    assert (run_dir / PARTIAL_CHECKPOINT).is_file() and not (
        run_dir / CHECKPOINT
    ).exists()
    stopped_at = rows(run_dir)
    assert 2 <= stopped_at < 30
    rc, out = torchrun(config, run_dir, 2, "--resume")
    assert rc == 0 and f"at step {stopped_at} of epoch 1" in out, out
    assert not (run_dir / PARTIAL_CHECKPOINT).exists()
    resumed, whole = load_run(run_dir).history, load_run(two_machines).history
    assert epochs_without_seconds(resumed) == epochs_without_seconds(whole)
    assert resumed["first_step_losses"] == whole["first_step_losses"]
    assert step_losses(run_dir) == step_losses(two_machines)


def test_single_process_stop_signal(tmp_path, single, sample):
    """Without torchrun: SIGUSR1 → mid-epoch checkpoint, exit 75; --resume → the same run."""
    config = write_config(tmp_path, "quadratic")
    run_dir = tmp_path / "run"
    argv = [
        "--config",
        str(config),
        "--run-dir",
        str(run_dir),
        "--no-progress",
        "--csv",
    ]
    rc, out, _ = interrupt(
        [PYTHON, "-m", "attnconv.train", *argv],
        run_dir,
        2,
        lambda p: p.send_signal(signal.SIGUSR1),
    )
    assert rc == EXIT_PREEMPTED, out
    assert out.strip().splitlines()[-1].startswith("preempted: stopped by SIGUSR1")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert cli_mod.main(argv + ["--resume"]) == 0
    finally:
        torch.set_num_threads(threads)
    assert epochs_without_seconds(load_run(run_dir).history) == epochs_without_seconds(
        load_run(single["quadratic"]).history
    )


def test_dead_rank_stops_the_others(tmp_path, single):
    """kill -9 of rank 1 in epoch 2: rank 0 exits within the timeout with a message, the run
    folder keeps epoch 1, and resuming it with ONE process finishes the run as one process would."""
    config, run_dir = write_config(tmp_path, "quadratic"), tmp_path / "run"
    rc, out, waited = interrupt(
        torchrun_args(2, free_port()) + train_args(config, run_dir),
        run_dir,
        32,
        to_rank_1(signal.SIGKILL),
        timeout=float(DIST_TIMEOUT) + 40,
    )  # 32 steps: epoch 2
    assert rc != 0 and waited < float(DIST_TIMEOUT) + 40
    assert "rank 0: another process of the run died or stopped answering" in out, out
    assert "checkpoint of epoch 1" in out and "--resume" in out
    history = json.loads((run_dir / HISTORY).read_text())
    assert (
        len(history["epochs"]) == 1
        and torch.load(run_dir / CHECKPOINT, weights_only=False)["epoch"] == 1
    )
    rc, out = run(
        [PYTHON] + train_args(config, run_dir, "--resume")
    )  # another N: one process
    assert rc == 0, out
    resumed, one = load_run(run_dir).history, load_run(single["quadratic"]).history
    assert [e["epoch"] for e in resumed["epochs"]] == [1, 2]
    for a, b in zip(resumed["epochs"], one["epochs"]):
        assert math.isclose(a["train_loss"], b["train_loss"], rel_tol=LOSS_RTOL)
        assert a["test_acc"] == b["test_acc"]
    loss, param = max_differences(run_dir, single["quadratic"])
    print(
        f"quadratic, 2 processes then 1: max relative step-loss difference {loss:.2e}, "
        f"max parameter difference {param:.2e}"
    )
    assert loss <= LOSS_RTOL and param <= PARAM_RTOL, (loss, param)
