"""Local Gaussian attention: each head uses only the keys in a window around its centre.

The paper (Sec. 4.2) notes that its implementation "could be optimized to exploit the locality of
Gaussian attention probabilities". A position-only Gaussian head (eq. 9 or eq. 16) scores key k
of query q by s(k) = −½ (k − t)ᵀ Σ⁻¹ (k − t), t = q + Δ. This module keeps, for every head and
query, only the keys of a (2r+1)×(2r+1) window and renormalises over the keys of the window that
exist (the image border), with r chosen per head so that the attention mass left out is provably
below a tolerance ε.

**The bound.** Let z* be the point of the key grid's bounding box closest to t in the Σ⁻¹ norm
(z* = t inside the box), c = round(z*) the window centre, λ the smallest eigenvalue of Σ⁻¹ and
gap = s(z*) − s(c) ≥ 0. For every key z of the box, s(z) ≤ s(z*) − ½λ‖z − z*‖² (z* minimises a
convex quadratic over a convex set). Keys outside the window have ‖z − z*‖_∞ ≥ r + ½, hence

    left-out mass / kept mass ≤ e^{gap} · 2 τ(r) F,
    τ(r) = 2 Σ_{m≥0} e^{−½λ(r+½+m)²},   F = 1 + 2 Σ_{m≥0} e^{−½λ(½+m)²},

since the kept mass is at least e^{s(c)}. We take the smallest r that makes this ≤ ε (capped at
the grid size, where the window holds every key and local equals dense). Each output then
differs from dense attention by at most 2ε · max|value|.

**Two ways to apply it.** For axis-aligned heads (Σ⁻¹ diagonal: every quadratic head, eq. 9) the
Gaussian factorises over rows and columns, the projection z* is a clamp, the window is a product of
two intervals, and so the windowed, border-renormalised softmax is exactly the product of a row
factor and a column factor (:func:`separable_local_factors`). The attention is then applied as two
dense matrix products, row factor then column factor, costing T·(H + W) per channel instead of
T² — this factorisation, not the window, is where the time goes. Rotated heads (eq. 16 with
Σ⁻¹_12 ≠ 0) do not factorise; they use a sparse matrix of the windows
(:func:`local_attention_matrix`).

**One host read per layer and step.** The radii are Python integers chosen from the heads'
current values, so they are read on the host: :func:`plan_windows` computes on the device
whether the heads are axis-aligned and every head's (smallest eigenvalue, gap) for both ways,
and reads them all at once (on CUDA, one synchronisation per layer and step). The sparse matrix
of rotated heads still sizes its rows with boolean masks (a synchronisation per head on CUDA).
"""

from __future__ import annotations

import math
import warnings
from typing import Sequence, Tuple

import torch

from .precision import autocast_off
from .softmax import softmax_without_denormals

__all__ = [
    "separable_local_factors",
    "separable_heads",
    "is_axis_aligned",
    "axis_aligned_flag",
    "plan_windows",
    "separable_window_statistics",
    "window_radii",
    "sparse_rows",
    "window_mass_bound",
    "window_radius",
    "project_onto_box",
    "local_attention_matrix",
]


def sparse_rows(
    crow: torch.Tensor, columns: torch.Tensor, values: torch.Tensor, size
) -> torch.Tensor:
    """A CSR matrix (autograd flows to ``values``), without PyTorch's beta-feature warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(
            crow, columns, values, size, check_invariants=False
        )


def window_mass_bound(
    radius: int, smallest_eigenvalue: float, gap: float = 0.0
) -> float:
    """The bound e^{gap}·2τ(r)F on left-out / kept attention mass of a window of radius r (2D)."""
    lam = float(smallest_eigenvalue)
    if lam <= 0:
        return math.inf

    def tail(start: float) -> float:
        # 2 Σ_{m≥0} e^{-λ(start+m)²/2}. For a wide head (small λ) the sum has ~1/√λ terms, so it is
        # bounded from above instead by its first term plus the integral of the decreasing summand:
        # e^{-λs²/2} + √(π/(2λ)) erfc(s √(λ/2)) (still an upper bound, so windows stay safe).
        if lam < 1e-3:
            first = math.exp(-0.5 * lam * start**2)
            return 2 * (
                first
                + math.sqrt(math.pi / (2 * lam)) * math.erfc(start * math.sqrt(lam / 2))
            )
        total, m = 0.0, 0
        while True:
            term = math.exp(-0.5 * lam * (start + m) ** 2)
            total += term
            if term <= total * 1e-17 or term == 0.0:
                return 2 * total
            m += 1

    return math.exp(gap) * 2 * tail(radius + 0.5) * (1 + tail(0.5))


def window_radius(
    smallest_eigenvalue: float, gap: float, tolerance: float, max_radius: int
) -> int:
    """The smallest r ≤ max_radius with :func:`window_mass_bound` (r) ≤ tolerance (max_radius if none)."""
    if tolerance <= 0:
        raise ValueError("tolerance must be > 0")
    for r in range(max_radius + 1):
        if window_mass_bound(r, smallest_eigenvalue, gap) <= tolerance:
            return r
    return max_radius


def project_onto_box(
    target: torch.Tensor,
    precision: torch.Tensor,
    low: Sequence[float],
    high: Sequence[float],
) -> torch.Tensor:
    """argmin over the box [low, high] of (z − t)ᵀ Σ⁻¹ (z − t), for targets ``(N_h, T, 2)`` and
    precisions ``(N_h, 2, 2)``. Inside the box this is t; outside, the best of the four edges."""
    t = target
    a = precision[:, None]  # (N_h, 1, 2, 2)
    lo = torch.tensor(low, dtype=t.dtype, device=t.device)
    hi = torch.tensor(high, dtype=t.dtype, device=t.device)
    candidates = [t]
    for axis in (0, 1):
        other = 1 - axis
        for bound in (lo[axis], hi[axis]):
            fixed = bound.expand_as(t[..., axis])
            diag = a[..., other, other].clamp_min(1e-12)
            free = t[..., other] - a[..., axis, other] * (fixed - t[..., axis]) / diag
            free = torch.minimum(torch.maximum(free, lo[other]), hi[other])
            z = torch.stack([fixed, free] if axis == 0 else [free, fixed], dim=-1)
            candidates.append(z)
    z = torch.stack(candidates)  # (5, N_h, T, 2)
    d = z - t
    cost = torch.einsum(
        "c...i,...ij,c...j->c...", d, precision[:, None].expand(*t.shape[:-1], 2, 2), d
    )
    inside = ((t >= lo) & (t <= hi)).all(-1)
    cost[0] = torch.where(
        inside, torch.zeros_like(cost[0]), torch.full_like(cost[0], math.inf)
    )
    best = cost.argmin(0)
    return torch.gather(z, 0, best[None, ..., None].expand(1, *t.shape)).squeeze(0)


def axis_aligned_flag(precision: torch.Tensor) -> torch.Tensor:
    """On the device, without a host read: 1 when every head's Σ⁻¹ is diagonal, else 0."""
    return ((precision[:, 0, 1] == 0) & (precision[:, 1, 0] == 0)).all()


def is_axis_aligned(precision: torch.Tensor) -> bool:
    """True when every head's Σ⁻¹ is diagonal, so that its Gaussian factorises over rows and
    columns (one host read)."""
    return bool(axis_aligned_flag(precision))


def window_radii(stats, tolerance: float, max_radius: int) -> list:
    """Each head's :func:`window_radius` from its (smallest eigenvalue, gap) pair, read."""
    return [window_radius(lam, gap, tolerance, max_radius) for lam, gap in stats]


def _axis_window_softmax(
    centers_a: torch.Tensor, lam_a: torch.Tensor, n_q: int, low: int, high: int, radii
) -> torch.Tensor:
    """Row (or column) factor: for every head, query q and key k on one axis, the softmax over the
    window |k − c(q)| ≤ r_h of −½λ_a (k − q − Δ_a)², c(q) = round(clamp(q + Δ_a, low, high))."""
    dtype, device = centers_a.dtype, centers_a.device
    q = torch.arange(n_q, device=device, dtype=dtype)
    k = torch.arange(low, high + 1, device=device, dtype=dtype)
    target = q[None, :, None] + centers_a[:, None, None]  # (N_h, Q, 1)
    centre = target.detach().clamp(low, high).round()
    r = torch.tensor(radii, device=device, dtype=dtype)[:, None, None]
    inside = (k[None, None, :] - centre).abs() <= r
    scores = -0.5 * lam_a[:, None, None] * (k[None, None, :] - target) ** 2
    return softmax_without_denormals(
        scores.masked_fill(~inside, -math.inf)
    )  # (N_h, Q, K)


def separable_local_factors(
    centers: torch.Tensor,
    precision: torch.Tensor,
    shape: Tuple[int, int],
    key_padding: int,
    tolerance: float,
    radii=None,
):
    """Row and column factors of local attention for axis-aligned Gaussian heads (module docstring).

    Returns ``(rows, cols, radii)``: ``rows`` is ``(N_h, H, H + 2p)``, ``cols`` is
    ``(N_h, W, W + 2p)``, and head h's attention of query (i, j) on key (k, l) is
    ``rows[h, i, k] · cols[h, j, l]``. Differentiable in ``centers`` and ``precision``.
    ``radii``: the windows' radii when the caller has read them already (:func:`plan_windows`);
    else Σ⁻¹ is checked and the radii read here (two host reads).
    """
    h_q, w_q = shape
    p = key_padding
    low, high = (-p, -p), (h_q - 1 + p, w_q - 1 + p)
    if radii is None:
        if not is_axis_aligned(precision):
            raise ValueError(
                "separable local attention needs diagonal Σ⁻¹ (axis-aligned heads)"
            )
        stats = separable_window_statistics(centers, precision, shape, p).tolist()
        radii = window_radii(stats, tolerance, max(h_q, w_q) - 1 + 2 * p)
    lam = torch.stack([precision[:, 0, 0], precision[:, 1, 1]], -1)  # (N_h, 2)
    rows = _axis_window_softmax(centers[:, 0], lam[:, 0], h_q, low[0], high[0], radii)
    cols = _axis_window_softmax(centers[:, 1], lam[:, 1], w_q, low[1], high[1], radii)
    return rows, cols, radii


@torch.no_grad()
def separable_window_statistics(
    centers: torch.Tensor,
    precision: torch.Tensor,
    shape: Tuple[int, int],
    key_padding: int,
) -> torch.Tensor:
    """Per axis-aligned head, ``(N_h, 2)`` on the device: the smallest eigenvalue of Σ⁻¹ and the
    largest gap over the queries (module docstring), the two numbers its radius depends on."""
    h_q, w_q = shape
    p = key_padding
    low, high = (-p, -p), (h_q - 1 + p, w_q - 1 + p)
    lam = torch.stack([precision[:, 0, 0], precision[:, 1, 1]], -1).detach()
    gaps = []
    for a, n in ((0, h_q), (1, w_q)):
        t = (
            torch.arange(n, dtype=centers.dtype, device=centers.device)[None]
            + centers.detach()[:, a : a + 1]
        )
        zstar = t.clamp(low[a], high[a])
        c = zstar.round()
        gaps.append(
            (0.5 * lam[:, a : a + 1] * ((c - t) ** 2 - (zstar - t) ** 2)).amax(1)
        )
    gap = (gaps[0] + gaps[1]).clamp_min(0)
    return torch.stack([lam.amin(1), gap], -1)


class WindowPlan:
    """How a local layer applies its heads this step, from one host read
    (:func:`plan_windows`): ``aligned`` (separable factors, else the sparse matrix), each
    head's ``radii``, and for the sparse path each head's window ``centre`` per query."""

    def __init__(self, aligned: bool, radii: list, centre=None):
        self.aligned, self.radii, self.centre = aligned, radii, centre


def plan_windows(
    centers, precision, shape, key_padding: int, tolerance: float, aligned=None
) -> WindowPlan:
    """Whether the heads are axis-aligned and every head's window radius, with one host read:
    the flag and the statistics of both paths are computed on the device and read together.
    ``aligned=True``: Σ⁻¹ is diagonal by construction (the quadratic encoding), so neither the
    flag nor the sparse path's statistics are computed."""
    h_q, w_q = shape
    p = key_padding
    max_radius = max(h_q, w_q) - 1 + 2 * p
    with torch.no_grad():
        parts = [separable_window_statistics(centers, precision, shape, p).flatten()]
        centre = None
        if aligned is None:
            parts.insert(0, axis_aligned_flag(precision).to(parts[0].dtype)[None])
            low, high = (-p, -p), (h_q - 1 + p, w_q - 1 + p)
            queries = _query_grid(shape, centers.dtype, centers.device)
            centre, general = _window_centres_and_statistics(
                centers, precision, queries, low, high
            )
            parts.append(general.flatten())
        values = torch.cat(parts).tolist()  # the one host read
    if aligned is None:
        aligned, values = bool(values[0]), values[1:]
    nh = centers.shape[0]
    pairs = [values[2 * h : 2 * h + 2] for h in range(2 * nh)]
    stats = pairs[:nh] if aligned else pairs[nh:]
    return WindowPlan(aligned, window_radii(stats, tolerance, max_radius), centre)


def local_attention_matrix(
    centers: torch.Tensor,
    precision: torch.Tensor,
    shape: Tuple[int, int],
    key_padding: int,
    tolerance: float,
    stack_heads_in_columns: bool = False,
    plan=None,
) -> Tuple[torch.Tensor, list]:
    """The sparse attention matrix of N_h Gaussian heads, restricted to windows (module docstring).

    Args:
        centers: Δ per head, ``(N_h, 2)`` (differentiable).
        precision: Σ⁻¹ per head, ``(N_h, 2, 2)`` (differentiable).
        shape: the query grid (H, W); keys live on it zero-padded by ``key_padding``.
        tolerance: ε, the largest left-out / kept mass allowed per head and query.

    Returns the ``(N_h·T_q, T_k)`` sparse CSR matrix of probabilities (row h·T_q + q is head h's
    attention of query q) and the window radius chosen for each head. With
    ``stack_heads_in_columns`` the matrix is ``(N_h·T_q, N_h·T_k)`` and head h reads columns
    h·T_k … (h+1)·T_k − 1, for values that differ per head. ``plan``: the windows when the
    caller has read them (:func:`plan_windows`), else they are read here.
    """
    h_q, w_q = shape
    p = key_padding
    nh = centers.shape[0]
    dtype, device = centers.dtype, centers.device
    low, high = (-p, -p), (h_q - 1 + p, w_q - 1 + p)
    w_k = w_q + 2 * p
    t_k = (h_q + 2 * p) * w_k
    queries = _query_grid(shape, dtype, device)  # (T_q, 2)
    if plan is None:
        centre, stats = _window_centres_and_statistics(
            centers, precision, queries, low, high
        )
        radii = window_radii(stats.tolist(), tolerance, max(h_q, w_q) - 1 + 2 * p)
    else:
        centre, radii = plan.centre, plan.radii
    values, columns, counts = [], [], []
    for h in range(nh):
        probs, flat, valid = _head_window(
            radii[h], centre[h], queries, centers[h], precision[h], low, high, w_k
        )
        values.append(probs[valid])
        columns.append(flat[valid] + (h * t_k if stack_heads_in_columns else 0))
        counts.append(valid.sum(1))
    counts = torch.cat(counts)
    crow = torch.zeros(nh * h_q * w_q + 1, dtype=torch.long, device=device)
    crow[1:] = counts.cumsum(0)
    n_cols = nh * t_k if stack_heads_in_columns else t_k
    matrix = sparse_rows(
        crow, torch.cat(columns), torch.cat(values), (nh * h_q * w_q, n_cols)
    )
    return matrix, radii


def _query_grid(shape, dtype, device) -> torch.Tensor:
    """The queries' (row, column) coordinates ``(T_q, 2)``, row-major."""
    qi, qj = torch.meshgrid(
        torch.arange(shape[0], device=device),
        torch.arange(shape[1], device=device),
        indexing="ij",
    )
    return torch.stack([qi.reshape(-1), qj.reshape(-1)], -1).to(dtype)


@torch.no_grad()
def _window_centres_and_statistics(centers, precision, queries, low, high):
    """Each head's window centre per query (the rounded best key in the box) and, ``(N_h, 2)``
    on the device, the smallest eigenvalue of its Σ⁻¹ and its largest gap."""
    a = precision.detach()
    target = queries[None] + centers.detach()[:, None]  # (N_h, T_q, 2)
    zstar = project_onto_box(target, a, low, high)
    centre = zstar.round()

    def quad(z):
        d = z - target
        return 0.5 * torch.einsum(
            "htij,htj,hti->ht", a[:, None].expand(-1, d.shape[1], -1, -1), d, d
        )

    gaps = (quad(centre) - quad(zstar)).amax(1).clamp_min(0)
    lam = torch.linalg.eigvalsh(a)[:, 0]
    return centre, torch.stack([lam, gaps], -1)


def _head_window(r: int, centre, queries, center, precision, low, high, w_k: int):
    """One head's probabilities over its (2r + 1)² window per query, the keys' flat indices and
    which keys are on the grid."""
    dtype, device = center.dtype, center.device
    o = torch.arange(-r, r + 1, device=device)
    oi, oj = torch.meshgrid(o, o, indexing="ij")
    offsets = torch.stack([oi.reshape(-1), oj.reshape(-1)], -1).to(dtype)  # (K, 2)
    keys = centre[:, None, :] + offsets[None]  # (T_q, K, 2) key coordinates
    valid = (
        (keys[..., 0] >= low[0])
        & (keys[..., 0] <= high[0])
        & (keys[..., 1] >= low[1])
        & (keys[..., 1] <= high[1])
    )
    diff = keys - queries[:, None, :] - center  # δ − Δ_h, differentiable in Δ_h
    scores = -0.5 * torch.einsum("tki,ij,tkj->tk", diff, precision, diff)
    scores = scores.masked_fill(~valid, -math.inf)
    probs = softmax_without_denormals(scores)
    flat = ((keys[..., 0] - low[0]) * w_k + (keys[..., 1] - low[1])).long()
    return probs, flat, valid


class _SeparableHeads(torch.autograd.Function):
    """Σ_h (R_h ⊗ C_h) X W_out^hᵀ + b_out, one head at a time (see :func:`separable_heads`).

    Autocast is off inside: every product is in the values' dtype (the other inputs are cast to
    it), intermediates are written into buffers of that dtype, and in bf16/fp16 the heads are
    summed in fp32 and rounded once. Gradients come back in each input's dtype."""

    @staticmethod
    def forward(ctx, values, rows, cols, weight, bias):
        dtype = values.dtype
        ctx.dtypes = [
            None if t is None else t.dtype for t in (rows, cols, weight, bias)
        ]
        rows, cols, weight = rows.to(dtype), cols.to(dtype), weight.to(dtype)
        keep = any(ctx.needs_input_grad)  # each head's two intermediates, for backward
        with autocast_off(values.device.type):
            out, zs, us = _separable_forward(values, rows, cols, weight, keep)
            if bias is not None:
                out.add_(bias.to(out.dtype))
        ctx.save_for_backward(values, rows, cols, weight, zs, us)
        ctx.has_bias = bias is not None
        return out.to(dtype)

    @staticmethod
    def backward(ctx, grad):
        values, rows, cols, weight, zs, us = ctx.saved_tensors
        with autocast_off(values.device.type):
            grads = _separable_backward(
                grad.to(values.dtype), values, rows, cols, weight, zs, us
            )
            grad_bias = (
                grad.sum(0, dtype=torch.float32).to(ctx.dtypes[3])
                if ctx.has_bias
                else None
            )
        grad_x, grad_rows, grad_cols, grad_w = grads
        return (
            grad_x,
            grad_rows.to(ctx.dtypes[0]),
            grad_cols.to(ctx.dtypes[1]),
            grad_w.to(ctx.dtypes[2]),
            grad_bias,
        )


def _separable_forward(values, rows, cols, weight, keep: bool):
    """The heads' sum ``(H·W·B, D)`` and, with ``keep``, each head's X W_out^hᵀ and its row
    factor applied (for backward). fp32/fp64: accumulated in place in the values' dtype (bit for
    bit the earlier numbers); bf16/fp16: accumulated in fp32."""
    h_k, w_k, b, c = values.shape
    nh, h_q, w_q = rows.shape[0], rows.shape[1], cols.shape[1]
    d = weight.shape[0]
    x = values.reshape(-1, c)
    zs = values.new_empty(nh, h_k, w_k * b * d) if keep else None
    us = values.new_empty(nh, h_q, w_k * b * d) if keep else None
    wide = values.dtype in (torch.float32, torch.float64)
    out = torch.empty(
        h_q,
        w_q,
        b * d,
        device=values.device,
        dtype=values.dtype if wide else torch.float32,
    )
    for h in range(nh):
        w_h = weight[:, h * c : (h + 1) * c].t()
        z = (torch.mm(x, w_h, out=zs[h].view(-1, d)) if keep else x @ w_h).view(h_k, -1)
        u = (torch.mm(rows[h], z, out=us[h]) if keep else rows[h] @ z).view(
            h_q, w_k, b * d
        )
        col = (
            cols[h].expand(h_q, w_q, w_k).contiguous()
        )  # the same factor for every row
        if not wide:  # bf16/fp16: each head's product added into the fp32 sum
            product = torch.bmm(col, u)
            if h == 0:
                out.copy_(product)
            else:
                out.add_(product)
        elif h == 0:
            torch.bmm(col, u, out=out)
        else:
            out.baddbmm_(col, u)  # columns, summed over the heads
    return out.view(-1, d), zs, us


def _separable_backward(grad, values, rows, cols, weight, zs, us):
    h_k, w_k, b, c = values.shape
    nh, h_q, w_q = rows.shape[0], rows.shape[1], cols.shape[1]
    d = weight.shape[0]
    x = values.reshape(-1, c)
    g = grad.contiguous().view(h_q, w_q, b * d)
    grad_x = torch.zeros_like(x)
    grad_w, grad_rows, grad_cols = (
        torch.empty_like(weight),
        torch.empty_like(rows),
        torch.empty_like(cols),
    )
    for h in range(nh):
        w_h = weight[:, h * c : (h + 1) * c]
        z, u = zs[h], us[h].view(h_q, w_k, b * d)
        grad_cols[h] = torch.bmm(g, u.transpose(1, 2)).sum(0)
        gu = torch.bmm(cols[h].t().expand(h_q, w_k, w_q).contiguous(), g).view(
            h_q, -1
        )  # (H, W_k·B·D)
        grad_rows[h] = gu @ z.t()
        gz = (rows[h].t() @ gu).view(-1, d)  # (H_k·W_k·B, D)
        grad_x.addmm_(gz, w_h)
        grad_w[:, h * c : (h + 1) * c] = gz.t() @ x
    return grad_x.view_as(values), grad_rows, grad_cols, grad_w


def separable_heads(
    values: torch.Tensor,
    rows: torch.Tensor,
    cols: torch.Tensor,
    weight: torch.Tensor,
    bias=None,
) -> torch.Tensor:
    """Eq. (4) for axis-aligned local heads without a value projection, merged:
    Σ_h (R_h ⊗ C_h) X W_out^hᵀ + b_out.

    ``values`` is the key grid ``(H_k, W_k, B, C)``, ``rows`` ``(N_h, H, H_k)`` and ``cols``
    ``(N_h, W, W_k)`` are the factors of :func:`separable_local_factors`, ``weight`` is W_out
    ``(D_out, N_h·C)``. Returns ``(H·W·B, D_out)`` (queries row-major, then images).

    The same products as applying the row and column factors to all heads and then W_out, in
    another order: each head's values are projected by its block of W_out first, its row and
    column factors are applied, and the head's result is added to the output at once, so the
    products of one head work on one head's tensors (a few MB) and no (N_h, T, B, C) tensor of all
    heads is assembled for the merge. The two intermediates of each head are kept for the backward
    pass, which goes through the heads the same way. Exact up to float rounding."""
    return _SeparableHeads.apply(values, rows, cols, weight, bias)
