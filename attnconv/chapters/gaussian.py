"""Non-isotropic Gaussian attention heads: the generalized quadratic encoding of App. A.1, eq. (16).

A head of :class:`attnconv.core.encodings.GeneralizedQuadraticEncoding` has a centre Δ and a matrix
M = Σ^{-1/2} with Σ⁻¹ = M Mᵀ. Its position-only score vᵀ r_δ is the log-density of the Gaussian
N(Δ, Σ) at the shift δ, up to a constant per head, so its softmax over the keys is a discretised
Gaussian. This module holds

* an independent closed-form oracle, :func:`gaussian_log_density`;
* the checks of eq. (16): :func:`encoding_scores` (v·r_δ from ``v()`` and ``features()``) and
  :func:`log_density_gap_spread`;
* the shape of each head: :func:`inverse_covariance_spectrum` and :func:`pruned_heads` (the
  paper's pruning rule for degenerate heads, App. A.1);
* drawing: :func:`head_attention_maps`, :func:`probability_mass_levels` (thresholds of the 50 %
  and 90 % probability-mass regions, as in the paper's Fig. 3), :func:`draw_mass_contours` and
  :func:`plot_gaussian_heads`.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple

import numpy as np
import torch

from ..core.encodings import GeneralizedQuadraticEncoding, QuadraticEncoding, RelativeEncoding
from ..experiments import pruning
from ..experiments.paper_numbers import PAPER_CONDITION_THRESHOLD, PAPER_MAX_EIGENVALUE_THRESHOLD
from .plotting import COLUMN_INCHES

__all__ = [
    "gaussian_log_density",
    "encoding_scores",
    "inv_sqrt_sigma_from_axes",
    "score_constant",
    "isotropic_generalized",
    "covariance_of_heads",
    "log_density_gap_spread",
    "inverse_covariance_spectrum",
    "pruned_heads",
    "describe_heads",
    "query_shifts",
    "head_attention_maps",
    "probability_mass_levels",
    "draw_mass_contours",
    "mass_ellipse",
    "draw_mass_ellipses",
    "plot_gaussian_heads",
]


def gaussian_log_density(delta: torch.Tensor, center, covariance) -> torch.Tensor:
    """log N(δ; Δ, Σ) = −½ (δ−Δ)ᵀ Σ⁻¹ (δ−Δ) − (d/2) log(2π) − ½ log det Σ, for d-dim shifts.

    ``delta`` is ``(..., d)``, ``center`` Δ is ``(d,)`` and ``covariance`` Σ is a symmetric
    positive-definite ``(d, d)`` matrix; returns a ``(...)`` tensor. Written from the closed form
    (a Cholesky factor Σ = L Lᵀ gives Σ⁻¹(δ−Δ) and log det Σ = 2 Σ log L_ii), independently of
    the encodings, so that it can serve as the oracle for eq. (16).
    """
    delta = torch.as_tensor(delta)
    dtype = delta.dtype if delta.is_floating_point() else torch.get_default_dtype()
    x = delta.to(dtype)
    mu = torch.as_tensor(center, dtype=dtype)
    cov = torch.as_tensor(covariance, dtype=dtype)
    d = x.shape[-1] if x.ndim else 0
    if x.ndim == 0 or mu.shape != (d,) or cov.shape != (d, d):
        raise ValueError(
            f"expected delta (..., d), center (d,) and covariance (d, d); got {tuple(x.shape)}, "
            f"{tuple(mu.shape)}, {tuple(cov.shape)}"
        )
    if not torch.allclose(cov, cov.T, rtol=1e-10, atol=1e-12 * float(cov.abs().max().clamp_min(1e-300))):
        raise ValueError("covariance must be symmetric")
    chol, info = torch.linalg.cholesky_ex(cov)
    if int(info) != 0:
        raise ValueError("covariance must be positive definite")
    diff = (x - mu).reshape(-1, d).T  # (d, N)
    z = torch.linalg.solve_triangular(chol, diff, upper=False)  # L⁻¹(δ−Δ)
    maha = (z * z).sum(0).reshape(x.shape[:-1])  # (δ−Δ)ᵀ Σ⁻¹ (δ−Δ)
    log_det = 2 * torch.log(torch.diagonal(chol)).sum()
    return -0.5 * maha - 0.5 * d * math.log(2 * math.pi) - 0.5 * log_det


def encoding_scores(encoding: RelativeEncoding, delta: torch.Tensor) -> torch.Tensor:
    """vᵀ r_δ per head, from the encoding's ``v()`` and ``features()`` (eq. 9 or eq. 16).

    Unlike ``position_scores``, which returns the centred form, this is the literal inner product
    of the paper, including the per-head constant. Returns ``(N_h, ...)`` for ``delta (..., d)``.
    """
    if not hasattr(encoding, "v"):
        raise ValueError(f"{type(encoding).__name__} has no vector v (only the quadratic encodings do)")
    r = encoding.features(delta)  # (..., D_p)
    return torch.einsum("...p,hp->h...", r, encoding.v())


def inv_sqrt_sigma_from_axes(stds: Sequence[float], angle: float = 0.0) -> torch.Tensor:
    """M = Σ^{-1/2} (the symmetric root) of the Gaussian with standard deviations ``stds`` = (σ_a,
    σ_b) along the unit axes u = (cos θ, sin θ) and (−sin θ, cos θ) in (δ_1, δ_2) = (row, column)
    coordinates, θ = ``angle`` in radians: M = R diag(1/σ_a, 1/σ_b) Rᵀ, so Σ⁻¹ = M Mᵀ has
    eigenvalues 1/σ_a², 1/σ_b². Returns a ``(2, 2)`` tensor in the default dtype."""
    sa, sb = (float(x) for x in stds)
    if not (sa > 0 and sb > 0) or not (math.isfinite(sa) and math.isfinite(sb)):
        raise ValueError(f"standard deviations must be positive and finite, got {tuple(stds)}")
    c, s_ = math.cos(angle), math.sin(angle)
    rot = torch.tensor([[c, -s_], [s_, c]], dtype=torch.get_default_dtype())
    return rot @ torch.diag(torch.tensor([1 / sa, 1 / sb], dtype=rot.dtype)) @ rot.T


def _alpha(encoding: QuadraticEncoding) -> torch.Tensor:
    """α per head, whatever the parametrization of the quadratic encoding."""
    return encoding.width() if hasattr(encoding, "width") else encoding.alpha


def score_constant(encoding: RelativeEncoding) -> torch.Tensor:
    """The per-head constant c_h with vᵀ r_δ = ``position_scores`` + c_h: α‖Δ‖² for eq. (9),
    ½ ΔᵀΣ⁻¹Δ for eq. (16). Returns ``(N_h,)``."""
    if not isinstance(encoding, (GeneralizedQuadraticEncoding, QuadraticEncoding)):
        raise ValueError(f"{type(encoding).__name__} is not a quadratic encoding")
    with torch.no_grad():
        c = encoding.centers
        if isinstance(encoding, GeneralizedQuadraticEncoding):
            return 0.5 * torch.einsum("hi,hij,hj->h", c, encoding.inverse_covariance(), c)
        return _alpha(encoding) * (c * c).sum(-1)


def isotropic_generalized(encoding: QuadraticEncoding) -> GeneralizedQuadraticEncoding:
    """The generalized encoding (eq. 16) with M_h = √(2α_h)·I, i.e. Σ_h = I/(2α_h): the same heads
    as the quadratic encoding (eq. 9) of width α_h, in the dtype of ``encoding``."""
    if not isinstance(encoding, QuadraticEncoding) or encoding.spatial_dims != 2:
        raise ValueError("isotropic_generalized needs a 2D QuadraticEncoding")
    alpha = _alpha(encoding).detach()
    if bool((alpha < 0).any()):
        raise ValueError("alpha must be >= 0 for M = sqrt(2 alpha) I to exist")
    out = GeneralizedQuadraticEncoding(encoding.num_heads).to(alpha.dtype)
    with torch.no_grad():
        out.centers.copy_(encoding.centers)
        eye = torch.eye(2, dtype=alpha.dtype)
        out.inv_sqrt_sigma.copy_(torch.sqrt(2 * alpha)[:, None, None] * eye)
    return out


def covariance_of_heads(encoding: GeneralizedQuadraticEncoding) -> torch.Tensor:
    """Σ_h = (M_h M_hᵀ)⁻¹ of every head, ``(N_h, 2, 2)``; raises ValueError if some Σ_h⁻¹ is singular."""
    a = encoding.inverse_covariance().detach()
    det = a[:, 0, 0] * a[:, 1, 1] - a[:, 0, 1] * a[:, 1, 0]
    if bool((det <= 0).any()):
        raise ValueError("some head has a singular Σ⁻¹ = M Mᵀ (M is not invertible): it has no covariance")
    cov = torch.linalg.inv(a)
    return 0.5 * (cov + cov.transpose(-1, -2))


def log_density_gap_spread(encoding: GeneralizedQuadraticEncoding, delta: torch.Tensor) -> torch.Tensor:
    """Per head, max − min over the shifts ``delta`` of vᵀ r_δ − log N(δ; Δ_h, Σ_h) (App. A.1, eq. 16).

    Eq. (16) says vᵀ r_δ is the Gaussian log-density up to a constant per head, so this spread is 0
    up to rounding. The log-density comes from :func:`gaussian_log_density` with Σ_h = (M_h M_hᵀ)⁻¹.
    Returns a ``(N_h,)`` tensor.
    """
    if not isinstance(encoding, GeneralizedQuadraticEncoding):
        raise ValueError("log_density_gap_spread needs a GeneralizedQuadraticEncoding")
    with torch.no_grad():
        scores = encoding_scores(encoding, delta)  # (N_h, ...)
        covs = covariance_of_heads(encoding)
        spreads = []
        for h in range(encoding.num_heads):
            gap = scores[h] - gaussian_log_density(delta.to(scores.dtype), encoding.centers[h], covs[h])
            spreads.append(gap.max() - gap.min())
    return torch.stack(spreads)


def inverse_covariance_spectrum(encoding: GeneralizedQuadraticEncoding) -> Tuple[torch.Tensor, torch.Tensor]:
    """Eigenvalues of Σ_h⁻¹ = M_h M_hᵀ (ascending, ``(N_h, 2)``) and condition numbers λ_max/λ_min.

    A small λ_max means a head that is nearly uniform over the image; a huge condition number a
    head that is nearly a line (Σ⁻¹ close to rank 1). The condition number is ``inf`` when
    λ_min ≤ 0 (exactly singular, up to rounding).
    """
    if not isinstance(encoding, GeneralizedQuadraticEncoding):
        raise ValueError("inverse_covariance_spectrum needs a GeneralizedQuadraticEncoding")
    return pruning.inverse_covariance_spectrum(encoding.inv_sqrt_sigma)  # float64, closed form


def pruned_heads(encoding: GeneralizedQuadraticEncoding, min_eigenvalue: float = PAPER_MAX_EIGENVALUE_THRESHOLD,
                 max_condition: float = PAPER_CONDITION_THRESHOLD) -> torch.Tensor:
    """Boolean ``(N_h,)``: the heads the paper prunes from the model as degenerate (App. A.1),
    i.e. with largest eigenvalue of Σ⁻¹ below ``min_eigenvalue`` (attends almost uniformly) or
    condition number above ``max_condition`` (attends along a line)."""
    pruning.check_thresholds(min_eigenvalue, max_condition)
    eig, cond = inverse_covariance_spectrum(encoding)
    return pruning.is_degenerate(eig[:, 1], cond, min_eigenvalue, max_condition)


def describe_heads(encoding: GeneralizedQuadraticEncoding, names: Sequence[str],
                   min_eigenvalue: float = PAPER_MAX_EIGENVALUE_THRESHOLD,
                   max_condition: float = PAPER_CONDITION_THRESHOLD) -> str:
    """A text table, one line per head: its name, the eigenvalues of Σ⁻¹ and the condition number
    (3 significant digits) and whether :func:`pruned_heads` drops it."""
    if len(names) != encoding.num_heads:
        raise ValueError(f"got {len(names)} names for {encoding.num_heads} heads")
    eig, cond = inverse_covariance_spectrum(encoding)
    pruned = pruned_heads(encoding, min_eigenvalue, max_condition)
    width = max(len(n) for n in names)
    lines = [f"{'head':<{width}}  {'λ_min(Σ⁻¹)':>10}  {'λ_max(Σ⁻¹)':>10}  {'condition':>9}  pruned"]
    for n, (lo, hi), c, p in zip(names, eig.tolist(), cond.tolist(), pruned.tolist()):
        lines.append(f"{n:<{width}}  {lo:>10.3g}  {hi:>10.3g}  {c:>9.3g}  {'yes' if p else 'no'}")
    return "\n".join(lines)


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


def head_attention_maps(encoding: RelativeEncoding, grid_shape: Sequence[int], query: Sequence[int]) -> torch.Tensor:
    """Each head's attention probabilities over an ``(H, W)`` key grid for one query pixel:
    softmax over the keys of the position-only score (eqs. 9 and 16). Returns ``(N_h, H, W)``."""
    delta = query_shifts(grid_shape, query)
    with torch.no_grad():
        scores = encoding.position_scores(delta)  # (N_h, H, W)
    n = scores.shape[0]
    return torch.softmax(scores.reshape(n, -1), dim=-1).reshape(scores.shape)


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
    idx = torch.searchsorted(cum, m.reshape(-1) * (1 - 4 * torch.finfo(torch.float64).eps))
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


def draw_mass_contours(ax, probs, masses: Sequence[float] = (0.5, 0.9), color: str = "black",
                       linestyles: Sequence[str] = ("solid", "dashed"), linewidth: float = 1.2) -> list:
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
        lc = LineCollection(_superlevel_outline(arr >= t), colors=color, linestyles=ls, linewidths=linewidth,
                            zorder=3 + len(masses) - i)
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


def draw_mass_ellipses(ax, center, inverse_covariance, origin: Sequence[float] = (0.0, 0.0),
                       masses: Sequence[float] = (0.5, 0.9), color: str = "black",
                       linestyles: Sequence[str] = ("solid", "dashed"), linewidth: float = 1.2,
                       max_size: Optional[float] = None) -> list:
    """Draw a Gaussian head as the paper's Fig. 3 does: the ellipses holding 50 % (solid) and 90 %
    (dashed) of its probability (:func:`mass_ellipse`), centred at ``origin + center``, on axes
    whose x is the column and y the row (``imshow`` coordinates; ``center`` is (row, column) in
    token units). Ellipses with an axis longer than ``max_size`` (nearly uniform heads) are not
    drawn. Returns the added patches."""
    from matplotlib.patches import Ellipse

    c = np.asarray(center, dtype=np.float64).reshape(2)
    a = np.asarray(inverse_covariance, dtype=np.float64).reshape(2, 2)
    swap = np.array([[0, 1], [1, 0]])  # (row, column) -> (x = column, y = row)
    a_xy = swap @ a @ swap
    out = []
    for mass, ls in zip(masses, linestyles):
        width, height, angle = mass_ellipse(a_xy, mass)
        if not (math.isfinite(width) and math.isfinite(height)):
            continue
        if max_size is not None and max(width, height) > max_size:
            continue
        patch = Ellipse((origin[1] + c[1], origin[0] + c[0]), width, height, angle=angle, fill=False,
                        edgecolor=color, linestyle=ls, linewidth=linewidth, zorder=3)
        ax.add_patch(patch)
        out.append(patch)
    return out


def plot_gaussian_heads(encoding: RelativeEncoding, grid_shape: Sequence[int], query: Sequence[int],
                        masses: Sequence[float] = (0.5, 0.9), titles: Optional[Sequence[str]] = None,
                        ncols: Optional[int] = None, cmap: str = "Blues", panel_size: float = 2.4,
                        vmax_floor: float = 0.02):
    """One panel per head: its attention map (:func:`head_attention_maps`) around ``query`` (red
    square), the head centre q + Δ_h (orange cross) and the outlines of the 50 % (solid) and 90 %
    (dashed) probability-mass regions (:func:`draw_mass_contours`). Each panel's colour scale
    runs from 0 to max(its largest probability, ``vmax_floor``), so a nearly uniform head shows
    pale instead of saturated. Returns the figure."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    maps = head_attention_maps(encoding, grid_shape, query)
    n = maps.shape[0]
    if titles is not None and len(titles) != n:
        raise ValueError(f"got {len(titles)} titles for {n} heads")
    ncols = ncols or min(n, 3)
    nrows = int(math.ceil(n / ncols))
    panel = min(panel_size, COLUMN_INCHES / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(panel * ncols, panel * nrows + 0.3), squeeze=False)
    centers = encoding.centers.detach().cpu().double()
    for i, ax in enumerate(axes.flat):
        ax.set_xticks([]), ax.set_yticks([])
        if i >= n:
            ax.axis("off")
            continue
        m = maps[i].double()
        ax.imshow(m.numpy(), cmap=cmap, vmin=0, vmax=max(float(m.max()), vmax_floor, 1e-300))
        draw_mass_contours(ax, m, masses)
        ax.add_patch(Rectangle((query[1] - 0.5, query[0] - 0.5), 1, 1, fill=False, ec="red", lw=1.5))
        cy, cx = query[0] + float(centers[i, 0]), query[1] + float(centers[i, 1])
        ax.plot([cx], [cy], marker="x", color="darkorange", markersize=8, mew=2)
        ax.set_xlim(-0.5, grid_shape[1] - 0.5)
        ax.set_ylim(grid_shape[0] - 0.5, -0.5)
        ax.set_title(titles[i] if titles else f"head {i + 1}", fontsize=8.5)
    fig.tight_layout()
    return fig
