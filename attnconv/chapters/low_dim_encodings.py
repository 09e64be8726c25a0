"""Two positional dimensions suffice in 2D: a counterexample to the paper's D_p ≥ 3 conjecture.

Chapter 4 ("Lemma 2 and Theorem 1"), section "Two dimensions suffice". The paper (arXiv v1, Sec. 3,
after eq. 9) writes: "Though we lack a formal proof, we conjecture that every encoding that
satisfies Lemma 1 should have at least three dimensions."

Take an injective map ι: Z² → Z (:func:`shift_index`, a pairing of the two coordinates of a
shift) and apply the paper's own 1D quadratic encoding (Sec. 3, "Remark for the 1D case") to
ι(δ):

    r_δ = (ι(δ)², ι(δ)),      v = −α (1, −2 ι(Δ)),
    vᵀ r_δ = −α (ι(δ) − ι(Δ))² + α ι(Δ)².

Distinct shifts have distinct integers ι(δ), so every key other than the target q + Δ scores at
least α below it, on every image size, and the off-target softmax weight is at most
Σ_{m ≠ 0} e^{−α m²} = θ(e^{−α}) − 1, the 1D bound of Lemma 2. So D_p = 2 satisfies Lemma 1's
condition in the same α → ∞ sense as eq. (9).

D_p = 1 cannot: with a scalar r_δ the score v·r_δ is monotone in r_δ, so over any set of keys it
is largest at the key of largest r_δ (v > 0) or of smallest r_δ (v < 0) — at most two of the
K² shifts a query sees can be singled out (:func:`scalar_encoding_reachable_targets`).

ι folds the signs, so this r_δ is not a polynomial in δ. A polynomial one exists too
(:func:`polynomial_shift_index`): p(a) = 2a² + a is injective Z → N (it is the triangular number
of the zig-zag code), the Cantor pairing π(x, y) = (x + y)(x + y + 1)/2 + y is injective on N², so
ι′(δ) = π(p(δ_1), p(δ_2)) is a polynomial of degree 4 in δ, injective on Z², and r_δ = (ι′², ι′)
is a polynomial D_p = 2 encoding (degree 8) with the same gap ≥ α on every image. What stays open
is the conjecture under the criterion of eq. (9) itself: a D_p = 2 encoding whose coordinates are
polynomials of degree ≤ 2 in δ and whose score gap is at least α on every image size.
"""

from __future__ import annotations

import copy
from typing import Callable, Dict, Optional, Sequence, Tuple

import torch

from ..core.conv import conv_to_mhsa
from ..core.encodings import RelativeEncoding, kernel_shifts
from ..core.grid import relative_shifts

__all__ = [
    "plot_paired_encoding",
    "zigzag",
    "cantor_pairing",
    "shift_index",
    "polynomial_code",
    "polynomial_shift_index",
    "degree_on_lines",
    "PairedQuadraticEncoding",
    "paired_encoding_features",
    "paired_encoding_v",
    "paired_scores_check",
    "paired_scores_on_sizes",
    "conv_to_paired_mhsa",
    "paired_conversion_error",
    "scalar_encoding_reachable_targets",
]


def zigzag(a: torch.Tensor) -> torch.Tensor:
    """The injection Z → N: 0, −1, 1, −2, 2, … ↦ 0, 1, 2, 3, 4, … (2a for a ≥ 0, −2a − 1 for a < 0)."""
    a = torch.as_tensor(a).long()
    return torch.where(a >= 0, 2 * a, -2 * a - 1)


def shift_index(delta: torch.Tensor) -> torch.Tensor:
    """ι: Z² → Z, injective: the Cantor pairing of the zig-zag codes of the two coordinates of
    ``delta`` ``(..., 2)``, ι(δ) = (x + y)(x + y + 1)/2 + y with x, y = zigzag(δ_1), zigzag(δ_2).
    Returns a ``(...)`` long tensor (exact integers)."""
    delta = _shifts(delta)
    return cantor_pairing(zigzag(delta[..., 0]), zigzag(delta[..., 1]))


def _shifts(delta) -> torch.Tensor:
    delta = torch.as_tensor(delta)
    if delta.shape[-1] != 2:
        raise ValueError("a shift index needs 2-d shifts (..., 2)")
    return delta.long()


def cantor_pairing(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """π(x, y) = (x + y)(x + y + 1)/2 + y, a bijection N² → N and a polynomial of degree 2 (exact,
    long)."""
    s = torch.as_tensor(x).long() + torch.as_tensor(y).long()
    return s * (s + 1) // 2 + torch.as_tensor(y).long()


def polynomial_code(a: torch.Tensor) -> torch.Tensor:
    """p(a) = 2a² + a, an injection Z → N that is a polynomial: 0, −1, 1, −2, 2, … ↦ 0, 1, 3, 6, 10, …
    (the triangular number of :func:`zigzag`'s code; exact, long)."""
    a = torch.as_tensor(a).long()
    return 2 * a * a + a


def polynomial_shift_index(delta: torch.Tensor) -> torch.Tensor:
    """ι′: Z² → N, injective and a polynomial of degree 4 in δ: the Cantor pairing of the
    :func:`polynomial_code` of the two coordinates of ``delta`` ``(..., 2)``,
    ι′(δ) = π(p(δ_1), p(δ_2)). Returns a ``(...)`` long tensor (exact integers)."""
    delta = _shifts(delta)
    return cantor_pairing(
        polynomial_code(delta[..., 0]), polynomial_code(delta[..., 1])
    )


def degree_on_lines(
    index: "ShiftIndex",
    radius: int = 8,
    max_degree: int = 10,
    directions: Sequence[Sequence[int]] = ((1, 0), (0, 1), (1, 1), (1, -1), (1, 2)),
) -> Optional[int]:
    """The degree of ``index`` as a polynomial, read from exact finite differences: the smallest d
    such that, along every line t ↦ δ + t·u through the box [−radius, radius]² in every direction
    u of ``directions`` (over 2·radius + max_degree + 2 integer steps), the (d + 1)-th differences
    are all 0. ``None`` if no d ≤ ``max_degree`` does (not a polynomial of that degree on the
    box: e.g. :func:`shift_index`, which folds signs)."""
    r = torch.arange(-radius, radius + 1)
    base = torch.stack(torch.meshgrid(r, r, indexing="ij"), -1).reshape(-1, 1, 2)
    t = torch.arange(2 * radius + max_degree + 2).view(1, -1, 1)
    for d in range(max_degree + 1):
        if all(
            bool(
                (
                    torch.diff(index(base + t * torch.tensor(list(u))), n=d + 1, dim=-1)
                    == 0
                ).all()
            )
            for u in directions
        ):
            return d
    return None


#: An injection Z² → Z applied to a ``(..., 2)`` tensor of shifts.
ShiftIndex = Callable[[torch.Tensor], torch.Tensor]


def paired_encoding_features(
    delta: torch.Tensor, index: ShiftIndex = shift_index
) -> torch.Tensor:
    """r_δ = (ι(δ)², ι(δ)) ∈ Z², D_p = 2 (exact, long), for the injection ``index`` ι
    (:func:`shift_index`, or :func:`polynomial_shift_index` for a polynomial encoding)."""
    n = index(delta)
    return torch.stack([n * n, n], dim=-1)


def paired_encoding_v(
    target: Sequence[int], alpha: int = 1, index: ShiftIndex = shift_index
) -> torch.Tensor:
    """v = −α (1, −2 ι(Δ)) for the head centred on ``target`` Δ (exact, long; ``alpha`` an integer)."""
    n = int(index(torch.tensor(list(target))))
    return -int(alpha) * torch.tensor([1, -2 * n])


class PairedQuadraticEncoding(RelativeEncoding):
    """A D_p = 2 relative encoding for 2-d images: r_δ = (ι(δ)², ι(δ)), v_h = −α (1, −2 ι(Δ_h))
    with ι = ``index`` (:func:`shift_index` by default, :func:`polynomial_shift_index` for the
    polynomial encoding). :meth:`position_scores` returns the centred form
    −α (ι(δ) − ι(Δ_h))², which differs from v_hᵀ r_δ by the per-head constant α ι(Δ_h)²."""

    def __init__(self, centers, alpha: float, index: ShiftIndex = shift_index):
        super().__init__()
        self.index = index
        c = torch.as_tensor(centers).long()
        if c.ndim != 2 or c.shape[1] != 2:
            raise ValueError("centers must be a (N_h, 2) integer tensor")
        self.num_heads, self.spatial_dims, self.dim = c.shape[0], 2, 2
        self.register_buffer("centers", c)
        self.alpha = float(alpha)

    def features(self, delta: torch.Tensor) -> torch.Tensor:
        self._check_delta(delta)
        return paired_encoding_features(delta, self.index).to(torch.get_default_dtype())

    def _position_scores(self, delta: torch.Tensor) -> torch.Tensor:
        self._check_delta(delta)
        diff = self.index(delta).unsqueeze(0) - self.index(self.centers).view(
            -1, *([1] * (delta.ndim - 1))
        )
        return -self.alpha * diff.to(torch.float64) ** 2


def paired_scores_check(
    shape: Sequence[int],
    padding: int = 1,
    kernel_size: int = 3,
    alpha: int = 1,
    index: ShiftIndex = shift_index,
) -> Dict[str, object]:
    """For every query of a ``shape`` image whose keys are the image zero-padded by ``padding``,
    and every head Δ of a ``kernel_size``² kernel, the exact integer scores v_Δᵀ r_δ over all keys
    (the literal inner product, no closed form). Returns ``argmax_is_target`` (the unique maximum
    is the key q + Δ, for every query and head), ``min_gap`` (the smallest difference between the
    target's score and any other key's, over all queries and heads; ≥ ``alpha`` is the claim),
    and the same two for the ``corner`` query (0, 0) and the ``interior`` query at the centre.
    ``index``: the injection ι of the encoding (:func:`shift_index` or :func:`polynomial_shift_index`)."""
    delta = relative_shifts(tuple(shape), padding).long()  # (T_q, T_k, 2), δ = k − q
    feats = paired_encoding_features(delta, index)  # (T_q, T_k, 2)
    out: Dict[str, object] = {}
    h, w = int(shape[0]), int(shape[1])
    picks = {"all": slice(None), "corner": [0], "interior": [(h // 2) * w + w // 2]}
    for name, rows in picks.items():
        ok, gap = True, None
        for target in kernel_shifts(kernel_size).tolist():
            scores = feats[rows] @ paired_encoding_v(
                target, alpha, index
            )  # (Q, T_k), exact
            hit = (delta[rows] == torch.tensor(target)).all(-1)  # the key q + Δ
            if not bool((hit.sum(-1) == 1).all()):
                raise ValueError(
                    f"the target q + {target} is not a key for every query; increase padding"
                )
            best = scores.max(-1)
            on_target = hit.gather(-1, best.indices[:, None]).squeeze(-1)
            others = (
                scores.masked_fill(hit, torch.iinfo(scores.dtype).min).max(-1).values
            )
            g = int((best.values - others).min())
            ok = (
                ok
                and bool(on_target.all())
                and bool((scores.eq(best.values[:, None]).sum(-1) == 1).all())
            )
            gap = g if gap is None else min(gap, g)
        out[f"{name}_argmax_is_target" if name != "all" else "argmax_is_target"] = ok
        out[f"{name}_min_gap" if name != "all" else "min_gap"] = gap
    return out


def paired_scores_on_sizes(
    sizes: Sequence[Sequence[int]],
    padding: int = 1,
    alpha: int = 1,
    index: ShiftIndex = shift_index,
) -> Tuple[bool, int]:
    """:func:`paired_scores_check` on images of every size in ``sizes``: whether the unique
    argmax is the key q + Δ for every query and head (and for the corner and centre queries)
    on all of them, and the smallest gap to the runner-up over all of them."""
    found = [
        paired_scores_check(size, padding=padding, alpha=alpha, index=index)
        for size in sizes
    ]
    ok = all(
        c["argmax_is_target"]
        and c["corner_argmax_is_target"]
        and c["interior_argmax_is_target"]
        for c in found
    )
    return ok, min(c["min_gap"] for c in found)


def conv_to_paired_mhsa(
    conv: torch.nn.Conv2d,
    alpha: Optional[float] = None,
    index: ShiftIndex = shift_index,
) -> torch.nn.Module:
    """Theorem 1 with D_p = 2: :func:`~attnconv.core.conv.conv_to_mhsa` (same heads, value and
    output weights, keys on the zero-padded image) with the quadratic encoding replaced by
    :class:`PairedQuadraticEncoding` (injection ``index``). Default ``alpha``: the 1D ``one_hot_alpha``
    of the convolution's dtype, since the off-target weight is bounded by the 1D sum θ(e^{−α}) − 1."""
    from ..core.bounds import one_hot_alpha

    mhsa = conv_to_mhsa(conv)
    if alpha is None:
        alpha = one_hot_alpha(conv.weight.dtype, spatial_dims=1)
    k = conv.kernel_size[0]
    mhsa.encoding = PairedQuadraticEncoding(kernel_shifts(k), alpha, index).to(
        conv.weight.device
    )
    return mhsa


def paired_conversion_error(
    conv: torch.nn.Conv2d,
    dtype: torch.dtype,
    sizes: Sequence[Sequence[int]],
    index: ShiftIndex = shift_index,
    alpha: Optional[float] = None,
    batch: int = 2,
) -> float:
    """Theorem 1 with D_p = 2, measured: the largest relative error
    max|MHSA(x) − conv(x)| / max|conv(x)| of :func:`conv_to_paired_mhsa` against the
    convolution, both in ``dtype``, over one random batch per image size in ``sizes`` (drawn in
    float64, seeded by the size's first side, then cast to ``dtype``)."""
    conv = copy.deepcopy(conv).to(dtype)
    layer = conv_to_paired_mhsa(conv, alpha=alpha, index=index)
    errors = []
    for size in sizes:
        x = torch.randn(
            batch,
            conv.in_channels,
            *size,
            generator=torch.Generator().manual_seed(int(size[0])),
            dtype=torch.float64,
        ).to(dtype)
        with torch.no_grad():
            y, ref = layer(x), conv(x)
        errors.append(float((y - ref).abs().max() / ref.abs().max()))
    return max(errors)


def scalar_encoding_reachable_targets(
    values: torch.Tensor, directions: torch.Tensor
) -> torch.Tensor:
    """D_p = 1: for a scalar encoding (``values`` r_δ, one per key) and scalars v (``directions``),
    the set of keys that are the argmax of v·r_δ for some v. It is always within
    {argmin r, argmax r} (plus ties): returns the sorted unique key indices reached."""
    scores = directions[:, None] * values[None, :]
    return torch.unique(scores.argmax(-1))


def plot_paired_encoding(ax=None, radius: int = 2, target=(1, -1)):
    """Why two dimensions suffice (the book's refutation of the conjecture D_p ≥ 3): the shifts
    δ of a (2·radius+1)² window placed at r_δ = (ι(δ), ι(δ)²) lie on a parabola, so each is an
    extreme point; for the ``target`` Δ the score v·r_δ with v = (2ι(Δ), −1) is
    −(ι(δ) − ι(Δ))² + ι(Δ)², highest on Δ alone, with a gap of at least 1 (the tangent line)."""
    import matplotlib.pyplot as plt

    r = torch.arange(-radius, radius + 1)
    shifts = torch.stack(torch.meshgrid(r, r, indexing="ij"), -1).reshape(-1, 2)
    iota = shift_index(shifts).double()
    t = float(shift_index(torch.tensor(target)))
    if ax is None:
        _, ax = plt.subplots(figsize=(3.6, 3.0))
    ax.plot(iota, iota**2, "o", color="0.45", ms=4, label="a shift δ")
    ax.plot(
        [t], [t**2], "o", color="#d62728", ms=7, label=f"target Δ = {tuple(target)}"
    )
    xs = torch.linspace(float(iota.min()), float(iota.max()), 50)
    ax.plot(
        xs, 2 * t * xs - t**2, "--", color="#d62728", lw=1, label="score level of Δ"
    )
    ax.set_xlabel("ι(δ)")
    ax.set_ylabel("ι(δ)²")
    ax.legend(frameon=False, loc="upper left")
    return ax.figure
