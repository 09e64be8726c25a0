"""How much the first epoch of a run moves when the CPU kernels change (the saved-run check's tolerances).

Convolution, vectorised and BLAS kernels round differently on different instruction sets and
thread counts, and training amplifies the difference. This measures it: the first epoch of each
saved run's configuration is re-trained in a fresh process under several kernel paths that
emulate other CPUs (``ATEN_CPU_CAPABILITY``, ``ONEDNN_MAX_CPU_ISA``, ``MKL_ENABLE_INSTRUCTIONS``,
1 or 2 threads), and once with another seed (what a run of other settings looks like)::

    python -m attnconv.experiments.kernel_spread --runs book/runs/cpu --out book/results/kernel-spread.json

The JSON holds, per run and kernel path, the epoch-1 losses and accuracies and the losses of the
first :data:`~attnconv.experiments.train_step.RECORDED_STEPS` steps; :func:`summarise` turns it into
the largest deviation from the machine's own path per quantity.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

from .store import HISTORY
from .train import train
from .train_config import TrainConfig

__all__ = ["KERNEL_PATHS", "measure_run", "summarise", "main"]

#: Environment settings that emulate other CPUs on an AVX-512 machine (and thread counts).
KERNEL_PATHS: Dict[str, Dict[str, str]] = {
    "native, 2 threads": {"threads": "2"},
    "native, 1 thread": {"threads": "1"},
    "ATen avx2": {"threads": "2", "ATEN_CPU_CAPABILITY": "avx2"},
    "AVX2 machine (ATen, oneDNN, MKL)": {
        "threads": "2",
        "ATEN_CPU_CAPABILITY": "avx2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
    },
    "ATen default": {"threads": "2", "ATEN_CPU_CAPABILITY": "default"},
    "ATen default, 1 thread": {"threads": "1", "ATEN_CPU_CAPABILITY": "default"},
}
REFERENCE = "native, 2 threads"


def _epoch_one(config_json: str, threads: int) -> dict:
    import torch

    torch.set_num_threads(threads)
    config = TrainConfig(**json.loads(config_json))
    with tempfile.TemporaryDirectory() as tmp:
        history = train(config, tmp, progress=False, stop_after=1, verbose=False)
    e = history["epochs"][0]
    return {k: e[k] for k in ("train_loss", "test_loss", "train_acc", "test_acc")} | {
        "first_step_losses": history["first_step_losses"]
    }


def measure_run(config: dict, seed_offset: int = 1) -> Dict[str, dict]:
    """Epoch 1 of ``config`` (a history's ``config``) under every :data:`KERNEL_PATHS` entry and,
    on the reference path, with the seed plus ``seed_offset``; each in a fresh process."""
    out = {}
    variants = [(name, env, config) for name, env in KERNEL_PATHS.items()]
    variants.append(
        (
            f"seed + {seed_offset}",
            KERNEL_PATHS[REFERENCE],
            dict(config, seed=config["seed"] + seed_offset),
        )
    )
    for name, env, cfg in variants:
        env = dict(env)
        threads = env.pop("threads")
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "attnconv.experiments.kernel_spread",
                "--worker",
                json.dumps(cfg),
                threads,
            ],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            check=True,
        )
        out[name] = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"  {name}: train loss {out[name]['train_loss']:.5f}", file=sys.stderr)
    return out


def summarise(results: Dict[str, Dict[str, dict]]) -> Dict[str, dict]:
    """Per run: the largest deviation from the reference path over the kernel paths, and the
    deviation of the other seed, for the epoch-1 losses (relative), accuracies (absolute) and
    the first step losses (relative, at steps 1, 5, 10, 20 and the largest over all)."""
    summary = {}
    for run, paths in results.items():
        ref = paths[REFERENCE]

        def dev(other):
            rel = lambda a, b: abs(a - b) / abs(b)
            steps = [
                rel(a, b)
                for a, b in zip(other["first_step_losses"], ref["first_step_losses"])
            ]
            return {
                "train_loss": rel(other["train_loss"], ref["train_loss"]),
                "test_loss": rel(other["test_loss"], ref["test_loss"]),
                "train_acc": abs(other["train_acc"] - ref["train_acc"]),
                "test_acc": abs(other["test_acc"] - ref["test_acc"]),
                "step_1": steps[0],
                "step_5": steps[4],
                "step_10": steps[9],
                "step_20": steps[19],
                "steps_max": max(steps),
            }

        kernels = [
            dev(v) for k, v in paths.items() if k in KERNEL_PATHS and k != REFERENCE
        ]
        seeds = [dev(v) for k, v in paths.items() if k.startswith("seed")]
        summary[run] = {
            "kernel_paths_max": {q: max(d[q] for d in kernels) for q in kernels[0]},
            "other_seed": seeds[0] if seeds else None,
        }
    return summary


def main(argv: List[str] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--worker":
        print(json.dumps(_epoch_one(argv[1], int(argv[2]))))
        return 0
    parser = argparse.ArgumentParser(
        prog="python -m attnconv.experiments.kernel_spread",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument(
        "--runs",
        default="book/runs/cpu",
        help="folder of saved runs (each with history.json)",
    )
    parser.add_argument(
        "--only",
        nargs="*",
        default=None,
        help="run folder names to measure (default: all)",
    )
    parser.add_argument("--out", required=True, help="JSON file to write")
    args = parser.parse_args(argv)
    results = {}
    for folder in sorted(Path(args.runs).iterdir()):
        if not (folder / HISTORY).is_file() or (
            args.only and folder.name not in args.only
        ):
            continue
        config = json.loads((folder / HISTORY).read_text())["config"]
        print(f"{folder.name}:", file=sys.stderr)
        results[folder.name] = measure_run(config)
        Path(args.out).write_text(
            json.dumps({"results": results, "summary": summarise(results)}, indent=1)
        )
    print(json.dumps(summarise(results), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
