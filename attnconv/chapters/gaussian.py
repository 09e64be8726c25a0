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

import torch

from ..core.encodings import (
    GeneralizedQuadraticEncoding,
    QuadraticEncoding,
    RelativeEncoding,
)
from ..experiments import pruning
from ..experiments.paper_numbers import (
    PAPER_CONDITION_THRESHOLD,
    PAPER_MAX_EIGENVALUE_THRESHOLD,
)
from .shared.gaussian_maps import draw_mass_contours, head_attention_maps
from .shared.plotting import COLUMN_INCHES

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
    if not torch.allclose(
        cov, cov.T, rtol=1e-10, atol=1e-12 * float(cov.abs().max().clamp_min(1e-300))
    ):
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
        raise ValueError(
            f"{type(encoding).__name__} has no vector v (only the quadratic encodings do)"
        )
    r = encoding.features(delta)  # (..., D_p)
    return torch.einsum("...p,hp->h...", r, encoding.v())


def inv_sqrt_sigma_from_axes(stds: Sequence[float], angle: float = 0.0) -> torch.Tensor:
    """M = Σ^{-1/2} (the symmetric root) of the Gaussian with standard deviations ``stds`` = (σ_a,
    σ_b) along the unit axes u = (cos θ, sin θ) and (−sin θ, cos θ) in (δ_1, δ_2) = (row, column)
    coordinates, θ = ``angle`` in radians: M = R diag(1/σ_a, 1/σ_b) Rᵀ, so Σ⁻¹ = M Mᵀ has
    eigenvalues 1/σ_a², 1/σ_b². Returns a ``(2, 2)`` tensor in the default dtype."""
    sa, sb = (float(x) for x in stds)
    if not (sa > 0 and sb > 0) or not (math.isfinite(sa) and math.isfinite(sb)):
        raise ValueError(
            f"standard deviations must be positive and finite, got {tuple(stds)}"
        )
    c, s_ = math.cos(angle), math.sin(angle)
    rot = torch.tensor([[c, -s_], [s_, c]], dtype=torch.get_default_dtype())
    return rot @ torch.diag(torch.tensor([1 / sa, 1 / sb], dtype=rot.dtype)) @ rot.T


def _alpha(encoding: QuadraticEncoding) -> torch.Tensor:
    """α per head, whatever the parametrization of the quadratic encoding."""
    return encoding.width()


def score_constant(encoding: RelativeEncoding) -> torch.Tensor:
    """The per-head constant c_h with vᵀ r_δ = ``position_scores`` + c_h: α‖Δ‖² for eq. (9),
    ½ ΔᵀΣ⁻¹Δ for eq. (16). Returns ``(N_h,)``."""
    if not isinstance(encoding, (GeneralizedQuadraticEncoding, QuadraticEncoding)):
        raise ValueError(f"{type(encoding).__name__} is not a quadratic encoding")
    with torch.no_grad():
        c = encoding.centers
        if isinstance(encoding, GeneralizedQuadraticEncoding):
            return 0.5 * torch.einsum(
                "hi,hij,hj->h", c, encoding.inverse_covariance(), c
            )
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
        out.inv_sqrt_sigma.copy_(encoding.inverse_sqrt_covariance())
    return out


def covariance_of_heads(encoding: GeneralizedQuadraticEncoding) -> torch.Tensor:
    """Σ_h = (M_h M_hᵀ)⁻¹ of every head, ``(N_h, 2, 2)``; raises ValueError if some Σ_h⁻¹ is singular."""
    a = encoding.inverse_covariance().detach()
    det = a[:, 0, 0] * a[:, 1, 1] - a[:, 0, 1] * a[:, 1, 0]
    if bool((det <= 0).any()):
        raise ValueError(
            "some head has a singular Σ⁻¹ = M Mᵀ (M is not invertible): it has no covariance"
        )
    cov = torch.linalg.inv(a)
    return 0.5 * (cov + cov.transpose(-1, -2))


def log_density_gap_spread(
    encoding: GeneralizedQuadraticEncoding, delta: torch.Tensor
) -> torch.Tensor:
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
            gap = scores[h] - gaussian_log_density(
                delta.to(scores.dtype), encoding.centers[h], covs[h]
            )
            spreads.append(gap.max() - gap.min())
    return torch.stack(spreads)


def inverse_covariance_spectrum(
    encoding: GeneralizedQuadraticEncoding,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Eigenvalues of Σ_h⁻¹ = M_h M_hᵀ (ascending, ``(N_h, 2)``) and condition numbers λ_max/λ_min.

    A small λ_max means a head that is nearly uniform over the image; a huge condition number a
    head that is nearly a line (Σ⁻¹ close to rank 1). The condition number is ``inf`` when
    λ_min ≤ 0 (exactly singular, up to rounding).
    """
    if not isinstance(encoding, GeneralizedQuadraticEncoding):
        raise ValueError(
            "inverse_covariance_spectrum needs a GeneralizedQuadraticEncoding"
        )
    return pruning.inverse_covariance_spectrum(
        encoding.inv_sqrt_sigma
    )  # float64, closed form


def pruned_heads(
    encoding: GeneralizedQuadraticEncoding,
    min_eigenvalue: float = PAPER_MAX_EIGENVALUE_THRESHOLD,
    max_condition: float = PAPER_CONDITION_THRESHOLD,
) -> torch.Tensor:
    """Boolean ``(N_h,)``: the heads the paper prunes from the model as degenerate (App. A.1),
    i.e. with largest eigenvalue of Σ⁻¹ below ``min_eigenvalue`` (attends almost uniformly) or
    condition number above ``max_condition`` (attends along a line)."""
    pruning.check_thresholds(min_eigenvalue, max_condition)
    eig, cond = inverse_covariance_spectrum(encoding)
    return pruning.is_degenerate(eig[:, 1], cond, min_eigenvalue, max_condition)


def describe_heads(
    encoding: GeneralizedQuadraticEncoding,
    names: Sequence[str],
    min_eigenvalue: float = PAPER_MAX_EIGENVALUE_THRESHOLD,
    max_condition: float = PAPER_CONDITION_THRESHOLD,
) -> str:
    """A text table, one line per head: its name, the eigenvalues of Σ⁻¹ and the condition number
    (3 significant digits) and whether :func:`pruned_heads` drops it."""
    if len(names) != encoding.num_heads:
        raise ValueError(f"got {len(names)} names for {encoding.num_heads} heads")
    eig, cond = inverse_covariance_spectrum(encoding)
    pruned = pruned_heads(encoding, min_eigenvalue, max_condition)
    width = max(len(n) for n in names)
    lines = [
        f"{'head':<{width}}  {'λ_min(Σ⁻¹)':>10}  {'λ_max(Σ⁻¹)':>10}  {'condition':>9}  pruned"
    ]
    for n, (lo, hi), c, p in zip(names, eig.tolist(), cond.tolist(), pruned.tolist()):
        lines.append(
            f"{n:<{width}}  {lo:>10.3g}  {hi:>10.3g}  {c:>9.3g}  {'yes' if p else 'no'}"
        )
    return "\n".join(lines)


def plot_gaussian_heads(
    encoding: RelativeEncoding,
    grid_shape: Sequence[int],
    query: Sequence[int],
    masses: Sequence[float] = (0.5, 0.9),
    titles: Optional[Sequence[str]] = None,
    ncols: Optional[int] = None,
    cmap: str = "Blues",
    panel_size: float = 2.4,
    vmax_floor: float = 0.02,
):
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
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(panel * ncols, panel * nrows + 0.3), squeeze=False
    )
    centers = encoding.centers.detach().cpu().double()
    for i, ax in enumerate(axes.flat):
        ax.set_xticks([]), ax.set_yticks([])
        if i >= n:
            ax.axis("off")
            continue
        m = maps[i].double()
        ax.imshow(
            m.numpy(), cmap=cmap, vmin=0, vmax=max(float(m.max()), vmax_floor, 1e-300)
        )
        draw_mass_contours(ax, m, masses)
        ax.add_patch(
            Rectangle(
                (query[1] - 0.5, query[0] - 0.5), 1, 1, fill=False, ec="red", lw=1.5
            )
        )
        cy, cx = query[0] + float(centers[i, 0]), query[1] + float(centers[i, 1])
        ax.plot([cx], [cy], marker="x", color="darkorange", markersize=8, mew=2)
        ax.set_xlim(-0.5, grid_shape[1] - 0.5)
        ax.set_ylim(grid_shape[0] - 0.5, -0.5)
        ax.set_title(titles[i] if titles else f"head {i + 1}", fontsize=8.5)
    fig.tight_layout()
    return fig
