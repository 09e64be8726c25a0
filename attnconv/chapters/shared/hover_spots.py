"""Hover values for a static figure: points of a matplotlib figure that show their numbers when
the pointer rests on them (or the keyboard focuses them), in the built book.

The figure stays the book's PNG. Beside it the cell shows a small HTML element that lists each
point's place, as a fraction of the PNG's width and height, and its text;
``book/_static/figure-hover.js`` lays a focusable spot over each place and shows the text in a
tooltip. The places are computed here the way IPython's inline backend crops the figure
(``bbox_inches="tight"``, ``savefig.pad_inches``), so each spot sits on its point at any width
the page gives the image."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from typing import Sequence, Tuple

#: Decimals of a spot's place (a fraction of the image): 0.001 of a 700-px image is under a pixel.
PLACE_DIGITS = 3


@dataclass(frozen=True)
class HoverPoint:
    """A point to hover: its axes, its data coordinates and the text it shows."""

    ax: object
    x: float
    y: float
    text: str


def image_places(fig, points: Sequence[HoverPoint]) -> Tuple[Tuple[float, float], ...]:
    """Each point's place in the inline PNG of ``fig``, as (fraction of the width from the left,
    fraction of the height from the top): the figure is drawn, cropped to its tight box padded
    by ``savefig.pad_inches``, as ``IPython.core.pylabtools.print_figure`` crops it."""
    import matplotlib as mpl

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.get_tightbbox(renderer).padded(mpl.rcParams["savefig.pad_inches"])
    places = []
    for p in points:
        px, py = p.ax.transData.transform((p.x, p.y))  # display pixels at fig.dpi
        x_in, y_in = px / fig.dpi, py / fig.dpi
        places.append(
            (
                round((x_in - box.x0) / box.width, PLACE_DIGITS),
                round((box.y1 - y_in) / box.height, PLACE_DIGITS),
            )
        )
    return tuple(places)


def hover_html(fig, points: Sequence[HoverPoint], label: str) -> str:
    """The element ``figure-hover.js`` reads: ``label`` names the figure for a screen reader
    (e.g. "Figure 17.1's claims"); one spot per point, its text on lines split by newlines."""
    spots = [
        {"x": x, "y": y, "text": p.text}
        for p, (x, y) in zip(points, image_places(fig, points))
    ]
    data = html.escape(json.dumps(spots, ensure_ascii=False), quote=True)
    return (
        f'<div class="hover-spots" data-label="{html.escape(label, quote=True)}" '
        f'data-spots="{data}"></div>'
    )


class HoverSpots:
    """``hover_html`` as a cell's output: the element as text/html, and as text/plain a line that
    holds no memory address (IPython would print the object's repr, which differs each run)."""

    def __init__(self, fig, points: Sequence[HoverPoint], label: str):
        self.html = hover_html(fig, points, label)
        self.plain = f"{label}: {len(points)} hover values"

    def _repr_mimebundle_(self, **kwargs):  # IPython passes include= and exclude=
        return {"text/html": self.html, "text/plain": self.plain}
