"""Figures shared by the chapters: attention maps around a query pixel, kernels, error maps."""

from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np
import torch

__all__ = [
    "COLUMN_INCHES",
    "COLUMN_PX",
    "FIGURE_DPI",
    "MIN_TEXT_PX",
    "BOOK_STYLE",
    "MODEL_COLOURS",
    "IMPLEMENTATION_COLOURS",
    "DTYPE_COLOURS",
    "model_colour",
    "label_colour",
    "seed_colours",
    "SEED_MARKERS",
    "use_book_style",
    "install_figure_check",
    "figure_text_sizes",
    "shown_text_px",
    "attention_map",
    "plot_attention_heads",
    "plot_error_map",
]

#: Width of the book's figures in inches. The binding page is a 1280 px browser window: there a
#: notebook output is 760 px wide (784 px at 1400 px; measured in Chromium on the built book), and
#: an image is shown at its own CSS width up to that, shrunk beyond it. Figures are drawn at
#: :data:`FIGURE_DPI`, so a figure of this width is 724 px on the page (745 px with the few tenths
#: of an inch that a tight bounding box adds at the edges): it nearly fills the column and is
#: never shrunk, and its smallest text (8.5 pt) is 12.75 px, its labels (9 pt) 13.5 px.
COLUMN_INCHES = 6.7
#: Pixels (CSS px) per inch of the book's figures: ``figure.dpi``; the inline PNGs are drawn at
#: twice this (retina) and shown at this.
FIGURE_DPI = 108
#: The widest a figure is shown, in CSS px (at a 1280 px window), and the smallest figure text we
#: accept there: a figure wider than the column is scaled down, and its text with it.
COLUMN_PX = 760
MIN_TEXT_PX = 12.0

#: The book's font sizes (points): nothing smaller than 8.5 pt, which at :data:`FIGURE_DPI` is
#: 12.75 px when a figure is no wider than the column (and at least 12 px for a figure up to
#: 7.4 in wide).
BOOK_STYLE = {
    "figure.dpi": FIGURE_DPI,
    "font.size": 9,
    "axes.titlesize": 9.5,
    "axes.labelsize": 9,
    "xtick.labelsize": 8.5,
    "ytick.labelsize": 8.5,
    "legend.fontsize": 8.5,
    "figure.titlesize": 10,
    "legend.title_fontsize": 8.5,
    "figure.figsize": (COLUMN_INCHES, 3.0),
}

#: One colour per model for the whole book: a model keeps its colour from figure to figure.
#: Keys are the models' registry names; :func:`model_colour` also reads the chapters' labels
#: ("quadratic, 16 heads", "ResNet18", "GPSA, default start").
MODEL_COLOURS = {
    "quadratic": "#1f77b4",  # blue
    "quadratic-16heads": "#17becf",  # cyan
    "generalized": "#ff7f0e",  # orange
    "learned": "#2ca02c",  # green
    "learned_content": "#bcbd22",  # olive
    "resnet18": "#000000",  # black
    # ch. 18: the plain ViT and the GPSA model at each of its starts
    "vit": "#7f7f7f",  # grey: the plain ViT (MHSA)
    "gpsa": "#e377c2",  # pink: the GPSA model at its default start ("random")
    "convit": "#9467bd",  # purple: ConViT's local start
    "impulse": "#a50f15",  # dark red: Theorem 1's construction (darker than the GPSA pink)
    "mimetic": "#8c564b",  # brown
    "mimetic_qk": "#1b9e77",  # teal: mimetic's W_qW_k half only
    "mimetic_vo": "#4169e1",  # royal blue: mimetic's W_vW_out half only
    "vit_mimetic": "#b8860b",  # dark goldenrod: the plain ViT at the mimetic start
}
#: One colour per implementation of attention (ch. 13), disjoint from the models' colours.
IMPLEMENTATION_COLOURS = {
    "naive": "#393b79",  # navy: the paper's formulation, as written
    "dense": "#7b4173",  # plum
    "local": "#637939",  # dark olive
    "conv": "#bd9e39",  # mustard
}
#: float32 against float64 (ch. 4): vermillion against indigo, a pair that stays apart for readers
#: with red-green colour blindness, disjoint from the models' and implementations' colours.
DTYPE_COLOURS = {
    "float32": "#d55e00",  # vermillion
    "float64": "#332288",  # indigo
}
_MODEL_ALIASES = {
    "quadratic, 16 heads": "quadratic-16heads",
    "quadratic_16heads": "quadratic-16heads",
    "quadratic 16 heads": "quadratic-16heads",
    "learned, content": "learned_content",
    "learned + content": "learned_content",
    "learned-content": "learned_content",
    "plain vit": "vit",
    "plain vit (mhsa)": "vit",
    "random": "gpsa",
    "gpsa, default start": "gpsa",
    "convit local": "convit",
    "gpsa, convit local": "convit",
    "impulse (thm. 1)": "impulse",
    "gpsa, impulse (thm. 1)": "impulse",
    "gpsa, mimetic": "mimetic",
    "gpsa, mimetic $w_qw_k^\\top$ only": "mimetic_qk",
    "gpsa, mimetic $w_vw_{out}$ only": "mimetic_vo",
    "sa quadratic": "quadratic",
    "9 heads": "quadratic",
    "16 heads": "quadratic-16heads",
    "learned, position only": "learned",
}


def model_colour(name: str) -> str:
    """The book's colour for a model, from its registry name or a chapter's label; a one-line
    ValueError for a model the book has no colour for."""
    key = str(name).strip().lower()
    key = _MODEL_ALIASES.get(key, key)
    if key in MODEL_COLOURS:
        return MODEL_COLOURS[key]
    raise ValueError(
        f"no book colour for model {name!r} (known: {', '.join(sorted(MODEL_COLOURS))})"
    )


#: One marker per seed where several seeds of one model share an axes (with :func:`seed_colours`).
SEED_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
#: The lightness (HLS) of the darkest and the lightest seed of :func:`seed_colours`.
SEED_LIGHTNESS = (0.22, 0.60)


def seed_colours(name: str, n: int) -> list:
    """``n`` shades of the model's :func:`model_colour`, one per seed, darkest first: the hue and
    saturation stay the model's (HLS), the lightness steps evenly from 0.22 to 0.60, so the seeds
    of one model read as one family and differ from each other in lightness. One seed gets the
    model's colour unchanged."""
    import colorsys

    from matplotlib.colors import to_hex, to_rgb

    if n < 1:
        raise ValueError("n must be >= 1")
    colour = model_colour(name)
    if n == 1:
        return [to_hex(colour)]
    hue, _, saturation = colorsys.rgb_to_hls(*to_rgb(colour))
    return [
        to_hex(colorsys.hls_to_rgb(hue, lightness, saturation))
        for lightness in np.linspace(SEED_LIGHTNESS[0], SEED_LIGHTNESS[1], n)
    ]


def label_colour(label: str) -> Optional[str]:
    """The book's colour for a figure label that names a model ("quadratic", "ResNet18",
    "learned + content (8 epochs)", "quadratic, seed 2"), else ``None`` (matplotlib's cycle).
    Tried in turn: the label, the label without a trailing "(…)", the label before its last
    comma."""
    text = str(label).strip()
    tries = [text, text.split(" (")[0].strip()]
    if "," in tries[-1]:
        tries.append(tries[-1].rsplit(",", 1)[0].strip())
    for t in tries:
        try:
            return model_colour(t)
        except ValueError:
            continue
    return None


def use_book_style() -> None:
    """Figures for the book's column: the font sizes of :data:`BOOK_STYLE`, inline figures as
    2× PNGs (sharp on high-resolution screens, shown at 1×), and :func:`install_figure_check`.
    Call once at the top of a chapter."""
    import matplotlib as mpl

    mpl.rcParams.update(BOOK_STYLE)
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:  # not in IPython
        return
    set_matplotlib_formats("retina")
    install_figure_check()


def figure_text_sizes(fig, render) -> Tuple[list, object]:
    """Render the figure with ``render()`` and return ``(drawn, result)``: ``drawn`` lists
    ``(points, text)`` of every piece of text the renderer actually drew (hidden, empty and
    clipped-away labels are not drawn), ``result`` is what ``render()`` returned."""
    from matplotlib.backends.backend_agg import RendererAgg

    drawn = []
    original = RendererAgg.draw_text

    def record(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if str(s).strip():
            drawn.append((float(prop.get_size_in_points()), str(s)))
        return original(self, gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)

    RendererAgg.draw_text = record
    try:
        result = render()
    finally:
        RendererAgg.draw_text = original
    return drawn, result


def shown_text_px(points: float, fig_dpi: float, width_px: float) -> float:
    """Rendered size in CSS px of ``points`` text in a figure ``width_px`` CSS px wide at
    ``fig_dpi``: the page shrinks a figure wider than :data:`COLUMN_PX` to the column.

    ``width_px`` is the width the page gives the image: for the book's retina PNGs (drawn at
    ``2 * fig_dpi``) the ``width`` of the output's metadata, half the PNG's pixel width, which the
    book writes as the image's CSS width; one point is then ``fig_dpi / 72`` CSS px before the
    shrinking."""
    return points * fig_dpi / 72.0 * min(1.0, COLUMN_PX / width_px)


def _png_width(data) -> int:
    import base64
    import struct

    raw = base64.b64decode(data) if isinstance(data, str) else data
    return struct.unpack(">I", raw[16:20])[0]


def install_figure_check() -> None:
    """Wrap IPython's inline PNG formatter for figures so that every figure shown reports text
    smaller than :data:`MIN_TEXT_PX` as rendered in the book's column, as one line on stderr
    (which nbval compares: a chapter with unreadable text fails CI). With the environment variable
    ``ATTNCONV_FIGURE_LOG`` set to a file, one JSON line per figure is appended there."""
    try:
        from IPython import get_ipython
        from matplotlib.figure import Figure
    except ImportError:
        return
    ip = get_ipython()
    if ip is None:
        return
    formatter = ip.display_formatter.formatters["image/png"]
    try:
        inner = formatter.lookup_by_type(Figure)
    except KeyError:
        return
    if getattr(inner, "_attnconv_checked", False):
        return

    def checked(fig, *args, **kwargs):
        import json
        import os
        import sys

        drawn, out = figure_text_sizes(fig, lambda: inner(fig, *args, **kwargs))
        if out is None or not drawn:
            return out
        data, meta = out if isinstance(out, tuple) else (out, {})
        # retina PNGs (drawn at 2 * fig.dpi) carry their CSS width in the metadata, half their
        # pixels; a plain PNG is drawn at fig.dpi and shown at its pixel width
        width = float(meta.get("width") or _png_width(data))
        pt, text = min(drawn)
        px = shown_text_px(pt, fig.dpi, width)
        log = os.environ.get("ATTNCONV_FIGURE_LOG")
        if log:
            with open(log, "a") as f:
                f.write(
                    json.dumps(
                        {
                            "width_px": width,
                            "scale": min(1.0, COLUMN_PX / width),
                            "min_points": pt,
                            "min_px": round(px, 2),
                            "text": text[:40],
                        }
                    )
                    + "\n"
                )
        if px < MIN_TEXT_PX - 1e-6:
            print(
                f"figure text {px:.1f} px on the page (< {MIN_TEXT_PX:g}): {text[:30]!r}",
                file=sys.stderr,
            )
        return out

    checked._attnconv_checked = True
    formatter.for_type(Figure, checked)


def attention_map(
    probs: torch.Tensor,
    shape: Sequence[int],
    query: Tuple[int, int],
    head: int,
    key_padding: int = 0,
    image: int = 0,
) -> np.ndarray:
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


def plot_attention_heads(
    probs: torch.Tensor,
    shape: Sequence[int],
    query: Tuple[int, int],
    key_padding: int = 0,
    ncols: Optional[int] = None,
    image: int = 0,
    titles: Optional[Sequence[str]] = None,
    suptitle: Optional[str] = None,
    cmap: str = "Blues",
    axes=None,
):
    """Draw every head's attention map around ``query`` (marked by a red square), one panel a head.

    Padded key cells (outside the image) lie beyond the dashed frame.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    n_heads = probs.shape[1]
    ncols = ncols or int(np.ceil(np.sqrt(n_heads)))
    nrows = int(np.ceil(n_heads / ncols))
    if axes is None:
        panel = min(2.1, COLUMN_INCHES / ncols)
        fig, axes = plt.subplots(
            nrows, ncols, figsize=(panel * ncols, panel * nrows), squeeze=False
        )
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
        ax.add_patch(
            Rectangle(
                (query[1] + p - 0.5, query[0] + p - 0.5),
                1,
                1,
                fill=False,
                ec="red",
                lw=1.5,
            )
        )
        if p:
            ax.add_patch(
                Rectangle(
                    (p - 0.5, p - 0.5), w, h, fill=False, ec="gray", ls="--", lw=0.8
                )
            )
        ax.set_title(titles[i] if titles else f"head {i + 1}", fontsize=8.5)
    if suptitle:
        fig.suptitle(suptitle)
    fig.tight_layout()
    return fig


def plot_error_map(
    error: torch.Tensor,
    title: str = "",
    ax=None,
    cmap: str = "magma",
    norm=None,
    colorbar: bool = True,
):
    """Show a per-pixel error map ``(H, W)``, with a colour bar unless ``colorbar`` is False.
    ``norm`` (e.g. one ``LogNorm`` for several maps) puts maps on a common colour scale;
    returns the image when ``ax`` is given, so that one colour bar can serve several maps."""
    import matplotlib.pyplot as plt

    own = ax is None
    if own:
        fig, ax = plt.subplots(figsize=(3.2, 3))
    im = ax.imshow(error.detach().float().cpu().numpy(), cmap=cmap, norm=norm)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046)
    ax.set_title(title, fontsize=9)
    ax.set_xticks([]), ax.set_yticks([])
    return ax.figure if own else im
