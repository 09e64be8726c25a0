"""Benchmark of the attention implementations: ``python -m attnconv.bench``.

For each model variant and each implementation of its attention — ``naive`` (per-head scores,
softmax and an einsum in float32, as the authors' code does), our ``dense`` and our ``local``
(:mod:`attnconv.core.local`) — it measures, side by side in one run:

* training images/s (forward, backward and an SGD step) and inference images/s;
* peak memory of a training step (CUDA: ``max_memory_allocated``; CPU: the growth of the
  resident-memory high-water mark of a fresh process that runs one training step);
* achieved GFLOP/s, counting the FLOPs the implementation performs (attention application
  included, :func:`attnconv.experiments.flops.analytic_macs`; a training step is counted as 3 × the forward),
  against this machine's float32 matrix-product rate measured in the same run;
* ratios of every figure to the naive reference.

It also measures training-step time against the token grid (8×8 … 64×64 tokens), dense against
local. Results are printed and saved as JSON (``--out``); the Performance chapter renders a saved
result. The benchmark runs on CUDA when present (bf16 autocast for training, as in
:mod:`attnconv.experiments.train`).
"""

from __future__ import annotations

import json
import platform
import time
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Sequence

import torch

from ..core.attention import merge_heads
from ..core.precision import autocast_off
from .bench_timing import (
    IMPLEMENTATIONS,
    best_time,
    denormal_check,
    matmul_rate,
    measure_case,
)
from .models import GAUSSIAN_MODELS, paper_model_config

__all__ = [
    "BenchSettings",
    "PRESETS",
    "run_benchmark",
    "accuracy_check",
    "load_result",
    "per_head_merge",
    "merge_heads_comparison",
]


@dataclass
class BenchSettings:
    """What to measure. ``model_overrides`` change the paper's model (e.g. a smaller width)."""

    models: Sequence[str] = ("quadratic", "generalized", "learned")
    implementations: Sequence[str] = IMPLEMENTATIONS
    batch_size: int = 100
    model_overrides: Dict = field(default_factory=dict)
    repeats: int = 3
    grid_sizes: Sequence[int] = (8, 16, 32, 64)
    grid_model: str = "quadratic"
    grid_batch_size: int = 20
    grid_overrides: Dict = field(
        default_factory=lambda: dict(
            hidden_size=64, intermediate_size=128, num_layers=2
        )
    )
    grid_repeats: int = 2
    denormals: bool = True  # naive vs dense with trained-like (narrow) heads
    accuracy_epochs: int = (
        3  # train the CPU-profile quadratic model at 16×16 tokens, dense vs local
    )
    accuracy_tokens: int = 16


PRESETS = {
    # The paper's settings (6 layers, 9 heads, hidden 400, 16×16 tokens, batch 100, float32 on CPU).
    "paper": BenchSettings(repeats=1, grid_repeats=1, accuracy_epochs=2),
    # Seconds instead of minutes: a narrow model and small grids (for a smoke test).
    "quick": BenchSettings(
        batch_size=8,
        model_overrides=dict(hidden_size=32, intermediate_size=64, num_layers=2),
        repeats=1,
        grid_sizes=(8, 16),
        grid_batch_size=4,
        grid_repeats=1,
        accuracy_epochs=0,
        denormals=False,
    ),
}


def _benchmark_header(
    settings: BenchSettings, device: torch.device, dtype, rates: List[float]
) -> dict:
    """The result's skeleton: the machine (its matmul rate filled in at the end) and settings."""
    return {
        "machine": {
            "device": torch.cuda.get_device_name(device)
            if device.type == "cuda"
            else platform.processor() or platform.machine(),
            "device_type": device.type,
            "threads": torch.get_num_threads(),
            "torch": torch.__version__,
            "matmul_dtype": str(dtype).replace("torch.", ""),
            "matmul_gflop_per_s": None,  # filled in at the end: the best of the measurements
            "matmul_measurements": rates,
        },
        "settings": {
            k: (list(v) if isinstance(v, tuple) else v)
            for k, v in asdict(settings).items()
        },
        "models": {},
        "grid": [],
    }


def _benchmark_models(
    settings: BenchSettings, device, dtype, rates: List[float], progress
) -> Dict[str, List[dict]]:
    """Every model of ``settings`` under every implementation, with its ratios to naive."""
    models = {}
    for name in settings.models:
        config = paper_model_config(name, **settings.model_overrides)
        rows = []
        for impl in settings.implementations:
            if impl == "local" and name not in GAUSSIAN_MODELS:
                continue
            rates.append(
                matmul_rate(device, dtype, seconds=2.0)
            )  # re-measured next to every case
            row = measure_case(
                config, impl, settings.batch_size, device, settings.repeats
            )
            rows.append(row)
            progress(
                f"  {name:12s} {impl:6s} train {row['train_images_per_s']:8.1f} img/s  "
                f"infer {row['inference_images_per_s']:8.1f} img/s  "
                f"{row['achieved_gflop_per_s']:7.1f} GFLOP/s (matmul now {rates[-1]:.0f})  "
                f"bwd/fwd {row['backward_over_forward']:.2f}  "
                f"peak {row['peak_memory_mb']:.0f} MB"
            )
        _add_ratios(rows)
        models[name] = rows
    return models


def _benchmark_grid(settings: BenchSettings, device, progress) -> List[dict]:
    """The dense and local training steps at every token grid side of ``settings``."""
    grid = []
    for side in settings.grid_sizes:
        # synthetic images whose space-to-depth gives side×side tokens
        config = paper_model_config(
            settings.grid_model,
            **{**settings.grid_overrides, "image_size": 2 * side, "downsample": 2},
        )
        for impl in ("dense", "local"):
            row = measure_case(
                config,
                impl,
                settings.grid_batch_size,
                device,
                settings.grid_repeats,
                measure_memory=False,
            )
            grid.append(row)
            progress(
                f"  grid {side}×{side} {impl:6s} train step {row['train_step_s']:.3f} s"
            )
    return grid


def _set_matmul_rate(result: dict, rates: List[float], progress) -> None:
    """The machine's rate and every row's fraction of it."""
    # The machine's rate is the best sustained rate seen in this run: a conservative reference
    # (a CPU shared with other work, or clocked down for a while, only lowers single measurements).
    rate = max(rates)
    result["machine"]["matmul_gflop_per_s"] = rate
    for row in [r for rows in result["models"].values() for r in rows] + result["grid"]:
        row["fraction_of_matmul_rate"] = row["achieved_gflop_per_s"] / rate
    progress(
        f"matmul rate: best {rate:.1f} of {len(rates)} measurements ({min(rates):.1f} .. {rate:.1f}) GFLOP/s"
    )


def run_benchmark(
    settings: BenchSettings, device: Optional[torch.device] = None, progress=print
) -> dict:
    """Run every case of ``settings`` side by side and return the results (see the module docstring)."""
    device = device or torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    rates = [matmul_rate(device, dtype)]
    progress(
        f"{device.type}: measured matmul rate {rates[0]:.1f} GFLOP/s ({str(dtype).replace('torch.', '')})"
    )
    result = _benchmark_header(settings, device, dtype, rates)
    result["models"] = _benchmark_models(settings, device, dtype, rates, progress)
    result["grid"] = _benchmark_grid(settings, device, progress)
    if settings.denormals:
        result["denormals"] = denormal_check(device)
        d = result["denormals"]
        progress(
            f"  trained-like heads (spread {d['spread']}): naive {d['naive']:.2f} s, dense {d['dense']:.2f} s per step"
        )
    rates.append(matmul_rate(device, dtype))
    _set_matmul_rate(result, rates, progress)
    if settings.accuracy_epochs:
        result["accuracy"] = accuracy_check(
            settings.accuracy_epochs, settings.accuracy_tokens, device
        )
        progress(
            f"  accuracy after {settings.accuracy_epochs} epochs at {settings.accuracy_tokens}×{settings.accuracy_tokens} "
            f"tokens: "
            + ", ".join(
                f"{k} {v['test_acc']:.3f}" for k, v in result["accuracy"].items()
            )
        )
    return result


def accuracy_check(epochs: int, tokens: int, device: torch.device) -> dict:
    """Train the CPU-profile quadratic model with dense and with local attention (same seed, same
    data, ``tokens``×``tokens`` token grid) and return each run's final accuracies and time."""
    import tempfile

    from .profiles import make_config
    from .train import train

    out = {}
    for impl in ("dense", "local"):
        config = make_config("quadratic", "cpu", epochs=epochs, device=device.type)
        config.model_overrides.update(
            downsample=32 // tokens, attention_implementation=impl
        )
        with tempfile.TemporaryDirectory() as run_dir:
            start = time.perf_counter()
            history = train(config, run_dir, progress=False, verbose=False)
            seconds = time.perf_counter() - start
        last = history["epochs"][-1]
        out[impl] = {
            "test_acc": last["test_acc"],
            "train_loss": last["train_loss"],
            "seconds": seconds,
            "test_acc_per_epoch": [e["test_acc"] for e in history["epochs"]],
        }
    return out


def _add_ratios(rows: List[dict]) -> None:
    ref = next((r for r in rows if r["implementation"] == "naive"), None)
    if ref is None:
        return
    for r in rows:
        r["train_speedup_vs_naive"] = (
            r["train_images_per_s"] / ref["train_images_per_s"]
        )
        r["inference_speedup_vs_naive"] = (
            r["inference_images_per_s"] / ref["inference_images_per_s"]
        )
        r["memory_ratio_vs_naive"] = (
            r["peak_memory_mb"] / ref["peak_memory_mb"]
            if ref["peak_memory_mb"] > 0
            else float("nan")
        )


def load_result(path) -> dict:
    """Read a benchmark result saved with ``--out``."""
    with open(path) as f:
        return json.load(f)


# ---------------------------------------------------------------- merging the heads, before/after
class _PerHeadMerge(torch.autograd.Function):
    """The heads' merge as it was until the one-GEMM :func:`~attnconv.core.attention.merge_heads`:
    Σ_h heads_h W_out^hᵀ + b_out, one ``addmm`` per head into the result (fp32) or into an fp32
    buffer (bf16/fp16), and per-head loops of matrix products backward. Kept here only as the
    "before" of :func:`merge_heads_comparison` and as an oracle in the tests."""

    @staticmethod
    def forward(ctx, heads, weight, bias):
        with autocast_off(heads.device.type):
            w = weight.to(heads.dtype)
            blocks = w.view(w.shape[0], heads.shape[0], heads.shape[2])
            pairs = [
                (heads.select(0, h), blocks.select(1, h).t())
                for h in range(heads.shape[0])
            ]
            wide = heads.dtype in (torch.float32, torch.float64)
            y = torch.zeros(
                heads.shape[1],
                w.shape[0],
                dtype=heads.dtype if wide else torch.float32,
                device=heads.device,
            )
            if bias is not None:
                y += bias.to(y.dtype)
            for head, wh in pairs:
                torch.addmm(y, head, wh, out=y) if wide else y.add_(head @ wh)
            y = y.to(heads.dtype)
        ctx.save_for_backward(heads, weight)
        ctx.bias_dtype = None if bias is None else bias.dtype
        return y

    @staticmethod
    def backward(ctx, grad):
        heads, weight = ctx.saved_tensors
        with autocast_off(heads.device.type):
            grad = grad.to(heads.dtype).contiguous()
            blocks = weight.to(heads.dtype).view(
                weight.shape[0], heads.shape[0], heads.shape[2]
            )
            grad_heads = torch.empty_like(heads)
            grad_blocks = torch.empty_like(blocks)
            for h in range(heads.shape[0]):
                torch.mm(grad, blocks[:, h], out=grad_heads[h])
                grad_blocks[:, h] = grad.t() @ heads[h]
            grad_weight = grad_blocks.view_as(weight).to(weight.dtype)
            grad_bias = None
            if ctx.bias_dtype is not None:
                grad_bias = grad.sum(0, dtype=torch.float32).to(ctx.bias_dtype)
        return grad_heads, grad_weight, grad_bias


def per_head_merge(heads, weight, bias):
    """The old merge (:class:`_PerHeadMerge`), for comparisons."""
    return _PerHeadMerge.apply(heads, weight, bias)


def merge_heads_comparison(
    tokens: int = 256,
    batch: int = 100,
    num_heads: int = 9,
    hidden: int = 400,
    repeats: int = 5,
    device: Optional[torch.device] = None,
    dtype: torch.dtype = torch.float32,
) -> dict:
    """One attention layer's merge of the heads at paper size (16×16 tokens, batch 100, 9 heads of
    44, D_out 400), forward + backward, the old per-head sum against the one-GEMM merge, side by
    side in one run (best of ``repeats``), with the largest difference of their outputs and
    gradients and each one's estimated memory traffic (bytes read and written by the kernels,
    counted from the shapes)."""
    device = device or torch.device("cpu")
    head_dim = hidden // num_heads
    n = tokens * batch
    g = torch.Generator().manual_seed(0)
    heads = torch.randn(num_heads, n, head_dim, generator=g).to(device, dtype)
    weight = (torch.randn(hidden, num_heads * head_dim, generator=g) / 20).to(device)
    bias = torch.randn(hidden, generator=g).to(device)
    grad = torch.randn(n, hidden, generator=g).to(device, dtype)
    out = {}
    results = {}
    for name, merge in (
        ("per-head sum (before)", per_head_merge),
        ("one GEMM", merge_heads),
    ):
        leaves = [t.clone().requires_grad_() for t in (heads, weight, bias)]

        def step():
            for t in leaves:
                t.grad = None
            merge(*leaves).backward(grad)

        seconds = best_time(step, device, repeats)
        y = merge(*leaves).detach()
        step()
        results[name] = [y] + [t.grad.clone() for t in leaves]
        out[name] = {"ms": 1e3 * seconds}
    a, b = results.values()
    out["max_relative_difference"] = max(
        ((x.double() - y.double()).abs().max() / y.double().abs().max()).item()
        for x, y in zip(a, b)
    )
    size = heads.element_size()
    h_bytes, y_bytes = n * num_heads * head_dim * size, n * hidden * size
    acc = 4 if dtype in (torch.float32, torch.float64) else 4
    out["per-head sum (before)"]["estimated_mb"] = (
        # forward: N_h read-modify-writes of the (fp32) output, heads read once
        num_heads * 2 * n * hidden * acc
        + h_bytes
        # backward: grad read per head twice, heads read, heads' grad written
        + 2 * num_heads * y_bytes
        + 2 * h_bytes
    ) / 1e6
    out["one GEMM"]["estimated_mb"] = (
        # forward: heads copied side by side (read + write), read by the GEMM, output written
        3 * h_bytes
        + y_bytes
        # backward: grad read twice, heads read, grad of the side-by-side heads written and
        # copied back to the heads' layout
        + 2 * y_bytes
        + 4 * h_bytes
    ) / 1e6
    out["shape"] = dict(
        tokens=tokens,
        batch=batch,
        num_heads=num_heads,
        head_dim=head_dim,
        hidden=hidden,
    )
    out["dtype"] = str(dtype).replace("torch.", "")
    out["device"] = str(device)
    out["threads"] = torch.get_num_threads()
    return out
