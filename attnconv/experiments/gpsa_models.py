"""The content + position classifier of the chapter *Beyond the paper*: a small ConViT-style
transformer whose every attention layer is GPSA (:mod:`attnconv.core.gpsa`), started by one of
the initialisations of :mod:`attnconv.experiments.initialisations`.

Patches of ``downsample``×``downsample`` pixels embedded by a linear map (a strided convolution, as
ConViT's), optionally plus a learned absolute position embedding (``position_embedding``, ConViT's
and DeiT's default; off in the first experiment, where position entered through the GPSA heads
only), pre-norm
blocks x += GPSA(LN(x)), x += MLP(LN(x)) with GELU, a final LayerNorm, mean pooling of the tokens
and a linear classifier. Every linear map starts from the vision transformers' default
(:func:`~attnconv.experiments.initialisations.vit_default_weights`), then the GPSA layers get the
initialisation ``init``: the architecture is the same for every initialisation, only the
attention layers' starting weights differ.

With ``attention="mhsa"`` every layer is plain multi-head self-attention
(:class:`~attnconv.core.gpsa.MultiHeadSelfAttention`) instead: with the position embedding, the
DeiT-style vision transformer of the same width, depth and heads, the baseline ConViT is compared
with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Tuple

import torch
from torch import nn

from ..core.gpsa import GatedPositionalSelfAttention, MultiHeadSelfAttention
from .initialisations import INITIALISATIONS, initialise, vit_default_weights

__all__ = [
    "ATTENTIONS",
    "POSITIONAL_INITS",
    "GPSAConfig",
    "GPSABlock",
    "GPSAClassifier",
]

#: The attention layer of every block: ConViT's GPSA or the vision transformer's plain MHSA.
ATTENTIONS = {"gpsa": GatedPositionalSelfAttention, "mhsa": MultiHeadSelfAttention}
#: Initialisations that set positional heads (GPSA only).
POSITIONAL_INITS = ("convit", "impulse")


@dataclass
class GPSAConfig:
    """A GPSA classifier (field names as :class:`~attnconv.experiments.models.SelfAttentionConfig`
    where they mean the same)."""

    init: str = "random"  # a key of INITIALISATIONS
    hidden_size: int = 72
    intermediate_size: int = 144
    num_layers: int = 4
    num_heads: int = 9
    downsample: int = 4  # 4 → 8×8 tokens of 4×4 pixels
    image_size: int = 32
    in_channels: int = 3
    num_classes: int = 10
    hidden_dropout: float = 0.1
    attention_dropout: float = 0.0
    layer_norm_eps: float = 1e-6
    locality_strength: float = 1.0  # ConViT's α (the ``convit`` initialisation only)
    qkv_bias: bool = False
    attention: str = "gpsa"  # a key of ATTENTIONS
    position_embedding: bool = (
        False  # a learned absolute position embedding (ConViT, DeiT)
    )

    def __post_init__(self):
        if self.attention not in ATTENTIONS:
            raise ValueError(
                f"attention must be one of {list(ATTENTIONS)}, got {self.attention!r}"
            )
        if self.attention == "mhsa" and self.init in POSITIONAL_INITS:
            raise ValueError(f"the {self.init!r} start needs GPSA's positional heads")
        if self.init not in INITIALISATIONS:
            raise ValueError(
                f"init must be one of {list(INITIALISATIONS)}, got {self.init!r}"
            )
        if self.hidden_size % self.num_heads:
            raise ValueError("hidden_size must be a multiple of num_heads")
        if self.image_size % self.downsample:
            raise ValueError("downsample must divide image_size")

    @property
    def grid(self) -> Tuple[int, int]:
        n = self.image_size // self.downsample
        return (n, n)


class GPSABlock(nn.Module):
    """x += GPSA(LN(x)); x += MLP(LN(x))."""

    def __init__(self, cfg: GPSAConfig):
        super().__init__()
        d = cfg.hidden_size
        self.norm1 = nn.LayerNorm(d, eps=cfg.layer_norm_eps)
        self.attn = ATTENTIONS[cfg.attention](
            d, cfg.num_heads, cfg.qkv_bias, cfg.attention_dropout
        )
        self.norm2 = nn.LayerNorm(d, eps=cfg.layer_norm_eps)
        self.mlp = nn.Sequential(
            nn.Linear(d, cfg.intermediate_size),
            nn.GELU(),
            nn.Linear(cfg.intermediate_size, d),
        )
        self.drop = nn.Dropout(cfg.hidden_dropout)

    def forward(self, x: torch.Tensor, grid: Tuple[int, int]) -> torch.Tensor:
        x = x + self.drop(self.attn(self.norm1(x), grid))
        return x + self.drop(self.mlp(self.norm2(x)))


class GPSAClassifier(nn.Module):
    """Patch embedding, ``num_layers`` GPSA blocks, mean pooling, linear head."""

    def __init__(self, config: GPSAConfig):
        super().__init__()
        self.config = config
        c = config
        self.embed = nn.Conv2d(
            c.in_channels, c.hidden_size, c.downsample, stride=c.downsample
        )
        self.blocks = nn.ModuleList(GPSABlock(c) for _ in range(c.num_layers))
        self.norm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.head = nn.Linear(c.hidden_size, c.num_classes)
        tokens = c.grid[0] * c.grid[1]
        self.pos_embed = (
            nn.Parameter(torch.zeros(1, tokens, c.hidden_size))
            if c.position_embedding
            else None
        )
        vit_default_weights(self)
        if (
            self.pos_embed is not None
        ):  # timm's ConViT and DeiT: truncated normal, σ = 0.02
            nn.init.trunc_normal_(self.pos_embed, std=0.02)
        options = (
            {"locality_strength": c.locality_strength} if c.init == "convit" else {}
        )
        initialise(self, c.init, **options)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.embed(images).flatten(2).transpose(1, 2)
        if self.pos_embed is not None:
            x = x + self.pos_embed
        for block in self.blocks:
            x = block(x, self.config.grid)
        return self.head(self.norm(x).mean(dim=1))

    @property
    def heads_per_layer(self) -> List[int]:
        return [self.config.num_heads] * self.config.num_layers

    def attention_parameters(self) -> List[Dict[str, list]]:
        """Per layer, what a history saves per epoch (see
        :meth:`~attnconv.core.gpsa.GatedPositionalSelfAttention.head_record`): the positional
        heads' centres and widths, the gates σ(λ_h), and the attention distances."""
        return [b.attn.head_record(self.config.grid) for b in self.blocks]
