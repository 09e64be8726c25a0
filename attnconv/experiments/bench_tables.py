"""The attention benchmark's results as tables: the models and the token-grid sweep of
:func:`~attnconv.experiments.bench.run_benchmark` (cells for the book, plain text for the
terminal), the comparison with a reference checkout of
:func:`~attnconv.experiments.bench_compare.compare_with_reference`, and the hours the book's saved
runs take at its step times.
"""

from __future__ import annotations

import json
from typing import Dict, List, Sequence

from .models import paper_model_config

__all__ = [
    "MODEL_COLUMNS",
    "GRID_COLUMNS",
    "model_table",
    "grid_table",
    "text_table",
    "format_table",
    "COMPARISON_COLUMNS",
    "case_label",
    "comparison_table",
    "book_run_hours",
]


MODEL_COLUMNS = (
    "model",
    "impl",
    "train img/s",
    "infer img/s",
    "peak MB",
    "GFLOP/s",
    "% matmul",
    "bwd/fwd",
    "train ×",
    "infer ×",
    "mem ×",
)
GRID_COLUMNS = ("tokens", "dense s/step", "local s/step", "local ×")


def model_table(
    result: dict, columns: Sequence[str] = MODEL_COLUMNS
) -> List[List[str]]:
    """The models part of a result as rows of formatted cells, for ``columns`` (a subset of
    :data:`MODEL_COLUMNS`, in any order)."""
    nan = float("nan")
    unknown = set(columns) - set(MODEL_COLUMNS)
    if unknown:
        raise ValueError(
            f"unknown columns {sorted(unknown)}; choose from {MODEL_COLUMNS}"
        )
    out = []
    for name, rows in result["models"].items():
        for r in rows:
            cells = dict(
                zip(
                    MODEL_COLUMNS,
                    [
                        name,
                        r["implementation"],
                        f"{r['train_images_per_s']:.1f}",
                        f"{r['inference_images_per_s']:.1f}",
                        f"{r['peak_memory_mb']:.0f}",
                        f"{r['achieved_gflop_per_s']:.1f}",
                        f"{100 * r['fraction_of_matmul_rate']:.0f} %",
                        f"{r['backward_over_forward']:.2f}",
                        f"{r.get('train_speedup_vs_naive', nan):.2f}",
                        f"{r.get('inference_speedup_vs_naive', nan):.2f}",
                        f"{r.get('memory_ratio_vs_naive', nan):.2f}",
                    ],
                )
            )
            out.append([cells[c] for c in columns])
    return out


def grid_table(result: dict) -> List[List[str]]:
    """The token-grid sweep of a result as rows of formatted cells (columns :data:`GRID_COLUMNS`)."""
    by_side: Dict[int, Dict[str, float]] = {}
    for r in result["grid"]:
        by_side.setdefault(r["tokens"], {})[r["implementation"]] = r["train_step_s"]
    nan = float("nan")
    return [
        [
            f"{side}×{side}",
            f"{t.get('dense', nan):.3f}",
            f"{t.get('local', nan):.3f}",
            f"{t.get('dense', nan) / t.get('local', nan):.2f}",
        ]
        for side, t in sorted(by_side.items())
    ]


def text_table(columns, rows, left: int = 1) -> List[str]:
    """Rows of cells as lines of aligned text: the first ``left`` columns left-aligned, the others
    right-aligned."""
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]
    line = lambda cells: "  ".join(
        c.ljust(w) if i < left else c.rjust(w)
        for i, (c, w) in enumerate(zip(cells, widths))
    )
    return [line(columns)] + [line(r) for r in rows]


def format_table(result: dict) -> str:
    """A plain-text table of a benchmark result for the terminal (the models part, then the grid
    sweep); the book renders :func:`model_table` and :func:`grid_table` as HTML tables."""
    m = result["machine"]
    lines = [
        f"device: {m['device']} ({m['device_type']}, {m['threads']} threads), matmul "
        f"{m['matmul_gflop_per_s']:.1f} GFLOP/s {m['matmul_dtype']}"
    ]
    lines += text_table(MODEL_COLUMNS, model_table(result), left=2)
    if result["grid"]:
        lines += [""] + text_table(GRID_COLUMNS, grid_table(result))
    return "\n".join(lines)


COMPARISON_COLUMNS = (
    "profile",
    "model",
    "threads",
    "before s/step",
    "after s/step",
    "after ×",
    "GFLOP/step",
    "GFLOP/s",
    "% matmul",
    "2× needs",
    "losses agree",
)


def case_label(row: dict) -> str:
    """A row of :func:`~attnconv.experiments.bench_compare.compare_with_reference` as a reader names the case: "deep quadratic",
    "cpu learned_content", "deep quadratic, 16 heads" (heads named when not the paper's 9)."""
    heads = row.get("num_heads", 9)
    return f"{row['profile']} {row['model_name']}" + (
        "" if heads == 9 else f", {heads} heads"
    )


def comparison_table(
    result: dict, columns: Sequence[str] = COMPARISON_COLUMNS
) -> List[List[str]]:
    """Rows of formatted cells of :func:`~attnconv.experiments.bench_compare.compare_with_reference`'s result, for ``columns``."""
    out = []
    for r in result["rows"]:
        cells = dict(
            zip(
                COMPARISON_COLUMNS,
                [
                    r["profile"],
                    r["model"],
                    str(r["threads"]),
                    f"{r['before_s']:.3f}",
                    f"{r['after_s']:.3f}",
                    f"{r['speedup']:.2f}",
                    f"{r['train_gflops_per_step']:.1f}",
                    f"{r['achieved_gflop_per_s']:.1f}",
                    f"{100 * r['fraction_of_matmul_rate']:.0f}%",
                    f"{100 * r['fraction_needed_for_2x']:.0f}%"
                    if "fraction_needed_for_2x" in r
                    else "",
                    f"{r['max_relative_loss_difference']:.0e}",
                ],
            )
        )
        out.append([cells[c] for c in columns])
    return out


def book_run_hours(
    result: dict, runs_root, threads: int = 1, exclude: Sequence[str] = ()
) -> List[dict]:
    """How long the book's saved training runs take at the step times of a
    :func:`~attnconv.experiments.bench_compare.compare_with_reference` result: per complete run
    folder under ``runs_root`` (at any depth, the seed series included; a run still training and
    the folders under the prefixes ``exclude`` are left out) whose
    history matches a measured case (profile, model, heads), epochs × steps per epoch × s/step
    before and after (training steps only, at ``threads``), beside the hours its history recorded
    (training and evaluation, on whatever the machine was doing then) and where it was made
    (``made_on``: ``cpu``, or ``gpu`` for a run its history says trained on CUDA)."""
    from pathlib import Path

    from .runs import device_kind

    measured = {
        (r["profile"], r["model_name"], r["num_heads"]): r
        for r in result["rows"]
        if r["threads"] == threads
    }
    out = []
    root = Path(runs_root)
    for path in sorted(root.rglob("history.json")):
        name = path.parent.relative_to(root).as_posix()
        if any(name == e or name.startswith(e.rstrip("/") + "/") for e in exclude):
            continue
        history = json.loads(path.read_text())
        if history.get("status", "complete") != "complete":
            continue
        config = history["config"]
        model = config["model"]
        if (
            model == "resnet18" or "heads_per_layer" in history
        ):  # no heads / pruned heads: not a measured case
            continue
        heads = (
            config.get("model_overrides", {}).get("num_heads")
            or paper_model_config(model).num_heads
        )
        row = measured.get((config.get("profile"), model, heads))
        if row is None:
            continue
        epochs, steps = config["epochs"], history["steps_per_epoch"]
        recorded = sum(e.get("seconds", 0.0) for e in history["epochs"])
        out.append(
            {
                "run": name,
                "epochs": epochs,
                "steps_per_epoch": steps,
                "before_hours": epochs * steps * row["before_s"] / 3600,
                "after_hours": epochs * steps * row["after_s"] / 3600,
                "recorded_hours": recorded / 3600 if recorded else float("nan"),
                "made_on": "cpu" if device_kind(history) == "cpu" else "gpu",
            }
        )
    return out
