"""Token grids and relative shifts δ = k − q between query and key pixels.

The paper (Sec. 2.2) writes a pixel of a W×H image as p = (i, j). For the shift between a key k
and a query q the book uses δ = k − q, as the paper's Sec. 4.3 and App. A.1 do (its Sec. 2.3 and
the proof of Lemma 2 write δ := q − k). Everything positional in :mod:`attnconv` is a function of δ, so this
module builds the table of δ for every (query, key) pair once per grid shape.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence, Tuple

import torch

__all__ = ["grid_coordinates", "relative_shifts"]


def grid_coordinates(shape: Sequence[int], padding: int = 0) -> torch.Tensor:
    """Integer coordinates of every cell of a grid, row-major, as a ``(T, d)`` tensor.

    ``shape`` is ``(H, W)`` (or ``(L,)`` in 1D). With ``padding`` p the grid is enlarged by p cells
    on every side and the extra cells get coordinates −p … −1 and H … H+p−1, so a cell keeps the
    coordinate it had in the unpadded image.
    """
    shape = tuple(int(s) for s in shape)
    if not shape or any(s < 1 for s in shape):
        raise ValueError(f"grid shape must be positive, got {shape}")
    if padding < 0:
        raise ValueError(f"padding must be >= 0, got {padding}")
    axes = [torch.arange(-padding, s + padding) for s in shape]
    mesh = torch.meshgrid(*axes, indexing="ij")
    return torch.stack([m.reshape(-1) for m in mesh], dim=-1)


@lru_cache(maxsize=64)
def _relative_shifts_cpu(shape: Tuple[int, ...], padding: int) -> torch.Tensor:
    # Built on the CPU whatever default device is in force: under ``with torch.device("meta")``
    # (FLOP counting) a meta tensor would otherwise stay in the cache and break every later model.
    with torch.device("cpu"):
        queries = grid_coordinates(shape, 0)
        keys = grid_coordinates(shape, padding)
        return keys[None, :, :] - queries[:, None, :]


def relative_shifts(
    shape: Sequence[int], padding: int = 0, device=None
) -> torch.Tensor:
    """δ = k − q for every query pixel q of a grid and every key pixel k of the (padded) grid.

    Returns a ``(T_q, T_k, d)`` integer tensor, T_q = H·W and T_k = (H+2p)·(W+2p); δ is in (row,
    column) order as the pixels of the paper's Sec. 2.2. The table is cached per shape and padding.
    """
    table = _relative_shifts_cpu(tuple(int(s) for s in shape), int(padding))
    return table if device is None else table.to(device)
