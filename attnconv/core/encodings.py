"""Positional encodings for self-attention over images (paper Secs. 2.1, 2.3, 3, 4.3, App. A.1).

Every *relative* encoding is a function of the shift δ = k − q between a key and a query pixel
(:func:`attnconv.core.grid.relative_shifts`). It exposes two things that enter the attention score of
eq. (8):

* :meth:`RelativeEncoding.features` — the vectors r_δ ∈ R^{D_p} (used by the content-position
  term X_q W_qry Ŵ_key r_δ);
* :meth:`RelativeEncoding.position_scores` — the position-only term v_hᵀ Ŵ_key r_δ of each head.

The absolute encoding of eq. (3) is different in kind: it adds a learned P to the input of the
query and key projections, and :class:`attnconv.core.attention.MultiHeadSelfAttention2d` applies it.
"""

from __future__ import annotations

import math
from typing import Dict, Sequence, Tuple

import torch
from torch import nn

from .grid import relative_shifts
from .precision import autocast_off

__all__ = [
    "RelativeEncoding",
    "QuadraticEncoding",
    "GeneralizedQuadraticEncoding",
    "LearnedRelativeEncoding",
    "HardShiftEncoding",
    "AbsoluteEncoding",
    "kernel_shifts",
    "grid_shifts",
]

_SHIFTS: Dict[Tuple[Tuple[int, ...], int, str], torch.Tensor] = {}


def grid_shifts(shape, padding: int = 0, device=None) -> torch.Tensor:
    """:func:`~attnconv.core.grid.relative_shifts` kept on ``device`` once per grid, padding and
    device: a forward pass never copies the table from the host again (fake and meta tensors are
    not kept)."""
    table = relative_shifts(shape, padding)
    if device is None or torch.device(device) == table.device:
        return table
    key = (tuple(int(s) for s in shape), int(padding), str(torch.device(device)))
    if key not in _SHIFTS:
        moved = table.to(device)
        if type(moved) is not torch.Tensor or moved.device.type == "meta":
            return moved
        _SHIFTS[key] = moved
    return _SHIFTS[key]


def kernel_shifts(kernel_size: int, spatial_dims: int = 2) -> torch.Tensor:
    """The K^d shifts of a K×K (or length-K) kernel, centred on 0, row-major: a ``(K^d, d)`` tensor.

    For K = 3 in 2D these are (−1,−1), (−1,0), …, (1,1): the N_h = K² head centres of Lemma 1.
    """
    if kernel_size < 1 or kernel_size % 2 == 0:
        raise ValueError(
            f"kernel_size must be a positive odd integer, got {kernel_size}"
        )
    r = (kernel_size - 1) // 2
    axes = [torch.arange(-r, r + 1)] * spatial_dims
    mesh = torch.meshgrid(*axes, indexing="ij")
    return torch.stack([m.reshape(-1) for m in mesh], dim=-1)


class RelativeEncoding(nn.Module):
    """Base class of relative positional encodings r_δ (paper Sec. 2.3, eq. 8)."""

    num_heads: int
    spatial_dims: int
    dim: int  # D_p

    def features(self, delta: torch.Tensor) -> torch.Tensor:
        """r_δ for integer shifts ``delta`` of shape ``(..., d)``: a ``(..., D_p)`` tensor."""
        raise NotImplementedError

    def position_scores(self, delta: torch.Tensor) -> torch.Tensor:
        """The position-only score v_hᵀ Ŵ_key r_δ of eq. (8): a ``(N_h, ...)`` tensor.

        Computed in the parameters' precision even under autocast (CUDA or CPU): these few
        thousand numbers reach magnitudes of ~100 and bf16 would round them to the nearest 0.5."""
        with autocast_off(delta.device.type):
            return self._position_scores(delta)

    def _position_scores(self, delta: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def grid_position_scores(
        self, shape, padding: int = 0, device=None
    ) -> torch.Tensor:
        """The position-only scores of every query of a grid for every key of the grid padded by
        ``padding``: :meth:`position_scores` of :func:`~attnconv.core.grid.relative_shifts`, a
        ``(N_h, T_q, T_k)`` tensor, in the parameters' precision under autocast as
        :meth:`position_scores`. Subclasses may compute the same numbers faster
        (``_grid_position_scores``)."""
        with autocast_off(self._device_type(device)):
            return self._grid_position_scores(
                tuple(int(s) for s in shape), padding, device
            )

    def _grid_position_scores(self, shape, padding: int, device) -> torch.Tensor:
        return self._position_scores(grid_shifts(shape, padding, device))

    def grid_features(self, shape, padding: int = 0, device=None) -> torch.Tensor:
        """:meth:`features` of every (query, key) shift of the grid: ``(T_q, T_k, D_p)``."""
        return self.features(grid_shifts(shape, padding, device))

    def _device_type(self, device) -> str:
        if device is not None:
            return torch.device(device).type
        for t in self.parameters():
            return t.device.type
        for t in self.buffers():
            return t.device.type
        return "cpu"

    def _check_delta(self, delta: torch.Tensor) -> None:
        if delta.shape[-1] != self.spatial_dims:
            raise ValueError(
                f"{type(self).__name__} is {self.spatial_dims}-dimensional but got shifts with "
                f"{delta.shape[-1]} coordinates"
            )

    #: Whether each head is a Gaussian with :meth:`inverse_covariance` and
    #: :meth:`inverse_sqrt_covariance` (what local attention and head pruning need).
    is_gaussian = False

    @torch.no_grad()
    def head_record(self, grid) -> Dict[str, torch.Tensor]:
        """The record of this layer's heads that a training history saves (CPU float tensors,
        first dim = head). Without Gaussian parameters: the summary of each head's position-only
        attention for the centre query of ``grid`` (rows, columns): ``centers`` = mean shift E[δ],
        ``covariance`` of δ, ``peak_shift`` argmax δ and ``peak_probability``."""
        rows, cols = (int(s) for s in grid)
        device = next(iter(self.parameters()), None)
        device = (device if device is not None else next(self.buffers())).device
        delta = relative_shifts(grid, 0, device)[(rows // 2) * cols + cols // 2].float()
        probs = torch.softmax(self.position_scores(delta.long()).float(), -1)
        mean = probs @ delta  # (N_h, 2)
        diff = delta[None] - mean[:, None]  # (N_h, T_k, 2)
        cov = torch.einsum("hk,hki,hkj->hij", probs, diff, diff)
        return {
            "centers": mean.cpu(),
            "covariance": cov.cpu(),
            "peak_shift": delta[probs.argmax(-1)].cpu(),
            "peak_probability": probs.max(-1).values.cpu(),
        }


def _float_tensor(value) -> torch.Tensor:
    """A floating tensor copy of ``value``, keeping a floating tensor's own dtype."""
    t = torch.as_tensor(value)
    return (t if t.is_floating_point() else t.to(torch.get_default_dtype())).clone()


def _centers_tensor(
    centers, num_heads: int, spatial_dims: int, init_std: float
) -> torch.Tensor:
    if centers is None:
        return torch.randn(num_heads, spatial_dims) * init_std
    c = _float_tensor(centers)
    if c.shape != (num_heads, spatial_dims):
        raise ValueError(
            f"centers must have shape {(num_heads, spatial_dims)}, got {tuple(c.shape)}"
        )
    return c


class QuadraticEncoding(RelativeEncoding):
    """The quadratic encoding of Lemma 2 / eq. (9), D_p = d + 1.

    r_δ = (‖δ‖², δ_1, …, δ_d) and, per head, v = −α (1, −2Δ_1, …, −2Δ_d), so that

        vᵀ r_δ = −α ‖δ − Δ‖² + α ‖Δ‖²,

    an isotropic Gaussian centred on Δ whose softmax tends to a one-hot on δ = Δ as α → ∞.
    The per-head constant α‖Δ‖² does not change a softmax, so :meth:`position_scores` returns the
    centred form −α‖δ − Δ‖² (its largest value is 0, which keeps large α well conditioned).

    Parameters are ``centers`` Δ (N_h, d) and ``alpha`` α (N_h,). ``centers=None`` draws Δ from
    N(0, ``center_init_std``²) per coordinate.

    ``parametrization="spread"`` learns a spread s instead of α, with Σ⁻¹ = s²·I, i.e. the score
    −½ s² ‖δ − Δ‖² (α = s²/2), as in the authors' training code; ``spread`` (or else ``alpha``)
    gives its initial value and the parameter is called ``spread``. :meth:`width` returns α in
    both cases.
    """

    def __init__(
        self,
        num_heads: int,
        spatial_dims: int = 2,
        centers=None,
        alpha=1.0,
        center_init_std: float = 2.0,
        parametrization: str = "alpha",
        spread=None,
    ):
        super().__init__()
        if num_heads < 1:
            raise ValueError(f"num_heads must be >= 1, got {num_heads}")
        if spatial_dims not in (1, 2):
            raise ValueError(f"spatial_dims must be 1 or 2, got {spatial_dims}")
        self.num_heads, self.spatial_dims, self.dim = (
            num_heads,
            spatial_dims,
            spatial_dims + 1,
        )
        self.centers = nn.Parameter(
            _centers_tensor(centers, num_heads, spatial_dims, center_init_std)
        )
        a = _float_tensor(alpha).to(self.centers.dtype)
        a = a.expand(num_heads).clone() if a.ndim == 0 else a
        if a.shape != (num_heads,):
            raise ValueError(f"alpha must be a scalar or have shape ({num_heads},)")
        if parametrization == "alpha":
            self.alpha = nn.Parameter(a)
        elif parametrization == "spread":
            if spread is None and a.device.type != "meta" and (a <= 0).any():
                raise ValueError("alpha must be > 0 with parametrization='spread'")
            s0 = (
                (2 * a).sqrt()
                if spread is None
                else _float_tensor(spread)
                .to(self.centers.dtype)
                .expand(num_heads)
                .clone()
            )
            self.spread = nn.Parameter(s0)
        else:
            raise ValueError(
                f"parametrization must be 'alpha' or 'spread', got {parametrization!r}"
            )
        self.parametrization = parametrization

    def width(self) -> torch.Tensor:
        """α per head, ``(N_h,)`` (s²/2 with the spread parametrization)."""
        return self.alpha if self.parametrization == "alpha" else 0.5 * self.spread**2

    def features(self, delta: torch.Tensor) -> torch.Tensor:
        """r_δ = (‖δ‖², δ) of eq. (9)."""
        self._check_delta(delta)
        d = delta.to(self.centers.dtype)
        return torch.cat([(d * d).sum(-1, keepdim=True), d], dim=-1)  # (‖δ‖², δ)

    def precision(self) -> torch.Tensor:
        """Σ⁻¹ = 2α_h·I of the Gaussian −½(δ−Δ)ᵀΣ⁻¹(δ−Δ) = −α‖δ−Δ‖² that each head is: ``(N_h, d, d)``."""
        eye = torch.eye(
            self.spatial_dims, dtype=self.centers.dtype, device=self.centers.device
        )
        return 2 * self.width()[:, None, None] * eye

    def v(self) -> torch.Tensor:
        """v_h = −α_h (1, −2Δ_h) of eq. (9), one row per head: ``(N_h, D_p)``."""
        alpha = self.width()  # α_h
        return -alpha[:, None] * torch.cat(  # −α_h (1, −2Δ_h)
            [torch.ones_like(alpha)[:, None], -2 * self.centers], dim=-1
        )

    def _position_scores(self, delta: torch.Tensor) -> torch.Tensor:
        """−α_h ‖δ − Δ_h‖², i.e. v_hᵀ r_δ of eq. (9) minus the constant α_h‖Δ_h‖²."""
        self._check_delta(delta)  # plumbing: checks the shape of delta
        d = delta.to(self.centers.dtype)
        c = self.centers.view(self.num_heads, *([1] * (d.ndim - 1)), self.spatial_dims)
        sq = ((d.unsqueeze(0) - c) ** 2).sum(-1)  # ‖δ − Δ_h‖²
        return -self.width().view(-1, *([1] * (sq.ndim - 1))) * sq  # −α_h ‖δ − Δ_h‖²

    def extra_repr(self) -> str:
        return f"num_heads={self.num_heads}, spatial_dims={self.spatial_dims}"

    is_gaussian = True

    def inverse_covariance(self) -> torch.Tensor:
        """Σ_h⁻¹ = 2α_h·I per head (same as :meth:`precision`), ``(N_h, d, d)``."""
        return self.precision()

    def inverse_sqrt_covariance(self, dtype=None) -> torch.Tensor:
        """M = √(2α_h)·I with Σ_h⁻¹ = M Mᵀ per head, ``(N_h, d, d)``, computed in ``dtype``."""
        a = self.width() if dtype is None else self.width().to(dtype)
        eye = torch.eye(self.spatial_dims, dtype=a.dtype, device=a.device)
        return torch.sqrt(2 * a)[:, None, None] * eye

    @torch.no_grad()
    def head_record(self, grid=None) -> Dict[str, torch.Tensor]:
        """``centers`` Δ (N_h, 2), ``spreads`` s = √(2α) (N_h,), ``inverse_covariance`` s²·I."""
        s = (
            self.spread.detach().float().cpu()
            if self.parametrization == "spread"
            else (2 * self.alpha.detach().float().cpu()).sqrt()
        )
        return {
            "centers": self.centers.detach().float().cpu(),
            "spreads": s,
            "inverse_covariance": (s**2)[:, None, None] * torch.eye(2),
        }


class GeneralizedQuadraticEncoding(RelativeEncoding):
    """The generalized (non-isotropic) quadratic encoding of App. A.1, eq. (16), D_p = 5.

    Per head a centre Δ and a matrix M = Σ^{-1/2} (so Σ⁻¹ = M Mᵀ). With
    r_δ = (δ_1, δ_2, δ_1², δ_2², δ_1δ_2) and
    v = −½ (−2(Σ⁻¹Δ)_1, −2(Σ⁻¹Δ)_2, Σ⁻¹_11, Σ⁻¹_22, 2Σ⁻¹_12),

        vᵀ r_δ = −½ (δ − Δ)ᵀ Σ⁻¹ (δ − Δ) + ½ ΔᵀΣ⁻¹Δ,

    the log-density of N(Δ, Σ) up to a constant. :meth:`position_scores` returns the centred
    form −½ (δ − Δ)ᵀ Σ⁻¹ (δ − Δ).
    """

    def __init__(
        self,
        num_heads: int,
        centers=None,
        inv_sqrt_sigma=None,
        center_init_std: float = 2.0,
    ):
        super().__init__()
        if num_heads < 1:
            raise ValueError(f"num_heads must be >= 1, got {num_heads}")
        self.num_heads, self.spatial_dims, self.dim = num_heads, 2, 5
        self.centers = nn.Parameter(
            _centers_tensor(centers, num_heads, 2, center_init_std)
        )
        if inv_sqrt_sigma is None:
            m = torch.eye(2).expand(num_heads, 2, 2).clone()
        else:
            m = _float_tensor(inv_sqrt_sigma).to(self.centers.dtype)
            if m.shape == (2, 2):
                m = m.expand(num_heads, 2, 2).clone()
        if m.shape != (num_heads, 2, 2):
            raise ValueError(
                f"inv_sqrt_sigma must have shape (2, 2) or ({num_heads}, 2, 2)"
            )
        self.inv_sqrt_sigma = nn.Parameter(m)

    def inverse_covariance(self) -> torch.Tensor:
        """Σ⁻¹ = M Mᵀ per head, ``(N_h, 2, 2)``."""
        m = self.inv_sqrt_sigma
        return m @ m.transpose(-1, -2)

    def precision(self) -> torch.Tensor:
        """Σ⁻¹ per head (same as :meth:`inverse_covariance`), ``(N_h, 2, 2)``."""
        return self.inverse_covariance()

    def features(self, delta: torch.Tensor) -> torch.Tensor:
        """r_δ = (δ_1, δ_2, δ_1², δ_2², δ_1δ_2) of eq. (16)."""
        self._check_delta(delta)
        d = delta.to(self.centers.dtype)
        d1, d2 = d[..., 0], d[..., 1]
        return torch.stack([d1, d2, d1 * d1, d2 * d2, d1 * d2], dim=-1)  # r_δ

    def v(self) -> torch.Tensor:
        """v_h of eq. (16), one row per head: ``(N_h, 5)``."""
        a = self.inverse_covariance()  # Σ⁻¹ = M Mᵀ
        a_delta = (a @ self.centers.unsqueeze(-1)).squeeze(-1)  # Σ⁻¹ Δ
        return -0.5 * torch.stack(
            [
                -2 * a_delta[:, 0],  # −2 (Σ⁻¹Δ)_1
                -2 * a_delta[:, 1],  # −2 (Σ⁻¹Δ)_2
                a[:, 0, 0],  # Σ⁻¹_11
                a[:, 1, 1],  # Σ⁻¹_22
                2 * a[:, 0, 1],  # 2 Σ⁻¹_12
            ],
            dim=-1,
        )

    def _position_scores(self, delta: torch.Tensor) -> torch.Tensor:
        """−½ (δ − Δ_h)ᵀ Σ_h⁻¹ (δ − Δ_h): v_hᵀ r_δ of eq. (16) minus a per-head constant."""
        self._check_delta(delta)
        d = delta.to(self.centers.dtype)
        c = self.centers.view(self.num_heads, *([1] * (d.ndim - 1)), 2)
        diff = d.unsqueeze(0) - c  # (N_h, ..., 2)
        proj = torch.einsum("h...i,hij->h...j", diff, self.inv_sqrt_sigma)  # (δ−Δ)ᵀ M
        return -0.5 * (proj * proj).sum(-1)  # −½ ‖(δ−Δ)ᵀ M‖² = −½ (δ−Δ)ᵀ Σ⁻¹ (δ−Δ)

    def extra_repr(self) -> str:
        return f"num_heads={self.num_heads}"

    is_gaussian = True

    def inverse_sqrt_covariance(self, dtype=None) -> torch.Tensor:
        """M = Σ^{-1/2} per head (``inv_sqrt_sigma``), ``(N_h, 2, 2)``, in ``dtype`` if given."""
        m = self.inv_sqrt_sigma
        return m if dtype is None else m.to(dtype)

    @torch.no_grad()
    def head_record(self, grid=None) -> Dict[str, torch.Tensor]:
        """``centers`` Δ (N_h, 2), ``inv_sqrt_sigma`` M, ``inverse_covariance`` Σ⁻¹ = M Mᵀ."""
        return {
            "centers": self.centers.detach().float().cpu(),
            "inv_sqrt_sigma": self.inv_sqrt_sigma.detach().float().cpu(),
            "inverse_covariance": self.inverse_covariance().detach().float().cpu(),
        }


class LearnedRelativeEncoding(RelativeEncoding):
    """Learned relative encoding (paper Sec. 4.3 and eq. 8): row and column shift embeddings.

    The paper's text (Secs. 2.3, 4.3) has D_p = 400, 200 per axis, shared by all layers and heads;
    our models build one table per layer with D_p = 2·hidden (400 per axis at paper size), as the
    authors' code does, which is what reproduces the paper's 12.3M parameters.

    r_δ = concat(e^row_{δ_1}, e^col_{δ_2}), each of size D_p / d, for shifts |δ_a| ≤ ``max_shift``
    (2·max_shift + 1 embeddings per axis). The position-only term v_hᵀ Ŵ_key r_δ is parametrised
    by one learned key vector w_h = Ŵ_keyᵀ v_h ∈ R^{D_p} per head (``head_keys``); it is computed
    axis by axis, w_hᵀ r_δ = (w_h^row)ᵀ e^row_{δ_1} + (w_h^col)ᵀ e^col_{δ_2}, from a small table
    per axis instead of the T×T×D_p tensor of all r_δ.

    Initialisation is PyTorch's default for the authors' modules: embeddings N(0, 1) and head keys
    U(±1/√(D_p/d)) (a bias-free ``nn.Linear(D_p/d, N_h)`` per axis).
    """

    def __init__(self, num_heads: int, dim: int, max_shift: int, spatial_dims: int = 2):
        super().__init__()
        if dim % spatial_dims:
            raise ValueError(
                f"dim (D_p={dim}) must be divisible by spatial_dims={spatial_dims}"
            )
        if max_shift < 0:
            raise ValueError("max_shift must be >= 0")
        self.num_heads, self.spatial_dims, self.dim, self.max_shift = (
            num_heads,
            spatial_dims,
            dim,
            max_shift,
        )
        half = dim // spatial_dims
        self.axis_embeddings = nn.ModuleList(
            nn.Embedding(2 * max_shift + 1, half) for _ in range(spatial_dims)
        )
        bound = 1.0 / math.sqrt(half)
        self.head_keys = nn.Parameter(
            torch.empty(num_heads, dim).uniform_(-bound, bound)
        )

    def _indices(self, delta: torch.Tensor) -> torch.Tensor:
        self._check_delta(delta)
        if delta.device.type == "cpu" and delta.numel():
            largest = int(delta.abs().max())
            if largest > self.max_shift:
                raise ValueError(
                    f"shift {largest} exceeds max_shift={self.max_shift} of this LearnedRelativeEncoding; "
                    f"use max_shift >= (grid size - 1) + padding"
                )
        return delta.long() + self.max_shift

    def features(self, delta: torch.Tensor) -> torch.Tensor:
        """The r_δ of eq. (8), here concat(e^row_{δ_1}, e^col_{δ_2}): ``(..., D_p)``."""
        idx = self._indices(delta)
        return torch.cat(
            [emb(idx[..., a]) for a, emb in enumerate(self.axis_embeddings)], dim=-1
        )

    def axis_scores(self):
        """Per axis a ``(2·max_shift+1, N_h)`` table: each head's score for each shift on that axis."""
        half = self.dim // self.spatial_dims
        return [
            emb.weight @ self.head_keys.narrow(1, a * half, half).t()
            for a, emb in enumerate(self.axis_embeddings)
        ]

    def _position_scores(self, delta: torch.Tensor) -> torch.Tensor:
        """The position-only term v_hᵀ Ŵ_key r_δ = w_hᵀ r_δ of eq. (8), a row score plus a column
        score (:meth:`axis_scores`): ``(N_h, ...)``."""
        idx = self._indices(delta)
        out = None
        for a, table in enumerate(self.axis_scores()):
            s = table[idx[..., a]]  # (..., N_h)
            out = s if out is None else out + s
        return out.movedim(-1, 0)

    def _check_grid(self, shape, padding: int) -> None:
        largest = max(shape) - 1 + padding
        if largest > self.max_shift:
            raise ValueError(
                f"shift {largest} exceeds max_shift={self.max_shift} of this "
                f"LearnedRelativeEncoding; use max_shift >= (grid size - 1) + padding"
            )

    def grid_features(self, shape, padding: int = 0, device=None) -> torch.Tensor:
        """:meth:`features` of the grid's shifts, their range checked from the grid's size (no
        read of the device's shift table)."""
        self._check_grid(shape, padding)
        idx = grid_shifts(shape, padding, device).long() + self.max_shift
        return torch.cat(
            [emb(idx[..., a]) for a, emb in enumerate(self.axis_embeddings)], dim=-1
        )

    def _grid_position_scores(self, shape, padding: int, device) -> torch.Tensor:
        """The same numbers as :meth:`position_scores` of the grid's shifts (row score + column
        score, added in that order), built from one small ``(N_h, H, H + 2p)`` table per axis and a
        broadcast sum: no gather over the T_q × T_k pairs, and a contiguous result. (No ``[]``
        indexing: under disabled CUDA autocast it initialises CUDA, even for fake tensors.)"""
        if len(shape) != self.spatial_dims:
            return super()._grid_position_scores(shape, padding, device)
        self._check_grid(shape, padding)
        out = None
        for a, (n, table) in enumerate(zip(shape, self.axis_scores())):
            q = torch.arange(n, device=table.device)
            k = torch.arange(-padding, n + padding, device=table.device)
            idx = k.unsqueeze(0) - q.unsqueeze(1)  # (n, n + 2p) shifts on this axis
            rows = (idx + self.max_shift).reshape(-1)
            s = table.t().index_select(1, rows).view(-1, *idx.shape)  # (N_h, n, n + 2p)
            view = [s.shape[0]] + [1] * (2 * len(shape))
            view[1 + a], view[1 + len(shape) + a] = s.shape[1], s.shape[2]
            s = s.view(view)
            out = s if out is None else out + s
        return out.reshape(self.num_heads, math.prod(shape), -1)

    def extra_repr(self) -> str:
        return f"num_heads={self.num_heads}, dim={self.dim}, max_shift={self.max_shift}"


class HardShiftEncoding(RelativeEncoding):
    """Lemma 1's hard attention: head h puts all its mass on the key at δ = Δ_h.

    Its position-only score is 0 at δ = Δ_h and −∞ elsewhere, so softmax is exactly one-hot. Every
    query's target q + Δ_h must lie in the (padded) key grid, else that row has no key to attend.
    It has no vectors r_δ (it is the α → ∞ limit of :class:`QuadraticEncoding`).
    """

    def __init__(self, shifts):
        super().__init__()
        s = torch.as_tensor(shifts).long()
        if s.ndim != 2:
            raise ValueError("shifts must be a (N_h, d) integer tensor")
        self.num_heads, self.spatial_dims, self.dim = s.shape[0], s.shape[1], 0
        self.register_buffer("shifts", s)

    def features(self, delta):
        raise TypeError(
            "HardShiftEncoding has no vectors r_δ; use it only with the position-only term"
        )

    def _position_scores(self, delta: torch.Tensor) -> torch.Tensor:
        self._check_delta(delta)
        hit = (
            delta.unsqueeze(0)
            == self.shifts.view(self.num_heads, *([1] * (delta.ndim - 1)), -1)
        ).all(-1)
        zero = torch.zeros((), dtype=torch.get_default_dtype(), device=delta.device)
        return torch.where(hit, zero, zero - math.inf)


class AbsoluteEncoding(nn.Module):
    """Learned absolute encoding of eq. (3): a tensor P ∈ R^{C×H×W} added to X before W_qry, W_key.

    It ties a layer to one image size, which is the reason the paper moves to relative encodings.
    """

    def __init__(self, channels: int, shape: Sequence[int], init_std: float = 0.02):
        super().__init__()
        self.shape = tuple(int(s) for s in shape)
        self.embedding = nn.Parameter(torch.randn(channels, *self.shape) * init_std)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if tuple(x.shape[2:]) != self.shape:
            raise ValueError(
                f"AbsoluteEncoding was built for grid {self.shape} but the input grid is "
                f"{tuple(x.shape[2:])}; absolute encodings cannot change image size"
            )
        return x + self.embedding
