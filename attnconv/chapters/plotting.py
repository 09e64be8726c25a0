"""Figures shared by the chapters: attention maps around a query pixel, kernels, error maps."""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np
import torch

__all__ = ["COLUMN_INCHES", "use_book_style", "attention_map", "plot_attention_heads", "plot_error_map"]

#: Width of the book's text column in inches at matplotlib's 100 dpi: the rendered column is about
#: 784 px wide (tests/browser/check_book.py measures it), so a figure up to this wide is shown at
#: its own size and its 9-pt text stays 12.5 px on the page.
COLUMN_INCHES = 7.8


def use_book_style() -> None:
    """Figures for the book's column: font sizes that stay ≥ 9 px on the page when a figure is at
    most :data:`COLUMN_INCHES` wide, and inline figures as 2× PNGs (sharp on high-resolution
    screens, shown at 1×). Call once at the top of a chapter."""
    import matplotlib as mpl

    mpl.rcParams.update({
        "figure.dpi": 100, "font.size": 10, "axes.titlesize": 10, "axes.labelsize": 10,
        "xtick.labelsize": 9, "ytick.labelsize": 9, "legend.fontsize": 9, "figure.titlesize": 11,
    })
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:  # not in IPython
        return
    set_matplotlib_formats("retina")


def attention_map(probs: torch.Tensor, shape: Sequence[int], query: Tuple[int, int], head: int,
                  key_padding: int = 0, image: int = 0) -> np.ndarray:
    """One head's attention probabilities over the (padded) key grid for one query pixel.

    ``probs`` is what ``MultiHeadSelfAttention2d(..., return_attention=True)`` returns:
    ``(B, N_h, T_q, T_k)``. Returns an ``(H + 2p, W + 2p)`` array.
    """
    h, w = shape
    if not (0 <= query[0] < h and 0 <= query[1] < w):
        raise ValueError(f"query {query} is outside the {h}×{w} grid")
    p = key_padding
    q = query[0] * w + query[1]
    row = probs[image, head, q].detach().float().cpu().numpy()
    if row.size != (h + 2 * p) * (w + 2 * p):
        raise ValueError("probs do not match shape and key_padding")
    return row.reshape(h + 2 * p, w + 2 * p)


def plot_attention_heads(probs: torch.Tensor, shape: Sequence[int], query: Tuple[int, int],
                         key_padding: int = 0, ncols: Optional[int] = None, image: int = 0,
                         titles: Optional[Sequence[str]] = None, suptitle: Optional[str] = None,
                         cmap: str = "Blues", axes=None):
    """Draw every head's attention map around ``query`` (marked by a red square), one panel a head.

    Padded key cells (outside the image) lie beyond the dashed frame.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    n_heads = probs.shape[1]
    ncols = ncols or int(np.ceil(np.sqrt(n_heads)))
    nrows = int(np.ceil(n_heads / ncols))
    if axes is None:
        fig, axes = plt.subplots(nrows, ncols, figsize=(2.1 * ncols, 2.1 * nrows), squeeze=False)
    else:
        axes = np.asarray(axes).reshape(nrows, ncols)
        fig = axes.flat[0].figure
    p = key_padding
    h, w = shape
    for i, ax in enumerate(axes.flat):
        ax.set_xticks([]), ax.set_yticks([])
        if i >= n_heads:
            ax.axis("off")
            continue
        m = attention_map(probs, shape, query, i, key_padding, image)
        ax.imshow(m, cmap=cmap, vmin=0, vmax=max(float(m.max()), 1e-12))
        ax.add_patch(Rectangle((query[1] + p - 0.5, query[0] + p - 0.5), 1, 1, fill=False, ec="red", lw=1.5))
        if p:
            ax.add_patch(Rectangle((p - 0.5, p - 0.5), w, h, fill=False, ec="gray", ls="--", lw=0.8))
        ax.set_title(titles[i] if titles else f"head {i}", fontsize=8)
    if suptitle:
        fig.suptitle(suptitle)
    fig.tight_layout()
    return fig


def plot_error_map(error: torch.Tensor, title: str = "", ax=None, cmap: str = "magma"):
    """Show a per-pixel error map ``(H, W)`` with a colour bar."""
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=(3.2, 3))
    im = ax.imshow(error.detach().float().cpu().numpy(), cmap=cmap)
    ax.figure.colorbar(im, ax=ax, fraction=0.046)
    ax.set_title(title, fontsize=9)
    ax.set_xticks([]), ax.set_yticks([])
    return ax.figure
