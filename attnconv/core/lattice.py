"""Distances of attention heads to the lattice of a K×K kernel (Lemma 1's head centres).

Lemma 1 turns N_h = K² heads into a K×K convolution when head h attends one-hot to the shift
Δ_h and the centres {Δ_h} are the K² shifts {−⌊K/2⌋, …, ⌊K/2⌋}². These functions measure how
far a set of heads is from that arrangement: per-head distance to the nearest lattice point,
how many lattice points have a head, the probability mass inside the K×K window, and the shift
of each head's most probable key. The pilots appendix (C.5, how convolutional) and the training
chapters use them.
"""

from __future__ import annotations

from typing import List, Sequence

import torch

from .encodings import kernel_shifts

__all__ = [
    "lattice_distance",
    "integer_shift_distance",
    "lattice_coverage",
    "covered_lattice_points",
    "neighbourhood_mass",
    "peak_shifts",
    "peak_probability",
]


def _centers(centers) -> torch.Tensor:
    c = torch.as_tensor(centers, dtype=torch.float64)
    if c.ndim != 2 or c.shape[1] != 2 or c.shape[0] < 1:
        raise ValueError(
            f"centers must be a non-empty (N_h, 2) array, got shape {tuple(c.shape)}"
        )
    if not bool(torch.isfinite(c).all()):
        raise ValueError("centers must be finite")
    return c


def _lattice(kernel_size: int) -> torch.Tensor:
    return kernel_shifts(kernel_size, 2).to(
        torch.float64
    )  # validates kernel_size (odd, >= 1)


def lattice_distance(centers, kernel_size: int = 3) -> torch.Tensor:
    """Euclidean distance (token units) of each head centre Δ_h ``(N_h, 2)`` to the nearest point
    of the K×K lattice of kernel shifts (Lemma 1's head centres). Returns ``(N_h,)`` float64."""
    c = _centers(centers)
    lat = _lattice(kernel_size)
    return torch.cdist(c, lat).min(dim=1).values


def integer_shift_distance(centers) -> torch.Tensor:
    """Euclidean distance of each head centre Δ_h ``(N_h, 2)`` to the nearest integer shift, any
    shift of Z² and not only the K×K lattice: Lemma 1 holds for any set of shifts, so a head one-hot
    at (3, −2) is as convolution-like as one at (1, 0), with a larger kernel. Returns ``(N_h,)``."""
    c = _centers(centers)
    return (c - torch.round(c)).norm(dim=1)


def lattice_coverage(centers, kernel_size: int = 3, radius: float = 0.5) -> int:
    """Number of the K² lattice points that have at least one head centre within distance
    ``radius`` (strictly less). With ``radius`` ≤ 0.5 no two lattice points share a head, so K²
    means one head per kernel tap, as in Lemma 1."""
    if not radius > 0:
        raise ValueError(f"radius must be > 0, got {radius}")
    c = _centers(centers)
    lat = _lattice(kernel_size)
    return int((torch.cdist(lat, c) < radius).any(dim=1).sum())


def covered_lattice_points(
    centers, kernel_size: int = 3, radius: float = 0.5
) -> List[tuple]:
    """The lattice points (row, column) counted by :func:`lattice_coverage`: those with at least
    one head centre within ``radius`` (strictly less), in row-major order."""
    if not radius > 0:
        raise ValueError(f"radius must be > 0, got {radius}")
    c = _centers(centers)
    lat = _lattice(kernel_size)
    hit = (torch.cdist(lat, c) < radius).any(dim=1)
    return [tuple(int(v) for v in p) for p, h in zip(lat.tolist(), hit.tolist()) if h]


def neighbourhood_mass(
    maps, query: Sequence[int], kernel_size: int = 3
) -> torch.Tensor:
    """Per head, the attention probability inside the K×K window centred on the query token (cut
    at the image border): ``maps`` are the heads' probabilities over the key grid ``(N_h, H, W)``
    for that query. Returns ``(N_h,)`` float64."""
    m = torch.as_tensor(maps, dtype=torch.float64)
    if m.ndim != 3:
        raise ValueError(f"maps must be (N_h, H, W), got shape {tuple(m.shape)}")
    if kernel_size < 1 or kernel_size % 2 == 0:
        raise ValueError(
            f"kernel_size must be a positive odd integer, got {kernel_size}"
        )
    _, h, w = m.shape
    q0, q1 = (int(c) for c in query)
    if not (0 <= q0 < h and 0 <= q1 < w):
        raise ValueError(f"query {tuple(query)} is outside the {h}×{w} grid")
    r = kernel_size // 2
    return m[:, max(0, q0 - r) : q0 + r + 1, max(0, q1 - r) : q1 + r + 1].sum(
        dim=(1, 2)
    )


def peak_shifts(maps, query: Sequence[int]) -> torch.Tensor:
    """Per head, the shift δ = k − q (row, column) of its most probable key (the first one in
    row-major order on ties): ``(N_h, 2)`` int64, for maps ``(N_h, H, W)`` of one query."""
    m = torch.as_tensor(maps, dtype=torch.float64)
    if m.ndim != 3:
        raise ValueError(f"maps must be (N_h, H, W), got shape {tuple(m.shape)}")
    _, h, w = m.shape
    q0, q1 = (int(c) for c in query)
    if not (0 <= q0 < h and 0 <= q1 < w):
        raise ValueError(f"query {tuple(query)} is outside the {h}×{w} grid")
    flat = m.reshape(m.shape[0], -1).argmax(1)
    return torch.stack([flat // w - q0, flat % w - q1], dim=1)


def peak_probability(maps) -> torch.Tensor:
    """Per head, its largest attention probability over the keys (maps ``(N_h, H, W)`` of one
    query): 1 for a head one-hot on a single key (Lemma 1), 1/T for a uniform one. ``(N_h,)``."""
    m = torch.as_tensor(maps, dtype=torch.float64)
    if m.ndim != 3:
        raise ValueError(f"maps must be (N_h, H, W), got shape {tuple(m.shape)}")
    return m.reshape(m.shape[0], -1).max(1).values
