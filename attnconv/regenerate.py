"""``python -m attnconv.regenerate``: the one way every committed run and result of the book is made.

The chapters only read (``book/runs``, ``book/results``); this command writes. It loops over two
registries: the runs (:mod:`attnconv.experiments.registry`, e.g. ``cpu/quadratic``,
``seeds/deep/learned/seed2``) and the studies made from them or from code alone
(:mod:`attnconv.experiments.studies`, e.g. ``deep/generalized/pruning``,
``cpu/learned/attention_maps``, ``results/learn-to-convolve-9-heads``)::

    python -m attnconv.regenerate --list                # every entry: file, present, settings match, time
    python -m attnconv.regenerate --only 'seeds/*'      # make what is missing (resumes from checkpoints)
    python -m attnconv.regenerate --only cpu/quadratic --force   # make it again (replaced when done)
    python -m attnconv.regenerate --check               # re-train epoch 1 of each run and compare;
                                                        # re-compute what is cheap and compare
    python -m attnconv.regenerate --only 'paper/*'      # on a GPU box: every paper run (the five
                                                        # models, quadratic-16heads), then the
                                                        # studies the chapters read from them
    python -m attnconv.regenerate --lacking-predictions # re-make the runs and studies saved
                                                        # without per-image predictions

Without ``--only`` every committed entry is considered: the ``gpu`` and ``paper`` runs, and the
studies made from them, are trained by a reader with a GPU and never committed (``--only`` or
``--all`` takes them in). ``--check`` re-trains the first epoch of paper-size runs too (the
chapters do not: :func:`attnconv.experiments.runs.verify_first_epoch`), with the tolerances of
the precision and device each was trained with. An entry already present with the
settings the book asks for is left alone unless ``--force``. Studies that need a run's trained
weights (pruning, removal, attention maps) use its ``checkpoint.pt`` when it is there; otherwise
the run is trained again first (its history is then replaced by the new one). A pruning study's
retrainings are runs of the training loop in their own folders: interrupted, the same command
resumes them from their checkpoints.
"""

from __future__ import annotations

import argparse
import fnmatch
import sys
import time
from typing import List, Optional, Sequence

from .evidence import beyond as _beyond  # noqa: F401 (registers chapter 18's reference)
from .evidence import followup_runs as _followup_runs  # noqa: F401 (registers its runs)
from .evidence import runs as _protocol_runs  # noqa: F401 (registers the protocol's runs)
from .experiments.device import fp32_everywhere
from .experiments.registry import RUNS, RunEntry, load_run, run_state, train_entry
from .experiments.store import (
    HISTORY,
    MissingResultError,
    StaleResultError,
    read_history,
    relative_to_book,
)
from .experiments.studies import (
    STUDIES,
    StudyEntry,
    lacks_predictions,
    study_state,
)

__all__ = ["entries", "main"]


# ---------------------------------------------------------------------------- the command
def entries(patterns: Sequence[str] = (), everything: bool = False) -> List[object]:
    """Runs (registry order) then studies (registry order), those whose name matches one of ``patterns`` (a glob,
    or a folder prefix such as ``seeds/deep``); all committed ones when none is given (every
    registered one with ``everything``)."""

    def matches(name):
        if not patterns:
            return True
        return any(
            fnmatch.fnmatch(name, p)
            or name.startswith(p.rstrip("/") + "/")
            or name == p
            for p in patterns
        )

    runs = [
        e
        for e in RUNS.values()
        if (e.committed or everything or patterns) and matches(e.name)
    ]
    return runs + [
        r
        for r in STUDIES.values()
        if (r.committed or everything or patterns) and matches(r.name)
    ]


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def _describe(entry) -> str:
    if isinstance(entry, RunEntry):
        state = run_state(entry)
        took = ""
        if state in ("present", "incomplete"):
            h = read_history(entry.path)
            took = (
                f"; recorded {_minutes(h.seconds)} for {len(h.epochs)} epochs"
                if h.seconds
                else ""
            )
            if state == "present" and h.predictions is None:
                took += "; no per-image predictions (--lacking-predictions re-makes it)"
        what = "settings match" if state == "present" else state
        return (
            f"{entry.name:<36} run     {relative_to_book(entry.path / HISTORY):<58} "
            f"{'present, ' + what if state == 'present' else what}{took}"
        )
    state = study_state(entry)
    state = "present, settings match" if state == "present" else state
    took = f"; about {entry.minutes:g} min" if entry.minutes else ""
    if entry.predictions is not None and state.startswith("present"):
        if not entry.predictions():
            took += "; no per-image predictions (--lacking-predictions re-makes it)"
    return f"{entry.name:<36} study   {'book/' + entry.file:<58} {state}{took}"


def _lacks_predictions(entry) -> bool:
    """A present run or study saved without per-image test predictions."""
    if isinstance(entry, StudyEntry):
        return lacks_predictions(entry)
    return (
        run_state(entry) == "present" and read_history(entry.path).predictions is None
    )


def _make(entry, force: bool) -> None:
    t0 = time.perf_counter()
    if isinstance(entry, RunEntry):
        state = run_state(entry)
        if state == "present" and not force:
            print(f"{entry.name}: present, settings match (nothing to do)")
            return
        print(f"{entry.name}: {state}; training into {relative_to_book(entry.path)}")
        train_entry(entry.name, force=force, progress=True, verbose=True)
    else:
        if not force and study_state(entry) == "present":
            print(f"{entry.name}: present, settings match (nothing to do)")
            return
        print(f"{entry.name}: making book/{entry.file}")
        entry.make()
    print(f"{entry.name}: done in {_minutes(time.perf_counter() - t0)}")


def _check(entry) -> bool:
    from .experiments.runs import verify_first_epoch

    if isinstance(entry, RunEntry):
        if run_state(entry) != "present":
            print(f"{entry.name}: {run_state(entry)}; nothing to check")
            return run_state(entry) == "missing" and not entry.committed
        check = verify_first_epoch(load_run(entry.name), on_request=True)
        print(
            f"{entry.name}: epoch 1 re-trained matches the saved run "
            f"({check['tolerances']} tolerances): {check['match']} {check['checks']}"
        )
        return check["match"]
    try:
        entry.read()
    except (MissingResultError, StaleResultError, FileNotFoundError) as e:
        print(f"{entry.name}: {e}")
        return False
    ok = None if entry.check is None else entry.check()
    if ok is None:
        print(
            f"{entry.name}: present, settings match (needs the runs' weights to "
            "re-compute; not re-computed)"
        )
        return True
    print(f"{entry.name}: re-computed (in part) matches the saved result: {ok}")
    return ok


def _parser() -> argparse.ArgumentParser:
    """The command line of ``python -m attnconv.regenerate``."""
    parser = argparse.ArgumentParser(
        prog="python -m attnconv.regenerate", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--list",
        action="store_true",
        help="list the entries, their files and whether they are there",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        default=[],
        metavar="PATTERN",
        help="entries whose name matches (glob, or a folder prefix such as seeds/cpu)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="re-train epoch 1 of each run and compare; re-compute what is cheap and compare",
    )
    parser.add_argument(
        "--force", action="store_true", help="make entries again even when present"
    )
    parser.add_argument(
        "--lacking-predictions",
        action="store_true",
        help="only the chosen runs and studies saved without per-image test predictions, "
        "made again (one re-made already is skipped: the same command resumes a queue)",
    )
    parser.add_argument(
        "--fp32",
        action="store_true",
        help="train in fp32 on a GPU too (TF32 off), the CPU's arithmetic, instead of bf16 "
        "autocast: how a GPU makes a run of the cpu and deep profiles",
    )
    parser.add_argument(
        "--protocol",
        choices=("confirm", "beyond", "followup"),
        help="make the frozen protocol's runs and studies in their order (the six-layer "
        "arms, or chapter 18's): tuning, each choice, then the fresh seeds; several "
        "processes may share one queue (each takes the next entry nobody holds)",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="include the runs of the gpu and paper profiles and the studies made from them",
    )
    return parser


def _held(name: str):
    """A lock on the entry ``name`` for this process (a folder made atomically under
    ``book/runs/.locks``), or ``None`` when another live process holds it."""
    import os

    from .experiments.store import runs_dir

    lock = runs_dir() / ".locks" / name.replace("/", "__")
    lock.parent.mkdir(parents=True, exist_ok=True)
    try:
        lock.mkdir()
    except FileExistsError:
        try:
            pid = int((lock / "pid").read_text())
            os.kill(pid, 0)
            return None  # alive
        except (OSError, ValueError):
            pass  # a stale lock of a process that is gone
    (lock / "pid").write_text(str(os.getpid()))
    return lock


def _tunes(name: str) -> bool:
    """Whether the study ``name`` is a tuning, whose choice registers the runs after it (the
    queue waits for it); a pruning study or a table has nothing after it that needs it."""
    return "tuning" in name.rpartition("/")[2]


def _run_protocol(part: str) -> int:
    """Make the protocol queue ``part`` entry by entry; an entry another process holds is left
    to it (and a tuning another process holds is waited for: the runs it tunes follow it).
    A study whose runs another process is still making is deferred to the end of the queue,
    so this process goes on with the next entries instead of idling."""
    from .evidence.followup_runs import followup_queue
    from .evidence.runs import queue

    names = list(followup_queue() if part == "followup" else queue(part))
    deferred: list[str] = []
    for name in names:
        entry = RUNS.get(name) or STUDIES.get(name)
        if entry is None:
            print(
                f"error: {name} is not registered (its tuning is not saved)",
                file=sys.stderr,
            )
            return 2
        if isinstance(entry, StudyEntry) and not _runs_present(entry):
            print(f"{name}: its runs are still being made; deferred", flush=True)
            deferred.append(name)
            continue
        _make_protocol_entry(name, entry)
    for name in deferred:  # every other entry is done or held: now wait for their runs
        entry = STUDIES[name]
        while not _runs_present(entry):
            time.sleep(5)
        _make_protocol_entry(name, entry)
    return 0


def _runs_present(study: StudyEntry) -> bool:
    return all(run_state(RUNS[r]) == "present" for r in study.runs)


def _make_protocol_entry(name: str, entry) -> None:
    """Make one protocol entry under its lock, or leave it to the process that holds it."""
    import shutil

    from .evidence.runs import thin_made_run

    lock = _held(name)
    if lock is None:
        print(f"{name}: made by another process; next", flush=True)
        if isinstance(entry, StudyEntry) and _tunes(name):
            while study_state(entry) != "present":
                time.sleep(5)  # the runs it tunes are registered once it is saved
        return
    try:
        if isinstance(entry, StudyEntry) or run_state(entry) != "present":
            _make(entry, False)
        thin_made_run(
            name
        )  # its epochs' heads are never read: a twentieth of the space
    finally:
        shutil.rmtree(lock, ignore_errors=True)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    if args.fp32:
        fp32_everywhere()
    if args.protocol:
        return _run_protocol(args.protocol)
    chosen = entries(args.only, args.all)
    if args.lacking_predictions:
        chosen = [e for e in chosen if _lacks_predictions(e)]
        args.force = True
        if not chosen:
            print("every chosen entry has its per-image predictions (nothing to do)")
            return 0
    if not chosen:
        print(
            f"error: no entry matches {' '.join(args.only)}; see --list",
            file=sys.stderr,
        )
        return 2
    if args.list:
        for e in chosen:
            print(_describe(e))
        return 0
    try:
        if args.check:
            bad = [e.name for e in chosen if not _check(e)]
            print(
                "all checked entries match"
                if not bad
                else f"did not match: {', '.join(bad)}"
            )
            return 0 if not bad else 1
        for e in chosen:
            _make(e, args.force)
    except KeyboardInterrupt:
        print(
            "\ninterrupted; run the same command again to resume (runs and a pruning "
            "study's retrainings continue from their last epoch)",
            file=sys.stderr,
        )
        return 130
    except (MissingResultError, StaleResultError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
