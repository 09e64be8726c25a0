"""Attention maps of positional heads, and their probability-mass regions.

* :func:`head_attention_maps` — each head's softmax over the keys of its position-only score
  (:meth:`~attnconv.core.encodings.RelativeEncoding.position_scores`, eqs. 9 and 16) for one query;
* :func:`gaussian_heads_of_record` and :func:`gaussian_head_maps` — the same maps for the Gaussian
  heads a training history saved (centres Δ_h and Σ_h⁻¹), through the same encoding;
* :func:`probability_mass_levels` and :func:`draw_mass_contours` — the 50 % and 90 %
  probability-mass regions of a map, as in the paper's Fig. 3; :func:`mass_ellipse` and
  :func:`draw_mass_ellipses` — the same regions of the continuous Gaussian.
"""

from __future__ import annotations

import math
from typing import Mapping, Optional, Sequence, Tuple

import numpy as np
import torch

from ...core.encodings import GeneralizedQuadraticEncoding, RelativeEncoding

__all__ = [
    "query_shifts",
    "head_attention_maps",
    "gaussian_heads_of_record",
    "gaussian_head_maps",
    "probability_mass_levels",
    "draw_mass_contours",
    "mass_ellipse",
    "draw_mass_ellipses",
]


def query_shifts(grid_shape: Sequence[int], query: Sequence[int]) -> torch.Tensor:
    """δ = k − q for every key pixel k of an ``(H, W)`` grid and one query pixel q: ``(H, W, 2)``."""
    h, w = (int(s) for s in grid_shape)
    if h < 1 or w < 1:
        raise ValueError(f"grid shape must be positive, got {tuple(grid_shape)}")
    q0, q1 = (int(c) for c in query)
    if not (0 <= q0 < h and 0 <= q1 < w):
        raise ValueError(f"query {tuple(query)} is outside the {h}×{w} grid")
    rows = torch.arange(h)[:, None].expand(h, w) - q0
    cols = torch.arange(w)[None, :].expand(h, w) - q1
    return torch.stack([rows, cols], dim=-1)


def head_attention_maps(
    encoding: RelativeEncoding, grid_shape: Sequence[int], query: Sequence[int]
) -> torch.Tensor:
    """Each head's attention probabilities over an ``(H, W)`` key grid for one query pixel:
    softmax over the keys of the position-only score (eqs. 9 and 16). Returns ``(N_h, H, W)``."""
    delta = query_shifts(grid_shape, query)
    with torch.no_grad():
        scores = encoding.position_scores(delta)  # (N_h, H, W)
    n = scores.shape[0]
    return torch.softmax(scores.reshape(n, -1), dim=-1).reshape(scores.shape)


def gaussian_heads_of_record(record: Mapping) -> GeneralizedQuadraticEncoding:
    """The Gaussian heads of one layer record of a history (centres Δ_h and Σ_h⁻¹, as
    :class:`~attnconv.experiments.store.HeadRecord` saves them) as the float64 encoding of eq. (16):
    M_h = the saved ``inv_sqrt_sigma`` (generalized encoding), else the symmetric square root of
    Σ_h⁻¹ (quadratic encoding, Σ⁻¹ = 2α·I of eq. 9, so M = √(2α)·I)."""
    if "centers" not in record or "inverse_covariance" not in record:
        raise ValueError(
            "the record has no Gaussian heads (needs 'centers' and 'inverse_covariance')"
        )
    centers = torch.as_tensor(record["centers"], dtype=torch.float64).reshape(-1, 2)
    if "inv_sqrt_sigma" in record:
        m = torch.as_tensor(record["inv_sqrt_sigma"], dtype=torch.float64).reshape(
            -1, 2, 2
        )
    else:
        a = torch.as_tensor(record["inverse_covariance"], dtype=torch.float64).reshape(
            -1, 2, 2
        )
        eig, vec = torch.linalg.eigh(a)
        m = vec @ torch.diag_embed(eig.clamp_min(0).sqrt()) @ vec.transpose(-1, -2)
    encoding = GeneralizedQuadraticEncoding(len(centers)).double()
    with torch.no_grad():  # the saved float64 values exactly (the constructor goes through the default dtype)
        encoding.centers.copy_(centers)
        encoding.inv_sqrt_sigma.copy_(m)
    return encoding


def gaussian_head_maps(
    record: Mapping, grid: Sequence[int], query: Sequence[int]
) -> torch.Tensor:
    """Attention probabilities of the Gaussian heads of one layer record for one query token:
    :func:`head_attention_maps` of :func:`gaussian_heads_of_record`, i.e. the softmax over the keys
    of −½ (δ − Δ_h)ᵀ Σ_h⁻¹ (δ − Δ_h) (eq. 9 with Σ⁻¹ = 2α·I, eq. 16 in general). Returns
    ``(N_h, H, W)`` in float64."""
    return head_attention_maps(gaussian_heads_of_record(record), grid, query)


def probability_mass_levels(probs, masses) -> torch.Tensor:
    """Thresholds t_m such that the superlevel set {p ≥ t_m} is the smallest one holding mass ≥ m.

    ``probs`` are non-negative weights (any shape, e.g. an attention map); masses are fractions of
    their total in (0, 1]. For each m the cells are taken from the most to the least probable
    until their cumulative mass reaches m; t_m is the probability of the last cell taken. Ties at
    t_m are all in {p ≥ t_m}, which may then hold a little more than m. Used for the 50 % and 90 %
    contours of the paper's Fig. 3. Returns a tensor with the shape of ``masses``.
    """
    p = torch.as_tensor(probs, dtype=torch.float64).reshape(-1)
    m = torch.as_tensor(masses, dtype=torch.float64)
    if p.numel() == 0:
        raise ValueError("probs is empty")
    if bool(torch.isnan(p).any()) or bool((p < 0).any()):
        raise ValueError("probs must be non-negative")
    total = p.sum()
    if not bool(total > 0) or not bool(torch.isfinite(total)):
        raise ValueError("probs must have a positive, finite total")
    if bool(torch.isnan(m).any()) or bool(((m <= 0) | (m > 1)).any()):
        raise ValueError("masses must lie in (0, 1]")
    sorted_p, _ = torch.sort(p, descending=True)
    cum = torch.cumsum(sorted_p, 0) / total
    # index of the first cell whose cumulative mass reaches m (guard rounding at m = 1)
    idx = torch.searchsorted(
        cum, m.reshape(-1) * (1 - 4 * torch.finfo(torch.float64).eps)
    )
    idx = idx.clamp_max(p.numel() - 1)
    return sorted_p[idx].reshape(m.shape)


def _superlevel_outline(mask: np.ndarray) -> list:
    """Cell-edge segments ((x0, y0), (x1, y1)) bounding the True cells of a 2D mask (imshow coords)."""
    segs = []
    h, w = mask.shape
    for i in range(h):
        for j in range(w):
            if not mask[i, j]:
                continue
            if i == 0 or not mask[i - 1, j]:
                segs.append(((j - 0.5, i - 0.5), (j + 0.5, i - 0.5)))
            if i == h - 1 or not mask[i + 1, j]:
                segs.append(((j - 0.5, i + 0.5), (j + 0.5, i + 0.5)))
            if j == 0 or not mask[i, j - 1]:
                segs.append(((j - 0.5, i - 0.5), (j - 0.5, i + 0.5)))
            if j == w - 1 or not mask[i, j + 1]:
                segs.append(((j + 0.5, i - 0.5), (j + 0.5, i + 0.5)))
    return segs


def draw_mass_contours(
    ax,
    probs,
    masses: Sequence[float] = (0.5, 0.9),
    color: str = "black",
    linestyles: Sequence[str] = ("solid", "dashed"),
    linewidth: float = 1.2,
) -> list:
    """Outline, on an ``imshow`` of the 2D map ``probs``, the smallest superlevel sets holding each
    mass (solid 50 %, dashed 90 % by default, as the paper's Fig. 3). The outline follows cell
    edges, so it encloses exactly the cells counted by :func:`probability_mass_levels`.
    Returns the list of added :class:`matplotlib.collections.LineCollection` (one per mass)."""
    from matplotlib.collections import LineCollection

    p = torch.as_tensor(probs, dtype=torch.float64)
    if p.ndim != 2:
        raise ValueError(f"probs must be a 2D map, got shape {tuple(p.shape)}")
    masses = list(masses)
    if len(linestyles) < len(masses):
        raise ValueError("give one line style per mass")
    levels = probability_mass_levels(p, masses)
    arr = p.numpy()
    out = []
    for i, (t, ls) in enumerate(zip(levels.tolist(), linestyles)):
        # earlier masses on top, so a solid 50 % outline stays visible where it meets the 90 % one
        lc = LineCollection(
            _superlevel_outline(arr >= t),
            colors=color,
            linestyles=ls,
            linewidths=linewidth,
            zorder=3 + len(masses) - i,
        )
        ax.add_collection(lc)
        out.append(lc)
    return out


def mass_ellipse(inverse_covariance, mass: float) -> Tuple[float, float, float]:
    """The ellipse around a 2-D Gaussian's centre that holds ``mass`` of its probability:
    {x : xᵀ Σ⁻¹ x ≤ r²} with r² = −2 ln(1 − mass) (the squared Mahalanobis radius of a 2-D
    Gaussian is χ²₂-distributed, P(≤ r²) = 1 − e^{−r²/2}). Returns ``(width, height, angle)``
    in the units of Δ, as :class:`matplotlib.patches.Ellipse` takes them: full axis lengths
    along the eigenvectors of Σ⁻¹ (``angle``, degrees, of the first axis from the first
    coordinate). ``inf`` axes for a degenerate head (an eigenvalue of Σ⁻¹ that is 0)."""
    if not 0.0 < mass < 1.0:
        raise ValueError(f"mass must lie in (0, 1), got {mass}")
    a = np.asarray(inverse_covariance, dtype=np.float64).reshape(2, 2)
    eig, vec = np.linalg.eigh(0.5 * (a + a.T))
    r2 = -2.0 * math.log1p(-mass)
    with np.errstate(divide="ignore"):
        half = np.where(eig > 0, np.sqrt(r2 / np.maximum(eig, 1e-300)), np.inf)
    angle = math.degrees(math.atan2(vec[1, 0], vec[0, 0]))
    return float(2 * half[0]), float(2 * half[1]), angle


def draw_mass_ellipses(
    ax,
    center,
    inverse_covariance,
    origin: Sequence[float] = (0.0, 0.0),
    masses: Sequence[float] = (0.5, 0.9),
    color: str = "black",
    linestyles: Sequence[str] = ("solid", "dashed"),
    linewidth: float = 1.2,
    max_size: Optional[float] = None,
    clip_size: Optional[float] = None,
) -> list:
    """Draw a Gaussian head as the paper's Fig. 3 does: the ellipses holding 50 % (solid) and 90 %
    (dashed) of its probability (:func:`mass_ellipse`), centred at ``origin + center``, on axes
    whose x is the column and y the row (``imshow`` coordinates; ``center`` is (row, column) in
    token units). Ellipses with an axis longer than ``max_size`` (nearly uniform heads) are not
    drawn; with ``clip_size``, an axis longer than it is drawn ``clip_size`` long instead (a
    nearly singular head then shows as a stripe across the panel, and huge patches, which
    matplotlib renders very slowly, are never made). Returns the added patches."""
    from matplotlib.patches import Ellipse

    c = np.asarray(center, dtype=np.float64).reshape(2)
    a = np.asarray(inverse_covariance, dtype=np.float64).reshape(2, 2)
    swap = np.array([[0, 1], [1, 0]])  # (row, column) -> (x = column, y = row)
    a_xy = swap @ a @ swap
    out = []
    for mass, ls in zip(masses, linestyles):
        width, height, angle = mass_ellipse(a_xy, mass)
        if clip_size is None and not (math.isfinite(width) and math.isfinite(height)):
            continue
        if max_size is not None and max(width, height) > max_size:
            continue
        if clip_size is not None:
            width, height = min(width, clip_size), min(height, clip_size)
        patch = Ellipse(
            (origin[1] + c[1], origin[0] + c[0]),
            width,
            height,
            angle=angle,
            fill=False,
            edgecolor=color,
            linestyle=ls,
            linewidth=linewidth,
            zorder=3,
        )
        ax.add_patch(patch)
        out.append(patch)
    return out
