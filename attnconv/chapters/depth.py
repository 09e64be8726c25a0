"""Chapter 12b's module: the per-layer depth measures of the six-layer runs, layer and head removal,
and their figures. They live on the shared floor (:mod:`attnconv.chapters.shared.depth_measures`)
because the book's verdicts (:mod:`attnconv.chapters.paper_verdicts`) are computed from the same
measures; this module is the name the chapter reads them by."""

from .shared import depth_measures
from .shared.depth_measures import *  # noqa: F403

__all__ = list(depth_measures.__all__)
