"""Learning to convolve (Theorem 1): does gradient descent find the attention layer of Theorem 1?

The computation of chapter 11 (see :mod:`attnconv.chapters.learn_to_convolve` for the chapter's
reading): :class:`ConvolveSetup`, :func:`learn_to_convolve`, :func:`run_summary`,
:func:`seed_sweep` — where a trained layer's heads end, over several seeds. The seed sweeps are
registered as studies in :mod:`attnconv.experiments.studies`
(``results/learn-to-convolve-<N>-heads``) and made by ``python -m attnconv.regenerate``;
:func:`saved_seed_sweep` reads them.

Loss: mean squared error between the layer's output and the convolution's, divided by the mean
square of the convolution's output (a relative error: 1 for the zero map).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..core.attention import MultiHeadSelfAttention2d, ScoreTerms
from ..core.conv import head_weights_from_kernel
from ..core.encodings import QuadraticEncoding, kernel_shifts
from ..core.lattice import lattice_coverage
from .data import load_cifar10_sample, normalize

__all__ = [
    "ConvolveSetup",
    "ConvolveResult",
    "convolution_images",
    "target_convolution",
    "make_attention_layer",
    "relative_error",
    "output_error",
    "set_kernel_values",
    "learn_to_convolve",
    "lattice_distances",
    "stray_heads",
    "head_diagnostics",
    "run_summary",
    "seed_sweep",
    "sweep_key",
    "saved_seed_sweep",
    "EXAMPLE_SEEDS",
    "SavedConvolveRun",
    "example_record",
    "seed_sweep_with_examples",
    "saved_examples",
]


@dataclass(frozen=True)
class ConvolveSetup:
    """One learning-to-convolve experiment.

    Images: the first ``num_images`` training images of the bundled CIFAR-10 sample, normalised,
    average-pooled to ``image_size`` pixels a side and, if ``in_channels`` ≠ 3, mapped to
    ``in_channels`` channels by a fixed random 1×1 embedding. Target: a fixed random K×K
    convolution (``in_channels`` → ``out_channels``, 'same' zero padding, with bias), drawn from
    ``kernel_seed``. Layer: K² quadratic heads of dimension ``head_dim`` (default
    min(D_in, D_out), Lemma 1's exact size; ``heads`` changes their number), keys zero-padded by (K−1)/2, centres drawn from
    N(0, ``center_init_std``²) per coordinate, every α = ``alpha_init``, PyTorch's default
    initialisation for W_val and W_out; all from ``seed``. Optimiser: Adam with learning rate
    ``lr`` on every parameter, ``steps`` steps on mini-batches of ``batch_size`` images.
    """

    num_images: int = 2000
    image_size: int = 16
    in_channels: int = 3
    out_channels: int = 3
    kernel_size: int = 3
    head_dim: Optional[int] = None
    heads: Optional[int] = None
    center_init_std: float = 2.0
    alpha_init: float = 1.0
    parametrization: str = "spread"
    freeze_width_steps: int = 0
    lr: float = 0.05
    steps: int = 600
    batch_size: int = 25
    kernel_seed: int = 0
    seed: int = 0

    def __post_init__(self):
        if self.kernel_size < 1 or self.kernel_size % 2 == 0:
            raise ValueError(
                f"kernel_size must be a positive odd integer, got {self.kernel_size}"
            )
        for name in (
            "num_images",
            "image_size",
            "in_channels",
            "out_channels",
            "steps",
            "batch_size",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if 32 % self.image_size:
            raise ValueError(f"image_size must divide 32, got {self.image_size}")
        if self.head_dim is not None and self.head_dim < 1:
            raise ValueError("head_dim must be >= 1")
        if self.freeze_width_steps < 0:
            raise ValueError("freeze_width_steps must be >= 0")
        if self.heads is not None and self.heads < 1:
            raise ValueError("heads must be >= 1")
        if self.parametrization not in ("alpha", "spread"):
            raise ValueError(
                f"parametrization must be 'alpha' or 'spread', got {self.parametrization!r}"
            )
        if not (self.lr > 0 and self.alpha_init > 0 and self.center_init_std >= 0):
            raise ValueError("lr and alpha_init must be > 0, center_init_std >= 0")

    @property
    def num_heads(self) -> int:
        """N_h: ``heads``, by default K² (Theorem 1's number)."""
        return self.kernel_size**2 if self.heads is None else self.heads

    @property
    def resolved_head_dim(self) -> int:
        return (
            min(self.in_channels, self.out_channels)
            if self.head_dim is None
            else self.head_dim
        )


@dataclass
class ConvolveResult:
    """What :func:`learn_to_convolve` returns.

    ``centers`` ``(steps + 1, N_h, 2)`` and ``alphas`` ``(steps + 1, N_h)``: the heads before each
    step and at the end; ``losses`` ``(steps,)``: the mini-batch relative error at each step;
    ``final_error``: the relative error on all images at the end; ``layer``: the trained layer;
    ``conv``: the target convolution."""

    setup: ConvolveSetup
    centers: torch.Tensor
    alphas: torch.Tensor
    losses: torch.Tensor
    final_error: float
    layer: MultiHeadSelfAttention2d
    conv: nn.Conv2d
    initial_error: float = field(default=float("nan"))


_IMAGE_CACHE: Dict[tuple, torch.Tensor] = {}


def convolution_images(setup: ConvolveSetup) -> torch.Tensor:
    """The input images of ``setup``: ``(num_images, in_channels, image_size, image_size)`` float32."""
    key = (setup.num_images, setup.image_size, setup.in_channels, setup.kernel_seed)
    if key not in _IMAGE_CACHE:
        data = load_cifar10_sample()
        if setup.num_images > len(data.x_train):
            raise ValueError(
                f"the sample has {len(data.x_train)} training images, asked for {setup.num_images}"
            )
        x = normalize(data.x_train[: setup.num_images])
        x = F.avg_pool2d(x, 32 // setup.image_size) if setup.image_size < 32 else x
        if setup.in_channels != 3:
            g = torch.Generator().manual_seed(10_000 + setup.kernel_seed)
            embed = torch.randn(setup.in_channels, 3, generator=g) / math.sqrt(3)
            x = torch.einsum("oc,bchw->bohw", embed, x)
        _IMAGE_CACHE[key] = x.contiguous()
    return _IMAGE_CACHE[key]


def target_convolution(setup: ConvolveSetup) -> nn.Conv2d:
    """The fixed random convolution to learn: weights N(0, 1/(D_in·K²)), bias N(0, 0.1²), from
    ``kernel_seed``; 'same' zero padding, no gradients."""
    k = setup.kernel_size
    g = torch.Generator().manual_seed(setup.kernel_seed)
    conv = nn.Conv2d(setup.in_channels, setup.out_channels, k, padding=(k - 1) // 2)
    with torch.no_grad():
        conv.weight.copy_(
            torch.randn(conv.weight.shape, generator=g)
            / math.sqrt(setup.in_channels * k * k)
        )
        conv.bias.copy_(0.1 * torch.randn(conv.bias.shape, generator=g))
    conv.requires_grad_(False)
    return conv


def make_attention_layer(
    setup: ConvolveSetup, centers=None
) -> MultiHeadSelfAttention2d:
    """The layer to train: K² quadratic heads (eq. 9, α per head learned directly) with value
    projection, position-only scores and keys zero-padded by (K−1)/2, initialised from
    ``setup.seed``. ``centers`` ``(K², 2)`` replaces the random centres."""
    g = torch.Generator().manual_seed(setup.seed)
    n = setup.num_heads
    c = (
        torch.randn(n, 2, generator=g) * setup.center_init_std
        if centers is None
        else torch.as_tensor(centers, dtype=torch.float32)
    )
    if c.shape != (n, 2):
        raise ValueError(f"centers must have shape ({n}, 2), got {tuple(c.shape)}")
    enc = QuadraticEncoding(
        n,
        centers=c.clone(),
        alpha=setup.alpha_init,
        parametrization=setup.parametrization,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(setup.seed)
        layer = MultiHeadSelfAttention2d(
            setup.in_channels,
            n,
            setup.resolved_head_dim,
            setup.out_channels,
            encoding=enc,
            terms=ScoreTerms.position_only_terms(),
            key_padding=(setup.kernel_size - 1) // 2,
        )
    return layer


def relative_error(
    layer: nn.Module, conv: nn.Module, images: torch.Tensor, batch_size: int = 500
) -> float:
    """Σ ‖layer(x) − conv(x)‖² / Σ ‖conv(x)‖² over ``images`` (the loss of this module)."""
    num = den = 0.0
    with torch.no_grad():
        for i in range(0, len(images), batch_size):
            x = images[i : i + batch_size]
            y = conv(x)
            num += float(((layer(x) - y) ** 2).sum())
            den += float((y**2).sum())
    return num / den


def output_error(relative_squared_error: float) -> float:
    """The relative output error ‖layer(x) − conv(x)‖ / ‖conv(x)‖ over the images: the square root of
    :func:`relative_error` (a ratio of squared norms, the training loss)."""
    return math.sqrt(relative_squared_error)


def set_kernel_values(
    layer: MultiHeadSelfAttention2d, conv: nn.Conv2d
) -> MultiHeadSelfAttention2d:
    """Lemma 1's value weights, in place: W_out^h W_val^h = W[:, :, Δ] for the lattice point Δ
    nearest to head h's centre (:func:`attnconv.core.conv.head_weights_from_kernel`), and b_out = the
    convolution's bias. With every head on its own lattice point and α large, ``layer`` equals
    ``conv`` (Theorem 1). Returns ``layer``."""
    k = conv.kernel_size[0]
    if layer.num_heads != k * k:
        raise ValueError(
            f"the layer has {layer.num_heads} heads, a {k}×{k} kernel needs {k * k}"
        )
    nearest = lattice_distances(layer.encoding.centers.detach(), k)["nearest_point"]
    r, d = (k - 1) // 2, layer.head_dim
    shifts = kernel_shifts(k)
    with torch.no_grad():
        for h in range(layer.num_heads):
            i, j = (int(v) + r for v in shifts[int(nearest[h])])
            w_out, w_val = head_weights_from_kernel(conv.weight.detach()[:, :, i, j], d)
            layer.value.weight[h * d : (h + 1) * d] = w_val
            layer.out.weight[:, h * d : (h + 1) * d] = w_out
        layer.out.bias.copy_(conv.bias.detach())
    return layer


def learn_to_convolve(
    setup: ConvolveSetup, centers=None, kernel_values: bool = False
) -> ConvolveResult:
    """Train :func:`make_attention_layer` to reproduce :func:`target_convolution` on
    :func:`convolution_images` (Adam, mini-batches drawn from ``setup.seed``) and record the
    heads' centres Δ_h and widths α_h at every step. ``centers`` replaces the random initial
    centres; ``kernel_values`` starts from Lemma 1's value weights (:func:`set_kernel_values`)
    instead of random ones. Deterministic for a given setup (and thread count)."""
    images = convolution_images(setup)
    conv = target_convolution(setup)
    layer = make_attention_layer(setup, centers)
    if kernel_values:
        set_kernel_values(layer, conv)
    with torch.no_grad():
        scale = float((conv(images[:500]) ** 2).mean())
    opt = torch.optim.Adam(layer.parameters(), lr=setup.lr)
    g = torch.Generator().manual_seed(setup.seed + 1)
    enc = layer.encoding
    centres = [enc.centers.detach().clone()]
    alphas = [enc.width().detach().clone()]
    losses = []
    initial = relative_error(layer, conv, images)
    order, pos = torch.randperm(len(images), generator=g), 0
    for step in range(setup.steps):
        if pos + setup.batch_size > len(images):
            order, pos = torch.randperm(len(images), generator=g), 0
        idx = order[pos : pos + setup.batch_size]
        pos += setup.batch_size
        x = images[idx]
        with torch.no_grad():
            y = conv(x)
        loss = ((layer(x) - y) ** 2).mean() / scale
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if step < setup.freeze_width_steps:
            width = enc.spread if setup.parametrization == "spread" else enc.alpha
            width.grad = None  # Adam skips a parameter without gradient
        opt.step()
        losses.append(float(loss.detach()))
        centres.append(enc.centers.detach().clone())
        alphas.append(enc.width().detach().clone())
    layer.eval()
    return ConvolveResult(
        setup,
        torch.stack(centres),
        torch.stack(alphas),
        torch.tensor(losses),
        relative_error(layer, conv, images),
        layer,
        conv,
        initial,
    )


# --------------------------------------------------------------------------- the lattice
def _centers(centers) -> torch.Tensor:
    c = torch.as_tensor(centers, dtype=torch.float64)
    if c.ndim != 2 or c.shape[1] != 2:
        raise ValueError(f"centers must be (N_h, 2), got shape {tuple(c.shape)}")
    return c


def lattice_distances(centers, kernel_size: int = 3) -> Dict[str, torch.Tensor]:
    """Distances between head centres ``(N_h, 2)`` and the K×K lattice of shifts of Theorem 1
    (:func:`~attnconv.core.encodings.kernel_shifts`, row-major).

    Returns ``head_to_lattice`` ``(N_h,)`` (each head to its nearest lattice point),
    ``nearest_point`` ``(N_h,)`` (that point's index), ``lattice_to_head`` ``(K²,)`` (each lattice
    point to its nearest head) and ``points`` ``(K², 2)``."""
    c = _centers(centers)
    pts = kernel_shifts(kernel_size).to(torch.float64)
    d = torch.cdist(c, pts)  # (N_h, K²)
    return {
        "head_to_lattice": d.min(1).values,
        "nearest_point": d.argmin(1),
        "lattice_to_head": d.min(0).values,
        "points": pts,
    }


def stray_heads(centers, kernel_size: int = 3, radius: float = 0.5) -> List[int]:
    """Indices of the heads whose centre is farther than ``radius`` from every lattice point."""
    if radius <= 0:
        raise ValueError("radius must be > 0")
    d = lattice_distances(centers, kernel_size)["head_to_lattice"]
    return [int(h) for h in torch.nonzero(d > radius).flatten()]


def head_diagnostics(
    result: ConvolveResult, num_images: int = 500
) -> Dict[str, torch.Tensor]:
    """Per head of a trained layer: ``center_grad`` ‖∂loss/∂Δ_h‖ on the first ``num_images``
    images, ``value_norm`` ‖W_out^h W_val^h‖_F (the head's D_out × D_in kernel slice, Lemma 1),
    ``alpha`` α_h, ``distance`` to the nearest lattice point and ``nearest_point``; and
    ``kernel_norms`` ‖W[:, :, Δ]‖_F of the target kernel at every lattice point (row-major)."""
    setup, layer, conv = result.setup, result.layer, result.conv
    images = convolution_images(setup)[:num_images]
    with torch.no_grad():
        y = conv(images)
        scale = float((y**2).mean())
    layer.zero_grad(set_to_none=True)
    loss = ((layer(images) - y) ** 2).mean() / scale
    loss.backward()
    grad = layer.encoding.centers.grad.detach().norm(dim=1)
    layer.zero_grad(set_to_none=True)
    n, d = layer.num_heads, layer.head_dim
    with torch.no_grad():
        w_out = layer.out.weight.view(layer.out_channels, n, d)
        w_val = layer.value.weight.view(n, d, layer.in_channels)
        slices = torch.einsum("ohd,hdi->hoi", w_out, w_val)
    dist = lattice_distances(layer.encoding.centers.detach(), setup.kernel_size)
    k = setup.kernel_size
    kernel = (
        conv.weight.detach()
        .permute(2, 3, 0, 1)
        .reshape(k * k, conv.out_channels, conv.in_channels)
    )
    return {
        "center_grad": grad,
        "value_norm": slices.flatten(1).norm(dim=1),
        "alpha": layer.encoding.width().detach().clone(),
        "distance": dist["head_to_lattice"],
        "nearest_point": dist["nearest_point"],
        "kernel_norms": kernel.flatten(1).norm(dim=1),
    }


def run_summary(
    result: ConvolveResult, radius: float = 0.5, dead_alpha: float = 0.5
) -> dict:
    """Where the heads of a trained layer ended: ``covered`` lattice points (a head within
    ``radius``), ``on_lattice`` heads (within ``radius`` of a lattice point), ``shared`` heads (on a
    lattice point that another, closer head already takes), ``dead`` heads (α < ``dead_alpha``:
    nearly uniform attention), ``stray`` heads (farther than ``radius`` from every lattice point),
    the ``final_error`` (relative squared error, the loss) and the ``output_error`` (its root)."""
    k = result.setup.kernel_size
    c = result.centers[-1]
    d = lattice_distances(c, k)
    near = d["head_to_lattice"] <= radius
    taken, shared = set(), []
    for h in sorted(range(len(c)), key=lambda h: float(d["head_to_lattice"][h])):
        if near[h]:
            p = int(d["nearest_point"][h])
            if p in taken:
                shared.append(h)
            taken.add(p)
    return {
        "covered": lattice_coverage(c, k, radius),
        "on_lattice": int(near.sum()),
        "shared": sorted(shared),
        "dead": [
            int(h) for h in torch.nonzero(result.alphas[-1] < dead_alpha).flatten()
        ],
        "stray": stray_heads(c, k, radius),
        "final_error": result.final_error,
        "output_error": output_error(result.final_error),
    }


def seed_sweep(
    setup: ConvolveSetup,
    seeds: Sequence[int],
    radius: float = 0.5,
    keep_results: bool = False,
):
    """:func:`learn_to_convolve` for each seed (the kernel stays that of ``setup``): per seed the
    :func:`run_summary` with its ``seed``. With ``keep_results`` also returns the
    :class:`ConvolveResult` of each seed: ``(rows, results)``."""
    rows, results = [], []
    for s in seeds:
        r = learn_to_convolve(replace(setup, seed=int(s)))
        rows.append({"seed": int(s), **run_summary(r, radius)})
        if keep_results:
            results.append(r)
    return (rows, results) if keep_results else rows


#: The seeds of a sweep whose whole run is saved beside its row (the chapter's two examples).
EXAMPLE_SEEDS = (1, 2)
#: Centres and widths are saved every this many steps (and at the last).
EXAMPLE_STRIDE = 5


@dataclass(frozen=True)
class SavedConvolveRun:
    """A run of :func:`learn_to_convolve` as saved with its sweep (:func:`example_record`):
    ``centers`` ``(len(steps), N_h, 2)`` and ``alphas`` ``(len(steps), N_h)`` at the optimisation
    ``steps`` listed, ``losses`` at every step, the errors, the sweep's row and
    :func:`head_diagnostics` (read, not recomputed: the page shows what the saved run did)."""

    setup: ConvolveSetup
    steps: torch.Tensor
    centers: torch.Tensor
    alphas: torch.Tensor
    losses: torch.Tensor
    initial_error: float
    final_error: float
    row: dict
    diagnostics: Dict[str, torch.Tensor]


def _rounded(t: torch.Tensor, digits: int = 4):
    return torch.round(t.double(), decimals=digits).tolist()


def example_record(result: ConvolveResult, row: dict) -> dict:
    """One run of a sweep as JSON: its ``row``, centres and α every :data:`EXAMPLE_STRIDE` steps
    (4 decimals), the losses, the errors and :func:`head_diagnostics`."""
    last = len(result.centers) - 1
    steps = sorted(set(range(0, last, EXAMPLE_STRIDE)) | {last})
    diag = head_diagnostics(result)
    return {
        "row": row,
        "steps": steps,
        "centers": _rounded(result.centers[steps]),
        "alphas": _rounded(result.alphas[steps]),
        "losses": _rounded(result.losses, 6),
        "initial_error": float(result.initial_error),
        "final_error": float(result.final_error),
        "diagnostics": {k: v.double().tolist() for k, v in diag.items()},
    }


def seed_sweep_with_examples(
    setup: ConvolveSetup, seeds: Sequence[int], radius: float = 0.5
) -> dict:
    """:func:`seed_sweep`'s rows and, for the seeds of :data:`EXAMPLE_SEEDS`, the whole run
    (:func:`example_record`): what a saved sweep holds."""
    rows, results = seed_sweep(setup, seeds, radius, keep_results=True)
    examples = {
        str(row["seed"]): example_record(result, row)
        for row, result in zip(rows, results)
        if row["seed"] in EXAMPLE_SEEDS
    }
    return {"rows": rows, "examples": examples}


def sweep_key(setup: ConvolveSetup, seeds: Sequence[int], radius: float = 0.5) -> dict:
    """What a saved :func:`seed_sweep` was made with: the setup, the seeds and the radius."""
    from dataclasses import asdict

    return {"setup": asdict(setup), "seeds": [int(s) for s in seeds], "radius": radius}


def saved_seed_sweep(
    path, setup: ConvolveSetup, seeds: Sequence[int], radius: float = 0.5
) -> List[dict]:
    """:func:`seed_sweep` as saved in a JSON file (the chapter's spread over many seeds, too slow to
    re-run in CI), ``path`` relative to the book's folder: read when it holds a sweep of the same
    setup, seeds and radius; otherwise the error names the command that makes it
    (``python -m attnconv.regenerate``). Rows as :func:`seed_sweep`. Never writes."""
    from pathlib import Path

    from .store import book_dir, read_keyed

    path = Path(path)
    full = path if path.is_absolute() else book_dir() / path
    return read_keyed(full, sweep_key(setup, seeds, radius), f"results/{full.stem}")[
        "rows"
    ]


def saved_examples(
    path, setup: ConvolveSetup, seeds: Sequence[int], radius: float = 0.5
) -> List[SavedConvolveRun]:
    """The runs of :data:`EXAMPLE_SEEDS` saved with the sweep in ``path`` (as
    :func:`saved_seed_sweep`: the same key, a one-line error naming the command that makes it
    when the file holds none), in seed order. Never writes."""
    from pathlib import Path

    from .store import book_dir, read_keyed

    path = Path(path)
    full = path if path.is_absolute() else book_dir() / path
    saved = read_keyed(full, sweep_key(setup, seeds, radius), f"results/{full.stem}")
    if not saved.get("examples"):
        raise FileNotFoundError(
            f"{full} holds no example runs: make it again with "
            f"python -m attnconv.regenerate --force --only results/{full.stem}"
        )
    out = []
    for seed, rec in sorted(saved["examples"].items(), key=lambda kv: int(kv[0])):
        t = lambda v: torch.tensor(v, dtype=torch.float64)  # noqa: E731
        out.append(
            SavedConvolveRun(
                replace(setup, seed=int(seed)),
                torch.tensor(rec["steps"]),
                t(rec["centers"]),
                t(rec["alphas"]),
                t(rec["losses"]),
                rec["initial_error"],
                rec["final_error"],
                rec["row"],
                {k: t(v) for k, v in rec["diagnostics"].items()},
            )
        )
    return out
