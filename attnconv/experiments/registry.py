"""The registry of the book's training runs: every run a chapter reads is one named entry, written
once and complete (model, profile, every change to the profile's settings, epochs and seed
included), in the manner of timm's ``register_model``.

An entry's name is its folder under ``book/runs`` (:func:`attnconv.experiments.store.runs_dir`):

    cpu/quadratic                 the cpu profile's quadratic model, 40 epochs (ch. 7, 10, App. C)
    deep/learned                  the deep profile's learned-encoding model (chapters 9, 12)
    seeds/cpu/quadratic/seed3     seed 3 of the cpu quadratic model at the profile's 16 epochs

Chapters ask by name and only read: :func:`load_run` returns the saved run, or raises
:class:`~attnconv.experiments.store.MissingResultError` / :class:`~attnconv.experiments.store.StaleResultError`
whose message names the command that makes it (``python -m attnconv.regenerate --only NAME``).
:func:`series` lists the runs of one model over seeds (seed 0 first), for spreads over seeds.
:func:`train_entry` is how ``python -m attnconv.regenerate`` makes a run (resuming from a checkpoint
when one is there).

The profiles' own settings stay in :mod:`attnconv.experiments.profiles`; an entry records what the
book changes in them (:meth:`RunEntry.changes`).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from .checkpoints import Run
from .checkpoints import load_run as load_run_folder
from .data import DATA_SOURCES
from .profiles import PROFILES, default_profile_name, make_config
from .store import (
    CHECKPOINT,
    CONFIG,
    HISTORY,
    History,
    MissingResultError,
    StaleResultError,
    json_form,
    read_history,
    regenerate_command,
    relative_to_book,
    runs_dir,
)
from .train import train
from .train_config import TrainConfig

__all__ = [
    "RunEntry",
    "RUNS",
    "SERIES",
    "register_run",
    "active_profile",
    "book_run_name",
    "run_entry",
    "book_runs",
    "series",
    "load_run",
    "load_series",
    "run_state",
    "data_matches",
    "settings_differences",
    "train_entry",
    "GPU_SAMPLE_MODELS",
]

#: The models ``make gpu-window`` trains under the gpu-sample profile, in this order.
GPU_SAMPLE_MODELS = ("quadratic", "learned", "generalized")

#: Config fields that do not make a saved run one "of other settings": where it ran (``device``) and
#: where its data lay (``data_root``). ``data`` is compared by what the run used, not by how it was asked
#: for (:func:`data_matches`): ``--data full`` for an entry of ``data="auto"`` is the same run.
_IGNORED = ("device", "data_root", "data")


@dataclass(frozen=True)
class RunEntry:
    """One saved training run of the book: its ``name`` (= its folder under ``book/runs``), its
    complete :class:`~attnconv.experiments.train_config.TrainConfig`, the ``series`` it belongs to (one
    model over seeds), whether it is ``committed`` to the repository, and what it is for."""

    name: str
    config: TrainConfig
    description: str = ""
    series: Optional[str] = None
    committed: bool = True
    chapters: Tuple[str, ...] = field(default_factory=tuple)

    @property
    def model(self) -> str:
        return self.config.model

    @property
    def profile(self) -> str:
        return self.config.profile

    @property
    def seed(self) -> int:
        return self.config.seed

    @property
    def path(self) -> Path:
        """The run folder, resolved from the repository."""
        return runs_dir() / self.name

    @property
    def label(self) -> str:
        """The folder's last part: ``quadratic``, ``quadratic-16heads``, ``seed3``."""
        return self.name.rsplit("/", 1)[-1]

    def changes(self) -> dict:
        """The fields of :attr:`config` that differ from the profile's default for the model,
        ``epochs`` first."""
        base = make_config(self.model, self.profile).to_dict()
        mine = self.config.to_dict()
        keys = ["epochs"] + [k for k in mine if k != "epochs"]
        return {k: mine[k] for k in keys if mine[k] != base[k]}


#: Every registered run, by name.
RUNS: Dict[str, RunEntry] = {}
#: Runs of one model over seeds, by series name (seed 0 first).
SERIES: Dict[str, List[str]] = {}


def register_run(
    name: str,
    model: str,
    profile: str,
    description: str = "",
    series: Optional[str] = None,
    committed: bool = True,
    chapters: Tuple[str, ...] = (),
    **changes,
) -> RunEntry:
    """Register the run ``name`` of ``model`` under ``profile`` with ``changes`` to the profile's
    :class:`TrainConfig` (``epochs`` must be among them: every entry states its length)."""
    if name in RUNS:
        raise ValueError(f"run {name!r} is registered twice")
    if "epochs" not in changes:
        raise ValueError(f"run {name!r}: state its epochs")
    entry = RunEntry(
        name,
        make_config(model, profile, **changes),
        description,
        series,
        committed,
        tuple(chapters),
    )
    RUNS[name] = entry
    if series is not None:
        SERIES.setdefault(series, []).append(name)
        SERIES[series].sort(key=lambda n: RUNS[n].seed)
    return entry


def _sixteen_heads(model: str, profile: str) -> dict:
    """The profile's model overrides (with its local attention, if any) and 16 heads (the paper's Fig. 10)."""
    return {**make_config(model, profile).model_overrides, "num_heads": 16}


# ---------------------------------------------------------------------------- the book's runs
# cpu: the quadratic models train 40 epochs instead of the profile's 16 so that the Gaussian heads
# have time to move (8 epochs moved them ~0.6 token), ResNet18 as long for Fig. 4, the content
# model 8 epochs (~40 s each).
_CPU = {
    "quadratic": (
        dict(epochs=40),
        "Gaussian heads during training (Figs. 2, 3)",
        ("07", "07b", "10", "appendix"),
    ),
    "quadratic-16heads": (
        dict(epochs=40),
        "16 heads per layer (Fig. 10)",
        ("10", "appendix"),
    ),
    "resnet18": (
        dict(epochs=40),
        "the convolutional baseline (Fig. 4, Table 1)",
        ("07",),
    ),
    "learned": (
        dict(epochs=16),
        "learned relative encoding (Fig. 6)",
        ("07", "09", "appendix"),
    ),
    "learned_content": (
        dict(epochs=8),
        "learned encoding with content (ICLR Fig. 6)",
        ("07", "09"),
    ),
    "generalized": (
        dict(epochs=40),
        "generalized quadratic encoding, pruning (Figs. 7-9)",
        ("08", "appendix"),
    ),
}
_DEEP = {
    "quadratic": ("the paper's depth: Figs. 2, 3 at 6 layers", ("07b", "12")),
    "generalized": ("the paper's depth: Fig. 7, pruning per layer", ("12",)),
    "learned": ("the paper's depth: Fig. 6", ("09", "12")),
    "quadratic-16heads": ("the paper's depth: Fig. 10", ("10", "12")),
}


#: The epochs of the 2-layer ``-40epochs`` seed series: the quadratic book run's 40, at which its
#: Gaussian heads have moved (they barely move in the profile's 16).
LONG_SERIES_EPOCHS = 40


def _heads_extra(model: str, tag: Optional[str], profile: str) -> dict:
    """The extra settings of a run tagged ``16heads`` (its model overrides); else none."""
    return (
        {"model_overrides": _sixteen_heads(model, profile)} if tag == "16heads" else {}
    )


def _register_cpu_and_deep_runs() -> None:
    """The committed runs of the cpu and deep profiles."""
    for name, (changes, what, chapters) in _CPU.items():
        model, _, tag = name.partition("-")
        extra = _heads_extra(model, tag, "cpu")
        register_run(
            f"cpu/{name}", model, "cpu", what, chapters=chapters, **changes, **extra
        )
    for name, (what, chapters) in _DEEP.items():
        model, _, tag = name.partition("-")
        extra = _heads_extra(model, tag, "deep")
        register_run(
            f"deep/{name}",
            model,
            "deep",
            what,
            chapters=chapters,
            epochs=PROFILES["deep"].epochs[model],
            **extra,
        )


def _register_gpu_runs() -> None:
    """The runs a reader with a GPU trains (not committed): gpu, paper and gpu-sample."""
    # gpu and paper: the same models at the profile's settings, trained by a reader with a GPU (not committed)
    for profile in ("gpu", "paper"):
        for name in _CPU:
            model, _, tag = name.partition("-")
            extra = _heads_extra(model, tag, profile)
            register_run(
                f"{profile}/{name}",
                model,
                profile,
                f"{profile} profile",
                committed=False,
                epochs=PROFILES[profile].epochs[model],
                **extra,
            )
    # gpu-sample: the paper's models on the bundled sample, trained on a lent GPU by
    # `make gpu-window` (attnconv.gpu_window, its last phase; not committed)
    for model in GPU_SAMPLE_MODELS:
        register_run(
            f"gpu-sample/{model}",
            model,
            "gpu-sample",
            "paper-size model, bundled sample, GPU (make gpu-window)",
            committed=False,
            epochs=PROFILES["gpu-sample"].epochs[model],
        )


def _register_series(profile, model, tag, seeds, seed0) -> None:
    """One seed series: seed 0 is the registered run ``seed0`` (if given), the others new runs."""
    label = model if tag is None else f"{model}-{tag}"
    series_name = f"{profile}/{label}"
    extra = _heads_extra(model, tag, profile)
    epochs = (
        LONG_SERIES_EPOCHS if tag == "40epochs" else PROFILES[profile].epochs[model]
    )
    for k in seeds:
        if k == 0 and seed0 is not None:
            entry = RUNS[seed0]
            if entry.config != make_config(
                model, profile, seed=0, epochs=epochs, **extra
            ):
                raise ValueError(f"{seed0} is not seed 0 of the series {series_name}")
            object.__setattr__(entry, "series", series_name)
            SERIES.setdefault(series_name, []).insert(0, seed0)
            continue
        register_run(
            f"seeds/{profile}/{label}/seed{k}",
            model,
            profile,
            f"seed {k} of {series_name}",
            series=series_name,
            epochs=epochs,
            seed=k,
            **extra,
        )


def _register_book_runs() -> None:
    """Register every run of the book: the profiles' runs, then the seed series."""
    _register_cpu_and_deep_runs()
    _register_gpu_runs()
    # seeds: spreads over seeds, at the profile's default epochs (cpu 16, deep 40), the 2-layer
    # quadratic and learned models at 40 epochs (equal, sufficient training for Sec. 3's comparison),
    # and the convolutional baseline at the same 40 epochs (every comparison with it over seeds)
    for profile, model, tag, seeds, seed0 in (
        ("cpu", "quadratic", None, range(5), None),
        ("cpu", "quadratic", "16heads", range(5), None),
        ("cpu", "learned", None, range(5), "cpu/learned"),
        ("deep", "quadratic", None, range(3), "deep/quadratic"),
        ("deep", "learned", None, range(3), "deep/learned"),
        ("cpu", "quadratic", "40epochs", range(5), "cpu/quadratic"),
        ("cpu", "learned", "40epochs", range(5), None),
        ("cpu", "resnet18", "40epochs", range(5), "cpu/resnet18"),
    ):
        _register_series(profile, model, tag, seeds, seed0)


_register_book_runs()


# ---------------------------------------------------------------------------- reading
def active_profile() -> str:
    """The profile the chapters use: ``$ATTNCONV_PROFILE``, else ``gpu`` with CUDA, else ``cpu``."""
    return os.environ.get("ATTNCONV_PROFILE") or default_profile_name()


def book_run_name(
    model: str, profile: Optional[str] = None, tag: Optional[str] = None
) -> str:
    """The registry name of the book's run of ``model`` (``tag="16heads"``: 16 heads) under
    ``profile`` (default :func:`active_profile`)."""
    profile = profile or active_profile()
    return f"{profile}/{model if tag is None else f'{model}-{tag}'}"


def run_entry(name: str) -> RunEntry:
    """The registered run ``name``; a ``KeyError`` listing the names when there is none."""
    if name not in RUNS:
        raise KeyError(
            f"no registered run {name!r}; registered: {', '.join(sorted(RUNS))}"
        )
    return RUNS[name]


def book_runs(profile: str) -> List[RunEntry]:
    """The book's runs of ``profile`` (not the seed series' extra seeds), in registration order."""
    return [e for e in RUNS.values() if e.name.startswith(f"{profile}/")]


def series(name: str) -> List[RunEntry]:
    """The runs of the series ``name`` (e.g. ``"deep/learned"``), seed 0 first."""
    if name not in SERIES:
        raise KeyError(f"no series {name!r}; series: {', '.join(sorted(SERIES))}")
    return [RUNS[n] for n in SERIES[name]]


def _differences(a: dict, b: dict) -> List[str]:
    a, b = json_form(a), json_form(b)
    return sorted(k for k in (set(a) | set(b)) - set(_IGNORED) if a.get(k) != b.get(k))


def data_matches(history: History, config: TrainConfig) -> bool:
    """Whether the data a saved run trained on (its history's ``data``, ``full`` or ``sample``)
    is one that ``config.data`` allows (:data:`~attnconv.experiments.data.DATA_SOURCES`); a
    history that does not say is taken at its config's word."""
    used = history.data or (history.config or {}).get("data")
    if used == "auto":  # a config that asked for auto and no record of what it got
        return config.data == "auto"
    return used in DATA_SOURCES[config.data]


def settings_differences(history: History, config: TrainConfig) -> List[str]:
    """The settings in which a saved run differs from ``config`` (:data:`_IGNORED` aside; ``data``
    when it trained on data ``config.data`` does not allow)."""
    diff = _differences(history.config or {}, config.to_dict())
    if not data_matches(history, config):
        diff = sorted(diff + ["data"])
    return diff


def _superseded(history: History, config: TrainConfig) -> bool:
    """A run of ``data="auto"`` that trained on the sample (the full CIFAR-10 was not there)
    while the full CIFAR-10 is there now: the run it stands for would train on the full data."""
    from .data import cifar10_present

    used = history.data or (history.config or {}).get("data")
    return (
        config.data == "auto" and used == "sample" and cifar10_present(config.data_root)
    )


def run_state(entry: RunEntry) -> str:
    """``present`` (a complete run of the entry's config), ``missing``, ``incomplete`` (stopped;
    resumable when ``checkpoint.pt`` is there), ``stale`` (a run of other settings) or
    ``superseded`` (complete, but trained on the sample under ``data="auto"`` while the full
    CIFAR-10 is there now: readable until :func:`train_entry` replaces it)."""
    path = entry.path / HISTORY
    if not path.is_file():
        return "missing"
    history = read_history(entry.path)
    if settings_differences(history, entry.config):
        return "stale"
    if not history.complete:
        return "incomplete"
    return "superseded" if _superseded(history, entry.config) else "present"


def load_run(name: str, load_model: bool = False) -> Run:
    """The saved run of the registered entry ``name``, its history a typed
    :class:`~attnconv.experiments.store.History`. Reads only: a missing, unfinished or other-settings
    run raises with the command that makes it; ``load_model`` needs the (uncommitted) checkpoint."""
    entry = run_entry(name)
    state = run_state(entry)
    state = "present" if state == "superseded" else state
    where = relative_to_book(entry.path)
    if state == "missing":
        raise MissingResultError(
            f"{where} holds no run: make it with: {regenerate_command(name)}"
        )
    if state == "stale":
        diff = ", ".join(settings_differences(read_history(entry.path), entry.config))
        raise StaleResultError(
            f"{where} holds a run of other settings ({diff}); make it again with: "
            f"{regenerate_command(name)} --force"
        )
    if state == "incomplete":
        raise MissingResultError(
            f"{where} holds an unfinished run; finish it with: {regenerate_command(name)}"
        )
    if load_model:
        if not (entry.path / CHECKPOINT).is_file():
            raise MissingResultError(
                f"{where} has its history but not its weights ({CHECKPOINT} is never committed); "
                f"train it again with: {regenerate_command(name)} --force"
            )
        run = load_run_folder(entry.path, load_model=True)
        return Run(run.run_dir, entry.config, History.from_json(run.history), run.model)
    return Run(entry.path, entry.config, read_history(entry.path))


def load_series(name: str, skip_missing: bool = False) -> List[Run]:
    """:func:`load_run` of every run of the series ``name`` (seed 0 first); with ``skip_missing``
    the runs that are not there yet are left out instead of raising."""
    out = []
    for entry in series(name):
        try:
            out.append(load_run(entry.name))
        except (MissingResultError, StaleResultError):
            if not skip_missing:
                raise
    return out


# ---------------------------------------------------------------------------- making
def train_entry(
    name: str,
    force: bool = False,
    progress: bool = True,
    verbose: bool = True,
    keep_model: bool = False,
) -> Run:
    """Make the run ``name`` in its folder: nothing to do when a complete run of its config is
    there (unless ``force``); resumed from its checkpoint when one is there; else trained. With
    ``force`` a complete run is trained again in ``<folder>.regenerating`` and moved into place
    when it finishes (the saved one stays until then); so is a ``superseded`` one (trained on the
    sample, the full CIFAR-10 here now) without ``force``. Returns the run (with its model if
    ``keep_model``)."""
    entry = run_entry(name)
    state = run_state(entry)
    if state == "superseded":
        state, force = "present", True
    if state == "present" and not force:
        return load_run(
            name, load_model=keep_model and (entry.path / CHECKPOINT).is_file()
        )
    if state == "stale" and not force:
        raise StaleResultError(
            f"{relative_to_book(entry.path)} holds a run of other settings; add --force to replace it"
        )
    if state == "incomplete" and not (entry.path / CHECKPOINT).is_file() and not force:
        raise MissingResultError(
            f"{relative_to_book(entry.path)} holds an unfinished run without its checkpoint; "
            "add --force to train it again"
        )
    resumable = state == "incomplete" and (entry.path / CHECKPOINT).is_file()
    target = (
        entry.path
        if (state == "missing" or resumable)
        else entry.path.with_name(entry.path.name + ".regenerating")
    )
    resume = (target / CHECKPOINT).is_file()
    if target != entry.path and not resume and target.exists():
        shutil.rmtree(
            target
        )  # a scratch folder of an earlier attempt without a checkpoint
    train(entry.config, target, resume=resume, progress=progress, verbose=verbose)
    if target != entry.path:
        entry.path.mkdir(parents=True, exist_ok=True)
        for f in (CONFIG, HISTORY, CHECKPOINT):
            if (target / f).exists():
                os.replace(target / f, entry.path / f)
        shutil.rmtree(target)
    return load_run(name, load_model=keep_model)


# ---------------------------------------------------------------------------- beyond the paper
# Chapter 18's data-efficiency runs (attnconv.experiments.beyond): a plain ViT and the GPSA
# classifier under five starts (two of them mimetic's halves) at three training-set sizes, equal
# steps, the later papers' recipe, cpu profile. (The first version of the experiment, beyond/ and
# beyond-steps/, is retired: SGD for ~300 steps, models that never fit their data.)
from .beyond import beyond_runs  # noqa: E402

for _run in beyond_runs():
    register_run(
        _run.name,
        _run.model,
        "cpu",
        _run.description,
        series=_run.series,
        chapters=("18",),
        **_run.changes,
    )
