"""The paper's Fig. 1 as a worked picture on a real image (chapter 3, "Lemma 1: attention as convolution").

Fig. 1 (arXiv v1 Sec. 3.1; ICLR Fig. 1): "Illustration of a Multi-Head Self-Attention layer applied to
a tensor image X. Each head h attends pixel values around shift Δ(h) and learn a filter matrix
W_val(h). We show attention maps computed for a query pixel at position q."

Here a hand-made 3×3 convolution of an RGB image (:func:`edge_blur_conv`: two Sobel edge filters
and a blur of the luminance) is turned into nine quadratic heads by
:func:`attnconv.core.conv.conv_to_mhsa` (Theorem 1). :func:`head_matrices` reads each head's
W^(h) = W_out^(h) W_val^(h) off the layer, :func:`plot_heads_and_matrices` draws each head's
attention around the query next to its W^(h), and :func:`plot_outputs` the image, the
convolution's output and the attention layer's output.
"""

from __future__ import annotations

import math
from typing import Sequence, Tuple

import numpy as np
import torch
from torch import nn

from ..core.encodings import kernel_shifts
from .shared.plotting import COLUMN_INCHES

__all__ = [
    "OUTPUT_NAMES",
    "edge_blur_conv",
    "head_matrices",
    "plot_head_targets",
    "plot_heads_and_matrices",
    "plot_kernel_as_heads",
    "plot_outputs",
]

#: The three output channels of :func:`edge_blur_conv`.
OUTPUT_NAMES = ("∂/∂col", "∂/∂row", "blur")


def edge_blur_conv(dtype: torch.dtype = torch.float32) -> nn.Conv2d:
    """A 3×3 'same' convolution RGB → 3 channels: Sobel derivative along columns, along rows,
    and a binomial blur, each of the luminance 0.299 R + 0.587 G + 0.114 B. No bias."""
    luminance = torch.tensor([0.299, 0.587, 0.114], dtype=torch.float64)
    sobel_col = (
        torch.tensor(
            [[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]], dtype=torch.float64
        )
        / 4
    )
    blur = (
        torch.tensor(
            [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]], dtype=torch.float64
        )
        / 16
    )
    spatial = torch.stack([sobel_col, sobel_col.t(), blur])  # (3, 3, 3)
    conv = nn.Conv2d(3, 3, 3, padding=1, bias=False, dtype=dtype)
    with torch.no_grad():
        conv.weight.copy_(spatial[:, None] * luminance[None, :, None, None])
    return conv


def head_matrices(mhsa) -> torch.Tensor:
    """Each head's W^(h) = W_val^(h) W_out^(h) of the paper's eq. (11), in its row-vector
    convention: ``(N_h, D_in, D_out)``. ``nn.Linear`` stores the transposes, so this is
    (out.weight block · value.weight block)ᵀ."""
    d = mhsa.head_dim
    w_val = mhsa.value.weight.detach()
    w_out = mhsa.out.weight.detach()
    return torch.stack(
        [
            (w_out[:, h * d : (h + 1) * d] @ w_val[h * d : (h + 1) * d]).t()
            for h in range(mhsa.num_heads)
        ]
    )


def _signed(n: int) -> str:
    """A shift's coordinate as the figures write it: a sign unless it is 0."""
    return f"{n:+d}" if n else "0"


def plot_heads_and_matrices(
    probs: torch.Tensor,
    shape: Sequence[int],
    query: Tuple[int, int],
    matrices: torch.Tensor,
    key_padding: int = 1,
    zoom: int = 2,
    in_names: Sequence[str] = ("R", "G", "B"),
    out_names: Sequence[str] = ("∂col", "∂row", "blur"),
):
    """For each of the 9 heads (3×3 layout by shift): its attention probabilities over the keys
    within ``zoom`` of the query (red square), and its matrix W^(h) ``(D_in, D_out)`` (rows:
    inputs, columns: outputs) on a common diverging colour scale."""
    import matplotlib.pyplot as plt

    h_img, w_img = shape
    shifts = kernel_shifts(3).tolist()
    # three pairs of panels a row (a head's attention, its W^(h)), a gap between pairs; each
    # pair titled once, so that no title runs into its neighbour's
    fig = plt.figure(figsize=(COLUMN_INCHES, 4.4), layout="constrained")
    grid = fig.add_gridspec(3, 8, width_ratios=[1, 1, 0.3, 1, 1, 0.3, 1, 1])
    axes = np.array(
        [[fig.add_subplot(grid[r, c]) for c in (0, 1, 3, 4, 6, 7)] for r in range(3)]
    )
    vmax = float(matrices.abs().max())
    p = key_padding
    for h, (d1, d2) in enumerate(shifts):
        ax_a, ax_w = axes[h // 3, 2 * (h % 3)], axes[h // 3, 2 * (h % 3) + 1]
        row = (
            probs[0, h, query[0] * w_img + query[1]]
            .detach()
            .double()
            .reshape(h_img + 2 * p, w_img + 2 * p)
        )
        qi, qj = query[0] + p, query[1] + p
        crop = row[qi - zoom : qi + zoom + 1, qj - zoom : qj + zoom + 1].numpy()
        ax_a.imshow(crop, cmap="Purples", vmin=0, vmax=1)
        ax_a.add_patch(
            plt.Rectangle((zoom - 0.5, zoom - 0.5), 1, 1, fill=False, ec="red", lw=1.2)
        )
        ax_a.set_title(
            f"head {h + 1}: $\\Delta = ({_signed(d1)}, {_signed(d2)})$",  # as the text
            fontsize=9,
            loc="left",
        )
        im = ax_w.imshow(
            matrices[h].double().numpy(), cmap="RdBu_r", vmin=-vmax, vmax=vmax
        )
        ax_w.set_yticks(
            range(len(in_names)),
            in_names,  # on every matrix: the gap between the pairs holds them
            fontsize=9.5,
        )
        bottom = h // 3 == 2  # the outputs are named under the last row only
        ax_w.set_xticks(
            range(len(out_names)),
            out_names if bottom else [""] * len(out_names),
            fontsize=9.5,
            rotation=90,
        )
        if not bottom:  # no tick marks without their names
            ax_w.tick_params(axis="x", length=0)
        ax_a.set_xticks([]), ax_a.set_yticks([])
    bar = fig.colorbar(im, ax=axes, fraction=0.02, pad=0.02)
    bar.set_label("entry of $W^{(h)}$", fontsize=9)
    bar.ax.tick_params(labelsize=9)
    fig.suptitle(
        f"each head: its attention around q = {tuple(query)} (red), keys within {zoom} "
        f"pixels,\nthen its $W^{{(h)}}$ (rows: inputs, columns: outputs)",
        fontsize=9,
    )
    return fig


def plot_outputs(
    image: torch.Tensor,
    conv_out: torch.Tensor,
    mhsa_out: torch.Tensor,
    query: Tuple[int, int],
    names: Sequence[str] = OUTPUT_NAMES,
):
    """Top: the image (query in red) and, per output channel, the convolution's output; bottom:
    the attention layer's output on the same colour scale, and |MHSA − conv| over all channels."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 4, figsize=(COLUMN_INCHES, 3.7))
    axes[0, 0].imshow(image.permute(1, 2, 0).double().numpy())
    axes[0, 0].add_patch(
        plt.Rectangle(
            (query[1] - 0.5, query[0] - 0.5), 1, 1, fill=False, ec="red", lw=1.2
        )
    )
    axes[0, 0].set_title("image, query q", fontsize=9)
    for c, name in enumerate(names):
        lim = float(conv_out[c].abs().max())
        cmap, lo = ("gray", 0.0) if name == "blur" else ("RdBu_r", -lim)
        axes[0, c + 1].imshow(
            conv_out[c].double().numpy(), cmap=cmap, vmin=lo, vmax=lim
        )
        axes[0, c + 1].set_title(f"conv: {name}", fontsize=9)
        axes[1, c + 1].imshow(
            mhsa_out[c].double().numpy(), cmap=cmap, vmin=lo, vmax=lim
        )
        axes[1, c + 1].set_title(f"MHSA: {name}", fontsize=9)
    diff = (mhsa_out - conv_out).abs().amax(0).double().numpy()
    top = max(float(np.max(diff)), 1e-30)
    # the bar in units of 10ⁿ, named beside it: "%.0e" rounded two ticks to the same label,
    # and a "×10ⁿ" offset above the bar ran into the panel's title
    power = int(np.floor(np.log10(top)))
    im = axes[1, 0].imshow(
        diff / 10.0**power, cmap="magma", vmin=0, vmax=top / 10.0**power
    )
    axes[1, 0].set_title("|MHSA − conv|", fontsize=9)
    bar = fig.colorbar(im, ax=axes[1, 0], fraction=0.046)
    bar.set_label(f"$\\times 10^{{{power}}}$", labelpad=2)
    for ax in axes.flat:
        ax.set_xticks([]), ax.set_yticks([])
    fig.tight_layout()
    return fig


def plot_kernel_as_heads(kernel_size: int = 3, alpha: float = 6.0, grid: int = 7):
    """The paper's idea in one picture (the book's opening figure): a K×K convolution at a query
    pixel reads K² shifted pixels, and K² attention heads with the quadratic encoding (eq. 9),
    each centred on one shift Δ_h of the kernel and sharpened by its width α (Lemma 2), read
    the same pixels, one head a tap (Lemma 1, Theorem 1). Left: the kernel's taps around the
    query, numbered as the heads; right: each head's attention probabilities over the keys,
    shown on the kernel's keys and one ring around them (the rest holds under 1 % in all)."""
    import matplotlib.pyplot as plt
    from matplotlib.gridspec import GridSpec
    from matplotlib.patches import Rectangle

    from .shared.head_state import HeadState, head_state_probabilities

    if kernel_size < 1 or kernel_size % 2 == 0:
        raise ValueError(
            f"kernel_size must be a positive odd integer, got {kernel_size}"
        )
    k, c = kernel_size, grid // 2
    shifts = [tuple(int(v) for v in s) for s in kernel_shifts(k).tolist()]
    colours = plt.cm.tab10(np.arange(len(shifts)) % 10)
    fig = plt.figure(figsize=(COLUMN_INCHES, 3.7))
    gs = GridSpec(k, 2 * k, figure=fig, wspace=0.3, hspace=0.5, top=0.82, bottom=0.02)
    ax = fig.add_subplot(gs[:, :k])
    ax.imshow(np.zeros((grid, grid)), cmap="Greys", vmin=0, vmax=1)
    for h, (d1, d2) in enumerate(shifts):
        ax.add_patch(
            Rectangle((c + d2 - 0.5, c + d1 - 0.5), 1, 1, color=colours[h], alpha=0.85)
        )
        ax.text(c + d2, c + d1, str(h + 1), ha="center", va="center", fontsize=9)
    ax.add_patch(Rectangle((c - 0.5, c - 0.5), 1, 1, fill=False, ec="red", lw=2))
    ax.set_xticks(np.arange(grid + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(grid + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="0.8", lw=0.6)
    ax.tick_params(which="both", length=0, labelbottom=False, labelleft=False)
    ax.set_title(f"a {k}×{k} convolution at the query (red):\n{k * k} taps")
    on_tap, heads = [], []
    view = min(
        k // 2 + 1, c
    )  # each head drawn on the keys within one ring of the kernel
    for h, (d1, d2) in enumerate(shifts):
        a = fig.add_subplot(gs[h // k, k + h % k])
        state = HeadState(delta=(d1, d2), alpha=alpha, query=(c, c), grid=(grid, grid))
        probs = head_state_probabilities(state).numpy()
        a.imshow(probs, cmap="Blues", vmin=0, vmax=1)
        a.add_patch(Rectangle((c - 0.5, c - 0.5), 1, 1, fill=False, ec="red", lw=1))
        for side in a.spines.values():
            side.set_color(colours[h])
            side.set_linewidth(2.5)
        a.set_xticks(np.arange(grid + 1) - 0.5, minor=True)
        a.set_yticks(np.arange(grid + 1) - 0.5, minor=True)
        a.grid(which="minor", color="0.85", lw=0.5)  # one cell a key
        a.tick_params(which="both", length=0)
        a.set_xticks([]), a.set_yticks([])
        a.set_xlim(c - view - 0.5, c + view + 0.5)  # the kernel and one ring of keys
        a.set_ylim(c + view + 0.5, c - view - 0.5)
        a.set_title(f"head {h + 1}", fontsize=8.5, pad=4)
        on_tap.append(float(probs[c + d1, c + d2]))
        heads.append(a)
    # the heads' weight on their taps said once above them (rounded down), not in every title,
    # where "head 1: 0.99" ran into its neighbour
    low = math.floor(100 * min(on_tap)) / 100
    fig.canvas.draw()  # the panels' final places (equal aspect) and their titles'
    to_fig = fig.transFigure.inverted()
    boxes = [a.get_position() for a in heads]
    top = max(a.title.get_window_extent().transformed(to_fig).y1 for a in heads)
    fig.text(
        (min(b.x0 for b in boxes) + max(b.x1 for b in boxes)) / 2,
        top + 0.02,
        f"{k * k} heads, each ≥ {low:.2f} on its tap",
        ha="center",
        va="bottom",
        fontsize=ax.title.get_fontsize(),
    )
    return fig


def plot_head_targets(probs, shape, queries, key_padding: int = 1, titles=None):
    """All heads of a layer on one panel per query: each key cell is coloured by the head that
    attends to it most (numbered as the heads, colours as in :func:`plot_kernel_as_heads`), if
    that head puts more than half its attention there; the query is the red square and the image
    the dashed frame (cells beyond it are padded keys). ``probs`` is ``(1, N_h, T_q, T_k)`` from
    ``MultiHeadSelfAttention2d(..., return_attention=True)``."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from .shared.plotting import attention_map

    h, w = shape
    p = key_padding
    n_heads = probs.shape[1]
    colours = plt.cm.tab10(np.arange(n_heads) % 10)
    fig, axes = plt.subplots(
        1, len(queries), figsize=(min(3.2 * len(queries), COLUMN_INCHES), 3.0)
    )
    for i, (ax, query) in enumerate(zip(np.atleast_1d(axes), queries)):
        maps = np.stack(
            [
                attention_map(probs, shape, query, k, key_padding=p)
                for k in range(n_heads)
            ]
        )
        # the image's keys white, the padded keys light grey and hatched (over black, as
        # before, the dashed frame of the image did not show)
        ax.imshow(np.zeros(maps.shape[1:]), cmap="Greys", vmin=0, vmax=1)
        ax.add_patch(
            Rectangle(
                (-0.5, -0.5),
                w + 2 * p,
                h + 2 * p,
                fc="0.88",
                ec="0.6",
                hatch="//",
                lw=0,
                zorder=0.5,
            )
        )
        ax.add_patch(Rectangle((p - 0.5, p - 0.5), w, h, fc="white", lw=0, zorder=0.6))
        for k in range(n_heads):
            r, c = np.unravel_index(maps[k].argmax(), maps[k].shape)
            if maps[k, r, c] > 0.5:
                ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, color=colours[k]))
                ax.text(c, r, str(k + 1), ha="center", va="center", fontsize=8.5)
        ax.add_patch(
            Rectangle(
                (query[1] + p - 0.5, query[0] + p - 0.5),
                1,
                1,
                fill=False,
                ec="red",
                lw=2,
            )
        )
        ax.add_patch(
            Rectangle(
                (p - 0.5, p - 0.5), w, h, fill=False, ec="k", ls="--", lw=1.5, zorder=4
            )
        )
        ax.set_xticks(np.arange(w + 2 * p + 1) - 0.5, minor=True)
        ax.set_yticks(np.arange(h + 2 * p + 1) - 0.5, minor=True)
        ax.grid(which="minor", color="0.85", lw=0.5)
        ax.tick_params(which="both", length=0, labelbottom=False, labelleft=False)
        ax.set_title(titles[i] if titles else f"query {tuple(query)}")
    fig.tight_layout()
    return fig
