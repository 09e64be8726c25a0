"""Every model trains, evaluates and resumes under bf16 autocast, on the CPU (CPU bf16 autocast
runs the code path of CUDA bf16 autocast: ``TrainConfig(precision="bf16")``), and the training
step never waits for the device (counted on the CPU)."""

import math

import pytest
import torch
from conftest import synthetic_cifar
from torch.overrides import TorchFunctionMode

from attnconv.experiments.checkpoints import load_run
from attnconv.experiments.models import build_model
from attnconv.experiments.train import train
from attnconv.experiments.train_config import (
    TrainConfig,
    make_optimizer,
    make_scheduler,
)
from attnconv.experiments.train_step import train_epoch

TINY = dict(hidden_size=8, intermediate_size=8, num_layers=1, num_heads=3, downsample=4)
MODELS = {
    "quadratic": ("quadratic", TINY),
    "generalized": ("generalized", TINY),
    "learned": ("learned", TINY),
    "learned_content": ("learned_content", TINY),
    "resnet18": ("resnet18", dict(widths=(4, 4, 8, 8))),
    "16 heads": ("quadratic", {**TINY, "hidden_size": 16, "num_heads": 16}),
    "local": ("quadratic", {**TINY, "attention_implementation": "local"}),
    "local generalized": (
        "generalized",
        {**TINY, "attention_implementation": "local"},
    ),
}


def config(name, **kw):
    model, overrides = MODELS[name]
    base = dict(
        model=model,
        model_overrides=overrides,
        epochs=2,
        batch_size=10,
        eval_batch_size=16,
        data="sample",
        device="cpu",
        seed=2,
        precision="bf16",
    )
    base.update(kw)
    if base["precision"] is None:  # the default (also what configs before it had)
        del base["precision"]
    return TrainConfig(**base)


@pytest.fixture(scope="module")
def data():
    return synthetic_cifar(30, 12)


def numbers(history):
    return [
        (e["train_loss"], e["train_acc"], e["test_loss"], e["test_acc"])
        for e in history["epochs"]
    ]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_trains_evaluates_and_resumes_in_bf16(tmp_path, data, name):
    cfg = config(name)
    whole = train(cfg, tmp_path / "whole", progress=False, data=data, verbose=False)
    assert whole["precision"] == "bf16" and whole["device"] == "cpu"
    assert all(math.isfinite(v) for e in numbers(whole) for v in e) and all(
        math.isfinite(v) for v in whole["first_step_losses"]
    )
    train(cfg, tmp_path / "cut", progress=False, data=data, verbose=False, stop_after=1)
    resumed = train(
        cfg, tmp_path / "cut", resume=True, progress=False, data=data, verbose=False
    )
    assert numbers(resumed) == numbers(whole)
    run = load_run(tmp_path / "cut", load_model=True)
    assert all(p.dtype == torch.float32 for p in run.model.parameters())


@pytest.mark.parametrize("name", sorted(MODELS))
def test_bf16_step_gives_fp32_gradients(name):
    """One step under CPU bf16 autocast: the loss is finite, the logits bf16 where the model has
    a bf16 matrix product last, and every parameter's gradient fp32 and finite."""
    cfg = config(name)
    torch.manual_seed(0)
    model = build_model(cfg.model_config())
    x = torch.randn(6, 3, 32, 32)
    y = torch.randint(0, 10, (6,))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.float(), y)
    loss.backward()
    assert logits.dtype == torch.bfloat16 and torch.isfinite(loss)
    for p in model.parameters():
        if p.requires_grad:
            assert p.grad is not None and p.grad.dtype == torch.float32
            assert torch.isfinite(p.grad).all()


def test_bf16_losses_track_fp32(tmp_path, data):
    """bf16 autocast changes the numbers by its rounding only: the first step's loss within 2 %
    of fp32's (same weights, same batch)."""
    h32 = train(
        config("quadratic", precision="fp32", epochs=1),
        tmp_path / "a",
        progress=False,
        data=data,
        verbose=False,
    )
    h16 = train(
        config("quadratic", epochs=1),
        tmp_path / "b",
        progress=False,
        data=data,
        verbose=False,
    )
    assert h32["precision"] == "fp32"
    assert h16["first_step_losses"][0] == pytest.approx(
        h32["first_step_losses"][0], rel=0.02
    )
    assert h16["first_step_losses"] != h32["first_step_losses"]


# ----------------------------------------------------------------- host synchronisation
class SyncCounter(TorchFunctionMode):
    """Counts the calls that make the host wait for a CUDA device: reading a value
    (``item``, ``bool``, ``int``, ``float``, ``tolist``, ``numpy``), moving a tensor to the host
    (``cpu``) or to a device (``to`` with a device, ``cuda``), and making a tensor from
    Python data (``torch.tensor``/``as_tensor``: a host→device copy on CUDA). On the CPU nothing
    waits, but the calls are the same as on CUDA: the count is what a GPU would pay."""

    READS = {
        torch.Tensor.item,
        torch.Tensor.__bool__,
        torch.Tensor.__int__,
        torch.Tensor.__float__,
        torch.Tensor.__index__,
        torch.Tensor.tolist,
        torch.Tensor.numpy,
        torch.Tensor.cpu,
        torch.Tensor.cuda,
        torch.tensor,
        torch.as_tensor,
    }
    MOVES = {torch.Tensor.to}

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_function__(self, func, _types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in self.READS or (func in self.MOVES and self._moves(args, kwargs)):
            self.calls.append(getattr(func, "__name__", str(func)))
        return func(*args, **kwargs)

    @staticmethod
    def _moves(args, kwargs):
        targets = list(args[1:]) + list(kwargs.values())
        return any(isinstance(t, (torch.device, str, torch.Tensor)) for t in targets)


def count_epoch_syncs(name, n_train, precision=None):
    cfg = config(name, precision=precision)
    data = synthetic_cifar(n_train, 4)
    torch.manual_seed(0)
    model = build_model(cfg.model_config())
    opt = make_optimizer(model, cfg)
    steps = math.ceil(n_train / cfg.batch_size)
    sched = make_scheduler(opt, cfg, steps)
    device = torch.device("cpu")
    train_epoch(
        model, data, cfg, opt, sched, 1, device
    )  # constants cached on the device
    with SyncCounter() as counter:
        train_epoch(model, data, cfg, opt, sched, 2, device)
    return counter.calls


@pytest.mark.parametrize(
    "name,precision",
    [
        ("quadratic", None),
        ("generalized", "bf16"),
        ("learned", "bf16"),
        ("learned_content", None),
        ("resnet18", "bf16"),
    ],
)
def test_no_host_sync_inside_a_training_step(name, precision):
    """The calls that would make a CUDA host wait are the same for an epoch of 3 and of 9 steps:
    none of them is inside a step (the epoch's draws are copied once, the non-finite check and
    the recorded losses are read once, at the end of the epoch). Local attention is left out: it
    sizes its windows on the host from the encodings' values, one read per layer and step
    (counted by tests/core/test_local_host_reads.py)."""
    short = count_epoch_syncs(name, 30, precision)
    long = count_epoch_syncs(name, 90, precision)
    assert long == short, f"per-step syncs: {sorted(set(long) - set(short)) or long}"
    assert len(short) <= 12, short


def test_step_losses_reach_on_step_one_step_late(monkeypatch):
    """``--csv``/``--tensorboard`` log every step's loss: it is read when the next step has been
    queued (so a CUDA device never drains to hand it over), the last one at the end of the
    epoch, and the values are the steps' losses."""
    from attnconv.experiments import train_step

    events = []
    real = train_step._single_step

    def spy(model, batches, step, *rest):
        out = real(model, batches, step, *rest)
        events.append(("queued", step))
        return out

    monkeypatch.setattr(train_step, "_single_step", spy)
    cfg = config("quadratic")
    data = synthetic_cifar(3 * cfg.batch_size, 4)
    torch.manual_seed(0)
    model = build_model(cfg.model_config())
    opt = make_optimizer(model, cfg)
    recorded = []
    train_epoch(
        model,
        data,
        cfg,
        opt,
        make_scheduler(opt, cfg, 3),
        1,
        torch.device("cpu"),
        step_losses=recorded,
        on_step=lambda step, loss: events.append(("read", step, loss)),
    )
    order = [e[:2] for e in events]
    assert order == [
        ("queued", 0),
        ("queued", 1),
        ("read", 0),
        ("queued", 2),
        ("read", 1),
        ("read", 2),
    ]
    reads = [e[2] for e in events if e[0] == "read"]
    assert all(isinstance(v, float) for v in reads) and reads == recorded[:3]


def test_fp16_with_the_grad_scaler_trains_and_skips_an_overflowing_step():
    """The path of a card without bf16 (fp16 autocast and a gradient scaler), run on the CPU:
    the scaler's scaled backward, step and update train the model; a step whose gradients
    overflow (an infinite loss) is skipped and the scale halved, the parameters unchanged."""
    from attnconv.experiments import train_step
    from attnconv.experiments.device import resolve_precision

    cpu = torch.device("cpu")
    precision = resolve_precision(cpu, precision="fp16")
    scaler = precision.grad_scaler()
    assert precision.dtype == torch.float16 and scaler is not None
    cfg = config("quadratic", precision="fp16")
    data = synthetic_cifar(2 * cfg.batch_size, 4)
    torch.manual_seed(0)
    model = build_model(cfg.model_config())
    opt = make_optimizer(model, cfg)
    sched = make_scheduler(opt, cfg, 2)
    before = [p.detach().clone() for p in model.parameters()]
    loss, _ = train_epoch(model, data, cfg, opt, sched, 1, cpu, scaler=scaler)
    assert math.isfinite(loss) and scaler.get_scale() == 2.0**16
    after = [p.detach().clone() for p in model.parameters()]
    assert any(not torch.equal(a, b) for a, b in zip(before, after))
    x = torch.zeros(2, 3, 32, 32)
    with precision.autocast():
        bad, _ = train_step.compute_loss(model, x, torch.tensor([0, 1]))
    train_step._backward_and_step(bad * float("inf"), opt, sched, scaler)
    assert scaler.get_scale() == 2.0**15
    assert all(torch.equal(a, p) for a, p in zip(after, model.parameters()))
