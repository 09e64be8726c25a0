"""What the book's live widgets share (:mod:`attnconv.chapters.live_widgets`,
:mod:`attnconv.chapters.live_figures`, :mod:`attnconv.chapters.live_query_explorer`): the range
check of their inputs, their labelled range inputs (:func:`range_row`), their CSS (controls, dark mode) and the prelude of their inline scripts
(:func:`live_script`)."""

from __future__ import annotations

import json
from html import escape

__all__ = [
    "check_range",
    "range_row",
    "BLUES",
    "DARK_CSS",
    "CONTROLS_CSS",
    "JS_PRELUDE",
    "live_script",
    "widget_html",
    "controls_readout_svg",
]


#: The live figures' colour ramp, light to dark: matplotlib's Blues at nine stops.
BLUES = tuple(
    "#f7fbff #deebf7 #c6dbef #9ecae1 #6baed6 #4292c6 #2171b5 #08519c #08306b".split()
)


def check_range(name: str, value: float, lo: float, hi: float) -> None:
    """A one-line ValueError for a start value outside its slider's range."""
    if not (lo <= value <= hi):
        raise ValueError(f"{name} = {value} is outside the slider's range [{lo}, {hi}]")


def range_row(
    wid: str,
    role: str,
    label: str,
    lo: float,
    hi: float,
    value: float,
    step: float = 0.01,
    digits: int = 2,
) -> str:
    """One labelled native range input ``{wid}-{role}`` from ``lo`` to ``hi`` in steps of
    ``step``, starting at ``value`` (``digits`` decimals), and the ``<output>`` where the
    widget's script shows its value: the three cells of a row of ``.lw-controls``."""
    return (
        f'<label for="{wid}-{role}">{label}</label>'
        f'<input type="range" id="{wid}-{role}" data-role="{role}" min="{lo:g}" '
        f'max="{hi:g}" step="{step:g}" value="{value:.{digits}f}">'
        f'<output for="{wid}-{role}" data-role="{role}-value"></output>'
    )


#: In dark mode the theme frames an HTML output in a light box meant for images drawn on white;
#: a live widget draws in the text's colour and needs none (as reader.css does for Plotly).
DARK_CSS = """
html[data-theme="dark"] .bd-content div.cell_output div.text_html:has(#{id}) {{
  background-color: transparent; padding: 0; }}
#{id} {{ color: var(--pst-color-text-base, inherit); }}
"""

CONTROLS_CSS = """
#{id} {{ max-width: {width}px; font-size: 14px; line-height: 1.4; }}
#{id} .lw-controls {{ display: grid; grid-template-columns: max-content 1fr 5.5em;
  gap: 4px 10px; align-items: center; max-width: 560px; }}
#{id} input[type=range] {{ width: 100%; accent-color: #1f77b4; }}
#{id} input[type=range]:focus-visible {{ outline: 2px solid #ff7f0e; outline-offset: 2px; }}
#{id} output {{ font-variant-numeric: tabular-nums; }}
#{id} svg {{ display: block; max-width: 100%; height: auto; margin-top: 6px; }}
#{id} svg text {{ fill: currentColor; font-size: 13px; }}
#{id} .lw-readout {{ margin-top: 4px; font-variant-numeric: tabular-nums; }}
"""

#: The start of every live widget's script: its root ``<div>`` (set up once), ``el`` to draw an
#: SVG element into the widget's first ``<svg>``, and ``softmax`` (max subtracted, then
#: normalised, as ``torch.softmax`` computes it).
JS_PRELUDE = r"""
  var root = document.getElementById(%(id)s);
  if (!root || root.dataset.ready) return;
  root.dataset.ready = '1';
  var NS = 'http://www.w3.org/2000/svg', svg = root.querySelector('svg');
  function el(tag, attrs, text) {
    var e = document.createElementNS(NS, tag);
    for (var a in attrs) e.setAttribute(a, attrs[a]);
    if (text !== undefined) e.textContent = text;
    svg.appendChild(e);
    return e;
  }
  function softmax(s) {
    var m = -Infinity, z = 0, p = [];
    for (var k = 0; k < s.length; k++) if (s[k] > m) m = s[k];
    for (var k2 = 0; k2 < s.length; k2++) { p.push(Math.exp(s[k2] - m)); z += p[k2]; }
    for (var k3 = 0; k3 < p.length; k3++) p[k3] /= z;
    return p;
  }
"""


def live_script(body: str, widget_id: str) -> str:
    """A live widget's inline script: :data:`JS_PRELUDE` for the element ``widget_id``, then
    ``body``, in a function of their own."""
    prelude = JS_PRELUDE.replace("%(id)s", json.dumps(widget_id))
    return f"(function () {{{prelude}{body}}})();"


def widget_html(
    wid: str, kind: str, alt: str, initial: dict, body: str, js: str
) -> str:
    """A live widget's whole HTML: its root ``<div>`` (``data-live-widget`` = ``kind``, the
    ``alt`` text as its label, ``initial`` as JSON in ``data-initial``), the controls' and the
    dark mode's CSS for a 640-pixel widget, ``body`` and the script ``js`` (:func:`live_script`)."""
    label = f' aria-label="{escape(alt, quote=True)}"' if alt else ""
    return (
        f'<div id="{wid}" class="live-widget" data-live-widget="{kind}" role="group"{label} '
        f"data-initial='{escape(json.dumps(initial), quote=True)}'>"
        f"<style>{CONTROLS_CSS.format(id=wid, width=640)}{DARK_CSS.format(id=wid)}</style>"
        f"{body}<script>{live_script(js, wid)}</script></div>"
    )


def controls_readout_svg(controls: str, height: int) -> str:
    """The body of a widget with one row of controls, a readout the script fills in
    (``data-role="readout"``, read aloud as it changes) and a 640-wide SVG ``height`` tall."""
    return (
        f'<div class="lw-controls">{controls}</div>'
        '<p class="lw-readout" data-role="readout" aria-live="polite"></p>'
        f'<svg viewBox="0 0 640 {height}" width="640" aria-hidden="true"></svg>'
    )
