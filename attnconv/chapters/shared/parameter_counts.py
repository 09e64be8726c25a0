"""Parameter counts of the paper-size models (arXiv v1 Fig. 5 = ICLR Table 1; Secs. 2.3 and 4.3):
the exact count of our models (:func:`paper_size_parameters`), the learned-encoding model under each
reading of the text (:func:`learned_model_parameters`) and the ICLR-only content model as the text
describes it, term by term (:func:`content_variant_parameters`) and from modules
(:func:`content_variant_module_parameters`). Used by chapters 7, 9 and the errata.
"""

from __future__ import annotations

from typing import Dict

import torch

from ...experiments.models import build_model, count_parameters

__all__ = [
    "paper_size_parameters",
    "content_variant_parameters",
    "learned_model_parameters",
    "content_variant_module_parameters",
]


def paper_size_parameters(model: str) -> int:
    """Exact parameter count of ``model`` at the paper's size (built on the ``meta`` device)."""
    with torch.device("meta"):
        return count_parameters(build_model(model))


def content_variant_parameters(
    num_layers: int = 6,
    hidden_size: int = 400,
    num_heads: int = 9,
    head_dim: int = 400,
    tokens_per_side: int = 16,
    intermediate_size: int = 512,
    token_channels: int = 12,
    num_classes: int = 10,
) -> Dict[str, int]:
    """Parameters of the learned-encoding + content model as the paper's text describes it (ICLR
    Table 1 row "SA learned emb. + content-based att.", 29.5M), term by term.

    The variant: the scores are query·key (content-content term of eq. 8) plus query·position
    (content-position term, r_δ read by the query of the head, no Ŵ_key), with r_δ the
    concatenation of a D_p/2 = 200-dimensional row-shift and column-shift embedding (D_p = 400 =
    D_h, Sec. 4.3), one table per layer, and no per-head key vector (no position-only term).

    * ``backbone``: the position-free part of our classifier: embedding Linear(12 → 400), per layer
      the merged output Linear(N_h·D_h → 400), BERT's self-output Linear(400 → 400), two LayerNorms,
      Linear(400 → 512) and Linear(512 → 400); the classifier Linear(400 → 10);
    * ``query_key``: per layer the query and key projections Linear(400 → N_h·D_h) with biases;
    * ``position_embeddings``: per layer 2·(2·15 + 1) shifts (|δ_a| ≤ 15 on 16×16 tokens) × 200.
    """
    d, hd, L = hidden_size, num_heads * head_dim, num_layers
    per_layer = (
        (hd * d + d)
        + (d * d + d)
        + 2 * (2 * d)
        + (d * intermediate_size + intermediate_size)
        + (intermediate_size * d + d)
    )
    backbone = (
        (token_channels * d + d) + L * per_layer + (d * num_classes + num_classes)
    )
    query_key = L * 2 * (d * hd + hd)
    shifts = 2 * (tokens_per_side - 1) + 1
    position_embeddings = L * 2 * shifts * (head_dim // 2)
    return {
        "backbone": backbone,
        "query_key": query_key,
        "position_embeddings": position_embeddings,
        "total": backbone + query_key + position_embeddings,
    }


def learned_model_parameters(
    per_axis: int,
    shared: bool,
    num_layers: int = 6,
    num_heads: int = 9,
    tokens_per_side: int = 16,
) -> int:
    """Parameters of the paper-size learned-encoding model (position only) for a reading of the
    encoding: ``per_axis`` dimensions per row shift and per column shift (D_p = 2·per_axis), one
    table for all layers (``shared``, the text of Secs. 2.3 and 4.3: "shared by all layers and
    heads", D_p/2 = 200) or one per layer (the authors' code: 400 per axis). Each head has its key
    vector w_h ∈ R^{D_p} (the position-only term v_hᵀ Ŵ_key r_δ). The rest is the backbone of
    :func:`content_variant_parameters`."""
    backbone = content_variant_parameters(
        num_layers=num_layers, num_heads=num_heads, tokens_per_side=tokens_per_side
    )["backbone"]
    shifts = 2 * (tokens_per_side - 1) + 1
    tables = (1 if shared else num_layers) * 2 * shifts * per_axis
    keys = num_layers * num_heads * 2 * per_axis
    return backbone + tables + keys


def content_variant_module_parameters() -> int:
    """The same count from modules: our paper-size ``learned_content`` model built on the ``meta``
    device, with each layer's learned encoding (400 per axis and a key vector per head) replaced by
    two ``nn.Embedding(31, 200)`` tables (row and column shifts)."""
    from torch import nn

    with torch.device("meta"):
        model = build_model("learned_content")
        for layer in model.layers:
            shifts = layer.attention.encoding.axis_embeddings[0].num_embeddings
            layer.attention.encoding = nn.ModuleList(
                nn.Embedding(shifts, 200) for _ in range(2)
            )
    return count_parameters(model)
