"""The book's saved training runs, read (never made) through the registry of
:mod:`attnconv.experiments.registry`, where each run's settings are written once.

* :func:`book_run` — the saved run of a model under the active profile; a missing run is an error
  naming the command that makes it (``python -m attnconv.regenerate``);
  :func:`book_run_changes` — what that run changes in its profile's training settings;
* :func:`load_saved_runs` — the saved runs among several, and the labels of those not saved;
* :func:`runs_list` and :func:`run_caption` — runs described as a Markdown list or in a caption; a
  ``gpu`` or ``paper`` run that trained on the bundled sample (the full set was absent) is shown
  as such (:func:`data_caveat`), never as the profile's.
"""

from __future__ import annotations

from typing import Dict, Mapping, Optional, Sequence

from ...experiments.checkpoints import Run
from ...experiments.registry import book_run_name, load_run, run_entry
from ...experiments.store import MissingResultError, StaleResultError

__all__ = [
    "book_run_changes",
    "book_run",
    "tokens_per_side",
    "runs_list",
    "shared_facts",
    "run_caption",
    "on_sample_instead_of_full",
    "data_caveat",
    "load_saved_runs",
]


def book_run_changes(model: str, profile: str, tag: Optional[str] = None) -> dict:
    """What the book's run of ``model`` (``tag="16heads"``: 16 heads) under ``profile`` changes in
    the profile's :class:`~attnconv.experiments.train_config.TrainConfig` (its registry entry's
    :meth:`~attnconv.experiments.registry.RunEntry.changes`, ``epochs`` first)."""
    if tag == "16heads" and model == "resnet18":
        raise ValueError(
            "the 16-head variant exists for the self-attention models only"
        )
    name = book_run_name(model, profile, tag)
    try:
        return run_entry(name).changes()
    except KeyError:
        raise ValueError(f"unknown book run {name!r}") from None


def book_run(
    model: str, tag: Optional[str] = None, profile: Optional[str] = None
) -> Run:
    """The book's saved run of ``model`` (``tag="16heads"``: 16 heads) under ``profile`` (default
    :func:`active_profile`), read from the registry (:func:`attnconv.experiments.registry.load_run`):
    a missing run raises with the command that makes it."""
    return load_run(book_run_name(model, profile, tag))


def tokens_per_side(history: Mapping) -> int:
    """Tokens per side of the grid a saved run's self-attention model attends over (image size
    over the patch size of the downsampling), read from its history's ``model_config``."""
    mc = history["model_config"]
    return int(mc["image_size"]) // int(mc["downsample"])


def _architecture(history: Mapping, detailed: bool) -> str:
    """A saved run's architecture in words, from its history's ``model_config``: the ResNet's
    widths, or layers, heads and token grid (with the hidden size when ``detailed``)."""
    mc = history.get("model_config", {})
    if mc.get("kind") == "resnet":
        widths = f"widths {tuple(mc['widths'])}"
        return f"ResNet18 with {widths}" if detailed else widths
    g = tokens_per_side(history)
    if detailed:
        return (
            f"{mc['num_layers']} layers × {mc['num_heads']} heads, hidden {mc['hidden_size']}, "
            f"{g}×{g} tokens"
        )
    return f"{mc['num_layers']} layers, {mc['num_heads']} heads, {g}×{g} tokens"


def on_sample_instead_of_full(run: Run) -> bool:
    """Whether ``run`` trained on the bundled sample although its profile asks for the full
    CIFAR-10 (``data="auto"`` falls back to the sample when the full set is absent): such a run is
    not the profile's (for ``paper``: not the paper's) and is shown as such."""
    used = run.history.get("data") or run.config.data
    return run.config.data != "sample" and used == "sample"


def data_caveat(run: Run) -> Optional[str]:
    """One line saying that ``run`` trained on the sample instead of the full CIFAR-10, with what
    to do (``None`` when it trained on the data its profile asks for)."""
    if not on_sample_instead_of_full(run):
        return None
    h = run.history
    return (
        f"    not the {run.config.profile} profile's run: it trained on the bundled sample "
        f"({h.get('train_size', 0):,} images), not the full CIFAR-10 (50,000); put CIFAR-10 under "
        "the data root (python -m attnconv.doctor) and train it again with --force"
    )


def _run_facts(run: Run) -> Dict[str, str]:
    """What :func:`runs_list` says of one run, column by column."""
    h = run.history
    acc = f"{100 * run.epochs[-1]['test_acc']:.1f} %" if run.epochs else "n/a"
    return {
        "model": _architecture(h, detailed=True),
        "parameters": f"{h['num_parameters']:,}",
        "epochs": f"{len(run.epochs)} epochs",
        "data": (
            f"the {h['data']} data ({h['train_size']:,} training / {h['test_size']:,} "
            "test images)"
        ),
        "test accuracy": acc,
    }


def shared_facts(
    runs: Mapping[str, Run], columns: Sequence[str] = ("model", "parameters", "epochs")
) -> Dict[str, str]:
    """What every run of ``runs`` shares, column by column as :func:`runs_list` words it
    (``columns`` among model, parameters, epochs, data); a ``ValueError`` names a column whose
    runs differ, so that one sentence can describe them all."""
    facts = [_run_facts(run) for run in runs.values()]
    if not facts:
        raise ValueError("no runs")
    out = {}
    for c in columns:
        values = sorted({f[c] for f in facts})
        if len(values) != 1:
            raise ValueError(f"the runs differ in {c}: {', '.join(values)}")
        out[c] = values[0]
    return out


def _training(f: Mapping[str, str], epochs: bool, data: bool) -> str:
    """The training of one run, or of all, in words: its epochs, its data or both ("40 epochs on
    the sample data (...)"), each only if asked for; "" for neither."""
    if epochs and data:
        return f"{f['epochs']} on {f['data']}"
    if data:
        return f"trained on {f['data']}"
    return f["epochs"] if epochs else ""


def runs_list(runs: Mapping[str, Run]) -> str:
    """The saved runs a chapter reads (label → run) in Markdown: what all of them share said
    once (architecture, epochs, data), then one short item per run with what differs (at least
    parameters and final test accuracy); a run that trained on the bundled sample instead of its
    profile's full data says so in its item (:func:`data_caveat`)."""
    facts = {label: _run_facts(run) for label, run in runs.items()}
    several = len(facts) > 1
    shared = {
        c
        for c in ("model", "epochs", "data")
        if several and len({f[c] for f in facts.values()}) == 1
    }
    first = next(iter(facts.values()))
    said = [first["model"]] if "model" in shared else []
    said += [_training(first, "epochs" in shared, "data" in shared)]
    said = [x for x in said if x]
    lines = ["All " + f"{len(facts)} runs: " + "; ".join(said) + "."] if said else []
    lines += [""] if said else []
    for (label, f), run in zip(facts.items(), runs.values()):
        own = [f["model"]] if "model" not in shared else []
        own += [_training(f, "epochs" not in shared, "data" not in shared)]
        item = "; ".join([x for x in own if x] + [f"{f['parameters']} parameters"])
        item = f"- **{label}**: {item}; test accuracy {f['test accuracy']}."
        caveat = data_caveat(run)
        if caveat is not None:  # its first letter upper-cased, "CIFAR-10" kept
            caveat = caveat.strip()
            item += f" {caveat[0].upper()}{caveat[1:]}."
        lines.append(item)
    return "\n".join(lines)


def run_caption(run: Run, epochs: bool = True) -> str:
    """A short figure caption naming the run's profile and scale, e.g. ``CPU profile (2 layers,
    9 heads, 8×8 tokens, sample data, 40 epochs)`` (without the epochs if ``epochs`` is False). A
    full-data profile's run trained on the sample says so first: ``PAPER profile on the
    5,085-image sample, NOT the paper's data (...)``."""
    h = run.history
    arch = _architecture(h, detailed=False)
    length = f", {len(run.epochs)} epochs" if epochs else ""
    name = f"{run.config.profile.upper()} profile"
    if on_sample_instead_of_full(run):
        whose = "the paper's" if run.config.profile == "paper" else "its profile's"
        name += f" on the {h.get('train_size', 0):,}-image sample, not {whose} data"
    return f"{name} ({arch}, {h['data']} data{length})"


def load_saved_runs(specs: Mapping[str, tuple], profile: str):
    """The complete saved runs among ``specs`` (label → (model, tag)) under ``profile``, read from
    the registry without training anything: ``(runs, missing)``, a dict label →
    :class:`~attnconv.experiments.checkpoints.Run` and the labels whose run is not saved (or is of other
    settings)."""

    runs, missing = {}, []
    for label, (model, tag) in specs.items():
        try:
            runs[label] = load_run(book_run_name(model, profile, tag))
        except (KeyError, MissingResultError, StaleResultError):
            missing.append(label)
    return runs, missing
