"""Gated positional self-attention (GPSA), ConViT's layer (d'Ascoli et al. 2021), built on the
paper's quadratic encoding.

Each head h blends a content attention and a positional attention with a gate λ_h:

    A^h = (1 − σ(λ_h)) softmax_k(q_q·k_k / √D_h) + σ(λ_h) softmax_k(v_pos^h · r_{k−q}),

a convex blend, so each row still sums to 1 (ConViT's GPSA). The positional scores use the paper's
quadratic encoding r_δ = (‖δ‖², δ₁, δ₂) (eq. 9), so v_pos^h = −α_h(1, −2Δ₁^h, −2Δ₂^h) is a head
centred on the shift Δ^h with width α_h: v_pos^h·r_δ = −α_h‖δ − Δ^h‖² + α_h‖Δ^h‖² (Lemma 2).
The output is Σ_h A^h X W_val^h W_out^h + b_out (eq. 4): one value and one output projection shared
by the heads' slices, as in multi-head self-attention.

:class:`MultiHeadSelfAttention` is the plain vision transformer's layer (content attention only,
A^h = softmax_k(q_q·k_k/√D_h)), the same parameters less the positional ones: the baseline. The two
are siblings over :class:`GridSelfAttention`, what they share (as timm keeps ``GPSA`` and ``MHSA``).

Shifts δ = k − q are in (row, column) order as in :func:`attnconv.core.grid.relative_shifts`.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import nn

from .grid import relative_shifts

__all__ = [
    "quadratic_features",
    "quadratic_weights",
    "head_centres",
    "GridSelfAttention",
    "GatedPositionalSelfAttention",
    "MultiHeadSelfAttention",
]


def quadratic_features(grid: Tuple[int, int], dtype=torch.float32, device=None):
    """r_δ = (‖δ‖², δ₁, δ₂) (eq. 9) for every query q and key k of an H×W grid, δ = k − q:
    a ``(H·W, H·W, 3)`` tensor."""
    delta = relative_shifts(grid, device=device).to(dtype)
    return torch.cat([(delta**2).sum(-1, keepdim=True), delta], dim=-1)


def quadratic_weights(centres: torch.Tensor, alpha) -> torch.Tensor:
    """v_pos^h = −α_h(1, −2Δ₁^h, −2Δ₂^h) (Lemma 2, eq. 9) for centres Δ ``(N_h, 2)`` and widths α
    (a number or ``(N_h,)``): the ``(N_h, 3)`` weights of the positional scores v_pos·r_δ."""
    alpha = torch.as_tensor(alpha, dtype=centres.dtype).expand(centres.shape[0])
    ones = torch.ones_like(centres[:, :1])
    return -alpha[:, None] * torch.cat([ones, -2 * centres], dim=-1)


def head_centres(weights: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """The centres Δ^h and widths α_h that positional weights ``(N_h, 3)`` encode (inverse of
    :func:`quadratic_weights`): α = −w₀, Δ = w_{1:}/(2α). With α > 0 the head attends most to Δ;
    with α < 0 (a random start) least; with α = 0 it has no centre and gets Δ = 0."""
    alpha = -weights[:, 0]
    safe = torch.where(alpha != 0, alpha, torch.ones_like(alpha))
    centres = weights[:, 1:] / (2 * safe[:, None])
    return torch.where(alpha[:, None] != 0, centres, torch.zeros_like(centres)), alpha


class GridSelfAttention(nn.Module):
    """What GPSA and plain multi-head self-attention share over the tokens of an H×W grid
    (``(B, H·W, D)`` in and out): ``qk`` Linear(D → 2D) (queries then keys, D_h = D / N_h per
    head), ``v`` Linear(D → D) (values), ``proj`` Linear(D → D) (output), the content attention
    softmax_k(q_q·k_k/√D_h), the output Σ_h A^h X W_val^h W_out^h + b_out (eq. 4) and the heads'
    attention distance. A subclass says what its attention A^h is (:meth:`attention`) and what a
    history records of its heads (:meth:`head_record`)."""

    def __init__(
        self,
        dim: int,
        num_heads: int,
        qkv_bias: bool = False,
        attention_dropout: float = 0.0,
    ):
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"dim {dim} is not divisible by num_heads {num_heads}")
        self.dim, self.num_heads = dim, num_heads
        self.head_dim = dim // num_heads
        self.qk = nn.Linear(dim, 2 * dim, bias=qkv_bias)
        self.v = nn.Linear(dim, dim, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)
        self.attention_dropout = nn.Dropout(attention_dropout)
        self._features: Optional[torch.Tensor] = None
        self._features_grid: Optional[Tuple[int, int]] = None
        self._distance_sum: Optional[torch.Tensor] = None
        self._distance_count = 0

    def features(self, grid: Tuple[int, int], like: torch.Tensor) -> torch.Tensor:
        """r_δ of the grid (cached by the grid's shape, not its token count: a 2×8 and a 4×4 grid
        have the same 16 tokens and different shifts), in the dtype and device of ``like``."""
        grid = (int(grid[0]), int(grid[1]))
        f = self._features
        if (
            f is None
            or self._features_grid != grid
            or f.dtype != like.dtype
            or f.device != like.device
        ):
            f = quadratic_features(grid, like.dtype, like.device)
            self._features, self._features_grid = f, grid
        return f

    def content_attention(self, x: torch.Tensor) -> torch.Tensor:
        """softmax_k(q_q·k_k/√D_h): ``(B, N_h, T, T)``."""
        b, t, _ = x.shape
        qk = self.qk(x).view(b, t, 2, self.num_heads, self.head_dim)
        q, k = qk.permute(2, 0, 3, 1, 4)
        return (q @ k.transpose(-2, -1) * self.head_dim**-0.5).softmax(dim=-1)

    def attention(self, x: torch.Tensor, grid: Tuple[int, int]) -> torch.Tensor:
        """A^h: ``(B, N_h, T, T)``."""
        raise NotImplementedError

    def head_record(self, grid: Tuple[int, int]) -> dict:
        """The layer's heads as a history saves them."""
        raise NotImplementedError

    def forward(self, x: torch.Tensor, grid: Tuple[int, int]) -> torch.Tensor:
        b, t, d = x.shape
        if grid[0] * grid[1] != t:
            raise ValueError(f"{t} tokens do not fill a {grid[0]}×{grid[1]} grid")
        a = self.attention(x, grid)
        if not self.training:
            self._accumulate_distance(a, grid)
        a = self.attention_dropout(a)
        v = self.v(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        return self.proj((a @ v).transpose(1, 2).reshape(b, t, d))

    # ------------------------------------------------------------------ measurements
    def mean_distance(self, attention: torch.Tensor, grid: Tuple[int, int]):
        """Each head's attention distance E‖k − q‖ (tokens) of ``attention`` ``(..., N_h, T, T)``,
        averaged over the queries (and the batch): ``(N_h,)``."""
        dist = self.features(grid, attention)[..., 0].sqrt()
        per_query = (attention * dist).sum(-1)
        return per_query.reshape(-1, self.num_heads, per_query.shape[-1]).mean((0, 2))

    def _accumulate_distance(self, attention, grid):
        with torch.no_grad():
            d = self.mean_distance(attention, grid).double() * attention.shape[0]
        self._distance_sum = d if self._distance_sum is None else self._distance_sum + d
        self._distance_count += attention.shape[0]

    def evaluated_distance(self, reset: bool = True) -> Optional[torch.Tensor]:
        """The heads' attention distance averaged over every image the layer saw in eval mode
        since the last reset (``None`` if none)."""
        if not self._distance_count:
            return None
        out = self._distance_sum / self._distance_count
        if reset:
            self._distance_sum, self._distance_count = None, 0
        return out

    def _with_distance(self, record: dict) -> dict:
        seen = self.evaluated_distance()
        if seen is not None:
            record["distance"] = seen.tolist()
        return record


class GatedPositionalSelfAttention(GridSelfAttention):
    """GPSA (ConViT's layer, names and shapes as ConViT's): the parameters of
    :class:`GridSelfAttention` and ``pos_proj`` Linear(3 → N_h) (v_pos^h as rows, on the paper's
    r_δ = (‖δ‖², δ₁, δ₂)), ``gating_param`` λ (N_h,). At construction λ = 1 (σ(λ) ≈ 0.73 on
    position) and the weights are PyTorch's default; :mod:`attnconv.experiments.initialisations`
    sets the initialisations.
    """

    def __init__(self, dim, num_heads, qkv_bias=False, attention_dropout=0.0):
        super().__init__(dim, num_heads, qkv_bias, attention_dropout)
        self.pos_proj = nn.Linear(3, num_heads)
        self.gating_param = nn.Parameter(torch.ones(num_heads))

    def gate(self) -> torch.Tensor:
        """σ(λ_h): each head's weight on positional attention."""
        return torch.sigmoid(self.gating_param)

    def positional_attention(self, grid: Tuple[int, int]) -> torch.Tensor:
        """softmax_k(v_pos^h · r_{k−q} + b_h): ``(N_h, T, T)``, the same for every image."""
        scores = self.pos_proj(self.features(grid, self.pos_proj.weight))
        return scores.permute(2, 0, 1).softmax(dim=-1)

    def attention(self, x: torch.Tensor, grid: Tuple[int, int]) -> torch.Tensor:
        """The gated blend A^h: ``(B, N_h, T, T)``. A convex blend of two distributions already sums
        to 1, so ConViT's renormalisation over the keys changes it by rounding only and is left
        out (the timm test bounds the difference)."""
        g = self.gate().view(1, -1, 1, 1)
        return (1 - g) * self.content_attention(x) + g * self.positional_attention(grid)

    def head_record(self, grid: Tuple[int, int]) -> dict:
        """The layer's heads as a history saves them: ``centers`` Δ^h and ``alpha`` of the positional
        heads, ``gate`` σ(λ_h), ``position_distance`` (the positional attention's distance) and
        ``distance`` (the blended attention's, over the last evaluation; absent before one)."""
        with torch.no_grad():
            centres, alpha = head_centres(self.pos_proj.weight.double())
            pos = self.positional_attention(grid).double()
            record = {
                "num_heads": self.num_heads,
                "centers": centres.tolist(),
                "alpha": alpha.tolist(),
                "gate": self.gate().tolist(),
                "position_distance": self.mean_distance(pos, grid).tolist(),
            }
        return self._with_distance(record)


class MultiHeadSelfAttention(GridSelfAttention):
    """Plain multi-head self-attention (ViT/DeiT): A^h = softmax_k(q_q·k_k/√D_h), output
    Σ_h A^h X W_val^h W_out^h + b_out (eq. 4); the parameters of :class:`GridSelfAttention` only:
    position enters through the model's absolute position embedding. GPSA's sibling: built from
    the same random stream as a :class:`GatedPositionalSelfAttention` of the same size (the draws
    of GPSA's ``pos_proj`` are made and dropped), so that a ViT and a GPSA model of one seed start
    from the same weights elsewhere."""

    def __init__(self, dim, num_heads, qkv_bias=False, attention_dropout=0.0):
        super().__init__(dim, num_heads, qkv_bias, attention_dropout)
        nn.Linear(3, num_heads)  # GPSA's positional draws, dropped

    def attention(self, x: torch.Tensor, grid: Tuple[int, int]) -> torch.Tensor:
        """The content attention: ``(B, N_h, T, T)``."""
        return self.content_attention(x)

    def head_record(self, grid: Tuple[int, int]) -> dict:
        """``num_heads`` and, after an evaluation, ``distance``: the heads' attention distance."""
        return self._with_distance({"num_heads": self.num_heads})
