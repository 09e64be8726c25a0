"""The registered follow-up's runs and studies (:mod:`~attnconv.evidence.followup`), registered
like every run of the book and made by ``python -m attnconv.regenerate --protocol followup``:

* ``followup-tuning/<arm>/<values>/seed902`` — the tuning runs on the follow-up's one grid, and
  ``results/followup-tuning-<arm>`` — each arm's choice (``book/results/followup/tuning-<arm>.json``);
* ``followup/<arm>/seed<k>`` — the runs at the follow-up's fresh seeds, registered once their
  arm's tuning is saved; the generalized arm's pruning study retrains the unpruned model too
  (the control).

Every value of a run comes from the follow-up's protocol; nothing here chooses one.
"""

from __future__ import annotations

from functools import partial
from typing import Dict, Iterator, List, Optional, Tuple

from ..experiments.registry import register_run
from ..experiments.store import MissingResultError
from ..experiments.studies import StudyEntry, pruning_entry, register_study
from .followup import ARMS, PAPER_PRUNED, SEEDS, TUNING_SEEDS
from .runs import (
    arm_changes,
    grid_values,
    read_result,
    register_arm_seeds,
    tuning_choice,
    values_tag,
    write_result,
)

__all__ = [
    "FOLLOWUP_TUNING_FILE",
    "followup_tuning_runs",
    "followup_tuning",
    "followup_tuned_values",
    "followup_run_name",
    "register_followup",
    "followup_queue",
]

#: book/results/followup/tuning-<arm>.json: one arm's tuning runs and its choice.
FOLLOWUP_TUNING_FILE = "followup/tuning-{arm}.json"
#: The generalized arm's pruning study: no random order; the rule's count, the paper's 15 pruned
#: heads (the follow-up's amendment) and the control.
_PRUNING = (0, ("control", PAPER_PRUNED), None)
#: The order the arms are tuned and made in: the cheapest first.
_ORDER = ("resnet18-matched", "learned", "generalized")


def followup_tuning_runs() -> Dict[str, List[Tuple[str, dict]]]:
    """Arm → its tuning runs as (registry name, tuned values)."""
    return {
        key: [
            (f"followup-tuning/{key}/{values_tag(v)}/seed{seed}", v)
            for v in grid_values(ARMS[key])
            for seed in TUNING_SEEDS
        ]
        for key in _ORDER
    }


def _make_tuning(arm: str) -> None:
    choice = tuning_choice(arm, followup_tuning_runs()[arm])
    write_result(FOLLOWUP_TUNING_FILE.format(arm=arm), choice)


def followup_tuning(arm: str) -> dict:
    """``arm``'s saved follow-up tuning (raises :class:`MissingResultError` while not made)."""
    return read_result(FOLLOWUP_TUNING_FILE.format(arm=arm))


def followup_tuned_values(arm: str) -> Optional[dict]:
    """The values chosen for ``arm`` on the follow-up's grid, or ``None`` while not saved."""
    try:
        chosen = followup_tuning(arm)["choice"]
    except MissingResultError:
        return None
    return {k: tuple(v) if isinstance(v, list) else v for k, v in chosen.items()}


def followup_run_name(arm: str, seed: int) -> str:
    return f"followup/{arm}/seed{seed}"


def _studies(arm: str, name: str) -> List[StudyEntry]:
    return [pruning_entry(name, _PRUNING)] if arm == "generalized" else []


def register_followup() -> List[str]:
    """Register the follow-up's runs (and studies) of every arm whose tuning is saved; returns
    the names newly registered (idempotent)."""
    new = []
    for key in _ORDER:
        values = followup_tuned_values(key)
        if values is not None:
            new += register_arm_seeds(
                ARMS[key],
                values,
                SEEDS,
                name_of=followup_run_name,
                purpose="follow-up seed {seed} of {arm} (registered follow-up)",
                chapters=("17", "appendix"),
                studies=partial(_studies, key),
            )
    return new


def _register() -> None:
    for key, runs in followup_tuning_runs().items():
        for name, values in runs:
            register_run(
                name,
                ARMS[key].model,
                "deep",
                f"follow-up tuning run of {key} (validation only)",
                chapters=("appendix",),
                seed=int(name.rsplit("seed", 1)[1]),
                **arm_changes(ARMS[key], values),
            )
        file = FOLLOWUP_TUNING_FILE.format(arm=key)
        register_study(
            StudyEntry(
                f"results/followup-tuning-{key}",
                f"results/{file}",
                tuple(n for n, _ in runs),
                lambda key=key: _make_tuning(key),
                lambda file=file: read_result(file),
                description=f"{key}'s learning rate on the follow-up's grid, on validation",
            )
        )
    register_followup()


_register()


def followup_queue() -> Iterator[str]:
    """The follow-up's entries in the order they are made (lazily: the runs registered once a
    tuning is saved follow it): every tuning run, then per arm its choice, then the seeds."""
    runs = followup_tuning_runs()
    for key in _ORDER:
        yield from (n for n, _ in runs[key])
    for key in _ORDER:
        yield f"results/followup-tuning-{key}"
        register_followup()
    for seed in SEEDS:
        for key in _ORDER:
            name = followup_run_name(key, seed)
            yield name
            yield from (s.name for s in _studies(key, name))
