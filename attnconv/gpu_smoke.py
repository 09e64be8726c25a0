"""``python -m attnconv.gpu_smoke --out DIR --budget S`` (``make gpu-smoke``): the first fifteen
minutes on a real card, in under five on one H100.

It runs with whatever torch is installed, offline, with no setup step
(``PYTHONPATH=. python -m attnconv.gpu_smoke``), in phases. Each phase is guarded (an error is
recorded, the next phase runs) and ``DIR/gpu-smoke.json`` is written after each phase (and
after each model), so a time limit keeps what finished:

1. **environment** — torch, CUDA, cuDNN, the device's properties, bf16 with and without
   emulation, the TF32 flags, ``nvidia-smi``, the doctor's report.
2. **real_loop** — :func:`~attnconv.experiments.train.train` itself, progress bar on, a
   paper-size model on 2,000 sample images for 2 epochs; stopped after epoch 1 and resumed, it
   must equal the uninterrupted run step for step (every step's loss, from ``steps.csv``) and in
   its epochs' numbers, under deterministic algorithms.
3. **per_model** — every paper model (and the 16-head quadratic): bf16 against fp32 (TF32 off
   for the fp32 reference) over the first :data:`STEPS` steps of the paper's schedule
   (:data:`PAPER_EPOCHS` epochs of :data:`PAPER_STEPS_PER_EPOCH` steps, so the learning rate
   ramps up as the paper's warm-up does: 30 steps of a 30-step run would warm up for one step
   and then train at lr 0.1, chaotic enough that bf16 and fp32 part by 3.5 by step 15) in the
   real :func:`~attnconv.experiments.train_step.train_epoch`, judged at step 1 for every model
   (:data:`FIRST_STEP_TOLERANCE`) and over all steps for the attention models
   (:data:`LOSS_TOLERANCE`): ResNet18 at lr 0.1 and batch 100 is chaotic (its fp32 run alone
   swings to a loss of 5.6), so any rounding grows to O(1) after a few steps and only its first
   step is judged; then, with deterministic algorithms off, two timed real ``train_epoch``s of
   :data:`SPEED_STEPS` steps after a warm-up one (ms/step, images/s, peak memory, their spread),
   evaluation images/s, synchronisations per epoch and per step (CUDA's sync debug mode, on a
   real epoch with its tally and progress bar), kernels per step, GPU-busy fraction and top
   kernels (the profiler), MFU, and the estimated seconds per 50,000-image epoch and hours for
   300 epochs.
4. **batch_scaling** — images/s and peak memory of quadratic and ResNet18 at batch 25 to 200.
5. **checkpoints_and_studies** — save and load time of a paper-size model and its optimizer,
   and the layer-removal study (:func:`~attnconv.experiments.pruning.layer_removal_accuracies`)
   on the device.

One summary line per model, then ``ALL PHASES RAN`` or the phases that failed (exit status 1).
``--dry-run`` runs every phase on the CPU with tiny models (the unit tests and CI do). Nothing
is written into the book: copy ``DIR/gpu-smoke.json`` to ``book/results/`` to make the measured
speeds replace :data:`~attnconv.experiments.profiles.GPU_ESTIMATE`.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

import torch

from .experiments.checkpoints import write_json
from .experiments.data import load_cifar10_sample
from .experiments.device import (
    bf16_supported,
    device_name,
    peak_bf16_flops,
    resolve_precision,
    select_device,
    sync_warnings,
    synchronize,
)
from .experiments.flops import analytic_macs
from .experiments.models import build_model
from .experiments.profiles import make_config
from .experiments.store import STEPS_CSV
from .experiments.train import train
from .experiments.train_config import TrainConfig, make_optimizer, make_scheduler
from .experiments.train_step import evaluate, train_epoch

__all__ = [
    "MODELS",
    "PHASES",
    "LOSS_TOLERANCE",
    "FIRST_STEP_TOLERANCE",
    "STEPS",
    "PAPER_EPOCHS",
    "PAPER_STEPS_PER_EPOCH",
    "EVAL_BATCH",
    "SPEED_STEPS",
    "RESULTS_FILE",
    "judge_bf16",
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
PHASES = (
    "environment",
    "real_loop",
    "per_model",
    "batch_scaling",
    "checkpoints_and_studies",
)
#: Models judged at step 1 only: chaotic at the paper's lr and batch (module docstring).
FIRST_STEP_ONLY = ("resnet18",)
#: Tiny models of ``--dry-run``.
TINY = {
    "resnet18": dict(widths=(4, 4, 8, 8)),
    "other": dict(hidden_size=16, intermediate_size=16, num_layers=2, downsample=4),
}
#: Largest |bf16 step loss − fp32 step loss| over the steps (attention models, paper size; the
#: audit's CPU stand-in with CUDA's dtype rules: 4.6e-4 over the first 20 steps).
LOSS_TOLERANCE = 0.1
#: Largest |bf16 − fp32| of the first step's loss (same weights and batch: rounding only).
FIRST_STEP_TOLERANCE = 0.02
STEPS = 30
#: The paper's schedule, whose first :data:`STEPS` steps are judged: 300 epochs of 50,000 / 100.
PAPER_EPOCHS = 300
PAPER_STEPS_PER_EPOCH = 500
#: The paper's evaluation batch.
EVAL_BATCH = 500
SPEED_STEPS = 50
BATCHES = (25, 50, 100, 200)
RESULTS_FILE = "gpu-smoke.json"


class _Sizes:
    """Batch, steps and images of each phase: the paper's sizes, or tiny ones (``--dry-run``)."""

    def __init__(
        self, dry: bool, batch: Optional[int] = None, steps: Optional[int] = None
    ):
        self.dry = dry
        self.batch = batch or (10 if dry else 100)
        self.steps = steps or (3 if dry else STEPS)
        self.speed_steps = 2 if dry else SPEED_STEPS
        self.loop_images = 20 if dry else 2000
        self.test_images = 20 if dry else 1000
        self.batches = (5, 10) if dry else BATCHES
        self.scaling_steps = 2 if dry else 10
        self.removal_images = 20 if dry else 1000


def _config(
    model: str, overrides: dict, sizes: _Sizes, precision, n_train, **changes
) -> TrainConfig:
    """The gpu-sample profile's config of ``model`` (paper size, the sample), or a tiny one."""
    base = make_config(model, "gpu-sample")
    merged = {**base.model_overrides, **overrides}
    if sizes.dry:
        merged = {**TINY["resnet18" if model == "resnet18" else "other"], **overrides}
        if merged.get("num_heads") == 16:
            merged["hidden_size"] = 32
    settings = dict(
        epochs=1,
        batch_size=sizes.batch,
        eval_batch_size=EVAL_BATCH,
        train_subset=n_train,
        test_subset=sizes.test_images,
        precision=precision,
        model_overrides=merged,
        seed=0,
    )
    settings.update(changes)
    return make_config(model, "gpu-sample", **settings)


@contextlib.contextmanager
def _deterministic(on: bool):
    """Deterministic algorithms on or off inside (warn-only), as they were afterwards."""
    was, warn = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )
    torch.use_deterministic_algorithms(on, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(was, warn_only=warn)


@contextlib.contextmanager
def _tf32(on: bool):
    """TF32 for CUDA matrix products and cuDNN convolutions on or off inside."""
    old = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = on
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


class _Trainer:
    """A fresh model (seed 0), its optimizer, scheduler and scaler on ``device``, and the real
    :func:`train_epoch` over ``config``'s data. ``schedule_steps``: the steps per epoch of the
    learning-rate schedule (default: this data's), e.g. the paper's, so that the steps run are
    the first steps of the paper's schedule."""

    def __init__(self, config: TrainConfig, data, device, schedule_steps=None):
        self.config, self.device = config, device
        self.data = data.subset(config.train_subset, config.test_subset).to(device)
        torch.manual_seed(0)
        self.model = build_model(config.model_config()).to(device)
        self.optimizer = make_optimizer(self.model, config)
        self.steps = -(-len(self.data.x_train) // config.batch_size)
        self.scheduler = make_scheduler(
            self.optimizer, config, schedule_steps or self.steps
        )
        precision = resolve_precision(device, config.bf16, config.precision)
        self.scaler = precision.grad_scaler()
        self.epoch = 0

    def run(self, on_step=None, progress=False) -> float:
        """One real epoch; returns its seconds (device synchronised before and after)."""
        self.epoch += 1
        synchronize(self.device)
        t0 = time.perf_counter()
        train_epoch(
            self.model,
            self.data,
            self.config,
            self.optimizer,
            self.scheduler,
            self.epoch,
            self.device,
            progress=progress,
            on_step=on_step,
            scaler=self.scaler,
        )
        synchronize(self.device)
        return time.perf_counter() - t0


# ----------------------------------------------------------------------------- phases
def environment(device: torch.device, sizes: _Sizes) -> dict:
    """torch, CUDA, cuDNN, the device, bf16, TF32, nvidia-smi and the doctor's report."""
    from . import doctor

    out = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version()
        if torch.backends.cudnn.is_available()
        else None,
        "device": device_name(device),
        "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
        "tf32_cudnn": torch.backends.cudnn.allow_tf32,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "bf16_native": bf16_supported(device),
        "precision_of_training": resolve_precision(device, True).describe(),
    }
    if device.type == "cuda":
        p = torch.cuda.get_device_properties(device)
        out["properties"] = {
            "name": p.name,
            "capability": f"{p.major}.{p.minor}",
            "memory_gib": p.total_memory / 2**30,
            "multiprocessors": p.multi_processor_count,
        }
        out["bf16_with_emulation"] = bool(
            torch.cuda.is_bf16_supported(including_emulation=True)
        )
    try:
        smi = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=30)
        out["nvidia_smi"] = (smi.stdout + smi.stderr).strip().splitlines()
    except (OSError, subprocess.SubprocessError) as e:
        out["nvidia_smi"] = [f"not run: {e}"]
    machine = doctor.probe()
    out["doctor"] = doctor.report(doctor.diagnose(machine), machine).splitlines()
    return out


def real_loop(device: torch.device, sizes: _Sizes, data, folder: Path) -> dict:
    """train() with its progress bar, 2 epochs; stopped after 1 and resumed = uninterrupted."""
    config = _config("quadratic", {}, sizes, None, sizes.loop_images, epochs=2)
    config = TrainConfig.from_dict({**config.to_dict(), "device": str(device)})
    kw = dict(progress=True, verbose=True, data=data, csv=True)
    t0 = time.perf_counter()
    with _deterministic(True):
        whole = train(config, folder / "whole", **kw)
        seconds = time.perf_counter() - t0
        train(config, folder / "cut", stop_after=1, **kw)
        resumed = train(config, folder / "cut", resume=True, **kw)
    keys = ("train_loss", "train_acc", "test_loss", "test_acc")
    a = [[e[k] for k in keys] for e in whole["epochs"]]
    b = [[e[k] for k in keys] for e in resumed["epochs"]]
    steps_a, steps_b = (_csv_losses(folder / n / STEPS_CSV) for n in ("whole", "cut"))
    equal = a == b and steps_a == steps_b and len(steps_a) > 0
    return {
        "images": sizes.loop_images,
        "epochs_equal": a == b,
        "step_losses_equal": steps_a == steps_b,
        "steps": len(steps_a),
        "uninterrupted": a,
        "resumed": b,
        "seconds_uninterrupted": seconds,
        "ok": equal,
    }


def _csv_losses(path: Path) -> List[float]:
    with open(path) as f:
        return [float(row["loss"]) for row in csv.DictReader(f)]


def judge_bf16(label: str, fp32: List[float], bf16: List[float], dry: bool) -> dict:
    """bf16 against fp32: step 1 within :data:`FIRST_STEP_TOLERANCE` always; every step within
    :data:`LOSS_TOLERANCE` for the attention models at paper size (not ResNet18, not tiny
    models: chaotic after step 1). The largest difference is reported either way."""
    first = abs(fp32[0] - bf16[0])
    largest = max(abs(a - b) for a, b in zip(fp32, bf16))
    finite = all(x == x and abs(x) != float("inf") for x in bf16)
    judged_over_all = not dry and label not in FIRST_STEP_ONLY
    ok = finite and first <= FIRST_STEP_TOLERANCE
    if judged_over_all:
        ok = ok and largest <= LOSS_TOLERANCE
    return {
        "fp32_losses": fp32,
        "bf16_losses": bf16,
        "first_step_difference": first,
        "max_loss_difference": largest,
        "judged": "every step" if judged_over_all else "step 1",
        "ok": ok,
    }


def _step_losses(config: TrainConfig, data, device) -> List[float]:
    """Every step's loss of the first steps of the paper's schedule (``config``'s data make one
    real epoch of them; fp32 runs with TF32 off)."""
    losses = []
    config = TrainConfig.from_dict({**config.to_dict(), "epochs": PAPER_EPOCHS})
    trainer = _Trainer(config, data, device, schedule_steps=PAPER_STEPS_PER_EPOCH)
    fp32 = config.precision == "fp32"
    with _tf32(False) if fp32 else contextlib.nullcontext():
        trainer.run(on_step=lambda step, loss: losses.append(loss))
    return losses


def _bf16_against_fp32(label, model, overrides, sizes, data, device) -> dict:
    n = sizes.steps * sizes.batch
    fp32 = _step_losses(_config(model, overrides, sizes, "fp32", n), data, device)
    bf16 = _step_losses(_config(model, overrides, sizes, "bf16", n), data, device)
    return judge_bf16(label, fp32, bf16, sizes.dry)


def _speed(model, overrides, sizes, data, device) -> dict:
    """Two timed real epochs after a warm-up, deterministic algorithms off; evaluation."""
    config = _config(model, overrides, sizes, "bf16", sizes.speed_steps * sizes.batch)
    with _deterministic(False):
        trainer = _Trainer(config, data, device)
        trainer.run()  # warm-up: kernels chosen, constants on the device
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        seconds = [trainer.run(), trainer.run()]
        peak = (
            torch.cuda.max_memory_allocated(device) / 2**20
            if device.type == "cuda"
            else None
        )
        x, y = trainer.data.x_test, trainer.data.y_test
        ev = lambda: evaluate(  # noqa: E731
            trainer.model, x, y, config.eval_batch_size, device, precision="bf16"
        )
        ev()
        synchronize(device)
        t0 = time.perf_counter()
        ev()
        synchronize(device)
        eval_seconds = time.perf_counter() - t0
        syncs = _syncs(trainer, device)
        profile = _profile(trainer, device)
    best = min(seconds)
    images = trainer.steps * config.batch_size / best
    eval_images = len(x) / eval_seconds
    epoch_50k = 50_000 / images + 10_000 / eval_images
    flops = (
        6 * analytic_macs(config.model_config()).total
    )  # forward + backward per image
    peak_flops = peak_bf16_flops(device_name(device))
    return {
        "ms_per_step": 1e3 * best / trainer.steps,
        "images_per_second": images,
        "epoch_seconds": seconds,
        "spread": abs(seconds[0] - seconds[1]) / best,
        "peak_memory_mib": peak,
        "eval_images_per_second": eval_images,
        **syncs,
        **profile,
        "training_tflops": flops * images / 1e12,
        "mfu": None if peak_flops is None else flops * images / peak_flops,
        "seconds_per_epoch_of_50000": epoch_50k,
        "hours_for_300_epochs": 300 * epoch_50k / 3600,
    }


def _syncs(trainer: _Trainer, device) -> dict:
    """Host synchronisations of one real epoch (CUDA's sync debug mode); None on the CPU."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with sync_warnings(device):
            trainer.run(progress=True)
    found = [str(w.message).splitlines()[0] for w in caught]
    found = [m for m in found if "synchroniz" in m]
    if device.type != "cuda":
        return {"syncs_per_epoch": None, "syncs_per_step": None}
    return {
        "syncs_per_epoch": len(found),
        "syncs_per_step": len(found) / trainer.steps,
        "sync_examples": sorted(set(found))[:5],
    }


def _profile(trainer: _Trainer, device) -> dict:
    """Kernels per step, GPU-busy fraction and the top kernels of one real epoch (the CPU: its
    operators per step, for the dry run)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities) as prof:
        seconds = trainer.run()
    kind = DeviceType.CUDA if device.type == "cuda" else DeviceType.CPU
    events = [e for e in prof.events() if e.device_type == kind]
    totals: Dict[str, float] = {}
    for e in events:
        totals[e.name] = totals.get(e.name, 0.0) + e.time_range.elapsed_us()
    top = sorted(totals.items(), key=lambda kv: -kv[1])[:8]
    busy = sum(totals.values()) / 1e6 / seconds if device.type == "cuda" else None
    return {
        "kernels_per_step": len(events) / trainer.steps,
        "gpu_busy_fraction": busy,
        "top_kernels_ms_per_step": [[n, t / 1e3 / trainer.steps] for n, t in top],
    }


def per_model(device, sizes, data, models, record, save, say) -> dict:
    """bf16 against fp32 and the speed of every model; each model guarded on its own."""
    out = record.setdefault("models", {})
    for label, model, overrides in models:
        t0 = time.perf_counter()
        try:
            r = {
                "bf16_against_fp32": _bf16_against_fp32(
                    label, model, overrides, sizes, data, device
                )
            }
            r["speed"] = _speed(model, overrides, sizes, data, device)
            r["ok"] = r["bf16_against_fp32"]["ok"]
        except Exception as e:  # noqa: BLE001 - one model's failure must not stop the rest
            r = {"ok": False, **_error(e)}
        r["seconds"] = time.perf_counter() - t0
        out[label] = r
        say(_summary(label, r))
        save()
    return {"ok": all(r["ok"] for r in out.values()), "models": sorted(out)}


def batch_scaling(device, sizes, data) -> dict:
    """Images/s and peak memory of quadratic and ResNet18 from batch 25 to 200."""
    out = {}
    with _deterministic(False):
        for model in ("quadratic", "resnet18"):
            rows = []
            for batch in sizes.batches:
                n = batch * sizes.scaling_steps
                config = _config(model, {}, sizes, "bf16", n, batch_size=batch)
                trainer = _Trainer(config, data, device)
                trainer.run()
                if device.type == "cuda":
                    torch.cuda.reset_peak_memory_stats(device)
                seconds = trainer.run()
                rows.append(
                    {
                        "batch": batch,
                        "images_per_second": n / seconds,
                        "peak_memory_mib": torch.cuda.max_memory_allocated(device)
                        / 2**20
                        if device.type == "cuda"
                        else None,
                    }
                )
            out[model] = rows
    return out


def checkpoints_and_studies(device, sizes, data, folder: Path) -> dict:
    """Save/load time of a paper-size model and optimizer; the layer-removal study on the device."""
    from .experiments.pruning import layer_removal_accuracies

    config = _config("quadratic", {}, sizes, "bf16", sizes.batch)
    trainer = _Trainer(config, data, device)
    trainer.run()  # one step: the optimizer has its momentum buffers
    path = folder / "checkpoint.pt"
    synchronize(device)
    t0 = time.perf_counter()
    torch.save(
        {
            "model": trainer.model.state_dict(),
            "optimizer": trainer.optimizer.state_dict(),
        },
        path,
    )
    save_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    state = torch.load(path, map_location=device, weights_only=True)
    trainer.model.load_state_dict(state["model"])
    trainer.optimizer.load_state_dict(state["optimizer"])
    synchronize(device)
    load_s = time.perf_counter() - t0
    test = data.subset(None, sizes.removal_images).to(device)

    def accuracy(m):
        return evaluate(
            m, test.x_test, test.y_test, EVAL_BATCH, device, precision="bf16"
        )[1]

    t0 = time.perf_counter()
    removal = layer_removal_accuracies(trainer.model, accuracy)
    return {
        "checkpoint_mib": path.stat().st_size / 2**20,
        "save_seconds": save_s,
        "load_seconds": load_s,
        "removal": removal,
        "removal_seconds": time.perf_counter() - t0,
        "ok": len(removal["without_layer"]) == len(trainer.model.layers),
    }


# ----------------------------------------------------------------------------- driver
def _error(e: BaseException) -> dict:
    tail = traceback.format_exception(type(e), e, e.__traceback__)[-3:]
    return {"error": f"{type(e).__name__}: {e}", "traceback": "".join(tail)}


def _summary(label: str, r: dict) -> str:
    if "error" in r:
        return f"{label}: FAILED ({r['error'].splitlines()[0]})"
    b, s = r["bf16_against_fp32"], r["speed"]
    syncs = (
        "" if s["syncs_per_epoch"] is None else f", {s['syncs_per_epoch']} syncs/epoch"
    )
    mfu = "" if s["mfu"] is None else f", MFU {100 * s['mfu']:.0f} %"
    return (
        f"{label}: bf16-fp32 {b['first_step_difference']:.4f} at step 1, at most "
        f"{b['max_loss_difference']:.3f} (judged {b['judged']}: "
        f"{'ok' if b['ok'] else 'FAILED'}); {s['ms_per_step']:.1f} ms/step, "
        f"{s['images_per_second']:,.0f} images/s, {s['kernels_per_step']:.0f} "
        f"{'kernels' if s['gpu_busy_fraction'] is not None else 'CPU ops'}/step{syncs}{mfu}; "
        f"{s['seconds_per_epoch_of_50000']:.0f} s per 50k epoch, "
        f"{s['hours_for_300_epochs']:.1f} h for 300"
    )


def smoke(
    out_dir: Path,
    device: Optional[torch.device] = None,
    dry_run: bool = False,
    budget: float = 300.0,
    models: Sequence[str] = (),
    phases: Sequence[str] = PHASES,
    say: Callable[[str], None] = print,
) -> dict:
    """Run the phases (module docstring) into ``out_dir/gpu-smoke.json``; returns the record.
    A phase that would start after ``budget`` seconds is recorded as skipped (and failed)."""
    device = device or (torch.device("cpu") if dry_run else select_device())
    sizes = _Sizes(dry_run)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / RESULTS_FILE
    chosen = [m for m in MODELS if not models or m[0] in models]
    record: dict = {
        "device": device_name(device),
        "torch": torch.__version__,
        "dry_run": dry_run,
        "budget_seconds": budget,
        "loss_tolerance": LOSS_TOLERANCE,
        "first_step_tolerance": FIRST_STEP_TOLERANCE,
        "phases": {},
    }
    save = lambda: write_json(path, record)  # noqa: E731
    data = load_cifar10_sample()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        runs: Dict[str, Callable[[], dict]] = {
            "environment": lambda: environment(device, sizes),
            "real_loop": lambda: real_loop(device, sizes, data, Path(tmp) / "loop"),
            "per_model": lambda: per_model(
                device, sizes, data, chosen, record, save, say
            ),
            "batch_scaling": lambda: batch_scaling(device, sizes, data),
            "checkpoints_and_studies": lambda: checkpoints_and_studies(
                device, sizes, data, Path(tmp)
            ),
        }
        for name in phases:
            t0 = time.perf_counter()
            if t0 - start > budget:
                result = {"ok": False, "skipped": f"over the budget of {budget:.0f} s"}
            else:
                say(f"phase {name} ...")
                try:
                    result = runs[name]()
                    result.setdefault("ok", True)
                except Exception as e:  # noqa: BLE001 - a phase's failure is recorded
                    result = {"ok": False, **_error(e)}
            result["seconds"] = time.perf_counter() - t0
            record["phases"][name] = result
            say(
                f"phase {name}: {'ok' if result['ok'] else 'FAILED'} "
                f"({result['seconds']:.0f} s)"
                + (f" {result.get('error', result.get('skipped', ''))}")
            )
            save()
    failed = [n for n in phases if not record["phases"][n]["ok"]]
    record["failed_phases"] = failed
    record["ok"] = not failed
    record["seconds"] = time.perf_counter() - start
    save()
    return record


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnconv.gpu_smoke", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", default="gpu-out", help="folder of gpu-smoke.json")
    parser.add_argument(
        "--budget", type=float, default=300.0, help="seconds; later phases are skipped"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="every phase on the CPU, tiny models"
    )
    parser.add_argument("--device", default=None)
    parser.add_argument(
        "--models", nargs="*", default=(), choices=[m[0] for m in MODELS]
    )
    parser.add_argument("--phases", nargs="*", default=PHASES, choices=PHASES)
    args = parser.parse_args(argv)
    device = torch.device(args.device) if args.device else None
    if not args.dry_run:
        device = device or select_device()
        if device.type != "cuda":
            print(
                "error: no CUDA device here; the smoke test is for a GPU "
                "(`python -m attnconv.doctor` says why; --dry-run runs it small on the CPU)",
                file=sys.stderr,
            )
            return 2
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS
    record = smoke(
        Path(args.out), device, args.dry_run, args.budget, args.models, args.phases
    )
    print(f"results: {Path(args.out) / RESULTS_FILE}")
    if record["ok"]:
        print("ALL PHASES RAN")
        return 0
    print("FAILED PHASES: " + ", ".join(record["failed_phases"]))
    return 1


if __name__ == "__main__":
    sys.exit(main())
