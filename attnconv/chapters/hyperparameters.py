"""The paper's Table 2 (App. A.4, "Self-attention network parameters") next to our profiles.

Chapter 14 ("Hyper-parameters"). :data:`PAPER_TABLE2` holds the table as printed in arXiv v1;
:func:`profile_values` reads the same settings for a profile from the code (the profile's
:class:`~attnconv.experiments.train_config.TrainConfig` of the quadratic model, its
:class:`~attnconv.experiments.models.SelfAttentionConfig` and the optimizer's parameter groups),
and :func:`table2_markdown` puts them side by side, marking every deviation (✗) and the reason
for it (:data:`REASONS`).
"""

from __future__ import annotations

import re
from typing import Dict, List, Sequence

import torch

from ..experiments.models import build_model
from ..experiments.paper_numbers import PAPER_PARAMETERS, PAPER_TABLE2
from ..experiments.profiles import get_profile
from ..experiments.train_config import parameter_groups

__all__ = [
    "full_scale_hours",
    "plot_full_scale_hours",
    "profile_scale",
    "plot_profile_scale",
    "EXTRA_ROWS",
    "REASONS",
    "TABLE_PROFILES",
    "profile_values",
    "table2_rows",
    "table2_markdown",
]


#: Settings that are not in Table 2 but that a reader needs to reproduce it: what the paper says
#: elsewhere (or "not stated").
EXTRA_ROWS: Dict[str, object] = {
    "learning rate on positional parameters": 0.1,
    "weight decay on Gaussian Δ, s, M": 0.0001,
    "training data": "CIFAR-10 (50,000)",
    "Δ init, std per coordinate": "√2 (N(0, 2I₂))",
    "learned encoding: dims per axis, tables": "200, one shared",
    "ResNet18 lr ÷ 10 at epochs": "not stated",
}

#: Why a profile deviates, per (row, profile).
REASONS: Dict[tuple, str] = {
    ("number of layers", "cpu"): "2 layers train in minutes on 2 CPU cores",
    (
        "hidden dimension",
        "cpu",
    ): f"CPU budget (~120k parameters instead of {PAPER_PARAMETERS['quadratic']})",
    ("intermediate dimension", "cpu"): "CPU budget",
    (
        "invertible pooling width",
        "cpu",
    ): "8×8 tokens of 4×4 pixels instead of 16×16: 16× fewer pairs",
    ("number of epochs", "gpu"): "about 15 minutes per model on one GPU",
    (
        "number of epochs",
        "cpu",
    ): "CPU budget; the book's saved runs train longer (chapters 7-10)",
    (
        "learning rate on positional parameters",
        "cpu",
    ): "×10, so that the heads move in 16-40 epochs "
    "(centres moved ~7× further in 8 epochs)",
    (
        "weight decay on Gaussian Δ, s, M",
        "paper",
    ): "none, as in the authors' code (not stated in the paper)",
    ("weight decay on Gaussian Δ, s, M", "gpu"): "as the paper profile",
    ("weight decay on Gaussian Δ, s, M", "cpu"): "as the paper profile",
    ("training data", "cpu"): "no download: the bundled sample",
    (
        "Δ init, std per coordinate",
        "paper",
    ): "std 2 as in the authors' code (normal_(0, 2))",
    ("Δ init, std per coordinate", "gpu"): "as the paper profile",
    ("Δ init, std per coordinate", "cpu"): "as the paper profile",
    (
        "learned encoding: dims per axis, tables",
        "paper",
    ): "the authors' code; only it gives the paper's 12.3M (chapter 7)",
    ("learned encoding: dims per axis, tables", "gpu"): "as the paper profile",
    (
        "learned encoding: dims per axis, tables",
        "cpu",
    ): "2 × hidden, as the paper profile",
    (
        "ResNet18 lr ÷ 10 at epochs",
        "paper",
    ): "the authors' run scripts; scaled to the epochs",
    (
        "hidden dimension",
        "deep",
    ): "the paper's depth and 16×16 tokens on 2 CPU cores need a narrow model",
    ("intermediate dimension", "deep"): "CPU budget, as the hidden dimension",
    ("number of epochs", "deep"): "CPU budget (about 20-60 minutes per run)",
    (
        "learning rate on positional parameters",
        "deep",
    ): "×10, as the cpu profile",
    ("weight decay on Gaussian Δ, s, M", "deep"): "as the paper profile",
    ("training data", "deep"): "no download: the bundled sample",
    ("Δ init, std per coordinate", "deep"): "as the paper profile",
    (
        "learned encoding: dims per axis, tables",
        "deep",
    ): "2 × hidden, as the paper profile",
}

#: The profiles of the book's table, in order of scale (``deep`` carries most 6-layer verdicts).
TABLE_PROFILES = ("paper", "gpu", "deep", "cpu")


def profile_values(profile: str) -> Dict[str, object]:
    """The settings of Table 2 (and :data:`EXTRA_ROWS`) for the quadratic model of ``profile``, read
    from the code."""
    tc = get_profile(profile).config("quadratic")
    mc = tc.model_config()
    with torch.device("meta"):
        model = build_model(mc)
    groups = parameter_groups(model, tc)
    gaussian_wd = {
        g["weight_decay"]
        for g in groups
        if any(".encoding." in f".{n}" for n in g["names"])
    }
    positional_lr = {
        g["lr"] for g in groups if any(".encoding." in f".{n}" for n in g["names"])
    }
    learned = get_profile(profile).config("learned").model_config()
    with torch.device("meta"):
        learned_model = build_model(learned)
    encodings = [layer.attention.encoding for layer in learned_model.layers]
    per_axis = encodings[0].dim // 2
    tables = (
        "one shared" if all(e is encodings[0] for e in encodings) else "one per layer"
    )
    milestones = get_profile(profile).config("resnet18").milestones
    data = {
        "auto": "CIFAR-10 (50,000)",
        "full": "CIFAR-10 (50,000)",
        "sample": "sample (5,085)",
    }[tc.data]
    return {
        "number of layers": mc.num_layers,
        "number of heads": mc.num_heads,
        "hidden dimension": mc.hidden_size,
        "intermediate dimension": mc.intermediate_size,
        "invertible pooling width": mc.downsample,
        "dropout probability": mc.hidden_dropout
        if mc.hidden_dropout == mc.attention_dropout
        else None,
        "layer normalization epsilon": mc.layer_norm_eps,
        "number of epochs": tc.epochs,
        "batch size": tc.batch_size,
        "learning rate": tc.lr,
        "weight decay": tc.weight_decay,
        "momentum": tc.momentum,
        "cosine decay": "yes" if tc.schedule == "warmup_cosine" else "no",
        "linear warm up ratio": tc.warmup_fraction,
        "learning rate on positional parameters": positional_lr.pop()
        if len(positional_lr) == 1
        else None,
        "weight decay on Gaussian Δ, s, M": gaussian_wd.pop()
        if len(gaussian_wd) == 1
        else None,
        "training data": data,
        "Δ init, std per coordinate": mc.center_init_std,
        "learned encoding: dims per axis, tables": f"{per_axis}, {tables}",
        "ResNet18 lr ÷ 10 at epochs": "/".join(str(m) for m in milestones),
    }


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(float(a) - float(b)) <= 1e-12 * max(1.0, abs(float(b)))
    return a == b


def table2_rows(profiles: Sequence[str] = TABLE_PROFILES) -> List[dict]:
    """One row per setting: ``name``, ``paper`` (Table 2, or :data:`EXTRA_ROWS`), ``in_table2``,
    and per profile its value, whether it ``matches`` the paper (``None`` where the paper states
    nothing) and the reason when not."""
    values = {p: profile_values(p) for p in profiles}
    rows = []
    for name, paper in list(PAPER_TABLE2.items()) + list(EXTRA_ROWS.items()):
        row = {
            "name": name,
            "paper": paper,
            "in_table2": name in PAPER_TABLE2,
            "profiles": {},
        }
        for p in profiles:
            v = values[p][name]
            matches = None if paper == "not stated" else _same(v, paper)
            row["profiles"][p] = {
                "value": v,
                "matches": matches,
                "reason": REASONS.get((name, p), ""),
            }
        rows.append(row)
    return rows


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def table2_markdown(rows: Sequence[dict]) -> str:
    """A Markdown table of :func:`table2_rows`: ✗ marks a deviation from the paper, with its reason
    in the last column; settings outside Table 2 are in italics."""
    profiles = list(rows[0]["profiles"])
    lines = [
        "| setting | paper | "
        + " | ".join(f"`{p}`" for p in profiles)
        + " | why the profiles deviate |",
        "| --- | --- | " + " | ".join("---" for _ in profiles) + " | --- |",
    ]
    for r in rows:
        name = r["name"] if r["in_table2"] else f"*{r['name']}*"
        cells, reasons = [], []
        for p in profiles:
            c = r["profiles"][p]
            cells.append(_fmt(c["value"]) + (" ✗" if c["matches"] is False else ""))
            if c["reason"] and (not c["matches"] or not reasons):
                reasons.append(f"{p}: {c['reason']}")
        lines.append(
            f"| {name} | {_fmt(r['paper'])} | "
            + " | ".join(cells)
            + " | "
            + "; ".join(reasons)
            + " |"
        )
    # a hyphen inside a word or a range ("CIFAR-10", "20-60") never breaks in a narrow column
    return re.sub(r"(?<=\w)(?<!\de)-(?=\w)", "\u2011", "\n".join(lines))


#: Training images of the full CIFAR-10 and of the bundled sample (the ``cpu`` profile's data).
CIFAR10_TRAIN_SIZE = 50_000


def profile_scale(profile: str, model: str = "quadratic") -> Dict[str, float]:
    """The size of a profile's runs, read from its configs: epochs, layers, hidden size, tokens per
    image ((image side / pooling width)²) and training images."""
    from ..experiments.beyond import SAMPLE_TRAIN_SIZE

    cfg = get_profile(profile).config(model)
    m = cfg.model_config()
    return {
        "epochs": float(cfg.epochs),
        "layers": float(m.num_layers),
        "hidden size": float(m.hidden_size),
        "tokens per image": float((m.image_size // m.downsample) ** 2),
        "training images": float(
            SAMPLE_TRAIN_SIZE if cfg.data == "sample" else CIFAR10_TRAIN_SIZE
        ),
    }


def plot_profile_scale(profiles: Sequence[str] = TABLE_PROFILES):
    """Horizontal bars, one group per quantity of :func:`profile_scale`, one bar per profile, as a
    fraction of the paper's value (log scale), each bar labelled with its value."""
    import matplotlib.pyplot as plt
    import numpy as np

    scales = {p: profile_scale(p) for p in profiles}
    ref = scales["paper"] if "paper" in scales else next(iter(scales.values()))
    names = list(ref)
    colours = {
        "paper": "#4d4d4d",
        "gpu": "#8c8c8c",
        "deep": "#9ecae1",
        "cpu": "#1f77b4",
    }
    fig, ax = plt.subplots(figsize=(6.8, 1.2 + 0.65 * len(profiles)))
    height = 0.8 / len(profiles)
    for j, p in enumerate(profiles):
        y = np.arange(len(names)) + (j - (len(profiles) - 1) / 2) * height
        frac = [scales[p][n] / ref[n] for n in names]
        ax.barh(y, frac, height=height, color=colours.get(p, f"C{j}"), label=p)
        for yy, f, n in zip(y, frac, names):
            ax.text(f * 1.08, yy, f"{scales[p][n]:,.0f}", va="center", fontsize=8.5)
    ax.set_xscale("log")
    ax.set_xlim(right=8)
    ax.set_yticks(np.arange(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlabel("fraction of the paper's value (log scale)")
    ax.legend(loc="center right", frameon=False)
    fig.tight_layout()
    return fig


def full_scale_hours(benchmark: dict, epochs: int = 300) -> Dict[str, Dict[str, float]]:
    """Hours to train each model for ``epochs`` epochs of 50,000 images: ``"gpu"`` from
    :func:`~attnconv.experiments.profiles.gpu_seconds_per_epoch` (measured by the GPU smoke test
    once it has run, else estimated), ``"cpu"`` from a saved benchmark's dense training step at
    the paper's size (steps only, no evaluation), where the benchmark has the model."""
    from ..experiments.profiles import gpu_seconds_per_epoch

    gpu, _ = gpu_seconds_per_epoch()
    out = {m: {"gpu": s * epochs / 3600} for m, s in gpu.items()}
    steps = CIFAR10_TRAIN_SIZE // benchmark["settings"]["batch_size"]
    for model, rows in benchmark["models"].items():
        dense = [r for r in rows if r["implementation"] == "dense"]
        if dense and model in out:
            out[model]["cpu"] = dense[0]["train_step_s"] * steps * epochs / 3600
    return out


def plot_full_scale_hours(benchmark: dict, epochs: int = 300):
    """Horizontal bars (log scale): hours for ``epochs`` epochs per model, on 2 CPU cores
    (measured steps, solid) and on one GPU (:func:`full_scale_hours`, estimated, hatched), in the
    book's colours."""
    import matplotlib.pyplot as plt
    import numpy as np

    from .shared.plotting import model_colour

    hours = full_scale_hours(benchmark, epochs)
    names = list(hours)
    fig, ax = plt.subplots(figsize=(6.8, 2.9))
    for i, m in enumerate(names):
        for dy, kind in ((-0.2, "cpu"), (0.2, "gpu")):
            if kind not in hours[m]:
                continue
            h = hours[m][kind]
            ax.barh(
                i + dy,
                h,
                height=0.38,
                color=model_colour(m),
                alpha=1.0
                if kind == "cpu"
                else 0.45,  # measured: solid; estimated: hatched
                hatch="//" if kind == "gpu" else None,
                edgecolor="white" if kind == "cpu" else model_colour(m),
            )
            label = f"{h / 24:.0f} days" if h > 48 else f"{h:.1f} h"
            ax.text(h * 1.1, i + dy, f"{kind}: {label}", va="center", fontsize=8.5)
    ax.set_xscale("log")
    ax.set_xlim(0.3, 1e4)
    ax.set_yticks(np.arange(len(names)), [m.replace("_", " + ") for m in names])
    ax.invert_yaxis()
    ax.set_xlabel(f"hours for {epochs} epochs of 50,000 images (log scale)")
    fig.tight_layout()
    return fig
