"""The re-check of a saved run: :func:`verify_first_epoch` re-trains its first epoch and compares
it with the saved history, so CI checks that the committed numbers are what the code produces.

Which runs the book uses, and where they live, is the registry's business
(:mod:`attnconv.experiments.registry`); making them is ``python -m attnconv.regenerate``'s.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Optional

import torch

from .models import build_model
from .store import HISTORY
from .train import Run, attention_record, train

__all__ = ["verify_first_epoch", "replay_first_epoch", "add_first_step_losses"]


#: Tolerances of :func:`verify_first_epoch`: the measured spread between CPU kernel paths
#: (:data:`MEASURED_SPREAD`) with a margin, and far below what another seed or edited numbers do.
STEP_LOSS_TOLERANCE = 1e-4  # relative, each checked first-step loss (kernel paths: <= 3e-6; seeds: >= 5e-4)
CHECKED_STEPS = {
    "resnet18": 2
}  # first-step losses compared per model (default: all recorded ones)
LOSS_TOLERANCE = 0.03  # relative, epoch-1 mean training loss (kernel paths: <= 1.0 %)
ACCURACY_TOLERANCE = (
    0.06  # absolute, epoch-1 training accuracy (kernel paths: <= 2.2 points)
)
INITIAL_TOLERANCE = (
    1e-4  # absolute, the heads' initial parameters (drawn from the seed; the learned
)
# encoding's centres pass through a float32 softmax: 1.4e-6 seen here)

#: What the tolerances rest on (``python -m attnconv.experiments.kernel_spread``, 2026-11-23, Xeon
#: with AVX-512 and AMX; result in book/results/kernel-spread.json). Epoch 1 of each committed cpu
#: run was re-trained under six kernel paths: native (AVX-512) with 2 and 1 threads, ATen avx2,
#: an AVX2 machine (ATen avx2 + ONEDNN_MAX_CPU_ISA=AVX2 + MKL_ENABLE_INSTRUCTIONS=AVX2), ATen
#: default (generic, non-vectorised) with 2 and 1 threads; and once with seed + 1.
#: Largest relative deviation from the native 2-thread path:
#:
#: ====================  ===========  ===========  ============  ================  ==============
#: run                   step 1       steps 1-20   epoch-1 loss  epoch-1 accuracy  seed+1, steps
#: ====================  ===========  ===========  ============  ================  ==============
#: quadratic             0            1.0e-7       0             0                 3.3e-2 (step 1)
#: generalized           0            2.2e-7       0             0                 1.7e-2
#: learned               1.0e-7       1.2e-7       8.9e-8        0                 9.8e-3
#: learned + content     1.0e-7       2.2e-7       1.8e-7        0                 2.8e-2
#: quadratic, 16 heads   0            2.1e-7       0             0                 4.6e-4
#: ResNet18              9.8e-8       8.1e-2       9.8e-3        2.2 points        4.9e-2
#: ====================  ===========  ===========  ============  ================  ==============
#:
#: ResNet18 (BatchNorm, learning rate 0.1 from the first step) is chaotic: its step losses agree
#: to 3e-6 for two steps, 6e-4 at step 3 and 2e-2 at step 4, so only its first two are compared;
#: its test accuracy after epoch 1 moved by 8.9 points between kernel paths. The attention models
#: (warm-up) agree to 2.2e-7 on all 20 recorded steps.
MEASURED_SPREAD = "see the table above"


def _initial_heads_match(run: Run, tolerance: float) -> Optional[bool]:
    """The heads' parameters of a freshly built model (same config, same seed) against the
    history's ``initial_attention``; ``None`` for a model without attention parameters."""
    saved = run.history.get("initial_attention") or []
    if not saved:
        return None
    torch.manual_seed(run.config.seed)
    fresh = attention_record(build_model(run.config.model_config()))
    if len(fresh) != len(saved):
        return False
    for a, b in zip(fresh, saved):
        if set(a) != set(b):
            return False
        for key in a:
            x, y = (
                torch.as_tensor(a[key], dtype=torch.float64),
                torch.as_tensor(b[key], dtype=torch.float64),
            )
            if x.shape != y.shape or not bool(
                torch.allclose(x, y, rtol=0, atol=tolerance)
            ):
                return False
    return True


def replay_first_epoch(run: Run) -> dict:
    """Re-train the first epoch of ``run``'s configuration in a temporary folder, on the device
    type the run was made on (a CPU run is replayed on the CPU, not on a GPU in bf16), and return
    that history."""
    config = run.config
    saved_device = str(run.history.get("device", "cpu")).split(":")[0]
    if saved_device == "cpu" and config.device is None:
        config = replace(config, device="cpu")
    with tempfile.TemporaryDirectory() as tmp:
        return train(config, tmp, progress=False, stop_after=1, verbose=False)


def verify_first_epoch(
    run: Run,
    loss_tolerance: float = LOSS_TOLERANCE,
    accuracy_tolerance: float = ACCURACY_TOLERANCE,
    step_tolerance: float = STEP_LOSS_TOLERANCE,
    initial_tolerance: float = INITIAL_TOLERANCE,
    replayed: Optional[dict] = None,
) -> dict:
    """Check that a saved run came from this code and its config: ``{"match": bool, "checks":
    {...}, "saved": {...}, "retrained": {...}}``.

    The checks, each robust to the CPU the reader has (kernels round differently on AVX-512,
    AVX2 and generic paths and with other thread counts, and training amplifies it):

    * ``initial_heads`` — the heads' initial parameters (drawn from the seed) equal the saved
      ``initial_attention`` within ``initial_tolerance`` (``None`` for ResNet18: no heads);
    * ``first_steps`` — the losses of the first recorded steps of the replayed first epoch
      (:func:`replay_first_epoch`; the first :data:`CHECKED_STEPS` of them for a chaotic model)
      agree with the saved ones within ``step_tolerance`` (relative): before training amplifies
      rounding they move by at most 3e-6 between kernel paths, by 5e-4 to 5e-2 with another seed;
    * ``epoch_1`` — the epoch's mean training loss within ``loss_tolerance`` (relative) and its
      training accuracy within ``accuracy_tolerance``.

    The test loss and accuracy after epoch 1 are returned but not checked: for ResNet18 they
    swing by several points between CPUs (17.7 % to 26.5 % test accuracy over the kernel paths of
    :data:`MEASURED_SPREAD`). A run of another
    seed, another learning rate or edited numbers fails. ``replayed``: a history from
    :func:`replay_first_epoch` to reuse."""
    again_history = replayed if replayed is not None else replay_first_epoch(run)
    saved, again = run.epochs[0], again_history["epochs"][0]
    keys = ("train_loss", "test_loss", "train_acc", "test_acc")
    n = CHECKED_STEPS.get(run.config.model)
    steps, fresh = (
        run.history.get("first_step_losses"),
        again_history["first_step_losses"],
    )
    if steps:
        steps, fresh = steps[:n], fresh[:n]
    checks = {
        "initial_heads": _initial_heads_match(run, initial_tolerance),
        "first_steps": None
        if not steps
        else (
            len(steps) == len(fresh)
            and all(abs(a - b) <= step_tolerance * abs(a) for a, b in zip(steps, fresh))
        ),
        "epoch_1": abs(saved["train_loss"] - again["train_loss"])
        <= loss_tolerance * abs(saved["train_loss"])
        and abs(saved["train_acc"] - again["train_acc"]) <= accuracy_tolerance,
    }
    ok = all(v is not False for v in checks.values())
    return {
        "match": ok,
        "checks": checks,
        "saved": {k: saved[k] for k in keys},
        "retrained": {k: again[k] for k in keys},
    }


def add_first_step_losses(run_dir, note: str) -> dict:
    """Give a saved history made before first-step losses were recorded its ``first_step_losses``:
    replay its first epoch, require the other checks of :func:`verify_first_epoch` to pass, and
    store the replayed step losses with ``first_step_losses_note`` (``note``: when and where)."""
    from .train import load_run, write_json

    run_dir = Path(run_dir)
    run = load_run(run_dir)
    if run.history.get("first_step_losses"):
        raise ValueError(f"{run_dir} already records its first step losses")
    replayed = replay_first_epoch(run)
    check = verify_first_epoch(run, replayed=replayed)
    if not check["match"]:
        raise ValueError(
            f"{run_dir}: epoch 1 does not verify, so no step losses are added: {check}"
        )
    run.history["first_step_losses"] = replayed["first_step_losses"]
    run.history["first_step_losses_note"] = note
    write_json(run_dir / HISTORY, run.history)
    return check
