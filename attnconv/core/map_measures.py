"""Measures of attention maps: how far a head looks, how wide, how much two heads share, and
whether a head's map is mirror-symmetric.

A map is one head's attention probabilities over the key tokens for one query token, an
``(H, W)`` array summing to 1; a layer's maps are ``(N_h, H, W)``. The paper reads its Figs. 3, 6
and 10 (ICLR Figs. 4, 5 and 14) with words — heads "focus on local patterns" in the first layers,
deeper heads position "the center of attention further from the queried pixel", heads "do not
overlap", learned heads show "horizontally-symmetric" patterns (Secs. 4.2 and 4.3). These
functions turn those words into numbers:

* :func:`mean_attention_distance` — E‖k − q‖ over the map, in tokens;
* :func:`attention_spread` — the map's standard deviation around its own mean, in tokens;
* :func:`shared_mass` — Σ_k min(p_i(k), p_j(k)) for every pair of heads: 1 for identical maps,
  0 for maps with disjoint support (1 − total-variation distance);
* :func:`mirror_symmetry` — 1 − TV(map, mirrored map) inside the largest window symmetric about
  the query: 1 for a map that is its own left-right (or up-down) mirror image;
* :func:`distance_to_uniform` — TV(map, uniform): 0 for a head that averages the whole grid.
"""

from __future__ import annotations

from typing import Sequence

import torch

__all__ = [
    "mean_attention_distance",
    "attention_spread",
    "shared_mass",
    "mirror_symmetry",
    "distance_to_uniform",
]


def _maps(maps) -> torch.Tensor:
    m = torch.as_tensor(maps, dtype=torch.float64)
    if m.ndim == 2:
        m = m.unsqueeze(0)
    if m.ndim != 3 or m.shape[0] < 1:
        raise ValueError(
            f"maps must be (N_h, H, W) or (H, W), got shape {tuple(m.shape)}"
        )
    if not bool(torch.isfinite(m).all()) or bool((m < 0).any()):
        raise ValueError("maps must be finite and non-negative")
    s = m.flatten(1).sum(1)
    if not bool(((s - 1).abs() < 1e-4).all()):
        raise ValueError("each map must sum to 1 (attention probabilities)")
    return m / s[:, None, None]


def _offsets(shape, query: Sequence[int]):
    h, w = shape
    q0, q1 = int(query[0]), int(query[1])
    if not (0 <= q0 < h and 0 <= q1 < w):
        raise ValueError(f"query {tuple(query)} is outside the {h}×{w} grid")
    rows = torch.arange(h, dtype=torch.float64)[:, None] - q0
    cols = torch.arange(w, dtype=torch.float64)[None, :] - q1
    return rows.expand(h, w), cols.expand(h, w)


def mean_attention_distance(maps, query: Sequence[int]) -> torch.Tensor:
    """E‖k − q‖ (Euclidean, token units) under each head's map ``(N_h, H, W)`` for the query token
    ``query`` = (row, column). Returns ``(N_h,)`` float64."""
    m = _maps(maps)
    r, c = _offsets(m.shape[1:], query)
    return (m * (r**2 + c**2).sqrt()).flatten(1).sum(1)


def attention_spread(maps) -> torch.Tensor:
    """sqrt(E‖k − E k‖²) under each head's map (token units): 0 for a one-hot head, about
    1/sqrt(α) for a quadratic head of width α away from the border. Returns ``(N_h,)``."""
    m = _maps(maps)
    r, c = _offsets(m.shape[1:], (0, 0))
    mr = (m * r).flatten(1).sum(1)
    mc = (m * c).flatten(1).sum(1)
    var = (
        (m * ((r - mr[:, None, None]) ** 2 + (c - mc[:, None, None]) ** 2))
        .flatten(1)
        .sum(1)
    )
    return var.clamp_min(0).sqrt()


def shared_mass(maps) -> torch.Tensor:
    """Σ_k min(p_i(k), p_j(k)) for every pair of heads: ``(N_h, N_h)``, 1 on the diagonal; 1 −
    the total-variation distance between the two maps."""
    m = _maps(maps).flatten(1)
    return torch.minimum(m[:, None, :], m[None, :, :]).sum(-1)


def mirror_symmetry(
    maps, query: Sequence[int], axis: str = "left-right"
) -> torch.Tensor:
    """How mirror-symmetric each head's map is about the query: 1 − TV(p, p mirrored) where both
    are restricted to the largest window symmetric about the query and renormalised there.
    ``axis="left-right"``: mirrored across the query's column (the paper's "horizontally
    symmetric"); ``"up-down"``: across its row ("vertical symmetry"). 1 for a symmetric map;
    a head with all its mass on one side scores 0. A head with no mass in the window scores 1
    (nothing there to be asymmetric). Returns ``(N_h,)``."""
    m = _maps(maps)
    h, w = m.shape[1:]
    q0, q1 = int(query[0]), int(query[1])
    if not (0 <= q0 < h and 0 <= q1 < w):
        raise ValueError(f"query {tuple(query)} is outside the {h}×{w} grid")
    if axis == "left-right":
        r = min(q1, w - 1 - q1)
        win = m[:, :, q1 - r : q1 + r + 1]
        mirrored = win.flip(2)
    elif axis == "up-down":
        r = min(q0, h - 1 - q0)
        win = m[:, q0 - r : q0 + r + 1, :]
        mirrored = win.flip(1)
    else:
        raise ValueError(f"axis must be 'left-right' or 'up-down', got {axis!r}")
    mass = win.flatten(1).sum(1)
    safe = mass.clamp_min(1e-300)[:, None, None]
    tv = 0.5 * ((win - mirrored) / safe).abs().flatten(1).sum(1)
    return torch.where(mass > 0, 1 - tv, torch.ones_like(tv))


def distance_to_uniform(maps) -> torch.Tensor:
    """Total-variation distance of each head's map from the uniform map: 0 for a head that
    averages the whole grid, close to 1 for a one-hot head on a large grid. Returns ``(N_h,)``."""
    m = _maps(maps).flatten(1)
    return 0.5 * (m - 1.0 / m.shape[1]).abs().sum(1)
