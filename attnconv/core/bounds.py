"""How large must the width α of a quadratic head be for its softmax to be one-hot? (Lemma 2)

For a head centred on a lattice point Δ, the keys other than Δ get relative weight
e^{−α‖z‖²}, z ∈ Z^d \\ {0} (on a finite, possibly padded grid, a subset of these). Their total is
at most

    S(α) = θ(e^{−α})^d − 1,   θ(q) = Σ_{n∈Z} q^{n²} = 1 + 2q + 2q⁴ + 2q⁹ + …

so the off-target mass is ε = S/(1+S) ≤ S ≈ 2d·e^{−α}. Once S(α) is below the unit round-off u of
a floating-point type, the target's probability 1/(1+S) rounds to 1 and every other probability is
below u: the softmax is one-hot to within that dtype's precision, whatever the image size.
"""

from __future__ import annotations

import math

import torch

__all__ = ["off_target_mass_bound", "one_hot_alpha", "unit_roundoff"]


def unit_roundoff(dtype: torch.dtype) -> float:
    """u = eps / 2 of a floating-point dtype (2^-24 for float32, 2^-53 for float64)."""
    if not dtype.is_floating_point:
        raise ValueError(f"{dtype} is not a floating-point dtype")
    return torch.finfo(dtype).eps / 2


def off_target_mass_bound(alpha: float, spatial_dims: int = 2) -> float:
    """S(α) = θ(e^{−α})^d − 1: an upper bound on the attention mass a quadratic head (eq. 9)
    of width α puts outside its centre, on any grid (see the module docstring)."""
    # region plumbing: checks alpha > 0, spatial_dims ≥ 1
    if alpha <= 0:
        raise ValueError("alpha must be > 0")
    if spatial_dims < 1:
        raise ValueError("spatial_dims must be >= 1")
    # endregion
    # θ(q) − 1 = 2 Σ_{n≥1} q^{n²} with q = e^{−α}, summed until the terms vanish
    tail, n = 0.0, 1
    while True:
        term = math.exp(-alpha * n * n)
        tail += 2 * term
        if term < 1e-300 or term < tail * 1e-18:
            break
        n += 1
    # S(α) = θ(e^{−α})^d − 1 = (1 + tail)^d − 1, without cancellation
    return math.expm1(spatial_dims * math.log1p(tail))


def one_hot_alpha(dtype: torch.dtype = torch.float32, spatial_dims: int = 2) -> float:
    """The smallest α with :func:`off_target_mass_bound` (α) ≤ unit round-off of ``dtype``.

    About 18.0 for float32 and 38.1 for float64 in 2D (17.3 and 37.4 in 1D). A quadratic head with
    at least this α is one-hot to within the dtype's precision (Lemma 2), which is what
    :func:`attnconv.conv_to_mhsa` uses by default. The value is rounded up to the nearest float32
    number, so it keeps its guarantee when stored in float32.
    """
    u = unit_roundoff(dtype)  # 2^-24 for float32, 2^-53 for float64
    lo, hi = 1e-3, 1.0
    while off_target_mass_bound(hi, spatial_dims) > u:  # double hi until S(hi) ≤ u
        hi *= 2
    for _ in range(200):  # bisection on S(α) = u (S falls as α grows)
        mid = 0.5 * (lo + hi)
        if off_target_mass_bound(mid, spatial_dims) > u:
            lo = mid
        else:
            hi = mid
    # region plumbing: returns hi rounded up to a float32
    single = torch.tensor(hi, dtype=torch.float32)
    if single.item() < hi:
        single = torch.nextafter(single, torch.tensor(math.inf))
    return single.item()
    # endregion
