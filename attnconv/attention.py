"""Multi-head self-attention over the pixels of an image (paper eqs. 1–4 and 8).

:class:`MultiHeadSelfAttention2d` maps ``(B, C, H, W)`` to ``(B, D_out, H, W)``:

    MHSA(X) = concat_h [ softmax(A_h) X W_val^h ] W_out + b_out          (eq. 4)

with, for query pixel q and key pixel k, δ = k − q, the score of eq. (8)

    A_qk = X_q W_qry W_keyᵀ X_kᵀ      (content-content)
         + X_q W_qry Ŵ_key r_δ        (content-position)
         + uᵀ W_key X_kᵀ              (key bias)
         + vᵀ Ŵ_key r_δ               (position only)

Which terms are on is a :class:`ScoreTerms`. Keys may live on a zero-padded grid
(``key_padding``): queries stay on the image, keys also cover p cells of zeros around it, which is
what a convolution with 'same' zero padding sees (Theorem 1 at the border).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from .encodings import AbsoluteEncoding, RelativeEncoding
from .grid import relative_shifts

__all__ = ["ScoreTerms", "MultiHeadSelfAttention", "MultiHeadSelfAttention2d", "MultiHeadSelfAttention1d", "softmax_without_denormals"]


@dataclass(frozen=True)
class ScoreTerms:
    """Which of the four terms of eq. (8) enter the attention score."""

    content_content: bool = True
    content_position: bool = False
    key_bias: bool = False
    position_only: bool = False

    @classmethod
    def content_only(cls) -> "ScoreTerms":
        return cls(True, False, False, False)

    @classmethod
    def position_only_terms(cls) -> "ScoreTerms":
        return cls(False, False, False, True)

    @classmethod
    def all_terms(cls) -> "ScoreTerms":
        return cls(True, True, True, True)

    @property
    def uses_content(self) -> bool:
        return self.content_content or self.content_position or self.key_bias

    @property
    def uses_position(self) -> bool:
        return self.content_position or self.position_only


def softmax_without_denormals(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """softmax(scores) with every probability below the dtype's smallest normal number set to 0.

    A softmax of Gaussian scores (eqs. 9 and 16) produces many probabilities below e^-87, which are
    float32 *denormals*; CPU matrix products over denormals run about 10× slower. Flushing them to 0
    changes each output by less than T·2^-126 relative, far below float precision.
    """
    p = torch.softmax(scores, dim=dim)
    return p.masked_fill(p < torch.finfo(p.dtype).tiny, 0.0)


class MultiHeadSelfAttention(nn.Module):
    """Multi-head self-attention over a d-dimensional grid of tokens (d = 1 or 2), eqs. (4) and (8).

    Args:
        in_channels: D_in, channels of the input.
        num_heads: N_h.
        head_dim: D_h, width of each head's query/key/value (default ``in_channels // num_heads``).
        out_channels: D_out (default ``in_channels``).
        encoding: ``None``, an :class:`~attnconv.encodings.AbsoluteEncoding` (eq. 3) or a
            :class:`~attnconv.encodings.RelativeEncoding` (eq. 8).
        terms: which terms of eq. (8) are on. Default: content-content only without a relative
            encoding, all four with one.
        qkv_bias: biases on W_qry, W_key, W_val (off by default; with ``key_padding`` the value
            bias would make padded keys non-zero).
        out_bias: the bias b_out of eq. (4).
        key_padding: keys live on the input grid zero-padded by this many cells on every side.
        scale: factor on the terms that involve W_qry or W_key (default 1/√D_h, as in
            ``nn.MultiheadAttention``); the position-only term is not scaled.
        attention_dropout: dropout on the attention probabilities.
        value_projection: with ``False`` there is no W_val: every head averages the raw input
            (D_h = D_in) and W_out, of size N_h·D_in → D_out, merges W_val^h W_out^h of each head,
            as the paper's position-only models do (Sec. 4).

    When only the position-only term is on, the scores do not depend on the input and the
    probabilities are computed once per forward pass (N_h × T × T), not once per image.
    """

    spatial_dims = 2

    def __init__(
        self,
        in_channels: int,
        num_heads: int,
        head_dim: Optional[int] = None,
        out_channels: Optional[int] = None,
        encoding: Optional[nn.Module] = None,
        terms: Optional[ScoreTerms] = None,
        qkv_bias: bool = False,
        out_bias: bool = True,
        key_padding: int = 0,
        scale: Optional[float] = None,
        attention_dropout: float = 0.0,
        value_projection: bool = True,
    ):
        super().__init__()
        if in_channels < 1 or num_heads < 1:
            raise ValueError("in_channels and num_heads must be >= 1")
        if head_dim is None:
            head_dim = in_channels // num_heads if value_projection else in_channels
        if not value_projection and head_dim != in_channels:
            raise ValueError(f"without a value projection each head has D_h = in_channels = {in_channels}, got {head_dim}")
        if head_dim < 1:
            raise ValueError(f"head_dim must be >= 1 (in_channels={in_channels}, num_heads={num_heads})")
        out_channels = in_channels if out_channels is None else out_channels
        if key_padding < 0:
            raise ValueError("key_padding must be >= 0")
        relative = isinstance(encoding, RelativeEncoding)
        if encoding is not None and not relative and not isinstance(encoding, AbsoluteEncoding):
            raise TypeError("encoding must be None, an AbsoluteEncoding or a RelativeEncoding")
        if terms is None:
            terms = ScoreTerms.all_terms() if relative else ScoreTerms.content_only()
        if terms.uses_position and not relative:
            raise ValueError("the content-position and position-only terms of eq. (8) need a RelativeEncoding")
        if not (terms.uses_content or terms.position_only):
            raise ValueError("at least one term of eq. (8) must be switched on")
        if relative:
            if encoding.spatial_dims != self.spatial_dims:
                raise ValueError(f"a {encoding.spatial_dims}-d encoding cannot serve a {self.spatial_dims}-d layer")
            if terms.position_only and encoding.num_heads != num_heads:
                raise ValueError(f"encoding has {encoding.num_heads} heads, the layer {num_heads}")
        if isinstance(encoding, AbsoluteEncoding) and key_padding:
            raise ValueError("an AbsoluteEncoding is defined on the image grid only; use key_padding=0")

        self.in_channels, self.num_heads, self.head_dim = in_channels, num_heads, head_dim
        self.out_channels, self.key_padding, self.terms = out_channels, key_padding, terms
        self.scale = head_dim ** -0.5 if scale is None else scale
        self.encoding = encoding
        inner = num_heads * head_dim
        needs_query = terms.content_content or terms.content_position
        needs_key = terms.content_content or terms.key_bias
        self.query = nn.Linear(in_channels, inner, bias=qkv_bias) if needs_query else None
        self.key = nn.Linear(in_channels, inner, bias=qkv_bias) if needs_key else None
        self.value = nn.Linear(in_channels, inner, bias=qkv_bias) if value_projection else None
        self.out = nn.Linear(inner, out_channels, bias=out_bias)
        self.key_bias_query = nn.Parameter(torch.randn(num_heads, head_dim) * 0.02) if terms.key_bias else None
        self.relative_key = (
            nn.Parameter(torch.randn(num_heads, head_dim, encoding.dim) * encoding.dim ** -0.5)
            if terms.content_position
            else None
        )
        self.attention_dropout = nn.Dropout(attention_dropout)

    # ------------------------------------------------------------------ helpers
    @property
    def shares_probabilities(self) -> bool:
        """True when the scores depend on positions only, so all images share one attention map."""
        return not self.terms.uses_content

    def _check_input(self, x: torch.Tensor) -> None:
        want = 2 + self.spatial_dims
        if x.ndim != want:
            names = "(B, C, H, W)" if self.spatial_dims == 2 else "(B, C, L)"
            raise ValueError(f"{type(self).__name__} expects a {want}-d input {names}, got shape {tuple(x.shape)}")
        if x.shape[1] != self.in_channels:
            raise ValueError(f"expected {self.in_channels} input channels, got {x.shape[1]} (shape {tuple(x.shape)})")

    def _pad(self, x: torch.Tensor) -> torch.Tensor:
        p = self.key_padding
        return F.pad(x, [p, p] * self.spatial_dims) if p else x

    @staticmethod
    def _tokens(x: torch.Tensor) -> torch.Tensor:
        return x.flatten(2).transpose(1, 2)  # (B, T, C)

    def _split_heads(self, t: torch.Tensor) -> torch.Tensor:
        b, n, _ = t.shape
        return t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)  # (B, N_h, T, D_h)

    def attention_scores(self, x: torch.Tensor) -> torch.Tensor:
        """The scores A of eq. (8): ``(N_h, T_q, T_k)`` if position-only, else ``(B, N_h, T_q, T_k)``."""
        self._check_input(x)
        shape = tuple(x.shape[2:])
        terms, enc = self.terms, self.encoding
        delta = relative_shifts(shape, self.key_padding, x.device) if isinstance(enc, RelativeEncoding) else None
        position = enc.position_scores(delta) if terms.position_only else None
        if not terms.uses_content:
            return position
        qk_input = enc(x) if isinstance(enc, AbsoluteEncoding) else x
        q = self._split_heads(self.query(self._tokens(qk_input))) if self.query is not None else None
        k = self._split_heads(self.key(self._tokens(self._pad(qk_input)))) if self.key is not None else None
        scores = 0.0
        if terms.content_content:
            scores = scores + q @ k.transpose(-1, -2)
        if terms.key_bias:
            scores = scores + torch.einsum("hd,bhkd->bhk", self.key_bias_query.to(k.dtype), k).unsqueeze(2)
        if terms.content_position:
            r = enc.features(delta).to(q.dtype)  # (T_q, T_k, D_p)
            qr = torch.einsum("bhqd,hdp->bhqp", q, self.relative_key.to(q.dtype))
            scores = scores + torch.einsum("bhqp,qkp->bhqk", qr, r)
        scores = scores * self.scale
        if position is not None:
            scores = scores + position.unsqueeze(0)
        return scores

    def forward(self, x: torch.Tensor, return_attention: bool = False):
        """Apply eq. (4). With ``return_attention`` also return the probabilities
        (``(1, N_h, T_q, T_k)`` when shared by all images, else ``(B, N_h, T_q, T_k)``)."""
        scores = self.attention_scores(x)
        if scores.dtype not in (torch.float32, torch.float64):
            scores = scores.float()  # half-precision scores are soft-maxed in float32
        probs = self.attention_dropout(softmax_without_denormals(scores))
        b, shape = x.shape[0], tuple(x.shape[2:])
        keys = self._tokens(self._pad(x))  # (B, T_k, C)
        t_k = keys.shape[1]
        if self.value is None:
            if probs.ndim == 3:
                # (N_h·T_q, T_k) @ (T_k, B·C): one matrix product for all heads and images.
                kv = keys.transpose(0, 1).reshape(t_k, -1)
                heads = (probs.to(kv.dtype).reshape(-1, t_k) @ kv).view(self.num_heads, -1, b, self.head_dim)
                heads = heads.permute(2, 1, 0, 3)
            else:
                heads = (probs.to(keys.dtype) @ keys.unsqueeze(1)).transpose(1, 2)
            y = self.out(heads.reshape(b, -1, self.num_heads * self.head_dim))
            y = y.transpose(1, 2).reshape(b, self.out_channels, *shape)
            return (y, probs.unsqueeze(0) if probs.ndim == 3 else probs) if return_attention else y
        v = self.value(keys)  # (B, T_k, N_h·D_h)
        if probs.ndim == 3:
            # One map for all images: (N_h, T_q, T_k) @ (N_h, T_k, B·D_h).
            v = v.view(b, t_k, self.num_heads, self.head_dim).permute(2, 1, 0, 3).reshape(self.num_heads, t_k, -1)
            heads = (probs.to(v.dtype) @ v).view(self.num_heads, -1, b, self.head_dim).permute(2, 1, 0, 3)
        else:
            heads = (probs.to(v.dtype) @ self._split_heads(v)).transpose(1, 2)  # (B, T_q, N_h, D_h)
        y = self.out(heads.reshape(b, -1, self.num_heads * self.head_dim))  # (B, T_q, D_out)
        y = y.transpose(1, 2).reshape(b, self.out_channels, *shape)
        if return_attention:
            return y, (probs.unsqueeze(0) if probs.ndim == 3 else probs)
        return y

    def extra_repr(self) -> str:
        return (
            f"in_channels={self.in_channels}, num_heads={self.num_heads}, head_dim={self.head_dim}, "
            f"out_channels={self.out_channels}, key_padding={self.key_padding}, terms={self.terms}"
        )


class MultiHeadSelfAttention2d(MultiHeadSelfAttention):
    """:class:`MultiHeadSelfAttention` over the W×H pixels of an image: ``(B, C, H, W)`` in and out."""

    spatial_dims = 2


class MultiHeadSelfAttention1d(MultiHeadSelfAttention):
    """:class:`MultiHeadSelfAttention` over a sequence: ``(B, C, L)`` in and out (the paper's 1D remark)."""

    spatial_dims = 1
