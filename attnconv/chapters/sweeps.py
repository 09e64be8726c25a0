"""Measurements behind Lemma 1, Lemma 2 and Theorem 1 (chapters 3 and 4).

Each function is one experiment on top of :func:`attnconv.conv_to_mhsa`, compared with an
independent oracle (``torch.nn.functional.conv2d`` / ``conv1d``, a truncated SVD, a closed form):

* :func:`conversion_errors` — random convolutions converted into attention layers (Theorem 1);
* :func:`unpadded_mhsa`, :func:`pixel_errors`, :func:`border_mask` — what goes wrong at the border
  when the keys are not zero-padded;
* :func:`attention_is_one_hot_on_shifts` — Lemma 1's heads attend to exactly one key, q + Δ_h;
* :func:`effective_kernel`, :func:`predicted_rank_error`, :func:`rank_sweep` — the remark on
  D_h < D_out: each shift's matrix W_out^h W_val^h has rank ≤ D_h (Eckart–Young);
* :func:`alpha_sweep`, :func:`smallest_exact_alpha`, :func:`head_off_target_mass` — Lemma 2: how the
  error falls with the width α of the quadratic encoding (eq. 9);
* :func:`plot_off_target_mass`, :func:`plot_alpha_sweep` — chapter 4's figures of the last two.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from ..core.attention import MultiHeadSelfAttention, MultiHeadSelfAttention2d
from ..core.bounds import off_target_mass_bound, one_hot_alpha, unit_roundoff
from ..core.conv import check_supported_conv, conv1d_to_mhsa, conv_to_mhsa
from ..core.encodings import HardShiftEncoding, QuadraticEncoding
from ..core.grid import relative_shifts
from ..core.metrics import max_relative_error, relative_frobenius_error
from .shared.plotting import COLUMN_INCHES, DTYPE_COLOURS

__all__ = [
    "ConvCase",
    "STANDARD_CASES",
    "random_conv",
    "reference_conv",
    "conversion_error",
    "conversion_errors",
    "unpadded_mhsa",
    "pixel_errors",
    "border_mask",
    "attention_is_one_hot_on_shifts",
    "effective_kernel",
    "relative_kernel_error",
    "predicted_rank_error",
    "rank_sweep",
    "alpha_sweep",
    "hard_error",
    "smallest_exact_alpha",
    "head_off_target_mass",
    "plot_off_target_mass",
    "plot_alpha_sweep",
    "plot_padding_errors",
    "plot_rank_sweep",
]

#: float32 against float64 in chapter 4's figures (plotting.DTYPE_COLOURS), with a marker each
#: where a curve is drawn, so that they differ without colour too
_DTYPE_COLOURS = tuple(
    (dt, DTYPE_COLOURS[str(dt)[6:]]) for dt in (torch.float32, torch.float64)
)
_DTYPE_MARKERS = {torch.float32: "o", torch.float64: "s"}


# --------------------------------------------------------------------------- random convolutions
@dataclass(frozen=True)
class ConvCase:
    """One convolution setting of Theorem 1: kernel K, channels D_in → D_out, input (B, D_in, *shape)."""

    kernel_size: int
    in_channels: int
    out_channels: int
    shape: Tuple[int, ...]
    batch: int = 1
    bias: bool = True

    @property
    def label(self) -> str:
        grid = "×".join(str(s) for s in self.shape)
        return (
            f"K={self.kernel_size} D_in={self.in_channels} D_out={self.out_channels} "
            f"batch={self.batch} grid={grid} bias={'yes' if self.bias else 'no'}"
        )


#: The settings both chapters convert: K = 1, 3, 5; D_in ≠ D_out both ways; square and non-square
#: images; batch 1 and > 1; with and without bias; small images where the border dominates.
STANDARD_CASES: Tuple[ConvCase, ...] = (
    ConvCase(1, 3, 5, (6, 6), 2, True),
    ConvCase(1, 6, 2, (5, 9), 1, False),
    ConvCase(3, 4, 6, (7, 11), 2, True),
    ConvCase(3, 6, 4, (9, 9), 3, False),
    ConvCase(3, 5, 5, (4, 13), 1, True),
    ConvCase(5, 3, 7, (8, 6), 2, True),
    ConvCase(5, 8, 3, (5, 12), 2, False),
)


def random_conv(
    kernel_size: int,
    in_channels: int,
    out_channels: int,
    bias: bool = True,
    spatial_dims: int = 2,
    dtype: torch.dtype = torch.float64,
    generator: Optional[torch.Generator] = None,
) -> nn.Module:
    """An ``nn.Conv2d`` (``nn.Conv1d`` if ``spatial_dims`` = 1) with 'same' zero padding whose weight
    and bias are drawn from ``generator``: U(−1/√fan_in, 1/√fan_in), PyTorch's default scale."""
    if spatial_dims not in (1, 2):
        raise ValueError(f"spatial_dims must be 1 or 2, got {spatial_dims}")
    if kernel_size < 1 or kernel_size % 2 == 0:
        raise ValueError(
            f"kernel_size must be a positive odd integer, got {kernel_size}"
        )
    if in_channels < 1 or out_channels < 1:
        raise ValueError("in_channels and out_channels must be >= 1")
    cls = nn.Conv2d if spatial_dims == 2 else nn.Conv1d
    conv = cls(
        in_channels, out_channels, kernel_size, padding=kernel_size // 2, bias=bias
    ).to(dtype)
    bound = (in_channels * kernel_size**spatial_dims) ** -0.5
    with torch.no_grad():
        w = (
            torch.rand(conv.weight.shape, generator=generator, dtype=torch.float64) * 2
            - 1
        )
        conv.weight.copy_(w * bound)
        if bias:
            b = (
                torch.rand(conv.bias.shape, generator=generator, dtype=torch.float64)
                * 2
                - 1
            )
            conv.bias.copy_(b * bound)
    return conv


def reference_conv(conv: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The oracle: ``F.conv2d`` (or ``F.conv1d``) with the convolution's weight, bias and K//2 zero padding."""
    k = check_supported_conv(conv, 2 if isinstance(conv, nn.Conv2d) else 1)
    fn = F.conv2d if isinstance(conv, nn.Conv2d) else F.conv1d
    return fn(x, conv.weight, conv.bias, padding=k // 2)


def _convert(conv: nn.Module, **kwargs) -> MultiHeadSelfAttention:
    if isinstance(conv, nn.Conv2d):
        return conv_to_mhsa(conv, **kwargs)
    if isinstance(conv, nn.Conv1d):
        return conv1d_to_mhsa(conv, **kwargs)
    raise ValueError(f"expected an nn.Conv2d or nn.Conv1d, got {type(conv).__name__}")


_MEASURES = {"max": max_relative_error, "fro": relative_frobenius_error}


def conversion_error(
    conv: nn.Module,
    x: torch.Tensor,
    measure: str = "max",
    dtype: Optional[torch.dtype] = None,
    **kwargs,
) -> float:
    """Error of the attention layer that Theorem 1 builds from ``conv`` against the convolution on
    ``x``: ``measure='max'`` gives max |MHSA(x) − conv(x)| / max |conv(x)|, ``'fro'`` the
    :func:`relative_frobenius_error`. With ``dtype``, a copy of ``conv`` and ``x`` cast to it are
    used (``conv`` itself is left alone). Other keyword arguments go to
    :func:`~attnconv.conv_to_mhsa` (e.g. ``hard=True``, ``alpha=...``)."""
    if measure not in _MEASURES:
        raise ValueError(f"measure must be one of {sorted(_MEASURES)}, got {measure!r}")
    if dtype is not None:
        conv, x = copy.deepcopy(conv).to(dtype), x.to(dtype)
    with torch.no_grad():
        return _MEASURES[measure](_convert(conv, **kwargs)(x), reference_conv(conv, x))


def conversion_errors(
    cases: Sequence[ConvCase],
    generator: torch.Generator,
    dtypes: Sequence[torch.dtype] = (torch.float32, torch.float64),
    **kwargs,
) -> List[Dict[torch.dtype, float]]:
    """For every case draw a random convolution and input (in float64, from ``generator``) and return
    :func:`conversion_error` in each dtype (the same convolution cast to that dtype)."""
    if not cases:
        raise ValueError("no cases given")
    rows = []
    for case in cases:
        conv = random_conv(
            case.kernel_size,
            case.in_channels,
            case.out_channels,
            case.bias,
            len(case.shape),
            torch.float64,
            generator,
        )
        x = torch.randn(
            case.batch,
            case.in_channels,
            *case.shape,
            generator=generator,
            dtype=torch.float64,
        )
        rows.append(
            {dt: conversion_error(conv, x, dtype=dt, **kwargs) for dt in dtypes}
        )
    return rows


# --------------------------------------------------------------------------- the border
def unpadded_mhsa(
    conv: nn.Conv2d, alpha: Optional[float] = None, hard: bool = True
) -> MultiHeadSelfAttention2d:
    """The layer of :func:`~attnconv.conv_to_mhsa` (same heads, same weights) but with keys on the
    image only (``key_padding=0``), i.e. *without* the zero padding a 'same' convolution reads.

    In the interior it still equals the convolution. At a border pixel some target q + Δ_h does not
    exist: a hard head (Lemma 1) then has no key at all (softmax over an empty set: NaN), a
    quadratic head (Lemma 2) attends to the nearest existing pixel instead of reading a zero.
    """
    padded = conv_to_mhsa(conv, alpha=alpha, hard=hard)
    layer = MultiHeadSelfAttention2d(
        padded.in_channels,
        padded.num_heads,
        padded.head_dim,
        padded.out_channels,
        encoding=copy.deepcopy(padded.encoding),
        terms=padded.terms,
        qkv_bias=False,
        out_bias=conv.bias is not None,
        key_padding=0,
    ).to(dtype=conv.weight.dtype, device=conv.weight.device)
    layer.load_state_dict(padded.state_dict())
    return layer


def pixel_errors(actual: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """Per-pixel error max_{b,c} |actual − expected| / max |expected|, an ``(H, W)`` tensor.

    NaN outputs stay NaN (so ``~(err <= tol)`` counts them as wrong)."""
    if actual.shape != expected.shape:
        raise ValueError(
            f"shapes differ: {tuple(actual.shape)} vs {tuple(expected.shape)}"
        )
    if actual.ndim != 4:
        raise ValueError(
            f"expected (B, C, H, W) tensors, got shape {tuple(actual.shape)}"
        )
    scale = expected.abs().max()
    if scale == 0:
        raise ValueError("expected is all zeros; the relative error is undefined")
    return ((actual - expected).abs() / scale).amax(dim=(0, 1))


def border_mask(shape: Sequence[int], width: int) -> torch.Tensor:
    """Boolean ``(H, W)`` mask of the pixels within ``width`` of the image's edge: those whose
    K×K neighbourhood, K = 2·width + 1, leaves the image."""
    h, w = (int(s) for s in shape)
    if h < 1 or w < 1:
        raise ValueError(f"shape must be positive, got {tuple(shape)}")
    if width < 0:
        raise ValueError("width must be >= 0")
    rows = torch.arange(h)[:, None]
    cols = torch.arange(w)[None, :]
    return (rows < width) | (rows >= h - width) | (cols < width) | (cols >= w - width)


def attention_is_one_hot_on_shifts(
    probs: torch.Tensor, shape: Sequence[int], shifts: torch.Tensor, padding: int
) -> bool:
    """True if every head h puts probability exactly 1 on the key q + Δ_h for every query q
    (Lemma 1), on a key grid padded by ``padding``. ``probs`` is ``(B, N_h, T_q, T_k)``."""
    h, w = (int(s) for s in shape)
    wp = w + 2 * padding
    if (
        probs.ndim != 4
        or probs.shape[1] != len(shifts)
        or probs.shape[2] != h * w
        or probs.shape[3] != (h + 2 * padding) * wp
    ):
        raise ValueError(
            f"probs of shape {tuple(probs.shape)} do not match {len(shifts)} heads on a "
            f"{h}×{w} grid padded by {padding}"
        )
    expected = torch.zeros(probs.shape[1:], dtype=probs.dtype)
    for head, (d1, d2) in enumerate(shifts.tolist()):
        for i in range(h):
            for j in range(w):
                ki, kj = i + d1 + padding, j + d2 + padding
                if not (0 <= ki < h + 2 * padding and 0 <= kj < wp):
                    return False  # the target does not exist: no one-hot possible
                expected[head, i * w + j, ki * wp + kj] = 1.0
    return bool(all(torch.equal(p.cpu(), expected) for p in probs))


# --------------------------------------------------------------------------- D_h < D_out (rank)
def _head_shifts(mhsa: MultiHeadSelfAttention) -> torch.Tensor:
    enc = mhsa.encoding
    if isinstance(enc, HardShiftEncoding):
        return enc.shifts
    if isinstance(enc, QuadraticEncoding):
        c = enc.centers.detach()
        if not torch.equal(c, c.round()):
            raise ValueError(
                "the heads' centres are not lattice points; no kernel to read off"
            )
        return c.round().long()
    raise ValueError(
        "effective_kernel needs a HardShiftEncoding or QuadraticEncoding layer"
    )


def effective_kernel(mhsa: MultiHeadSelfAttention2d, kernel_size: int) -> torch.Tensor:
    """The K×K kernel a one-hot attention layer implements (Lemma 1): slice W[:, :, Δ_h] =
    W_out^h W_val^h, read off the layer's weights; ``(D_out, D_in, K, K)``."""
    if kernel_size < 1 or kernel_size % 2 == 0:
        raise ValueError(
            f"kernel_size must be a positive odd integer, got {kernel_size}"
        )
    shifts = _head_shifts(mhsa)
    r = kernel_size // 2
    if shifts.shape[1] != 2:
        raise ValueError("effective_kernel is for 2D layers")
    if int(shifts.abs().max()) > r:
        raise ValueError(
            f"a head's shift lies outside a {kernel_size}×{kernel_size} kernel"
        )
    d = mhsa.head_dim
    w_val = mhsa.value.weight.detach()
    w_out = mhsa.out.weight.detach()
    kernel = w_val.new_zeros(
        mhsa.out_channels, mhsa.in_channels, kernel_size, kernel_size
    )
    for h, (d1, d2) in enumerate(shifts.tolist()):
        kernel[:, :, d1 + r, d2 + r] += (
            w_out[:, h * d : (h + 1) * d] @ w_val[h * d : (h + 1) * d]
        )
    return kernel


def relative_kernel_error(approx: torch.Tensor, weight: torch.Tensor) -> float:
    """‖approx − weight‖_F / ‖weight‖_F of a kernel (:func:`attnconv.core.metrics.relative_frobenius_error`)."""
    return relative_frobenius_error(approx, weight)


def predicted_rank_error(weight: torch.Tensor, rank: int) -> float:
    """Eckart–Young: the smallest ‖Ŵ − W‖_F / ‖W‖_F over kernels Ŵ whose every slice Ŵ[:, :, Δ]
    has rank ≤ ``rank``, i.e. sqrt(Σ_Δ Σ_{i > rank} σ_i(W[:, :, Δ])²) / ‖W‖_F — what heads of
    dimension D_h = ``rank`` can at best achieve (the paper's remark on D_h < D_out)."""
    if weight.ndim < 3:
        raise ValueError(
            f"expected a (D_out, D_in, K, ...) kernel, got shape {tuple(weight.shape)}"
        )
    if rank < 0:
        raise ValueError("rank must be >= 0")
    slices = weight.flatten(2).permute(2, 0, 1)  # (K^d, D_out, D_in)
    s = torch.linalg.svdvals(slices)
    tail = (s[:, rank:] ** 2).sum()
    norm2 = (weight**2).sum()
    if norm2 == 0:
        raise ValueError("weight is zero; the relative error is undefined")
    return float(torch.sqrt(tail / norm2))


def rank_sweep(
    conv: nn.Conv2d, x: torch.Tensor, ranks: Sequence[int]
) -> Dict[str, List[float]]:
    """For each head dimension r in ``ranks``: convert ``conv`` with ``conv_to_mhsa(conv, head_dim=r,
    hard=True)`` and return lists ``output`` (max relative error of MHSA(x) vs the convolution),
    ``measured`` (:func:`relative_kernel_error` of :func:`effective_kernel`) and ``predicted``
    (:func:`predicted_rank_error`)."""
    if not ranks or min(ranks) < 1:
        raise ValueError("ranks must be a non-empty sequence of integers >= 1")
    k = check_supported_conv(conv)
    weight = conv.weight.detach()
    out: Dict[str, List[float]] = {"output": [], "measured": [], "predicted": []}
    with torch.no_grad():
        y = reference_conv(conv, x)
        for r in ranks:
            mhsa = conv_to_mhsa(conv, head_dim=int(r), hard=True)
            out["output"].append(max_relative_error(mhsa(x), y))
            out["measured"].append(
                relative_kernel_error(effective_kernel(mhsa, k), weight)
            )
            out["predicted"].append(predicted_rank_error(weight, int(r)))
    return out


# --------------------------------------------------------------------------- alpha (Lemma 2)
def alpha_sweep(
    conv: nn.Conv2d,
    x: torch.Tensor,
    alphas: Sequence[float],
    measure: str = "fro",
    dtype: Optional[torch.dtype] = None,
) -> torch.Tensor:
    """The error (by default the smooth relative Frobenius error) of
    ``conv_to_mhsa(conv, alpha=α)`` run in ``dtype`` (default: the convolution's) against the
    exact convolution (:func:`_error_in`) for each α (Lemma 2); a float64 tensor of
    ``len(alphas)``."""
    if len(alphas) == 0:
        raise ValueError("alphas is empty")
    if min(float(a) for a in alphas) <= 0:
        raise ValueError("every alpha must be > 0")
    return torch.tensor(
        [_error_in(conv, x, measure, dtype, alpha=float(a)) for a in alphas],
        dtype=torch.float64,
    )


def hard_error(
    conv: nn.Module,
    x: torch.Tensor,
    measure: str = "fro",
    dtype: Optional[torch.dtype] = None,
) -> float:
    """The error floor of the α = ∞ limit: the layer with exactly one-hot heads, run in
    ``dtype``, against the exact convolution (:func:`_error_in`)."""
    return _error_in(conv, x, measure, dtype, hard=True)


def _error_in(
    conv: nn.Module,
    x: torch.Tensor,
    measure: str,
    dtype: Optional[torch.dtype],
    **kwargs,
) -> float:
    """The layer Theorem 1 builds from ``conv``, run in ``dtype`` (default: the
    convolution's), against the float64 convolution of the same weights and input, cast to
    ``dtype`` first: what remains is the attention path's own round-off. A convolution run in
    ``dtype`` rounds too, and on some CPUs in the very order the hard heads do, which gives an
    exact 0 and no floor to measure against."""
    if measure not in _MEASURES:
        raise ValueError(f"measure must be one of {sorted(_MEASURES)}, got {measure!r}")
    if dtype is not None:
        conv, x = copy.deepcopy(conv).to(dtype), x.to(dtype)
    with torch.no_grad():
        out = _convert(conv, **kwargs)(x).double()
        exact = reference_conv(copy.deepcopy(conv).double(), x.double())
    return _MEASURES[measure](out, exact)


def smallest_exact_alpha(
    alphas: Sequence[float], errors: Sequence[float], floor: float, factor: float = 2.0
) -> Optional[float]:
    """The smallest α of an increasing grid from which on *every* error is ≤ ``factor`` · ``floor``
    (the error of the α = ∞ layer, :func:`hard_error`): where the quadratic heads become as exact as
    Lemma 1's hard heads in that dtype. ``None`` if even the last α misses."""
    a = torch.as_tensor(alphas, dtype=torch.float64)
    e = torch.as_tensor(errors, dtype=torch.float64)
    if a.ndim != 1 or a.shape != e.shape or a.numel() == 0:
        raise ValueError(
            "alphas and errors must be non-empty 1-d sequences of the same length"
        )
    if not bool((a[1:] > a[:-1]).all()):
        raise ValueError("alphas must be strictly increasing")
    if not floor > 0:
        raise ValueError(
            "floor must be > 0 (an exact zero error leaves 'factor × floor' meaningless)"
        )
    if factor < 1:
        raise ValueError("factor must be >= 1")
    ok = e <= factor * floor
    if not bool(ok[-1]):
        return None
    bad = torch.nonzero(~ok).flatten()
    first = 0 if bad.numel() == 0 else int(bad[-1]) + 1
    return float(a[first])


def head_off_target_mass(
    alpha: float,
    shape: Sequence[int],
    query: Sequence[int],
    center: Sequence[int],
    padding: int = 0,
    dtype: torch.dtype = torch.float64,
) -> float:
    """The attention mass that one quadratic head (eq. 9) of width α centred on Δ = ``center`` puts
    on keys other than q + Δ, for query pixel ``query`` of a grid padded by ``padding``: the
    quantity :func:`~attnconv.off_target_mass_bound` bounds. Summed over the off-target keys (not
    1 − p_target, which would cancel)."""
    h, w = (int(s) for s in shape)
    if not (0 <= query[0] < h and 0 <= query[1] < w):
        raise ValueError(f"query {tuple(query)} is outside the {h}×{w} grid")
    enc = QuadraticEncoding(1, 2, centers=[list(center)], alpha=alpha).to(dtype)
    with torch.no_grad():
        enc.alpha.fill_(
            float(alpha)
        )  # built in the default dtype: restore α exactly in ``dtype``
    delta = relative_shifts((h, w), padding)[query[0] * w + query[1]]  # (T_k, 2)
    target = (delta == torch.as_tensor(center, dtype=delta.dtype)).all(-1)
    if not bool(target.any()):
        raise ValueError(
            f"the key q + Δ = {tuple(query)} + {tuple(center)} is not on the key grid"
        )
    with torch.no_grad():
        p = torch.softmax(enc.position_scores(delta)[0], dim=-1)
    return float(p[~target].sum())


# --------------------------------------------------------------------------- chapter 4's figures
def plot_off_target_mass(
    alphas: Sequence[float],
    measured: Sequence[float],
    label: str = "measured, centre of a 15×15 image",
):
    """Lemma 2's bound against a measurement: the off-target mass ``measured`` of one head
    (:func:`head_off_target_mass`) for each α of ``alphas``, the bound S(α)
    (:func:`~attnconv.off_target_mass_bound`) and its asymptote 4e^{−α}, on a log axis, with
    the unit round-off u and :func:`~attnconv.one_hot_alpha` of float32 and float64 marked."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.6, 3.5))
    bound = [off_target_mass_bound(a) for a in alphas]
    bound_label = "bound $S(α) = θ(e^{-α})^2 - 1$"
    # the measured mass as open grey circles under the bound's black line, so that the line
    # stays visible where the two agree; the dtypes in blue and orange, dashed and dash-dotted
    ax.semilogy(
        alphas, measured, "o", ms=4, mfc="none", mec="0.55", mew=0.8, label=label
    )
    ax.semilogy(alphas, bound, "-", color="k", lw=1.2, zorder=3, label=bound_label)
    asymptote = [4 * math.exp(-a) for a in alphas]
    ax.semilogy(
        alphas, asymptote, ":", color="0.3", lw=1.5, zorder=3, label="$4e^{-α}$"
    )
    for (dt, c), ls in zip(_DTYPE_COLOURS, ("--", "-.")):
        ax.axhline(unit_roundoff(dt), color=c, ls=ls, lw=1)
        name = str(dt)[6:]
        ax.axvline(
            one_hot_alpha(dt),
            color=c,
            ls=ls,
            lw=1,
            label=f"$u$ and one_hot_alpha, {name}",
        )
    ax.set_xlabel("α")
    ax.set_ylabel("off-target attention mass")
    ax.legend(
        loc="upper center",
        bbox_to_anchor=(0.5, -0.18),
        ncol=2,
        frameon=False,
    )
    fig.tight_layout()
    return fig


def plot_alpha_sweep(
    alphas: Sequence[float],
    sweep: Dict[torch.dtype, torch.Tensor],
    floor: Dict[torch.dtype, float],
    smallest: Dict[torch.dtype, float],
    advice: float = 46.0,
):
    """Theorem 1 in floating point: for float32 and float64, the error of
    ``conv_to_mhsa(conv, alpha=α)`` for each α (``sweep``, from :func:`alpha_sweep`), its floor
    with hard heads (``floor``, :func:`hard_error`), the bound
    :func:`~attnconv.one_hot_alpha` and the measured smallest exact α (``smallest``,
    :func:`smallest_exact_alpha`); ``advice`` is the talk slides' α for float32."""
    import matplotlib.pyplot as plt

    # every line labelled where it is drawn (no legend): each dtype's curve and floor by colour
    # above its plateau, the vertical lines by rotated text in empty corners (float32's below the
    # curves, float64's and the slides' above them)
    fig, ax = plt.subplots(figsize=(COLUMN_INCHES, 3.6), layout="constrained")
    along = dict(rotation=90, fontsize=8.5)
    hi, lo = 0.5, 1.2 * min(floor.values())
    places = {  # dtype: (where the plateau's label starts, vertical labels at the top?)
        torch.float32: (one_hot_alpha(torch.float32) + 1.5, False),
        torch.float64: (advice + 1.5, True),
    }
    for dt, c in _DTYPE_COLOURS:
        name, bound = str(dt)[6:], one_hot_alpha(dt)
        # the lines keep their names as labels (no legend is drawn)
        ax.semilogy(
            alphas,
            sweep[dt],
            "-",
            color=c,
            marker=_DTYPE_MARKERS[dt],
            ms=3,
            markevery=4,
            label=f"{name}: error of conv_to_mhsa",
        )
        ax.axhline(
            floor[dt], color=c, ls="--", lw=0.8, label=f"{name}: floor, hard heads"
        )
        ax.axvline(
            bound,
            color=c,
            ls="-.",
            lw=1,
            label=f"{name}: bound one_hot_alpha = {bound:.1f}",
        )
        ax.axvline(
            smallest[dt],
            color=c,
            ls=":",
            lw=1.5,
            label=f"{name}: measured smallest exact α = {smallest[dt]}",
        )
        x, top = places[dt]
        ax.text(
            x,
            floor[dt] * 3,
            f"{name} error\ndashed: floor (α = ∞)",
            color=c,
            ha="left",
            va="bottom",
            fontsize=8.5,
        )
        y, va = (hi, "top") if top else (lo, "bottom")
        ax.text(
            bound + 0.4,
            y,
            f"one_hot_alpha {bound:.1f}",
            color=c,
            ha="left",
            va=va,
            **along,
        )
        ax.text(
            smallest[dt] - 0.4,
            y,
            f"exact from {smallest[dt]:g}",
            color=c,
            ha="right",
            va=va,
            **along,
        )
    ax.axvline(advice, color="gray", lw=1, label=f"slides: α ≥ {advice:g} (float32)")
    ax.text(
        advice - 0.4,
        hi,
        f"slides: α ≥ {advice:g}",
        color="0.35",
        ha="right",
        va="top",
        **along,
    )
    ax.set_xlabel("α")
    ax.set_ylabel("‖MHSA − conv‖$_F$ / ‖conv‖$_F$")
    return fig


def plot_padding_errors(
    alphas: Sequence[float],
    to_replicate: Sequence[Sequence[float]],
    to_zero: Sequence[Sequence[float]],
):
    """Ch. 3's Figure 3.3: the relative error of the un-padded quadratic layer against
    replicate padding (blue circles) and zero padding (red squares), one line per random
    convolution over the widths ``alphas``, beside ch. 4's bound :math:`S(\\alpha)` (dashed) on
    the off-target mass. Returns the figure."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.6, 3.4))
    for i, (rep, zero) in enumerate(zip(to_replicate, to_zero)):
        first = i == 0  # one legend entry per padding
        ax.semilogy(alphas, rep, "o-", color="C0", ms=3, lw=1,
                    label="replicate padding" if first else None)  # fmt: skip
        ax.semilogy(alphas, zero, "s-", color="C3", ms=3, lw=1,
                    label="zero padding" if first else None)  # fmt: skip
    fine = torch.linspace(1, alphas[-1], 100).tolist()
    bound = [off_target_mass_bound(a) for a in fine]
    ax.semilogy(fine, bound, "k--", lw=1, label="S(α), the bound of ch. 4")
    ax.set_xlabel("width α of the quadratic heads")
    ax.set_ylabel("max |MHSA − conv| / max |conv|")
    n = len(to_replicate)
    ax.set_title(
        f"keys on the image only: {n} random convolutions, float64", fontsize=9.5
    )
    ax.legend(loc="center right")
    fig.tight_layout()
    return fig


def plot_rank_sweep(
    ranks: Sequence[int],
    sweep: Dict[str, List[float]],
    full_rank: int,
    floor: float = 1e-17,
):
    """Ch. 3's Figure 3.7: against the head dimension :math:`D_h = r` (``ranks``),
    the kernel error Eckart–Young predicts (rings), the kernel error measured (crosses) and the
    output error (squares), from :func:`rank_sweep`; a dotted line at ``full_rank``. Exact zeros
    are drawn at ``floor`` on the log axis. Returns the figure."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for key, style, kw, label in (
        (
            "predicted",
            "o-",
            dict(ms=9, mfc="none"),
            "predicted kernel error (Eckart–Young)",
        ),
        ("measured", "x", dict(ms=8), "measured kernel error"),
        ("output", "s--", dict(ms=5), "output error max|MHSA − conv| / max|conv|"),
    ):
        ax.semilogy(
            ranks, [max(v, floor) for v in sweep[key]], style, label=label, **kw
        )
    ax.axvline(full_rank, color="gray", ls=":", lw=1)
    ax.set_xticks(ranks)
    ax.set_xlabel("head dimension $D_h = r$")
    ax.set_ylabel("relative error")
    ax.set_title("3×3 convolution, 5 → 8 channels, float64", fontsize=10)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=1, frameon=False)
    fig.tight_layout()
    return fig
