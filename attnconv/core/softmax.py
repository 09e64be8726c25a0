"""The softmax of eq. (4) with denormal probabilities flushed to zero (shared by dense and local attention)."""

from __future__ import annotations

from functools import lru_cache

import torch
import torch.nn.functional as F

__all__ = ["softmax_without_denormals"]


def softmax_without_denormals(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """softmax(scores) with every probability below the dtype's smallest normal number set to 0.

    A softmax of Gaussian scores (eqs. 9 and 16) produces many probabilities below e^-87, which are
    float32 *denormals*; CPU matrix products over denormals run about 10× slower. We set every
    probability below tiny/eps (about 1e-31 in float32) to 0, so that neither the probabilities nor
    their products with values of magnitude ≥ eps are denormal. This changes an output by at most
    T·tiny/eps relative (T keys), far below the dtype's precision.

    Only on the CPU: GPUs compute on denormals at full speed, and the flush is an extra read and
    write of the probabilities (about 2.5 of 40 ms a step for learned + content on an H100), so
    on CUDA this is ``torch.softmax``.
    """
    p = torch.softmax(scores, dim=dim)
    if p.device.type == "cuda":
        return p
    return F.threshold(
        p, _below_smallest_kept(p.dtype), 0.0
    )  # p < tiny/eps → 0, in one pass


@lru_cache(maxsize=None)
def _below_smallest_kept(dtype: torch.dtype) -> float:
    """The largest number below tiny/eps in ``dtype``: ``x > it`` is ``x >= tiny/eps``.

    tiny/eps is a power of two, and the number just below a power of two x is x·(1 − eps/2):
    exact in Python's float for every floating dtype, and computed without a tensor (so also
    under fake or meta tensors)."""
    info = torch.finfo(dtype)
    return info.tiny / info.eps * (1 - info.eps / 2)
