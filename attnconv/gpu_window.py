"""``python -m attnconv.gpu_window --budget 480 --out gpu-out`` (``make gpu-window``): what a lent
GPU does in a short window, every phase under a hard time limit, all it returns in one flat folder.

One remote command may run at most 600 s, so ``--budget`` (default :data:`DEFAULT_BUDGET`, 8
minutes) is refused above :data:`MAX_BUDGET`. The phases run in priority order, each as child
processes killed when the phase's limit is up (recorded as ``stopped``; the next phase runs).
Each phase has a share of the budget (:data:`PHASES`; :data:`MARGIN_SECONDS` kept back for
packing): its limit is the time left less the shares of the phases after it, so a phase gets
its own share and whatever the phases before it left unused, and the last one all that is left:

1. ``confirm``, ``followup``, ``beyond`` — the protocol's runs the book most needs:
   ``python -m attnconv.regenerate --protocol confirm --fp32`` in ``--workers`` processes side by
   side (they share one queue with locks), then ``--protocol followup`` (the registered
   follow-up) and ``--protocol beyond`` likewise. Runs are written
   into the book (``--book``; default this checkout's), and a killed run resumes from its
   folder on the next call.
2. ``smoke`` — :mod:`attnconv.gpu_smoke` (its ``gpu-smoke.json``).
3. ``paper_epoch`` — one paper epoch timed with the real
   :func:`~attnconv.experiments.train.train` (evaluation at batch 500 and a checkpoint
   included) for :data:`PAPER_EPOCH_MODELS`, on the sample tiled to 50,000 training and 10,000
   test images: seconds per epoch and hours per 300 epochs, measured.
4. ``sample_runs`` — the ``gpu-sample`` runs (paper size on the sample, not committed: the
   registry marks them so) with the time that is left; they resume on the next call.

``--out`` gets at most 8 files, each under 16 MiB, no folders: ``summary.json`` (the phases:
state, seconds, limit), ``gpu-smoke.json``, ``paper-epoch.json``, ``runs.tar.gz`` (the protocol's
histories, configs and results: ``runs/confirm*``, ``runs/followup*``, ``runs/beyond3*``,
``results/confirm``, ``results/followup``, ``results/beyond3``; the checkpoints of runs stopped part-way, so the CPU resumes them, and of
runs a study not yet made reads, so the CPU makes it from the GPU's weights; then
``runs-2.tar.gz`` … should one pass 12 MiB) and
``window.log`` (the tail of every phase's output).
A second call with the same ``--out`` skips the phases that finished. Scratch (logs, the smoke
test's and the paper epochs' folders) goes to ``--work`` (default ``gpu-work``, git-ignored).

``--phases confirm smoke`` runs only those phases, the budget shared among them (a window
spent on the fresh seeds alone: ``--phases confirm``).

``python -m attnconv.gpu_window --unpack gpu-out`` puts what came back into the book: the
archive into ``book/runs`` and ``book/results``, ``gpu-smoke.json`` and ``paper-epoch.json``
into ``book/results``; then ``git add book/runs book/results``. ``--dry-run``: every phase on
the CPU with tiny settings, in seconds (the unit test).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, List, Optional, Sequence

__all__ = [
    "DEFAULT_BUDGET",
    "MAX_BUDGET",
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "PHASES",
    "PAPER_EPOCH_MODELS",
    "Phase",
    "window",
    "unpack",
    "main",
]

DEFAULT_BUDGET = 480.0
#: One remote command may run 600 s; the machine's start and the transfers need the rest.
MAX_BUDGET = 570.0
#: Seconds kept back at the end for the archive and the summary.
MARGIN_SECONDS = 15.0
#: Seconds between a phase's SIGTERM and its SIGKILL, the last of its limit (at most a quarter
#: of it): a phase has ended when its limit is up.
GRACE_SECONDS = 5.0
MAX_FILES = 8
MAX_FILE_BYTES = 16 * 2**20
SUMMARY, SMOKE, PAPER_EPOCH, ARCHIVE, LOG = (
    "summary.json",
    "gpu-smoke.json",
    "paper-epoch.json",
    "runs.tar.gz",
    "window.log",
)
#: What the archive takes from the book (globs under it); checkpoints only as below.
ARCHIVED = (
    "runs/confirm*/**/*.json",
    "runs/beyond3*/**/*.json",
    "runs/followup*/**/*.json",
    "results/confirm/*",
    "results/beyond3/*",
    "results/followup/*",
)
#: The checkpoints of a protocol run the window stopped part-way (its ``history.json`` not
#: ``complete``): about 1 MB each, so the CPU resumes it where the GPU stopped. (The weights of a
#: complete run that an unmade study reads come back too: :func:`_study_inputs`.)
UNFINISHED_CHECKPOINTS = (
    "runs/confirm*/**/checkpoint*.pt",
    "runs/beyond3*/**/checkpoint*.pt",
    "runs/followup*/**/checkpoint*.pt",
)
PAPER_EPOCH_MODELS = ("quadratic", "learned_content", "resnet18")
#: Tiny models of ``--dry-run``.
TINY = {
    "resnet18": dict(widths=(4, 4, 8, 8)),
    "other": dict(hidden_size=16, intermediate_size=16, num_layers=2, downsample=4),
}
LOG_TAIL_BYTES = 64 * 2**10
#: The archives: a new one once one holds this much (compressed), at most this many.
ARCHIVE_PART_BYTES = 12 * 2**20
ARCHIVE_PARTS = 4
_SELF = "attnconv.gpu_window"


@dataclass(frozen=True)
class Phase:
    """A phase: its ``name``, its ``share`` of the budget (kept for it while the phases before
    it run), and ``commands(ctx)``: the child processes it runs side by side (argument lists)."""

    name: str
    share: float
    commands: Callable[["_Context"], List[List[str]]]


@dataclass
class _Context:
    out: Path
    work: Path
    book: Optional[Path]
    dry_run: bool
    workers: int
    limit: float = 0.0


def _module(name: str, *args: str) -> List[str]:
    return [sys.executable, "-m", name, *args]


def _protocol(part: str) -> Callable[[_Context], List[List[str]]]:
    def commands(ctx: _Context) -> List[List[str]]:
        if ctx.dry_run:  # tiny runs where the protocol's would go, in as many processes
            prefix = {"confirm": "confirm-dry", "followup": "followup-dry"}.get(
                part, "beyond3-dry"
            )
            return [
                _module(_SELF, "--tiny-run", f"{prefix}/worker{i}")
                for i in range(ctx.workers)
            ]
        regenerate = _module("attnconv.regenerate", "--protocol", part, "--fp32")
        return [regenerate] * ctx.workers

    return commands


def _smoke(ctx: _Context) -> List[List[str]]:
    budget = max(ctx.limit - 30, 0)  # its last phases are skipped, not killed
    command = _module("attnconv.gpu_smoke", "--out", str(ctx.work / "smoke"))
    command += ["--budget", f"{budget:.0f}"]
    tiny = [
        "--dry-run",
        "--models",
        "quadratic",
        "--phases",
        "environment",
        "per_model",
    ]
    return [command + (tiny if ctx.dry_run else [])]


def _paper_epoch(ctx: _Context) -> List[List[str]]:
    command = _module(_SELF, "--paper-epoch", str(ctx.work / "paper-epoch"))
    return [command + (["--dry-run"] if ctx.dry_run else [])]


def _sample_runs(ctx: _Context) -> List[List[str]]:
    if ctx.dry_run:
        return [_module(_SELF, "--tiny-run", "gpu-sample-dry/quadratic")]
    return [_module(_SELF, "--sample-runs")]


#: The phases in priority order and their shares of the budget (the last: what is left).
PHASES = (
    Phase("confirm", 0.05, _protocol("confirm")),
    Phase("followup", 0.35, _protocol("followup")),
    Phase("beyond", 0.15, _protocol("beyond")),
    Phase("smoke", 0.22, _smoke),
    Phase("paper_epoch", 0.18, _paper_epoch),
    Phase("sample_runs", 0.0, _sample_runs),
)


# ----------------------------------------------------------------------------- the phases run
def _environment(ctx: _Context) -> dict:
    """The children's environment: this checkout on the path, the book chosen."""
    from .experiments.store import repo_root

    root = str(repo_root())
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    env.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    if ctx.book is not None:
        env["ATTNCONV_BOOK_DIR"] = str(ctx.book.resolve())
    if ctx.dry_run:  # tiny models on a shared CPU: threads cost more than they give
        env["OMP_NUM_THREADS"] = "1"
    return env


def _stop(processes, grace: float) -> None:
    """SIGTERM to each child's process group, SIGKILL to what is left after ``grace`` s."""
    for p in processes:
        _signal_group(p, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in processes:
        try:
            p.wait(max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            _signal_group(p, signal.SIGKILL)
            p.wait()


def _signal_group(process, sig) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass  # the group has gone


#: Seconds between two packings of what a phase has made so far (a window cut short by the
#: machine's own limit still returns the runs finished before it).
PACK_EVERY_SECONDS = 60.0


def run_phase(
    phase: Phase, ctx: _Context, tick: Optional[Callable[[], None]] = None
) -> dict:
    """Run ``phase``'s children side by side, each in its own process group, its output in
    ``work/<phase>-<i>.log``; all stopped by ``ctx.limit`` seconds (SIGTERM, then SIGKILL).
    ``tick`` is called every :data:`PACK_EVERY_SECONDS` while they run."""
    ctx.work.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    processes, logs = [], []
    env = _environment(ctx)
    for i, command in enumerate(phase.commands(ctx)):
        log = ctx.work / f"{phase.name}-{i}.log"
        with open(log, "ab") as f:
            processes.append(
                subprocess.Popen(
                    command,
                    stdout=f,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                )
            )
        logs.append(log)
    grace = min(GRACE_SECONDS, ctx.limit / 4)
    overran = False
    packed = t0
    while any(p.poll() is None for p in processes):
        if time.monotonic() - t0 > ctx.limit - grace:
            overran = True
            _stop(processes, grace)
            break
        if tick is not None and time.monotonic() - packed > PACK_EVERY_SECONDS:
            tick()
            packed = time.monotonic()
        time.sleep(0.2)
    codes = [p.returncode for p in processes]
    state = "stopped at its limit" if overran else "complete"
    if not overran and any(codes):
        state = f"failed (exit status {', '.join(map(str, codes))})"
    return {
        "state": state,
        "seconds": time.monotonic() - t0,
        "limit_seconds": ctx.limit,
        "processes": len(processes),
        "exit_status": codes,
        "logs": [str(p) for p in logs],
    }


def _limit(phases: Sequence[Phase], i: int, left: float, usable: float) -> float:
    """Phase ``i``'s limit: the ``left`` seconds less the shares of ``usable`` seconds kept for
    the phases after it."""
    return max(left - usable * sum(p.share for p in phases[i + 1 :]), 0.0)


# ----------------------------------------------------------------------------- the window
def window(
    out: Path,
    budget: float = DEFAULT_BUDGET,
    dry_run: bool = False,
    work: Optional[Path] = None,
    book: Optional[Path] = None,
    workers: int = 8,
    phases: Sequence[Phase] = PHASES,
) -> dict:
    """Run ``phases`` within ``budget`` seconds into ``out`` (module docstring); returns the
    summary. Phases that finished in an earlier call with the same ``out`` are skipped."""
    start = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    work = work or Path("gpu-work")
    if dry_run and book is None:
        book = work / "book"  # a dry run never writes into this checkout's book
    ctx = _Context(out, work, book, dry_run, workers)
    summary = _read_json(out / SUMMARY) or {"phases": {}}
    summary.update(
        budget_seconds=budget, dry_run=dry_run, calls=summary.get("calls", 0) + 1
    )
    for i, phase in enumerate(phases):
        if summary["phases"].get(phase.name, {}).get("state") == "complete":
            continue
        left = budget - MARGIN_SECONDS - (time.monotonic() - start)
        ctx.limit = _limit(phases, i, left, budget - MARGIN_SECONDS)
        if ctx.limit < 1:
            summary["phases"][phase.name] = {
                "state": "not started: the budget is spent"
            }
        else:
            print(f"phase {phase.name}: up to {ctx.limit:.0f} s", flush=True)
            summary["phases"][phase.name] = {"state": "running"}
            summary["phases"][phase.name] = run_phase(
                phase, ctx, lambda: _collect(ctx, summary)
            )
        print(
            f"phase {phase.name}: {summary['phases'][phase.name]['state']}", flush=True
        )
        _collect(ctx, summary)
    summary["seconds"] = time.monotonic() - start
    _collect(ctx, summary)
    return summary


def _collect(ctx: _Context, summary: dict) -> None:
    """Write what has come so far into ``out``: the summary, the smoke test's and the paper
    epochs' JSON, the archive of the runs and the log's tail; each file under the limit."""
    out = ctx.out
    for source, name in (
        (ctx.work / "smoke" / SMOKE, SMOKE),
        (ctx.work / "paper-epoch" / PAPER_EPOCH, PAPER_EPOCH),
    ):
        if source.is_file():
            shutil.copyfile(source, out / name)
    _archive(_book(ctx), out / ARCHIVE)
    _log_tail(ctx.work, out / LOG)
    too_big = [
        f.name
        for f in out.iterdir()
        if f.is_file() and f.stat().st_size >= MAX_FILE_BYTES
    ]
    for name in too_big:  # what would not come back is dropped, and said so
        (out / name).unlink()
    summary["dropped_over_16_mib"] = too_big
    names = {f.name for f in out.iterdir() if f.is_file()} | {SUMMARY}
    summary["files"] = sorted(names)
    (out / SUMMARY).write_text(json.dumps(summary, indent=1))


def _book(ctx: _Context) -> Path:
    from .experiments.store import book_dir

    return ctx.book if ctx.book is not None else book_dir()


def _archive(book: Path, target: Path) -> None:
    """The protocol's histories, configs and results under ``book`` in ``.tar.gz`` archives:
    ``target``, then ``runs-2.tar.gz`` … once one holds :data:`ARCHIVE_PART_BYTES` (at most
    :data:`ARCHIVE_PARTS`; what does not fit is left out and said so)."""
    files = {f for pattern in ARCHIVED for f in book.glob(pattern) if f.is_file()}
    files |= set(_unfinished_checkpoints(book)) | set(_study_inputs(book))
    files = sorted(f for f in files if ".locks" not in f.parts)
    for old in target.parent.glob("runs*.tar.gz"):
        old.unlink()
    part, tar, left_out = 0, None, 0
    for f in files:
        if tar is None or tar.fileobj.fileobj.tell() >= ARCHIVE_PART_BYTES:
            if tar is not None:
                tar.close()
            if part == ARCHIVE_PARTS:
                left_out, tar = len(files) - files.index(f), None
                break
            part += 1
            name = target.name if part == 1 else f"runs-{part}.tar.gz"
            tar = tarfile.open(target.with_name(name), "w:gz")
        tar.add(f, arcname=str(f.relative_to(book)))
    if tar is not None:
        tar.close()
    if left_out:
        print(f"{left_out} files left out of the archives (all full)", flush=True)


def _unfinished_checkpoints(book: Path) -> List[Path]:
    """:data:`UNFINISHED_CHECKPOINTS` whose run's history is there and not ``complete``."""
    found = []
    for f in {f for pattern in UNFINISHED_CHECKPOINTS for f in book.glob(pattern)}:
        history = _read_json(f.parent / "history.json")
        if history is not None and history.get("status") != "complete":
            found.append(f)
    return found


def _study_inputs(book: Path) -> List[Path]:
    """The ``checkpoint.pt`` of each protocol run under ``book`` that a study not yet made reads
    (a pruning study, a removal study): the weights are never committed, so without them the
    CPU would train the run again to make the study, on another device."""
    from .evidence import beyond as _b  # noqa: F401 (registers chapter 18's runs)
    from .evidence import followup_runs as _f  # noqa: F401 (registers the follow-up's)
    from .evidence import runs as _r  # noqa: F401 (registers the protocol's runs, studies)
    from .experiments.registry import RUNS
    from .experiments.studies import STUDIES, study_state

    found = []
    for study in STUDIES.values():
        if not study.name.startswith(("confirm", "beyond3", "followup")):
            continue
        runs = [RUNS[n].path / "checkpoint.pt" for n in study.runs if n in RUNS]
        runs = [
            f
            for f in runs
            if f.is_file() and f.resolve().is_relative_to(book.resolve())
        ]
        if runs and study_state(study) != "present":
            found += runs
    return found


def _log_tail(work: Path, target: Path) -> None:
    """The last :data:`LOG_TAIL_BYTES` of every phase's log, one after the other."""
    parts = []
    for log in sorted(work.glob("*.log")):
        data = log.read_bytes()[-LOG_TAIL_BYTES:]
        parts.append(f"===== {log.name}\n".encode() + data)
    if parts:
        target.write_bytes(b"\n".join(parts))


def _read_json(path: Path) -> Optional[dict]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


# ----------------------------------------------------------------------------- what comes back
def unpack(folder: Path, book: Optional[Path] = None) -> List[str]:
    """Put a window's ``folder`` into the book: the archives into ``runs/`` and ``results/``,
    ``gpu-smoke.json`` and ``paper-epoch.json`` into ``results/``. Returns the paths written,
    relative to the book."""
    from .experiments.store import book_dir

    book = book or book_dir()
    written = []
    for archive in sorted(folder.glob("runs*.tar.gz")):
        with tarfile.open(archive) as tar:
            members = tar.getmembers()
            bad = [
                m.name for m in members if not m.name.startswith(("runs/", "results/"))
            ]
            if bad:
                raise ValueError(
                    f"{archive} holds {bad[0]}, outside runs/ and results/"
                )
            tar.extractall(book, filter="data")
            written += [m.name for m in members if m.isfile()]
    for name in (SMOKE, PAPER_EPOCH):
        if (folder / name).is_file():
            (book / "results").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(folder / name, book / "results" / name)
            written.append(f"results/{name}")
    return written


# ----------------------------------------------------------------------------- the children
def _tiny_config(model: str, profile: str = "cpu", **changes):
    from .experiments.profiles import make_config

    tiny = TINY["resnet18" if model == "resnet18" else "other"]
    settings = dict(
        model_overrides=dict(tiny),
        epochs=2,
        train_subset=20,
        test_subset=20,
        batch_size=10,
        eval_batch_size=20,
        device="cpu",
    )
    settings.update(changes)
    return make_config(model, profile, **settings)


def tiny_run(name: str) -> int:
    """The dry run's stand-in for a protocol run: a tiny model trained into ``runs/<name>``."""
    from .experiments.store import runs_dir
    from .experiments.train import train

    folder = runs_dir() / name
    train(_tiny_config("quadratic"), folder, resume=folder.is_dir(), progress=False)
    return 0


def tiled_sample(train_images: int, test_images: int):
    """The bundled sample repeated to ``train_images`` training and ``test_images`` test images."""
    from dataclasses import replace

    from .experiments.data import load_cifar10_sample

    data = load_cifar10_sample()

    def tile(x, n):
        return x.repeat(-(-n // len(x)), *([1] * (x.ndim - 1)))[:n]

    return replace(
        data,
        x_train=tile(data.x_train, train_images),
        y_train=tile(data.y_train, train_images),
        x_test=tile(data.x_test, test_images),
        y_test=tile(data.y_test, test_images),
    )


def paper_epochs(folder: Path, dry_run: bool) -> int:
    """One paper epoch of each of :data:`PAPER_EPOCH_MODELS` timed with the real ``train()``
    (batch 100, evaluation at batch 500, a checkpoint), into ``folder/paper-epoch.json``
    after each model; a model measured already is skipped, a model that fails is recorded
    with its error and the next one runs. Exit status 1 if one failed."""
    from .experiments.device import device_name, select_device

    device = select_device() if not dry_run else None
    n_train, n_test = (100, 50) if dry_run else (50_000, 10_000)
    data = tiled_sample(n_train, n_test)
    path = folder / PAPER_EPOCH
    record = _read_json(path) or {"models": {}}
    record.update(device=device_name(device) if device else "cpu", dry_run=dry_run)
    record.update(train_images=n_train, test_images=n_test)
    for model in PAPER_EPOCH_MODELS:
        if "seconds_per_epoch" in record["models"].get(model, {}):
            continue
        try:
            record["models"][model] = _paper_epoch_of(model, folder, data, device)
        except Exception as e:  # noqa: BLE001 - the next model still runs
            record["models"][model] = {"error": f"{type(e).__name__}: {e}"}
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=1))
    return int(any("error" in r for r in record["models"].values()))


def _paper_epoch_of(model: str, folder: Path, data, device) -> dict:
    """One epoch of ``model`` at the paper's settings (tiny on the CPU when ``device`` is
    None), its seconds and hours for 300 epochs; its run folder (a checkpoint of ~100 MB at
    paper size) removed afterwards."""
    from .experiments.profiles import make_config
    from .experiments.train import train

    settings = dict(epochs=1, eval_batch_size=500, train_subset=None, test_subset=None)
    if device is None:
        config = _tiny_config(model, "paper", **settings, batch_size=50)
    else:
        config = make_config(model, "paper", device=str(device), **settings)
    run_dir = folder / model
    shutil.rmtree(run_dir, ignore_errors=True)
    t0 = time.perf_counter()
    try:
        history = train(config, run_dir, data=data, progress=False, verbose=True)
        epoch = history["epochs"][-1]["seconds"]
        checkpoints = sum(f.stat().st_size for f in run_dir.glob("*.pt"))
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    return {
        "seconds_per_epoch": epoch,
        "train_call_seconds": time.perf_counter() - t0,
        "hours_for_300_epochs": 300 * epoch / 3600,
        "checkpoint_mib": checkpoints / 2**20,
    }


def sample_runs() -> int:
    """The ``gpu-sample`` runs one after the other (each resumes from its folder)."""
    from .experiments.registry import GPU_SAMPLE_MODELS, train_entry

    for model in GPU_SAMPLE_MODELS:
        train_entry(f"gpu-sample/{model}", progress=False, verbose=True)
    return 0


# ----------------------------------------------------------------------------- command line
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m attnconv.gpu_window", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--budget", type=float, default=DEFAULT_BUDGET, help="seconds")
    parser.add_argument(
        "--out", default="gpu-out", help="the flat folder that comes back"
    )
    parser.add_argument(
        "--work", default="gpu-work", help="scratch (logs, checkpoints)"
    )
    parser.add_argument("--book", default=None, help="the book the runs go to")
    parser.add_argument("--workers", type=int, default=8, help="protocol processes")
    parser.add_argument(
        "--phases",
        nargs="+",
        choices=[p.name for p in PHASES],
        default=None,
        help="run only these phases (in their priority order; the budget is shared among them)",
    )
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--unpack", metavar="FOLDER", help="put FOLDER into the book")
    # the window's own children
    parser.add_argument("--tiny-run", help=argparse.SUPPRESS)
    parser.add_argument("--paper-epoch", help=argparse.SUPPRESS)
    parser.add_argument("--sample-runs", action="store_true", help=argparse.SUPPRESS)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    book = Path(args.book) if args.book else None
    if args.unpack:
        written = unpack(Path(args.unpack), book)
        print(
            f"{len(written)} files into the book; now: git add book/runs book/results"
        )
        return 0
    if args.tiny_run:
        return tiny_run(args.tiny_run)
    if args.paper_epoch:
        return paper_epochs(Path(args.paper_epoch), args.dry_run)
    if args.sample_runs:
        return sample_runs()
    if args.budget > MAX_BUDGET:
        print(
            f"error: --budget {args.budget:.0f} s is over {MAX_BUDGET:.0f} s "
            "(one remote command may run 600 s, the machine's start included)",
            file=sys.stderr,
        )
        return 2
    if not args.dry_run:
        import torch

        if not torch.cuda.is_available():
            print(
                "error: no CUDA device here; --dry-run runs it small", file=sys.stderr
            )
            return 2
    chosen = [p for p in PHASES if args.phases is None or p.name in args.phases]
    summary = window(
        Path(args.out),
        args.budget,
        args.dry_run,
        Path(args.work),
        book,
        args.workers,
        chosen,
    )
    states = ", ".join(f"{n} {p['state']}" for n, p in summary["phases"].items())
    print(f"gpu window ({summary['seconds']:.0f} s): {states}; files in {args.out}")
    return 0 if all(p["state"] == "complete" for p in summary["phases"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
