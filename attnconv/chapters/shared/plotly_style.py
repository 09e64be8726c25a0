"""What the book's kernel-free interactive figures (Plotly) share: the column width, the font
size, the heads' colours, the Plotly module (imported on first use) and number formats, and
:func:`figure_html`, which writes a figure as a ``<div>`` without plotly.js (served from the book's
``_static`` folder by ``book/_ext/plotly_offline.py``) and with a fixed id, so a notebook's saved
output is the same on every run. The figures have no fixed width: each fills the content column,
up to :data:`FIGURE_WIDTH`, and follows it when the window is resized. The figures:
:mod:`attnconv.chapters.alpha_slider` (chapter 4),
:mod:`attnconv.chapters.explore_trained_heads` (chapter 7b) and
:mod:`attnconv.chapters.pruning_slider` (chapter 8)."""

from __future__ import annotations

import json
from html import escape as html_escape
from typing import Optional, Sequence

import numpy as np

__all__ = [
    "FIGURE_WIDTH",
    "FONT_SIZE",
    "MIN_FONT_SIZE",
    "small_text",
    "HEAD_COLORS",
    "IMMEDIATE",
    "frame_slider",
    "plotly_go",
    "rounded",
    "square_outline",
    "figure_html",
]

#: The widest a figure is drawn (px). Below it a figure takes the column's width (624 px in a
#: 1200 px window; 760 px at 1280 px, wider than this): its layout sets ``autosize`` and no
#: ``width``, and :func:`figure_html` caps it here and makes it responsive. Heights stay fixed; the panels that
#: must stay square keep their shape (``constrain="domain"``) and leave a margin instead.
FIGURE_WIDTH = 680
FONT_SIZE = 13  # px, every text of the figures (at least 12)
#: The smallest text a figure may draw (px): ticks, legends, colour bars, sliders, annotations;
#: :func:`small_text` finds what is smaller.
MIN_FONT_SIZE = 12
HEAD_COLORS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#393b79",
    "#637939",
    "#8c6d31",
    "#843c39",
    "#7b4173",
    "#3182bd",
)
IMMEDIATE = {
    "mode": "immediate",
    "frame": {"duration": 0, "redraw": True},
    "transition": {"duration": 0},
}


def frame_slider(labels: Sequence[str], active: int, prefix: str) -> dict:
    """The slider under a figure of frames ``"0"``, ``"1"``, …: one step per label, the current
    step's label shown after ``prefix``; every step redraws at once (:data:`IMMEDIATE`)."""
    return {
        "active": active,
        "x": 0.0,
        "len": 1.0,
        "y": -0.2,
        "yanchor": "top",
        "pad": {"t": 0, "b": 0},
        "currentvalue": {"prefix": prefix, "font": {"size": FONT_SIZE}},
        "font": {"size": 12},
        "steps": [
            {"label": label, "method": "animate", "args": [[str(i)], IMMEDIATE]}
            for i, label in enumerate(labels)
        ],
    }


def small_text(fig, minimum: float = MIN_FONT_SIZE) -> list:
    """Where ``fig`` (its layout, traces and frames) draws text smaller than ``minimum`` px, as
    ``"path: size"`` strings (empty when none does): every font size it sets (``font``,
    ``tickfont``, ``textfont``, ``title.font``, … of the layout, its axes, legend, colour bars,
    sliders, annotations and traces), and every log axis left to Plotly's automatic ticks, whose
    labels between the decades ("2", "5") Plotly draws at three quarters of the tick font."""
    found = []

    def walk(node, path):
        if isinstance(node, dict):
            for key, value in node.items():
                here = f"{path}.{key}" if path else key
                if key.endswith("font") and isinstance(value, dict):
                    size = value.get("size")
                    if isinstance(size, (int, float)) and size < minimum:
                        found.append(f"{here}.size: {size}")
                if (
                    isinstance(value, dict)
                    and value.get("type") == "log"
                    and key.rstrip("0123456789") in ("xaxis", "yaxis")
                    and value.get("tickvals") is None
                    and not isinstance(value.get("dtick"), (int, float))
                ):
                    found.append(
                        f"{here}: log axis with automatic ticks (3/4-size labels)"
                    )
                walk(value, here)
        elif isinstance(node, (list, tuple)):
            for i, value in enumerate(node):
                walk(value, f"{path}[{i}]")

    walk(fig.to_plotly_json(), "")
    return found


def plotly_go():
    import plotly.graph_objects as go

    return go


def rounded(x, digits: int = 4):
    """Nested lists of ``x`` rounded to ``digits`` decimals (smaller pages, same picture)."""
    return np.round(np.asarray(x, dtype=np.float64), digits).tolist()


def square_outline(x0: float, y0: float, size: float):
    """A closed square outline (x, y lists) from the corner (x0, y0)."""
    return [x0, x0 + size, x0 + size, x0, x0], [y0, y0, y0 + size, y0 + size, y0]


def figure_html(
    fig,
    div_id: str,
    post_script: Optional[str] = None,
    alt: Optional[str] = None,
    max_width: int = FIGURE_WIDTH,
):
    """``fig`` as an :class:`IPython.display.HTML` ``<div id=div_id>`` without plotly.js (the book
    serves it from ``_static``; a fixed id keeps a notebook's saved output deterministic). The
    figure takes the width of the column it sits in, up to ``max_width`` px, and follows the window
    when it is resized (Plotly's ``responsive`` option); its layout must leave ``width`` unset.
    Where plotly.js is absent (a notebook in Jupyter), a line says so instead of an empty space;
    there, ``fig.show()`` draws the figure with Plotly's own renderer. ``alt``, when given, is the
    figure's text alternative: the wrapping ``<div>`` gets ``role="figure"`` and it as
    ``aria-label``."""
    from IPython.display import HTML

    if fig.layout.width is not None:
        raise ValueError(
            f"{div_id}: the layout has a fixed width ({fig.layout.width} px); the book's figures "
            "leave it unset and follow the column (figure_html caps them at max_width)"
        )
    html = fig.to_html(
        include_plotlyjs=False,
        full_html=False,
        div_id=div_id,
        post_script=post_script,
        auto_play=False,
        default_width="100%",
        config={"displayModeBar": False, "responsive": True},
    )
    note = (
        f'<p id="{div_id}-note" style="font-style:italic">Interactive figure: plotly.js is not loaded here '
        f"(it is in the built book); in Jupyter, <code>fig.show()</code> draws it.</p>"
        f"<script>if (window.Plotly) {{ var n = document.getElementById({json.dumps(div_id + '-note')});"
        f" if (n) n.remove(); }}</script>"
    )
    role = ""
    if alt is not None:
        label = html_escape(alt, quote=True)
        role = f'role="figure" aria-label="{label}" '
    return HTML(
        f'<div {role}class="book-plotly" style="max-width:{int(max_width)}px">{note}{html}</div>'
    )
