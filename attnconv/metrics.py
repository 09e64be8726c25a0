"""Error measures used by the numeric checks."""
from __future__ import annotations

import torch

__all__ = ["max_relative_error"]


def max_relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """max |actual − expected| / max |expected|: the error measure of every equality check."""
    if actual.shape != expected.shape:
        raise ValueError(f"shapes differ: {tuple(actual.shape)} vs {tuple(expected.shape)}")
    actual, expected = actual.detach(), expected.detach()
    scale = expected.abs().max()
    if scale == 0:
        raise ValueError("expected is all zeros; the relative error is undefined")
    return float((actual - expected).abs().max() / scale)
