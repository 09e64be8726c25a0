"""``python -m attnconv.gpu_smoke`` (``make gpu-smoke``): five minutes that show the GPU path works.

For every paper-size model (the five of Sec. 4 and the 16-head quadratic):

1. **bf16 against fp32.** ``--steps`` SGD steps (default 30) from the same weights on the same
   batches, once in fp32 and once under bf16 autocast. The first step's losses (same weights,
   same batch: bf16's rounding alone) must agree within :data:`FIRST_STEP_TOLERANCE`, and at
   paper size every step's within :data:`LOSS_TOLERANCE` (absolute, on losses near
   ln 10 ≈ 2.3). Tiny models at batch 10 are chaotic from the second step on, so ``--tiny``
   checks the first step only.
2. **Stop and resume.** The same steps as two "epochs" with a stop after the first, resumed from
   the checkpoint, against the uninterrupted run: the step losses and final test numbers must be
   equal (deterministic algorithms on).
3. **Speed.** Images per second of a bf16 training step, timed after a warm-up, with CUDA's
   sync debug mode on (``torch.cuda.set_sync_debug_mode("warn")``): every synchronisation inside
   the timed steps is a warning, and their number is reported (the step is written to make none).
4. **torchrun.** With two GPUs or more, one epoch of the quadratic model on the bundled sample
   under ``torchrun --nproc_per_node=2``.

On CUDA the results go to ``book/results/gpu-smoke.json`` (images/s per model: the measured
replacement of :data:`attnconv.experiments.profiles.GPU_ESTIMATE`). ``--tiny`` runs the same code
on small models and images, on the CPU too, and writes only to ``--out`` (the unit test does this).
Exit status 0 when every check passed, 1 otherwise (the file records which).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import List, Optional, Sequence

import torch

from .experiments.data import load_cifar10_sample
from .experiments.device import (
    device_name,
    gpu_count,
    resolve_precision,
    select_device,
    sync_warnings,
    synchronize,
)
from .experiments.models import build_model
from .experiments.store import results_dir
from .experiments.train import (
    TrainConfig,
    make_optimizer,
    make_scheduler,
    train,
    write_json,
)
from .experiments.train_step import EpochBatches, compute_loss, normalize_batch

__all__ = [
    "MODELS",
    "LOSS_TOLERANCE",
    "FIRST_STEP_TOLERANCE",
    "RESULTS_FILE",
    "smoke",
    "main",
]

#: (label, model, model overrides) of the paper-size models checked.
MODELS = (
    ("quadratic", "quadratic", {}),
    ("generalized", "generalized", {}),
    ("learned", "learned", {}),
    ("learned_content", "learned_content", {}),
    ("resnet18", "resnet18", {}),
    ("quadratic-16heads", "quadratic", {"num_heads": 16}),
)
TINY = {
    "resnet18": dict(widths=(4, 4, 8, 8)),
    "other": dict(hidden_size=16, intermediate_size=16, num_layers=2, downsample=4),
}
#: Largest |bf16 step loss − fp32 step loss| accepted over the steps (paper size).
LOSS_TOLERANCE = 0.1
#: Largest |bf16 − fp32| of the first step's loss (same weights and batch: rounding only).
FIRST_STEP_TOLERANCE = 0.02
RESULTS_FILE = "gpu-smoke.json"


def _config(model, overrides, steps, tiny, precision, epochs=1) -> TrainConfig:
    if tiny:
        overrides = {
            **TINY["resnet18" if model == "resnet18" else "other"],
            **overrides,
        }
        if overrides.get("num_heads") == 16:
            overrides["hidden_size"] = 32
    batch = 10 if tiny else 100
    return TrainConfig(
        model=model,
        model_overrides=overrides,
        epochs=epochs,
        batch_size=batch,
        eval_batch_size=100,
        data="sample",
        train_subset=steps * batch,
        test_subset=2 * batch,
        seed=0,
        precision=precision,
        schedule="step" if model == "resnet18" else "warmup_cosine",
    )


def _step_losses(config: TrainConfig, data, device) -> List[float]:
    """The loss of every step of one epoch of ``config`` (fresh model, seed 0)."""
    data = data.subset(config.train_subset, config.test_subset).to(device)
    torch.manual_seed(0)
    model = build_model(config.model_config()).to(device).train()
    optimizer = make_optimizer(model, config)
    scheduler = make_scheduler(
        optimizer, config, len(data.x_train) // config.batch_size
    )
    precision = resolve_precision(device, config.bf16, config.precision)
    batches = EpochBatches(data, config, 1, device)
    losses = []
    for step in range(batches.steps):
        rows = batches.rows(step)
        with precision.autocast():
            loss, _ = compute_loss(
                model, normalize_batch(batches.x[rows]), batches.y[rows]
            )
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.detach())
    return [float(v) for v in losses]


def _bf16_against_fp32(model, overrides, steps, tiny, data, device) -> dict:
    fp32 = _step_losses(_config(model, overrides, steps, tiny, "fp32"), data, device)
    bf16 = _step_losses(_config(model, overrides, steps, tiny, "bf16"), data, device)
    diff = max(abs(a - b) for a, b in zip(fp32, bf16))
    first = abs(fp32[0] - bf16[0])
    ok = first <= FIRST_STEP_TOLERANCE and all(map(_finite, bf16))
    return {
        "fp32_losses": fp32,
        "bf16_losses": bf16,
        "first_step_difference": first,
        "max_loss_difference": diff,
        "ok": ok and (tiny or diff <= LOSS_TOLERANCE),
    }


def _finite(x: float) -> bool:
    return x == x and abs(x) != float("inf")


def _stop_and_resume(model, overrides, steps, tiny, data, folder: Path) -> dict:
    config = _config(model, overrides, max(2, steps // 2), tiny, "bf16", epochs=2)
    kw = dict(progress=False, verbose=False, data=data)
    whole = train(config, folder / "whole", **kw)
    train(config, folder / "cut", stop_after=1, **kw)
    resumed = train(config, folder / "cut", resume=True, **kw)
    keys = ("train_loss", "train_acc", "test_loss", "test_acc")
    a = [[e[k] for k in keys] for e in whole["epochs"]]
    b = [[e[k] for k in keys] for e in resumed["epochs"]]
    return {"equal": a == b, "uninterrupted": a, "resumed": b, "ok": a == b}


def _speed(model, overrides, tiny, data, device, repeats: int) -> dict:
    """Images/s of bf16 training steps, with CUDA's sync debug mode on during the timed steps."""
    config = _config(model, overrides, repeats + 3, tiny, "bf16")
    data = data.subset(config.train_subset, config.test_subset).to(device)
    torch.manual_seed(0)
    net = build_model(config.model_config()).to(device).train()
    optimizer = make_optimizer(net, config)
    scheduler = make_scheduler(optimizer, config, repeats + 3)
    precision = resolve_precision(device, config.bf16, config.precision)
    batches = EpochBatches(data, config, 1, device)

    def step(s):
        rows = batches.rows(s)
        with precision.autocast():
            loss, _ = compute_loss(
                net, normalize_batch(batches.x[rows]), batches.y[rows]
            )
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()

    for s in range(3):  # warm-up: kernels chosen, constants on the device
        step(s)
    synchronize(device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        with sync_warnings(device):
            for s in range(3, 3 + repeats):
                step(s)
        synchronize(device)
        seconds = time.perf_counter() - t0
    syncs = [
        str(w.message).splitlines()[0] for w in caught if "synchroniz" in str(w.message)
    ]
    images = repeats * config.batch_size / seconds
    return {
        "images_per_second": images,
        "seconds_per_epoch_of_50000": 50_000 / images,
        "sync_warnings": len(syncs) if device.type == "cuda" else None,
        "sync_warning_examples": sorted(set(syncs))[:5],
    }


def _torchrun(folder: Path) -> dict:
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        "-m",
        "attnconv.train",
        "--model",
        "quadratic",
        "--profile",
        "gpu",
        "--data",
        "sample",
        "--epochs",
        "1",
        "--no-progress",
        "--run-dir",
        str(folder / "torchrun"),
    ]
    t0 = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
    return {
        "returncode": done.returncode,
        "seconds": time.perf_counter() - t0,
        "tail": tail,
        "ok": done.returncode == 0,
    }


def smoke(
    device: Optional[torch.device] = None,
    steps: int = 30,
    tiny: bool = False,
    models: Sequence[str] = (),
    speed_steps: int = 20,
    say=print,
) -> dict:
    """Run the checks (module docstring) and return the results as a JSON-ready dict."""
    device = device or select_device()
    if device.type == "cuda":
        torch.use_deterministic_algorithms(True, warn_only=True)
    data = load_cifar10_sample()
    chosen = [m for m in MODELS if not models or m[0] in models]
    out = {
        "device": device_name(device),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "tiny": tiny,
        "steps": steps,
        "loss_tolerance": LOSS_TOLERANCE,
        "first_step_tolerance": FIRST_STEP_TOLERANCE,
        "models": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for label, model, overrides in chosen:
            t0 = time.perf_counter()
            record = {
                "bf16_against_fp32": _bf16_against_fp32(
                    model, overrides, steps, tiny, data, device
                ),
                "stop_and_resume": _stop_and_resume(
                    model, overrides, steps, tiny, data, Path(tmp) / label
                ),
                "speed": _speed(model, overrides, tiny, data, device, speed_steps),
            }
            record["ok"] = (
                record["bf16_against_fp32"]["ok"] and record["stop_and_resume"]["ok"]
            )
            out["models"][label] = record
            say(_summary(label, record, time.perf_counter() - t0))
        if device.type == "cuda" and gpu_count() >= 2:
            out["torchrun"] = _torchrun(Path(tmp))
            say(f"torchrun, 2 processes: exit {out['torchrun']['returncode']}")
    out["ok"] = (
        all(r["ok"] for r in out["models"].values())
        and out.get("torchrun", {"ok": True})["ok"]
    )
    return out


def _summary(label: str, record: dict, seconds: float) -> str:
    b, r, s = (
        record["bf16_against_fp32"],
        record["stop_and_resume"],
        record["speed"],
    )
    syncs = (
        "" if s["sync_warnings"] is None else f", {s['sync_warnings']} sync warnings"
    )
    return (
        f"{label}: bf16 vs fp32 loss difference {b['first_step_difference']:.4f} at step 1, "
        f"at most {b['max_loss_difference']:.4f} "
        f"({'ok' if b['ok'] else 'FAILED'}), resume {'equal' if r['equal'] else 'DIFFERS'}, "
        f"{s['images_per_second']:,.0f} images/s{syncs} ({seconds:.0f} s)"
    )


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnconv.gpu_smoke", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--tiny", action="store_true", help="small models (CPU tests)")
    parser.add_argument("--device", default=None)
    parser.add_argument(
        "--models", nargs="*", default=(), choices=[m[0] for m in MODELS]
    )
    parser.add_argument(
        "--out", default=None, help="results file (default on CUDA: book)"
    )
    args = parser.parse_args(argv)
    device = select_device(args.device)
    if device.type != "cuda" and not args.tiny:
        print(
            "error: no CUDA device here; the smoke test is for a GPU "
            "(`python -m attnconv.doctor` says why; --tiny runs it small on the CPU)",
            file=sys.stderr,
        )
        return 2
    if args.steps < 2:
        parser.error("--steps must be >= 2")
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS
    speed_steps = 2 if args.tiny else 20
    results = smoke(device, args.steps, args.tiny, args.models, speed_steps)
    out = args.out
    if out is None and device.type == "cuda" and not args.tiny:
        out = results_dir() / RESULTS_FILE
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        write_json(Path(out), results)
        print(f"results: {out}")
    print("gpu smoke: " + ("all checks passed" if results["ok"] else "FAILED"))
    return 0 if results["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
