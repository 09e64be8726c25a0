"""Chapter 4's head of a converted convolution (:func:`attnconv.conv_to_mhsa`) at a series of
widths α: its attention probabilities over the padded key grid for one query, its off-target mass
(summed over the keys other than q + Δ) and Lemma 2's bound S(α)
(:func:`attnconv.off_target_mass_bound`).

Every frame is computed by the package's own layer (``conv_to_mhsa(conv, alpha=α)`` with
``return_attention=True``), in the convolution's dtype. They hold Figure 4.2, which computes the
same head in the page (:func:`attnconv.chapters.live_figures.lemma2_alpha_widget`), to the layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence, Tuple

import numpy as np
import torch

from attnconv import conv_to_mhsa, kernel_shifts, off_target_mass_bound

__all__ = [
    "SLIDER_ALPHAS",
    "AlphaFrame",
    "alpha_frames",
]

#: 17 widths, roughly log-spaced (1, 1.5, 2, 3, 5, 7 per decade) from 0.1 to 40, past
#: ``one_hot_alpha(torch.float64)`` ≈ 38.1.
SLIDER_ALPHAS = (
    0.1,
    0.15,
    0.2,
    0.3,
    0.5,
    0.7,
    1.0,
    1.5,
    2.0,
    3.0,
    5.0,
    7.0,
    10.0,
    15.0,
    20.0,
    30.0,
    40.0,
)


@dataclass(frozen=True)
class AlphaFrame:
    """One slider position: ``probs`` is the head's (H + 2p, W + 2p) attention map (float64 numpy),
    ``target`` the key q + Δ on that map, ``off_mass`` the sum of the probabilities of every other
    key, ``largest_off`` the largest of them and ``bound`` S(α)."""

    alpha: float
    probs: np.ndarray
    target: Tuple[int, int]
    off_mass: float
    largest_off: float
    bound: float


def alpha_frames(
    conv: torch.nn.Module,
    alphas: Sequence[float],
    shape: Tuple[int, int],
    query: Tuple[int, int],
    head: int,
) -> List[AlphaFrame]:
    """The attention map of head ``head`` for pixel ``query`` of a zero-padded ``shape`` image, for
    each α of ``alphas``, from ``conv_to_mhsa(conv, alpha=α)`` (position-only heads: the input is
    zeros). The key grid is padded by the kernel's radius, as in the layer."""
    h, w = shape
    if not (0 <= query[0] < h and 0 <= query[1] < w):
        raise ValueError(f"query {tuple(query)} is outside the {h}×{w} grid")
    k = conv.kernel_size[0]
    pad = (k - 1) // 2
    dl = kernel_shifts(k)[head].tolist()
    target = (query[0] + int(dl[0]) + pad, query[1] + int(dl[1]) + pad)
    dtype = conv.weight.dtype
    x = torch.zeros(1, conv.in_channels, h, w, dtype=dtype)
    frames = []
    for a in alphas:
        with torch.no_grad():
            _, probs = conv_to_mhsa(conv, alpha=float(a))(x, return_attention=True)
        row = probs[0, head, query[0] * w + query[1]].to(torch.float64).numpy()
        p = row.reshape(h + 2 * pad, w + 2 * pad).copy()
        off = np.ones_like(p, dtype=bool)
        off[target] = False
        frames.append(
            AlphaFrame(
                alpha=float(a),
                probs=p,
                target=target,
                off_mass=float(p[off].sum()),
                largest_off=float(p[off].max()),
                bound=off_target_mass_bound(float(a)),
            )
        )
    return frames
