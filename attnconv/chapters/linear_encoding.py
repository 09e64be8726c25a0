"""Chapter 4, "why three dimensions": the linear 2-d encoding cannot make a head one-hot.

Lemma 2 uses r_δ = (‖δ‖², δ_1, δ_2) (eq. 9). The obvious 2-dimensional candidate is the linear
encoding r_δ = (δ_1, δ_2): the position-only score of a head is then vᵀδ, linear in the shift.

On a set of shifts (a *window*) that is symmetric about the target Δ — every δ has its mirror
2Δ − δ in the window, as the keys around an interior query are — pair δ with its mirror:

    Σ_δ e^{vᵀ(δ − Δ)} = Σ_pairs (e^{a} + e^{−a}) (+ 1 for δ = Δ) ≥ T,

so the target's softmax mass e^{vᵀΔ} / Σ_δ e^{vᵀδ} is at most 1/T (T = number of shifts), with
equality only at v = 0 (the uniform map). A linear score is maximal on a vertex of the window's
convex hull, so a linear head can only concentrate on a *corner* shift (in the limit ‖v‖ → ∞).

More generally a position-only head can be made one-hot on Δ exactly when r_Δ is an extreme
point of {r_δ}; the quadratic features lie on a paraboloid, so every shift is one. Two dimensions
can achieve this on a finite window (:func:`circle_encoding_target_mass`), but only with a score
gap that shrinks with the window, not with one α for every image size. A non-polynomial 2-d
encoding does serve every image size with one α (:mod:`attnconv.chapters.low_dim_encodings`), which
refutes the paper's conjecture D_p ≥ 3 (Sec. 3) as stated.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple

import torch

from ..core.encodings import QuadraticEncoding
from .shared.plotting import COLUMN_INCHES

__all__ = [
    "window_shifts",
    "window_corners",
    "linear_encoding_attention",
    "linear_encoding_target_mass",
    "symmetric_mass_bound",
    "max_target_mass_linear",
    "grid_search_target_mass_linear",
    "linear_argmax",
    "best_linear_mass_map",
    "best_linear_mass_1d",
    "exact_linear_mass_map",
    "quadratic_encoding_attention",
    "quadratic_encoding_target_mass",
    "circle_encoding_target_mass",
    "plot_linear_against_quadratic",
]


def window_shifts(radius: int, center: Sequence[int] = (0, 0)) -> torch.Tensor:
    """The (2m+1)² integer shifts of the square window of radius m = ``radius`` centred on
    ``center``, row-major, as a ``(T, 2)`` long tensor."""
    if radius < 0:
        raise ValueError(f"radius must be >= 0, got {radius}")
    if len(center) != 2:
        raise ValueError("center must have two coordinates")
    axis = torch.arange(-radius, radius + 1)
    i, j = torch.meshgrid(axis + int(center[0]), axis + int(center[1]), indexing="ij")
    return torch.stack([i.reshape(-1), j.reshape(-1)], dim=-1)


def window_corners(window: torch.Tensor) -> torch.Tensor:
    """Boolean mask over ``window`` of its bounding box's 4 corners."""
    _check_window(window)
    lo, hi = window.min(0).values, window.max(0).values
    on_row = (window[:, 0] == lo[0]) | (window[:, 0] == hi[0])
    on_col = (window[:, 1] == lo[1]) | (window[:, 1] == hi[1])
    return on_row & on_col


def _check_window(window: torch.Tensor) -> None:
    if window.ndim != 2 or window.shape[1] != 2 or window.shape[0] == 0:
        raise ValueError(
            f"window must be a non-empty (T, 2) tensor of shifts, got shape {tuple(window.shape)}"
        )


def _target_index(window: torch.Tensor, target: Sequence[int]) -> int:
    _check_window(window)
    t = torch.as_tensor(target, dtype=window.dtype)
    if t.shape != (2,):
        raise ValueError("target must have two coordinates")
    hit = (window == t).all(-1).nonzero().flatten()
    if hit.numel() != 1:
        raise ValueError(
            f"target {tuple(t.tolist())} is not (exactly once) in the window"
        )
    return int(hit[0])


def linear_encoding_attention(v: torch.Tensor, window: torch.Tensor) -> torch.Tensor:
    """softmax over the window of the linear-encoding score vᵀδ (r_δ = δ); ``v`` is ``(..., 2)``,
    the result ``(..., T)``."""
    _check_window(window)
    v = torch.as_tensor(v)
    if v.shape[-1] != 2:
        raise ValueError(f"v must end in dimension 2, got shape {tuple(v.shape)}")
    if not v.is_floating_point():
        v = v.double()
    return torch.softmax(v @ window.to(v.dtype).T, dim=-1)


def linear_encoding_target_mass(
    v: torch.Tensor, window: torch.Tensor, target: Sequence[int]
) -> torch.Tensor:
    """The softmax mass a linear-encoding head with vector ``v`` puts on ``target``; shape ``v.shape[:-1]``.

    Computed as 1 / Σ_δ e^{vᵀ(δ − Δ)} (the form used in the pairing argument)."""
    idx = _target_index(window, target)
    v = torch.as_tensor(v)
    if v.shape[-1] != 2:
        raise ValueError(f"v must end in dimension 2, got shape {tuple(v.shape)}")
    if not v.is_floating_point():
        v = v.double()
    rel = (window - window[idx]).to(v.dtype)
    return torch.exp(-torch.logsumexp(v @ rel.T, dim=-1))


def symmetric_mass_bound(window: torch.Tensor, target: Sequence[int]) -> float:
    """1/T, the largest mass a linear-encoding head can put on ``target`` when the window is
    symmetric about it (δ in the window ⇔ 2Δ − δ in the window). Raises ``ValueError`` if not."""
    idx = _target_index(window, target)
    mirrored = 2 * window[idx] - window
    if set(map(tuple, mirrored.tolist())) != set(map(tuple, window.tolist())):
        raise ValueError(
            f"the window is not symmetric about {tuple(window[idx].tolist())}; the 1/T bound does not apply"
        )
    return 1.0 / window.shape[0]


def _gradient_ascent(rel: torch.Tensor, v: torch.Tensor, steps: int) -> torch.Tensor:
    """Gradient ascent on log p_target(v) = −logsumexp_δ vᵀ(δ − Δ), batched: ``rel`` is
    ``(N, T, 2)`` (shifts relative to N targets), ``v`` is ``(N, S, 2)`` (S starts per target).
    The step is 1/L with L = max_δ ‖δ − Δ‖², which bounds the Hessian of the log-sum-exp."""
    lipschitz = (rel**2).sum(-1).amax(-1).clamp_min(1.0)[:, None, None]
    for _ in range(steps):
        p = torch.softmax(v @ rel.transpose(-1, -2), dim=-1)  # (N, S, T)
        v = v - (p @ rel) / lipschitz  # ∇ log p_target = −E_p[δ − Δ]
    return v


def max_target_mass_linear(
    window: torch.Tensor,
    target: Sequence[int],
    starts: int = 64,
    steps: int = 2000,
    init_scale: float = 5.0,
    generator: Optional[torch.Generator] = None,
) -> Tuple[float, torch.Tensor]:
    """Maximise the target's mass over v by gradient ascent on log p_target(v) (a concave function:
    minus a log-sum-exp of linear functions), from ``starts`` random v ~ N(0, init_scale²), in
    float64 with step 1/L, L = max_δ ‖δ − Δ‖² (a bound on the Hessian). Returns the best mass and
    its v."""
    idx = _target_index(window, target)
    if starts < 1 or steps < 0:
        raise ValueError("starts must be >= 1 and steps >= 0")
    rel = (window - window[idx]).double()
    v0 = (
        torch.randn(1, starts, 2, generator=generator, dtype=torch.float64) * init_scale
    )
    v = _gradient_ascent(rel[None], v0, steps)[0]
    mass = linear_encoding_target_mass(v, window, target)
    best = int(mass.argmax())
    return float(mass[best]), v[best]


def grid_search_target_mass_linear(
    window: torch.Tensor, target: Sequence[int], limit: float = 10.0, points: int = 401
) -> Tuple[float, torch.Tensor]:
    """Best target mass over v on the grid [−limit, limit]² with ``points`` (odd, so v = 0 is on it)
    values per axis. Returns the best mass and its v."""
    _target_index(window, target)
    if points < 1 or points % 2 == 0:
        raise ValueError(
            "points must be a positive odd integer (so that v = 0 is on the grid)"
        )
    if limit <= 0:
        raise ValueError("limit must be > 0")
    half = points // 2
    axis = torch.arange(-half, half + 1, dtype=torch.float64) * (
        limit / max(half, 1)
    )  # 0 exactly
    a, b = torch.meshgrid(axis, axis, indexing="ij")
    v = torch.stack([a.reshape(-1), b.reshape(-1)], dim=-1)
    mass = linear_encoding_target_mass(v, window, target)
    best = int(mass.argmax())
    return float(mass[best]), v[best]


def linear_argmax(v: torch.Tensor, window: torch.Tensor) -> torch.Tensor:
    """Index into ``window`` of the shift with the largest linear score vᵀδ, for each row of ``v``."""
    _check_window(window)
    v = torch.as_tensor(v)
    if v.shape[-1] != 2:
        raise ValueError(f"v must end in dimension 2, got shape {tuple(v.shape)}")
    return (v.double() @ window.double().T).argmax(dim=-1)


def best_linear_mass_map(
    radius: int,
    steps: int = 2000,
    starts: int = 8,
    init_scale: float = 5.0,
    generator: Optional[torch.Generator] = None,
) -> torch.Tensor:
    """For every target Δ of the window of radius m around 0, the best mass a linear-encoding head
    reaches on Δ by the gradient ascent of :func:`max_target_mass_linear` (all targets at once): a
    ``(2m+1, 2m+1)`` map. The centre stays at 1/T; on the corners the supremum 1 is approached only
    as ‖v‖ → ∞, so a finite number of steps gets close to, not onto, 1."""
    window = window_shifts(radius).double()
    if starts < 1 or steps < 0:
        raise ValueError("starts must be >= 1 and steps >= 0")
    rel = window[None, :, :] - window[:, None, :]  # (T targets, T shifts, 2)
    v0 = (
        torch.randn(
            window.shape[0], starts, 2, generator=generator, dtype=torch.float64
        )
        * init_scale
    )
    v = _gradient_ascent(rel, v0, steps)
    mass = torch.exp(-torch.logsumexp(v @ rel.transpose(-1, -2), dim=-1))  # (T, S)
    return mass.amax(-1).view(2 * radius + 1, 2 * radius + 1)


def best_linear_mass_1d(radius: int) -> torch.Tensor:
    """The supremum over v ∈ ℝ of a 1-D linear head's mass e^{vt} / Σ_k e^{vk} on each target
    t = −m, …, m of the window {−m, …, m} (m = ``radius``): ``(2m + 1,)`` float64.

    log p_t(v) = vt − log Σ_k e^{vk} is strictly concave, with derivative t − E_v[k], where E_v is
    the mean of the tilted distribution p_v; E_v[k] rises strictly from −m to m as v runs over ℝ.
    So for an interior target the maximum is attained at the unique v with E_v[k] = t (found here
    by bisection to machine precision); for the ends t = ±m, E_v[k] never reaches t and the mass
    rises to its supremum 1 only as v → ±∞. The centre gets 1/(2m + 1), at v = 0 (symmetry)."""
    if radius < 0:
        raise ValueError("radius must be >= 0")
    k = torch.arange(-radius, radius + 1, dtype=torch.float64)
    best = torch.ones_like(k)  # the ends: supremum 1, approached as |v| → ∞
    for i, t in enumerate(k.tolist()):
        if abs(t) == radius:
            continue
        lo, hi = -1.0, 1.0
        while float((torch.softmax(lo * k, 0) * k).sum()) > t:
            lo *= 2
        while float((torch.softmax(hi * k, 0) * k).sum()) < t:
            hi *= 2
        for _ in range(200):  # bisection on the (increasing) tilted mean
            mid = 0.5 * (lo + hi)
            if mid in (lo, hi):
                break
            if float((torch.softmax(mid * k, 0) * k).sum()) < t:
                lo = mid
            else:
                hi = mid
        best[i] = torch.softmax(0.5 * (lo + hi) * k, 0)[i]
    return best


def exact_linear_mass_map(radius: int) -> torch.Tensor:
    """The supremum of the mass a linear-encoding head puts on each target Δ of the square window
    {−m, …, m}² (m = ``radius``): a ``(2m + 1, 2m + 1)`` float64 map, rows and columns indexed
    by the shift's two coordinates from −m.

    The linear score vᵀδ = v₁δ₁ + v₂δ₂ separates, so the softmax over the square window is the
    product of two 1-D softmaxes, p(δ) = p₁(δ₁) p₂(δ₂), with v₁ and v₂ free: the best mass on Δ is
    the product of the 1-D best masses (:func:`best_linear_mass_1d`) of its two coordinates. The
    corners get exactly 1, a supremum reached only as ‖v‖ → ∞ (a finite optimiser only approaches
    it, by a different amount on each corner); mid-edges 1/(2m + 1); the centre 1/(2m + 1)².
    :func:`best_linear_mass_map` is the independent check, by gradient ascent in two dimensions."""
    b = best_linear_mass_1d(radius)
    return b[:, None] * b[None, :]


def quadratic_encoding_attention(
    alpha: float,
    window: torch.Tensor,
    target: Sequence[int],
    dtype: torch.dtype = torch.float64,
) -> torch.Tensor:
    """softmax over the window of a quadratic head (eq. 9) of width α centred on ``target``: ``(T,)``."""
    _target_index(window, target)
    if alpha <= 0:
        raise ValueError("alpha must be > 0")
    enc = QuadraticEncoding(1, 2, centers=[list(target)], alpha=alpha).to(dtype)
    with torch.no_grad():
        enc.alpha.fill_(
            float(alpha)
        )  # built in the default dtype: restore α exactly in ``dtype``
        return torch.softmax(enc.position_scores(window)[0], dim=-1)


def quadratic_encoding_target_mass(
    alpha: float,
    window: torch.Tensor,
    target: Sequence[int],
    dtype: torch.dtype = torch.float64,
) -> Tuple[float, float]:
    """(target mass, off-target mass) of a quadratic head of width α on ``target``; the off-target
    mass is summed directly, not computed as 1 − target."""
    idx = _target_index(window, target)
    p = quadratic_encoding_attention(alpha, window, target, dtype)
    mask = torch.ones_like(p, dtype=torch.bool)
    mask[idx] = False
    return float(p[idx]), float(p[mask].sum())


def circle_encoding_target_mass(
    window: torch.Tensor, target: Sequence[int], norm: float
) -> float:
    """A 2-dimensional encoding that *can* concentrate on a finite window: r_δ = (cos θ_i, sin θ_i)
    with θ_i = 2πi/T for the i-th shift (every r_δ an extreme point). With v = norm · r_Δ the
    target's score beats every other by at least norm · (1 − cos 2π/T); returns its mass."""
    idx = _target_index(window, target)
    if norm < 0:
        raise ValueError("norm must be >= 0")
    t = window.shape[0]
    theta = 2 * math.pi * torch.arange(t, dtype=torch.float64) / t
    r = torch.stack([theta.cos(), theta.sin()], dim=-1)
    scores = norm * (r @ r[idx])
    return float(torch.exp(scores[idx] - torch.logsumexp(scores, dim=0)))


def plot_linear_against_quadratic(
    window: torch.Tensor,
    target: Sequence[int],
    v_best: torch.Tensor,
    alpha: float,
    v_corner: torch.Tensor,
    best_map: torch.Tensor,
):
    """Chapter 4's figure of a 5×5 ``window`` of shifts: the linear head with the best ``v`` for
    the ``target`` (``v_best``, uniform), the quadratic head of width ``alpha`` (one-hot on the
    target), the linear head ``v_corner`` (one-hot on a corner), and the best mass a linear head
    reaches on each target of the window (``best_map``, from :func:`exact_linear_mass_map`; its
    corners are suprema, reached only as ‖v‖ → ∞)."""
    import matplotlib.pyplot as plt

    side = round(window.shape[0] ** 0.5)
    scale = float(v_corner.abs().max())
    direction = ", ".join(
        f"{round(float(c) / scale):d}".replace("-", "−") for c in v_corner
    )
    panels = [
        (
            linear_encoding_attention(v_best, window),
            f"linear, best $\\mathbf{{v}}$ for Δ = {tuple(target)}\n"
            f"(uniform: {100 / window.shape[0]:.0f} % on every shift)",
        ),
        (
            quadratic_encoding_attention(alpha, window, target),
            f"quadratic, α = {alpha:.1f}\n(one-hot on Δ)",
        ),
        (
            linear_encoding_attention(v_corner, window),
            f"linear, $\\mathbf{{v}}$ = {scale:g}·({direction})\n(one-hot on the corner)",
        ),
    ]
    # two rows of two: in one row of four the titles ran into each other and the numbers of the
    # last panel filled its cells
    fig, axes = plt.subplots(
        2, 2, figsize=(COLUMN_INCHES * 0.85, 5.6), layout="constrained"
    )
    axes = axes.flatten()
    radius = side // 2
    cells = [(i, j) for i in range(side) for j in range(side)]

    def label_cells(ax, percents):  # whole percents: 1/5 and 1/25 read as 20 and 4
        for (i, j), val in zip(cells, percents.flatten().tolist()):
            colour = "w" if val > 60 else "k"
            ax.text(
                j, i, f"{val:.0f}", ha="center", va="center", fontsize=8.5, color=colour
            )

    # one colour map for every panel, percent of the attention; the uniform head would be a
    # blank panel at 4 %, so its cells carry their numbers, as the last panel's do
    for ax, (p, title) in zip(axes, panels):
        im = ax.imshow(100 * p.view(side, side).numpy(), cmap="Blues", vmin=0, vmax=100)
        ax.set_title(title, fontsize=8.5)
    label_cells(axes[0], 100 * panels[0][0].view(side, side))
    best_pct = 100 * best_map
    axes[3].imshow(best_pct.numpy(), cmap="Blues", vmin=0, vmax=100)
    label_cells(axes[3], best_pct)
    for ax in (axes[0], axes[1]):  # the target, in red as the query of ch. 4's figures
        ax.add_patch(
            plt.Rectangle(
                (radius - 0.5, radius - 0.5),  # the window is centred on the target
                1, 1, fill=False, ec="red", lw=1.5,
            )
        )  # fmt: skip
    axes[3].set_title(
        "linear: best mass (%) on each target\n(corners: only as ‖v‖ → ∞)", fontsize=8.5
    )
    cbar = fig.colorbar(im, ax=axes, shrink=0.6, label="attention (%)")
    cbar.ax.tick_params(labelsize=8.5)
    ticks = [str(d) for d in range(-radius, radius + 1)]
    for ax in axes:
        ax.set_xticks(range(side), ticks, fontsize=8.5)
        ax.set_yticks(range(side), ticks, fontsize=8.5)
    fig.suptitle(
        f"attention over a {side}×{side} window of shifts (offsets from the window's centre)",
        fontsize=9,
    )
    return fig
