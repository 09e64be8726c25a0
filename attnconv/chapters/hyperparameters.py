"""The paper's Table 2 (App. A.4, "Self-attention network parameters") next to our profiles.

Chapter 14 ("Hyper-parameters"). :data:`PAPER_TABLE2` holds the table as printed in arXiv v1;
:func:`profile_values` reads the same settings for a profile from the code (the profile's
:class:`~attnconv.experiments.train.TrainConfig` of the quadratic model, its
:class:`~attnconv.experiments.models.SelfAttentionConfig` and the optimizer's parameter groups),
and :func:`table2_markdown` puts them side by side, marking every deviation (✗) and the reason
for it (:data:`REASONS`).
"""

from __future__ import annotations

from typing import Dict, List, Sequence

import torch

from ..experiments.models import build_model
from ..experiments.paper_numbers import PAPER_PARAMETERS, PAPER_TABLE2
from ..experiments.profiles import get_profile
from ..experiments.train import parameter_groups

__all__ = [
    "PAPER_TABLE2",
    "EXTRA_ROWS",
    "REASONS",
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
}


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


def table2_rows(profiles: Sequence[str] = ("paper", "gpu", "cpu")) -> List[dict]:
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
    return "\n".join(lines)
