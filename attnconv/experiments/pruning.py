"""Pruning degenerate attention heads of the generalized quadratic model (paper App. A.1, "Pruning degenerated heads").

A head of the generalized quadratic encoding (eq. 16) attends with a Gaussian of inverse covariance
Σ⁻¹ = M Mᵀ. After training, some heads are *degenerate*:

* non-localised — Σ⁻¹ ≈ 0, the head averages the whole image: largest eigenvalue of Σ⁻¹ below a
  threshold (paper: 1e-5);
* elongated — Σ⁻¹ near singular, the head attends along a line: condition number of Σ⁻¹ above a
  threshold (paper: 1e5; the authors' code used 1e3).

:func:`prune_heads` removes chosen heads: their encoding parameters and their D input columns of
the merged output Linear(N_h·D → D) (and their rows of the query/key projections when the content
term is on). The other heads are untouched, so their outputs are unchanged. Pruning the paper's
15 heads of the full generalized model leaves 9,686,916 parameters (paper: 9.7M).
"""

from __future__ import annotations

import copy
from typing import Callable, Dict, List, Mapping, Sequence, Tuple, Union

import torch
from torch import nn

from .paper_numbers import (
    PAPER_CONDITION_THRESHOLD,
    PAPER_MAX_EIGENVALUE_THRESHOLD,
)

__all__ = [
    "inverse_covariance_spectrum",
    "check_thresholds",
    "is_degenerate",
    "head_statistics",
    "degenerate_heads",
    "prune_heads",
    "prune_degenerate_heads",
    "layer_removal_accuracies",
    "head_removal_accuracies",
]


HeadSelection = Union[Mapping[int, Sequence[int]], Sequence[Sequence[int]]]


def _inverse_sqrt_covariances(model) -> List[torch.Tensor]:
    """Per layer, the factors M of Σ⁻¹ = M Mᵀ of its heads, ``(N_h, 2, 2)`` float64: each Gaussian
    encoding's ``inverse_sqrt_covariance`` (the quadratic encoding's Σ⁻¹ = 2α·I has M = √(2α)·I)."""
    out = []
    for i, layer in enumerate(model.layers):
        att = layer.attention
        if att is None:
            out.append(torch.zeros(0, 2, 2, dtype=torch.float64))
            continue
        enc = att.encoding
        if not getattr(enc, "is_gaussian", False):
            raise TypeError(
                f"layer {i} has a {type(enc).__name__}: degenerate heads are defined for quadratic encodings"
            )
        out.append(enc.inverse_sqrt_covariance(torch.float64).detach().cpu())
    return out


def inverse_covariance_spectrum(
    inv_sqrt_sigma: torch.Tensor,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Eigenvalues of Σ⁻¹ = M Mᵀ (eq. 16) for a stack of 2×2 factors ``inv_sqrt_sigma`` ``(..., 2, 2)``,
    ascending, ``(..., 2)`` in float64, and the condition numbers λ_max/λ_min (``inf`` where λ_min = 0).

    Closed form: λ_max = (tr + √((a − c)² + 4b²))/2 and λ_min = det(Σ⁻¹)/λ_max with det(Σ⁻¹) = det(M)².
    Unlike an eigensolver, whose absolute error is about eps·λ_max, this keeps a tiny λ_min accurate
    (and never negative), so a printed condition number is the same on every CPU."""
    m = inv_sqrt_sigma.detach().double().cpu()
    p, q, r, t = m[..., 0, 0], m[..., 0, 1], m[..., 1, 0], m[..., 1, 1]
    a, b, c = p * p + q * q, p * r + q * t, r * r + t * t
    hi = 0.5 * (a + c + torch.hypot(a - c, 2 * b))
    det = (p * t - q * r) ** 2
    lo = torch.where(
        hi > 0, det / torch.where(hi > 0, hi, torch.ones_like(hi)), torch.zeros_like(hi)
    )
    cond = torch.where(
        lo > 0,
        hi / torch.where(lo > 0, lo, torch.ones_like(lo)),
        torch.full_like(hi, float("inf")),
    )
    return torch.stack([lo, hi], -1), cond


def check_thresholds(
    max_eigenvalue_threshold: float, condition_threshold: float
) -> None:
    """Refuse thresholds that select nothing meaningful (λ_max threshold < 0, condition < 1)."""
    if max_eigenvalue_threshold < 0 or condition_threshold < 1:
        raise ValueError(
            "max_eigenvalue_threshold must be >= 0 and condition_threshold >= 1"
        )


def is_degenerate(
    lambda_max,
    condition,
    max_eigenvalue_threshold: float = PAPER_MAX_EIGENVALUE_THRESHOLD,
    condition_threshold: float = PAPER_CONDITION_THRESHOLD,
):
    """App. A.1's rule, the one place it is written: a head is degenerate (pruned) when the largest
    eigenvalue of its Σ⁻¹ is below ``max_eigenvalue_threshold`` (it attends nearly uniformly) or its
    condition number is above ``condition_threshold`` (it attends along a line). Works elementwise on
    tensors and on floats."""
    return (lambda_max < max_eigenvalue_threshold) | (condition > condition_threshold)


def head_statistics(model) -> List[Dict[str, torch.Tensor]]:
    """Per layer: ``eigenvalues`` of each head's Σ⁻¹ (``(N_h, 2)``, ascending, float64) and its
    ``condition`` number λ_max/λ_min (``inf`` where λ_min ≤ 0)."""
    stats = []
    for m in _inverse_sqrt_covariances(model):
        eig, cond = inverse_covariance_spectrum(m)
        stats.append({"eigenvalues": eig, "condition": cond})
    return stats


def degenerate_heads(
    model,
    max_eigenvalue_threshold: float = PAPER_MAX_EIGENVALUE_THRESHOLD,
    condition_threshold: float = PAPER_CONDITION_THRESHOLD,
) -> Dict[int, List[int]]:
    """Heads whose Σ⁻¹ has largest eigenvalue < ``max_eigenvalue_threshold`` (non-localised) or
    condition number > ``condition_threshold`` (degenerate): ``{layer: [head, ...]}``, only layers
    with at least one such head."""
    check_thresholds(max_eigenvalue_threshold, condition_threshold)
    out = {}
    for i, s in enumerate(head_statistics(model)):
        bad = is_degenerate(
            s["eigenvalues"][:, 1],
            s["condition"],
            max_eigenvalue_threshold,
            condition_threshold,
        )
        heads = [int(h) for h in torch.nonzero(bad).flatten()]
        if heads:
            out[i] = heads
    return out


def _normalise_selection(model, heads_per_layer: HeadSelection) -> Dict[int, List[int]]:
    n_layers = len(model.layers)
    if isinstance(heads_per_layer, Mapping):
        items = heads_per_layer.items()
    else:
        if len(heads_per_layer) != n_layers:
            raise ValueError(
                f"a list selection needs one entry per layer ({n_layers}), got {len(heads_per_layer)}"
            )
        items = enumerate(heads_per_layer)
    sel = {}
    for layer, heads in items:
        layer = int(layer)
        if not 0 <= layer < n_layers:
            raise ValueError(f"layer {layer} out of range [0, {n_layers})")
        heads = [int(h) for h in heads]
        n = model.layers[layer].num_heads
        if len(set(heads)) != len(heads):
            raise ValueError(f"layer {layer}: duplicate heads in {heads}")
        if any(not 0 <= h < n for h in heads):
            raise ValueError(f"layer {layer}: heads {heads} out of range [0, {n})")
        if heads:
            sel[layer] = sorted(heads)
    return sel


def _keep_rows(linear: nn.Linear, index: torch.Tensor) -> None:
    linear.weight = nn.Parameter(linear.weight.detach().index_select(0, index).clone())
    if linear.bias is not None:
        linear.bias = nn.Parameter(linear.bias.detach().index_select(0, index).clone())
    linear.out_features = len(index)


def _keep_columns(linear: nn.Linear, index: torch.Tensor) -> None:
    linear.weight = nn.Parameter(linear.weight.detach().index_select(1, index).clone())
    linear.in_features = len(index)


@torch.no_grad()
def prune_heads(model, heads_per_layer: HeadSelection):
    """Remove the chosen heads of a :class:`~attnconv.experiments.models.SelfAttentionClassifier`, in place.

    ``heads_per_layer``: ``{layer: [head, ...]}`` or one list per layer; head indices refer to the
    model's current heads. For each pruned head this deletes its encoding parameters (every direct
    parameter of the encoding indexed by head: Δ, s or M, learned head keys), its D input columns
    of the merged output Linear(N_h·D → D), and its query/key rows with the content term. Heads kept
    keep their parameters, so their outputs do not change. A layer whose heads are all pruned
    outputs the constant bias of that Linear. Returns ``model``; build the optimizer afterwards.
    """
    sel = _normalise_selection(model, heads_per_layer)
    for li, heads in sel.items():
        layer = model.layers[li]
        att = layer.attention
        n, d = att.num_heads, att.head_dim
        keep = [h for h in range(n) if h not in heads]
        if not keep:
            bias = (
                att.out.bias.detach().clone()
                if att.out.bias is not None
                else att.out.weight.new_zeros(att.out_channels)
            )
            layer.attention_bias = nn.Parameter(bias)
            layer.attention = None
            continue
        dev = att.out.weight.device
        head_index = torch.tensor(keep, device=dev)
        col_index = torch.cat(
            [torch.arange(h * d, (h + 1) * d, device=dev) for h in keep]
        )
        enc = att.encoding
        for name, p in list(enc.named_parameters(recurse=False)):
            if p.shape[0] != n:
                raise RuntimeError(
                    f"encoding parameter {name} has no head dimension ({tuple(p.shape)})"
                )
            setattr(
                enc,
                name,
                nn.Parameter(
                    p.detach().index_select(0, head_index.to(p.device)).clone()
                ),
            )
        enc.num_heads = len(keep)
        for name in ("key_bias_query", "relative_key"):
            p = getattr(att, name, None)
            if p is not None:
                setattr(
                    att,
                    name,
                    nn.Parameter(p.detach().index_select(0, head_index).clone()),
                )
        for proj in (att.query, att.key, att.value):
            if proj is not None:
                _keep_rows(proj, col_index)
        _keep_columns(att.out, col_index)
        att.num_heads = len(keep)
    return model


def prune_degenerate_heads(
    model,
    max_eigenvalue_threshold: float = PAPER_MAX_EIGENVALUE_THRESHOLD,
    condition_threshold: float = PAPER_CONDITION_THRESHOLD,
) -> Dict[int, List[int]]:
    """Find (:func:`degenerate_heads`) and remove (:func:`prune_heads`) degenerate heads; returns
    the heads removed, ``{layer: [head, ...]}`` in the indices before pruning."""
    sel = degenerate_heads(model, max_eigenvalue_threshold, condition_threshold)
    prune_heads(model, sel)
    return sel


def layer_removal_accuracies(
    model, accuracy: Callable[[nn.Module], float]
) -> Dict[str, object]:
    """How much each layer's heads matter (the paper's "the last two layers look redundant",
    Sec. 4.2): ``accuracy(model)`` of the trained model, then of copies with all heads of one layer
    removed (:func:`prune_heads`; that layer's MHSA then outputs its constant bias, the residual,
    dense and MLP parts stay), one layer at a time, with no retraining.

    Returns ``{"full": acc, "without_layer": [acc without layer 1, ..., without layer L]}``."""
    full = float(accuracy(model))
    without = []
    for li, layer in enumerate(model.layers):
        if layer.num_heads == 0:
            without.append(full)
            continue
        pruned = prune_heads(copy.deepcopy(model), {li: list(range(layer.num_heads))})
        without.append(float(accuracy(pruned)))
    return {"full": full, "without_layer": without}


def head_removal_accuracies(
    model, accuracy: Callable[[nn.Module], float]
) -> Dict[str, object]:
    """``accuracy(model)`` of copies of the trained model with one head removed
    (:func:`prune_heads`), every head in turn, with no retraining: a head whose removal costs
    (almost) nothing is redundant in the sense of the paper's Sec. 4.3.

    Returns ``{"full": acc, "without_head": [[acc without head 1 of layer 1, ...], ...]}``."""
    full = float(accuracy(model))
    out = []
    for li, layer in enumerate(model.layers):
        out.append(
            [
                float(accuracy(prune_heads(copy.deepcopy(model), {li: [h]})))
                for h in range(layer.num_heads)
            ]
        )
    return {"full": full, "without_head": out}
