"""The registry of the book's studies: every saved result that is made from runs (or from nothing
but code) is one named entry next to the runs' registry (:mod:`attnconv.experiments.registry`),
in the manner of timm's ``register_model``: its name, its file, the runs it is made from, its
recipe (``make``), its reader (``read``, as the chapter reads it), an optional cheap re-computation
(``check``) and whether it holds per-image predictions.

    cpu/generalized/pruning             App. A.1's pruning study (+ runs/cpu/generalized-pruned)
    deep/learned/removal                the test accuracy without each layer's heads and each head
    cpu/learned/attention_maps          every head's attention map for the centre query
    results/learn-to-convolve-9-heads   chapter 11's seed sweep
    results/kernel-spread, results/benchmark-cpu, results/benchmark-before-after

``python -m attnconv.regenerate`` loops over both registries (runs first, then studies); the
chapters read a study through its reader (:mod:`~attnconv.experiments.studies_pruning`,
:mod:`~attnconv.experiments.studies_removal`, :mod:`~attnconv.experiments.studies_maps`,
:mod:`~attnconv.experiments.studies_convolve`), whose errors name the command that makes it.
Studies that evaluate models save every evaluated model's per-image predictions (for exact paired
tests); those saved before they did read as before, their predictions ``None``.
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Dict, List, Optional

from . import data as data_module
from .registry import RUNS, load_run, run_entry, run_state, train_entry
from .store import (
    CHECKPOINT,
    REMOVAL_FILE,
    MissingResultError,
    StaleResultError,
    book_dir,
    read_json,
    regenerate_command,
    repo_root,
)

__all__ = [
    "StudyEntry",
    "STUDIES",
    "register_study",
    "study_entry",
    "study_state",
    "lacks_predictions",
    "FULL_SCALE_PROFILES",
    "ATTENTION_MAP_RUNS",
    "PRUNING_STUDIES",
    "REMOVAL_RUNS",
    "BENCHMARK_REFERENCE_COMMIT",
    "attention_maps_study",
    "removal_study",
    "trained_run",
    "pruning_entry",
]


@dataclass(frozen=True)
class StudyEntry:
    """A saved study: its ``name``, its ``file`` (relative to the book's folder), the ``runs`` it is
    made from, how to make it (``make()``), how to read it as the chapter does (``read()``, raising
    :class:`~attnconv.experiments.store.MissingResultError` / ``StaleResultError`` with the command
    that makes it), an optional cheap re-computation to compare with (``check()``: True/False, or
    None when it needs weights that are not on disk), ``predictions()`` (whether the saved file
    holds per-image predictions; None for a study that evaluates no model) and the ``minutes`` it
    took on the loaded 2-core development machine, where measured."""

    name: str
    file: str
    runs: tuple
    make: Callable[[], None]
    read: Callable[[], object]
    check: Optional[Callable[[], Optional[bool]]] = None
    minutes: Optional[float] = None
    description: str = ""
    predictions: Optional[Callable[[], bool]] = None

    @property
    def path(self) -> Path:
        return book_dir() / self.file

    @property
    def committed(self) -> bool:
        """Whether the study is committed: made from committed runs only (a study of a ``gpu``
        or ``paper`` run is made by a reader who trained that run, like the run itself)."""
        return all(RUNS[n].committed for n in self.runs if n in RUNS)

    @property
    def command(self) -> str:
        """The "make it with" command line."""
        return regenerate_command(self.name)


#: Every registered study, by name (registration order: the order regenerate makes them in).
STUDIES: Dict[str, StudyEntry] = {}


def register_study(entry: StudyEntry) -> StudyEntry:
    """Add ``entry`` to :data:`STUDIES` (a name is registered once, and never as a run's)."""
    if entry.name in STUDIES or entry.name in RUNS:
        raise ValueError(f"study {entry.name!r} is registered twice")
    STUDIES[entry.name] = entry
    return entry


def study_entry(name: str) -> StudyEntry:
    """The registered study ``name`` (a one-line error naming ``--list`` otherwise)."""
    if name not in STUDIES:
        raise KeyError(
            f"no study named {name!r}; see python -m attnconv.regenerate --list"
        )
    return STUDIES[name]


def study_state(entry: StudyEntry) -> str:
    """``present`` (made with the settings the book asks for), ``missing`` or ``stale``."""
    try:
        entry.read()
    except StaleResultError:
        return "stale"
    except (MissingResultError, FileNotFoundError):
        return "missing"
    return "present"


def lacks_predictions(entry: StudyEntry) -> bool:
    """A present study of models saved without their per-image predictions."""
    return (
        entry.predictions is not None
        and study_state(entry) == "present"
        and not entry.predictions()
    )


def trained_run(name: str):
    """The registered run ``name`` with its trained model on the run's device (a paper-size
    model's studies take days on a CPU): from its checkpoint when there, else trained again."""
    from .device import select_device

    entry = run_entry(name)
    if (entry.path / CHECKPOINT).is_file() and run_state(entry) == "present":
        run = load_run(name, load_model=True)
    else:
        print(
            f"{name}: no checkpoint.pt (weights are never committed); "
            "training the run again to get the model."
        )
        run = train_entry(name, force=run_state(entry) == "present", keep_model=True)
    run.model.to(select_device(run.config.device))
    return run


def _weights_on_disk(name: str) -> bool:
    entry = run_entry(name)
    return (entry.path / CHECKPOINT).is_file() and run_state(entry) == "present"


def _write_json(path: Path, obj) -> None:
    from .checkpoints import write_json

    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, obj)


def _missing(file: str, name: str) -> MissingResultError:
    return MissingResultError(
        f"book/{file} is missing; make it with: {regenerate_command(name)}"
    )


# ---------------------------------------------------------------------------- attention maps
#: The profiles whose runs a reader trains on a GPU box (not committed); every study the chapters
#: read is made for their runs too, so that the chapters work under ``ATTNCONV_PROFILE=gpu|paper``
#: (and chapter 12 under ``ATTNCONV_DEEP_PROFILE=gpu|paper``).
FULL_SCALE_PROFILES = ("gpu", "paper")

#: Runs whose attention maps are saved (chapters 9, 12 and the pilots appendix read them for the learned encodings).
ATTENTION_MAP_RUNS = ("cpu/learned", "cpu/learned_content", "deep/learned") + tuple(
    f"{p}/{m}" for p in FULL_SCALE_PROFILES for m in ("learned", "learned_content")
)


def attention_maps_study(name: str) -> StudyEntry:
    from .studies_maps import run_attention_maps, save_attention_maps

    return StudyEntry(
        f"{name}/attention_maps",
        f"runs/{name}/attention_maps.json",
        (name,),
        lambda: save_attention_maps(trained_run(name)),
        lambda: run_attention_maps(load_run(name)),
        description="attention maps of every head for the centre query, mean of 100 test images",
    )


# ---------------------------------------------------------------------------- pruning
#: The pruning studies: run → (random pruning orders (each costs one evaluation per head), retraining
#: counts besides the degenerate heads' (None: a third and two thirds of the heads; "code": the count the
#: authors' code's condition threshold 1e3 selects; "control": none besides, and the unpruned model
#: retrained the same way, k = 0; ("control", 15, ...): those counts too, and the control), minutes
#: on 2 cores). A paper-size run is read by
#: chapter 8 (its profile) and chapter 12 (``ATTNCONV_DEEP_PROFILE``): "code" serves both.
PRUNING_STUDIES = {
    "cpu/generalized": (3, None, None),
    "deep/generalized": (1, "code", None),
    **{f"{p}/generalized": (3, "code", None) for p in FULL_SCALE_PROFILES},
}


def _pruning_make(name: str, settings=None) -> None:
    from .paper_numbers import (
        AUTHORS_CODE_CONDITION_THRESHOLD,
        PAPER_MAX_EIGENVALUE_THRESHOLD,
    )
    from .store import PRUNING_FILE
    from .studies_pruning import head_table, pruned_folder, pruning_study

    random_orders, counts, _ = settings or PRUNING_STUDIES[name]
    trained = trained_run(name)
    extra = isinstance(counts, tuple) and counts[:1] == ("control",)
    control = counts == "control" or extra
    retrain_counts = list(counts[1:]) if extra else ([] if control else None)
    if counts == "code":
        rows = head_table(
            trained.model,
            PAPER_MAX_EIGENVALUE_THRESHOLD,
            AUTHORS_CODE_CONDITION_THRESHOLD,
        )
        retrain_counts = [sum(r["degenerate"] for r in rows)]
    data = data_module.load_cifar10(
        trained.config.data, root=trained.config.data_root, verbose=True
    )
    study = pruning_study(
        trained.model,
        trained.config,
        data,
        random_orders=random_orders,
        retrain_counts=retrain_counts,
        verbose=True,
        work_dir=pruned_folder(trained),  # the retrainings' run folders (resumable)
        control=control,
    )
    study.pop("pruned_history")  # written by the training loop into <run>-pruned
    _write_json(Path(trained.run_dir) / PRUNING_FILE, study)


def _pruning_check(name: str) -> Optional[bool]:
    """The saved curve without retraining, up to the degenerate heads, computed again from the
    run's weights (None when they are not on disk)."""
    from .studies_pruning import (
        PredictionEvaluator,
        count_selected,
        load_pruning_study,
        pruned_copy,
    )

    if not _weights_on_disk(name):
        return None
    trained = trained_run(name)
    study = load_pruning_study(trained, verbose=False)
    data = data_module.load_cifar10(
        trained.config.data, root=trained.config.data_root, verbose=False
    ).subset(trained.config.train_subset, trained.config.test_subset)
    device = next(trained.model.parameters()).device
    measure = PredictionEvaluator(trained.config, data, device)
    order = [tuple(h) for h in study["order"]]
    ks = sorted({0, count_selected(study["selected"])})
    got = [measure(pruned_copy(trained.model, order[:k]))[0] for k in ks]
    return all(
        abs(g - study["curve"]["degenerate_first"][k]) <= 1e-9 for g, k in zip(got, ks)
    )


def pruning_entry(name: str, settings=None) -> StudyEntry:
    """The pruning study of the run ``name``; ``settings`` as a :data:`PRUNING_STUDIES` value
    (default: the run's own there)."""
    from .studies_pruning import load_pruned_run, load_pruning_study

    def read():
        run = load_run(name)
        return load_pruning_study(run, verbose=False), load_pruned_run(run)

    def predictions():
        study = read()[0]
        return "degenerate_first_predictions" in study["curve"] and all(
            "test_predictions" in r for r in study["retrained"]
        )

    return StudyEntry(
        f"{name}/pruning",
        f"runs/{name}/pruning.json",
        (name,),
        lambda: _pruning_make(name, settings),
        read,
        check=lambda: _pruning_check(name),
        minutes=(settings or PRUNING_STUDIES[name])[2],
        description=f"App. A.1 pruning study (+ runs/{name}-pruned, retrained by the "
        "training loop, resumable)",
        predictions=predictions,
    )


# ---------------------------------------------------------------------------- removal
#: Runs whose layer and head removal is saved (chapter 12, for the 6-layer runs of its profile).
REMOVAL_RUNS = tuple(
    f"{p}/{m}"
    for p in ("deep",) + FULL_SCALE_PROFILES
    for m in ("quadratic", "generalized", "learned")
)


def removal_study(name: str) -> StudyEntry:
    from .studies_removal import load_removal, removal_accuracies

    def make():
        trained = trained_run(name)
        _write_json(Path(trained.run_dir) / REMOVAL_FILE, removal_accuracies(trained))

    def read():
        got = load_removal(load_run(name))
        if got is None:
            raise _missing(f"runs/{name}/{REMOVAL_FILE}", f"{name}/removal")
        return got

    def check():
        if not _weights_on_disk(name):
            return None
        from .train_step import evaluate

        trained, saved = trained_run(name), read()
        data = data_module.load_cifar10(
            trained.config.data, root=trained.config.data_root, verbose=False
        ).subset(trained.config.train_subset, trained.config.test_subset)
        config = trained.config
        acc = evaluate(
            trained.model, data.x_test, data.y_test, 500,
            bf16=config.bf16, precision=config.precision,
        )[1]  # fmt: skip
        return abs(acc - saved["full"]) <= 1e-9

    return StudyEntry(
        f"{name}/removal",
        f"runs/{name}/removal.json",
        (name,),
        make,
        read,
        check=check,
        description="test accuracy without each layer's heads and without each head",
        predictions=lambda: "full_predictions" in read(),
    )


# ---------------------------------------------------------------------------- seed sweeps
def _sweep(heads: int) -> StudyEntry:
    from .studies_convolve import (
        ConvolveSetup,
        saved_seed_sweep,
        seed_sweep,
        seed_sweep_with_examples,
        sweep_key,
    )

    setup = ConvolveSetup() if heads == 9 else replace(ConvolveSetup(), heads=heads)
    seeds = range(1, 9)  # the chapter's SWEEP_SEEDS
    file = f"results/learn-to-convolve-{heads}-heads.json"

    def make():
        _write_json(
            book_dir() / file,
            {"key": sweep_key(setup, seeds), **seed_sweep_with_examples(setup, seeds)},
        )

    def check():
        saved = saved_seed_sweep(file, setup, seeds)[0]
        again = seed_sweep(setup, [seeds[0]])[0]
        exact = all(
            saved[k] == again[k]
            for k in ("seed", "covered", "on_lattice", "shared", "dead", "stray")
        )
        tolerance = 1e-3 * abs(saved["final_error"]) + 1e-9
        return exact and abs(saved["final_error"] - again["final_error"]) <= tolerance

    return StudyEntry(
        f"results/learn-to-convolve-{heads}-heads",
        file,
        (),
        make,
        lambda: saved_seed_sweep(file, setup, seeds),
        check=check,
        minutes=7.0,
        description=f"learning a 3×3 convolution with {heads} heads, seeds 1-8, seeds 1 and 2 "
        "in full (chapter 11)",
    )


# ---------------------------------------------------------------------------- kernel spread, benchmarks
def _kernel_spread() -> StudyEntry:
    from . import kernel_spread

    file = "results/kernel-spread.json"
    name = "results/kernel-spread"

    def make():
        out = str(book_dir() / file)
        kernel_spread.main(["--runs", str(book_dir() / "runs" / "cpu"), "--out", out])

    def read():
        if not (book_dir() / file).is_file():
            raise _missing(file, name)
        return read_json(book_dir() / file)

    runs = tuple(n for n in RUNS if n.startswith("cpu/"))
    return StudyEntry(
        name,
        file,
        runs,
        make,
        read,
        description="epoch 1 of each cpu run under six CPU kernel paths "
        "(verify_first_epoch's tolerances)",
    )


#: The commit the before/after benchmark times against: main before issue 20 (chapter 13).
BENCHMARK_REFERENCE_COMMIT = "30b81eb"


def _benchmark_entry(
    name: str, make_result: Callable[[str], None], description: str
) -> StudyEntry:
    """A benchmark result ``results/<name>.json``, made by ``make_result(path)`` and read by
    :func:`attnconv.experiments.bench.load_result`."""
    from . import bench

    file = f"results/{name}.json"

    def read():
        if not (book_dir() / file).is_file():
            raise _missing(file, f"results/{name}")
        return bench.load_result(str(book_dir() / file))

    return StudyEntry(
        f"results/{name}",
        file,
        (),
        lambda: make_result(str(book_dir() / file)),
        read,
        description=description,
    )


def _bench_against_reference(out: str) -> None:
    """``python -m attnconv.bench --compare-with`` a temporary git worktree of
    :data:`BENCHMARK_REFERENCE_COMMIT` (removed after), written to ``out``."""
    from . import bench_cli

    git = ["git", "-C", str(repo_root()), "worktree"]
    with tempfile.TemporaryDirectory() as tmp:
        checkout = str(Path(tmp) / "reference")
        subprocess.run(
            git + ["add", "--detach", checkout, BENCHMARK_REFERENCE_COMMIT],
            check=True,
            capture_output=True,
        )
        try:
            bench_cli.main(["--compare-with", checkout, "--out", out])
        finally:
            subprocess.run(git + ["remove", "--force", checkout], capture_output=True)


def _benchmarks() -> List[StudyEntry]:
    from . import bench_cli

    return [
        _benchmark_entry(
            "benchmark-cpu",
            lambda out: bench_cli.main(["--device", "cpu", "--out", out]),
            "dense / naive / local attention benchmark (chapter 13)",
        ),
        _benchmark_entry(
            "benchmark-before-after",
            _bench_against_reference,
            f"the book's training steps now vs commit {BENCHMARK_REFERENCE_COMMIT}, "
            "side by side (chapter 13)",
        ),
    ]


def _register_book_studies() -> None:
    for entry in (
        [attention_maps_study(n) for n in ATTENTION_MAP_RUNS]
        + [pruning_entry(n) for n in PRUNING_STUDIES]
        + [removal_study(n) for n in REMOVAL_RUNS]
        + [_sweep(9), _sweep(16), _kernel_spread()]
        + _benchmarks()
    ):
        register_study(entry)


_register_book_studies()
