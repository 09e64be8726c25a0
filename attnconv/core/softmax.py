"""The softmax of eq. (4) with denormal probabilities flushed to zero (shared by dense and local attention)."""
from __future__ import annotations

import torch

__all__ = ["softmax_without_denormals"]


def softmax_without_denormals(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """softmax(scores) with every probability below the dtype's smallest normal number set to 0.

    A softmax of Gaussian scores (eqs. 9 and 16) produces many probabilities below e^-87, which are
    float32 *denormals*; CPU matrix products over denormals run about 10× slower. We set every
    probability below tiny/eps (about 1e-31 in float32) to 0, so that neither the probabilities nor
    their products with values of magnitude ≥ eps are denormal. This changes an output by at most
    T·tiny/eps relative (T keys), far below the dtype's precision.
    """
    p = torch.softmax(scores, dim=dim)
    info = torch.finfo(p.dtype)
    return p.masked_fill(p < info.tiny / info.eps, 0.0)
