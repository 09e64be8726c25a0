"""Timing one case of the attention benchmark (:mod:`attnconv.experiments.bench`): the machine's
sustained matrix-product rate, a model's training step and inference on random images with one
attention implementation, the best time of repeated steps, the peak memory of a training step
(CUDA: ``max_memory_allocated``; CPU: the growth of the resident-memory high-water mark of a fresh
process that runs one training step), and the training step with trained-like (narrow) heads.
"""

from __future__ import annotations

import time
from dataclasses import replace

import torch
import torch.nn.functional as F

from ..core.attention import MultiHeadSelfAttention
from .flops import analytic_macs
from .models import SelfAttentionConfig, build_model, paper_model_config

__all__ = [
    "IMPLEMENTATIONS",
    "matmul_rate",
    "set_attention_implementation",
    "peak_training_memory_mb",
    "best_time",
    "measure_case",
    "denormal_check",
]

IMPLEMENTATIONS = ("naive", "dense", "local")


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


def best_time(fn, device, repeats: int) -> float:
    """The best of ``repeats`` timed calls of ``fn`` (after one warm-up call), in seconds."""
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
    train_s = best_time(lambda: train_step(phases), device, repeats)
    forward_s, backward_s = min(
        phases[1:] or phases
    )  # the fastest timed step's forward and backward
    infer_s = best_time(infer, device, repeats)
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
        out[impl] = best_time(train_step, device, repeats)
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
