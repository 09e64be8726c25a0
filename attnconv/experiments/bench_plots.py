"""Figures of an attention benchmark result (:func:`~attnconv.experiments.bench.run_benchmark`):
training-step time against the token grid, and training throughput per model and implementation.
"""

from __future__ import annotations

from typing import Mapping, Optional

from .bench_timing import IMPLEMENTATIONS

__all__ = ["plot_grid_sweep", "plot_throughput"]


def plot_grid_sweep(result: dict, ax=None, colours: Optional[Mapping[str, str]] = None):
    """Training-step time against the token grid, dense and local (log–log), from a result;
    ``colours``: implementation → colour (the chapters pass the book's)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.6))
    for impl, style in (("dense", "o-"), ("local", "s-")):
        rows = sorted(
            (r for r in result["grid"] if r["implementation"] == impl),
            key=lambda r: r["tokens"],
        )
        ax.plot(
            [r["tokens"] for r in rows],
            [r["train_step_s"] for r in rows],
            style,
            label=impl,
            color=(colours or {}).get(impl),
        )
    sides = sorted({r["tokens"] for r in result["grid"]})
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sides, [f"{s}×{s}" for s in sides])
    ax.set_xlabel("token grid")
    ax.set_ylabel("training step (s)")
    s = result["settings"]
    ax.set_title(
        f"batch {s['grid_batch_size']}, {s['grid_overrides']['num_layers']} layers, "
        f"hidden {s['grid_overrides']['hidden_size']}",
        fontsize=9,
    )
    ax.legend()
    ax.grid(alpha=0.3, which="both")
    return ax.figure


def plot_throughput(result: dict, ax=None, colours: Optional[Mapping[str, str]] = None):
    """Training images/s per model and implementation, from a result; ``colours``:
    implementation → colour (the chapters pass the book's)."""
    import matplotlib.pyplot as plt
    import numpy as np

    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 3.4), layout="constrained")
    models = list(result["models"])
    width = 0.25
    for i, impl in enumerate(IMPLEMENTATIONS):
        vals = [
            next(
                (
                    r["train_images_per_s"]
                    for r in result["models"][m]
                    if r["implementation"] == impl
                ),
                np.nan,
            )
            for m in models
        ]
        ax.bar(
            np.arange(len(models)) + (i - 1) * width,
            vals,
            width,
            label=impl,
            color=(colours or {}).get(impl),
        )
    ax.set_xticks(np.arange(len(models)), models)
    ax.set_ylabel("training images / s")
    ax.legend(
        title="implementation",
        loc="upper left",
        bbox_to_anchor=(1.01, 1),
        frameon=False,
    )
    ax.grid(axis="y", alpha=0.3)
    return ax.figure
