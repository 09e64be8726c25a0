"""Every head's attention map of a trained run, per layer, for one query token.

* From the saved Gaussian parameters (quadratic eq. 9, generalized eq. 16) when the history holds
  them: :func:`layer_attention_maps` computes them in memory.
* Otherwise from the trained weights (v1 Fig. 6 = ICLR Fig. 5: learned relative encoding, position
  only; ICLR Fig. 6, not in v1: with the content term, averaged over 100 test images):
  :func:`attention_map_statistics` computes them (and how much each head's map varies between
  images) from a model; :func:`save_attention_maps` stores them as a small JSON next to
  ``history.json`` (only ``python -m attnconv.regenerate`` calls it); :func:`run_attention_maps`
  reads them, never computing or writing.
* :func:`plot_layer_head_maps` draws them, one row per layer and one column per head.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import torch

from ...experiments.data import load_cifar10, normalize
from ...experiments.store import ATTENTION_MAPS_FILE, read_keyed, run_result_name
from ...experiments.train import Run
from .gaussian_maps import draw_mass_contours, gaussian_head_maps
from .plotting import COLUMN_INCHES
from .saved_runs import tokens_per_side
from .tables import fit_column, pack_items
from .trained_heads import layer_records

__all__ = [
    "ATTENTION_MAPS",
    "attention_map_statistics",
    "average_attention_maps",
    "save_attention_maps",
    "load_attention_maps",
    "format_variation",
    "attention_maps_name",
    "run_attention_maps",
    "layer_attention_maps",
    "plot_layer_head_maps",
]


#: File of the attention maps derived from a run's trained weights, next to ``history.json``.
ATTENTION_MAPS = ATTENTION_MAPS_FILE


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
    path = Path(run.run_dir) / ATTENTION_MAPS
    with open(path, "w") as f:
        json.dump(payload, f)
    return path


def load_attention_maps(run_dir) -> Optional[dict]:
    """The content of ``run_dir/attention_maps.json`` with ``layers`` as float64 tensors
    ``(N_h, H', W')`` and ``variation`` as ``(N_h,)`` tensors (``None`` for layers without heads),
    or ``None`` when the file is absent."""
    path = Path(run_dir) / ATTENTION_MAPS
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


def format_variation(
    name: str, variation: Sequence[Optional[torch.Tensor]], threshold: float = 0.05
) -> str:
    """One line per layer from the ``variation`` of :func:`attention_map_statistics`: every head's
    mean total-variation distance to its average map (2 decimals) and how many exceed
    ``threshold`` (layers numbered from 1)."""
    lines = []
    for i, v in enumerate(variation):
        if v is None:
            continue
        values = [f"{float(x):.2f}" for x in v]
        lines.append(
            pack_items(
                f"{name}, layer {i + 1}: above {threshold:g} in {int((v > threshold).sum())} of {len(v)} heads; "
                "per head: ",
                values,
            )
        )
    return fit_column("\n".join(lines))


def _attention_maps_key(d: dict) -> dict:
    return {"epoch": d.get("epoch"), "num_images": d.get("num_images")}


def attention_maps_name(run: Run) -> str:
    """The name under which ``python -m attnconv.regenerate`` makes the attention maps of ``run``."""
    return run_result_name(run.run_dir, "attention_maps")


def run_attention_maps(run: Run, num_images: int = 100) -> dict:
    """The saved attention maps of ``run`` (:func:`load_attention_maps`), made from its last epoch
    over ``num_images`` test images. Reads only: missing or made from another epoch, the error names
    the command that makes them (they need the run's weights)."""
    path = Path(run.run_dir) / ATTENTION_MAPS
    read_keyed(
        path,
        {"epoch": len(run.epochs), "num_images": num_images},
        attention_maps_name(run),
        key_of=_attention_maps_key,
    )
    return load_attention_maps(run.run_dir)


def layer_attention_maps(
    run: Run,
    query: Optional[Sequence[int]] = None,
    num_images: int = 100,
    epoch: int = -1,
) -> Optional[List[Optional[torch.Tensor]]]:
    """The attention maps ``(N_h, H', W')`` of every layer of ``run`` for one query token (default:
    the centre token) after ``epoch`` (-1: the last, 0: the initialisation): from the saved
    Gaussian parameters (:func:`gaussian_head_maps`) for the quadratic and generalized encodings,
    else from :func:`run_attention_maps` (last epoch and centre query only). ``None`` if they
    cannot be had."""
    mc = run.history.get("model_config", {})
    if mc.get("kind") == "resnet":
        raise ValueError("ResNet18 has no attention maps")
    g = tokens_per_side(run.history)
    centre = (g // 2, g // 2)
    query = centre if query is None else (int(query[0]), int(query[1]))
    records = (
        layer_records(run.history, epoch)
        if run.epochs or epoch == 0
        else run.history["initial_attention"]
    )
    with_heads = [r for r in records if "centers" in r]
    if (
        with_heads
        and not mc.get("content", False)
        and all("inverse_covariance" in r for r in with_heads)
    ):
        return [
            gaussian_head_maps(r, (g, g), query) if "inverse_covariance" in r else None
            for r in records
        ]
    if query != centre:
        raise ValueError("saved attention maps exist for the centre query only")
    if epoch not in (-1, len(run.epochs)):
        return None
    d = run_attention_maps(run, num_images)
    return None if d is None else d["layers"]


def plot_layer_head_maps(
    maps: Sequence[Optional[torch.Tensor]],
    query: Sequence[int],
    suptitle: Optional[str] = None,
    panel_size: float = 1.25,
    cmap: str = "Blues",
    contours: bool = False,
    masses: Sequence[float] = (0.5, 0.9),
    vmax_floor: float = 0.05,
    heads_per_row: Optional[int] = None,
):
    """v1 Fig. 6 (ICLR Figs. 5 and 6): a grid of attention maps, one row per layer and one column per head, each with the
    query token marked by a red square; each panel has its own colour scale from 0 to
    max(its largest probability, ``vmax_floor``), so that a nearly uniform head shows pale.
    With ``contours``, the outlines of each head's 50 % (solid) and 90 % (dashed) probability-mass
    regions (:func:`attnconv.chapters.gaussian.draw_mass_contours`) are drawn too.
    ``heads_per_row`` wraps a layer's heads over several rows (e.g. 8 for 16 heads: two rows
    per layer, each panel twice as wide as in one row of 16), every panel titled with its head."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    if not maps:
        raise ValueError("no maps to draw")
    n_heads = max((m.shape[0] for m in maps if m is not None), default=0)
    if n_heads == 0:
        raise ValueError("no layer has heads")
    ncols = min(n_heads, heads_per_row or n_heads)
    rows_per_layer = -(-n_heads // ncols)
    wrapped = rows_per_layer > 1
    panel = min(
        panel_size, (COLUMN_INCHES - 0.6) / ncols
    )  # never wider than the book's column
    fig, axes = plt.subplots(
        len(maps) * rows_per_layer,
        ncols,
        figsize=(
            panel * ncols + 0.3,
            (panel + (0.15 if wrapped else 0)) * len(maps) * rows_per_layer + 0.5,
        ),
        squeeze=False,
        layout="constrained",
    )
    fig.get_layout_engine().set(w_pad=0.01, h_pad=0.01, wspace=0.02, hspace=0.02)
    for ax in axes[:, n_heads % ncols or ncols :][
        rows_per_layer - 1 :: rows_per_layer
    ].flat:
        ax.axis("off")  # the empty places of a layer's last row
    for i, layer_maps in enumerate(maps):
        for h in range(n_heads):
            ax = axes[i * rows_per_layer + h // ncols, h % ncols]
            ax.set_xticks([]), ax.set_yticks([])
            if layer_maps is None or h >= layer_maps.shape[0]:
                ax.axis("off")
                continue
            m = layer_maps[h].double().numpy()
            ax.imshow(m, cmap=cmap, vmin=0, vmax=max(float(m.max()), vmax_floor, 1e-12))
            if contours:
                draw_mass_contours(
                    ax, layer_maps[h], masses, color="darkorange", linewidth=1.0
                )
            ax.add_patch(
                Rectangle(
                    (query[1] - 0.5, query[0] - 0.5), 1, 1, fill=False, ec="red", lw=1.2
                )
            )
            if wrapped:
                ax.set_title(f"head {h + 1}", fontsize=8.5, pad=2)
            elif i == 0:
                ax.set_title(
                    f"head {h + 1}" if n_heads <= 9 or h == 0 else f"{h + 1}",
                    fontsize=8.5,
                )
            if h % ncols == 0:
                ax.set_ylabel(
                    f"layer {i + 1}" if h == 0 or not wrapped else "", fontsize=7.5
                )
    if suptitle:
        fig.suptitle(suptitle, fontsize=9)
    return fig
