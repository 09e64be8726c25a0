"""The protocol's runs and studies, registered like every run of the book (:mod:`attnconv.
experiments.registry`, :mod:`attnconv.experiments.studies`) and made by ``python -m
attnconv.regenerate`` (importing this module registers them):

* ``confirm-tuning/<arm>/<values>/seed900`` — the tuning runs (:data:`~attnconv.evidence.protocol.
  TUNING`), and ``results/confirm-tuning`` — the choice per arm (``book/results/confirm-tuning.json``);
* ``confirm/<arm>/seed<k>`` — the confirmatory runs at the fresh seeds, registered once their
  arm's tuning is saved, with their studies (removal and attention maps of the learned arm,
  pruning of the generalized arm), made while the weights are on disk;
* ``beyond3-tuning/<arm>/n<size>/lr<rate>/seed<k>``, ``results/beyond3-tuning`` and
  ``beyond3/<arm>/n<size>/seed<k>`` — chapter 18's runs (:data:`~attnconv.evidence.protocol.BEYOND`).

Every value of a run comes from the protocol; nothing here chooses one.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import fields
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from ..experiments import beyond as beyond_exp
from ..experiments.checkpoints import write_json
from ..experiments.profiles import make_config
from ..experiments.registry import RUNS, load_run, register_run, run_state
from ..experiments.store import (
    HISTORY,
    MissingResultError,
    StaleResultError,
    read_history,
    results_dir,
    thin_history,
)
from ..experiments.studies import (
    StudyEntry,
    attention_maps_study,
    pruning_entry,
    register_study,
    removal_study,
)
from ..experiments.studies_paths import head_paths_study
from ..experiments.train_config import TrainConfig
from .protocol import (
    ARMS,
    BEYOND,
    CONFIRMATORY_SEEDS,
    EPOCHS,
    SPLIT,
    TUNING_SEEDS,
    Arm,
)

__all__ = [
    "arm_changes",
    "values_tag",
    "grid_values",
    "last3",
    "write_result",
    "read_result",
    "thin_run",
    "thin_file",
    "tuning_choice",
    "tuning_row",
    "TUNING_FILE",
    "BEYOND_TUNING_FILE",
    "BEYOND_STEPS",
    "BEYOND_LRS",
    "BEYOND_TUNING_SEEDS",
    "tuning_runs",
    "choose",
    "tuned_values",
    "grid_ends",
    "tuning_record",
    "confirm_run_name",
    "register_arm_seeds",
    "register_confirmatory",
    "beyond_changes",
    "beyond_tuning_runs",
    "beyond_run_name",
    "beyond_tuning",
    "register_beyond",
    "queue",
    "seen_histories",
    "HELD_OUT",
    "HELD_OUT_FILE",
    "held_out_study",
]

#: book/results/confirm/tuning-<arm>.json: one arm's tuning runs and its choice.
TUNING_FILE = "confirm/tuning-{arm}.json"
#: book/results/beyond3/tuning-n<size>.json: chapter 18's rates at one size.
BEYOND_TUNING_FILE = "beyond3/tuning-n{size}.json"
_VALIDATION = SPLIT["validation_images"]
_TRAIN_FIELDS = {f.name for f in fields(TrainConfig)}
#: Chapter 18's budget, learning rates and tuning seeds (BEYOND's words, as numbers).
BEYOND_STEPS = 520
BEYOND_LRS = (3e-3, 1e-2, 3e-2)
BEYOND_TUNING_SEEDS = (900, 901)
#: The order the arms are tuned in: the cheapest first.
_TUNING_ORDER = ("learned", "resnet18", "quadratic", "quadratic-16heads", "generalized")
#: A tie in validation accuracy (points / 100) goes to the lower value.
_TIE = 0.001


def arm_changes(arm: Arm, values: dict) -> dict:
    """The changes to the deep profile's config of ``arm``'s model: the arm's own, ``values``
    (tuned), the budget and the validation split; model fields go into ``model_overrides``."""
    wanted = {**arm.changes, **values}
    train = {k: v for k, v in wanted.items() if k in _TRAIN_FIELDS}
    model = {k: v for k, v in wanted.items() if k not in _TRAIN_FIELDS}
    if model:
        base = make_config(arm.model, "deep").model_overrides
        train["model_overrides"] = {**base, **model}
    return dict(train, epochs=EPOCHS, validation=_VALIDATION)


def values_tag(values: dict) -> str:
    """``lr0.1`` or ``lr0.1-w16`` (a ResNet's first width)."""
    parts = [f"lr{values['lr']:g}"]
    if "widths" in values:
        parts.append(f"w{values['widths'][0]}")
    return "-".join(parts)


def grid_values(arm: Arm) -> Iterator[dict]:
    keys = sorted(arm.grid)
    for combo in itertools.product(*(arm.grid[k] for k in keys)):
        yield dict(zip(keys, combo))


def tuning_runs() -> Dict[str, List[Tuple[str, dict]]]:
    """Arm → its tuning runs as (registry name, tuned values)."""
    out = {}
    for arm in sorted(ARMS.values(), key=lambda a: _TUNING_ORDER.index(a.key)):
        if arm.grid:
            out[arm.key] = [
                (f"confirm-tuning/{arm.key}/{values_tag(v)}/seed{seed}", v)
                for v in grid_values(arm)
                for seed in TUNING_SEEDS
            ]
    return out


def last3(history, key: str = "val_acc") -> float:
    values = [e[key] for e in history.epochs if e.get(key) is not None]
    return sum(values[-3:]) / len(values[-3:])


def choose(scores: List[Tuple[dict, float]]) -> dict:
    """The protocol's choice among ``(values, validation measure)``: the highest measure; a tie
    within 0.1 point to the lower learning rate, then the narrower width."""
    best = max(score for _, score in scores)
    tied = [v for v, score in scores if score >= best - _TIE]
    return min(tied, key=lambda v: (v["lr"], v.get("widths", (0,))[0]))


def tuning_row(name: str, values: dict) -> dict:
    """One tuning run as the choice reads it (it only reads): its ``values``, the mean validation
    accuracy of its last 3 epochs (:func:`last3`) and its last training accuracy."""
    h = load_run(name).history
    return {
        "run": name,
        "values": values,
        "val_acc_last3": last3(h),
        "train_acc_last": h.epochs[-1].train_acc,
    }


def tuning_choice(arm: str, runs: Sequence[Tuple[str, dict]]) -> dict:
    """``arm``'s choice on validation among its tuning ``runs`` (name, values), with each run's
    validation and training accuracy; the runs are thinned (:func:`thin_history`): only these
    are ever read again."""
    for name, _ in runs:
        thin_run(name)
    rows = [tuning_row(name, values) for name, values in runs]
    scores = [(r["values"], r["val_acc_last3"]) for r in rows]
    return {"arm": arm, "runs": rows, "choice": choose(scores)}


def _make_tuning(arm: str) -> None:
    write_result(TUNING_FILE.format(arm=arm), tuning_choice(arm, tuning_runs()[arm]))


def write_result(file: str, obj) -> None:
    path = results_dir() / file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=1, sort_keys=True) + "\n")


def read_result(file: str) -> dict:
    path = results_dir() / file
    if not path.is_file():
        name = "results/" + file.removesuffix(".json").replace("/tuning-", "-tuning-")
        raise MissingResultError(
            f"book/results/{file} is missing; make it with: python -m "
            f"attnconv.regenerate --only {name}"
        )
    return json.loads(path.read_text())


def tuning_record(arm: str) -> dict:
    """``arm``'s saved tuning: its runs (values, validation and training accuracy) and its
    choice (raises :class:`MissingResultError` while it is not made)."""
    return read_result(TUNING_FILE.format(arm=arm))


def tuned_values(arm: str) -> Optional[dict]:
    """The values chosen for ``arm`` (its ``tuned_as`` arm's for the 16-head arm), or ``None``
    while its tuning is not saved."""
    own = ARMS[arm].tuned_as or arm
    try:
        chosen = read_result(TUNING_FILE.format(arm=own))["choice"]
    except MissingResultError:
        return None
    return {k: tuple(v) if isinstance(v, list) else v for k, v in chosen.items()}


def grid_ends(arm: str) -> List[str]:
    """The tuned values of ``arm`` whose choice sits at an end of its grid (first or last of the
    values tried), e.g. ``["lr"]``; none for an arm without a grid or without its tuning."""
    grid, chosen = ARMS[arm].grid, tuned_values(arm)
    if not grid or chosen is None:
        return []
    return [k for k, v in grid.items() if list(v).index(chosen[k]) in (0, len(v) - 1)]


def confirm_run_name(arm: str, seed: int) -> str:
    return f"confirm/{arm}/seed{seed}"


#: The fresh seed whose heads' paths the book draws (arXiv v1 Fig. 2): its history kept start
#: and end only, so a re-run keeps every epoch (:mod:`~attnconv.experiments.studies_paths`).
PATHS_RUN = confirm_run_name("quadratic", CONFIRMATORY_SEEDS[0])

#: The studies each arm's confirmatory runs need while their weights are on disk.
_STUDIES = {
    "learned": (removal_study, attention_maps_study),
    "generalized": (lambda n: pruning_entry(n, (1, "code", None)),),
}


def register_arm_seeds(
    arm: Arm,
    values: dict,
    seeds: Sequence[int],
    *,
    name_of: Callable[[str, int], str],
    purpose: str,
    chapters: Tuple[str, ...],
    studies: Callable[[str], Iterable[StudyEntry]],
) -> List[str]:
    """Register ``arm``'s runs at ``seeds`` with its tuned ``values`` (and the ``studies`` each
    run needs), skipping names already registered; returns the names newly registered.

    ``name_of(arm_key, seed)`` names a run; ``purpose`` is its description, which names the
    seed and the arm (``"{seed}"`` and ``"{arm}"`` are filled in); its series is the run name's
    folder."""
    new = []
    for seed in seeds:
        name = name_of(arm.key, seed)
        if name in RUNS:
            continue
        register_run(
            name,
            arm.model,
            "deep",
            purpose.format(seed=seed, arm=arm.key),
            series=name.rsplit("/", 1)[0],
            chapters=chapters,
            seed=seed,
            **arm_changes(arm, values),
        )
        new.append(name)
        for study in studies(name):
            register_study(study)
    return new


def _confirmatory_studies(arm: str) -> Callable[[str], List[StudyEntry]]:
    return lambda name: [study(name) for study in _STUDIES.get(arm, ())]


def register_confirmatory() -> List[str]:
    """Register the confirmatory runs (and their studies) of every arm whose tuning is saved;
    returns the names newly registered (idempotent)."""
    new = []
    for arm in ARMS.values():
        values = tuned_values(arm.key)
        if values is not None:
            new += register_arm_seeds(
                arm,
                values,
                CONFIRMATORY_SEEDS,
                name_of=confirm_run_name,
                purpose="confirmatory seed {seed} of {arm} (protocol)",
                chapters=("12", "17"),
                studies=_confirmatory_studies(arm.key),
            )
    return new


# --------------------------------------------------------------------------- chapter 18
def beyond_changes(arm: str, size: int, lr: float, seed: int) -> dict:
    """The changes to the cpu profile of chapter 18's run of ``arm`` at ``size`` images."""
    per_epoch = -(-size // beyond_exp.BATCH)
    if BEYOND_STEPS % per_epoch:
        raise ValueError(f"{BEYOND_STEPS} steps are not whole epochs of {per_epoch}")
    epochs = BEYOND_STEPS // per_epoch
    model = dict(beyond_exp.MODEL, downsample=4)
    if arm == "vit":
        model.update(attention="mhsa", init="random")
    elif arm == "vit_mimetic":
        model.update(attention="mhsa", init="mimetic")
    else:
        model.update(init="random" if arm == "gpsa" else arm)
    return dict(
        beyond_exp.RECIPE,
        lr=lr,
        epochs=epochs,
        evaluate_every=max(1, epochs // 10),
        seed=seed,
        train_subset=size,
        validation=_VALIDATION,
        model_overrides=model,
    )


def beyond_tuning_runs() -> List[Tuple[str, str, int, float, int]]:
    """(name, arm, size, lr, seed) of every tuning run of chapter 18, seeds outermost."""
    return [
        (f"beyond3-tuning/{arm}/n{size}/lr{lr:g}/seed{seed}", arm, size, lr, seed)
        for seed in BEYOND_TUNING_SEEDS
        for size in BEYOND["sizes"]
        for arm in BEYOND["arms"]
        for lr in BEYOND_LRS
    ]


def beyond_tuning(size: int) -> Optional[dict]:
    """Chapter 18's tuning at ``size`` images: per arm its mean validation accuracy at each rate
    (``scores``) and the rate chosen (``choice``); ``None`` while it is not saved."""
    try:
        return read_result(BEYOND_TUNING_FILE.format(size=size))
    except MissingResultError:
        return None


def thin_run(name: str) -> None:
    """Thin a complete protocol run's saved history in place (:func:`thin_history`): its claims
    read the heads before training and after the last epoch, never the epochs between."""
    thin_file(RUNS[name].path / HISTORY)


def thin_file(path: Path) -> None:
    if not path.is_file():
        return
    got = json.loads(path.read_text())
    if got.get("status") == "complete" and "attention_epochs" not in got:
        write_json(path, thin_history(got))


def beyond_run_name(arm: str, size: int, seed: int) -> str:
    return f"beyond3/{arm}/n{size}/seed{seed}"


def _make_beyond_tuning(size: int) -> None:
    """The rates chosen at ``size``; the tuning runs it reads are thinned (:func:`thin_history`):
    only their validation accuracy is ever read again."""
    groups: Dict[Tuple[str, int], Dict[float, List[float]]] = {}
    for name, arm, n, lr, _ in beyond_tuning_runs():
        if n != size:
            continue
        thin_run(name)
        h = load_run(name).history
        groups.setdefault((arm, size), {}).setdefault(lr, []).append(last3(h))
    out = {}
    for (arm, size), by_lr in groups.items():
        scores = [({"lr": lr}, sum(v) / len(v)) for lr, v in by_lr.items()]
        out[arm] = {
            "scores": {f"{lr:g}": sum(v) / len(v) for lr, v in by_lr.items()},
            "choice": choose(scores)["lr"],
        }
    write_result(BEYOND_TUNING_FILE.format(size=size), out)


def register_beyond() -> List[str]:
    """Register chapter 18's confirmatory runs of every (arm, size) whose tuning is saved."""
    tuned = {}
    for size in BEYOND["sizes"]:
        try:
            tuned[size] = read_result(BEYOND_TUNING_FILE.format(size=size))
        except MissingResultError:
            tuned[size] = {}
    new = []
    for seed in BEYOND["seeds"]:
        for size in BEYOND["sizes"]:
            for arm in BEYOND["arms"]:
                lr = tuned[size].get(arm, {}).get("choice")
                name = beyond_run_name(arm, size, seed)
                if lr is None or name in RUNS:
                    continue
                register_run(
                    name,
                    "gpsa",
                    "cpu",
                    f"chapter 18: {arm} on {size} images, seed {seed} (protocol)",
                    series=f"beyond3/{arm}/n{size}",
                    chapters=("18",),
                    **beyond_changes(arm, size, lr, seed),
                )
                new.append(name)
                if size < HELD_OUT[1]:
                    register_study(held_out_study(name))
    return new


#: The training images a 1,000-image run leaves out, on which it is also measured (BEYOND's
#: split): images 1,000-3,999 of the sample.
HELD_OUT = (1000, 4000)
HELD_OUT_FILE = "held-out.json"


def _make_held_out(name: str) -> None:
    from ..experiments.data import load_cifar10
    from ..experiments.studies import trained_run
    from ..experiments.train_step import encode_predictions, evaluate

    run = trained_run(name)
    data = load_cifar10(run.config.data, verbose=False)
    x, y = (
        data.x_train[HELD_OUT[0] : HELD_OUT[1]],
        data.y_train[HELD_OUT[0] : HELD_OUT[1]],
    )
    classes: list = []
    loss, acc = evaluate(run.model, x, y, 500, precision="fp32", predictions=classes)
    out = {
        "images": list(HELD_OUT),
        "epoch": len(run.history.epochs),
        "accuracy": acc,
        "loss": loss,
        "predictions": encode_predictions(classes),
    }
    write_json(run.run_dir / HELD_OUT_FILE, out)


def held_out_study(name: str) -> StudyEntry:
    """A 1,000-image run of chapter 18 measured on training images 1,000-3,999 (it never saw
    them): made from its weights when the run is made."""

    def read():
        path = RUNS[name].path / HELD_OUT_FILE
        command = f"python -m attnconv.regenerate --only {name}/held-out"
        if not path.is_file():
            raise MissingResultError(
                f"book/runs/{name}/{HELD_OUT_FILE} is missing; make it with: {command}"
            )
        got = json.loads(path.read_text())
        epochs = len(load_run(name).history.epochs)
        if got.get("epoch") != epochs or got.get("images") != list(HELD_OUT):
            raise StaleResultError(
                f"book/runs/{name}/{HELD_OUT_FILE} was made from other weights or images; "
                f"make it again with: {command}"
            )
        return got

    return StudyEntry(
        f"{name}/held-out",
        f"runs/{name}/{HELD_OUT_FILE}",
        (name,),
        lambda: _make_held_out(name),
        read,
        description="accuracy on the 3,000 training images the run left out",
        predictions=lambda: "predictions" in read(),
    )


def _study(name: str, file: str, runs: tuple, make, description: str) -> StudyEntry:
    def read():
        return read_result(file)

    return StudyEntry(
        name, f"results/{file}", runs, make, read, description=description
    )


def _register() -> None:
    for arm, runs in tuning_runs().items():
        for name, values in runs:
            register_run(
                name,
                ARMS[arm].model,
                "deep",
                f"tuning run of {arm} (validation only)",
                chapters=("appendix",),
                seed=int(name.rsplit("seed", 1)[1]),
                **arm_changes(ARMS[arm], values),
            )
    for name, arm, size, lr, seed in beyond_tuning_runs():
        register_run(
            name,
            "gpsa",
            "cpu",
            f"chapter 18 tuning: {arm}, {size} images, lr {lr:g} (validation only)",
            chapters=("appendix",),
            **beyond_changes(arm, size, lr, seed),
        )
    for arm, runs in tuning_runs().items():
        register_study(
            _study(
                f"results/confirm-tuning-{arm}",
                TUNING_FILE.format(arm=arm),
                tuple(n for n, _ in runs),
                lambda arm=arm: _make_tuning(arm),
                f"{arm}'s tuned values, chosen on validation (protocol TUNING)",
            )
        )
    for size in BEYOND["sizes"]:
        register_study(
            _study(
                f"results/beyond3-tuning-n{size}",
                BEYOND_TUNING_FILE.format(size=size),
                tuple(r[0] for r in beyond_tuning_runs() if r[2] == size),
                lambda size=size: _make_beyond_tuning(size),
                f"chapter 18's learning rate per arm at {size:,} images, on validation",
            )
        )
    register_confirmatory()
    if PATHS_RUN in RUNS:
        register_study(head_paths_study(PATHS_RUN))
    register_beyond()


_register()


def seen_histories(prefix: str) -> List[str]:
    """The registered runs under ``prefix`` whose history is complete (for progress reports)."""
    out = []
    for name, entry in RUNS.items():
        if name.startswith(prefix) and (entry.path / "history.json").is_file():
            if read_history(entry.path).complete:
                out.append(name)
    return out


# --------------------------------------------------------------------------- the queues
#: The order the six-layer arms are made in: every arm's tuning runs; then each arm's choice (the
#: learned arm's interim seeds at once: its five share claims need no other arm); every arm's
#: interim seeds; the remaining seeds.
_CONFIRM_ORDER = ("learned", "resnet18", "quadratic", "generalized")


def _tuning_made(runs) -> bool:
    return all(run_state(RUNS[n]) == "present" for n, _ in runs if n in RUNS)


def _confirm_group(tuned: Sequence[str], interim, rest) -> Iterator[str]:
    """The choices of the ``tuned`` arms (the learned arm's interim seeds at once), then their
    arms' interim seeds, then the remaining seeds (``quadratic`` brings ``quadratic-16heads``)."""
    for arm in tuned:
        yield f"results/confirm-tuning-{arm}"
        register_confirmatory()
        if arm == "learned":
            yield from _seed_steps(("learned",), interim)
    arms = [a for a in ARMS if (ARMS[a].tuned_as or a) in tuned]
    yield from _seed_steps([a for a in arms if a != "learned"], interim)
    yield from _seed_steps(arms, rest)


def _seed_steps(arms, seeds) -> List[str]:
    out = []
    for seed in seeds:
        for arm in arms:
            name = confirm_run_name(arm, seed)
            out.append(name)
            out += [f(name).name for f in _STUDIES.get(arm, ())]
    return out


def thin_made_run(name: str) -> None:
    """Thin a protocol run's history once it is complete (nothing when ``name`` is a study or a run
    still training): a six-layer history keeps a twentieth of its size, so that the 40 fresh
    seeds fit the repository (:func:`thin_history`)."""
    if name in RUNS and run_state(RUNS[name]) == "present":
        thin_run(name)
    run, _, study = name.rpartition("/")
    if study == "pruning" and run in RUNS:  # its retraining, written beside the run
        thin_file(Path(f"{RUNS[run].path}-pruned") / HISTORY)


def queue(part: str) -> Iterator[str]:
    """The names of the entries of ``part`` (``confirm`` or ``beyond``) in the order they are
    made; lazily, so that the runs registered once a tuning is saved follow it."""
    interim = CONFIRMATORY_SEEDS[:5]
    rest = CONFIRMATORY_SEEDS[5:]
    if part == "confirm":
        runs = tuning_runs()
        # every tuning run first, so that several processes share them
        for arm in _CONFIRM_ORDER:
            yield from (n for n, _ in runs[arm])
        # the arms whose tuning runs are all made go first, so that no process waits for
        # another's tuning run while an arm could already be made
        waiting = {a for a in _CONFIRM_ORDER if not _tuning_made(runs[a])}
        ready = [a for a in _CONFIRM_ORDER if a not in waiting]
        for group in (ready, [a for a in _CONFIRM_ORDER if a in waiting]):
            yield from _confirm_group(group, interim, rest)
    elif part == "beyond":
        yield "results/beyond3-linear-pixels"
        for size in BEYOND["sizes"]:
            yield from (r[0] for r in beyond_tuning_runs() if r[2] == size)
            yield f"results/beyond3-tuning-n{size}"
        register_beyond()
        for seed in BEYOND["seeds"]:
            for size in BEYOND["sizes"]:
                for arm in BEYOND["arms"]:
                    name = beyond_run_name(arm, size, seed)
                    yield name
                    if size < HELD_OUT[1]:
                        yield f"{name}/held-out"
    else:
        raise ValueError(f"part must be 'confirm' or 'beyond', got {part!r}")
