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

import argparse
import json
import platform
import time
import warnings
from dataclasses import asdict, dataclass, field, replace
from typing import Dict, List, Mapping, Optional, Sequence

import torch
import torch.nn.functional as F

from ..core.attention import MultiHeadSelfAttention, merge_heads
from ..core.precision import autocast_off
from .flops import analytic_macs
from .models import (
    GAUSSIAN_MODELS,
    SelfAttentionConfig,
    build_model,
    paper_model_config,
)

__all__ = [
    "BenchSettings",
    "PRESETS",
    "matmul_rate",
    "set_attention_implementation",
    "measure_case",
    "run_benchmark",
    "accuracy_check",
    "format_table",
    "model_table",
    "grid_table",
    "MODEL_COLUMNS",
    "GRID_COLUMNS",
    "load_result",
    "plot_grid_sweep",
    "plot_throughput",
    "BOOK_CASES",
    "load_reference",
    "compare_with_reference",
    "comparison_table",
    "COMPARISON_COLUMNS",
    "book_run_hours",
    "sparse_dropout_correction",
    "case_label",
    "per_head_merge",
    "merge_heads_comparison",
    "main",
]

IMPLEMENTATIONS = ("naive", "dense", "local")


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


def matmul_rate(
    device: torch.device,
    dtype: torch.dtype = torch.float32,
    size: int = 2048,
    seconds: float = 4.0,
) -> float:
    """This machine's *sustained* matrix-product rate in GFLOP/s: size×size products repeated for
    about ``seconds`` (after a warm-up), total FLOPs over total time. Sustained rather than best-of,
    because a training step also runs for seconds and shared or turbo-clocked CPUs vary by ±30%
    between single products."""
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    a @ b
    _sync(device)
    count, start = 0, time.perf_counter()
    while True:
        a @ b
        count += 1
        if count % 4 == 0:
            _sync(device)
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                return 2 * size**3 * count / elapsed / 1e9


def set_attention_implementation(model: torch.nn.Module, implementation: str) -> None:
    """Switch every attention layer of ``model`` to ``implementation`` ("naive", "dense", "local")."""
    layers = [m for m in model.modules() if isinstance(m, MultiHeadSelfAttention)]
    if not layers:
        raise ValueError("the model has no attention layer")
    for m in layers:
        m.implementation = implementation


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _resident_mb(field: str) -> float:
    """A field of /proc/self/status (VmRSS, VmHWM) in MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"{field} not found in /proc/self/status")


def _cpu_step_peak_mb(
    config_dict: dict, implementation: str, batch_size: int, queue
) -> None:
    """In a fresh process: how far one training step raises resident memory above where it was.

    Uses the kernel's per-process high-water mark VmHWM, reset just before the step (writing 5 to
    /proc/self/clear_refs); ``ru_maxrss`` would not do, as it keeps the parent's peak across exec."""
    from .models import model_config_from_dict

    config = model_config_from_dict(config_dict)
    *_, train_step, _ = _setup(config, implementation, batch_size, torch.device("cpu"))
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = _resident_mb("VmRSS")
    train_step()
    queue.put(_resident_mb("VmHWM") - before)


def peak_training_memory_mb(
    config: SelfAttentionConfig,
    implementation: str,
    batch_size: int,
    device: torch.device,
) -> float:
    """Peak extra memory of one training step in MB (CUDA allocator peak; CPU: fresh-process RSS)."""
    if device.type == "cuda":
        *_, train_step, _ = _setup(config, implementation, batch_size, device)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        train_step()
        torch.cuda.synchronize()
        return (torch.cuda.max_memory_allocated() - base) / 2**20
    import multiprocessing as mp

    from .models import model_config_to_dict

    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(
        target=_cpu_step_peak_mb,
        args=(model_config_to_dict(config), implementation, batch_size, queue),
    )
    proc.start()
    peak = queue.get()
    proc.join()
    return peak


def _setup(
    config: SelfAttentionConfig,
    implementation: str,
    batch_size: int,
    device: torch.device,
    seed: int = 0,
):
    torch.manual_seed(seed)
    model = build_model(replace(config, attention_implementation="dense")).to(device)
    set_attention_implementation(model, implementation)
    side = config.image_size
    images = torch.randn(batch_size, config.in_channels, side, side, device=device)
    labels = torch.randint(0, config.num_classes, (batch_size,), device=device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    amp = (
        torch.autocast("cuda", dtype=torch.bfloat16)
        if device.type == "cuda"
        else torch.autocast("cpu", enabled=False)
    )

    def train_step(timings=None):
        model.train()
        optimizer.zero_grad(set_to_none=True)
        t0 = time.perf_counter()
        with amp:
            loss = F.cross_entropy(model(images), labels)
        _sync(device)
        t1 = time.perf_counter()
        loss.backward()
        _sync(device)
        t2 = time.perf_counter()
        optimizer.step()
        if timings is not None:
            timings.append((t1 - t0, t2 - t1))

    @torch.no_grad()
    def infer():
        model.eval()
        with amp:
            model(images)

    return images, labels, model, optimizer, train_step, infer


def _time(fn, device, repeats: int) -> float:
    fn()  # warm-up
    _sync(device)
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        _sync(device)
        best = min(best, time.perf_counter() - t)
    return best


def measure_case(
    config: SelfAttentionConfig,
    implementation: str,
    batch_size: int,
    device: torch.device,
    repeats: int,
    seed: int = 0,
    measure_memory: bool = True,
) -> dict:
    """Time one model configuration with one attention implementation (training and inference)."""
    *_, train_step, infer = _setup(config, implementation, batch_size, device, seed)
    phases = []
    train_s = _time(lambda: train_step(phases), device, repeats)
    forward_s, backward_s = min(
        phases[1:] or phases
    )  # the fastest timed step's forward and backward
    infer_s = _time(infer, device, repeats)
    peak = (
        peak_training_memory_mb(config, implementation, batch_size, device)
        if measure_memory
        else float("nan")
    )
    macs = analytic_macs(
        config, implementation="local" if implementation == "local" else "dense"
    )
    train_flops = 3 * 2 * macs.total * batch_size
    return {
        "implementation": implementation,
        "batch_size": batch_size,
        "tokens": config.tokens_per_side,
        "train_step_s": train_s,
        "forward_s": forward_s,
        "backward_s": backward_s,
        "backward_over_forward": backward_s / forward_s,
        "train_images_per_s": batch_size / train_s,
        "inference_images_per_s": batch_size / infer_s,
        "peak_memory_mb": peak,
        "train_gflops_per_step": train_flops / 1e9,
        "achieved_gflop_per_s": train_flops / train_s / 1e9,
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


def denormal_check(
    device: torch.device,
    spread: float = 3.0,
    num_layers: int = 2,
    batch_size: int = 100,
    repeats: int = 2,
) -> dict:
    """Training-step time of the quadratic model at the paper's width with *trained-like* heads
    (every spread set to ``spread``, α = spread²/2, so most probabilities fall below e^-87):
    naive (no flush) against dense (denormals flushed), side by side, plus the fraction of
    probabilities that are float32 denormals in a plain softmax."""
    config = paper_model_config("quadratic", num_layers=num_layers)
    out = {"spread": spread, "num_layers": num_layers, "batch_size": batch_size}
    for impl in ("naive", "dense"):
        _, _, model, _, train_step, _ = _setup(config, impl, batch_size, device)
        with torch.no_grad():
            for layer in model.layers:
                layer.attention.encoding.spread.fill_(spread)
        out[impl] = _time(train_step, device, repeats)
        if impl == "naive":
            att = model.layers[0].attention
            scores = att.attention_scores(
                torch.zeros(1, att.in_channels, *config.grid, device=device)
            )
            p = torch.softmax(scores.float(), -1)
            out["denormal_fraction"] = float(
                ((p > 0) & (p < torch.finfo(torch.float32).tiny)).float().mean()
            )
    out["dense_speedup"] = out["naive"] / out["dense"]
    return out


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


MODEL_COLUMNS = (
    "model",
    "impl",
    "train img/s",
    "infer img/s",
    "peak MB",
    "GFLOP/s",
    "% matmul",
    "bwd/fwd",
    "train ×",
    "infer ×",
    "mem ×",
)
GRID_COLUMNS = ("tokens", "dense s/step", "local s/step", "local ×")


def model_table(
    result: dict, columns: Sequence[str] = MODEL_COLUMNS
) -> List[List[str]]:
    """The models part of a result as rows of formatted cells, for ``columns`` (a subset of
    :data:`MODEL_COLUMNS`, in any order)."""
    nan = float("nan")
    unknown = set(columns) - set(MODEL_COLUMNS)
    if unknown:
        raise ValueError(
            f"unknown columns {sorted(unknown)}; choose from {MODEL_COLUMNS}"
        )
    out = []
    for name, rows in result["models"].items():
        for r in rows:
            cells = dict(
                zip(
                    MODEL_COLUMNS,
                    [
                        name,
                        r["implementation"],
                        f"{r['train_images_per_s']:.1f}",
                        f"{r['inference_images_per_s']:.1f}",
                        f"{r['peak_memory_mb']:.0f}",
                        f"{r['achieved_gflop_per_s']:.1f}",
                        f"{100 * r['fraction_of_matmul_rate']:.0f}%",
                        f"{r['backward_over_forward']:.2f}",
                        f"{r.get('train_speedup_vs_naive', nan):.2f}",
                        f"{r.get('inference_speedup_vs_naive', nan):.2f}",
                        f"{r.get('memory_ratio_vs_naive', nan):.2f}",
                    ],
                )
            )
            out.append([cells[c] for c in columns])
    return out


def grid_table(result: dict) -> List[List[str]]:
    """The token-grid sweep of a result as rows of formatted cells (columns :data:`GRID_COLUMNS`)."""
    by_side: Dict[int, Dict[str, float]] = {}
    for r in result["grid"]:
        by_side.setdefault(r["tokens"], {})[r["implementation"]] = r["train_step_s"]
    nan = float("nan")
    return [
        [
            f"{side}×{side}",
            f"{t.get('dense', nan):.3f}",
            f"{t.get('local', nan):.3f}",
            f"{t.get('dense', nan) / t.get('local', nan):.2f}",
        ]
        for side, t in sorted(by_side.items())
    ]


def _text_table(columns, rows, left: int = 1) -> List[str]:
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]
    line = lambda cells: "  ".join(
        c.ljust(w) if i < left else c.rjust(w)
        for i, (c, w) in enumerate(zip(cells, widths))
    )
    return [line(columns)] + [line(r) for r in rows]


def format_table(result: dict) -> str:
    """A plain-text table of a benchmark result for the terminal (the models part, then the grid
    sweep); the book renders :func:`model_table` and :func:`grid_table` as HTML tables."""
    m = result["machine"]
    lines = [
        f"device: {m['device']} ({m['device_type']}, {m['threads']} threads), matmul "
        f"{m['matmul_gflop_per_s']:.1f} GFLOP/s {m['matmul_dtype']}"
    ]
    lines += _text_table(MODEL_COLUMNS, model_table(result), left=2)
    if result["grid"]:
        lines += [""] + _text_table(GRID_COLUMNS, grid_table(result))
    return "\n".join(lines)


def load_result(path) -> dict:
    """Read a benchmark result saved with ``--out``."""
    with open(path) as f:
        return json.load(f)


def plot_grid_sweep(result: dict, ax=None, colours: Optional[Mapping[str, str]] = None):
    """Training-step time against the token grid, dense and local (log–log), from a result;
    ``colours``: implementation → colour (the chapters pass the book's)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.6))
    for impl, style in (("dense", "o-"), ("local", "s-")):
        rows = sorted(
            (r for r in result["grid"] if r["implementation"] == impl),
            key=lambda r: r["tokens"],
        )
        ax.plot(
            [r["tokens"] for r in rows],
            [r["train_step_s"] for r in rows],
            style,
            label=impl,
            color=(colours or {}).get(impl),
        )
    sides = sorted({r["tokens"] for r in result["grid"]})
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sides, [f"{s}×{s}" for s in sides])
    ax.set_xlabel("token grid")
    ax.set_ylabel("training step (s)")
    s = result["settings"]
    ax.set_title(
        f"batch {s['grid_batch_size']}, {s['grid_overrides']['num_layers']} layers, "
        f"hidden {s['grid_overrides']['hidden_size']}",
        fontsize=9,
    )
    ax.legend()
    ax.grid(alpha=0.3, which="both")
    return ax.figure


def plot_throughput(result: dict, ax=None, colours: Optional[Mapping[str, str]] = None):
    """Training images/s per model and implementation, from a result; ``colours``:
    implementation → colour (the chapters pass the book's)."""
    import matplotlib.pyplot as plt
    import numpy as np

    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 3.4), layout="constrained")
    models = list(result["models"])
    width = 0.25
    for i, impl in enumerate(IMPLEMENTATIONS):
        vals = [
            next(
                (
                    r["train_images_per_s"]
                    for r in result["models"][m]
                    if r["implementation"] == impl
                ),
                np.nan,
            )
            for m in models
        ]
        ax.bar(
            np.arange(len(models)) + (i - 1) * width,
            vals,
            width,
            label=impl,
            color=(colours or {}).get(impl),
        )
    ax.set_xticks(np.arange(len(models)), models)
    ax.set_ylabel("training images / s")
    ax.legend(
        title="implementation",
        loc="upper left",
        bbox_to_anchor=(1.01, 1),
        frameon=False,
    )
    ax.grid(axis="y", alpha=0.3)
    return ax.figure


# --------------------------------------------------------------------------- against a reference commit
#: The book's training cases (its saved runs under book/runs/deep and book/runs/cpu): (profile,
#: model, model overrides), each as its profile trains it (the ``deep`` quadratic models with local
#: attention, the others dense). The ``deep`` profile has no learned + content run.
BOOK_CASES = tuple(
    (profile, model, overrides)
    for profile, model, overrides in (
        ("deep", "quadratic", {}),
        ("deep", "generalized", {}),
        ("deep", "learned", {}),
        ("deep", "quadratic", {"num_heads": 16}),
        ("cpu", "quadratic", {}),
        ("cpu", "generalized", {}),
        ("cpu", "learned", {}),
        ("cpu", "learned_content", {}),
        ("cpu", "quadratic", {"num_heads": 16}),
    )
)


def load_reference(checkout, name: str = "attnconv_reference"):
    """Import the ``attnconv`` package of another checkout (e.g. ``git worktree add ../ref 30b81eb``)
    under the name ``name``, beside this one, so that both can be timed in one process. Works
    because the package imports itself only relatively."""
    import importlib.util
    import sys
    from pathlib import Path

    if name in sys.modules:
        return sys.modules[name]
    root = Path(checkout) / "attnconv"
    if not (root / "__init__.py").is_file():
        raise FileNotFoundError(f"{checkout} holds no attnconv package")
    spec = importlib.util.spec_from_file_location(
        name, root / "__init__.py", submodule_search_locations=[str(root)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _case_step(
    package: str, profile: str, model: str, overrides: dict, batch_size: int
):
    """A training step (forward, backward, the profile's SGD step) of ``package``'s model for a
    case, on fixed random images; returns (step, model config). Built from seed 0, so that two
    packages build the same model."""
    import importlib

    profiles = importlib.import_module(f"{package}.experiments.profiles")
    models = importlib.import_module(f"{package}.experiments.models")
    train = importlib.import_module(f"{package}.experiments.train")
    config = profiles.make_config(model, profile)
    config.model_overrides.update(overrides)
    torch.manual_seed(0)
    net = models.build_model(config.model_config())
    optimizer = train.make_optimizer(net, config)
    gen = torch.Generator().manual_seed(1)
    images = torch.randn(batch_size, 3, 32, 32, generator=gen)
    labels = torch.randint(0, 10, (batch_size,), generator=gen)

    def step() -> float:
        loss = F.cross_entropy(net(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return float(loss.detach())

    return step, config.model_config()


def _op_breakdown(step, top: int = 8) -> List[dict]:
    """Share of self CPU time per ATen op over one training step (``torch.profiler``)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    events = [e for e in prof.key_averages() if e.key.startswith("aten::")]
    total = sum(e.self_cpu_time_total for e in prof.key_averages()) or 1.0
    events.sort(key=lambda e: e.self_cpu_time_total, reverse=True)
    return [
        {"op": e.key, "share": e.self_cpu_time_total / total, "calls": e.count}
        for e in events[:top]
    ]


def _step_worker(
    conn,
    reference,
    profile: str,
    model: str,
    overrides: dict,
    batch_size: int,
    threads: int,
    retain: bool,
) -> None:
    """One side of :func:`compare_with_reference`, in a process of its own: builds the case's
    training step with the ``attnconv`` of ``reference`` (a checkout; ``None``: this one) and
    answers the parent's requests until told to stop. ``retain``: keep freed memory
    (:func:`~attnconv.experiments.allocator.retain_freed_memory`), as this code's ``train`` does."""
    import resource

    from .allocator import retain_freed_memory

    torch.set_num_threads(threads)
    retained = retain_freed_memory() if retain else False
    package = __package__.rsplit(".", 1)[0]
    if reference is not None:
        load_reference(reference)
        package = "attnconv_reference"
    step, config = _case_step(package, profile, model, overrides, batch_size)
    conn.send({"config": asdict(config), "retains_freed_memory": retained})
    while True:
        request, seed = conn.recv()
        if request == "stop":
            conn.close()
            return
        torch.manual_seed(seed)
        if request == "step":
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            start = time.perf_counter()
            loss = step()
            seconds = time.perf_counter() - start
            conn.send(
                (
                    seconds,
                    loss,
                    resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults,
                )
            )
        else:  # "breakdown"
            conn.send(_op_breakdown(step))


def sparse_dropout_correction(
    heads: int = 9,
    tokens: int = 256,
    columns: int = 3200,
    dropout: float = 0.1,
    repeats: int = 5,
    seed: int = 0,
) -> dict:
    """What the one exact route to fewer products for dense position-only attention would cost.

    A head's probabilities P factorise over rows and columns (R ⊗ C, what the local path uses),
    but attention dropout multiplies them by an unstructured mask M; the same masks would need
    P ⊙ M = P − P ⊙ (1 − M): the cheap factorised product minus a sparse one holding the dropped
    ``dropout`` share of the entries, in the forward pass and again for the gradients. This times,
    at the ``deep`` learned model's shapes (``(N_h·T) × T`` probabilities applied to ``T × B·C``
    values), the dense product against the sparse one with the dropped entries (CSR and COO, torch's
    sparse kernels), and the sampled product that the gradient of the kept entries would need
    (``torch.sparse.sampled_addmm``, CSR) against the dense gradient product: medians of
    ``repeats``, alternating, at the current thread count. A ratio near or above ``1 − dropout``
    means the sparse correction alone costs about what the whole dense product does."""
    import statistics

    gen = torch.Generator().manual_seed(seed)
    probs = torch.rand(heads * tokens, tokens, generator=gen)
    values = torch.randn(tokens, columns, generator=gen)
    grad = torch.randn(heads * tokens, columns, generator=gen)
    dropped = probs * (torch.rand(probs.shape, generator=gen) < dropout)
    csr, coo = dropped.to_sparse_csr(), dropped.to_sparse_coo()
    pattern = torch.sparse_csr_tensor(
        csr.crow_indices(), csr.col_indices(), torch.ones_like(csr.values()), csr.shape
    )
    cases = {
        "dense_product": lambda: probs @ values,
        "csr_product": lambda: csr @ values,
        "coo_product": lambda: torch.sparse.mm(coo, values),
        "dense_gradient": lambda: grad @ values.t(),
        "sampled_gradient": lambda: torch.sparse.sampled_addmm(
            pattern, grad, values.t()
        ),
    }
    times = {k: [] for k in cases}
    for fn in cases.values():
        fn()  # warm-up
    for r in range(repeats):
        for key in list(cases) if r % 2 == 0 else list(reversed(cases)):
            start = time.perf_counter()
            cases[key]()
            times[key].append(time.perf_counter() - start)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "shape": {
            "heads": heads,
            "tokens": tokens,
            "columns": columns,
            "dropout": dropout,
            "stored_entries": int(csr.values().numel()),
        },
        "seconds": med,
        "csr_over_dense": med["csr_product"] / med["dense_product"],
        "coo_over_dense": med["coo_product"] / med["dense_product"],
        "sampled_over_dense_gradient": med["sampled_gradient"] / med["dense_gradient"],
    }


def _answer(conn, side: str, case: str):
    """The next answer of a :func:`_step_worker`, or a clear error if it died."""
    try:
        return conn.recv()
    except EOFError:
        raise RuntimeError(
            f"the {side!r} process of case {case!r} died (its error is above)"
        ) from None


def _comparison_header(reference, batch_size: int, repeats: int) -> dict:
    """The result's skeleton of :func:`compare_with_reference`: the machine and the settings."""
    import os

    return {
        "machine": {
            "device": platform.processor() or platform.machine(),
            "torch": torch.__version__,
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "(unset)"),
            "load_average_at_start": os.getloadavg()[0],
        },
        "reference": str(reference),
        "batch_size": batch_size,
        "repeats": repeats,
        "sides": "one process each; after keeps freed memory (retain_freed_memory), before does not",
        "rows": [],
    }


def _start_worker(spawn, checkout, retain: bool, case, batch_size: int, threads: int):
    """Start one :func:`_step_worker` process for ``case``: ``(process, parent end of its pipe)``."""
    profile, model, overrides = case
    parent, child = spawn.Pipe()
    proc = spawn.Process(
        target=_step_worker,
        daemon=True,
        args=(
            child,
            checkout,
            profile,
            model,
            overrides,
            batch_size,
            threads,
            retain,
        ),
    )
    proc.start()
    child.close()  # so that a worker that dies is an EOFError here, not a hang
    return proc, parent


def _stop_workers(workers: dict) -> None:
    """Tell every worker to stop, wait for it, and kill one that does not."""
    for proc, conn in workers.values():
        try:
            conn.send(("stop", 0))
        except (BrokenPipeError, OSError):
            pass
        proc.join(timeout=30)
        if proc.is_alive():
            proc.kill()


def _timed_rounds(ask, repeats: int):
    """One warm-up step each, then ``repeats`` alternating rounds: (times, page faults, worst
    relative difference of the two sides' losses)."""
    for key in ("before", "after"):
        ask(key, "step", 99)  # warm-up
    times, faults, worst = (
        {"before": [], "after": []},
        {"before": [], "after": []},
        0.0,
    )
    for r in range(repeats):
        losses = {}
        for key in ("before", "after") if r % 2 == 0 else ("after", "before"):
            seconds, losses[key], page_faults = ask(key, "step", 1000 + r)
            times[key].append(seconds)
            faults[key].append(page_faults)
        worst = max(
            worst,
            abs(losses["after"] - losses["before"]) / abs(losses["before"]),
        )
    return times, faults, worst


def _comparison_row(
    case, label: str, threads: int, batch_size: int, after_info, times, faults, worst
) -> dict:
    """One case's row of :func:`compare_with_reference` from its two sides' measurements."""
    import statistics

    profile, model, _ = case
    config = SelfAttentionConfig(**after_info["config"])
    implementation = config.attention_implementation
    flops = (
        3 * 2 * analytic_macs(config, implementation=implementation).total * batch_size
    )
    before, after = (
        statistics.median(times["before"]),
        statistics.median(times["after"]),
    )
    return {
        "profile": profile,
        "model": label,
        "model_name": model,
        "num_heads": config.num_heads,
        "implementation": implementation,
        "threads": threads,
        "before_s": before,
        "after_s": after,
        "speedup": before / after,
        "before_times_s": times["before"],
        "after_times_s": times["after"],
        "train_gflops_per_step": flops / 1e9,
        "achieved_gflop_per_s": flops / after / 1e9,
        "max_relative_loss_difference": worst,
        "before_page_faults_per_step": statistics.median(faults["before"]),
        "after_page_faults_per_step": statistics.median(faults["after"]),
        "after_retains_freed_memory": after_info["retains_freed_memory"],
    }


def _compare_case(
    spawn, reference, case, threads: int, batch_size: int, repeats: int, breakdown
) -> dict:
    """Time one case on both sides, each in a process of its own; its row."""
    profile, model, overrides = case
    label = model + (
        ""
        if not overrides
        else " " + ",".join(f"{k}={v}" for k, v in overrides.items())
    )
    workers, info = {}, {}
    try:
        for key, checkout, retain in (
            ("before", str(reference), False),
            ("after", None, True),
        ):
            workers[key] = _start_worker(
                spawn, checkout, retain, case, batch_size, threads
            )
            info[key] = _answer(workers[key][1], key, label)

        def ask(key, request, seed):
            workers[key][1].send((request, seed))
            return _answer(workers[key][1], key, label)

        times, faults, worst = _timed_rounds(ask, repeats)
        ops = ask("after", "breakdown", 7) if breakdown else None
    finally:
        _stop_workers(workers)
    row = _comparison_row(
        case, label, threads, batch_size, info["after"], times, faults, worst
    )
    if ops is not None:
        row["breakdown"] = ops
    return row


def _add_rate_fractions(rows: List[dict], rate: float) -> None:
    """Each row's share of the matmul ``rate`` and the share that 2× the reference would need."""
    for row in rows:
        row["matmul_gflop_per_s"] = rate
        row["fraction_of_matmul_rate"] = row["achieved_gflop_per_s"] / rate
        row["fraction_needed_for_2x"] = (
            row["train_gflops_per_step"] / (row["before_s"] / 2) / rate
        )


def compare_with_reference(
    reference,
    cases=BOOK_CASES,
    threads: Sequence[int] = (1, 2),
    batch_size: int = 100,
    repeats: int = 7,
    breakdown: bool = True,
    progress=print,
) -> dict:
    """Training-step time of this code against the ``attnconv`` of the checkout ``reference``,
    side by side in one run. Each side runs in a process of its own, so that what this code sets
    for the whole process — it keeps the memory it frees
    (:func:`~attnconv.experiments.allocator.retain_freed_memory`), the reference did not — is part
    of "after". For every thread count and case both processes build the model from the same seed
    and take one warm-up step; then ``repeats`` rounds alternate which one goes first, one step at
    a time (the other waits), each round from the same RNG seed, so both draw the same dropout
    masks and their losses must agree. Reports medians, their ratio, the page faults per step of
    each side (the kernel's minor-fault count), the model's GFLOP per step
    (3 × the forward's, as :func:`measure_case`), the achieved GFLOP/s, the fraction of the
    float32 matmul rate measured at the same thread count in the same run, the fraction that 2×
    the reference's speed would need with the same products (above 1: out of reach), the largest
    relative difference of the two losses, and (``breakdown``) the per-op shares of one step of
    this code."""
    import multiprocessing

    load_reference(reference)  # fails early on a checkout without attnconv
    cpu = torch.device("cpu")
    before_threads = torch.get_num_threads()
    spawn = multiprocessing.get_context("spawn")
    result = _comparison_header(reference, batch_size, repeats)
    try:
        for n_threads in threads:
            torch.set_num_threads(n_threads)
            rates = [matmul_rate(cpu, seconds=2.0)]
            rows = []
            for case in cases:
                row = _compare_case(
                    spawn, reference, case, n_threads, batch_size, repeats, breakdown
                )
                rows.append(row)
                rates.append(matmul_rate(cpu, seconds=1.0))
                before, after = row["before_s"], row["after_s"]
                progress(
                    f"  {n_threads} thr {row['profile']:5s} {row['model']:22s} before {before:.3f} s  after {after:.3f} s  "
                    f"x{before / after:.2f}  {row['achieved_gflop_per_s']:.1f} GFLOP/s  "
                    f"losses agree to {row['max_relative_loss_difference']:.1e}"
                )
            rate = max(rates)
            _add_rate_fractions(rows, rate)
            result["rows"] += rows
            with warnings.catch_warnings():
                warnings.simplefilter(
                    "ignore", UserWarning
                )  # sparse CSR is a beta feature of torch
                result.setdefault("sparse_dropout_correction", {})[str(n_threads)] = (
                    sparse_dropout_correction()
                )
            result.setdefault("matmul_gflop_per_s", {})[str(n_threads)] = rate
    finally:
        torch.set_num_threads(before_threads)
    return result


COMPARISON_COLUMNS = (
    "profile",
    "model",
    "threads",
    "before s/step",
    "after s/step",
    "after ×",
    "GFLOP/step",
    "GFLOP/s",
    "% matmul",
    "2× needs",
    "losses agree",
)


def case_label(row: dict) -> str:
    """A row of :func:`compare_with_reference` as a reader names the case: "deep quadratic",
    "cpu learned_content", "deep quadratic, 16 heads" (heads named when not the paper's 9)."""
    heads = row.get("num_heads", 9)
    return f"{row['profile']} {row['model_name']}" + (
        "" if heads == 9 else f", {heads} heads"
    )


def comparison_table(
    result: dict, columns: Sequence[str] = COMPARISON_COLUMNS
) -> List[List[str]]:
    """Rows of formatted cells of :func:`compare_with_reference`'s result, for ``columns``."""
    out = []
    for r in result["rows"]:
        cells = dict(
            zip(
                COMPARISON_COLUMNS,
                [
                    r["profile"],
                    r["model"],
                    str(r["threads"]),
                    f"{r['before_s']:.3f}",
                    f"{r['after_s']:.3f}",
                    f"{r['speedup']:.2f}",
                    f"{r['train_gflops_per_step']:.1f}",
                    f"{r['achieved_gflop_per_s']:.1f}",
                    f"{100 * r['fraction_of_matmul_rate']:.0f}%",
                    f"{100 * r['fraction_needed_for_2x']:.0f}%"
                    if "fraction_needed_for_2x" in r
                    else "",
                    f"{r['max_relative_loss_difference']:.0e}",
                ],
            )
        )
        out.append([cells[c] for c in columns])
    return out


def book_run_hours(result: dict, runs_root, threads: int = 1) -> List[dict]:
    """How long the book's saved training runs take at the step times of a
    :func:`compare_with_reference` result: per run folder under ``runs_root`` (at any depth, the
    seed series included) whose
    history matches a measured case (profile, model, heads), epochs × steps per epoch × s/step
    before and after (training steps only, at ``threads``), beside the hours its history recorded
    (training and evaluation, on whatever the machine was doing then) and where it was made
    (``made_on``: ``cpu``, or ``gpu`` for a run its history says trained on CUDA)."""
    from pathlib import Path

    from .runs import device_kind

    measured = {
        (r["profile"], r["model_name"], r["num_heads"]): r
        for r in result["rows"]
        if r["threads"] == threads
    }
    out = []
    root = Path(runs_root)
    for path in sorted(root.rglob("history.json")):
        history = json.loads(path.read_text())
        config = history["config"]
        model = config["model"]
        if (
            model == "resnet18" or "heads_per_layer" in history
        ):  # no heads / pruned heads: not a measured case
            continue
        heads = (
            config.get("model_overrides", {}).get("num_heads")
            or paper_model_config(model).num_heads
        )
        row = measured.get((config.get("profile"), model, heads))
        if row is None:
            continue
        epochs, steps = config["epochs"], history["steps_per_epoch"]
        recorded = sum(e.get("seconds", 0.0) for e in history["epochs"])
        out.append(
            {
                "run": path.parent.relative_to(root).as_posix(),
                "epochs": epochs,
                "steps_per_epoch": steps,
                "before_hours": epochs * steps * row["before_s"] / 3600,
                "after_hours": epochs * steps * row["after_s"] / 3600,
                "recorded_hours": recorded / 3600 if recorded else float("nan"),
                "made_on": "cpu" if device_kind(history) == "cpu" else "gpu",
            }
        )
    return out


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

        seconds = _time(step, device, repeats)
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


def _bench_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m attnconv.bench``."""
    parser = argparse.ArgumentParser(
        prog="python -m attnconv.bench", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--preset", choices=sorted(PRESETS), default="paper")
    parser.add_argument(
        "--models", nargs="+", help="subset of quadratic, generalized, learned"
    )
    parser.add_argument("--implementations", nargs="+", choices=IMPLEMENTATIONS)
    parser.add_argument(
        "--grid-sizes",
        nargs="*",
        type=int,
        help="token grid sides for the sweep (empty: none)",
    )
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--repeats", type=int)
    parser.add_argument("--device", help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--out", help="write the results as JSON here")
    parser.add_argument(
        "--compare-with",
        metavar="CHECKOUT",
        help="instead: time the book's deep and cpu training cases against the attnconv of this "
        "checkout (e.g. a git worktree of an older commit), side by side",
    )
    parser.add_argument(
        "--threads",
        nargs="+",
        type=int,
        default=[1, 2],
        help="thread counts for --compare-with",
    )
    parser.add_argument(
        "--merge-heads",
        action="store_true",
        help="instead: one layer's merge of the heads at paper size, the old per-head sum "
        "against the one-GEMM merge (forward + backward), side by side",
    )
    return parser


def _save_json(result: dict, path: Optional[str], say: bool = True) -> None:
    """Write ``result`` as JSON to ``path`` (if given), saying so when ``say``."""
    if path:
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
        if say:
            print(f"saved {path}")


def _main_merge_heads(args) -> int:
    """``--merge-heads``: the per-head sum against the one-GEMM merge."""
    result = merge_heads_comparison(repeats=args.repeats or 5)
    for name in ("per-head sum (before)", "one GEMM"):
        r = result[name]
        print(
            f"{name:<22} {r['ms']:8.1f} ms forward+backward, "
            f"~{r['estimated_mb']:,.0f} MB moved"
        )
    print(
        f"largest relative difference (outputs and gradients): "
        f"{result['max_relative_difference']:.1e}; {result['shape']}, "
        f"{result['dtype']}, {result['threads']} threads"
    )
    _save_json(result, args.out, say=False)
    return 0


def _main_compare(args, parser) -> int:
    """``--compare-with``: this code against another checkout's, as a table."""
    try:
        load_reference(args.compare_with)
    except FileNotFoundError as err:
        parser.exit(2, f"error: {err}\n")
    result = compare_with_reference(
        args.compare_with, threads=args.threads, repeats=args.repeats or 7
    )
    print("\n".join(_text_table(COMPARISON_COLUMNS, comparison_table(result), left=2)))
    _save_json(result, args.out)
    return 0


def _main_benchmark(args) -> int:
    """The benchmark of a preset, with the settings the arguments change."""
    settings = PRESETS[args.preset]
    changes = {
        k: v
        for k, v in dict(
            models=args.models,
            implementations=args.implementations,
            grid_sizes=args.grid_sizes,
            batch_size=args.batch_size,
            repeats=args.repeats,
        ).items()
        if v is not None
    }
    settings = replace(settings, **changes)
    result = run_benchmark(settings, torch.device(args.device) if args.device else None)
    print(format_table(result))
    _save_json(result, args.out)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = _bench_parser()
    args = parser.parse_args(argv)
    if args.merge_heads:
        return _main_merge_heads(args)
    if args.compare_with:
        return _main_compare(args, parser)
    return _main_benchmark(args)


if __name__ == "__main__":
    raise SystemExit(main())
