"""Chapter 7 (training with the quadratic encoding): the paper's accuracy table, arXiv v1 Fig. 5 =
ICLR Table 1, next to the book's runs and our paper-size models' parameters and FLOPs.
"""

from __future__ import annotations

from typing import List, Mapping, Sequence, Union

from ..experiments.checkpoints import Run
from ..experiments.flops import flops_table
from ..experiments.paper_numbers import PAPER_TABLE1
from .shared.parameter_counts import paper_size_parameters
from .shared.tables import spaced_unit

__all__ = ["table1_rows", "format_table1"]


def table1_rows(runs: Mapping[str, Union[Run, Sequence[Run], None]]) -> List[dict]:
    """v1 Fig. 5 (ICLR Table 1) side by side with our models, one row per model of ``runs`` (keys: model names of
    :data:`PAPER_TABLE1`; each value one run, the runs of several seeds, or ``None`` for a model
    not trained):

    * our runs: ``epochs``, the final ``test_acc`` (the mean over seeds, with ``test_acc_range``
      and ``seeds``) and ``parameters`` of the model actually trained;
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
    for name, got in runs.items():
        paper = PAPER_TABLE1[name]
        seeds = [] if got is None else [got] if isinstance(got, Run) else list(got)
        accs = [r.epochs[-1]["test_acc"] if r.epochs else float("nan") for r in seeds]
        rows.append(
            {
                "model": name,
                "label": paper["label"],
                "seeds": len(seeds),
                "epochs": len(seeds[0].epochs) if seeds else None,
                "test_acc": sum(accs) / len(accs) if accs else None,
                "test_acc_range": (min(accs), max(accs)) if accs else None,
                "parameters": int(seeds[0].history["num_parameters"])
                if seeds
                else None,
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


def _our_cells(r: dict) -> str:
    """A row's own-run cells: accuracy (a mean over seeds with its range), parameters, epochs;
    dashes for a model not trained."""
    if not r["seeds"]:
        return "— | — | —"
    acc = f"{100 * r['test_acc']:.1f} %"
    if r["seeds"] > 1:
        lo, hi = r["test_acc_range"]
        acc += f" ({100 * lo:.1f}–{100 * hi:.1f}, {r['seeds']} seeds)"
    return f"{acc} | {r['parameters']:,} | {r['epochs']}"


def format_table1(rows: Sequence[dict], profile: str) -> str:
    """Three narrow Markdown tables of :func:`table1_rows` (four short columns each, so that no cell
    breaks a word in the book's column), separated by blank lines: our runs, named ``profile``
    (accuracy, its mean and range over seeds where there are several; parameters; epochs), our models at the paper's size (parameters in millions to 2 decimals, FLOPs in
    billions counted the paper's way and with the attention, set as the paper's table sets
    them), and the paper's numbers (the ICLR-only row marked so), each with a
    space before its unit."""
    ours = [
        f"| model | our runs ({profile}): accuracy | parameters | epochs |",
        "| --- | ---: | ---: | ---: |",
    ]
    size = [
        "| model | paper size: parameters | FLOPs | with attention |",
        "| --- | ---: | ---: | ---: |",
    ]
    paper = [
        "| model | the paper: accuracy | parameters | FLOPs |",
        "| --- | ---: | ---: | ---: |",
    ]
    for r in rows:
        ours.append(f"| {r['label']} | {_our_cells(r)} |")
        size.append(
            f"| {r['label']} | {r['paper_size_parameters'] / 1e6:.2f} M "
            f"| {r['gflops_paper_way']:.1f} B | {r['gflops_with_attention']:.1f} B |"
        )
        only = " (ICLR only)" if "only" in r["paper_source"] else ""
        paper.append(
            f"| {r['label']}{only} | {spaced_unit(r['paper_accuracy'])} "
            f"| {spaced_unit(r['paper_parameters'])} | {spaced_unit(r['paper_flops'])} |"
        )
    return "\n\n".join("\n".join(t) for t in (ours, size, paper))
