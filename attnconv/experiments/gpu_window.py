"""``python -m attnconv.experiments.gpu_window --out DIR --budget S`` (``make gpu-window``): what a
lent GPU without network can do in ``S`` seconds.

1. The smoke test (:mod:`attnconv.gpu_smoke`) within ``--smoke-budget`` seconds, into
   ``DIR/gpu-smoke.json``.
2. The quadratic, learned and generalized models of the ``gpu-sample`` profile (the paper's
   models at paper size on the bundled sample, :data:`~attnconv.experiments.registry.GPU_SAMPLE_MODELS`),
   one after the other, each for as many of its registered epochs as its share of the time left
   allows (the time left divided by the models left, so a model that finishes early leaves its
   time to the next). Each run is the registered entry ``gpu-sample/<model>`` trained by
   :func:`~attnconv.experiments.train.train` into ``DIR/book/runs/gpu-sample/<model>``
   (history and checkpoint after every epoch); when its share is spent, a SIGUSR1 stops it after
   the current step with a mid-epoch checkpoint, so the run is resumed by the next window
   (``--budget`` again with the same ``--out``). Copy ``DIR/book/runs/gpu-sample`` into
   ``book/runs/`` and ``DIR/gpu-smoke.json`` into ``book/results/`` to commit what came back.

``DIR/gpu-window.json`` records each model's state (epochs done, seconds, stopped or complete)
and is written after each model. ``--dry-run``: the smoke test's dry run, then the three models
tiny on the CPU (2 epochs of 20 images): the unit test.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Optional, Sequence

__all__ = ["MARGIN_SECONDS", "window", "main"]

#: Seconds kept back at the end of the budget (the last checkpoint, the JSON).
MARGIN_SECONDS = 20.0
#: Epochs and model of the dry run (the smoke test's tiny attention model).
DRY_EPOCHS = 2
TINY = dict(hidden_size=16, intermediate_size=16, num_layers=2, downsample=4)


def _smoke(out: Path, budget: float, dry_run: bool, models: Sequence[str]) -> dict:
    """``python -m attnconv.gpu_smoke`` in its own process (a CUDA error there cannot take the
    window down; the smoke test is a command, above this package's layer), its record read back."""
    import attnconv

    root = str(Path(attnconv.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "attnconv.gpu_smoke", "--out", str(out)]
    command += ["--budget", str(budget)] + (["--dry-run"] if dry_run else [])
    if models:
        command += ["--models", *models]
    done = subprocess.run(command, env=env)
    path = out / "gpu-smoke.json"
    if not path.is_file():
        return {"ok": False, "failed_phases": [f"all (exit status {done.returncode})"]}
    record = json.loads(path.read_text())
    record.setdefault("ok", False)
    record.setdefault("failed_phases", ["unfinished"])
    return record


def _entry_config(model: str, dry_run: bool):
    from .registry import run_entry

    config = run_entry(f"gpu-sample/{model}").config
    if dry_run:
        config = replace(
            config,
            model_overrides=dict(TINY),
            epochs=DRY_EPOCHS,
            train_subset=20,
            test_subset=20,
            batch_size=10,
            eval_batch_size=20,
            device="cpu",
        )
    return config


def _train_for(config, run_dir: Path, seconds: float) -> dict:
    """Train (or resume) ``config`` in ``run_dir``, stopped by SIGUSR1 after ``seconds``."""
    from .store import CHECKPOINT, PARTIAL_CHECKPOINT
    from .train import PreemptedError, train

    resume = (run_dir / CHECKPOINT).is_file() or (
        run_dir / PARTIAL_CHECKPOINT
    ).is_file()
    done = threading.Event()

    def stop_when_spent():  # every 0.2 s after the deadline until train() has stopped
        if done.wait(max(seconds, 0.0)):
            return
        while not done.is_set():
            os.kill(os.getpid(), signal.SIGUSR1)
            done.wait(0.2)

    # a signal before train() installs its handler, or after it restored ours, is ignored
    previous = signal.signal(signal.SIGUSR1, lambda *a: None)
    timer = threading.Thread(target=stop_when_spent, daemon=True)
    timer.start()
    t0 = time.perf_counter()
    try:
        history = train(
            config,
            run_dir,
            resume=resume,
            progress=True,
            verbose=True,
            stop_signals=(signal.SIGUSR1,),
            csv=True,
        )
        state = "complete"
    except PreemptedError as e:
        history, state = None, f"stopped by the budget ({e})"
    finally:
        done.set()
        timer.join()
        signal.signal(signal.SIGUSR1, previous)
    from .store import read_history

    saved = read_history(run_dir) if (run_dir / "history.json").is_file() else None
    epochs = len(saved.epochs) if saved is not None else 0
    return {
        "state": state,
        "epochs_done": epochs,
        "epochs": config.epochs,
        "resumed": resume,
        "seconds": time.perf_counter() - t0,
        "complete": history is not None,
    }


def window(
    out: Path,
    budget: float,
    smoke_budget: float = 300.0,
    dry_run: bool = False,
    models: Optional[Sequence[str]] = None,
    smoke_models: Sequence[str] = (),
) -> dict:
    """The smoke test, then the gpu-sample models for the rest of ``budget`` (module docstring)."""
    from .registry import GPU_SAMPLE_MODELS
    from .train import write_json

    start = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    os.environ["ATTNCONV_BOOK_DIR"] = str((out / "book").resolve())
    record = {"budget_seconds": budget, "dry_run": dry_run, "models": {}}
    smoke = _smoke(
        out, min(smoke_budget, budget - MARGIN_SECONDS), dry_run, smoke_models
    )
    record["smoke_ok"] = smoke["ok"]
    record["smoke_failed_phases"] = smoke["failed_phases"]
    chosen = list(models or GPU_SAMPLE_MODELS)
    for i, model in enumerate(chosen):
        left = budget - MARGIN_SECONDS - (time.perf_counter() - start)
        share = left / (len(chosen) - i)
        run_dir = out / "book" / "runs" / "gpu-sample" / model
        if share <= 0:
            record["models"][model] = {"state": "not started: the budget is spent"}
        else:
            print(f"gpu-sample/{model}: up to {share:.0f} s", flush=True)
            try:
                record["models"][model] = _train_for(
                    _entry_config(model, dry_run), run_dir, share
                )
            except Exception as e:  # noqa: BLE001 - the next model still runs
                record["models"][model] = {"state": f"FAILED: {type(e).__name__}: {e}"}
        print(f"gpu-sample/{model}: {record['models'][model]['state']}", flush=True)
        write_json(out / "gpu-window.json", record)
    record["seconds"] = time.perf_counter() - start
    write_json(out / "gpu-window.json", record)
    return record


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnconv.experiments.gpu_window",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("--out", default="gpu-out")
    parser.add_argument("--budget", type=float, default=840.0, help="seconds in all")
    parser.add_argument("--smoke-budget", type=float, default=300.0)
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--models", nargs="*", default=None)
    args = parser.parse_args(argv)
    if not args.dry_run:
        import torch

        if not torch.cuda.is_available():
            print(
                "error: no CUDA device here; --dry-run runs the window small on the CPU",
                file=sys.stderr,
            )
            return 2
    record = window(
        Path(args.out), args.budget, args.smoke_budget, args.dry_run, args.models
    )
    failed = [m for m, r in record["models"].items() if "FAILED" in r["state"]]
    print(
        f"gpu window: smoke {'ok' if record['smoke_ok'] else 'FAILED'}; "
        + ", ".join(
            f"{m} {r.get('epochs_done', 0)}/{r.get('epochs', '?')} epochs"
            for m, r in record["models"].items()
        )
    )
    return 0 if record["smoke_ok"] and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
