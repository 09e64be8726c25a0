"""Error measures used by the numeric checks."""

from __future__ import annotations

import torch

__all__ = ["max_relative_error", "relative_frobenius_error"]


def max_relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """max |actual − expected| / max |expected|: the error measure of every equality check."""
    if actual.shape != expected.shape:
        raise ValueError(
            f"shapes differ: {tuple(actual.shape)} vs {tuple(expected.shape)}"
        )
    actual, expected = actual.detach(), expected.detach()
    scale = expected.abs().max()
    if scale == 0:
        raise ValueError("expected is all zeros; the relative error is undefined")
    return float((actual - expected).abs().max() / scale)


def relative_frobenius_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """‖actual − expected‖_F / ‖expected‖_F: a root-mean-square error relative to the output's size.

    Unlike :func:`max_relative_error`, which at float precision jumps in units of the last bit of a
    single entry, it averages over every entry and varies smoothly."""
    if actual.shape != expected.shape:
        raise ValueError(
            f"shapes differ: {tuple(actual.shape)} vs {tuple(expected.shape)}"
        )
    actual, expected = actual.detach(), expected.detach()
    norm = torch.linalg.vector_norm(expected)
    if norm == 0:
        raise ValueError("expected is all zeros; the relative error is undefined")
    return float(torch.linalg.vector_norm(actual - expected) / norm)
