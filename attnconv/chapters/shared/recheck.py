"""A saved run's first epoch trained again, as rows of a chapter's check table.

Each measured deviation (:func:`attnconv.experiments.runs.verify_first_epoch`) is asserted against
its tolerance and shown as a bound every CPU meets (:func:`~attnconv.experiments.runs.shown_bounds`),
since the deviation itself differs between kernel paths; where no such bound lies below the
tolerance, the row says that the value differs by CPU."""

from __future__ import annotations

from typing import Optional

from ...experiments.runs import shown_bounds, verify_first_epoch
from .checks import Checks, format_bound

__all__ = ["recheck", "RECHECK_ROWS"]

#: The rows, in order: the deviation's key, what the row says, and the scale it is shown in.
RECHECK_ROWS = (
    ("initial_heads", "initial heads, largest difference", 1),
    ("first_steps", "first step losses, relative difference", 1),
    ("epoch_loss", "epoch-1 training loss, relative difference", 1),
    ("epoch_accuracy", "epoch-1 training accuracy, difference in points", 100),
)


def recheck(checks: Checks, run, label: Optional[str] = None) -> None:
    """Train ``run``'s first epoch again and add one row per compared quantity to ``checks``
    (each asserts); a run too large for a chapter adds one row saying how it is re-checked."""
    label = label or run.config.model
    check = verify_first_epoch(run, verbose=False)
    if not check["checked"]:
        checks.holds(
            f"{label}: first epoch trained again",
            True,
            "not here: hours on a CPU",
            "on request (--check)",
        )
        return
    shown = shown_bounds(check, run.config.model)
    for key, what, scale in RECHECK_ROWS:
        value = check["deviations"][key]
        if value is None:  # nothing saved to compare (ResNet18 has no heads)
            continue
        bound = scale * check["bounds"][key]
        if shown[key] >= check["bounds"][key]:
            # no bound below the tolerance holds on every CPU (ResNet18's epoch-1 loss, a
            # chaotic model): the row says so instead of repeating the tolerance
            checks.holds(
                f"{label}: {what}",
                scale * value < bound,
                "within; differs by CPU",
                f"< {format_bound(bound)}",
            )
            continue
        checks.below(
            f"{label}: {what}",
            scale * value,
            bound,
            shown_below=scale * shown[key],
        )
