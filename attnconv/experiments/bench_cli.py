"""Benchmark of the attention implementations: ``python -m attnconv.bench``.

The command line of the benchmark (:mod:`attnconv.experiments.bench`), of the comparison with a
reference checkout (:mod:`attnconv.experiments.bench_compare`) and of the merge of the heads;
:mod:`attnconv.bench` is only the entry point.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from typing import Optional, Sequence

import torch

from .bench import PRESETS, merge_heads_comparison, run_benchmark
from .bench_compare import compare_with_reference, load_reference
from .bench_tables import COMPARISON_COLUMNS, comparison_table, format_table, text_table
from .bench_timing import IMPLEMENTATIONS

__all__ = ["main"]


def _bench_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m attnconv.bench``."""
    parser = argparse.ArgumentParser(
        prog="python -m attnconv.bench", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--preset", choices=sorted(PRESETS), default="paper")
    parser.add_argument(
        "--models", nargs="+", help="subset of quadratic, generalized, learned"
    )
    parser.add_argument("--implementations", nargs="+", choices=IMPLEMENTATIONS)
    parser.add_argument(
        "--grid-sizes",
        nargs="*",
        type=int,
        help="token grid sides for the sweep (empty: none)",
    )
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--repeats", type=int)
    parser.add_argument("--device", help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--out", help="write the results as JSON here")
    parser.add_argument(
        "--compare-with",
        metavar="CHECKOUT",
        help="instead: time the book's deep and cpu training cases against the attnconv of this "
        "checkout (e.g. a git worktree of an older commit), side by side",
    )
    parser.add_argument(
        "--threads",
        nargs="+",
        type=int,
        default=[1, 2],
        help="thread counts for --compare-with",
    )
    parser.add_argument(
        "--merge-heads",
        action="store_true",
        help="instead: one layer's merge of the heads at paper size, the old per-head sum "
        "against the one-GEMM merge (forward + backward), side by side",
    )
    return parser


def _save_json(result: dict, path: Optional[str], say: bool = True) -> None:
    """Write ``result`` as JSON to ``path`` (if given), saying so when ``say``."""
    if path:
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
        if say:
            print(f"saved {path}")


def _main_merge_heads(args) -> int:
    """``--merge-heads``: the per-head sum against the one-GEMM merge."""
    result = merge_heads_comparison(repeats=args.repeats or 5)
    for name in ("per-head sum (before)", "one GEMM"):
        r = result[name]
        print(
            f"{name:<22} {r['ms']:8.1f} ms forward+backward, "
            f"~{r['estimated_mb']:,.0f} MB moved"
        )
    print(
        f"largest relative difference (outputs and gradients): "
        f"{result['max_relative_difference']:.1e}; {result['shape']}, "
        f"{result['dtype']}, {result['threads']} threads"
    )
    _save_json(result, args.out, say=False)
    return 0


def _main_compare(args, parser) -> int:
    """``--compare-with``: this code against another checkout's, as a table."""
    try:
        load_reference(args.compare_with)
    except FileNotFoundError as err:
        parser.exit(2, f"error: {err}\n")
    result = compare_with_reference(
        args.compare_with, threads=args.threads, repeats=args.repeats or 7
    )
    print("\n".join(text_table(COMPARISON_COLUMNS, comparison_table(result), left=2)))
    _save_json(result, args.out)
    return 0


def _main_benchmark(args) -> int:
    """The benchmark of a preset, with the settings the arguments change."""
    settings = PRESETS[args.preset]
    changes = {
        k: v
        for k, v in dict(
            models=args.models,
            implementations=args.implementations,
            grid_sizes=args.grid_sizes,
            batch_size=args.batch_size,
            repeats=args.repeats,
        ).items()
        if v is not None
    }
    settings = replace(settings, **changes)
    result = run_benchmark(settings, torch.device(args.device) if args.device else None)
    print(format_table(result))
    _save_json(result, args.out)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = _bench_parser()
    args = parser.parse_args(argv)
    if args.merge_heads:
        return _main_merge_heads(args)
    if args.compare_with:
        return _main_compare(args, parser)
    return _main_benchmark(args)
