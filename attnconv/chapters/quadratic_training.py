"""Chapter 7 (training with the quadratic encoding): the paper's accuracy table, arXiv v1 Fig. 5 =
ICLR Table 1, next to the book's runs and our paper-size models' parameters and FLOPs.
"""

from __future__ import annotations

from typing import List, Mapping, Sequence

from ..experiments.flops import flops_table
from ..experiments.paper_numbers import PAPER_TABLE1
from ..experiments.train import Run
from .shared.parameter_counts import paper_size_parameters

__all__ = ["table1_rows", "format_table1"]


def table1_rows(runs: Mapping[str, Run]) -> List[dict]:
    """v1 Fig. 5 (ICLR Table 1) side by side with our models, one row per model of ``runs`` (keys: model names of
    :data:`PAPER_TABLE1`):

    * our run: ``epochs``, final ``test_acc`` and ``parameters`` of the model actually trained;
    * our paper-size model: ``paper_size_parameters`` (exact), GFLOPs per image counted the
      paper's way (2 × Linear/conv MACs) and with the attention included (:func:`attnconv.experiments.flops.flops_table`);
    * the paper's reported accuracy, parameters and FLOPs."""
    unknown = set(runs) - set(PAPER_TABLE1)
    if unknown:
        raise ValueError(
            f"no accuracy-table entry for {sorted(unknown)}; choose from {sorted(PAPER_TABLE1)}"
        )
    flops = {r["model"]: r for r in flops_table()}
    rows = []
    for name, run in runs.items():
        paper = PAPER_TABLE1[name]
        rows.append(
            {
                "model": name,
                "label": paper["label"],
                "epochs": len(run.epochs),
                "test_acc": run.epochs[-1]["test_acc"] if run.epochs else float("nan"),
                "parameters": int(run.history["num_parameters"]),
                "paper_size_parameters": paper_size_parameters(name),
                "gflops_paper_way": flops[name]["ours_paper_way_gflops"],
                "gflops_with_attention": flops[name]["ours_with_attention_gflops"],
                "paper_accuracy": paper["accuracy"],
                "paper_parameters": paper["parameters"],
                "paper_flops": paper["flops"],
                "paper_source": paper["source"],
            }
        )
    return rows


def format_table1(rows: Sequence[dict], profile: str) -> str:
    """Two Markdown tables of :func:`table1_rows`, narrow enough for the book's column: our
    ``profile`` runs with our paper-size counts, then the paper's numbers (with the source of each
    row: v1 Fig. 5 or ICLR Table 1 only)."""
    ours = [
        f"| model | {profile} run: acc | params | epochs | paper size: params | GFLOPs | w/ attn |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    paper = [
        "| model | paper: acc | params | FLOPs | source |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        ours.append(
            f"| {r['label']} | {100 * r['test_acc']:.1f}% | {r['parameters']:,} | {r['epochs']} "
            f"| {r['paper_size_parameters']:,} | {r['gflops_paper_way']:.1f} | {r['gflops_with_attention']:.1f} |"
        )
        paper.append(
            f"| {r['label']} | {r['paper_accuracy']} | {r['paper_parameters']} | {r['paper_flops']} "
            f"| {r['paper_source']} |"
        )
    return "\n".join(ours) + "\n\n" + "\n".join(paper)
