"""The training command line, ``python -m attnconv.train`` (see :mod:`attnconv.experiments.train`)."""
from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

import torch

from .models import MODEL_NAMES
from .profiles import PROFILES, default_profile_name, make_config
from .train import NonFiniteLossError, RunExistsError, train

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
    parser.add_argument("--epochs", type=int, default=None, help="override the profile's number of epochs")
    parser.add_argument("--resume", action="store_true", help="continue the run saved in --run-dir")
    parser.add_argument("--data", choices=("auto", "full", "sample"), default=None,
                        help="data source (default: the profile's)")
    parser.add_argument("--data-root", default=None, help="folder of torchvision's CIFAR-10")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--device", default=None, help="e.g. cpu, cuda, cuda:1 (default: cuda if available)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
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
    except (NonFiniteLossError, RunExistsError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    last = history["epochs"][-1] if history["epochs"] else None
    if last:
        print(f"Done: {len(history['epochs'])} epochs, test accuracy {last['test_acc']:.4f}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
