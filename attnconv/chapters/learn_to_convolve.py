"""Learning to convolve: does gradient descent find the attention layer of Theorem 1?

Theorem 1 (with Lemmas 1 and 2) says that a multi-head self-attention layer with N_h = K² heads
and the quadratic encoding of eq. (9) *can* express any K×K convolution: put head h's Gaussian on
the kernel shift Δ_h, make it sharp (α → ∞) and set W_val^h W_out^h to the kernel slice
W[:, :, Δ_h]. This module asks whether it is also *found*: it trains one such layer
(:class:`~attnconv.core.attention.MultiHeadSelfAttention2d`, value projection on, zero-padded keys,
centres drawn at random) to reproduce a fixed random K×K convolution on real images, and records
where the centres go.

The experiment lives in :mod:`attnconv.experiments.studies_convolve` (the seed sweeps are studies
made by ``python -m attnconv.regenerate``): its setup, its parts, the training, how close the
centres come to the K×K lattice of Theorem 1, per-head diagnostics and the seed sweep. This module
draws it:

* :func:`plot_convolve_run` — trajectories, α over time and the loss; :func:`plot_seed_sweep` —
  the lattice points covered per seed.

Loss: mean squared error between the layer's output and the convolution's, divided by the mean
square of the convolution's output (a relative error: 1 for the zero map).
"""

from __future__ import annotations

from ..core.encodings import kernel_shifts
from ..experiments.studies_convolve import (
    ConvolveResult,
)
from .shared.plotting import COLUMN_INCHES

__all__ = [
    "plot_convolve_run",
    "plot_seed_sweep",
]


# --------------------------------------------------------------------------- figures
def plot_convolve_run(
    result: ConvolveResult, title: str = "", radius: float = 0.5, view: float = 4.5
):
    """Three panels: the centre trajectories over the optimisation steps (circle: start, cross:
    end) on the K×K lattice (grey squares; circles of ``radius`` around each point), α_h over the
    steps, and the loss. The centre panel spans at least ±``view`` tokens, and more where a head
    travels further, so that every trajectory is drawn whole. Returns the figure."""
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.patches import Circle

    k = result.setup.kernel_size
    pts = kernel_shifts(k).double().numpy()
    traj = result.centers.double().numpy()
    n = traj.shape[1]
    cmap = plt.cm.tab10 if n <= 10 else plt.cm.tab20
    colors = [cmap(h % cmap.N) for h in range(n)]
    # the heads' legend, right of the top panel, overhangs the figure by about 0.25 in
    fig = plt.figure(figsize=(COLUMN_INCHES - 0.25, 6.4), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[1.25, 1])
    axes = [top.subplots(1, 1)] + list(bottom.subplots(1, 2))
    ax = axes[0]
    for p in pts:
        ax.add_patch(Circle((p[1], p[0]), radius, fill=False, ec="0.6", lw=0.8, ls=":"))
    ax.scatter(
        pts[:, 1],
        pts[:, 0],
        marker="s",
        s=60,
        color="0.75",
        zorder=1,
        label="lattice (Thm. 1)",
    )
    view = max(view, float(np.abs(traj).max()) + 0.7)  # every head's path, whole
    for h in range(n):
        t = traj[:, h]
        ax.plot(
            t[:, 1], t[:, 0], color=colors[h], lw=1.2, alpha=0.85, label=f"head {h + 1}"
        )
        ax.plot(t[0, 1], t[0, 0], "o", color=colors[h], ms=5, mfc="white")
        ax.plot(t[-1, 1], t[-1, 0], "x", color=colors[h], ms=8, mew=2)
    ax.set_xlim(-view, view), ax.set_ylim(view, -view)
    ax.set_aspect("equal")
    ax.set_xlabel("column shift Δ₂"), ax.set_ylabel("row shift Δ₁")
    ax.set_title("head centres during training", fontsize=8.5)
    ax.legend(
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        frameon=False,
        ncol=2 if n > 9 else 1,
    )
    steps = np.asarray(getattr(result, "steps", range(traj.shape[0])))  # saved: strided
    alphas = result.alphas.double().numpy()
    for h in range(n):
        axes[1].plot(steps, np.clip(alphas[:, h], 1e-3, None), color=colors[h], lw=1.2)
    axes[1].set_yscale("log")
    axes[1].set_xlabel("step"), axes[1].set_ylabel(r"$\alpha_h$")
    axes[1].set_title("width α of each head", fontsize=8.5)
    axes[2].plot(
        np.arange(1, len(result.losses) + 1),
        result.losses.double().numpy(),
        color="k",
        lw=1,
    )
    axes[2].set_yscale("log")
    axes[2].set_xlabel("step"), axes[2].set_ylabel("relative squared error")
    axes[2].set_title("loss (mini-batch)", fontsize=8.5)
    if title:
        fig.suptitle(title, fontsize=9)
    return fig


def plot_seed_sweep(sweeps, kernel_size: int = 3):
    """The lattice points covered per seed, one line per layer size (``sweeps``: label → rows of
    :func:`saved_seed_sweep`, e.g. ``{"9 heads": ..., "16 heads": ...}``), against the K² points
    of Theorem 1 (dotted). Returns the figure."""
    import matplotlib.pyplot as plt

    from .shared.plotting import model_colour

    colours = {0: model_colour("quadratic"), 1: model_colour("quadratic, 16 heads")}
    markers = ("o", "s", "^", "D")
    fig, ax = plt.subplots(figsize=(COLUMN_INCHES * 0.9, 2.9), layout="constrained")
    k2 = kernel_size**2
    ax.axhline(k2, color="0.5", ls=":", lw=1)
    first = min(r["seed"] for rows in sweeps.values() for r in rows)
    ax.text(first, k2 + 0.2, f"all {k2} points (Theorem 1)", color="0.4", va="bottom")
    for i, (label, rows) in enumerate(sweeps.items()):
        seeds = [r["seed"] for r in rows]
        ax.plot(
            seeds,
            [r["covered"] for r in rows],
            marker=markers[i % 4],
            color=colours.get(i, "0.3"),
            lw=1.2,
            label=label,
        )
    ax.set_xticks(seeds)
    ax.set_xlabel("seed")
    ax.set_ylabel("lattice points covered")
    ax.set_ylim(0, k2 + 1.4)
    ax.set_yticks(range(0, k2 + 1, 3 if k2 > 6 else 1))
    ax.legend(loc="lower right", frameon=False)
    return fig
