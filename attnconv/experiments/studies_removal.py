"""Layer and head removal (Sec. 4.2-4.3: "some of the heads in the last two layers seem to be
redundant"): the test accuracy of a trained run without each layer's heads and without each
single head, no retraining, with every ablated model's per-image predictions (for an exact
paired test, McNemar, against the full model on the same test images).

:func:`removal_accuracies` computes what ``removal.json`` holds (registered in
:mod:`attnconv.experiments.studies` as ``<run>/removal``, made by ``python -m
attnconv.regenerate``); :func:`load_removal` and :func:`removal_predictions` read it.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import List, Optional, Sequence

from . import data as data_module
from .device import resolve_precision
from .pruning import prune_heads
from .store import REMOVAL_FILE, read_keyed, run_result_name
from .train_step import decode_predictions, encode_predictions, evaluate

__all__ = [
    "removal_accuracies",
    "load_removal",
    "removal_predictions",
    "removal_interval",
]


def _ablations(model):
    """``("layer", li, model without layer li's heads)`` and ``("head", li, h, model without
    head h of layer li)`` for every layer and head (copies; ``model`` is not changed)."""
    for li, layer in enumerate(model.layers):
        if layer.num_heads:
            heads = list(range(layer.num_heads))
            yield ("layer", li, prune_heads(copy.deepcopy(model), {li: heads}))
    for li, layer in enumerate(model.layers):
        for h in range(layer.num_heads):
            yield ("head", li, h, prune_heads(copy.deepcopy(model), {li: [h]}))


def removal_accuracies(run, data=None, batch_size: int = 500) -> dict:
    """What ``removal.json`` holds, computed from a run loaded with its trained weights
    (``run.model``), in the precision of the run's config: the test accuracy of the full model
    (``full``), without each layer's heads (``without_layer``; a layer without heads gives the
    full accuracy), and without each single head (``without_head``), no retraining; and the
    per-image predicted classes of each (``full_predictions``, ``without_layer_predictions``,
    ``without_head_predictions``, one digit per image). ``data``: a
    :class:`~attnconv.experiments.data.CifarData` (default: the run's data set; the run's test
    subset is used)."""
    if run.model is None:
        raise ValueError(
            f"{run.run_dir}: removal needs the trained weights (load the run with its model)"
        )
    config = run.config
    if data is None:
        data = data_module.load_cifar10(
            config.data, root=config.data_root, verbose=False
        )
    data = data.subset(config.train_subset, config.test_subset)
    model = run.model.eval()
    device = next(model.parameters()).device
    precision = resolve_precision(device, config.bf16, config.precision).name

    def measure(m):
        classes: List[int] = []
        acc = evaluate(
            m, data.x_test, data.y_test, batch_size, device, precision=precision,
            predictions=classes,
        )[1]  # fmt: skip
        return float(acc), encode_predictions(classes)

    full, full_pred = measure(model)
    n = len(model.layers)
    layer = [(full, full_pred)] * n
    head: List[list] = [[None] * layer_.num_heads for layer_ in model.layers]
    for what in _ablations(model):
        if what[0] == "layer":
            layer[what[1]] = measure(what[2])
        else:
            head[what[1]][what[2]] = measure(what[3])
    return {
        "full": full,
        "without_layer": [a for a, _ in layer],
        "without_head": [[a for a, _ in row] for row in head],
        "note": f"test accuracy on the {len(data.x_test):,} test images, heads removed with "
        "attnconv.experiments.pruning.prune_heads, no retraining",
        "full_predictions": full_pred,
        "without_layer_predictions": [p for _, p in layer],
        "without_head_predictions": [[p for _, p in row] for row in head],
    }


def load_removal(run) -> Optional[dict]:
    """The saved ``removal.json`` of a run, or ``None`` when it was not made (``python -m
    attnconv.regenerate --only <run>/removal`` makes it from the trained weights). Its key is the
    accuracy of the full model, which must be the run's final test accuracy: removal accuracies of
    other weights than the history's last epoch raise
    :class:`~attnconv.experiments.store.StaleResultError`."""
    path = Path(run.run_dir) / REMOVAL_FILE
    if not path.is_file():
        return None
    return read_keyed(
        path,
        run.epochs[-1]["test_acc"],
        run_result_name(run.run_dir, "removal"),
        key_of=lambda saved: saved.get("full"),
    )


def removal_predictions(
    removal: dict, layer: Optional[int] = None, head: Optional[int] = None
) -> Optional[List[int]]:
    """The per-image predicted classes saved in a :func:`load_removal` result: of the full model
    (no ``layer``), without ``layer``'s heads (no ``head``), or without ``head`` of ``layer``
    (layers and heads numbered from 0). ``None`` for a result saved before studies kept
    predictions."""
    if layer is None:
        text = removal.get("full_predictions")
    elif head is None:
        saved = removal.get("without_layer_predictions")
        text = None if saved is None else saved[layer]
    else:
        saved = removal.get("without_head_predictions")
        text = None if saved is None else saved[layer][head]
    return None if text is None else decode_predictions(text)


def removal_interval(
    removal: dict,
    layer: int,
    head: Optional[int] = None,
    labels: Optional[Sequence[int]] = None,
):
    """The 95 % interval of (without − full) test accuracy for removing ``head`` of ``layer``, or
    all of the layer's heads (numbered from 0): one model against itself on the same images,
    paired with the exact McNemar p-value where the study kept per-image predictions
    (:func:`~attnconv.experiments.verdicts.same_model_difference`), else the conservative unpaired
    interval. ``labels``: the test images' classes (default: the bundled sample's)."""
    from .verdicts import same_model_difference, test_labels

    if head is None:
        without = removal["without_layer"][layer]
    else:
        without = removal["without_head"][layer][head]
    full_pred = removal_predictions(removal)
    if labels is None:
        labels = test_labels("sample") if full_pred is not None else None
    if labels is None:
        labels = int(removal.get("test_images") or 1017)
    return same_model_difference(
        removal_predictions(removal, layer, head),
        full_pred,
        labels,
        (without, removal["full"]),
    )
