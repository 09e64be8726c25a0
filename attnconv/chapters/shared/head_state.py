"""One positional attention head as plain data (:class:`HeadState`: centre Δ, α or M = Σ^{-1/2},
query, grid, kernel size), its attention probabilities over the grid and the K×K kernel it
implements at its query (Lemma 2, App. A.1 eq. 16, Theorem 1). Shared by the head explorer
(chapter 6) and the kernel-free interactive figures (chapters 6 and 7b).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Tuple

import torch

from ...core.encodings import (
    GeneralizedQuadraticEncoding,
    QuadraticEncoding,
    RelativeEncoding,
)
from .gaussian_maps import head_attention_maps

__all__ = [
    "HeadState",
    "head_state_encoding",
    "head_state_probabilities",
    "head_state_kernel",
]


def _pair(value, name: str, cast):
    try:
        a, b = value
        return cast(a), cast(b)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair of numbers, got {value!r}") from None


@dataclass(frozen=True)
class HeadState:
    """Everything that defines one head in the explorer.

    ``delta`` Δ (row, column shift of the head centre), ``alpha`` α ≥ 0 of the quadratic encoding
    (eq. 9), ``inv_sqrt_sigma`` M = Σ^{-1/2} (a 2×2 nested tuple) to use the generalized encoding
    (eq. 16) instead (α is then ignored), the ``query`` pixel, the key ``grid`` (H, W) and the odd
    ``kernel_size`` K of the window whose weights are shown.
    """

    delta: Tuple[float, float] = (1.0, -1.0)
    alpha: float = 10.0
    inv_sqrt_sigma: Optional[Tuple[Tuple[float, float], Tuple[float, float]]] = None
    query: Tuple[int, int] = (4, 4)
    grid: Tuple[int, int] = (9, 9)
    kernel_size: int = 3

    def __post_init__(self):
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731  (frozen dataclass)
        set_("delta", _pair(self.delta, "delta", float))
        set_("grid", _pair(self.grid, "grid", int))
        set_("query", _pair(self.query, "query", int))
        if not all(math.isfinite(d) for d in self.delta):
            raise ValueError(f"delta must be finite, got {self.delta}")
        alpha = float(self.alpha)
        if not math.isfinite(alpha) or alpha < 0:
            raise ValueError(f"alpha must be a finite number >= 0, got {self.alpha}")
        set_("alpha", alpha)
        if min(self.grid) < 1:
            raise ValueError(f"grid must be positive, got {self.grid}")
        if not (
            0 <= self.query[0] < self.grid[0] and 0 <= self.query[1] < self.grid[1]
        ):
            raise ValueError(
                f"query {self.query} is outside the {self.grid[0]}×{self.grid[1]} grid"
            )
        k = self.kernel_size
        if isinstance(k, bool) or int(k) != k or k < 1 or k % 2 == 0:
            raise ValueError(f"kernel_size must be a positive odd integer, got {k}")
        set_("kernel_size", int(k))
        if self.inv_sqrt_sigma is not None:
            m = torch.as_tensor(self.inv_sqrt_sigma, dtype=torch.float64)
            if m.shape != (2, 2) or not bool(torch.isfinite(m).all()):
                raise ValueError(
                    f"inv_sqrt_sigma must be a finite 2×2 matrix, got {self.inv_sqrt_sigma!r}"
                )
            set_(
                "inv_sqrt_sigma",
                tuple(tuple(float(x) for x in row) for row in m.tolist()),
            )

    @property
    def generalized(self) -> bool:
        """True when the head uses the generalized quadratic encoding (eq. 16)."""
        return self.inv_sqrt_sigma is not None


def head_state_encoding(state: HeadState) -> RelativeEncoding:
    """The one-head float64 encoding of ``state``: quadratic (eq. 9) or generalized (eq. 16)."""
    centers = [list(state.delta)]
    if state.generalized:
        enc = GeneralizedQuadraticEncoding(
            1, centers=centers, inv_sqrt_sigma=[list(r) for r in state.inv_sqrt_sigma]
        )
        enc = enc.double()
        with torch.no_grad():  # set the float64 values exactly (the constructor rounds via the default dtype)
            enc.centers.copy_(torch.tensor(centers, dtype=torch.float64))
            enc.inv_sqrt_sigma.copy_(
                torch.tensor([state.inv_sqrt_sigma], dtype=torch.float64)
            )
        return enc
    enc = QuadraticEncoding(1, 2, centers=centers, alpha=state.alpha).double()
    with torch.no_grad():
        enc.centers.copy_(torch.tensor(centers, dtype=torch.float64))
        enc.alpha.fill_(state.alpha)
    return enc


def head_state_probabilities(state: HeadState) -> torch.Tensor:
    """The head's attention probabilities over the ``(H, W)`` key grid for the query pixel
    (softmax over all keys of the position-only score): an ``(H, W)`` float64 tensor summing to 1."""
    return head_attention_maps(head_state_encoding(state), state.grid, state.query)[0]


def head_state_kernel(
    state: HeadState, probabilities: Optional[torch.Tensor] = None
) -> torch.Tensor:
    """The K×K kernel the head implements at its query: entry (i, j) is the attention mass on the
    key at shift δ = (i − r, j − r), r = (K − 1)/2 (0 where that key is off the grid).

    This is the weight with which the head mixes the K×K neighbourhood, in the same row-major
    order as :func:`attnconv.kernel_shifts` and the taps of ``nn.Conv2d`` (cross-correlation).
    """
    p = (
        head_state_probabilities(state)
        if probabilities is None
        else torch.as_tensor(probabilities)
    )
    if tuple(p.shape) != state.grid:
        raise ValueError(
            f"probabilities have shape {tuple(p.shape)}, the state's grid is {state.grid}"
        )
    r = (state.kernel_size - 1) // 2
    padded = torch.nn.functional.pad(p[None, None], (r, r, r, r))[0, 0]
    q0, q1 = state.query
    return padded[q0 : q0 + 2 * r + 1, q1 : q1 + 2 * r + 1].clone()
