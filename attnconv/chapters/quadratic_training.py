"""Chapter 7 (training with the quadratic encoding): the paper's accuracy table, arXiv v1 Fig. 5 =
ICLR Table 1, next to the book's runs and our paper-size models' parameters and FLOPs.
"""

from __future__ import annotations

from typing import List, Mapping, Sequence

from ..experiments.checkpoints import Run
from ..experiments.flops import flops_table
from ..experiments.paper_numbers import PAPER_TABLE1
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
    """Three narrow Markdown tables of :func:`table1_rows` (four short columns each, so that no cell
    breaks a word in the book's column), separated by blank lines: our ``profile`` runs (accuracy,
    parameters, epochs), our models at the paper's size (parameters, GFLOPs counted the paper's way
    and with the attention), and the paper's numbers (the ICLR-only row marked so)."""
    ours = [
        f"| model | {profile} run: accuracy | parameters | epochs |",
        "| --- | ---: | ---: | ---: |",
    ]
    size = [
        "| model | paper size: parameters | GFLOPs | with attention |",
        "| --- | ---: | ---: | ---: |",
    ]
    paper = [
        "| model | the paper: accuracy | parameters | FLOPs |",
        "| --- | ---: | ---: | ---: |",
    ]
    for r in rows:
        ours.append(
            f"| {r['label']} | {100 * r['test_acc']:.1f}% | {r['parameters']:,} "
            f"| {r['epochs']} |"
        )
        size.append(
            f"| {r['label']} | {r['paper_size_parameters']:,} "
            f"| {r['gflops_paper_way']:.1f} | {r['gflops_with_attention']:.1f} |"
        )
        only = " (ICLR only)" if "only" in r["paper_source"] else ""
        paper.append(
            f"| {r['label']}{only} | {r['paper_accuracy']} | {r['paper_parameters']} "
            f"| {r['paper_flops']} |"
        )
    return "\n\n".join("\n".join(t) for t in (ours, size, paper))
