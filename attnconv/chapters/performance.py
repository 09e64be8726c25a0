"""Ch. 13's tables of the saved attention benchmark: the machine and settings it ran on, said in
the captions of the tables they belong to (not printed apart). Everything is read from the saved
result, so the captions are the same on every machine that builds the book."""

from __future__ import annotations

from typing import Mapping

__all__ = ["machine_words", "speed_caption", "efficiency_caption", "in_short_box"]


def machine_words(result: Mapping) -> str:
    """``x86_64 (cpu, 2 threads, torch 2.15.0)``: the machine the saved benchmark ran on."""
    m = result["machine"]
    return f"{m['device']} ({m['device_type']}, {m['threads']} threads, torch {m['torch']})"


def _settings_words(result: Mapping) -> str:
    s = result["settings"]
    overrides = s["model_overrides"]
    changed = (
        ", ".join(f"{k} {v}" for k, v in overrides.items())
        if isinstance(overrides, Mapping)
        else str(overrides)
    )
    return f"batch {s['batch_size']}, " + (
        f"model overrides: {changed}" if overrides else "no model overrides"
    )


def speed_caption(result: Mapping, number: str = "13.1") -> str:
    """Table ``number``'s caption: the speeds at the paper's settings, with the batch, any
    override of the models and the machine they were measured on."""
    return (
        f"Table {number} — Training and inference speed at the paper's settings "
        f"({_settings_words(result)}), measured on {machine_words(result)}."
    )


def efficiency_caption(result: Mapping, number: str = "13.2") -> str:
    """Table ``number``'s caption: the achieved rate, with the matrix-product rate measured in
    the same run that ``% matmul`` divides by."""
    rate = result["machine"]["matmul_gflop_per_s"]
    return (
        f"Table {number} — Achieved rate, memory and backward cost at the paper's settings; "
        f"% matmul is against the sustained float32 matrix-product rate measured in the "
        f"same run, {rate:.0f} GFLOP/s."
    )


#: The paper's sentence on locality (Sec. 4.2), quoted in the box.
PAPER_SAYS = (
    '"Our implementation could be optimized to exploit the locality of Gaussian attention '
    'probabilities and reduce significantly the number of FLOPS." (Sec. 4.2)'
)


def _speed_words(result: Mapping) -> str:
    """The box's 16×16 bullet: how the Gaussian models (those with a local layer) train with the
    dense and local layers against the naive one; then a two-item list, the slowest layer and
    the other models' best gain, one number an item."""
    gaussian = {
        model
        for model, rs in result["models"].items()
        if any(r["implementation"] == "local" for r in rs)
    }
    rows = [
        (r["train_speedup_vs_naive"], model, r["implementation"])
        for model, rs in result["models"].items()
        for r in rs
        if r["implementation"] != "naive"
    ]
    ours = [r for r in rows if r[1] in gaussian]
    slow, best = min(ours), max(ours)
    if best[0] < 1.0:
        words = (
            "neither layer trains a Gaussian model faster than the naive one "
            "(Figure 13.1)."
        )
    else:
        words = (
            f"the best layer for a Gaussian model, the {best[1]} model's {best[2]}, trains "
            f"at {best[0]:.2f}× the naive speed (Figure 13.1)."
        )
    items = [f"the slowest is the {slow[1]} model's {slow[2]} layer, at {slow[0]:.2f}×"]
    others = [r for r in rows if r[1] not in gaussian]
    if others:
        gain = max(others)
        items.append(
            f"the {gain[1]} model, which has no Gaussian heads, gains most, "
            f"at {gain[0]:.2f}× with the {gain[2]} layer"
        )
    # one number an item: a short list under the bullet, not a sentence per number
    return (
        words
        + " Against the naive speed:\n"
        + ";\n".join(f"  - {i}" for i in items)
        + "."
    )


def in_short_box(result: Mapping) -> str:
    """Ch. 13's result box, its numbers read from the saved benchmark ``result``: at the
    paper's settings, how the Gaussian models train with the dense and local layers against the
    naive one (the slowest layer named, the learned model's gain apart), and how much faster
    local than dense attention trains on the largest token grid."""
    steps: dict = {}
    for r in result["grid"]:
        steps.setdefault(r["tokens"], {})[r["implementation"]] = r["train_step_s"]
    side = max(steps)
    gain = steps[side]["dense"] / steps[side]["local"]
    return (
        "```{admonition} In short\n"
        ":class: tip result-box\n"
        "**At the paper's settings, the dense and local layers bring the Gaussian models no "
        "gain. On larger token grids, locality pays.**\n\n"
        f"- **The paper says.** {PAPER_SAYS}.\n"
        f"- **At 16×16 tokens** {_speed_words(result)}\n"
        f"- **On larger grids** local attention trains {gain:.0f}× faster than dense at "
        f"{side}×{side} tokens, with the same accuracy (Figure 13.2).\n"
        "```"
    )
