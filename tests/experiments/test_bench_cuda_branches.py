"""The attention benchmark's CUDA branches (``attnconv.experiments.bench_timing``,
``attnconv.experiments.bench``), run on the CPU with torch.cuda mocked: the
peak memory of a training step from CUDA's allocator (synchronised, the peak reset first), the
machine named by the card, and the training step's bf16 autocast (as CUDA's) when the device is
CUDA."""

from unittest import mock

import torch

from attnconv.experiments import bench, bench_timing


def test_peak_training_memory_reads_cudas_allocator(monkeypatch):
    calls = []
    stats = {"allocated": 100 * 2**20, "peak": 100 * 2**20}

    def step():
        calls.append("step")
        stats["peak"] = 350 * 2**20

    monkeypatch.setattr(
        bench_timing, "_setup", lambda *a, **k: (None, None, None, None, step, None)
    )
    cuda = torch.cuda
    with (
        mock.patch.object(cuda, "synchronize", lambda *a: calls.append("sync")),
        mock.patch.object(
            cuda, "reset_peak_memory_stats", lambda *a: calls.append("reset")
        ),
        mock.patch.object(cuda, "memory_allocated", lambda *a: stats["allocated"]),
        mock.patch.object(cuda, "max_memory_allocated", lambda *a: stats["peak"]),
    ):
        peak = bench_timing.peak_training_memory_mb(
            None, "dense", 4, torch.device("cuda")
        )
    assert peak == 250.0
    assert calls == ["sync", "reset", "step", "sync"]


def test_the_benchmark_names_the_card(monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA H100 PCIe")
    settings = bench.BenchSettings()
    header = bench._benchmark_header(
        settings, torch.device("cuda"), torch.bfloat16, [1.0]
    )
    assert header["machine"]["device"] == "NVIDIA H100 PCIe"
    assert header["machine"]["device_type"] == "cuda"


def test_the_training_step_autocasts_as_cuda_on_a_cuda_device(monkeypatch):
    """``_setup`` on a "cuda" device (tensors made on the CPU, autocast's device mapped to the
    CPU's): the step's forward runs under bf16 autocast, its loss in fp32, the gradients fp32."""
    from attnconv.experiments.models import paper_model_config

    real_autocast, real_randn, real_randint = torch.autocast, torch.randn, torch.randint
    cpu = torch.device("cpu")

    def on_cpu(fn):
        return lambda *a, device=None, **k: fn(*a, device=cpu, **k)

    monkeypatch.setattr(
        torch, "autocast", lambda device_type, **k: real_autocast("cpu", **k)
    )
    monkeypatch.setattr(torch, "randn", on_cpu(real_randn))
    monkeypatch.setattr(torch, "randint", on_cpu(real_randint))
    monkeypatch.setattr(torch.nn.Module, "to", lambda self, *a, **k: self)
    monkeypatch.setattr(bench_timing, "_sync", lambda device: None)
    config = paper_model_config("quadratic", num_layers=1, hidden_size=18)
    dtypes = []
    _, _, model, _, train_step, infer = bench_timing._setup(
        config, "dense", 2, torch.device("cuda")
    )
    model.register_forward_hook(lambda m, a, out: dtypes.append(out.dtype))
    train_step()
    assert dtypes == [torch.bfloat16]
    assert all(
        p.grad.dtype == torch.float32 for p in model.parameters() if p.grad is not None
    )
