"""The store of the book's saved evidence: where run folders and result files live, what their
files are called, the typed :class:`History` of a run, and one helper for every saved study
("a JSON file that holds its key").

* Paths resolve from the repository, not from the working directory: :func:`book_dir` is the
  ``book/`` folder next to the ``attnconv`` package (``$ATTNCONV_BOOK_DIR`` overrides it, for tests
  that work on a copy), :func:`runs_dir` its ``runs/`` and :func:`results_dir` its ``results/``.
  So a notebook executed from ``book/`` (nbval), the command line run from the root and a test run
  from anywhere read the same files.
* File names of a run folder, defined once: :data:`CONFIG`, :data:`HISTORY`, :data:`CHECKPOINT`
  (never committed), and the studies saved next to a history: :data:`PRUNING_FILE`,
  :data:`REMOVAL_FILE`, :data:`ATTENTION_MAPS_FILE`.
* :class:`History` — the content of ``history.json`` as typed records (:class:`EpochRecord`,
  :class:`HeadRecord`), with :meth:`History.from_json` / :meth:`History.to_json`. Every record also
  reads like the JSON dict it came from (``history["epochs"]``, ``record["centers"]``), so code
  written against the dict keeps working.
* :func:`read_keyed` — a saved study is read only when the key it was made with equals the key the
  reader asks for; otherwise (or when the file is missing) :class:`StaleResultError` /
  :class:`MissingResultError` name the command that regenerates it. Readers never write: making
  and saving is the job of ``python -m attnconv.regenerate`` (:data:`REGENERATE`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional

__all__ = [
    "CONFIG",
    "HISTORY",
    "THINNED_NOTE",
    "thin_history",
    "CHECKPOINT",
    "PARTIAL_CHECKPOINT",
    "STEPS_CSV",
    "EPOCHS_CSV",
    "PRUNING_FILE",
    "REMOVAL_FILE",
    "ATTENTION_MAPS_FILE",
    "REGENERATE",
    "repo_root",
    "book_dir",
    "runs_dir",
    "results_dir",
    "relative_to_book",
    "run_result_name",
    "regenerate_command",
    "MissingResultError",
    "StaleResultError",
    "read_json",
    "read_keyed",
    "json_form",
    "HeadRecord",
    "EpochRecord",
    "History",
    "read_history",
]

#: The run folder's files. ``checkpoint.pt`` holds the weights and is never committed.
CONFIG = "config.json"
HISTORY = "history.json"
CHECKPOINT = "checkpoint.pt"
#: A mid-epoch checkpoint, written when a stop signal arrives (deleted when the epoch ends); never committed.
PARTIAL_CHECKPOINT = "checkpoint-partial.pt"
#: Optional per-step and per-epoch logs of ``python -m attnconv.train --csv``.
STEPS_CSV = "steps.csv"
EPOCHS_CSV = "epochs.csv"
#: Studies saved next to a run's history, computed from its trained weights.
PRUNING_FILE = "pruning.json"
REMOVAL_FILE = "removal.json"
ATTENTION_MAPS_FILE = "attention_maps.json"

#: The command that makes every committed run and result.
REGENERATE = "python -m attnconv.regenerate"


def repo_root() -> Path:
    """The folder that holds the ``attnconv`` package (the repository's root)."""
    return Path(__file__).resolve().parents[2]


def book_dir() -> Path:
    """The book's folder: ``$ATTNCONV_BOOK_DIR`` when set, else ``book/`` of the repository."""
    env = os.environ.get("ATTNCONV_BOOK_DIR")
    return Path(env).resolve() if env else repo_root() / "book"


def runs_dir() -> Path:
    """``book/runs``: one folder per saved training run."""
    return book_dir() / "runs"


def results_dir() -> Path:
    """``book/results``: saved studies that belong to no single run."""
    return book_dir() / "results"


def relative_to_book(path) -> str:
    """``path`` as ``book/...`` when it lies in the book's folder (for messages), else as given."""
    path = Path(path)
    try:
        return str(Path("book") / path.resolve().relative_to(book_dir()))
    except ValueError:
        return str(path)


def run_result_name(run_dir, result: str) -> str:
    """The name under which ``python -m attnconv.regenerate`` makes the study ``result`` (e.g.
    ``pruning``, ``removal``, ``attention_maps``) of the run in ``run_dir``: ``<run>/<result>``
    with the run named by its folder under :func:`runs_dir`."""
    folder = Path(run_dir).resolve()
    try:
        return f"{folder.relative_to(runs_dir()).as_posix()}/{result}"
    except ValueError:
        return f"{folder}/{result}"


def regenerate_command(name: str) -> str:
    """The command line that makes the registered entry ``name``."""
    return f"{REGENERATE} --only {name}"


class MissingResultError(FileNotFoundError):
    """A saved run or result the book reads is not there; the message names the command that makes it."""


class StaleResultError(ValueError):
    """A saved result was made with other settings than the reader asks for; the message names the
    command that makes it again. Nothing was changed."""


def read_json(path):
    """The JSON content of ``path``."""
    with open(path) as f:
        return json.load(f)


def json_form(obj):
    """``obj`` as it reads back from JSON (tuples become lists, keys strings): the form keys are compared in."""
    return json.loads(json.dumps(obj))


def read_keyed(
    path, key, name: str, key_of: Optional[Callable[[dict], Any]] = None
) -> dict:
    """The saved study in ``path`` if it was made with ``key``; else :class:`MissingResultError`
    (no file) or :class:`StaleResultError` (another key), each naming ``python -m attnconv.regenerate
    --only name``. ``key_of`` reads the key from the file's content (default: its ``"key"`` entry);
    keys are compared in JSON form. Never writes."""
    path = Path(path)
    if not path.is_file():
        raise MissingResultError(
            f"{relative_to_book(path)} is missing; make it with: {regenerate_command(name)}"
        )
    saved = read_json(path)
    got = key_of(saved) if key_of is not None else saved.get("key")
    if json_form(got) != json_form(key):
        raise StaleResultError(
            f"{relative_to_book(path)} was made with other settings than the book asks for; "
            f"make it again with: {regenerate_command(name)}"
        )
    return saved


# --------------------------------------------------------------------------- typed history


class _Record(Mapping):
    """A typed record that also reads like its JSON dict: ``record[key]``, ``key in record``,
    ``record.get(key)``; fields absent from the JSON (``None``) are absent here too, keys the class
    does not name are kept in ``extra``."""

    def _names(self) -> List[str]:
        return [f.name for f in fields(self) if f.name != "extra"]

    def __iter__(self) -> Iterator[str]:
        for n in self._names():
            if getattr(self, n) is not None or n in self._present:
                yield n
        yield from self.extra

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __getitem__(self, key: str):
        if key in self.extra:
            return self.extra[key]
        if key in self._names() and (
            getattr(self, key) is not None or key in self._present
        ):
            return getattr(self, key)
        raise KeyError(key)

    def __setitem__(self, key: str, value) -> None:
        if key in self._names():
            setattr(self, key, value)
            self._present.add(key)
        else:
            self.extra[key] = value

    @classmethod
    def _split(cls, d: Mapping) -> tuple:
        names = {f.name for f in fields(cls)} - {"extra"}
        known = {k: v for k, v in d.items() if k in names}
        extra = {k: v for k, v in d.items() if k not in names}
        return known, extra

    #: Fields holding a list of records, and the record type of their items.
    _NESTED: Dict[str, type] = {}
    #: Fields present even when the JSON lacks them.
    _ALWAYS_PRESENT: frozenset = frozenset()

    def __post_init__(self):
        self._present = set(self._ALWAYS_PRESENT)

    @classmethod
    def from_json(cls, d: Mapping):
        """The record of a JSON dict: nested records typed, unknown keys kept in ``extra``, keys
        whose value is ``null`` kept (so that :meth:`to_json` gives the same dict back)."""
        known, extra = cls._split(d)
        for name, record_type in cls._NESTED.items():
            if known.get(name) is not None:
                known[name] = [record_type.from_json(r) for r in known[name]]
        rec = cls(**known, extra=extra)
        rec._present |= {k for k, v in known.items() if v is None}
        return rec

    def to_json(self) -> dict:
        """The JSON dict this record was read from (exact round trip)."""
        out = {k: self[k] for k in self}
        for name in self._NESTED:
            if getattr(self, name) is not None:
                out[name] = [r.to_json() for r in getattr(self, name)]
        return out


@dataclass(eq=False)
class HeadRecord(_Record):
    """The attention parameters of one layer's heads as a history saves them
    (:meth:`~attnconv.experiments.models.SelfAttentionClassifier.attention_parameters`): ``centers``
    Δ_h (row, column); quadratic: ``spreads`` s_h; generalized: ``inv_sqrt_sigma`` M_h; both:
    ``inverse_covariance`` Σ_h⁻¹; learned: ``covariance``, ``peak_shift``, ``peak_probability`` of
    each head's map for the centre query. A layer without heads holds ``num_heads`` = 0 only."""

    centers: Optional[list] = None
    spreads: Optional[list] = None
    inv_sqrt_sigma: Optional[list] = None
    inverse_covariance: Optional[list] = None
    covariance: Optional[list] = None
    peak_shift: Optional[list] = None
    peak_probability: Optional[list] = None
    num_heads: Optional[int] = None
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class EpochRecord(_Record):
    """One epoch of a history: losses and accuracies, the learning rate of its last step, its
    ``seconds`` (training + evaluation), the heads' parameters after it (one :class:`HeadRecord`
    per layer) and, for a run's last epoch, ``test_predictions``: the predicted class of every test
    image, one digit each (:func:`~attnconv.experiments.train_step.encode_predictions`)."""

    epoch: int = 0
    train_loss: Optional[float] = None
    train_acc: Optional[float] = None
    test_loss: Optional[float] = None
    test_acc: Optional[float] = None
    val_loss: Optional[float] = None
    val_acc: Optional[float] = None
    lr: Optional[float] = None
    seconds: Optional[float] = None
    attention: Optional[List[HeadRecord]] = None
    test_predictions: Optional[str] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    _NESTED = {"attention": HeadRecord}


@dataclass(eq=False)
class History(_Record):
    """The content of a run's ``history.json`` (:func:`attnconv.experiments.train.train` writes it):
    the run's ``config`` and ``model_config`` (dicts), its size and data, the heads before training
    (``initial_attention``, one :class:`HeadRecord` per layer), one :class:`EpochRecord` per epoch,
    ``status`` (``running`` / ``complete`` / ``failed``) and the losses of the first steps (for the
    re-check of :func:`attnconv.experiments.runs.verify_first_epoch`). A retraining after pruning
    adds ``heads_per_layer`` and ``initial`` (kept in ``extra``)."""

    config: Optional[dict] = None
    model_config: Optional[dict] = None
    num_parameters: Optional[int] = None
    data: Optional[str] = None
    data_note: Optional[str] = None
    train_size: Optional[int] = None
    test_size: Optional[int] = None
    steps_per_epoch: Optional[int] = None
    validation_size: Optional[int] = None
    initial_attention: Optional[List[HeadRecord]] = None
    epochs: List[EpochRecord] = field(default_factory=list)
    status: Optional[str] = None
    device: Optional[str] = None
    first_step_losses: Optional[List[float]] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    _NESTED = {"initial_attention": HeadRecord, "epochs": EpochRecord}
    _ALWAYS_PRESENT = frozenset({"epochs"})

    @property
    def complete(self) -> bool:
        return self.status == "complete"

    def series(self, key: str) -> List[float]:
        """One per-epoch quantity, e.g. ``history.series("test_acc")``."""
        return [e[key] for e in self.epochs]

    def layer_records(self, epoch: int = -1) -> List[HeadRecord]:
        """The heads of every layer after ``epoch`` (0: the initialisation, -1: the last epoch)."""
        if epoch == 0:
            return self.initial_attention
        if not self.epochs:
            raise ValueError("the history holds no epoch")
        return self.epochs[epoch - 1 if epoch > 0 else epoch].attention

    @property
    def predictions(self) -> Optional[List[int]]:
        """The predicted class of every test image after the last epoch (the per-image evidence
        of paired tests); ``None`` for a run saved before runs kept them."""
        if not self.epochs or self.epochs[-1].test_predictions is None:
            return None
        return [int(c) for c in self.epochs[-1].test_predictions]

    @property
    def seconds(self) -> float:
        """Recorded seconds of all epochs (training + evaluation); 0 when none are recorded."""
        return float(sum(e.seconds or 0.0 for e in self.epochs))


#: What a thinned history says of itself (:func:`thin_history`).
THINNED_NOTE = "per-epoch attention kept for the last epoch only"


def thin_history(history: dict) -> dict:
    """``history`` (a history's JSON) with the per-epoch head records of every epoch but the last
    dropped, and ``attention_epochs`` saying so: a run whose heads' paths are never drawn (a
    tuning run, read for its validation accuracy) keeps what the re-check needs
    (``initial_attention``, ``first_step_losses``, every epoch's losses and accuracies) in a
    fifth of the space. Idempotent."""
    out = dict(history)
    epochs = [dict(e) for e in history.get("epochs", [])]
    for e in epochs[:-1]:
        e.pop("attention", None)
    out["epochs"] = epochs
    if epochs:
        out["attention_epochs"] = THINNED_NOTE
    return out


def read_history(run_dir) -> History:
    """The :class:`History` of a run folder (``MissingResultError`` when it has none)."""
    path = Path(run_dir) / HISTORY
    if not path.is_file():
        raise MissingResultError(
            f"{relative_to_book(run_dir)} holds no run ({HISTORY} missing)"
        )
    return History.from_json(read_json(path))
