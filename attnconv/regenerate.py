"""``python -m attnconv.regenerate``: the one way every committed run and result of the book is made.

The chapters only read (``book/runs``, ``book/results``); this command writes. Each entry has a
name — a run of the registry (:mod:`attnconv.experiments.registry`, e.g. ``cpu/quadratic``,
``seeds/deep/learned/seed2``) or a result made from runs (``deep/generalized/pruning``,
``cpu/learned/attention_maps``, ``results/learn-to-convolve-9-heads``)::

    python -m attnconv.regenerate --list                # every entry: file, present, settings match, time
    python -m attnconv.regenerate --only 'seeds/*'      # make what is missing (resumes from checkpoints)
    python -m attnconv.regenerate --only cpu/quadratic --force   # make it again (replaced when done)
    python -m attnconv.regenerate --check               # re-train epoch 1 of each run and compare;
                                                        # re-compute what is cheap and compare
    python -m attnconv.regenerate --only 'paper/*'      # on a GPU box: every paper run (the five
                                                        # models, quadratic-16heads), then the
                                                        # studies the chapters read from them

Without ``--only`` every committed entry is considered: the ``gpu`` and ``paper`` runs, and the
studies made from them, are trained by a reader with a GPU and never committed (``--only`` or
``--all`` takes them in). ``--check`` re-trains the first epoch of paper-size runs too (the
chapters do not: :func:`attnconv.experiments.runs.verify_first_epoch`), with the tolerances of
the precision and device each was trained with. An entry already present with the
settings the book asks for is left alone unless ``--force``. Results that need a run's trained
weights (pruning, removal, attention maps) use its ``checkpoint.pt`` when it is there; otherwise
the run is trained again first (its history is then replaced by the new one).
"""

from __future__ import annotations

import argparse
import fnmatch
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, List, Optional, Sequence

from .experiments.registry import (
    RUNS,
    RunEntry,
    load_run,
    run_entry,
    run_state,
    train_entry,
)
from .experiments.store import (
    CHECKPOINT,
    HISTORY,
    MissingResultError,
    StaleResultError,
    book_dir,
    read_history,
    regenerate_command,
    relative_to_book,
    repo_root,
)

__all__ = ["ResultEntry", "RESULTS", "entries", "main"]


@dataclass(frozen=True)
class ResultEntry:
    """A saved result: its ``name``, its ``file`` (relative to the book's folder), the runs it is
    made from, how to make it (``make(force)``), how to read it as the chapter does (``read()``,
    raising when missing or stale), an optional cheap re-computation to compare with (``check()``,
    returning True/False) and the ``minutes`` it took on the loaded 2-core development machine, where
    measured (``None``: not recorded)."""

    name: str
    file: str
    runs: tuple
    make: Callable[[], None]
    read: Callable[[], object]
    check: Optional[Callable[[], bool]] = None
    minutes: Optional[float] = None
    description: str = ""

    @property
    def path(self) -> Path:
        return book_dir() / self.file

    @property
    def committed(self) -> bool:
        """Whether the result is committed: made from committed runs only (a study of a ``gpu``
        or ``paper`` run is made by a reader who trained that run, like the run itself)."""
        return all(RUNS[n].committed for n in self.runs if n in RUNS)


def _trained(name: str):
    """The registered run ``name`` with its trained model on the run's device (a paper-size
    model's studies take days on a CPU): from its checkpoint when there, else trained again."""
    from .experiments.train import select_device

    entry = run_entry(name)
    if (entry.path / CHECKPOINT).is_file() and run_state(entry) == "present":
        run = load_run(name, load_model=True)
    else:
        print(
            f"{name}: no checkpoint.pt (weights are never committed); training the run again to get the model."
        )
        run = train_entry(name, force=run_state(entry) == "present", keep_model=True)
    run.model.to(select_device(run.config.device))
    return run


def _write_json(path: Path, obj) -> None:
    from .experiments.train import write_json

    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, obj)


# ---------------------------------------------------------------------------- recipes
def _attention_maps(name: str) -> ResultEntry:
    from .chapters.shared.attention_maps import run_attention_maps, save_attention_maps

    def make():
        save_attention_maps(_trained(name))

    return ResultEntry(
        f"{name}/attention_maps",
        f"runs/{name}/attention_maps.json",
        (name,),
        make,
        lambda: run_attention_maps(load_run(name)),
        minutes=None,
        description="attention maps of every head for the centre query, mean of 100 test images",
    )


#: The profiles whose runs a reader trains on a GPU box (not committed); every study the chapters
#: read is made for their runs too, so that the chapters work under ``ATTNCONV_PROFILE=gpu|paper``
#: (and chapter 12b under ``ATTNCONV_DEEP_PROFILE=gpu|paper``).
FULL_SCALE_PROFILES = ("gpu", "paper")

#: Runs whose attention maps are saved (chapters 9, 12 and 12b read them for the learned encodings).
ATTENTION_MAP_RUNS = ("cpu/learned", "cpu/learned_content", "deep/learned") + tuple(
    f"{p}/{m}" for p in FULL_SCALE_PROFILES for m in ("learned", "learned_content")
)

#: The pruning studies: run → (random pruning orders (each costs one evaluation per head), retraining
#: counts besides the degenerate heads' (None: a third and two thirds of the heads; "code": the count the
#: authors' code's condition threshold 1e3 selects), minutes on 2 cores). A paper-size run is read by
#: chapter 8 (its profile) and chapter 12b (``ATTNCONV_DEEP_PROFILE``): "code" serves both.
PRUNING_STUDIES = {
    "cpu/generalized": (3, None, None),
    "deep/generalized": (1, "code", None),
    **{f"{p}/generalized": (3, "code", None) for p in FULL_SCALE_PROFILES},
}

#: Runs whose layer and head removal is saved (chapter 12b, for the 6-layer runs of its profile).
REMOVAL_RUNS = tuple(
    f"{p}/{m}"
    for p in ("deep",) + FULL_SCALE_PROFILES
    for m in ("quadratic", "generalized", "learned")
)


def _pruning(name: str) -> ResultEntry:
    from .chapters import generalized_pruning as gp

    random_orders, counts, minutes = PRUNING_STUDIES[name]

    def make():
        from .experiments import data as data_module
        from .experiments.pruning import (
            AUTHORS_CODE_CONDITION_THRESHOLD,
            PAPER_MAX_EIGENVALUE_THRESHOLD,
        )
        from .experiments.train import select_device

        trained = _trained(name)
        model = trained.model.to(select_device(trained.config.device))
        retrain_counts = None
        if counts == "code":
            rows = gp.head_table(
                model, PAPER_MAX_EIGENVALUE_THRESHOLD, AUTHORS_CODE_CONDITION_THRESHOLD
            )
            retrain_counts = [sum(r["degenerate"] for r in rows)]
        data = data_module.load_cifar10(
            trained.config.data, root=trained.config.data_root, verbose=True
        )
        study = gp.pruning_study(
            model,
            trained.config,
            data,
            random_orders=random_orders,
            retrain_counts=retrain_counts,
            verbose=True,
        )
        pruned_history = study.pop("pruned_history")
        _write_json(Path(trained.run_dir) / gp.STUDY_FILE, study)
        if pruned_history is not None:
            _write_json(gp.pruned_folder(trained) / HISTORY, pruned_history)

    def read():
        run = load_run(name)
        return gp.load_pruning_study(run, verbose=False), gp.load_pruned_run(run)

    return ResultEntry(
        f"{name}/pruning",
        f"runs/{name}/pruning.json",
        (name,),
        make,
        read,
        minutes=minutes,
        description=f"App. A.1 pruning study (+ runs/{name}-pruned/history.json)",
    )


def _removal(name: str) -> ResultEntry:
    from .chapters.depth import load_removal, removal_accuracies
    from .experiments.store import REMOVAL_FILE

    def make():
        trained = _trained(name)
        _write_json(Path(trained.run_dir) / REMOVAL_FILE, removal_accuracies(trained))

    def read():
        got = load_removal(load_run(name))
        if got is None:
            raise MissingResultError(
                f"book/runs/{name}/{REMOVAL_FILE} is missing; make it with: "
                f"{regenerate_command(name + '/removal')}"
            )
        return got

    return ResultEntry(
        f"{name}/removal",
        f"runs/{name}/removal.json",
        (name,),
        make,
        read,
        minutes=None,
        description="test accuracy without each layer's heads and without each head",
    )


def _sweep(heads: int) -> ResultEntry:
    from .chapters.learn_to_convolve import (
        ConvolveSetup,
        saved_seed_sweep,
        seed_sweep,
        sweep_key,
    )

    setup = ConvolveSetup() if heads == 9 else replace(ConvolveSetup(), heads=heads)
    seeds = range(1, 9)  # the chapter's SWEEP_SEEDS
    file = f"results/learn-to-convolve-{heads}-heads.json"

    def make():
        _write_json(
            book_dir() / file,
            {"key": sweep_key(setup, seeds), "rows": seed_sweep(setup, seeds)},
        )

    def check():
        saved = saved_seed_sweep(file, setup, seeds)[0]
        again = seed_sweep(setup, [seeds[0]])[0]
        exact = all(
            saved[k] == again[k]
            for k in ("seed", "covered", "on_lattice", "shared", "dead", "stray")
        )
        return (
            exact
            and abs(saved["final_error"] - again["final_error"])
            <= 1e-3 * abs(saved["final_error"]) + 1e-9
        )

    return ResultEntry(
        f"results/learn-to-convolve-{heads}-heads",
        file,
        (),
        make,
        lambda: saved_seed_sweep(file, setup, seeds),
        check=check,
        minutes=7.0,
        description=f"learning a 3×3 convolution with {heads} heads, seeds 1-8 (chapter 11)",
    )


def _kernel_spread() -> ResultEntry:
    from .experiments import kernel_spread
    from .experiments.store import read_json

    file = "results/kernel-spread.json"

    def make():
        kernel_spread.main(
            [
                "--runs",
                str(book_dir() / "runs" / "cpu"),
                "--out",
                str(book_dir() / file),
            ]
        )

    def read():
        if not (book_dir() / file).is_file():
            raise MissingResultError(
                f"book/{file} is missing; make it with: {regenerate_command('results/kernel-spread')}"
            )
        return read_json(book_dir() / file)

    runs = tuple(n for n in RUNS if n.startswith("cpu/"))
    return ResultEntry(
        "results/kernel-spread",
        file,
        runs,
        make,
        read,
        minutes=None,
        description="epoch 1 of each cpu run under six CPU kernel paths (verify_first_epoch's tolerances)",
    )


#: The commit the before/after benchmark times against: main before issue 20 (chapter 13).
BENCHMARK_REFERENCE_COMMIT = "30b81eb"


def _benchmark_entry(
    name: str, make_result: Callable[[str], None], description: str
) -> ResultEntry:
    """A benchmark result ``results/<name>.json``, made by ``make_result(path)`` and read by
    :func:`attnconv.experiments.bench.load_result`."""
    from .experiments import bench

    file = f"results/{name}.json"

    def read():
        if not (book_dir() / file).is_file():
            raise MissingResultError(
                f"book/{file} is missing; make it with: {regenerate_command('results/' + name)}"
            )
        return bench.load_result(str(book_dir() / file))

    return ResultEntry(
        f"results/{name}",
        file,
        (),
        lambda: make_result(str(book_dir() / file)),
        read,
        minutes=None,
        description=description,
    )


def _benchmark() -> ResultEntry:
    from .experiments import bench

    return _benchmark_entry(
        "benchmark-cpu",
        lambda out: bench.main(["--device", "cpu", "--out", out]),
        "dense / naive / local attention benchmark (chapter 13)",
    )


def _bench_against_reference(out: str) -> None:
    """``python -m attnconv.bench --compare-with`` a temporary git worktree of
    :data:`BENCHMARK_REFERENCE_COMMIT` (removed after), written to ``out``."""
    import subprocess
    import tempfile

    from .experiments import bench

    with tempfile.TemporaryDirectory() as tmp:
        checkout = str(Path(tmp) / "reference")
        subprocess.run(
            [
                "git",
                "-C",
                str(repo_root()),
                "worktree",
                "add",
                "--detach",
                checkout,
                BENCHMARK_REFERENCE_COMMIT,
            ],
            check=True,
            capture_output=True,
        )
        try:
            bench.main(["--compare-with", checkout, "--out", out])
        finally:
            subprocess.run(
                [
                    "git",
                    "-C",
                    str(repo_root()),
                    "worktree",
                    "remove",
                    "--force",
                    checkout,
                ],
                capture_output=True,
            )


def _benchmark_before_after() -> ResultEntry:
    return _benchmark_entry(
        "benchmark-before-after",
        _bench_against_reference,
        f"the book's training steps now vs commit {BENCHMARK_REFERENCE_COMMIT}, side by side "
        "(chapter 13)",
    )


def _results() -> List[ResultEntry]:
    return (
        [_attention_maps(n) for n in ATTENTION_MAP_RUNS]
        + [_pruning(n) for n in PRUNING_STUDIES]
        + [_removal(n) for n in REMOVAL_RUNS]
        + [
            _sweep(9),
            _sweep(16),
            _kernel_spread(),
            _benchmark(),
            _benchmark_before_after(),
        ]
    )


RESULTS: List[ResultEntry] = _results()


# ---------------------------------------------------------------------------- the command
def entries(patterns: Sequence[str] = (), everything: bool = False) -> List[object]:
    """Runs (registry order) then results, those whose name matches one of ``patterns`` (a glob,
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
        for r in RESULTS
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
    try:
        entry.read()
        state = "present, settings match"
    except StaleResultError:
        state = "stale"
    except (MissingResultError, FileNotFoundError):
        state = "missing"
    took = f"; about {entry.minutes:g} min" if entry.minutes else ""
    return f"{entry.name:<36} result  {'book/' + entry.file:<58} {state}{took}"


def _lacks_predictions(entry) -> bool:
    """A present run whose history was saved without per-image test predictions."""
    return (
        isinstance(entry, RunEntry)
        and run_state(entry) == "present"
        and read_history(entry.path).predictions is None
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
        if not force:
            try:
                entry.read()
                print(f"{entry.name}: present, settings match (nothing to do)")
                return
            except (MissingResultError, StaleResultError, FileNotFoundError):
                pass
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
    if entry.check is None:
        print(
            f"{entry.name}: present, settings match (needs the runs' weights to re-compute; not re-computed)"
        )
        return True
    ok = entry.check()
    print(f"{entry.name}: re-computed (first seed) matches the saved result: {ok}")
    return ok


def main(argv: Optional[Sequence[str]] = None) -> int:
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
        help="only the chosen runs saved without per-image test predictions, made again "
        "(a run re-made already is skipped: the same command resumes a queue)",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="include the runs of the gpu and paper profiles and the studies made from them",
    )
    args = parser.parse_args(argv)
    chosen = entries(args.only, args.all)
    if args.lacking_predictions:
        chosen = [e for e in chosen if _lacks_predictions(e)]
        args.force = True
        if not chosen:
            print("every chosen run has its per-image predictions (nothing to do)")
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
            "\ninterrupted; run the same command again to resume (runs continue from their last epoch)",
            file=sys.stderr,
        )
        return 130
    except (MissingResultError, StaleResultError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
