"""The training command line, ``python -m attnconv.train`` (see :mod:`attnconv.experiments.train`).

The same command runs under ``torchrun`` (``torchrun --nproc_per_node=N -m attnconv.train …``):
each process then trains its share of every global batch (:mod:`attnconv.experiments.distributed`).

Exit status: 0 done; 1 the loss became NaN/inf; 2 a bad request (one line says why, nothing
changed; also ``--profile paper|gpu`` on a machine without CUDA, unless ``--device cpu``);
75 stopped by SIGTERM/SIGUSR1 after saving a checkpoint (resume with ``--resume``);
76 another process of a multi-process run died or stopped answering; 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from typing import Optional, Sequence

import torch

from .checkpoints import RunFolderError
from .data import DataUnavailableError
from .device import check_profile_device, cuda_available
from .distributed import (
    DEFAULT_TIMEOUT_SECONDS,
    EXIT_PEER_LOST,
    EXIT_PREEMPTED,
    DistributedSetupError,
    PeerLostError,
    check_world_size,
    environment_world_size,
    init_from_environment,
)
from .models import MODEL_NAMES
from .profiles import PROFILES, default_profile_name, make_config
from .train import NonFiniteLossError, PreemptedError, train
from .train_config import TrainConfig

__all__ = ["main"]

STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR1)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m attnconv.train",
        description="Train one of the paper's CIFAR-10 models (Cordonnier et al. 2020, Sec. 4) into a run folder. "
        "Under torchrun (torchrun --nproc_per_node=N -m attnconv.train ...) N processes share each "
        "global batch of the profile (the paper's 100): N must divide it.",
    )
    _add_run_arguments(parser)
    _add_machine_arguments(parser)
    return parser


def _add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments that say what to train: model, profile or config, run folder, data, seed."""
    parser.add_argument(
        "--model",
        choices=MODEL_NAMES,
        default=None,
        help="the model (required without --config)",
    )
    parser.add_argument(
        "--profile",
        choices=sorted(PROFILES),
        default=None,
        help="settings: paper (Sec. 4 exactly), gpu (~15 min per model on one GPU), cpu (bundled "
        "sample, ~5 min per model on 2 cores). Default: gpu with CUDA, else cpu.",
    )
    parser.add_argument(
        "--config",
        default=None,
        help="a TrainConfig as JSON (e.g. a run's config.json) instead of --model/--profile",
    )
    parser.add_argument(
        "--run-dir",
        required=True,
        help="folder of the run (config, checkpoint, history)",
    )
    parser.add_argument(
        "--epochs",
        type=int,
        default=None,
        help="override the profile's number of epochs (a finished run cannot be continued for more: "
        "its learning-rate schedule has ended; train a new run instead)",
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue the run saved in --run-dir"
    )
    parser.add_argument(
        "--allow-precision-change",
        action="store_true",
        help="with --resume: continue even when this machine computes in another precision "
        "than the run's last session (each session is recorded in the history)",
    )
    parser.add_argument(
        "--data",
        choices=("auto", "full", "sample"),
        default=None,
        help="data source (default: the profile's)",
    )
    parser.add_argument(
        "--data-root", default=None, help="folder of torchvision's CIFAR-10"
    )
    parser.add_argument("--seed", type=int, default=None)


def _add_machine_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments that say how to train: device, precision, threads, processes, logs."""
    parser.add_argument(
        "--device",
        default=None,
        help="e.g. cpu, cuda, cuda:1 (default: cuda if available; under torchrun cuda:LOCAL_RANK, "
        "or cpu with --device cpu)",
    )
    parser.add_argument(
        "--precision",
        choices=("fp32", "bf16", "fp16"),
        default=None,
        help="default: bf16 autocast on CUDA (fp16 with loss scaling on cards without bf16), "
        "fp32 on the CPU; bf16 on the CPU runs the GPU's code path",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads (default: torch's choice)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument(
        "--no-sync-batchnorm",
        action="store_true",
        help="under torchrun, batch-norm statistics per process instead of over the global batch",
    )
    parser.add_argument(
        "--dist-timeout",
        type=float,
        default=DEFAULT_TIMEOUT_SECONDS,
        help="under torchrun, seconds a process waits for the others before it stops "
        f"(default {DEFAULT_TIMEOUT_SECONDS})",
    )
    parser.add_argument(
        "--csv",
        action="store_true",
        help="also write steps.csv and epochs.csv in the run folder",
    )
    parser.add_argument(
        "--tensorboard",
        default=None,
        metavar="DIR",
        help="log the losses to TensorBoard in DIR (needs the tensorboard package)",
    )


def _config(args, parser) -> TrainConfig:
    changes = {
        k: v
        for k, v in dict(
            epochs=args.epochs,
            data=args.data,
            data_root=args.data_root,
            seed=args.seed,
            device=args.device,
            precision=args.precision,
        ).items()
        if v is not None
    }
    if args.config is None:
        if args.model is None:
            parser.error("--model is required (or --config FILE)")
        return make_config(
            args.model, args.profile or default_profile_name(), **changes
        )
    if args.profile is not None:
        parser.error(
            "--config and --profile cannot be combined: the config file holds every setting"
        )
    try:
        saved = json.loads(Path(args.config).read_text())
        config = TrainConfig.from_dict({**saved, **changes})
    except (OSError, ValueError, TypeError) as e:
        parser.error(
            f"--config {args.config}: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
        )
    if args.model is not None and args.model != config.model:
        parser.error(
            f"--model {args.model} differs from the model of --config ({config.model})"
        )
    return config


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.epochs is not None and args.epochs < 1:
        parser.error("--epochs must be >= 1")
    if args.seed is not None and args.seed < 0:
        parser.error("--seed must be >= 0")
    if args.dist_timeout <= 0:
        parser.error("--dist-timeout must be > 0")
    if Path(args.run_dir).exists() and not Path(args.run_dir).is_dir():
        parser.error(f"--run-dir {args.run_dir} is a file, not a folder")
    if args.device is not None:
        try:
            device = torch.device(args.device)
        except RuntimeError:
            parser.error(
                f"--device {args.device!r} is not a device name (e.g. cpu, cuda, cuda:1)"
            )
        if device.type == "cuda" and not cuda_available():
            parser.error(
                f"--device {args.device}: no CUDA device is available here; use --device cpu"
            )
    if args.threads is not None:
        if args.threads < 1:
            parser.error("--threads must be >= 1")
        torch.set_num_threads(args.threads)
    if args.tensorboard is not None:
        import importlib

        try:
            importlib.import_module(
                "torch.utils.tensorboard"
            )  # needs the tensorboard package
        except ImportError:
            parser.error(
                "--tensorboard needs the tensorboard package (pip install tensorboard); "
                "or use --csv for steps.csv and epochs.csv in the run folder"
            )
    config = _config(args, parser)
    refusal = check_profile_device(config.profile, args.device)
    if refusal is not None:
        print(f"error: {refusal}", file=sys.stderr)
        return 2

    world = environment_world_size()
    try:
        if world > 1:
            check_world_size(config.batch_size, world)
        ctx = (
            init_from_environment(args.device, args.dist_timeout) if world > 1 else None
        )
    except DistributedSetupError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    lead = ctx is None or ctx.is_writer
    try:
        return _run(args, config, ctx, lead)
    finally:
        if ctx is not None:
            try:
                torch.distributed.destroy_process_group()
            except Exception:  # a dead peer can make the tear-down fail too; the status is already decided
                pass


def _run(args, config: TrainConfig, ctx, lead: bool) -> int:
    def say(text: str, err: bool = False):
        if lead:
            print(text, file=sys.stderr if err else sys.stdout, flush=True)

    processes = (
        f" on {ctx.world_size} processes ({ctx.backend})" if ctx is not None else ""
    )
    say(
        f"Training {config.model} with the {config.profile} profile into {args.run_dir}{processes}."
    )
    try:
        history = train(
            config,
            args.run_dir,
            resume=args.resume,
            allow_precision_change=args.allow_precision_change,
            progress=not args.no_progress,
            distributed=ctx,
            sync_batchnorm=not args.no_sync_batchnorm,
            stop_signals=STOP_SIGNALS,
            csv=args.csv,
            tensorboard=args.tensorboard,
        )
    except (
        RunFolderError,
        DataUnavailableError,
        DistributedSetupError,
    ) as e:  # a bad request: exit 2
        say(f"error: {e}", err=True)
        return 2
    except NonFiniteLossError as e:
        say(f"error: {e}", err=True)
        return 1
    except PreemptedError as e:
        say(f"preempted: {e}", err=True)
        return EXIT_PREEMPTED
    except PeerLostError as e:  # every surviving process says so: the first lines name the dead one's peers
        print(f"error: {e}", file=sys.stderr, flush=True)
        return EXIT_PEER_LOST
    except KeyboardInterrupt:
        say(
            f"\ninterrupted: the checkpoint of the last finished epoch is kept in {args.run_dir}; "
            "run the same command with --resume to continue.",
            err=True,
        )
        return 130
    last = history["epochs"][-1] if history["epochs"] else None
    if last:
        say(
            f"Done: {len(history['epochs'])} epochs, test accuracy {last['test_acc']:.4f}."
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
