"""Theorem 1 made executable: turn a convolution into an equal multi-head self-attention layer.

Lemma 1: if each of N_h = K^d heads attends with all its mass to a distinct shift Δ_h of the
kernel, and W_out^h W_val^h equals the kernel slice W[:, :, Δ_h], then

    MHSA(X)_q = Σ_h W_out^h W_val^h X_{q+Δ_h} + b_out = conv(X)_q.

Lemma 2: the quadratic encoding (eq. 9) with a large width α realises such one-hot heads, up to
the dtype's precision once α ≥ :func:`attnconv.core.bounds.one_hot_alpha`.

At the border, a convolution with 'same' zero padding reads zeros outside the image; an attention
head cannot attend to a pixel that does not exist, so the returned layer attends over the image
zero-padded by (K−1)/2 (``key_padding``). Its value projection has no bias, so a padded key
contributes exactly 0, as in the convolution.

With keys on the image only (eq. 15 normalises over k′ ∈ [W]×[H]), a quadratic head's nearest key
to q + Δ_h is the clamp of q + Δ_h onto the image, and it is unique: as α → ∞ that layer is
exactly the convolution with *replicate* (edge) padding, :func:`conv2d_replicate_padding`.
"""

from __future__ import annotations

from typing import List, Optional

import torch
from torch import nn

from .attention import (
    MultiHeadSelfAttention1d,
    MultiHeadSelfAttention2d,
    ScoreTerms,
)
from .bounds import one_hot_alpha
from .encodings import HardShiftEncoding, QuadraticEncoding, kernel_shifts

__all__ = [
    "conv_to_mhsa",
    "conv1d_to_mhsa",
    "check_supported_conv",
    "head_weights_from_kernel",
    "conv2d_replicate_padding",
]


def _as_tuple(v, d):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * d


def check_supported_conv(conv: nn.Module, spatial_dims: int = 2) -> int:
    """Return the kernel size K if ``conv`` is a convolution that Theorem 1 covers, else raise
    ``ValueError`` naming every unsupported property.

    Covered: ``nn.Conv2d`` (``nn.Conv1d`` for d = 1) with an odd square kernel, stride 1,
    dilation 1, groups 1 and 'same' zero padding ((K−1)/2 on each side), with or without bias.
    """
    cls = nn.Conv2d if spatial_dims == 2 else nn.Conv1d
    if not isinstance(conv, cls):
        raise ValueError(f"expected an nn.{cls.__name__}, got {type(conv).__name__}")
    problems: List[str] = []
    k = _as_tuple(conv.kernel_size, spatial_dims)
    if len(set(k)) != 1:
        problems.append(f"non-square kernel {k}")
    elif k[0] % 2 == 0:
        problems.append(f"even kernel size {k[0]} (no centre pixel)")
    if _as_tuple(conv.stride, spatial_dims) != (1,) * spatial_dims:
        problems.append(f"stride {conv.stride}")
    if _as_tuple(conv.dilation, spatial_dims) != (1,) * spatial_dims:
        problems.append(f"dilation {conv.dilation}")
    if conv.groups != 1:
        problems.append(f"groups={conv.groups}")
    if getattr(conv, "transposed", False):
        problems.append("transposed convolution")
    if conv.padding_mode != "zeros":
        problems.append(f"padding_mode='{conv.padding_mode}'")
    if isinstance(conv.padding, str):
        if conv.padding != "same":
            problems.append(f"padding='{conv.padding}'")
    elif (
        len(set(k)) == 1
        and _as_tuple(conv.padding, spatial_dims) != ((k[0] - 1) // 2,) * spatial_dims
    ):
        problems.append(
            f"padding {conv.padding} (only 'same' zero padding, i.e. {(k[0] - 1) // 2}, is supported)"
        )
    if problems:
        raise ValueError(
            "Theorem 1 covers convolutions with an odd square kernel, stride 1, dilation 1, groups 1 "
            "and 'same' zero padding; this one has: " + "; ".join(problems)
        )
    return k[0]


def head_weights_from_kernel(kernel_slice: torch.Tensor, head_dim: int):
    """Split one kernel slice W_Δ (D_out × D_in) into W_out^h (D_out × D_h) and W_val^h (D_h × D_in)
    with W_out^h W_val^h = W_Δ (Lemma 1).

    Exact when D_h ≥ min(D_in, D_out) (one factor is an identity). When D_h is smaller, returns the
    best rank-D_h factorisation from a truncated SVD (Eckart–Young): a head of dimension D_h < D_out
    can only express a slice of rank at most D_h (the paper's remark, Sec. 3.1, says "rank
    D_out − D_h", a slip; see the book's errata).
    """
    d_out, d_in = kernel_slice.shape
    # region plumbing: w_out, w_val = zeros (D_out × D_h), (D_h × D_in)
    w_out = kernel_slice.new_zeros(d_out, head_dim)
    w_val = kernel_slice.new_zeros(head_dim, d_in)
    # endregion
    if head_dim >= d_in and d_in <= d_out:  # W_val^h = I, W_out^h = W_Δ
        w_val[:d_in] = torch.eye(d_in).to(kernel_slice)  # its dtype and device
        w_out[:, :d_in] = kernel_slice
    elif head_dim >= d_out:  # W_out^h = I, W_val^h = W_Δ
        w_out[:, :d_out] = torch.eye(d_out).to(kernel_slice)  # its dtype and device
        w_val[:d_out] = kernel_slice
    else:  # D_h too small: the best rank-D_h factors, a truncated SVD (Eckart–Young)
        u, s, vh = torch.linalg.svd(kernel_slice, full_matrices=False)
        root = s[:head_dim].sqrt()
        w_out[:] = u[:, :head_dim] * root
        w_val[:] = root[:, None] * vh[:head_dim]
    return w_out, w_val


def _conv_to_attention(
    conv, spatial_dims: int, alpha: Optional[float], head_dim: Optional[int], hard: bool
):
    k = check_supported_conv(conv, spatial_dims)
    shifts = kernel_shifts(k, spatial_dims)  # Δ_1, …, Δ_{K²}: one head per shift
    r = (k - 1) // 2  # keys on the image zero-padded by r = ⌊K/2⌋ (the border)
    # region plumbing: weight = the kernel; mhsa = K² position-only heads
    weight = conv.weight.detach()
    d_out, d_in = weight.shape[:2]
    num_heads = shifts.shape[0]
    head_dim = min(d_in, d_out) if head_dim is None else int(head_dim)
    if head_dim < 1:
        raise ValueError("head_dim must be >= 1")
    if hard:
        encoding = HardShiftEncoding(shifts)
    else:
        alpha = (
            one_hot_alpha(weight.dtype, spatial_dims) if alpha is None else float(alpha)
        )
        encoding = QuadraticEncoding(
            num_heads,
            spatial_dims,
            centers=shifts.to(weight.dtype),
            alpha=torch.tensor(alpha, dtype=weight.dtype),
        )
    cls = MultiHeadSelfAttention2d if spatial_dims == 2 else MultiHeadSelfAttention1d
    mhsa = cls(
        d_in,
        num_heads,
        head_dim,
        d_out,
        encoding=encoding,
        terms=ScoreTerms.position_only_terms(),
        qkv_bias=False,
        out_bias=conv.bias is not None,
        key_padding=r,
    ).to(device=weight.device, dtype=weight.dtype)
    # endregion
    with torch.no_grad():
        for h, shift in enumerate(shifts.tolist()):
            index = (slice(None), slice(None)) + tuple(s + r for s in shift)
            # Lemma 1: W^(h) = W_val^h W_out^h is the kernel slice at Δ_h
            w_out, w_val = head_weights_from_kernel(weight[index], head_dim)
            mhsa.value.weight[h * head_dim : (h + 1) * head_dim] = w_val
            mhsa.out.weight[:, h * head_dim : (h + 1) * head_dim] = w_out
        if conv.bias is not None:  # b_out = b
            mhsa.out.bias.copy_(conv.bias.detach())
    return mhsa


def conv_to_mhsa(
    conv: nn.Conv2d,
    alpha: Optional[float] = None,
    head_dim: Optional[int] = None,
    hard: bool = False,
) -> MultiHeadSelfAttention2d:
    """Theorem 1: a :class:`MultiHeadSelfAttention2d` with N_h = K² quadratic heads equal to ``conv``.

    Args:
        conv: an ``nn.Conv2d`` with an odd square kernel K, stride 1, dilation 1, groups 1 and
            'same' zero padding (bias or not). Anything else raises ``ValueError``.
        alpha: width of every head (eq. 9). Default: :func:`~attnconv.core.bounds.one_hot_alpha` for the
            convolution's dtype, which makes each softmax one-hot to within that dtype's precision.
            The module keeps this α if you later cast it to a more precise dtype; convert a
            float64 convolution to get the float64 guarantee.
        head_dim: D_h. Default min(D_in, D_out), the smallest exact choice (Lemma 1). A smaller value
            gives each shift's best rank-D_h approximation (see :func:`head_weights_from_kernel`).
        hard: use Lemma 1's exactly one-hot heads (:class:`~attnconv.core.encodings.HardShiftEncoding`)
            instead of the quadratic encoding.

    The layer attends over the image zero-padded by (K−1)/2, so the border matches too.
    """
    return _conv_to_attention(conv, 2, alpha, head_dim, hard)


def conv1d_to_mhsa(
    conv: nn.Conv1d,
    alpha: Optional[float] = None,
    head_dim: Optional[int] = None,
    hard: bool = False,
) -> MultiHeadSelfAttention1d:
    """The 1D remark of Sec. 3: :func:`conv_to_mhsa` for ``nn.Conv1d``, with N_h = K heads and the
    D_p = 2 quadratic encoding r_δ = (δ², δ)."""
    return _conv_to_attention(conv, 1, alpha, head_dim, hard)


def conv2d_replicate_padding(conv: nn.Conv2d, x: torch.Tensor) -> torch.Tensor:
    """``conv`` applied to ``x`` with replicate (edge) padding instead of its zero padding: the
    limit α → ∞ of the quadratic layer whose keys are the image's pixels only.

    Eq. (5) does not say which padding the convolution uses. With keys k ∈ [H]×[W] (eq. 15's
    normalisation), head h's scores are −α‖k − (q + Δ_h)‖² + const. The squared distance splits
    into one term per axis, each minimised over an interval of integers by clamping, so the
    nearest key is c_h(q) = clamp(q + Δ_h) onto the image, unique. Every other key scores at least
    α·‖k − c_h(q)‖² ≥ α lower (per axis, (k − t)² − (c − t)² ≥ (k − c)² when c is t's clamp), so
    the off-target mass is at most S(α) of :func:`attnconv.core.bounds.off_target_mass_bound`, as
    for the padded layer, and the head tends to one-hot on c_h(q). Lemma 1's sum
    Σ_h X_{c_h(q)} W^(h) + b is then the convolution of the image padded by repeating its edge
    pixels, which this function computes with ``F.pad(mode="replicate")`` and ``F.conv2d``.
    """
    k = check_supported_conv(conv, 2)
    r = (k - 1) // 2
    padded = torch.nn.functional.pad(x, (r, r, r, r), mode="replicate")
    return torch.nn.functional.conv2d(padded, conv.weight, conv.bias)
