"""Existence claims over runs: the :class:`Setting` a claim names (model, depth, layers, epochs),
what one run shows about the claim (:class:`Observation`) and the verdict over the runs at the
setting (:func:`existence_verdict`): the runs there decide, the others are named, never counted.
The verdict words are those of :mod:`attnconv.experiments.verdicts`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

from .verdicts import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Evidence, k_of

__all__ = ["Setting", "Observation", "existence_verdict"]


@dataclass(frozen=True)
class Setting:
    """Where a claim, or a run, stands: ``model`` (encoding), ``depth`` (layers of the model),
    ``layers`` (the layers the claim is about, from 1), ``epochs`` (training length). ``None``: the
    claim names no such thing (any run matches)."""

    model: Optional[str] = None
    depth: Optional[int] = None
    layers: Optional[Tuple[int, ...]] = None
    epochs: Optional[int] = None

    def describe(self) -> str:
        """``quadratic, 6 layers, layer 4, 40 epochs`` (what is named)."""
        parts = []
        if self.model:
            parts.append(self.model)
        if self.depth:
            parts.append(f"{self.depth} layers")
        if self.layers:
            ls = self.layers
            contiguous = list(ls) == list(range(ls[0], ls[-1] + 1))
            parts.append(
                f"layer {ls[0]}"
                if len(ls) == 1
                else (
                    f"layers {ls[0]}-{ls[-1]}"
                    if contiguous
                    else "layers " + ", ".join(map(str, ls))
                )
            )
        if self.epochs:
            parts.append(f"{self.epochs} epochs")
        return ", ".join(parts) or "any run"


@dataclass(frozen=True)
class Observation:
    """What one run shows about an existence claim: ``run`` names it, ``measured`` says what was
    measured (numbers), ``shows`` whether it shows the claimed effect, ``at_setting`` whether the
    run is at the claim's setting (the caller decides); ``effect`` and ``noise`` (same unit):
    the size of the effect the run shows (or the smallest difference its test must resolve) and
    the noise it must exceed; ``noise=None``: an exact property of the trained parameters (a count
    of heads, a distance), with no sampling noise."""

    run: str
    measured: str
    shows: bool
    at_setting: bool = True
    effect: Optional[float] = None
    noise: Optional[float] = None

    def __post_init__(self):
        if self.noise is not None and self.effect is None:
            raise ValueError(
                f"{self.run}: a noise needs the effect it is compared with"
            )

    @property
    def beyond_noise(self) -> bool:
        """Shows it, and the effect exceeds the noise (always, for an exact property)."""
        return self.shows and (self.noise is None or abs(self.effect) > self.noise)

    def evidence(self) -> Evidence:
        """As an :class:`Evidence` row; a run off the claim's setting says so."""
        note = (
            "" if self.at_setting else " (not the claim's setting: listed, not counted)"
        )
        return Evidence(self.run, self.measured + note)


def existence_verdict(
    observations: Sequence[Observation], setting: Optional[Setting] = None
) -> Tuple[str, str]:
    """The verdict on an existence claim, and why, from one :class:`Observation` per run:

    * *reproduced at CPU scale* — a run at the claim's setting shows it beyond the noise;
    * *inconclusive* — runs at the setting show it only within the noise, or no run is at the
      setting (what runs at other settings show is named);
    * *not reproduced at CPU scale* — runs at the setting exist and none shows it.
    """
    if not observations:
        raise ValueError("a verdict needs the evidence of at least one run")
    where = f" ({setting.describe()})" if setting is not None else ""
    at = [o for o in observations if o.at_setting]
    off = [o for o in observations if not o.at_setting]
    off_shows = [o.run for o in off if o.beyond_noise]
    elsewhere = (
        f"; at other settings it is shown by {'; '.join(off_shows)}"
        if off_shows
        else ""
    )
    if not at:
        return INCONCLUSIVE, (
            f"no run at the claim's setting{where}"
            + (elsewhere or "; the runs at other settings do not show it either")
        )
    strong = [o.run for o in at if o.beyond_noise]
    if strong:
        exact = all(o.noise is None for o in at if o.beyond_noise)
        how = (
            "an exact property of the trained parameters"
            if exact
            else "beyond the test set's noise"
        )
        return REPRODUCED, (
            f"shown at the claim's setting{where} by {k_of(len(strong), len(at))} "
            f"({'; '.join(strong)}), {how}"
        )
    weak = [o for o in at if o.shows]
    if weak:
        sizes = "; ".join(
            f"{o.run}: {abs(o.effect):.3g} against a noise of {o.noise:.3g}"
            for o in weak
        )
        return INCONCLUSIVE, (
            f"shown at the claim's setting{where} only within the test set's noise "
            f"({sizes}), so the runs cannot tell" + elsewhere
        )
    nobody = (
        f"the one run at the claim's setting{where} does not show it"
        if len(at) == 1
        else f"none of the {len(at)} runs at the claim's setting{where} shows it"
    )
    return NOT_REPRODUCED, nobody + elsewhere
