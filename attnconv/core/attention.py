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

import math
from dataclasses import dataclass
from typing import Optional

import torch
from torch import nn

from .encodings import AbsoluteEncoding, QuadraticEncoding, RelativeEncoding
from .local import (
    local_attention_matrix,
    plan_windows,
    separable_heads,
    separable_local_factors,
    sparse_rows,
)
from .precision import autocast_off
from .softmax import softmax_without_denormals

__all__ = [
    "ScoreTerms",
    "MultiHeadSelfAttention",
    "MultiHeadSelfAttention2d",
    "MultiHeadSelfAttention1d",
]


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


def _add_position(scores: torch.Tensor, position: Optional[torch.Tensor]):
    """Content scores plus the position-only term of eq. (8). In fp32/fp64 added in place; under
    bf16/fp16 autocast the content scores come out of the matrix product in half precision while
    the position term is kept in fp32 (:meth:`RelativeEncoding.grid_position_scores`): the sum is
    made in fp32 (one new fp32 tensor, which the softmax reads in fp32 anyway), so position
    scores of trained size (~100) are not rounded to bf16's step of 0.5."""
    if position is None:
        return scores
    if scores.dtype in (torch.float32, torch.float64):
        return scores.add_(position.to(scores.dtype))
    return position.float() + scores


def merge_heads(
    heads: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor]
):
    """concat_h(heads_h) W_outᵀ + b_out of eq. (4) for heads ``(N_h, N, D_h)``: the heads are
    laid side by side once (``(N, N_h·D_h)``) and merged by one matrix product (``F.linear``).

    Laying them side by side is one copy of the heads, and the product's backward is one
    product for the heads' gradient and one for W_out's. Under autocast that product runs in
    bf16/fp16 with fp32 accumulation and one rounding at the end. (It replaced a per-head sum
    into an fp32 buffer: N_h read-modify-write passes over the output per layer forward, and
    per-head loops backward, which moved several times the memory;
    :func:`attnconv.experiments.bench.merge_heads_comparison` times both.)"""
    n_h, n, d_h = heads.shape
    # region plumbing: W_out cast to the heads' dtype
    kind = heads.device.type
    autocast = torch.amp.is_autocast_available(kind) and torch.is_autocast_enabled(kind)
    if not autocast:  # W_out in the heads' dtype
        weight = weight.to(heads.dtype)
        bias = None if bias is None else bias.to(heads.dtype)
    # endregion
    side_by_side = heads.transpose(0, 1).reshape(n, n_h * d_h)  # concat_h[heads_h]
    return torch.nn.functional.linear(side_by_side, weight, bias)  # · W_outᵀ + b_out


class MultiHeadSelfAttention(nn.Module):
    """Multi-head self-attention over a d-dimensional grid of tokens (d = 1 or 2), eqs. (4) and (8).

    Args:
        in_channels: D_in, channels of the input.
        num_heads: N_h.
        head_dim: D_h, width of each head's query/key/value (default ``in_channels // num_heads``).
        out_channels: D_out (default ``in_channels``).
        encoding: ``None``, an :class:`~attnconv.core.encodings.AbsoluteEncoding` (eq. 3) or a
            :class:`~attnconv.core.encodings.RelativeEncoding` (eq. 8).
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
        implementation: ``"dense"`` (every key), ``"naive"`` (the same maths written as the
            authors' code does: per-head scores, softmax and an einsum, then a concatenation;
            the benchmark's reference) or ``"local"`` (:mod:`attnconv.core.local`: each
            Gaussian head only reads a window of keys around its centre, sized so that the left-out
            mass is at most ``local_tolerance``; position-only Gaussian encodings in 2D only). The
            two are interchangeable at any time (``layer.implementation = "local"``). With
            attention dropout, axis-aligned local heads drop entries of their row and column
            factors instead of single probabilities.
        local_tolerance: ε of the local implementation.

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
        implementation: str = "dense",
        local_tolerance: float = 1e-6,
    ):
        super().__init__()
        head_dim, out_channels = self._checked_sizes(
            in_channels,
            num_heads,
            head_dim,
            out_channels,
            key_padding,
            value_projection,
        )
        terms = self._checked_terms(encoding, terms, num_heads, key_padding)
        self.in_channels, self.num_heads, self.head_dim = (
            in_channels,
            num_heads,
            head_dim,
        )
        self.out_channels, self.key_padding, self.terms = (
            out_channels,
            key_padding,
            terms,
        )
        self.scale = head_dim**-0.5 if scale is None else scale
        self.encoding = encoding
        self._build_weights(qkv_bias, out_bias, value_projection)
        self.attention_dropout = nn.Dropout(attention_dropout)
        self.local_tolerance = local_tolerance
        self.implementation = implementation

    @staticmethod
    def _checked_sizes(
        in_channels, num_heads, head_dim, out_channels, key_padding, value_projection
    ):
        """``(head_dim, out_channels)`` with their defaults, after checking the sizes."""
        if in_channels < 1 or num_heads < 1:
            raise ValueError("in_channels and num_heads must be >= 1")
        if head_dim is None:
            head_dim = in_channels // num_heads if value_projection else in_channels
        if not value_projection and head_dim != in_channels:
            raise ValueError(
                f"without a value projection each head has D_h = in_channels = {in_channels}, got {head_dim}"
            )
        if head_dim < 1:
            raise ValueError(
                f"head_dim must be >= 1 (in_channels={in_channels}, num_heads={num_heads})"
            )
        out_channels = in_channels if out_channels is None else out_channels
        if key_padding < 0:
            raise ValueError("key_padding must be >= 0")
        return head_dim, out_channels

    def _checked_terms(self, encoding, terms, num_heads: int, key_padding: int):
        """The score terms (default from the encoding), after checking they fit the encoding."""
        relative = isinstance(encoding, RelativeEncoding)
        if (
            encoding is not None
            and not relative
            and not isinstance(encoding, AbsoluteEncoding)
        ):
            raise TypeError(
                "encoding must be None, an AbsoluteEncoding or a RelativeEncoding"
            )
        if terms is None:
            terms = ScoreTerms.all_terms() if relative else ScoreTerms.content_only()
        if terms.uses_position and not relative:
            raise ValueError(
                "the content-position and position-only terms of eq. (8) need a RelativeEncoding"
            )
        if not (terms.uses_content or terms.position_only):
            raise ValueError("at least one term of eq. (8) must be switched on")
        if relative:
            if encoding.spatial_dims != self.spatial_dims:
                raise ValueError(
                    f"a {encoding.spatial_dims}-d encoding cannot serve a {self.spatial_dims}-d layer"
                )
            if terms.position_only and encoding.num_heads != num_heads:
                raise ValueError(
                    f"encoding has {encoding.num_heads} heads, the layer {num_heads}"
                )
        if isinstance(encoding, AbsoluteEncoding) and key_padding:
            raise ValueError(
                "an AbsoluteEncoding is defined on the image grid only; use key_padding=0"
            )
        return terms

    def _build_weights(self, qkv_bias: bool, out_bias: bool, value_projection: bool):
        """W_qry, W_key, W_val, W_out, u and Ŵ_key as the terms need them (in this order)."""
        in_channels, num_heads, head_dim = (
            self.in_channels,
            self.num_heads,
            self.head_dim,
        )
        terms, encoding = self.terms, self.encoding
        inner = num_heads * head_dim
        needs_query = terms.content_content or terms.content_position
        needs_key = terms.content_content or terms.key_bias
        self.query = (
            nn.Linear(in_channels, inner, bias=qkv_bias) if needs_query else None
        )
        self.key = nn.Linear(in_channels, inner, bias=qkv_bias) if needs_key else None
        self.value = (
            nn.Linear(in_channels, inner, bias=qkv_bias) if value_projection else None
        )
        self.out = nn.Linear(inner, self.out_channels, bias=out_bias)
        self.key_bias_query = (
            nn.Parameter(torch.randn(num_heads, head_dim) * 0.02)
            if terms.key_bias
            else None
        )
        self.relative_key = (
            nn.Parameter(
                torch.randn(num_heads, head_dim, encoding.dim) * encoding.dim**-0.5
            )
            if terms.content_position
            else None
        )

    @property
    def implementation(self) -> str:
        """``"dense"`` or ``"local"``; see the class docstring."""
        return self._implementation

    @implementation.setter
    def implementation(self, value: str) -> None:
        if value not in ("dense", "naive", "local"):
            raise ValueError(
                f"implementation must be 'dense', 'naive' or 'local', got {value!r}"
            )
        if value == "local":
            problems = []
            if self.terms != ScoreTerms.position_only_terms():
                problems.append(
                    "it needs position-only scores (ScoreTerms.position_only_terms())"
                )
            if not hasattr(self.encoding, "precision"):
                problems.append(
                    "it needs a Gaussian encoding (QuadraticEncoding or GeneralizedQuadraticEncoding)"
                )
            if self.spatial_dims != 2:
                problems.append("it is implemented for 2D grids only")
            if not self.local_tolerance > 0:
                problems.append("local_tolerance must be > 0")
            if problems:
                raise ValueError(
                    "local attention is not available here: " + "; ".join(problems)
                )
        self._implementation = value

    # ------------------------------------------------------------------ helpers
    @property
    def shares_probabilities(self) -> bool:
        """True when the scores depend on positions only, so all images share one attention map."""
        return not self.terms.uses_content

    def _check_input(self, x: torch.Tensor) -> None:
        want = 2 + self.spatial_dims
        if x.ndim != want:
            names = "(B, C, H, W)" if self.spatial_dims == 2 else "(B, C, L)"
            raise ValueError(
                f"{type(self).__name__} expects a {want}-d input {names}, got shape {tuple(x.shape)}"
            )
        if x.shape[1] != self.in_channels:
            raise ValueError(
                f"expected {self.in_channels} input channels, got {x.shape[1]} (shape {tuple(x.shape)})"
            )

    def _check_tokens(self, tokens: torch.Tensor, shape) -> None:
        if len(shape) != self.spatial_dims:
            raise ValueError(
                f"grid shape {tuple(shape)} is not {self.spatial_dims}-dimensional"
            )
        if (
            tokens.ndim != 3
            or tokens.shape[0] != math.prod(shape)
            or tokens.shape[2] != self.in_channels
        ):
            raise ValueError(
                f"expected tokens of shape (T={math.prod(shape)}, B, C={self.in_channels}) for grid "
                f"{tuple(shape)}, got {tuple(tokens.shape)}"
            )

    def _pad_tokens(self, tokens: torch.Tensor, shape) -> torch.Tensor:
        """Tokens ``(T, B, C)`` of a grid → tokens ``(T_k, B, C)`` of the grid zero-padded by p."""
        p = self.key_padding
        if not p:
            return tokens
        grid = tokens.view(*shape, *tokens.shape[1:])
        padded = tokens.new_zeros(*(s + 2 * p for s in shape), *tokens.shape[1:])
        padded[tuple(slice(p, p + s) for s in shape)] = grid
        return padded.view(-1, *tokens.shape[1:])

    def _heads_first(self, t: torch.Tensor) -> torch.Tensor:
        """``(T, B, N_h·D_h)`` → ``(B, N_h, T, D_h)``."""
        n, b, _ = t.shape
        return t.view(n, b, self.num_heads, -1).permute(1, 2, 0, 3)

    def _scores_tokens(
        self, tokens: torch.Tensor, shape, qk_tokens: torch.Tensor
    ) -> torch.Tensor:
        # region plumbing: position = vᵀ r_δ; q, k = X W_qry, X W_key; fast paths
        terms, enc = self.terms, self.encoding
        position = (
            enc.grid_position_scores(shape, self.key_padding, tokens.device)
            if terms.position_only
            else None
        )
        if not terms.uses_content:
            return position
        # a faster path for content-content (+ position) alone
        if not (terms.key_bias or terms.content_position):
            # content-content (+ position): the scale is applied by the matrix product itself
            # (no pass over the B·N_h·T_q·T_k scores, nor a copy), and the position term is added in
            # place.
            q = self._heads_first(self.query(qk_tokens))
            k = self._heads_first(self.key(self._pad_tokens(qk_tokens, shape)))
            b, nh, t_q, d = q.shape
            q3, k3 = q.reshape(b * nh, t_q, d), k.reshape(b * nh, -1, d).transpose(1, 2)
            scores = torch.baddbmm(
                q3.new_empty(()), q3, k3, beta=0, alpha=self.scale
            ).view(b, nh, t_q, -1)
            return _add_position(scores, position)
        q = self._heads_first(self.query(qk_tokens)) if self.query is not None else None
        k = (
            self._heads_first(self.key(self._pad_tokens(qk_tokens, shape)))
            if self.key is not None
            else None
        )
        # endregion
        scores = 0.0  # eq. (8), term by term
        if terms.content_content:  # X_q W_qry W_keyᵀ X_kᵀ
            scores = scores + q @ k.transpose(-1, -2)
        if terms.key_bias:  # uᵀ W_keyᵀ X_kᵀ
            u_k = torch.einsum("hd,bhkd->bhk", self.key_bias_query.to(k.dtype), k)
            scores = scores + u_k.unsqueeze(2)
        if terms.content_position:  # X_q W_qry Ŵ_key r_δ
            r = enc.grid_features(shape, self.key_padding, tokens.device).to(q.dtype)
            qr = torch.einsum("bhqd,hdp->bhqp", q, self.relative_key.to(q.dtype))
            scores = scores + torch.einsum("bhqp,qkp->bhqk", qr, r)
        scores = scores * self.scale  # 1/√D_k, as in PyTorch (the paper drops it)
        if position is not None:  # vᵀ Ŵ_key r_δ, the position-only term (unscaled)
            scores = scores + position.unsqueeze(0)
        return scores

    def attention_scores(self, x: torch.Tensor) -> torch.Tensor:
        """The scores A of eq. (8): ``(N_h, T_q, T_k)`` if position-only, else ``(B, N_h, T_q, T_k)``."""
        self._check_input(x)
        enc = self.encoding
        qk_input = enc(x) if isinstance(enc, AbsoluteEncoding) else x
        return self._scores_tokens(
            x.flatten(2).permute(2, 0, 1),
            tuple(x.shape[2:]),
            qk_input.flatten(2).permute(2, 0, 1),
        )

    def _apply_probabilities(
        self, probs: torch.Tensor, keys: torch.Tensor
    ) -> torch.Tensor:
        """softmax(A_h) X W_val^h of eq. (4) for every head: ``(N_h, T_q·B, D_h)``.

        ``keys`` is ``(T_k, B, C)``. Shared probabilities ``(N_h, T_q, T_k)`` are applied to all
        images in one matrix product, with the batch laid out along the columns so that no large
        tensor is copied.
        """
        t_k, b, _ = keys.shape
        nh = self.num_heads
        if self.value is None:
            values = keys  # every head averages the raw input
            if probs.ndim == 3:
                out = probs.to(values.dtype).reshape(-1, t_k) @ values.reshape(
                    t_k, -1
                )  # (N_h·T_q, B·C)
                return out.view(nh, -1, self.head_dim)
            out = probs.to(values.dtype) @ values.permute(1, 0, 2).unsqueeze(
                1
            )  # (B, N_h, T_q, C)
            return out.permute(1, 2, 0, 3).reshape(nh, -1, self.head_dim)
        v = self.value(keys).view(t_k, b, nh, self.head_dim)
        if probs.ndim == 3:
            v = v.permute(2, 0, 1, 3).reshape(nh, t_k, -1)  # (N_h, T_k, B·D_h)
            return (probs.to(v.dtype) @ v).view(nh, -1, self.head_dim)
        out = probs.to(v.dtype) @ v.permute(1, 2, 0, 3)  # (B, N_h, T_q, D_h)
        return out.permute(1, 2, 0, 3).reshape(nh, -1, self.head_dim)

    def _merge_heads(self, heads: torch.Tensor) -> torch.Tensor:
        """concat_h(heads) W_out + b_out of eq. (4) in one matrix product (:func:`merge_heads`)."""
        return merge_heads(heads, self.out.weight, self.out.bias)

    def forward_tokens(
        self, tokens: torch.Tensor, shape, return_attention: bool = False
    ):
        """Eq. (4) on tokens laid out as ``(T, B, C)`` (T = H·W, row-major) for a grid ``shape``.

        Returns ``(T, B, D_out)`` (and the probabilities if asked). This layout lets the batch share
        one attention matrix product without copies; models keep their hidden states in it.
        """
        shape = tuple(int(s) for s in shape)
        self._check_tokens(tokens, shape)
        enc = self.encoding
        qk_tokens = tokens
        if isinstance(enc, AbsoluteEncoding):
            b = tokens.shape[1]
            grid = tokens.permute(1, 2, 0).reshape(b, self.in_channels, *shape)
            qk_tokens = enc(grid).flatten(2).permute(2, 0, 1)
        if self.implementation == "local":
            return self._forward_local(tokens, shape, return_attention)
        scores = self._scores_tokens(tokens, shape, qk_tokens)
        if self.implementation == "naive":
            return self._forward_naive(tokens, shape, scores, return_attention)
        if scores.dtype not in (torch.float32, torch.float64):
            scores = scores.float()  # half-precision scores are soft-maxed in float32
        probs = self.attention_dropout(softmax_without_denormals(scores))
        heads = self._apply_probabilities(probs, self._pad_tokens(tokens, shape))
        y = self._merge_heads(heads).view(
            tokens.shape[0], tokens.shape[1], self.out_channels
        )
        if return_attention:
            return y, (probs.unsqueeze(0) if probs.ndim == 3 else probs)
        return y

    def _forward_naive(
        self, tokens: torch.Tensor, shape, scores: torch.Tensor, return_attention: bool
    ):
        """Eqs. (1) and (4), the reference path: softmax, values, concatenation, W_out."""
        keys = self._pad_tokens(tokens, shape).transpose(0, 1)  # X: (B, T_k, C)
        b, t_k, _ = keys.shape  # plumbing: sizes b, t_k; scores in float32
        if scores.dtype != torch.float64:  # plumbing
            scores = scores.float()  # plumbing
        probs = torch.softmax(scores, dim=-1)  # softmax(A), eq. (1)
        probs = self.attention_dropout(probs)  # plumbing: dropout; einsum letters
        lead = "bhqk" if probs.ndim == 4 else "hqk"  # plumbing
        if self.value is None:  # no W_val: the values are the keys' channels
            heads = torch.einsum(f"{lead},bkc->bqhc", probs.to(keys.dtype), keys)
        else:  # eq. (1), per head: softmax(A^(h)) X W_val^(h)
            v = self.value(keys).view(b, t_k, self.num_heads, self.head_dim)
            heads = torch.einsum(f"{lead},bkhd->bqhd", probs.to(v.dtype), v)
        # eq. (4): concat_h[heads] W_out + b_out
        y = self.out(heads.reshape(b, tokens.shape[0], -1)).transpose(0, 1)
        # region plumbing: with return_attention, the probabilities too
        if return_attention:
            return y, (probs.unsqueeze(0) if probs.ndim == 3 else probs)
        # endregion
        return y

    def _forward_local(self, tokens: torch.Tensor, shape, return_attention: bool):
        """Eq. (4) with each Gaussian head reading only its window of keys (:mod:`.local`)."""
        enc = self.encoding
        keys = self._pad_tokens(tokens, shape)
        t_k, b, _ = keys.shape
        nh = self.num_heads
        values = self._local_values(keys)
        with autocast_off(keys.device.type):  # the probabilities in fp32, as dense ones
            precision = enc.precision()
        drop = self.training and self.attention_dropout.p > 0
        with autocast_off(keys.device.type):
            plan = plan_windows(
                enc.centers,
                precision,
                shape,
                self.key_padding,
                self.local_tolerance,
                aligned=True if isinstance(enc, QuadraticEncoding) else None,
            )
        if plan.aligned:
            rows, cols = self._separable_factors(precision, shape, drop, plan)
            if (
                self.value is None and not return_attention
            ):  # one head at a time, merged as it goes
                bias = None if self.out.bias is None else self.out.bias.to(keys.dtype)
                h_k, w_k = rows.shape[2], cols.shape[2]
                y = separable_heads(
                    keys.view(h_k, w_k, b, -1),
                    rows.to(keys.dtype),
                    cols.to(keys.dtype),
                    self.out.weight.to(keys.dtype),
                    bias,
                )
                return y.view(tokens.shape[0], b, self.out_channels)
            heads, probs = self._separable_product(values, rows, cols, return_attention)
        else:
            heads, probs = self._sparse_product(
                values, precision, shape, drop, return_attention, plan, t_k
            )
        y = self._merge_heads(heads).view(
            tokens.shape[0], tokens.shape[1], self.out_channels
        )
        if not return_attention:
            return y
        return y, probs.reshape(nh, tokens.shape[0], t_k).unsqueeze(0)

    def _local_values(self, keys: torch.Tensor) -> torch.Tensor:
        """The values ``(N_h, T_k, B·D_h)`` of the keys ``(T_k, B, C)``; ``(1, T_k, B·C)`` without W_val."""
        t_k, b, _ = keys.shape
        if self.value is not None:
            return (
                self.value(keys)
                .view(t_k, b, self.num_heads, self.head_dim)
                .permute(2, 0, 1, 3)
                .reshape(self.num_heads, t_k, -1)
            )
        return keys.reshape(1, t_k, -1)  # shared by all heads

    def _separable_factors(self, precision, shape, drop: bool, plan):
        """The row and column factors of axis-aligned heads (with their dropout when training)."""
        with autocast_off(precision.device.type):
            rows, cols, _ = separable_local_factors(
                self.encoding.centers,
                precision,
                shape,
                self.key_padding,
                self.local_tolerance,
                radii=plan.radii,
            )
        if drop:  # structured dropout: on the row and on the column factor (expectation unchanged)
            rows, cols = self.attention_dropout(rows), self.attention_dropout(cols)
        return rows, cols

    def _separable_product(self, values, rows, cols, return_attention: bool):
        """Every head's output ``(N_h, H·W·B, D)`` from its row and column factors, and the
        probabilities when asked (else None)."""
        nh, d = self.num_heads, self.head_dim
        h_k, w_k = rows.shape[2], cols.shape[2]
        # rows: (N_h, H, H_k) @ (·, H_k, W_k·B·D) → (N_h, H, W_k·B·D)
        u = (
            (rows.to(values.dtype) @ values.reshape(values.shape[0], h_k, -1))
            if values.shape[0] > 1
            else (
                rows.to(values.dtype).reshape(-1, h_k) @ values.reshape(h_k, -1)
            ).view(nh, rows.shape[1], -1)
        )
        u = u.view(nh, rows.shape[1], w_k, -1)  # (N_h, H, W_k, B·D)
        heads = (cols.to(values.dtype).unsqueeze(1) @ u).view(
            nh, -1, d
        )  # (N_h, H·W·B, D)
        probs = (
            (rows[:, :, None, :, None] * cols[:, None, :, None, :])
            if return_attention
            else None
        )
        return heads, probs

    def _sparse_product(
        self, values, precision, shape, drop: bool, return_attention: bool, plan, t_k
    ):
        """Every head's output ``(N_h, T_q·B, D)`` through the sparse matrix of its windows, and
        the probabilities when asked (else None)."""
        nh, d = self.num_heads, self.head_dim
        t_q = shape[0] * shape[1]
        with autocast_off(values.device.type):
            matrix, _ = local_attention_matrix(
                self.encoding.centers,
                precision,
                shape,
                self.key_padding,
                self.local_tolerance,
                stack_heads_in_columns=self.value is not None,
                plan=plan,
            )
        if drop:
            matrix = sparse_rows(
                matrix.crow_indices(),
                matrix.col_indices(),
                self.attention_dropout(matrix.values()),
                matrix.shape,
            )
        # the sparse product in the matrix's precision (fp32) when the values are bf16/fp16:
        # sparse kernels have no bf16 on the CPU, and the windows' sums stay fp32
        wide = values.dtype in (torch.float32, torch.float64)
        flat = values.reshape(-1, values.shape[-1])
        with autocast_off(values.device.type):
            heads = (
                matrix.to(values.dtype) @ flat
                if wide
                else (matrix @ flat.to(matrix.dtype)).to(values.dtype)
            ).view(nh, -1, d)
        probs = None
        if return_attention:
            dense = matrix.detach().to_dense().view(nh, t_q, -1)
            if self.value is not None:  # keep each head's own block of columns
                dense = torch.stack(
                    [dense[h, :, h * t_k : (h + 1) * t_k] for h in range(nh)]
                )
            probs = dense
        return heads, probs

    def forward(self, x: torch.Tensor, return_attention: bool = False):
        """Apply eq. (4) to ``(B, C, H, W)`` (``(B, C, L)`` in 1D). With ``return_attention`` also
        return the probabilities (``(1, N_h, T_q, T_k)`` when shared by all images, else
        ``(B, N_h, T_q, T_k)``)."""
        self._check_input(x)
        b, shape = x.shape[0], tuple(x.shape[2:])
        out = self.forward_tokens(
            x.flatten(2).permute(2, 0, 1), shape, return_attention
        )
        y, probs = out if return_attention else (out, None)
        y = y.permute(1, 2, 0).reshape(b, self.out_channels, *shape)
        return (y, probs) if return_attention else y

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
