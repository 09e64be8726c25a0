"""This code's training step against another checkout's (``python -m attnconv.bench
--compare-with``): the book's training cases, each side in a worker process of its own that builds
the case from the same seed and answers the parent's requests (a timed step, the per-op shares of
one step), alternating rounds, and what a sparse correction for attention dropout would cost.
"""

from __future__ import annotations

import platform
import time
import warnings
from dataclasses import asdict
from typing import List, Sequence

import torch
import torch.nn.functional as F

from .bench_timing import matmul_rate
from .flops import analytic_macs
from .models import SelfAttentionConfig

__all__ = [
    "BOOK_CASES",
    "load_reference",
    "sparse_dropout_correction",
    "compare_with_reference",
]


# --------------------------------------------------------------------------- against a reference commit
#: The book's training cases (its saved runs under book/runs/deep and book/runs/cpu): (profile,
#: model, model overrides), each as its profile trains it (the ``deep`` quadratic models with local
#: attention, the others dense). The ``deep`` profile has no learned + content run.
BOOK_CASES = tuple(
    (profile, model, overrides)
    for profile, model, overrides in (
        ("deep", "quadratic", {}),
        ("deep", "generalized", {}),
        ("deep", "learned", {}),
        ("deep", "quadratic", {"num_heads": 16}),
        ("cpu", "quadratic", {}),
        ("cpu", "generalized", {}),
        ("cpu", "learned", {}),
        ("cpu", "learned_content", {}),
        ("cpu", "quadratic", {"num_heads": 16}),
    )
)


def load_reference(checkout, name: str = "attnconv_reference"):
    """Import the ``attnconv`` package of another checkout (e.g. ``git worktree add ../ref 30b81eb``)
    under the name ``name``, beside this one, so that both can be timed in one process. Works
    because the package imports itself only relatively."""
    import importlib.util
    import sys
    from pathlib import Path

    if name in sys.modules:
        return sys.modules[name]
    root = Path(checkout) / "attnconv"
    if not (root / "__init__.py").is_file():
        raise FileNotFoundError(f"{checkout} holds no attnconv package")
    spec = importlib.util.spec_from_file_location(
        name, root / "__init__.py", submodule_search_locations=[str(root)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _case_step(
    package: str, profile: str, model: str, overrides: dict, batch_size: int
):
    """A training step (forward, backward, the profile's SGD step) of ``package``'s model for a
    case, on fixed random images; returns (step, model config). Built from seed 0, so that two
    packages build the same model."""
    import importlib

    profiles = importlib.import_module(f"{package}.experiments.profiles")
    models = importlib.import_module(f"{package}.experiments.models")
    train = importlib.import_module(f"{package}.experiments.train")
    config = profiles.make_config(model, profile)
    config.model_overrides.update(overrides)
    torch.manual_seed(0)
    net = models.build_model(config.model_config())
    optimizer = train.make_optimizer(net, config)
    gen = torch.Generator().manual_seed(1)
    images = torch.randn(batch_size, 3, 32, 32, generator=gen)
    labels = torch.randint(0, 10, (batch_size,), generator=gen)

    def step() -> float:
        loss = F.cross_entropy(net(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return float(loss.detach())

    return step, config.model_config()


def _op_breakdown(step, top: int = 8) -> List[dict]:
    """Share of self CPU time per ATen op over one training step (``torch.profiler``)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    events = [e for e in prof.key_averages() if e.key.startswith("aten::")]
    total = sum(e.self_cpu_time_total for e in prof.key_averages()) or 1.0
    events.sort(key=lambda e: e.self_cpu_time_total, reverse=True)
    return [
        {"op": e.key, "share": e.self_cpu_time_total / total, "calls": e.count}
        for e in events[:top]
    ]


def _step_worker(
    conn,
    reference,
    profile: str,
    model: str,
    overrides: dict,
    batch_size: int,
    threads: int,
    retain: bool,
) -> None:
    """One side of :func:`compare_with_reference`, in a process of its own: builds the case's
    training step with the ``attnconv`` of ``reference`` (a checkout; ``None``: this one) and
    answers the parent's requests until told to stop. ``retain``: keep freed memory
    (:func:`~attnconv.experiments.allocator.retain_freed_memory`), as this code's ``train`` does."""
    import resource

    from .allocator import retain_freed_memory

    torch.set_num_threads(threads)
    retained = retain_freed_memory() if retain else False
    package = __package__.rsplit(".", 1)[0]
    if reference is not None:
        load_reference(reference)
        package = "attnconv_reference"
    step, config = _case_step(package, profile, model, overrides, batch_size)
    conn.send({"config": asdict(config), "retains_freed_memory": retained})
    while True:
        request, seed = conn.recv()
        if request == "stop":
            conn.close()
            return
        torch.manual_seed(seed)
        if request == "step":
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            start = time.perf_counter()
            loss = step()
            seconds = time.perf_counter() - start
            conn.send(
                (
                    seconds,
                    loss,
                    resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults,
                )
            )
        else:  # "breakdown"
            conn.send(_op_breakdown(step))


def sparse_dropout_correction(
    heads: int = 9,
    tokens: int = 256,
    columns: int = 3200,
    dropout: float = 0.1,
    repeats: int = 5,
    seed: int = 0,
) -> dict:
    """What the one exact route to fewer products for dense position-only attention would cost.

    A head's probabilities P factorise over rows and columns (R ⊗ C, what the local path uses),
    but attention dropout multiplies them by an unstructured mask M; the same masks would need
    P ⊙ M = P − P ⊙ (1 − M): the cheap factorised product minus a sparse one holding the dropped
    ``dropout`` share of the entries, in the forward pass and again for the gradients. This times,
    at the ``deep`` learned model's shapes (``(N_h·T) × T`` probabilities applied to ``T × B·C``
    values), the dense product against the sparse one with the dropped entries (CSR and COO, torch's
    sparse kernels), and the sampled product that the gradient of the kept entries would need
    (``torch.sparse.sampled_addmm``, CSR) against the dense gradient product: medians of
    ``repeats``, alternating, at the current thread count. A ratio near or above ``1 − dropout``
    means the sparse correction alone costs about what the whole dense product does."""
    import statistics

    gen = torch.Generator().manual_seed(seed)
    probs = torch.rand(heads * tokens, tokens, generator=gen)
    values = torch.randn(tokens, columns, generator=gen)
    grad = torch.randn(heads * tokens, columns, generator=gen)
    dropped = probs * (torch.rand(probs.shape, generator=gen) < dropout)
    csr, coo = dropped.to_sparse_csr(), dropped.to_sparse_coo()
    pattern = torch.sparse_csr_tensor(
        csr.crow_indices(), csr.col_indices(), torch.ones_like(csr.values()), csr.shape
    )
    cases = {
        "dense_product": lambda: probs @ values,
        "csr_product": lambda: csr @ values,
        "coo_product": lambda: torch.sparse.mm(coo, values),
        "dense_gradient": lambda: grad @ values.t(),
        "sampled_gradient": lambda: torch.sparse.sampled_addmm(
            pattern, grad, values.t()
        ),
    }
    times = {k: [] for k in cases}
    for fn in cases.values():
        fn()  # warm-up
    for r in range(repeats):
        for key in list(cases) if r % 2 == 0 else list(reversed(cases)):
            start = time.perf_counter()
            cases[key]()
            times[key].append(time.perf_counter() - start)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "shape": {
            "heads": heads,
            "tokens": tokens,
            "columns": columns,
            "dropout": dropout,
            "stored_entries": int(csr.values().numel()),
        },
        "seconds": med,
        "csr_over_dense": med["csr_product"] / med["dense_product"],
        "coo_over_dense": med["coo_product"] / med["dense_product"],
        "sampled_over_dense_gradient": med["sampled_gradient"] / med["dense_gradient"],
    }


def _answer(conn, side: str, case: str):
    """The next answer of a :func:`_step_worker`, or a clear error if it died."""
    try:
        return conn.recv()
    except EOFError:
        raise RuntimeError(
            f"the {side!r} process of case {case!r} died (its error is above)"
        ) from None


def _comparison_header(reference, batch_size: int, repeats: int) -> dict:
    """The result's skeleton of :func:`compare_with_reference`: the machine and the settings."""
    import os

    return {
        "machine": {
            "device": platform.processor() or platform.machine(),
            "torch": torch.__version__,
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "(unset)"),
            "load_average_at_start": os.getloadavg()[0],
        },
        "reference": str(reference),
        "batch_size": batch_size,
        "repeats": repeats,
        "sides": "one process each; after keeps freed memory (retain_freed_memory), before does not",
        "rows": [],
    }


def _start_worker(spawn, checkout, retain: bool, case, batch_size: int, threads: int):
    """Start one :func:`_step_worker` process for ``case``: ``(process, parent end of its pipe)``."""
    profile, model, overrides = case
    parent, child = spawn.Pipe()
    proc = spawn.Process(
        target=_step_worker,
        daemon=True,
        args=(
            child,
            checkout,
            profile,
            model,
            overrides,
            batch_size,
            threads,
            retain,
        ),
    )
    proc.start()
    child.close()  # so that a worker that dies is an EOFError here, not a hang
    return proc, parent


def _stop_workers(workers: dict) -> None:
    """Tell every worker to stop, wait for it, and kill one that does not."""
    for proc, conn in workers.values():
        try:
            conn.send(("stop", 0))
        except (BrokenPipeError, OSError):
            pass
        proc.join(timeout=30)
        if proc.is_alive():
            proc.kill()


def _timed_rounds(ask, repeats: int):
    """One warm-up step each, then ``repeats`` alternating rounds: (times, page faults, worst
    relative difference of the two sides' losses)."""
    for key in ("before", "after"):
        ask(key, "step", 99)  # warm-up
    times, faults, worst = (
        {"before": [], "after": []},
        {"before": [], "after": []},
        0.0,
    )
    for r in range(repeats):
        losses = {}
        for key in ("before", "after") if r % 2 == 0 else ("after", "before"):
            seconds, losses[key], page_faults = ask(key, "step", 1000 + r)
            times[key].append(seconds)
            faults[key].append(page_faults)
        worst = max(
            worst,
            abs(losses["after"] - losses["before"]) / abs(losses["before"]),
        )
    return times, faults, worst


def _comparison_row(
    case, label: str, threads: int, batch_size: int, after_info, times, faults, worst
) -> dict:
    """One case's row of :func:`compare_with_reference` from its two sides' measurements."""
    import statistics

    profile, model, _ = case
    config = SelfAttentionConfig(**after_info["config"])
    implementation = config.attention_implementation
    flops = (
        3 * 2 * analytic_macs(config, implementation=implementation).total * batch_size
    )
    before, after = (
        statistics.median(times["before"]),
        statistics.median(times["after"]),
    )
    return {
        "profile": profile,
        "model": label,
        "model_name": model,
        "num_heads": config.num_heads,
        "implementation": implementation,
        "threads": threads,
        "before_s": before,
        "after_s": after,
        "speedup": before / after,
        "before_times_s": times["before"],
        "after_times_s": times["after"],
        "train_gflops_per_step": flops / 1e9,
        "achieved_gflop_per_s": flops / after / 1e9,
        "max_relative_loss_difference": worst,
        "before_page_faults_per_step": statistics.median(faults["before"]),
        "after_page_faults_per_step": statistics.median(faults["after"]),
        "after_retains_freed_memory": after_info["retains_freed_memory"],
    }


def _compare_case(
    spawn, reference, case, threads: int, batch_size: int, repeats: int, breakdown
) -> dict:
    """Time one case on both sides, each in a process of its own; its row."""
    profile, model, overrides = case
    label = model + (
        ""
        if not overrides
        else " " + ",".join(f"{k}={v}" for k, v in overrides.items())
    )
    workers, info = {}, {}
    try:
        for key, checkout, retain in (
            ("before", str(reference), False),
            ("after", None, True),
        ):
            workers[key] = _start_worker(
                spawn, checkout, retain, case, batch_size, threads
            )
            info[key] = _answer(workers[key][1], key, label)

        def ask(key, request, seed):
            workers[key][1].send((request, seed))
            return _answer(workers[key][1], key, label)

        times, faults, worst = _timed_rounds(ask, repeats)
        ops = ask("after", "breakdown", 7) if breakdown else None
    finally:
        _stop_workers(workers)
    row = _comparison_row(
        case, label, threads, batch_size, info["after"], times, faults, worst
    )
    if ops is not None:
        row["breakdown"] = ops
    return row


def _add_rate_fractions(rows: List[dict], rate: float) -> None:
    """Each row's share of the matmul ``rate`` and the share that 2× the reference would need."""
    for row in rows:
        row["matmul_gflop_per_s"] = rate
        row["fraction_of_matmul_rate"] = row["achieved_gflop_per_s"] / rate
        row["fraction_needed_for_2x"] = (
            row["train_gflops_per_step"] / (row["before_s"] / 2) / rate
        )


def compare_with_reference(
    reference,
    cases=BOOK_CASES,
    threads: Sequence[int] = (1, 2),
    batch_size: int = 100,
    repeats: int = 7,
    breakdown: bool = True,
    progress=print,
) -> dict:
    """Training-step time of this code against the ``attnconv`` of the checkout ``reference``,
    side by side in one run. Each side runs in a process of its own, so that what this code sets
    for the whole process — it keeps the memory it frees
    (:func:`~attnconv.experiments.allocator.retain_freed_memory`), the reference did not — is part
    of "after". For every thread count and case both processes build the model from the same seed
    and take one warm-up step; then ``repeats`` rounds alternate which one goes first, one step at
    a time (the other waits), each round from the same RNG seed, so both draw the same dropout
    masks and their losses must agree. Reports medians, their ratio, the page faults per step of
    each side (the kernel's minor-fault count), the model's GFLOP per step
    (3 × the forward's, as :func:`~attnconv.experiments.bench_timing.measure_case`), the achieved GFLOP/s, the fraction of the
    float32 matmul rate measured at the same thread count in the same run, the fraction that 2×
    the reference's speed would need with the same products (above 1: out of reach), the largest
    relative difference of the two losses, and (``breakdown``) the per-op shares of one step of
    this code."""
    import multiprocessing

    load_reference(reference)  # fails early on a checkout without attnconv
    cpu = torch.device("cpu")
    before_threads = torch.get_num_threads()
    spawn = multiprocessing.get_context("spawn")
    result = _comparison_header(reference, batch_size, repeats)
    try:
        for n_threads in threads:
            torch.set_num_threads(n_threads)
            rates = [matmul_rate(cpu, seconds=2.0)]
            rows = []
            for case in cases:
                row = _compare_case(
                    spawn, reference, case, n_threads, batch_size, repeats, breakdown
                )
                rows.append(row)
                rates.append(matmul_rate(cpu, seconds=1.0))
                before, after = row["before_s"], row["after_s"]
                progress(
                    f"  {n_threads} thr {row['profile']:5s} {row['model']:22s} before {before:.3f} s  after {after:.3f} s  "
                    f"x{before / after:.2f}  {row['achieved_gflop_per_s']:.1f} GFLOP/s  "
                    f"losses agree to {row['max_relative_loss_difference']:.1e}"
                )
            rate = max(rates)
            _add_rate_fractions(rows, rate)
            result["rows"] += rows
            with warnings.catch_warnings():
                warnings.simplefilter(
                    "ignore", UserWarning
                )  # sparse CSR is a beta feature of torch
                result.setdefault("sparse_dropout_correction", {})[str(n_threads)] = (
                    sparse_dropout_correction()
                )
            result.setdefault("matmul_gflop_per_s", {})[str(n_threads)] = rate
    finally:
        torch.set_num_threads(before_threads)
    return result
