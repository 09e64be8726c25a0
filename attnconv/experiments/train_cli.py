"""The training command line, ``python -m attnconv.train`` (see :mod:`attnconv.experiments.train`)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

import torch

from .models import MODEL_NAMES
from .profiles import PROFILES, default_profile_name, make_config
from .data import DataUnavailableError
from .train import NonFiniteLossError, RunFolderError, train

__all__ = ["main"]


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnconv.train",
        description="Train one of the paper's CIFAR-10 models (Cordonnier et al. 2020, Sec. 4) into a run folder.",
    )
    parser.add_argument("--model", required=True, choices=MODEL_NAMES)
    parser.add_argument("--profile", choices=sorted(PROFILES), default=None,
                        help="settings: paper (Sec. 4 exactly), gpu (~15 min per model on one GPU), cpu (bundled "
                             "sample, ~5 min per model on 2 cores). Default: gpu with CUDA, else cpu.")
    parser.add_argument("--run-dir", required=True, help="folder of the run (config, checkpoint, history)")
    parser.add_argument("--epochs", type=int, default=None,
                        help="override the profile's number of epochs (a finished run cannot be continued for more: "
                             "its learning-rate schedule has ended; train a new run instead)")
    parser.add_argument("--resume", action="store_true", help="continue the run saved in --run-dir")
    parser.add_argument("--data", choices=("auto", "full", "sample"), default=None,
                        help="data source (default: the profile's)")
    parser.add_argument("--data-root", default=None, help="folder of torchvision's CIFAR-10")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--device", default=None, help="e.g. cpu, cuda, cuda:1 (default: cuda if available)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    if args.epochs is not None and args.epochs < 1:
        parser.error("--epochs must be >= 1")
    if args.seed is not None and args.seed < 0:
        parser.error("--seed must be >= 0")
    if Path(args.run_dir).exists() and not Path(args.run_dir).is_dir():
        parser.error(f"--run-dir {args.run_dir} is a file, not a folder")
    if args.device is not None:
        try:
            device = torch.device(args.device)
        except RuntimeError:
            parser.error(f"--device {args.device!r} is not a device name (e.g. cpu, cuda, cuda:1)")
        if device.type == "cuda" and not torch.cuda.is_available():
            parser.error(f"--device {args.device}: no CUDA device is available here; use --device cpu")
    if args.threads is not None:
        if args.threads < 1:
            parser.error("--threads must be >= 1")
        torch.set_num_threads(args.threads)

    changes = {k: v for k, v in dict(epochs=args.epochs, data=args.data, data_root=args.data_root,
                                     seed=args.seed, device=args.device).items() if v is not None}
    profile = args.profile or default_profile_name()
    config = make_config(args.model, profile, **changes)
    print(f"Training {args.model} with the {profile} profile into {args.run_dir}.")
    try:
        history = train(config, args.run_dir, resume=args.resume, progress=not args.no_progress)
    except (RunFolderError, DataUnavailableError) as e:  # a bad request: say what and how out, exit 2
        print(f"error: {e}", file=sys.stderr)
        return 2
    except NonFiniteLossError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"\ninterrupted: the checkpoint of the last finished epoch is kept in {args.run_dir}; "
              "run the same command with --resume to continue.", file=sys.stderr)
        return 130
    last = history["epochs"][-1] if history["epochs"] else None
    if last:
        print(f"Done: {len(history['epochs'])} epochs, test accuracy {last['test_acc']:.4f}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
