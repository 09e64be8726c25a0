"""Symmetries of self-attention over images: permutations (Sec. 2.1) and translations (Sec. 2.3: scores that depend on the shift δ only).

* Without positional encoding, multi-head self-attention (eqs. 1–4) treats the T = H·W pixels as
  a *set*: permuting the pixels permutes the output the same way.
  :func:`permutation_equivariance_error` measures this; :func:`copy_weights_from_torch_mha` and
  :func:`apply_torch_mha` compare our layer with ``torch.nn.MultiheadAttention``.
* The four terms of the relative score, eq. (8), recomputed one by one from a layer's parameters
  with plain tensor operations: :func:`score_terms`, :func:`plot_score_terms`.
* A relative encoding depends on δ = k − q only, so attention becomes translation equivariant —
  except near the border, where keys leave and enter the image. :func:`shift_image`,
  :func:`translation_error_map`, :func:`border_distance` and :func:`region_error_stats` locate
  where the equivariance holds; :func:`local_learned_encoding` builds a learned relative encoding
  that decays with distance, as trained ones do. :func:`plot_translation_errors` draws several
  error maps, each on the colour scale fitted to it (:func:`error_map_norm`).
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from ..core.attention import MultiHeadSelfAttention
from ..core.encodings import (
    AbsoluteEncoding,
    GeneralizedQuadraticEncoding,
    LearnedRelativeEncoding,
    QuadraticEncoding,
)
from .shared.plotting import COLUMN_INCHES

__all__ = [
    "copy_weights_from_torch_mha",
    "apply_torch_mha",
    "permutation_equivariance_error",
    "permutation_invariance_error",
    "score_terms",
    "plot_score_terms",
    "shift_image",
    "translation_error_map",
    "border_distance",
    "region_error_stats",
    "error_map_norm",
    "plot_translation_errors",
    "local_learned_encoding",
]

TERM_NAMES = ("content_content", "content_position", "key_bias", "position_only")


# --------------------------------------------------------------------------- nn.MultiheadAttention
def _check_mha_compatible(
    layer: MultiHeadSelfAttention, mha: nn.MultiheadAttention
) -> None:
    problems = []
    if not isinstance(mha, nn.MultiheadAttention):
        raise ValueError(f"expected an nn.MultiheadAttention, got {type(mha).__name__}")
    if not isinstance(layer, MultiHeadSelfAttention):
        raise ValueError(
            f"expected a MultiHeadSelfAttention layer, got {type(layer).__name__}"
        )
    e = mha.embed_dim
    if not mha._qkv_same_embed_dim:
        problems.append("kdim/vdim differ from embed_dim")
    if mha.bias_k is not None or mha.add_zero_attn:
        problems.append("add_bias_kv / add_zero_attn are not part of eq. (4)")
    if (
        layer.terms.content_position
        or layer.terms.key_bias
        or layer.terms.position_only
    ):
        problems.append(
            f"the layer must use the content-content term only, has {layer.terms}"
        )
    if layer.encoding is not None:
        problems.append("the layer must have no positional encoding")
    if layer.in_channels != e or layer.out_channels != e:
        problems.append(
            f"layer channels {layer.in_channels}->{layer.out_channels}, embed_dim {e}"
        )
    if layer.num_heads != mha.num_heads or layer.head_dim != mha.head_dim:
        problems.append(
            f"layer has {layer.num_heads} heads of {layer.head_dim}, nn.MultiheadAttention "
            f"{mha.num_heads} of {mha.head_dim}"
        )
    if abs(layer.scale - layer.head_dim**-0.5) > 1e-12 * layer.scale:
        problems.append(f"layer scale {layer.scale} is not 1/sqrt(head_dim)")
    has_in_bias, has_out_bias = (
        mha.in_proj_bias is not None,
        mha.out_proj.bias is not None,
    )
    if (
        layer.query is None or layer.key is None or layer.value is None
    ) and not problems:
        problems.append("the layer lacks a query, key or value projection")
    if not problems:
        for name, lin in (
            ("query", layer.query),
            ("key", layer.key),
            ("value", layer.value),
        ):
            if (lin.bias is not None) != has_in_bias:
                problems.append(
                    f"layer.{name} bias is {lin.bias is not None}, in_proj_bias {has_in_bias}"
                )
        if (layer.out.bias is not None) != has_out_bias:
            problems.append(
                f"layer.out bias is {layer.out.bias is not None}, out_proj bias {has_out_bias}"
            )
    if problems:
        raise ValueError(
            "cannot copy nn.MultiheadAttention weights: " + "; ".join(problems)
        )


def copy_weights_from_torch_mha(
    layer: MultiHeadSelfAttention, mha: nn.MultiheadAttention
) -> MultiHeadSelfAttention:
    """Give ``layer`` the weights of ``mha`` so that both compute the same eq. (4), in place.

    ``torch.nn.MultiheadAttention`` stacks W_qry, W_key, W_val (each E × E) into ``in_proj_weight``
    (3E × E) and their biases into ``in_proj_bias``; ``out_proj`` is W_out, b_out. Head h uses rows
    h·D_h … (h+1)·D_h − 1 of each, exactly the head split of our layer, and both scale scores by
    1/√D_h. The layer must be content-only (no positional encoding, ``ScoreTerms.content_only()``),
    have E input and output channels, the same heads, and biases exactly where ``mha`` has them;
    anything else raises ``ValueError``. Returns ``layer``.
    """
    _check_mha_compatible(layer, mha)
    e = mha.embed_dim
    with torch.no_grad():
        w = mha.in_proj_weight
        for i, lin in enumerate((layer.query, layer.key, layer.value)):
            lin.weight.copy_(w[i * e : (i + 1) * e])
            if lin.bias is not None:
                lin.bias.copy_(mha.in_proj_bias[i * e : (i + 1) * e])
        layer.out.weight.copy_(mha.out_proj.weight)
        if layer.out.bias is not None:
            layer.out.bias.copy_(mha.out_proj.bias)
    return layer


def apply_torch_mha(mha: nn.MultiheadAttention, x: torch.Tensor) -> torch.Tensor:
    """Self-attention of ``nn.MultiheadAttention`` over the pixels of an image.

    ``x`` is ``(B, C, H, W)``; its T = H·W pixels become the tokens (row-major), ``mha`` is applied
    with query = key = value, and the result is folded back into ``(B, C, H, W)``.
    """
    if x.ndim != 4:
        raise ValueError(
            f"expected an image batch (B, C, H, W), got shape {tuple(x.shape)}"
        )
    b, c, h, w = x.shape
    tokens = x.flatten(2).transpose(1, 2)  # (B, T, C)
    if not mha.batch_first:
        tokens = tokens.transpose(0, 1)
    y, _ = mha(tokens, tokens, tokens, need_weights=False)
    if not mha.batch_first:
        y = y.transpose(0, 1)
    return y.transpose(1, 2).reshape(b, -1, h, w)


# --------------------------------------------------------------------------- permutations
def _permute_pixels(x: torch.Tensor, perm: torch.Tensor) -> torch.Tensor:
    b, c = x.shape[:2]
    return x.reshape(b, c, -1)[:, :, perm].reshape(x.shape)


def _outputs_on_permuted_pixels(
    layer: nn.Module, x: torch.Tensor, generator: torch.Generator
):
    """``(layer(x), layer(πx), π)`` for a random permutation π of the H·W pixels drawn with ``generator``."""
    if x.ndim != 4:
        raise ValueError(
            f"expected an image batch (B, C, H, W), got shape {tuple(x.shape)}"
        )
    perm = torch.randperm(x.shape[2] * x.shape[3], generator=generator)
    with torch.no_grad():
        return layer(x), layer(_permute_pixels(x, perm)), perm


def _output_scale(y: torch.Tensor) -> torch.Tensor:
    """max |y|, the scale of a relative error (refuses an all-zero output)."""
    scale = y.abs().max()
    if scale == 0:
        raise ValueError("layer(x) is all zeros; the relative error is undefined")
    return scale


def permutation_equivariance_error(
    layer: nn.Module, x: torch.Tensor, generator: torch.Generator
) -> float:
    """max |f(πx) − π f(x)| / max |f(x)| for a random permutation π of the pixels (Sec. 2.1).

    π is drawn with ``generator`` and reorders the H·W pixel positions of every image and channel
    of ``x`` (``(B, C, H, W)``) in the same way; ``layer`` must map an image to an image of the same
    H × W. The result is 0 up to rounding for self-attention without positional encoding
    (eqs. 1–4 only see the *set* of tokens) and large once positions enter the scores.
    """
    y, y_perm, perm = _outputs_on_permuted_pixels(layer, x, generator)
    if y.shape[2:] != x.shape[2:]:
        raise ValueError("layer must keep the spatial size of its input")
    return float((y_perm - _permute_pixels(y, perm)).abs().max() / _output_scale(y))


def permutation_invariance_error(
    layer: nn.Module, x: torch.Tensor, generator: torch.Generator
) -> float:
    """max |f(πx) − f(x)| / max |f(x)| for a random permutation π of the pixels: what Sec. 2.1's gloss
    "it gives the same output independently of how the T input tokens are shuffled" would make 0.
    Self-attention is equivariant (:func:`permutation_equivariance_error` is 0), not invariant: this
    is large for any layer whose output differs between pixels."""
    y, y_perm, _ = _outputs_on_permuted_pixels(layer, x, generator)
    return float((y_perm - y).abs().max() / _output_scale(y))


# --------------------------------------------------------------------------- eq. (8), term by term
def _shifts(h: int, w: int, p: int, device) -> torch.Tensor:
    """δ = k − q for every query of the H×W image and every key of the grid padded by p: (T_q, T_k, 2)."""
    qi, qj = torch.meshgrid(
        torch.arange(h, device=device), torch.arange(w, device=device), indexing="ij"
    )
    ki, kj = torch.meshgrid(
        torch.arange(-p, h + p, device=device),
        torch.arange(-p, w + p, device=device),
        indexing="ij",
    )
    q = torch.stack([qi.reshape(-1), qj.reshape(-1)], -1)
    k = torch.stack([ki.reshape(-1), kj.reshape(-1)], -1)
    return k[None, :, :] - q[:, None, :]


def _relative_features(enc: nn.Module, delta: torch.Tensor, dtype) -> torch.Tensor:
    """r_δ written out from the encoding's definition (eqs. 9, 16, learned table)."""
    d = delta.to(dtype)
    d1, d2 = d[..., 0], d[..., 1]
    if isinstance(enc, QuadraticEncoding):
        return torch.stack([d1 * d1 + d2 * d2, d1, d2], -1)
    if isinstance(enc, GeneralizedQuadraticEncoding):
        return torch.stack([d1, d2, d1 * d1, d2 * d2, d1 * d2], -1)
    m = enc.max_shift
    if int(delta.abs().max()) > m:
        raise ValueError(
            f"shifts up to {int(delta.abs().max())} exceed the encoding's max_shift={m}"
        )
    rows = enc.axis_embeddings[0].weight[delta[..., 0] + m]
    cols = enc.axis_embeddings[1].weight[delta[..., 1] + m]
    return torch.cat([rows, cols], -1).to(dtype)


def _position_only(
    enc: nn.Module, delta: torch.Tensor, r: torch.Tensor
) -> torch.Tensor:
    """v_hᵀ Ŵ_key r_δ per head, (N_h, T_q, T_k), built from v of eq. (9) / (16) or the learned keys.

    For the quadratic encodings the layer uses the centred form, which differs from v_hᵀ r_δ by
    the per-head constant α‖Δ‖² (eq. 9) or ½ΔᵀΣ⁻¹Δ (eq. 16); it is subtracted here (a softmax
    ignores it).
    """
    if isinstance(enc, LearnedRelativeEncoding):
        return torch.einsum("qkp,hp->hqk", r, enc.head_keys.to(r.dtype))
    c = enc.centers.to(r.dtype)
    if isinstance(enc, QuadraticEncoding):
        a = enc.width().to(r.dtype)  # α (s²/2 with the spread parametrization)
        v = -a[:, None] * torch.cat(
            [torch.ones_like(a)[:, None], -2 * c], -1
        )  # eq. (9)
        const = a * (c * c).sum(-1)
    else:
        m = enc.inv_sqrt_sigma.to(r.dtype)
        s = m @ m.transpose(-1, -2)  # Σ⁻¹
        sd = (s @ c[..., None])[..., 0]
        v = -0.5 * torch.stack(
            [-2 * sd[:, 0], -2 * sd[:, 1], s[:, 0, 0], s[:, 1, 1], 2 * s[:, 0, 1]], -1
        )  # eq. (16)
        const = 0.5 * (c * sd).sum(-1)
    return torch.einsum("qkp,hp->hqk", r, v) - const[:, None, None]


def score_terms(
    layer: MultiHeadSelfAttention, x: torch.Tensor
) -> Dict[str, torch.Tensor]:
    """The four terms of eq. (8), each computed on its own from the parameters of ``layer``.

    For query pixel q, key pixel k (on the grid zero-padded by ``layer.key_padding``), δ = k − q and
    head h, with q_h = (X_q W_qry + b)_h and k_h = (X_k W_key + b)_h:

    * ``content_content``  = s · q_h · k_h
    * ``content_position`` = s · q_h Ŵ_key^h r_δ          (Ŵ_key^h = ``layer.relative_key[h]``)
    * ``key_bias``         = s · u_h · k_h                (u_h = ``layer.key_bias_query[h]``)
    * ``position_only``    = v_hᵀ Ŵ_key r_δ               (not scaled)

    with s = ``layer.scale``. Terms the layer switches off are zeros; no gradients are tracked. Every term has shape
    ``(B, N_h, T_q, T_k)``; their sum equals ``layer.attention_scores(x)`` (broadcast over B for
    position-only layers). δ and r_δ are rebuilt here from the definitions (eq. 9, eq. 16 or the
    learned row/column tables), independently of :mod:`attnconv.core.grid` and the encodings' methods.
    An :class:`~attnconv.core.encodings.AbsoluteEncoding` is added to X before the projections (eq. 3).
    Supported: 2-D layers without encoding, with an absolute, quadratic, generalized quadratic or
    learned relative encoding; anything else raises ``ValueError``.
    """
    if not isinstance(layer, MultiHeadSelfAttention) or layer.spatial_dims != 2:
        raise ValueError("score_terms needs a 2-D MultiHeadSelfAttention layer")
    enc = layer.encoding
    supported = (
        type(None),
        AbsoluteEncoding,
        QuadraticEncoding,
        GeneralizedQuadraticEncoding,
        LearnedRelativeEncoding,
    )
    if not isinstance(enc, supported):
        raise ValueError(f"score_terms does not support {type(enc).__name__}")
    if x.ndim != 4 or x.shape[1] != layer.in_channels:
        raise ValueError(
            f"expected (B, {layer.in_channels}, H, W), got shape {tuple(x.shape)}"
        )
    with torch.no_grad():
        return _score_terms(layer, x)


def _score_terms(
    layer: MultiHeadSelfAttention, x: torch.Tensor
) -> Dict[str, torch.Tensor]:
    enc, terms = layer.encoding, layer.terms
    b, _, h, w = x.shape
    p, nh, dh, s = layer.key_padding, layer.num_heads, layer.head_dim, layer.scale
    t_q, t_k = h * w, (h + 2 * p) * (w + 2 * p)
    xa = x + enc.embedding if isinstance(enc, AbsoluteEncoding) else x
    xq = xa.reshape(b, -1, t_q).transpose(1, 2)  # (B, T_q, C)
    xk = F.pad(xa, [p, p, p, p]).reshape(b, -1, t_k).transpose(1, 2)  # (B, T_k, C)

    def project(lin, tokens):
        out = tokens @ lin.weight.T + (lin.bias if lin.bias is not None else 0)
        return out.reshape(b, tokens.shape[1], nh, dh).permute(
            0, 2, 1, 3
        )  # (B, N_h, T, D_h)

    zero = x.new_zeros(b, nh, t_q, t_k)
    out = {name: zero for name in TERM_NAMES}
    q = project(layer.query, xq) if layer.query is not None else None
    k = project(layer.key, xk) if layer.key is not None else None
    if terms.content_content:
        out["content_content"] = s * torch.einsum("bhqd,bhkd->bhqk", q, k)
    if terms.key_bias:
        u = layer.key_bias_query.to(x.dtype)
        out["key_bias"] = s * torch.einsum("hd,bhkd->bhk", u, k)[:, :, None, :].expand(
            b, nh, t_q, t_k
        )
    if terms.uses_position:
        delta = _shifts(h, w, p, x.device)
        r = _relative_features(enc, delta, x.dtype)  # (T_q, T_k, D_p)
        if terms.content_position:
            out["content_position"] = s * torch.einsum(
                "bhqd,hdp,qkp->bhqk", q, layer.relative_key.to(x.dtype), r
            )
        if terms.position_only:
            out["position_only"] = (
                _position_only(enc, delta, r).unsqueeze(0).expand(b, nh, t_q, t_k)
            )
    return out


def plot_score_terms(
    terms: Dict[str, torch.Tensor],
    shape: Sequence[int],
    query: Tuple[int, int],
    head: int = 0,
    key_padding: int = 0,
    image: int = 0,
    axes=None,
    per_row: int = 3,
):
    """One panel per term of eq. (8) plus their sum: the scores of ``head`` for one query pixel
    over the (padded) key grid. ``terms`` is what :func:`score_terms` returns. The panels go
    ``per_row`` to a row across the book's column (the last row centred)."""
    import numpy as np
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.patches import Rectangle

    h, w = shape
    if not (0 <= query[0] < h and 0 <= query[1] < w):
        raise ValueError(f"query {query} is outside the {h}×{w} grid")
    if per_row < 1:
        raise ValueError(f"per_row must be at least 1, got {per_row}")
    p = key_padding
    qi = query[0] * w + query[1]
    panels = [(name.replace("_", "-"), terms[name]) for name in TERM_NAMES]
    panels.append(("sum = score A", sum(terms[name] for name in TERM_NAMES)))
    if axes is None:
        fig, axes = _panel_grid(len(panels), per_row)
    else:
        axes = list(np.asarray(axes).ravel())
        fig = axes[0].figure
    for ax, (title, t) in zip(axes, panels):
        m = (
            t[image, head, qi]
            .detach()
            .double()
            .cpu()
            .numpy()
            .reshape(h + 2 * p, w + 2 * p)
        )
        lim = max(abs(m.min()), abs(m.max()), 1e-12)
        im = ax.imshow(m, cmap="RdBu_r", norm=TwoSlopeNorm(0.0, -lim, lim))
        ax.add_patch(
            Rectangle(
                (query[1] + p - 0.5, query[0] + p - 0.5),
                1,
                1,
                fill=False,
                ec="black",
                lw=1.5,
            )
        )
        fig.colorbar(im, ax=ax, fraction=0.046)
        ax.set_title(title, fontsize=8.5)
        ax.set_xticks([]), ax.set_yticks([])
    fig.tight_layout(pad=0.4, w_pad=0.8, h_pad=0.8)
    return fig


def _panel_grid(n: int, per_row: int):
    """A figure as wide as the book's column with ``n`` equal panels, ``per_row`` to a row; a
    last row with fewer panels is centred (each panel spans two of ``2 * per_row`` columns)."""
    import matplotlib.pyplot as plt

    per_row = min(per_row, n)
    rows = -(-n // per_row)
    width = COLUMN_INCHES - 0.1  # the tight bounding box adds a few pixels
    row_height = max(0.92 * width / per_row, 2.3)  # inches: room for title and bar
    fig = plt.figure(figsize=(width, rows * row_height))
    grid = fig.add_gridspec(rows, 2 * per_row)
    axes = []
    for i in range(n):
        row, col = divmod(i, per_row)
        in_row = min(per_row, n - row * per_row)
        start = per_row - in_row + 2 * col
        axes.append(fig.add_subplot(grid[row, start : start + 2]))
    return fig, axes


# --------------------------------------------------------------------------- translations
def _check_shift(shape: Sequence[int], shift: Sequence[int]) -> Tuple[int, int]:
    if len(shift) != 2 or any(int(s) != s for s in shift):
        raise ValueError(f"shift must be two integers (rows, columns), got {shift}")
    dy, dx = int(shift[0]), int(shift[1])
    if abs(dy) >= shape[0] or abs(dx) >= shape[1]:
        raise ValueError(
            f"shift {shift} moves the whole {shape[0]}×{shape[1]} image out of the frame"
        )
    return dy, dx


def shift_image(x: torch.Tensor, shift: Sequence[int]) -> torch.Tensor:
    """Translate images by ``shift`` = (rows, columns), filling with zeros (not circular).

    ``out[..., i, j] = x[..., i − shift[0], j − shift[1]]`` where that pixel exists, else 0: positive
    shifts move the content down and to the right; what leaves the frame is lost.
    """
    if x.ndim < 2:
        raise ValueError(f"expected (..., H, W), got shape {tuple(x.shape)}")
    h, w = x.shape[-2:]
    dy, dx = _check_shift((h, w), shift)
    out = torch.zeros_like(x)
    out[..., max(dy, 0) : h + min(dy, 0), max(dx, 0) : w + min(dx, 0)] = x[
        ..., max(-dy, 0) : h - max(dy, 0), max(-dx, 0) : w - max(dx, 0)
    ]
    return out


def translation_error_map(
    layer: nn.Module, x: torch.Tensor, shift: Sequence[int]
) -> torch.Tensor:
    """Per-pixel |f(shift(x)) − shift(f(x))|, maximised over images and channels: an ``(H, W)`` map.

    A relative encoding (eq. 8) depends on δ = k − q only, so f commutes with translations
    wherever the key sets agree. Pixels whose source pixel q − shift lies outside the image have
    no value of shift(f(x)) (it is zero fill there) and are NaN in the map.
    """
    if x.ndim != 4:
        raise ValueError(
            f"expected an image batch (B, C, H, W), got shape {tuple(x.shape)}"
        )
    h, w = x.shape[-2:]
    dy, dx = _check_shift((h, w), shift)
    with torch.no_grad():
        a = layer(shift_image(x, (dy, dx)))
        b = shift_image(layer(x), (dy, dx))
    if a.shape[-2:] != (h, w):
        raise ValueError("layer must keep the spatial size of its input")
    err = (a - b).abs().amax(dim=(0, 1))
    valid = torch.zeros(h, w, dtype=torch.bool, device=x.device)
    valid[max(dy, 0) : h + min(dy, 0), max(dx, 0) : w + min(dx, 0)] = True
    return err.masked_fill(~valid, float("nan"))


def border_distance(shape: Sequence[int]) -> torch.Tensor:
    """For every pixel of an H×W grid, its distance (in pixels) to the nearest edge pixel:
    0 on the outermost ring, 1 on the next ring, …  An ``(H, W)`` integer tensor."""
    if len(shape) != 2 or any(int(s) < 1 for s in shape):
        raise ValueError(f"shape must be two positive integers, got {tuple(shape)}")
    h, w = int(shape[0]), int(shape[1])
    i = torch.arange(h)[:, None]
    j = torch.arange(w)[None, :]
    return torch.minimum(torch.minimum(i, h - 1 - i), torch.minimum(j, w - 1 - j))


def region_error_stats(error: torch.Tensor, width: int) -> Dict[str, float]:
    """Max and mean of an error map in the border band (pixels closer than ``width`` to the edge)
    and in the interior (the rest), ignoring NaN (undefined) pixels.

    Returns ``{"interior_max", "interior_mean", "border_max", "border_mean"}``; a region without
    defined pixels raises ``ValueError``.
    """
    if error.ndim != 2:
        raise ValueError(
            f"expected an (H, W) error map, got shape {tuple(error.shape)}"
        )
    if width < 0:
        raise ValueError("width must be >= 0")
    border = border_distance(error.shape).to(error.device) < width
    defined = ~error.isnan()
    stats = {}
    for name, mask in (("interior", ~border & defined), ("border", border & defined)):
        if not bool(mask.any()):
            raise ValueError(
                f"the {name} region has no defined pixel (width={width}, shape {tuple(error.shape)})"
            )
        vals = error[mask].double()
        stats[f"{name}_max"], stats[f"{name}_mean"] = (
            float(vals.max()),
            float(vals.mean()),
        )
    return {
        k: stats[k]
        for k in ("interior_max", "interior_mean", "border_max", "border_mean")
    }


#: Errors at or below this are round-off (the chapter's checks bound round-off by it): a colour
#: scale counts them as exact zeros.
ROUND_OFF = 1e-12


def error_map_norm(
    error: torch.Tensor,
    round_off: float = ROUND_OFF,
    decades: float = 2.0,
    low_quantile: float = 0.02,
):
    """The colour scale fitted to one error map (NaN pixels ignored), as a matplotlib norm.
    Errors at or below ``round_off`` count as zeros. When the other errors span more than
    ``decades`` decades, a ``LogNorm`` from their ``low_quantile`` to their largest (smaller
    errors drawn at its bottom); otherwise a linear ``Normalize`` from 0 to the largest error, so
    that zero, exact equivariance, is the bottom of every linear scale."""
    from matplotlib.colors import LogNorm, Normalize

    seen = error[error.isfinite()].double()
    if seen.numel() == 0:
        raise ValueError("the error map has no finite value")
    if bool((seen < 0).any()):
        raise ValueError("errors must be non-negative")
    above = seen[seen > round_off]
    if above.numel() == 0:  # equivariant to round-off everywhere
        return Normalize(0.0, 10 * round_off)
    top = float(above.max())
    low = float(above.quantile(low_quantile))
    if top / low > 10**decades:
        return LogNorm(low, top)
    return Normalize(0.0, top)


def plot_translation_errors(
    maps: Sequence[torch.Tensor], titles: Sequence[str], per_row: int = 2, **norm_kw
):
    """Error maps from :func:`translation_error_map`, ``per_row`` to a row, each panel with its
    own colour bar on the scale fitted to its errors (:func:`error_map_norm`, ``norm_kw`` passed
    on); undefined (NaN) pixels blank. Returns the figure."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    from .shared.plotting import plot_error_map

    if len(maps) != len(titles) or not maps:
        raise ValueError(f"{len(maps)} maps but {len(titles)} titles")
    rows = -(-len(maps) // per_row)
    fig, axes = plt.subplots(
        rows, per_row, figsize=(6.4, 2.8 * rows), layout="constrained", squeeze=False
    )
    for ax in axes.flat[len(maps) :]:
        ax.set_axis_off()
    for ax, err, title in zip(axes.flat, maps, titles):
        norm = error_map_norm(err, **norm_kw)
        if isinstance(norm, LogNorm):
            err = err.clamp_min(norm.vmin)  # below the scale: drawn at its bottom
        plot_error_map(err, title=title, ax=ax, norm=norm)
    return fig


def local_learned_encoding(
    num_heads: int,
    dim: int,
    max_shift: int,
    width: Optional[float],
    noise_std: float,
    generator: torch.Generator,
) -> LearnedRelativeEncoding:
    """A :class:`~attnconv.core.encodings.LearnedRelativeEncoding` (eq. 8) set to a *local* pattern, like
    the attention of early layers in the paper's trained models (Sec. 4): every head's position-only
    score is

        w_hᵀ r_δ = −(δ_1² + δ_2²) / (2·width²) + noise(δ),

    a Gaussian bump of the given width around δ = 0 plus a random learned-looking part. Coordinate
    0 of the row table and of the column table holds −δ_a²/(2·width²) and head key w_h has weight 1
    on both; all other table entries are N(0, ``noise_std``²) and the other head-key weights N(0, 1),
    drawn from ``generator``. ``width=None`` leaves out the bump (a global, non-decaying table).
    The table covers every shift |δ_a| ≤ ``max_shift``, so the layer attends over the whole image.
    """
    if dim % 2 or dim < 4:
        raise ValueError(
            f"dim must be even and >= 4 (a decay coordinate plus noise per axis), got {dim}"
        )
    if width is not None and width <= 0:
        raise ValueError("width must be > 0 or None")
    if noise_std < 0:
        raise ValueError("noise_std must be >= 0")
    enc = LearnedRelativeEncoding(num_heads, dim, max_shift)
    half = dim // 2
    shifts = torch.arange(-max_shift, max_shift + 1, dtype=torch.float64)
    decay = (
        -(shifts**2) / (2 * width**2) if width is not None else torch.zeros_like(shifts)
    )
    with torch.no_grad():
        for table in enc.axis_embeddings:
            noise = (
                torch.randn(
                    table.weight.shape, generator=generator, dtype=torch.float64
                )
                * noise_std
            )
            noise[:, 0] = decay
            table.weight.copy_(noise)
        keys = torch.randn(num_heads, dim, generator=generator, dtype=torch.float64)
        keys[:, 0] = 1.0
        keys[:, half] = 1.0
        enc.head_keys.copy_(keys)
    return enc
