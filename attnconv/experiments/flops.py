"""Counting the compute of the paper's models, two ways (the "# of FLOPS" column of v1 Figs. 5
and 9, ICLR Table 1).

The paper reports 6.2B FLOPs for the self-attention models and 1.1B for ResNet18. Those numbers are
2 × the multiply-accumulates (MACs) of the **Linear and convolution layers only**. Applying the
attention — each head's T×T probabilities times the D-dimensional values, N_h·T·T·D MACs per
image and layer — is left out: about 1.42 G MACs per image for the 6-layer, 9-head, 16×16-token,
D = 400 models, i.e. +46% on top of the 3.09 G MACs of their Linear layers.

Both ways are provided, per image:

* :func:`count_macs` — forward hooks on ``nn.Linear`` and ``nn.Conv2d``, and a wrapper around each
  attention layer's ``forward_tokens`` that counts from the shapes it sees (works on the ``meta``
  device, so paper-size models cost nothing to count);
* :func:`analytic_macs` — closed-form formulas from a model config (checked against the hooks in
  the tests, and the hooks against ``torch.utils.flop_counter.FlopCounterMode``).

Not counted by either: normalisation, activations, softmax, pooling, biases, and the position-only
scores v_hᵀ r_δ, which do not depend on the image (computed once per batch, ≤ N_h·T·T·5 MACs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Sequence, Union

import torch
from torch import nn

from ..core.attention import MultiHeadSelfAttention
from .models import (
    PAPER_MODELS,
    ResNetConfig,
    SelfAttentionConfig,
    build_model,
    paper_model_config,
)
from .paper_numbers import PAPER_FLOPS

__all__ = ["MacCount", "count_macs", "analytic_macs", "flops_table"]


@dataclass
class MacCount:
    """Multiply-accumulates per image, split by kind."""

    linear: int = 0  # nn.Linear layers (incl. the attention's own projections)
    conv: int = 0  # nn.Conv2d layers
    attention_apply: int = 0  # softmax(A_h) · values, N_h·T_q·T_k·D_h per layer
    attention_scores: int = (
        0  # content terms of eq. (8): q·k (N_h·T_q·T_k·D_h), key bias, q·r
    )

    @property
    def dense(self) -> int:
        """MACs of the Linear and conv layers: what the paper counts."""
        return self.linear + self.conv

    @property
    def attention(self) -> int:
        return self.attention_apply + self.attention_scores

    @property
    def total(self) -> int:
        return self.dense + self.attention

    @property
    def paper_flops(self) -> int:
        """2 × dense MACs: the paper's way (attention left out)."""
        return 2 * self.dense

    @property
    def flops_with_attention(self) -> int:
        """2 × all MACs, attention included."""
        return 2 * self.total

    def __add__(self, other: "MacCount") -> "MacCount":
        return MacCount(
            self.linear + other.linear,
            self.conv + other.conv,
            self.attention_apply + other.attention_apply,
            self.attention_scores + other.attention_scores,
        )


def _attention_macs(
    att: MultiHeadSelfAttention, batch: int, spatial: Sequence[int]
) -> MacCount:
    """MACs of one call of ``att`` on ``batch`` images of grid ``spatial`` (dense attention): the
    probabilities times the values, the content scores, and the merging Linear W_out (which the
    layer applies through its weight, not by calling the module)."""
    p = att.key_padding
    t_q = math.prod(spatial)
    t_k = math.prod(s + 2 * p for s in spatial)
    nh, dh = att.num_heads, att.head_dim
    scores = 0
    if att.terms.content_content:
        scores += nh * t_q * t_k * dh
    if att.terms.key_bias:
        scores += nh * t_k * dh
    if att.terms.content_position:
        dp = att.encoding.dim
        scores += nh * t_q * dh * dp + nh * t_q * t_k * dp
    merge = t_q * nh * dh * att.out_channels
    return MacCount(
        linear=batch * merge,
        attention_apply=batch * nh * t_q * t_k * dh,
        attention_scores=batch * scores,
    )


@torch.no_grad()
def count_macs(
    model: nn.Module, images: Optional[torch.Tensor] = None, batch: int = 1
) -> MacCount:
    """MACs per image of one forward pass, measured while the model runs.

    Forward hooks on every ``nn.Linear`` and ``nn.Conv2d``; every attention layer's
    ``forward_tokens`` (which ``forward`` also goes through) is wrapped to count its attention and
    its merging Linear W_out from the shapes it is called with. ``images`` defaults to ``batch``
    zero images ``(batch, 3, 32, 32)`` on the model's device (build the model under
    ``torch.device("meta")`` to count paper-size models for free). The model runs in eval mode
    and its mode is restored.
    """
    if images is None:
        p = next(model.parameters())
        images = torch.zeros(batch, 3, 32, 32, device=p.device, dtype=p.dtype)
    n = images.shape[0]
    if n < 1:
        raise ValueError("need at least one image")
    total = [MacCount()]

    def on_linear(m: nn.Linear, inputs, output):
        rows = inputs[0].numel() // m.in_features
        total[0] = total[0] + MacCount(linear=rows * m.in_features * m.out_features)

    def on_conv(m: nn.Conv2d, inputs, output):
        kh, kw = m.kernel_size
        total[0] = total[0] + MacCount(
            conv=output.numel() * (m.in_channels // m.groups) * kh * kw
        )

    def wrap(att: MultiHeadSelfAttention):
        inner = type(att).forward_tokens.__get__(att)

        def forward_tokens(tokens, shape, *args, **kwargs):
            total[0] = total[0] + _attention_macs(att, tokens.shape[1], tuple(shape))
            return inner(tokens, shape, *args, **kwargs)

        return forward_tokens

    attentions = [m for m in model.modules() if isinstance(m, MultiHeadSelfAttention)]
    merged = {id(a.out) for a in attentions}
    handles = []
    for m in model.modules():
        if isinstance(m, nn.Linear) and id(m) not in merged:
            handles.append(m.register_forward_hook(on_linear))
        elif isinstance(m, nn.Conv2d):
            handles.append(m.register_forward_hook(on_conv))
    for a in attentions:
        a.forward_tokens = wrap(a)
    was_training = model.training
    model.eval()
    try:
        model(images)
    finally:
        model.train(was_training)
        for h in handles:
            h.remove()
        for a in attentions:
            del a.forward_tokens
    c = total[0]
    for name in ("linear", "conv", "attention_apply", "attention_scores"):
        v = getattr(c, name)
        if v % n:
            raise RuntimeError(f"{name} MACs {v} not divisible by the batch size {n}")
        setattr(c, name, v // n)
    return c


def analytic_macs(
    config: Union[SelfAttentionConfig, ResNetConfig],
    heads_per_layer: Optional[Sequence[int]] = None,
    implementation: str = "dense",
) -> MacCount:
    """Closed-form MACs per image of a model config (``heads_per_layer`` for a pruned model).

    ``implementation="local"`` counts the attention of axis-aligned Gaussian heads as
    :mod:`attnconv.core.local` applies it: a row factor then a column factor, N_h·T·(H + W)·D MACs per
    layer instead of N_h·T·T·D.

    Self-attention, with T tokens, hidden D, intermediate I, N_h heads, C_tok = 3·f² token channels:
    embedding T·C_tok·D; per layer: merged output T·N_h·D·D, self-output T·D·D, feed-forward
    2·T·D·I, attention T·T·N_h·D, and with content q, k projections 2·T·D·N_h·D plus scores
    T·T·N_h·D; classifier D·10. ResNet: Σ over convolutions of H_out·W_out·C_in·k²·C_out.
    """
    if isinstance(config, ResNetConfig):
        conv, s, c_in = 0, 32, config.in_channels
        w0 = config.widths[0]
        conv += s * s * c_in * 9 * w0
        c_in = w0
        for i, (n, w) in enumerate(zip(config.num_blocks, config.widths)):
            for j in range(n):
                stride = 2 if (i > 0 and j == 0) else 1
                s_out = (s - 1) // stride + 1
                conv += s_out * s_out * c_in * 9 * w + s_out * s_out * w * 9 * w
                if stride != 1 or c_in != w:
                    conv += s_out * s_out * c_in * w
                s, c_in = s_out, w
        return MacCount(linear=c_in * config.num_classes, conv=conv)
    if not isinstance(config, SelfAttentionConfig):
        raise TypeError(f"not a model config: {type(config).__name__}")
    t, d, i = config.num_tokens, config.hidden_size, config.intermediate_size
    heads = (
        [config.num_heads] * config.num_layers
        if heads_per_layer is None
        else list(heads_per_layer)
    )
    if len(heads) != config.num_layers:
        raise ValueError(
            f"heads_per_layer needs {config.num_layers} entries, got {len(heads)}"
        )
    linear = t * config.token_channels * d + d * config.num_classes
    apply = scores = 0
    for nh in heads:
        linear += t * d * d + 2 * t * d * i  # self-output, feed-forward
        if nh:
            linear += t * nh * d * d  # merged output Linear(N_h·D → D)
            side = config.tokens_per_side
            apply += nh * t * (2 * side if implementation == "local" else t) * d
            if config.content:
                linear += 2 * t * d * nh * d  # query, key Linear(D → N_h·D)
                scores += nh * t * t * d
    return MacCount(linear=linear, attention_apply=apply, attention_scores=scores)


def flops_table(use_hooks: bool = True) -> List[dict]:
    """Per paper model: the paper's FLOPs, ours counted the paper's way (2 × Linear/conv MACs) and
    ours with the attention included, in GFLOPs per image; plus ``attention_gmacs`` left out."""
    rows = []
    for name in PAPER_MODELS:
        cfg = paper_model_config(name)
        if use_hooks:
            with torch.device("meta"):
                c = count_macs(build_model(cfg))
        else:
            c = analytic_macs(cfg)
        rows.append(
            {
                "model": name,
                "paper": PAPER_FLOPS[name],
                "ours_paper_way_gflops": c.paper_flops / 1e9,
                "ours_with_attention_gflops": c.flops_with_attention / 1e9,
                "attention_gmacs": c.attention / 1e9,
                "dense_gmacs": c.dense / 1e9,
            }
        )
    return rows
