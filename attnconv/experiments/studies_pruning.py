"""The pruning study of App. A.1: prune a trained generalized model's degenerate heads, measure
the accuracy without and with retraining, and keep every pruned model's per-image predictions.

* :func:`head_table`, :func:`degeneracy_order` — the spectrum of every head and the order in which
  the pruning curve removes them; :func:`selection_of`, :func:`count_selected` — head selections;
* :func:`retrain` — the pruned model trained on by the one training loop
  (:func:`attnconv.experiments.train.train` with :class:`~attnconv.experiments.train.StartFrom`),
  with the learning rate divided by 10, in a run folder of its own: its checkpoints make an
  interrupted retraining resume where it stopped;
* :func:`pruning_study` — accuracies (and per-image predictions) of the pruned models without
  retraining (most degenerate heads first; random orders) and after retraining;
* :func:`load_pruning_study`, :func:`load_pruned_run`, :func:`study_predictions` — the readers the
  chapters use (they never compute or write).

The study is registered in :mod:`attnconv.experiments.studies` (``<run>/pruning``) and made by
``python -m attnconv.regenerate``.
"""

from __future__ import annotations

import copy
import hashlib
import math
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import torch

from ..core.encodings import GeneralizedQuadraticEncoding
from .checkpoints import ResumeMismatchError, Run, load_run
from .device import resolve_precision
from .flops import analytic_macs
from .models import count_parameters
from .paper_numbers import PAPER_CONDITION_THRESHOLD, PAPER_MAX_EIGENVALUE_THRESHOLD
from .pruning import (
    check_thresholds,
    degenerate_heads,
    inverse_covariance_spectrum,
    is_degenerate,
    prune_heads,
)
from .store import (
    CHECKPOINT,
    CONFIG,
    HISTORY,
    PARTIAL_CHECKPOINT,
    PRUNING_FILE,
    MissingResultError,
    StaleResultError,
    read_keyed,
    regenerate_command,
    relative_to_book,
    run_result_name,
)
from .train_config import TrainConfig
from .train_step import decode_predictions, encode_predictions, evaluate

__all__ = [
    "Head",
    "head_table",
    "degeneracy_order",
    "selection_of",
    "count_selected",
    "pruned_copy",
    "PredictionEvaluator",
    "retrain_epochs",
    "retrain_config",
    "weights_fingerprint",
    "retrain",
    "pruning_study",
    "pruning_study_name",
    "load_pruning_study",
    "pruned_folder",
    "retrain_folder",
    "load_pruned_run",
    "study_predictions",
]

Head = Tuple[int, int]


def retrain_epochs(config: TrainConfig) -> int:
    """Epochs of retraining after pruning: a third of the training run (our choice;
    the paper says only "a few epochs", and the authors' run scripts use 100 after 300)."""
    return max(1, math.ceil(config.epochs / 3))


# --------------------------------------------------------------------------- heads
def head_table(
    model,
    max_eigenvalue_threshold: float = PAPER_MAX_EIGENVALUE_THRESHOLD,
    condition_threshold: float = PAPER_CONDITION_THRESHOLD,
) -> List[dict]:
    """One row per head of a generalized model: ``layer``, ``head``, eigenvalues ``lambda_min``,
    ``lambda_max`` of Σ⁻¹ = M Mᵀ, ``condition`` λ_max/λ_min (closed form,
    :func:`~attnconv.experiments.pruning.inverse_covariance_spectrum`) and ``degenerate``: λ_max
    below ``max_eigenvalue_threshold`` or condition above ``condition_threshold`` (the rule of
    :func:`attnconv.experiments.pruning.degenerate_heads`)."""
    check_thresholds(max_eigenvalue_threshold, condition_threshold)
    rows = []
    for li, layer in enumerate(model.layers):
        if layer.attention is None:
            continue
        enc = layer.attention.encoding
        if not isinstance(enc, GeneralizedQuadraticEncoding):
            raise ValueError(
                f"layer {li} has a {type(enc).__name__}, not a GeneralizedQuadraticEncoding"
            )
        eig, cond = inverse_covariance_spectrum(enc.inv_sqrt_sigma)
        for h, ((lo, hi), c) in enumerate(zip(eig.tolist(), cond.tolist())):
            bad = is_degenerate(hi, c, max_eigenvalue_threshold, condition_threshold)
            rows.append(
                {
                    "layer": li,
                    "head": h,
                    "lambda_min": lo,
                    "lambda_max": hi,
                    "condition": c,
                    "degenerate": bool(bad),
                }
            )
    return rows


def degeneracy_order(
    model, max_eigenvalue_threshold: float = PAPER_MAX_EIGENVALUE_THRESHOLD
) -> List[Head]:
    """Every head ``(layer, head)``, most degenerate first: the non-localised heads (λ_max of Σ⁻¹
    below the threshold) by increasing λ_max, then all others by decreasing condition number.
    Whatever the condition threshold, the heads that
    :func:`~attnconv.experiments.pruning.degenerate_heads` selects are a prefix of this order."""
    rows = head_table(model, max_eigenvalue_threshold, math.inf)
    wide = sorted(
        (r for r in rows if r["lambda_max"] < max_eigenvalue_threshold),
        key=lambda r: (r["lambda_max"], r["layer"], r["head"]),
    )
    rest = sorted(
        (r for r in rows if not r["lambda_max"] < max_eigenvalue_threshold),
        key=lambda r: (-r["condition"], r["layer"], r["head"]),
    )
    return [(r["layer"], r["head"]) for r in wide + rest]


def selection_of(heads: Sequence[Head]) -> Dict[int, List[int]]:
    """``[(layer, head), ...]`` → ``{layer: [heads, sorted]}`` for
    :func:`attnconv.experiments.pruning.prune_heads`."""
    out: Dict[int, List[int]] = {}
    for layer, head in heads:
        out.setdefault(int(layer), []).append(int(head))
    return {k: sorted(v) for k, v in sorted(out.items())}


def count_selected(selection: Dict[int, Sequence[int]]) -> int:
    """Number of heads in a ``{layer: [heads]}`` selection."""
    return sum(len(v) for v in selection.values())


def pruned_copy(model, heads: Sequence[Head]):
    """A copy of ``model`` without ``heads`` (``model`` is not changed)."""
    return prune_heads(copy.deepcopy(model), selection_of(heads))


# --------------------------------------------------------------------------- retraining
def retrain_config(
    config: TrainConfig, epochs: int, lr_divisor: float = 10.0
) -> TrainConfig:
    """The run's ``config`` for a retraining: ``epochs`` epochs, the learning rate divided by
    ``lr_divisor`` (paper: 10), a cosine decay without warm-up."""
    if epochs < 1 or lr_divisor <= 0:
        raise ValueError("epochs must be >= 1 and lr_divisor > 0")
    return replace(
        config, epochs=int(epochs), lr=config.lr / lr_divisor, warmup_fraction=0.0
    )


def weights_fingerprint(model) -> str:
    """A SHA-256 of ``model``'s parameters and buffers (names, shapes, values): what a retraining
    started from, so that a resumed retraining continues from the same pruned weights."""
    digest = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        t = t.detach().to("cpu").contiguous()
        digest.update(f"{name}{tuple(t.shape)}{t.dtype}".encode())
        digest.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def _clear_run_folder(run_dir: Path) -> None:
    for name in (CHECKPOINT, PARTIAL_CHECKPOINT, HISTORY, CONFIG):
        if (run_dir / name).exists():
            (run_dir / name).unlink()


def retrain(
    model,
    config: TrainConfig,
    data,
    epochs: int,
    run_dir=None,
    lr_divisor: float = 10.0,
    verbose: bool = False,
    progress: bool = False,
    stop_after: Optional[int] = None,
) -> dict:
    """Train ``model`` on (e.g. after pruning) with :func:`attnconv.experiments.train.train` — the
    same optimiser, batches, augmentation, learning-rate multipliers, precision and checkpoints as
    every run — for :func:`retrain_config` (``epochs``, learning rate ÷ ``lr_divisor``, no
    warm-up), into ``run_dir`` (default: a temporary folder). ``model`` itself is not changed.

    A retraining interrupted in ``run_dir`` (its checkpoint there) resumes where it stopped when
    called again with the same weights (:func:`weights_fingerprint`); a finished one is read back;
    one started from other weights, or a folder without checkpoint, is started again.
    ``stop_after``: return after this epoch as if interrupted.

    Returns the history (:class:`~attnconv.experiments.store.History` content): its ``config`` is
    the retraining's, ``initial`` the test loss, accuracy and predictions before retraining,
    ``heads_per_layer`` the pruned model's heads."""
    from .train import StartFrom, train

    cfg = retrain_config(config, epochs, lr_divisor)
    start = StartFrom(
        lambda: copy.deepcopy(model),
        {
            "weights_sha256": weights_fingerprint(model),
            "heads_per_layer": list(getattr(model, "heads_per_layer", [])),
        },
    )
    if run_dir is None:
        with tempfile.TemporaryDirectory() as tmp:
            return train(
                cfg, Path(tmp) / "retrain", data=data, start=start, verbose=verbose,
                progress=progress, stop_after=stop_after,
            )  # fmt: skip
    run_dir = Path(run_dir)
    resume = (run_dir / CHECKPOINT).is_file() or (
        run_dir / PARTIAL_CHECKPOINT
    ).is_file()
    if not resume:
        _clear_run_folder(run_dir)  # a saved history without weights: made again
    kwargs = dict(
        data=data,
        start=start,
        verbose=verbose,
        progress=progress,
        stop_after=stop_after,
    )
    try:
        return train(cfg, run_dir, resume=resume, **kwargs)
    except ResumeMismatchError:
        if verbose:
            print(
                f"{run_dir}: a retraining of other weights or settings; starting again"
            )
        _clear_run_folder(run_dir)
        return train(cfg, run_dir, **kwargs)


# --------------------------------------------------------------------------- the study
class PredictionEvaluator:
    """Test accuracy and per-image predictions of models on the run's test images, in the one
    precision the run's config gives on ``device``."""

    def __init__(self, config: TrainConfig, data, device):
        self.x, self.y = data.x_test.to(device), data.y_test.to(device)
        self.batch, self.device = config.eval_batch_size, device
        self.precision = resolve_precision(device, config.bf16, config.precision).name

    def __call__(self, model) -> Tuple[float, str]:
        classes: List[int] = []
        acc = evaluate(
            model, self.x, self.y, self.batch, self.device, precision=self.precision,
            predictions=classes,
        )[1]  # fmt: skip
        return acc, encode_predictions(classes)


def _curve(model, order: Sequence[Head], evaluate_model, random_orders: int, seed: int):
    """Accuracy (and predictions) after pruning the first k heads of ``order``, k = 0 … all, and
    of ``random_orders`` random orders."""
    total = len(order)
    first = [evaluate_model(pruned_copy(model, order[:k])) for k in range(total + 1)]
    rand = []
    for i in range(random_orders):
        g = torch.Generator().manual_seed(seed + i)
        rorder = [order[j] for j in torch.randperm(total, generator=g).tolist()]
        rand.append(
            [evaluate_model(pruned_copy(model, rorder[:k])) for k in range(total + 1)]
        )
    return {
        "k": list(range(total + 1)),
        "degenerate_first": [a for a, _ in first],
        "random": [[a for a, _ in r] for r in rand],
        "degenerate_first_predictions": [p for _, p in first],
        "random_predictions": [[p for _, p in r] for r in rand],
    }


def retrain_folder(work_dir, k: int, k_selected: int) -> Path:
    """Where the retraining of the first ``k`` heads' pruning runs: ``work_dir`` itself for the
    degenerate heads (``k_selected``; the chapter reads its history), else ``retrain-k<k>`` in it
    (ignored by git)."""
    work_dir = Path(work_dir)
    return work_dir if k == k_selected and k else work_dir / f"retrain-k{k}"


def _retrained(model, config, data, order, counts, k_sel, epochs, work_dir, verbose):
    retrained, pruned_history = [], None
    for k in counts:
        folder = None if work_dir is None else retrain_folder(work_dir, k, k_sel)
        hist = retrain(
            pruned_copy(model, order[:k]), config, data, epochs, folder,
            verbose=verbose, progress=verbose,
        )  # fmt: skip
        retrained.append(
            {
                "k": k,
                "heads": [list(h) for h in order[:k]],
                "test_acc_before": hist["initial"]["test_acc"],
                "test_acc": [e["test_acc"] for e in hist["epochs"]],
                "train_loss": [e["train_loss"] for e in hist["epochs"]],
                "test_predictions_before": hist["initial"]["test_predictions"],
                "test_predictions": hist["epochs"][-1]["test_predictions"],
            }
        )
        if k == k_sel and k:
            pruned_history = hist
    return retrained, pruned_history


def pruning_study(
    model,
    config: TrainConfig,
    data,
    max_eigenvalue_threshold: float = PAPER_MAX_EIGENVALUE_THRESHOLD,
    condition_threshold: float = PAPER_CONDITION_THRESHOLD,
    retrain_counts: Optional[Sequence[int]] = None,
    epochs: Optional[int] = None,
    random_orders: int = 3,
    seed: int = 0,
    verbose: bool = False,
    work_dir=None,
    control: bool = False,
) -> dict:
    """Everything Figs. 8 and 9 need, from a trained generalized ``model`` (its run's ``config``;
    ``data``: the run's data set, cut to the config's subsets here):

    * ``heads``: :func:`head_table`; ``selected``: the degenerate heads under the two thresholds;
      ``order``: :func:`degeneracy_order`;
    * ``curve``: test accuracy without retraining after pruning the first k heads of ``order``
      (k = 0 … all) and k heads of ``random_orders`` random orders (seeds ``seed``, ``seed`` + 1,
      …), with every pruned model's per-image predictions (``*_predictions``);
    * ``retrained``: for k = the number of degenerate heads and each of ``retrain_counts``
      (default: a third and two thirds of all heads), the test accuracy before and after each
      epoch of :func:`retrain` (``epochs``, default :func:`retrain_epochs`), with the
      predictions before and after; each retraining runs in :func:`retrain_folder` of
      ``work_dir`` (default: temporary folders) and resumes there when interrupted;
    * ``parameters`` and ``macs`` (per image) of the unpruned and the pruned model;
    * ``pruned_history``: the degenerate heads' retraining history (``None`` when none is);
    * with ``control``, ``retrained`` also holds k = 0: the unpruned model retrained the same
      way from the same weights (what a pruned model's recovery is measured against).

    Every evaluation is in the precision of the run's config. Returns a JSON-ready dict."""
    device = next(model.parameters()).device
    model = model.eval()
    data = data.subset(config.train_subset, config.test_subset)
    epochs = retrain_epochs(config) if epochs is None else int(epochs)
    order = degeneracy_order(model, max_eigenvalue_threshold)
    total = len(order)
    selected = degenerate_heads(model, max_eigenvalue_threshold, condition_threshold)
    k_sel = count_selected(selected)
    if selection_of(order[:k_sel]) != selected:
        raise RuntimeError(
            "the degenerate heads are not a prefix of the degeneracy order"
        )
    curve = _curve(
        model, order, PredictionEvaluator(config, data, device), random_orders, seed
    )
    if verbose:
        print(f"pruning curves done ({total} heads, {k_sel} degenerate)")
    counts = (
        [round(total / 3), round(2 * total / 3)]
        if retrain_counts is None
        else [int(c) for c in retrain_counts]
    )
    counts = sorted({c for c in counts + ([k_sel] if k_sel else []) if 0 < c <= total})
    counts = [0] + counts if control else counts
    retrained, pruned_history = _retrained(
        model, config, data, order, counts, k_sel, epochs, work_dir, verbose
    )
    return {
        "format": 2,
        "base_config": config.to_dict(),
        "base_epochs": config.epochs,
        "thresholds": {
            "max_eigenvalue": max_eigenvalue_threshold,
            "condition": condition_threshold,
        },
        "heads": head_table(model, max_eigenvalue_threshold, condition_threshold),
        "selected": {str(k): v for k, v in selected.items()},
        "selected_paper_thresholds": {
            str(k): v
            for k, v in degenerate_heads(
                model, PAPER_MAX_EIGENVALUE_THRESHOLD, PAPER_CONDITION_THRESHOLD
            ).items()
        },
        "order": [list(h) for h in order],
        "curve": curve,
        "retrain_epochs": epochs,
        "retrained": retrained,
        **_sizes(model, selected, order[:k_sel]),
        "pruned_history": pruned_history,
    }


def _sizes(model, selected, pruned: Sequence[Head]) -> dict:
    cfg = model.config
    heads = [cfg.num_heads - len(selected.get(i, [])) for i in range(cfg.num_layers)]
    before, after = analytic_macs(cfg), analytic_macs(cfg, heads)
    return {
        "parameters": {
            "before": count_parameters(model),
            "after": count_parameters(pruned_copy(model, pruned)),
        },
        "macs": {
            "before": {"dense": before.dense, "total": before.total},
            "after": {"dense": after.dense, "total": after.total},
        },
    }


# --------------------------------------------------------------------------- readers
def pruning_study_name(run) -> str:
    """The name under which ``python -m attnconv.regenerate`` makes the pruning study of ``run``."""
    return run_result_name(run.run_dir, "pruning")


def _study_key(study: dict) -> dict:
    return {
        "base_config": study.get("base_config"),
        "thresholds": study.get("thresholds"),
    }


def load_pruning_study(
    run,
    max_eigenvalue_threshold: float = PAPER_MAX_EIGENVALUE_THRESHOLD,
    condition_threshold: float = PAPER_CONDITION_THRESHOLD,
    verbose: bool = True,
) -> dict:
    """The pruning study of a generalized run, read from ``run.run_dir / pruning.json``: it must
    have been made from this run's configuration with these thresholds, and from its weights (its
    unpruned accuracy is the run's last test accuracy). Reads only: missing or
    made otherwise, the error names the command that makes it (it needs the trained weights).
    ``verbose``: say which file was read (relative to the book's folder)."""
    path = Path(run.run_dir) / PRUNING_FILE
    wanted = {
        "base_config": run.config.to_dict(),
        "thresholds": {
            "max_eigenvalue": max_eigenvalue_threshold,
            "condition": condition_threshold,
        },
    }
    study = read_keyed(path, wanted, pruning_study_name(run), key_of=_study_key)
    if (
        run.epochs
        and study["curve"]["degenerate_first"][0] != run.epochs[-1]["test_acc"]
    ):
        raise StaleResultError(
            f"{relative_to_book(path)} was made from other weights than the run's last "
            f"epoch (unpruned accuracy {study['curve']['degenerate_first'][0]}, the run's "
            f"{run.epochs[-1]['test_acc']}); make it again with: "
            f"{regenerate_command(pruning_study_name(run))} --force"
        )
    if verbose:
        where = relative_to_book(path)
        where = where[len("book/") :] if where.startswith("book/") else where
        print(f"Using the saved pruning study in {where}.")
    return study


def pruned_folder(run) -> Path:
    """The folder of the retraining of ``run``'s degenerate heads' pruning: ``<folder>-pruned``."""
    folder = Path(run.run_dir)
    return folder.with_name(folder.name + "-pruned")


def load_pruned_run(run) -> Run:
    """The saved retraining of ``run`` after pruning its degenerate heads (its history; the
    weights are never committed), made with the pruning study."""
    folder = pruned_folder(run)
    if not (folder / HISTORY).is_file():
        raise MissingResultError(
            f"{folder} holds no retraining; make it with: "
            f"{regenerate_command(pruning_study_name(run))}"
        )
    return load_run(folder)


def study_predictions(
    study: dict, k: int, which: str = "degenerate_first", order: int = 0
) -> Optional[List[int]]:
    """The per-image predicted classes of one model of a saved study, for paired tests
    (McNemar): ``which`` = ``"degenerate_first"`` (the first ``k`` heads of the order pruned, no
    retraining), ``"random"`` (random order number ``order``), ``"retrained"`` (after retraining
    the ``k`` heads' pruning) or ``"retrained_before"`` (the same, before retraining). ``None`` for
    a study saved before studies kept predictions."""
    if which in ("degenerate_first", "random"):
        saved = study["curve"].get(f"{which}_predictions")
        if saved is None:
            return None
        text = saved[k] if which == "degenerate_first" else saved[order][k]
    elif which in ("retrained", "retrained_before"):
        row = next((r for r in study["retrained"] if r["k"] == k), None)
        if row is None:
            raise KeyError(f"the study retrained no pruning of {k} heads")
        suffix = "_before" if which == "retrained_before" else ""
        text = row.get("test_predictions" + suffix)
        if text is None:
            return None
    else:
        raise ValueError(f"unknown model {which!r} of a pruning study")
    return decode_predictions(text)
