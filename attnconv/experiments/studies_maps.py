"""Attention maps of a trained run's heads for one query token, averaged over test images (v1
Fig. 6 = ICLR Fig. 5: learned relative encoding, position only; ICLR Fig. 6, not in v1: with the
content term, averaged over 100 test images).

:func:`attention_map_statistics` computes them (and how much each head's map varies between
images) from a model; :func:`save_attention_maps` stores them as a small JSON next to
``history.json`` (registered in :mod:`attnconv.experiments.studies` as ``<run>/attention_maps``;
only ``python -m attnconv.regenerate`` calls it); :func:`run_attention_maps` reads them, never
computing or writing. The maps evaluate no accuracy, so they hold no per-image predictions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import torch

from .checkpoints import Run
from .data import load_cifar10, normalize
from .store import ATTENTION_MAPS_FILE, read_keyed, run_result_name

__all__ = [
    "attention_map_statistics",
    "average_attention_maps",
    "save_attention_maps",
    "load_attention_maps",
    "attention_maps_name",
    "run_attention_maps",
]


def _default_query(model) -> Tuple[int, int]:
    g = model.config.tokens_per_side
    return (g // 2, g // 2)


@torch.no_grad()
def attention_map_statistics(
    model,
    images: torch.Tensor,
    query: Optional[Sequence[int]] = None,
    batch_size: int = 50,
) -> dict:
    """The attention probabilities of every head of every layer for one query token on each of
    ``images`` (normalised, ``(N, 3, 32, 32)``), summarised per layer (``None`` for a layer without
    heads):

    * ``mean`` — ``(N_h, H', W')`` float64, the average over the images (ICLR Fig. 6, not in arXiv v1,
      averages 100 test images);
    * ``variation`` — ``(N_h,)``, the mean over the images of the total-variation distance
      ½ Σ_k |p_image(k) − p_mean(k)| between an image's map and the average: 0 for a head whose
      attention does not depend on the image (position-only scores), up to 1 for a head that
      looks somewhere else in every image.

    Each layer sees its real input (the model runs in eval mode, no dropout; its mode is restored)."""
    if images.ndim != 4 or len(images) < 1:
        raise ValueError(
            f"expected a non-empty batch of images (N, 3, H, W), got shape {tuple(images.shape)}"
        )
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    cfg = model.config
    g = cfg.tokens_per_side
    qi, qj = _default_query(model) if query is None else (int(query[0]), int(query[1]))
    if not (0 <= qi < g and 0 <= qj < g):
        raise ValueError(f"query {tuple(query)} outside the {g}×{g} token grid")
    q = qi * g + qj
    was_training = model.training
    model.eval()
    rows: List[List[torch.Tensor]] = [[] for _ in model.layers]
    try:
        for start in range(0, len(images), batch_size):
            x = model.tokens(images[start : start + batch_size])
            n = x.shape[1]
            for i, layer in enumerate(model.layers):
                if layer.attention is not None:
                    _, probs = layer.attention.forward_tokens(
                        x, cfg.grid, return_attention=True
                    )
                    rows[i].append(
                        probs[:, :, q, :].double().expand(n, -1, -1)
                    )  # (B, N_h, T_k)
                x = layer(x, cfg.grid)
    finally:
        model.train(was_training)
    means, variations = [], []
    for r in rows:
        if not r:
            means.append(None)
            variations.append(None)
            continue
        p = torch.cat(r)  # (N, N_h, T_k)
        mean = p.mean(0)
        means.append(mean.reshape(-1, g, g))
        variations.append(0.5 * (p - mean).abs().sum(-1).mean(0))
    return {"mean": means, "variation": variations}


def average_attention_maps(
    model,
    images: torch.Tensor,
    query: Optional[Sequence[int]] = None,
    batch_size: int = 50,
) -> List[Optional[torch.Tensor]]:
    """The ``mean`` of :func:`attention_map_statistics`: per layer an ``(N_h, H', W')`` float64
    tensor, every head's attention probabilities for the query token averaged over ``images``.
    For position-only heads every image gives the map of
    :meth:`~attnconv.experiments.models.SelfAttentionClassifier.position_attention`."""
    return attention_map_statistics(model, images, query, batch_size)["mean"]


def save_attention_maps(
    run: Run,
    num_images: int = 100,
    query: Optional[Sequence[int]] = None,
    data=None,
    digits: int = 6,
) -> Path:
    """Compute :func:`attention_map_statistics` of ``run.model`` over the first ``num_images`` test
    images of the run's data and write the mean maps and the per-head variation to
    ``run_dir/attention_maps.json`` (values rounded to ``digits`` significant digits). ``data``: a :class:`~attnconv.experiments.data.CifarData` to use instead
    of loading ``run.config.data``."""
    if run.model is None:
        raise ValueError("the run has no model: load it with load_model=True")
    if num_images < 1:
        raise ValueError("num_images must be >= 1")
    if data is None:
        data = load_cifar10(run.config.data, root=run.config.data_root, verbose=False)
    images = normalize(data.x_test[:num_images]).to(next(run.model.parameters()).device)
    query = (
        _default_query(run.model) if query is None else (int(query[0]), int(query[1]))
    )
    stats = attention_map_statistics(run.model, images, query)
    maps = stats["mean"]
    payload = {
        "description": f"attention probabilities of every head for the query token {list(query)}, "
        f"averaged over the first {len(images)} test images ({data.source} data)",
        "query": list(query),
        "grid": list(run.model.config.grid),
        "num_images": len(images),
        "content": bool(run.model.config.content),
        "epoch": len(run.epochs),
        "layers": [
            None
            if m is None
            else [
                [[float(f"{v:.{digits}g}") for v in row] for row in head]
                for head in m.tolist()
            ]
            for m in maps
        ],
        "variation": [
            None if v is None else [float(f"{x:.{digits}g}") for x in v.tolist()]
            for v in stats["variation"]
        ],
    }
    path = Path(run.run_dir) / ATTENTION_MAPS_FILE
    with open(path, "w") as f:
        json.dump(payload, f)
    return path


def load_attention_maps(run_dir) -> Optional[dict]:
    """The content of ``run_dir/attention_maps.json`` with ``layers`` as float64 tensors
    ``(N_h, H', W')`` and ``variation`` as ``(N_h,)`` tensors (``None`` for layers without heads),
    or ``None`` when the file is absent."""
    path = Path(run_dir) / ATTENTION_MAPS_FILE
    if not path.is_file():
        return None
    with open(path) as f:
        d = json.load(f)
    d["layers"] = [
        None if m is None else torch.tensor(m, dtype=torch.float64) for m in d["layers"]
    ]
    d["variation"] = [
        None if v is None else torch.tensor(v, dtype=torch.float64)
        for v in d.get("variation", [])
    ]
    return d


def _attention_maps_key(d: dict) -> dict:
    return {"epoch": d.get("epoch"), "num_images": d.get("num_images")}


def attention_maps_name(run: Run) -> str:
    """The name under which ``python -m attnconv.regenerate`` makes the attention maps of ``run``."""
    return run_result_name(run.run_dir, "attention_maps")


def run_attention_maps(run: Run, num_images: int = 100) -> dict:
    """The saved attention maps of ``run`` (:func:`load_attention_maps`), made from its last epoch
    over ``num_images`` test images. Reads only: missing or made from another epoch, the error names
    the command that makes them (they need the run's weights)."""
    path = Path(run.run_dir) / ATTENTION_MAPS_FILE
    read_keyed(
        path,
        {"epoch": len(run.epochs), "num_images": num_images},
        attention_maps_name(run),
        key_of=_attention_maps_key,
    )
    return load_attention_maps(run.run_dir)
