"""The paper's Table 2 (App. A.4, "Self-attention network parameters") next to our profiles.

Chapter 14 ("Hyper-parameters"). :data:`PAPER_TABLE2` holds the table as printed in arXiv v1;
:func:`profile_values` reads the same settings for a profile from the code (the profile's
:class:`~attnconv.experiments.train_config.TrainConfig` of the quadratic model, its
:class:`~attnconv.experiments.models.SelfAttentionConfig` and the optimizer's parameter groups),
and :func:`table2_markdown` puts them side by side in a compact table, marking every deviation
(✗); :func:`table2_notes` gives the reasons (:data:`REASONS`) as numbered notes, keyed by the
footnote mark after each setting.
"""

from __future__ import annotations

from typing import Dict, List, Sequence

import torch

from ..experiments.models import build_model
from ..experiments.paper_numbers import PAPER_PARAMETERS, PAPER_TABLE2
from ..experiments.profiles import get_profile
from ..experiments.train_config import parameter_groups
from .shared.tables import keep_words, spaced_unit

__all__ = [
    "full_scale_hours",
    "plot_full_scale_hours",
    "profile_scale",
    "plot_profile_scale",
    "EXTRA_ROWS",
    "NOTE_GROUPS",
    "REASONS",
    "TABLE_PROFILES",
    "profile_values",
    "table2_rows",
    "table2_markdown",
    "table2_notes",
]


#: Settings that are not in Table 2 but that a reader needs to reproduce it: what the paper says
#: elsewhere (or "not stated"). Each name is short enough for the table; its note says more.
EXTRA_ROWS: Dict[str, object] = {
    "training images": "50,000",
    "positional learning rate": 0.1,
    "weight decay on Δ, s, M": 0.0001,
    "Δ init, std": "√2",
    "learned dims per axis": 200,
    "learned tables": 1,
    "ResNet18 lr steps": "not stated",
}


#: Why a profile deviates, per (row, profile): the numbered notes under the table
#: (:func:`table2_notes`). Profiles with the same reason share it there.
REASONS: Dict[tuple, str] = {
    ("number of layers", "cpu"): "2 layers train in minutes",
    (
        "hidden dimension",
        "deep",
    ): "the paper's depth and 16×16 tokens need a narrow model",
    (
        "hidden dimension",
        "cpu",
    ): f"about 120 k parameters instead of {spaced_unit(PAPER_PARAMETERS['quadratic'])}",
    ("intermediate dimension", "deep"): "as the hidden dimension",
    ("intermediate dimension", "cpu"): "as the hidden dimension",
    (
        "invertible pooling width",
        "cpu",
    ): "8×8 tokens of 4×4 pixels instead of 16×16 tokens, so 16× fewer pairs",
    ("number of epochs", "gpu"): "about 15 minutes per model on one GPU",
    ("number of epochs", "deep"): "about 20–60 minutes per run",
    (
        "number of epochs",
        "cpu",
    ): "the book's saved runs set their own (listed below)",
    (
        "positional learning rate",
        "deep",
    ): "×10, as the `cpu` profile",
    (
        "positional learning rate",
        "cpu",
    ): "×10 on the encoding's parameters, so that the heads move in 16–40 epochs (centres "
    "moved about 7× further in 8 epochs)",
    (
        "weight decay on Δ, s, M",
        "paper",
    ): "none on the Gaussian parameters (not stated in the paper)",
    ("weight decay on Δ, s, M", "gpu"): "as the `paper` profile",
    ("weight decay on Δ, s, M", "deep"): "as the `paper` profile",
    ("weight decay on Δ, s, M", "cpu"): "as the `paper` profile",
    ("training images", "deep"): "the bundled CIFAR-10 sample, no download",
    ("training images", "cpu"): "the bundled CIFAR-10 sample, no download",
    (
        "Δ init, std",
        "paper",
    ): "standard deviation 2 per coordinate (`normal_(0, 2)`); the "
    r"paper's $\mathcal N(\mathbf 0, 2\mathbf I_2)$, read as a covariance, gives $\sqrt 2$",
    ("Δ init, std", "gpu"): "as the `paper` profile",
    ("Δ init, std", "deep"): "as the `paper` profile",
    ("Δ init, std", "cpu"): "as the `paper` profile",
    (
        "learned dims per axis",
        "paper",
    ): "the hidden size; with one table per layer, only this gives "
    "the paper's 12.3 M parameters (chapter 7)",
    ("learned dims per axis", "gpu"): "the hidden size, as the `paper` profile",
    ("learned dims per axis", "deep"): "the hidden size, as the `paper` profile",
    ("learned dims per axis", "cpu"): "the hidden size, as the `paper` profile",
    (
        "learned tables",
        "paper",
    ): "one per layer; the paper's text shares one table among all layers",
    ("learned tables", "gpu"): "as the `paper` profile",
    ("learned tables", "deep"): "as the `paper` profile",
    ("learned tables", "cpu"): "as the `paper` profile",
    (
        "ResNet18 lr steps",
        "paper",
    ): "the learning rate ÷ 10 at these epochs, from the authors' run scripts",
    ("ResNet18 lr steps", "gpu"): "the same steps, scaled to the epochs",
    ("ResNet18 lr steps", "deep"): "the same steps, scaled to the epochs",
    ("ResNet18 lr steps", "cpu"): "the same steps, scaled to the epochs",
}

#: The notes of Table 14.1 grouped by their reason: a bold heading and one sentence that says
#: the reason once, then the settings it explains (:func:`table2_notes`). A row named in no
#: group goes under :data:`OTHER_GROUP`.
NOTE_GROUPS: Dict[str, tuple] = {
    "To fit the compute budget.": (
        "The `deep` and `cpu` profiles train on 2 CPU cores, the `gpu` profile on one GPU.",
        (
            "number of layers",
            "hidden dimension",
            "intermediate dimension",
            "invertible pooling width",
            "number of epochs",
            "training images",
        ),
    ),
    "To make the heads move.": (
        "Short runs need a faster rate on the positional parameters.",
        ("positional learning rate",),
    ),
    "As in the authors' code.": (
        "Where the paper is silent, or its text and the authors' code differ, every profile "
        "follows the code.",
        (
            "weight decay on Δ, s, M",
            "Δ init, std",
            "learned dims per axis",
            "learned tables",
            "ResNet18 lr steps",
        ),
    ),
}

#: The heading of the notes whose row is in no group of :data:`NOTE_GROUPS`.
OTHER_GROUP = "Other settings."


def _group_of(name: str) -> str:
    return next(
        (g for g, (_, names) in NOTE_GROUPS.items() if name in names), OTHER_GROUP
    )


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
    tables = len({id(e) for e in encodings})
    milestones = get_profile(profile).config("resnet18").milestones
    from ..experiments.beyond import SAMPLE_TRAIN_SIZE

    images = {
        "auto": CIFAR10_TRAIN_SIZE,
        "full": CIFAR10_TRAIN_SIZE,
        "sample": SAMPLE_TRAIN_SIZE,
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
        "positional learning rate": positional_lr.pop()
        if len(positional_lr) == 1
        else None,
        "weight decay on Δ, s, M": gaussian_wd.pop() if len(gaussian_wd) == 1 else None,
        "training images": f"{images:,}",
        "Δ init, std": mc.center_init_std,
        "learned dims per axis": per_axis,
        "learned tables": tables,
        "ResNet18 lr steps": "/".join(str(m) for m in milestones),
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


def _row_reasons(row: dict) -> List[tuple]:
    """The reasons of one row of :func:`table2_rows`, as ``(profiles, reason)`` pairs in the
    profiles' order: a profile's reason counts where it deviates (or where the paper states
    nothing), and profiles with the same reason share one pair."""
    grouped: Dict[str, List[str]] = {}
    for p, c in row["profiles"].items():
        if c["reason"] and c["matches"] is not True:
            grouped.setdefault(c["reason"], []).append(p)
    return [(tuple(ps), reason) for reason, ps in grouped.items()]


def _noted(rows: Sequence[dict]) -> List[str]:
    """Names of the rows that have a note, in the order of :data:`NOTE_GROUPS` and within a
    group in the table's order (note 1 is the first)."""
    order = list(NOTE_GROUPS) + [OTHER_GROUP]
    names = [r["name"] for r in rows if _row_reasons(r)]
    return sorted(names, key=lambda n: order.index(_group_of(n)))


#: Superscript digits: a row's note number, as a footnote mark after its setting.
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def table2_markdown(rows: Sequence[dict]) -> str:
    """A compact Markdown table of :func:`table2_rows`: the paper's value (arXiv v1 Table 2, or
    what it says elsewhere) and each profile's value, ✗ where it deviates from the paper. A
    setting with a note in :func:`table2_notes` carries the note's number as a footnote mark;
    settings outside Table 2 are in italics."""
    profiles = list(rows[0]["profiles"])
    noted = _noted(rows)
    # "profile" on a line of its own: the header never widens the narrow value columns
    head = ["setting", "paper (v1)"] + [f"`{p}`<br>profile" for p in profiles]
    lines = [
        "| " + " | ".join(head) + " |",
        "| :--- | " + " | ".join("---:" for _ in head[1:]) + " |",
    ]
    for r in rows:
        name = r["name"] if r["in_table2"] else f"*{r['name']}*"
        if r["name"] in noted:
            name += str(noted.index(r["name"]) + 1).translate(_SUPERSCRIPT)
        cells = [
            _fmt(c["value"]) + ("\u00a0✗" if c["matches"] is False else "")
            for c in r["profiles"].values()
        ]
        lines.append(f"| {name} | {_fmt(r['paper'])} | " + " | ".join(cells) + " |")
    # a hyphen inside a word or a range ("CIFAR-10", "20-60") never breaks in a narrow column
    return keep_words("\n".join(lines))


#: The reason of a profile that only follows the ``paper`` profile: in a note, such profiles
#: join the ``paper`` profile's reason instead of saying so apart.
SAME_AS_PAPER = "as the `paper` profile"


def _note_reasons(row: dict) -> List[tuple]:
    """:func:`_row_reasons` for a note: profiles whose reason is :data:`SAME_AS_PAPER` are
    listed with the ``paper`` profile, under its reason."""
    pairs = _row_reasons(row)
    same = [p for ps, reason in pairs if reason == SAME_AS_PAPER for p in ps]
    if not same or not any("paper" in ps for ps, _ in pairs):
        return pairs
    return [
        (ps + tuple(same), reason) if "paper" in ps else (ps, reason)
        for ps, reason in pairs
        if reason != SAME_AS_PAPER
    ]


def table2_notes(rows: Sequence[dict]) -> str:
    """The notes of :func:`table2_markdown`, grouped by reason (:data:`NOTE_GROUPS`): per group
    a bold heading with its one sentence, then a numbered Markdown list, one item per noted row
    (numbers run on across groups): the setting, then why each profile deviates (profiles with
    the same reason together, and profiles that only follow the ``paper`` profile listed with
    it)."""
    blocks: Dict[str, List[str]] = {}
    for i, name in enumerate(_noted(rows), start=1):
        row = next(r for r in rows if r["name"] == name)
        parts = [
            ", ".join(f"`{p}`" for p in ps) + f": {reason}."
            for ps, reason in _note_reasons(row)
        ]
        blocks.setdefault(_group_of(name), []).append(
            f"{i}. **{name}.** " + " ".join(parts)
        )
    heads = {g: f"**{g}** {lead}" for g, (lead, _) in NOTE_GROUPS.items()}
    heads[OTHER_GROUP] = f"**{OTHER_GROUP}**"
    return "\n\n".join(
        heads[g] + "\n\n" + "\n".join(items) for g, items in blocks.items()
    )


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
    shown = [m.replace("_", " + ").replace("resnet18", "ResNet18") for m in names]
    ax.set_yticks(np.arange(len(names)), shown)
    ax.invert_yaxis()
    ax.set_xlabel(f"hours for {epochs} epochs of 50,000 images (log scale)")
    fig.tight_layout()
    return fig
