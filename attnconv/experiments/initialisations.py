"""Ways to start a GPSA layer (:class:`attnconv.core.gpsa.GatedPositionalSelfAttention`), one
function each, and :func:`initialise` that applies one to every layer of a model.

* :func:`random_init` — the vision transformers' default (:func:`vit_default_weights`: truncated
  normal weights of σ = 0.02, zero biases, λ = 1): the baseline. Every other initialisation starts
  from it and changes only what it names.
* :func:`convit_init` — ConViT's local initialisation (d'Ascoli et al. 2021) for any head count:
  K = ⌊√N_h⌋, the first K² heads centred on the K×K lattice of shifts around (K−1)/2 (half-integer
  centres for even K) with width α ("locality strength"), the other heads' positional weights
  × α, W_val = I (timm's ``GPSA.local_init``).
* :func:`impulse_init` — the paper's construction on impulse filters (the idea of Zheng et al.
  2024): each head is Lemma 2's quadratic head centred on one shift of the K×K window, every shift
  present in each layer (the layer of Theorem 1), assigned to the heads in a random order, at a
  width α that makes it nearly one-hot. Values and output keep their random weights.
* :func:`mimetic_init` — mimetic initialisation (Trockman & Kolter 2023): each head its own
  W_q^h W_k^hᵀ ≈ α₁Z₁^h + β₁I (its own noise, the best rank-D_h factor), and
  W_v W_out = α₂Z₂ − β₂I for the layer (the heads' value/output slices sum to it).
  :func:`mimetic_qk_init` and :func:`mimetic_vo_init` are its two halves alone (the ablation).

:func:`gpsa_from_conv` is Theorem 1 itself for a GPSA layer: its positional heads on the kernel's
shifts, its value/output slices the kernel's (Lemma 1), the gate closed on position.
"""

from __future__ import annotations

import math
from typing import Callable, Dict, Optional

import torch
from torch import nn

from ..core.conv import check_supported_conv, head_weights_from_kernel
from ..core.encodings import kernel_shifts
from ..core.gpsa import (
    GatedPositionalSelfAttention,
    GridSelfAttention,
    quadratic_weights,
)

__all__ = [
    "IMPULSE_ALPHA",
    "MIMETIC_SCALES",
    "INITIALISATIONS",
    "lattice_size",
    "vit_default_weights",
    "random_init",
    "convit_init",
    "impulse_init",
    "mimetic_init",
    "mimetic_qk_init",
    "mimetic_vo_init",
    "convit_centres",
    "gpsa_from_conv",
    "initialise",
    "gpsa_layers",
]

#: Width α of the impulse heads: the centre shift gets ≥ 0.93 of a head's positional attention
#: (1 / (1 + 4e⁻⁴ + 4e⁻⁸ + …) inside the grid), Lemma 2's one-hot regime at a trainable width.
IMPULSE_ALPHA = 4.0
#: (α₁, β₁, α₂, β₂) of :func:`mimetic_init`: noise and identity weights of W_q W_kᵀ and of
#: W_v W_out. The book's choice (noise as large as the identity in Frobenius norm for the
#: query-key product, smaller for the value-output product), not values quoted from the paper.
MIMETIC_SCALES = (0.7, 0.7, 0.4, 0.4)


def lattice_size(num_heads: int) -> int:
    """K with K² = N_h: the kernel a layer of N_h heads can express (Theorem 1)."""
    k = math.isqrt(num_heads)
    if k * k != num_heads:
        raise ValueError(f"{num_heads} heads do not fill a K×K lattice")
    return k


def _set_positional(
    layer: GatedPositionalSelfAttention, centres: torch.Tensor, alpha
) -> None:
    with torch.no_grad():
        w = quadratic_weights(centres.to(layer.pos_proj.weight.dtype), alpha)
        layer.pos_proj.weight.copy_(w)
        layer.pos_proj.bias.zero_()


def vit_default_weights(module: nn.Module, generator=None) -> None:
    """The vision transformers' default (timm's ViT and ConViT): every ``nn.Linear`` weight of
    ``module`` drawn from a normal of σ = 0.02 (truncated at ±2, as timm's), biases 0, GPSA
    gates λ = 1.
    (PyTorch's own default, uniform in ±1/√3 for the 3-input positional map, would make the
    positional heads peak on far corners: ‖δ‖² reaches 98 on an 8×8 grid.)"""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02, generator=generator)
                if m.bias is not None:
                    m.bias.zero_()
            if isinstance(m, GatedPositionalSelfAttention):
                m.gating_param.fill_(1.0)


def random_init(layer: GatedPositionalSelfAttention, generator=None) -> None:
    """The baseline: :func:`vit_default_weights`, nearly uniform positional attention (scores
    within about ±2 on an 8×8 grid), λ = 1."""
    vit_default_weights(layer, generator)


def convit_centres(num_heads: int) -> torch.Tensor:
    """ConViT's local centres: K = ⌊√N_h⌋, the K² shifts (i − c, j − c), i, j < K, c = (K − 1)/2,
    row-major (timm lists them column-major: position i + K·j; the heads are relabelled, the layer
    is the same): a ``(K², 2)`` float64 tensor."""
    k = math.isqrt(num_heads)
    if k < 1:
        raise ValueError(f"a layer of {num_heads} heads has no ConViT lattice")
    axis = torch.arange(k, dtype=torch.float64) - (k - 1) / 2
    rows, cols = torch.meshgrid(axis, axis, indexing="ij")
    return torch.stack([rows.reshape(-1), cols.reshape(-1)], dim=-1)


def convit_init(
    layer: GatedPositionalSelfAttention, locality_strength: float = 1.0, generator=None
) -> None:
    """ConViT's local initialisation (timm's ``GPSA.local_init``) for any head count: the first
    K² = ⌊√N_h⌋² heads centred on :func:`convit_centres` with width α = ``locality_strength``
    (eq. 9's v_pos = −α(1, −2Δ)), the other heads' positional weights their default × α (timm's
    rule for a non-square count), and W_val = I; the rest as :func:`vit_default_weights`."""
    vit_default_weights(layer, generator)
    centres = convit_centres(layer.num_heads)
    with torch.no_grad():
        w = layer.pos_proj.weight
        w[: len(centres)] = quadratic_weights(centres, 1.0).to(w.dtype)
        w.mul_(locality_strength)
        layer.pos_proj.bias.zero_()
        layer.v.weight.copy_(torch.eye(layer.dim))


def impulse_init(
    layer: GatedPositionalSelfAttention,
    alpha: float = IMPULSE_ALPHA,
    kernel_size: Optional[int] = None,
    generator: Optional[torch.Generator] = None,
) -> None:
    """Theorem 1 on impulse filters: every shift of the K×K window (default K = ⌊√N_h⌋, odd) is
    the centre of at least one head (the N_h − K² heads left over get shifts drawn uniformly), in
    a random order; each head is Lemma 2's quadratic head at width α. The rest, values and output
    included, as :func:`vit_default_weights`."""
    vit_default_weights(layer, generator)
    k = kernel_size or math.isqrt(layer.num_heads)
    shifts = kernel_shifts(k).to(torch.float64)
    extra = layer.num_heads - len(shifts)
    if extra < 0:
        raise ValueError(
            f"{layer.num_heads} heads cannot hold the {len(shifts)} shifts of a {k}×{k} window"
        )
    pick = torch.cat(
        [
            torch.arange(len(shifts)),
            torch.randint(len(shifts), (extra,), generator=generator),
        ]
    )
    order = torch.randperm(layer.num_heads, generator=generator)
    _set_positional(layer, shifts[pick[order]], alpha)


def _factor(m: torch.Tensor, rank: Optional[int] = None):
    """A, B with A Bᵀ the best rank-``rank`` approximation of m (all of it by default): an SVD
    split evenly, A = U√S, B = V√S, truncated to the top ``rank`` singular values."""
    u, s, vh = torch.linalg.svd(m)
    r = rank or len(s)
    root = s[:r].sqrt()
    return u[:, :r] * root, vh[:r].T * root


def _noise(d: int, generator) -> torch.Tensor:
    """Z of i.i.d. N(0, 1/D) entries, ``(D, D)`` float64."""
    return torch.randn(d, d, generator=generator, dtype=torch.float64) / math.sqrt(d)


def _mimetic_qk(layer, a1, b1, generator) -> None:
    """Head h: W_q^h W_k^hᵀ = the best rank-D_h approximation of α₁Z^h + β₁I, Z^h its own."""
    d, dh = layer.dim, layer.head_dim
    eye = torch.eye(d, dtype=torch.float64)
    with torch.no_grad():
        for h in range(layer.num_heads):
            wq, wk = _factor(a1 * _noise(d, generator) + b1 * eye, dh)
            rows = slice(h * dh, (h + 1) * dh)
            layer.qk.weight[rows] = wq.T.to(layer.qk.weight.dtype)
            layer.qk.weight[d + h * dh : d + (h + 1) * dh] = wk.T.to(
                layer.qk.weight.dtype
            )


def _mimetic_vo(layer, a2, b2, generator) -> None:
    """W_v W_out = α₂Z + (−β₂)I for the layer (the heads' slices sum to it)."""
    eye = torch.eye(layer.dim, dtype=torch.float64)
    wv, wo = _factor(a2 * _noise(layer.dim, generator) - b2 * eye)
    with torch.no_grad():
        layer.v.weight.copy_(wv.T.to(layer.v.weight.dtype))
        layer.proj.weight.copy_(wo.to(layer.proj.weight.dtype))


def mimetic_init(
    layer: GatedPositionalSelfAttention,
    scales=MIMETIC_SCALES,
    generator: Optional[torch.Generator] = None,
) -> None:
    """Mimetic initialisation (row-vector convention, x ↦ x W): per head h, W_q^h W_k^hᵀ the best
    rank-D_h approximation of α₁Z₁^h + β₁I (each head its own noise and factorisation); for the
    layer, W_v W_out = α₂Z₂ − β₂I; Z of i.i.d. N(0, 1/D) entries. The rest (the positional
    part, λ = 1) as :func:`vit_default_weights`."""
    vit_default_weights(layer, generator)
    a1, b1, a2, b2 = scales
    _mimetic_qk(layer, a1, b1, generator)
    _mimetic_vo(layer, a2, b2, generator)


def mimetic_qk_init(
    layer: GatedPositionalSelfAttention, scales=MIMETIC_SCALES, generator=None
) -> None:
    """The query–key half of :func:`mimetic_init` alone (values and output as
    :func:`vit_default_weights`)."""
    vit_default_weights(layer, generator)
    _mimetic_qk(layer, scales[0], scales[1], generator)


def mimetic_vo_init(
    layer: GatedPositionalSelfAttention, scales=MIMETIC_SCALES, generator=None
) -> None:
    """The value/output half of :func:`mimetic_init` alone (queries and keys as
    :func:`vit_default_weights`)."""
    vit_default_weights(layer, generator)
    _mimetic_vo(layer, scales[2], scales[3], generator)


def gpsa_from_conv(
    conv: nn.Conv2d, alpha: float, gate_logit: float = 40.0
) -> GatedPositionalSelfAttention:
    """Theorem 1 for GPSA: a layer of N_h = K² heads, gate closed on position (λ = ``gate_logit``,
    σ(40) = 1 in float64), head h centred on the h-th kernel shift (Lemma 2) at width α, its
    value/output slices the best rank-D_h factorisation of the kernel slice W[:, :, Δ_h]
    (D_h = D/N_h; Lemma 1, as :func:`attnconv.core.conv.conv_to_mhsa` with ``head_dim=D_h``).

    As α → ∞ it equals, away from the border, the convolution whose kernel slices are those
    rank-D_h approximations: ``conv`` itself when every slice has rank ≤ D_h, and otherwise not
    (a head of dimension D_h cannot carry a slice of higher rank, whatever α; Lemma 1 needs
    D_h ≥ D_out)."""
    k = check_supported_conv(conv)
    weight = conv.weight.detach()
    d_out, d_in = weight.shape[:2]
    if d_out != d_in:
        raise ValueError("a GPSA layer maps D channels to D: the convolution must too")
    layer = GatedPositionalSelfAttention(d_in, k * k).to(weight.dtype)
    shifts = kernel_shifts(k)
    r, dh = (k - 1) // 2, layer.head_dim
    _set_positional(layer, shifts.to(weight.dtype), alpha)
    with torch.no_grad():
        layer.gating_param.fill_(gate_logit)
        for h, (i, j) in enumerate(shifts.tolist()):
            w_out, w_val = head_weights_from_kernel(weight[:, :, i + r, j + r], dh)
            layer.v.weight[h * dh : (h + 1) * dh] = w_val
            layer.proj.weight[:, h * dh : (h + 1) * dh] = w_out
        layer.proj.bias.copy_(
            conv.bias.detach() if conv.bias is not None else torch.zeros(d_out)
        )
    return layer


#: The initialisations by name, in the order the book compares them.
INITIALISATIONS: Dict[str, Callable] = {
    "random": random_init,
    "convit": convit_init,
    "impulse": impulse_init,
    "mimetic": mimetic_init,
    "mimetic_qk": mimetic_qk_init,
    "mimetic_vo": mimetic_vo_init,
}


def gpsa_layers(model: nn.Module):
    """The GPSA layers of ``model`` (plain MHSA layers included), in order."""
    return [m for m in model.modules() if isinstance(m, GridSelfAttention)]


def initialise(model: nn.Module, name: str, generator=None, **options) -> nn.Module:
    """Apply the initialisation ``name`` (a key of :data:`INITIALISATIONS`) to every GPSA layer of
    ``model``; returns the model."""
    if name not in INITIALISATIONS:
        raise ValueError(
            f"unknown initialisation {name!r}; choose one of {list(INITIALISATIONS)}"
        )
    for layer in gpsa_layers(model):
        INITIALISATIONS[name](layer, generator=generator, **options)
    return model
