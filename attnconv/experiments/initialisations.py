"""Four ways to start a GPSA layer (:class:`attnconv.core.gpsa.GatedPositionalSelfAttention`), one
function each, and :func:`initialise` that applies one to every layer of a model.

* :func:`random_init` — the vision transformers' default (:func:`vit_default_weights`: truncated
  normal weights of σ = 0.02, zero biases, λ = 1): the baseline. Every other initialisation starts
  from it and changes only what it names.
* :func:`convit_init` — ConViT's local initialisation (d'Ascoli et al. 2021): the N_h = K² heads
  centred on the K×K lattice of shifts with width α ("locality strength"), W_val = I.
* :func:`impulse_init` — the paper's construction on random impulse filters (the idea of Zheng et
  al. 2024): each head is Lemma 2's quadratic head centred on a shift drawn at random from the K×K
  window, i.e. Theorem 1 applied to a random one-hot K×K kernel per head, at a width α that makes
  it nearly one-hot. Values and output keep their random weights.
* :func:`mimetic_init` — mimetic initialisation (Trockman & Kolter 2023): W_q W_kᵀ = α₁Z₁ + β₁I
  and W_v W_out = α₂Z₂ − β₂I with Z of N(0, 1/D) entries, factored by an SVD.

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
from ..core.gpsa import GatedPositionalSelfAttention, quadratic_weights

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


def convit_init(
    layer: GatedPositionalSelfAttention, locality_strength: float = 1.0, generator=None
) -> None:
    """ConViT's local initialisation: head h centred on the h-th shift of the K×K lattice
    (row-major, K² = N_h) with width α = ``locality_strength`` (eq. 9's v_pos = −α(1, −2Δ)), and
    W_val = I; the rest as :func:`vit_default_weights`."""
    vit_default_weights(layer, generator)
    k = lattice_size(layer.num_heads)
    _set_positional(layer, kernel_shifts(k).to(torch.float64), locality_strength)
    with torch.no_grad():
        layer.v.weight.copy_(torch.eye(layer.dim))


def impulse_init(
    layer: GatedPositionalSelfAttention,
    alpha: float = IMPULSE_ALPHA,
    kernel_size: Optional[int] = None,
    generator: Optional[torch.Generator] = None,
) -> None:
    """Theorem 1 on a random impulse filter per head: head h is Lemma 2's quadratic head centred
    on a shift drawn uniformly from the K×K window (default K² = N_h; two heads may share a
    shift), width α. The rest, values and output included, as :func:`vit_default_weights`."""
    vit_default_weights(layer, generator)
    k = kernel_size or lattice_size(layer.num_heads)
    shifts = kernel_shifts(k).to(torch.float64)
    pick = torch.randint(len(shifts), (layer.num_heads,), generator=generator)
    _set_positional(layer, shifts[pick], alpha)


def _factor(m: torch.Tensor):
    """A, B with A Bᵀ = m (an SVD split evenly: A = U√S, B = V√S)."""
    u, s, vh = torch.linalg.svd(m)
    root = s.sqrt()
    return u * root, vh.T * root


def mimetic_init(
    layer: GatedPositionalSelfAttention,
    scales=MIMETIC_SCALES,
    generator: Optional[torch.Generator] = None,
) -> None:
    """Mimetic initialisation: W_q W_kᵀ = α₁Z₁ + β₁I and W_v W_out = α₂Z₂ − β₂I (row-vector
    convention, x ↦ x W), Z of i.i.d. N(0, 1/D) entries, each product factored by an SVD. The
    rest (the positional part, λ = 1) as :func:`vit_default_weights`."""
    vit_default_weights(layer, generator)
    a1, b1, a2, b2 = scales
    d = layer.dim
    eye = torch.eye(d, dtype=torch.float64)

    def noise():
        return torch.randn(d, d, generator=generator, dtype=torch.float64) / math.sqrt(
            d
        )

    wq, wk = _factor(a1 * noise() + b1 * eye)
    wv, wo = _factor(a2 * noise() - b2 * eye)
    dtype = layer.qk.weight.dtype
    with torch.no_grad():
        layer.qk.weight.copy_(torch.cat([wq.T, wk.T]).to(dtype))
        layer.v.weight.copy_(wv.T.to(dtype))
        layer.proj.weight.copy_(wo.to(dtype))


def gpsa_from_conv(
    conv: nn.Conv2d, alpha: float, gate_logit: float = 40.0
) -> GatedPositionalSelfAttention:
    """Theorem 1 for GPSA: a layer of N_h = K² heads equal to ``conv`` (D_in = D_out = D channels)
    as α → ∞ away from the border, with the gate closed on position (λ = ``gate_logit``, σ(40) = 1
    in float64). Head h is centred on the h-th kernel shift (Lemma 2); its value/output slices
    factor the kernel slice W[:, :, Δ_h] at rank D_h = D/N_h (Lemma 1, as
    :func:`attnconv.core.conv.conv_to_mhsa` with ``head_dim=D_h``)."""
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
}


def gpsa_layers(model: nn.Module):
    """The GPSA layers of ``model``, in order."""
    return [m for m in model.modules() if isinstance(m, GatedPositionalSelfAttention)]


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
