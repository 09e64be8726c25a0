"""Which heads the pruning rule of App. A.1 prunes at each condition-number threshold of a series
(chapter 8). Every frame applies the rule itself (:func:`attnconv.experiments.pruning.is_degenerate`)
to the rows of :func:`attnconv.experiments.studies_pruning.head_table`, computed from a saved
history: nothing is trained and no weights are read. Figure 8.3 applies the same rule in the page
(:func:`attnconv.chapters.live_figures.pruning_threshold_widget`); the chapter's checks hold these
frames to the paper's and the authors' rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

from ..experiments.paper_numbers import PAPER_MAX_EIGENVALUE_THRESHOLD
from ..experiments.pruning import is_degenerate

__all__ = [
    "SLIDER_EXPONENTS",
    "ThresholdFrame",
    "threshold_frames",
]

#: The frames' condition-number thresholds, as powers of ten: 10¹ to 10¹⁴, one a decade. The
#: paper's 10⁵ and the authors' code's 10³ are among them.
SLIDER_EXPONENTS = tuple(range(1, 15))


@dataclass(frozen=True)
class ThresholdFrame:
    """One slider position: the condition-number ``threshold`` (10^``exponent``), the heads the
    rule prunes (``{layer: [heads]}``, 0-based, only layers with some) and the heads each layer
    keeps (``kept[layer]``)."""

    exponent: int
    threshold: float
    pruned: Dict[int, List[int]]
    kept: Tuple[int, ...]


def threshold_frames(
    rows: Sequence[dict],
    exponents: Sequence[int] = SLIDER_EXPONENTS,
    max_eigenvalue_threshold: float = PAPER_MAX_EIGENVALUE_THRESHOLD,
) -> List[ThresholdFrame]:
    """The rule at each condition threshold 10^e of ``exponents``, with the largest-eigenvalue
    threshold held at ``max_eigenvalue_threshold``, on ``rows`` (one per head: ``layer``,
    ``head``, ``lambda_max``, ``condition``)."""
    layers = sorted({r["layer"] for r in rows})
    frames = []
    for e in exponents:
        t = 10.0 ** int(e)
        pruned: Dict[int, List[int]] = {}
        for r in rows:
            if is_degenerate(
                r["lambda_max"], r["condition"], max_eigenvalue_threshold, t
            ):
                pruned.setdefault(r["layer"], []).append(r["head"])
        pruned = {k: sorted(v) for k, v in sorted(pruned.items())}
        kept = tuple(
            sum(r["layer"] == li for r in rows) - len(pruned.get(li, []))
            for li in layers
        )
        frames.append(ThresholdFrame(int(e), t, pruned, kept))
    return frames
