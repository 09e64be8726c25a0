"""Weightless self-attention Y = softmax(X Xᵀ/√C) X, and two claims often made about it.

Take eqs. (1)–(2) of the paper with W_qry = W_key = W_val = I (and the usual 1/√C scale): the
T tokens are the rows x_1, …, x_T ∈ R^C of X and

    S = X Xᵀ / √C   (scores, eq. 2),   P = softmax(S) row-wise,   Y = P X   (eq. 1).

Two claims about this layer are common in lecture material:

(a) "the largest weight in each row is on the diagonal": a_ii ≥ a_ij for every j;
(b) "a_ij ≤ max(a_ii, a_jj)" for every pair i, j.

Both can be asked of the scores a = S and of the probabilities a = P. What is true:

* (b) holds for the scores, always: x_i·x_j ≤ ‖x_i‖‖x_j‖ ≤ max(‖x_i‖², ‖x_j‖²)
  (Cauchy–Schwarz, then the geometric mean is at most the maximum);
* (a) fails already for the scores when a neighbour has a larger norm (x = (1, 2) in C = 1); and
  since softmax is increasing within a row, (a) for P is exactly (a) for S;
* (b) fails for the probabilities, because each row is normalised separately. It needs at least
  three tokens: with two, P_01 > P_11 would require 2 x_0·x_1 > ‖x_0‖² + ‖x_1‖², i.e.
  ‖x_0 − x_1‖² < 0. x = (1, 2, 3) in C = 1 breaks it.

This module computes the layer, checks the claims on given matrices, measures how often they fail
on random inputs and returns the small counterexamples.
"""

from __future__ import annotations

import math
from typing import Dict, List, NamedTuple, Optional, Tuple

import torch

from .shared.plotting import COLUMN_INCHES

__all__ = [
    "WeightlessAttention",
    "weightless_attention",
    "diagonal_is_row_max",
    "pairwise_bound_holds",
    "pairwise_bound_violations",
    "diagonal_counterexample",
    "pairwise_counterexample",
    "violation_rates",
    "violation_table",
    "violation_markdown",
    "plot_weightless_example",
    "plot_violation_rates",
]


class WeightlessAttention(NamedTuple):
    """The three stages of weightless self-attention: scores S, probabilities P, output Y."""

    scores: torch.Tensor
    probs: torch.Tensor
    output: torch.Tensor


def weightless_attention(x: torch.Tensor) -> WeightlessAttention:
    """Eqs. (1)–(2) with identity projections: S = X Xᵀ/√C, P = softmax(S) per row, Y = P X.

    ``x`` has shape ``(T, C)`` or ``(..., T, C)``: one token per row. Returns
    :class:`WeightlessAttention` with S and P of shape ``(..., T, T)`` and Y of shape ``(..., T, C)``.
    """
    if x.ndim < 2:
        raise ValueError(
            f"x must have shape (..., T, C) with one token per row, got {tuple(x.shape)}"
        )
    if x.shape[-1] < 1 or x.shape[-2] < 1:
        raise ValueError(
            f"x needs at least one token and one channel, got {tuple(x.shape)}"
        )
    if not x.is_floating_point():
        raise ValueError(f"x must be a floating-point tensor, got {x.dtype}")
    scores = x @ x.transpose(-1, -2) / math.sqrt(x.shape[-1])
    probs = torch.softmax(scores, dim=-1)
    return WeightlessAttention(scores, probs, probs @ x)


def _check_square(a: torch.Tensor) -> None:
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(
            f"expected a square matrix (..., T, T), got shape {tuple(a.shape)}"
        )


def diagonal_is_row_max(a: torch.Tensor) -> torch.Tensor:
    """Claim (a): is a_ii ≥ a_ij for every row i and column j?

    ``a`` is ``(T, T)`` or ``(..., T, T)``; returns a boolean tensor of shape ``(...)`` (one value per
    matrix). Ties count as the diagonal being a maximum.
    """
    _check_square(a)
    diag = a.diagonal(dim1=-2, dim2=-1)
    return (diag >= a.amax(dim=-1)).all(dim=-1)


def _pairwise_excess(a: torch.Tensor) -> torch.Tensor:
    diag = a.diagonal(dim1=-2, dim2=-1)
    bound = torch.maximum(diag.unsqueeze(-1), diag.unsqueeze(-2))  # max(a_ii, a_jj)
    return a - bound


def pairwise_bound_holds(a: torch.Tensor, tol: float = 0.0) -> torch.Tensor:
    """Claim (b): is a_ij ≤ max(a_ii, a_jj) + ``tol`` for every pair (i, j)?

    ``a`` is ``(T, T)`` or ``(..., T, T)``; returns a boolean tensor of shape ``(...)``.
    """
    _check_square(a)
    if tol < 0:
        raise ValueError("tol must be >= 0")
    return (_pairwise_excess(a) <= tol).all(dim=-1).all(dim=-1)


def pairwise_bound_violations(a: torch.Tensor) -> List[Tuple[int, int]]:
    """The pairs (i, j) of one ``(T, T)`` matrix with a_ij > max(a_ii, a_jj) (claim (b) broken)."""
    _check_square(a)
    if a.ndim != 2:
        raise ValueError(f"expected a single (T, T) matrix, got shape {tuple(a.shape)}")
    return [
        tuple(int(v) for v in ij) for ij in (_pairwise_excess(a) > 0).nonzero().tolist()
    ]


def diagonal_counterexample() -> torch.Tensor:
    """Two tokens in C = 1, x = (1, 2): S = [[1, 2], [2, 4]], so row 0 peaks off the diagonal
    (claim (a) fails for S, hence for P). Returned as a float64 ``(2, 1)`` tensor."""
    return torch.tensor([[1.0], [2.0]], dtype=torch.float64)


def pairwise_counterexample() -> torch.Tensor:
    """Three tokens in C = 1, x = (1, 2, 3): S = x xᵀ and P_01 = e²/(e + e² + e³) ≈ 0.245 exceeds
    both P_00 ≈ 0.090 and P_11 = e⁴/(e² + e⁴ + e⁶) ≈ 0.117 (claim (b) fails for P).
    Returned as a float64 ``(3, 1)`` tensor."""
    return torch.tensor([[1.0], [2.0], [3.0]], dtype=torch.float64)


def violation_rates(
    num_tokens: int,
    channels: int,
    draws: int,
    generator: torch.Generator,
    norm_spread: float = 0.0,
) -> Dict[str, float]:
    """Fraction of random inputs on which each claim fails somewhere, for S and for P.

    Draws ``draws`` inputs X ∈ R^{T×C} in float64 with rows x_i = g_i z_i, z_i ~ N(0, I_C) and
    g_i = exp(``norm_spread`` · N(0, 1)) (``norm_spread = 0``: plain Gaussian tokens; larger values
    spread the token norms, the adversarial case for (b) on the scores). All randomness comes from
    ``generator``, so the result is deterministic.

    Returns a dict with keys ``"(a) scores"``, ``"(a) probs"``, ``"(b) scores"``, ``"(b) probs"``:
    the fraction of draws whose S (or P) violates the claim for at least one row or pair.
    """
    if num_tokens < 1 or channels < 1 or draws < 1:
        raise ValueError("num_tokens, channels and draws must be >= 1")
    if norm_spread < 0:
        raise ValueError("norm_spread must be >= 0")
    z = torch.randn(
        draws, num_tokens, channels, generator=generator, dtype=torch.float64
    )
    g = torch.exp(
        norm_spread
        * torch.randn(draws, num_tokens, 1, generator=generator, dtype=torch.float64)
    )
    att = weightless_attention(g * z)
    rates = {}
    for name, a in (("scores", att.scores), ("probs", att.probs)):
        rates[f"(a) {name}"] = float((~diagonal_is_row_max(a)).double().mean())
        rates[f"(b) {name}"] = float((~pairwise_bound_holds(a)).double().mean())
    return {k: rates[k] for k in ("(a) scores", "(a) probs", "(b) scores", "(b) probs")}


def violation_table(
    settings: List[Tuple[int, int, float]], draws: int = 1000, seed: int = 0
) -> Dict[str, Dict[str, float]]:
    """:func:`violation_rates` for each setting ``(T, C, norm spread)`` of ``settings``, each
    from its own generator seeded with ``seed``: a dict from the setting's label ("T=16, C=8",
    with ", spread 1" when the norms are spread) to its rates."""
    table = {}
    for t, c, spread in settings:
        label = f"T={t}, C={c}" + (f", spread {spread:g}" if spread else "")
        table[label] = violation_rates(
            t, c, draws, torch.Generator().manual_seed(seed), norm_spread=spread
        )
    return table


def violation_markdown(table: Dict[str, Dict[str, float]]):
    """The rates of :func:`violation_table` as a Markdown table: one row per setting, one
    column per claim, fractions to three decimals."""
    from .shared.tables import markdown_table

    if not table:
        raise ValueError("table is empty")
    keys = list(next(iter(table.values())))
    return markdown_table(
        ["setting", *keys],
        [[label, *(f"{r[k]:.3f}" for k in keys)] for label, r in table.items()],
    )


def plot_weightless_example(x: torch.Tensor, ax=None, title: Optional[str] = None):
    """Heat map of P = softmax(X Xᵀ/√C) for a small input, every entry written in its cell."""
    import matplotlib.pyplot as plt

    p = weightless_attention(x).probs
    _check_square(p)
    if p.ndim != 2:
        raise ValueError("plot_weightless_example takes a single (T, C) input")
    if ax is None:
        _, ax = plt.subplots(figsize=(3.2, 3))
    m = p.detach().double().cpu().numpy()
    ax.imshow(m, cmap="Blues", vmin=0, vmax=1)
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            ax.text(
                j,
                i,
                f"{m[i, j]:.3f}",
                ha="center",
                va="center",
                color="white" if m[i, j] > 0.5 else "black",
            )
    ax.set_xticks(range(m.shape[1])), ax.set_yticks(range(m.shape[0]))
    ax.set_xlabel("key j"), ax.set_ylabel("query i")
    ax.set_title(title or "P = softmax(X Xᵀ/√C)", fontsize=9)
    return ax.figure


def plot_violation_rates(rates: Dict[str, Dict[str, float]], ax=None):
    """Grouped bar chart of :func:`violation_rates` results: one group per setting (the keys of
    ``rates``, with ", " shown as line breaks), one bar per claim."""
    import matplotlib.pyplot as plt
    import numpy as np

    if not rates:
        raise ValueError("rates is empty")
    settings = list(rates)
    claims = list(next(iter(rates.values())))
    if ax is None:
        _, ax = plt.subplots(figsize=(COLUMN_INCHES, 3))
    width = 0.8 / len(claims)
    pos = np.arange(len(settings))
    for c, claim in enumerate(claims):
        ax.bar(
            pos + c * width - 0.4 + width / 2,
            [rates[s][claim] for s in settings],
            width,
            label=claim,
        )
    ax.set_xticks(pos, [label.replace(", ", "\n") for label in settings], fontsize=8.5)
    ax.set_ylabel("fraction of inputs violating")
    ax.set_ylim(0, 1.25)
    ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
    ax.legend(fontsize=8.5, ncol=len(claims), loc="upper center")
    return ax.figure
