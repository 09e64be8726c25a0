"""Chapter 9's threshold explorer for the single-pixel claim (Sec. 4.3): each six-layer learned
seed drawn as its largest probability on one key in layers 1–2, beside the same seed untrained
(the claim's null model), with a range input for the threshold. The count at each threshold is the
frozen per-seed property's own (:func:`~attnconv.evidence.measures.learned_pixels`), computed here
in Python; the page only shows it. At 0.9 it is the protocol's threshold, at 0.5 the protocol's
"threshold 0.5 instead of 0.9" alternative."""

from __future__ import annotations

from html import escape
from typing import Dict, List, Sequence

from ..evidence import measures as M
from .shared.live_kit import controls_readout_svg, range_row, widget_html
from .shared.plotting import model_colour

__all__ = ["PEAK_THRESHOLDS", "PEAK_LAYERS", "peak_rows", "peak_widget"]

#: The range input's positions: thresholds on a head's largest probability on one key.
PEAK_THRESHOLDS = (
    0.3,
    0.35,
    0.4,
    0.45,
    0.5,
    0.55,
    0.6,
    0.65,
    0.7,
    0.75,
    0.8,
    0.85,
    0.9,
    0.95,
)
#: The layers the claim reads: "certain self-attention heads" of layers 1 and 2 (Sec. 4.3).
PEAK_LAYERS = (0, 1)


def _largest(recs) -> float:
    """The largest probability any head of layers 1–2 puts on one key (the centre query)."""
    return max(max(M.peaks(recs[i])[0]) for i in PEAK_LAYERS)


def peak_rows(runs: Dict[str, Sequence]) -> List[dict]:
    """One row per group of runs (``{label: runs}``, e.g. fresh seeds, earlier seeds): each
    run's largest probability on one key in layers 1–2, trained and untrained (to 3 decimals,
    as drawn), and at every threshold of :data:`PEAK_THRESHOLDS` how many runs hold the frozen
    property :func:`~attnconv.evidence.measures.learned_pixels`, trained and untrained."""
    rows = []
    for label, group in runs.items():
        if not group:
            raise ValueError(f"no runs in the group {label!r}")
        trained = [M.layers(r.history) for r in group]
        untrained = [M.layers(r.history, untrained=True) for r in group]
        rows.append(
            {
                "label": label,
                "trained": [round(_largest(x), 3) for x in trained],
                "untrained": [round(_largest(x), 3) for x in untrained],
                "count": [
                    sum(M.learned_pixels(x, t) for x in trained)
                    for t in PEAK_THRESHOLDS
                ],
                "null": [
                    sum(M.learned_pixels(x, t) for x in untrained)
                    for t in PEAK_THRESHOLDS
                ],
            }
        )
    return rows


def peak_widget(
    rows: Sequence[dict], widget_id: str = "live-peaks", alt: str = "", at=0.9
):
    """The explorer as :class:`IPython.display.HTML`: a threshold input over
    :data:`PEAK_THRESHOLDS` starting at ``at``; per row of :func:`peak_rows`, a dot per run
    (filled: trained, grey: untrained) on a 0–1 axis, the threshold as a line, and a readout of
    the counts Python computed."""
    from IPython.display import HTML

    if not rows:
        raise ValueError("no runs to draw: rows is empty")
    if at not in PEAK_THRESHOLDS:
        raise ValueError(f"at = {at} is not one of the thresholds {PEAK_THRESHOLDS}")
    initial = {
        "rows": list(rows),
        "thresholds": list(PEAK_THRESHOLDS),
        "colour": model_colour("learned"),
    }
    wid = escape(widget_id, quote=True)
    height = 62 + 70 * len(rows)
    i = PEAK_THRESHOLDS.index(at)
    controls = range_row(wid, "t", "threshold", 0, len(PEAK_THRESHOLDS) - 1, i, 1, 0)
    body = controls_readout_svg(controls, height)
    return HTML(widget_html(wid, "peaks", alt, initial, body, _PEAKS_JS))


#: The explorer's script: it draws the dots and the threshold, and reads each count from the
#: row's lists (computed in Python by the frozen property); it counts nothing itself.
_PEAKS_JS = r"""
  var D = JSON.parse(root.dataset.initial), L = 24, R = 600, H = svg.viewBox.baseVal.height;
  var input = root.querySelector('input[data-role=t]'),
      out = root.querySelector('output[data-role=t-value]'),
      readout = root.querySelector('[data-role=readout]');
  function X(v) { return L + v * (R - L); }  // a probability, 0 to 1, along the axis
  function draw() {
    var i = Number(input.value), t = D.thresholds[i];
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    out.value = t.toFixed(2);
    input.setAttribute('aria-valuetext', 'threshold ' + t.toFixed(2));
    var said = [], shown = [];
    D.rows.forEach(function (r, j) {
      var y = 22 + j * 70, n = r.trained.length;
      el('text', {x: L, y: y}, r.label + ': ' + r.count[i] + ' of ' + n + ' above ' +
         t.toFixed(2) + ' trained, ' + r.null[i] + ' untrained (grey)');
      el('line', {x1: X(0), x2: X(1), y1: y + 30, y2: y + 30, stroke: 'currentColor',
                  'stroke-opacity': 0.3});
      r.untrained.forEach(function (v) {
        el('circle', {cx: X(v), cy: y + 40, r: 4, fill: '#7f7f7f', 'fill-opacity': 0.6});
      });
      r.trained.forEach(function (v) {
        el('circle', {cx: X(v), cy: y + 22, r: 5.5, fill: D.colour, 'fill-opacity': 0.8,
                      stroke: v > t ? 'currentColor' : 'none', 'stroke-width': 1.5});
      });
      said.push(r.label + ' ' + r.count[i] + ' of ' + n);
      shown.push([r.count[i], r.null[i]]);
    });
    el('line', {x1: X(t), x2: X(t), y1: 8, y2: H - 38, stroke: '#d62728', 'stroke-width': 2,
                'stroke-dasharray': '5 3'});
    [0, 0.25, 0.5, 0.75, 1].forEach(function (v) {
      el('text', {x: X(v), y: H - 22, 'text-anchor': 'middle', 'fill-opacity': 0.7},
         v.toFixed(2));
    });
    el('text', {x: X(0.5), y: H - 4, 'text-anchor': 'middle', 'fill-opacity': 0.7},
       '\u2191 on one key');
    el('text', {x: X(0.9), y: H - 4, 'text-anchor': 'middle', 'fill-opacity': 0.7},
       '\u2191 nearly one-hot');
    readout.dataset.counts = JSON.stringify(shown);
    readout.textContent = 'Seeds with a head of layers 1\u20132 above ' + t.toFixed(2) +
      ' on one key: ' + said.join('; ') + '.';
  }
  input.addEventListener('input', draw);
  draw();
"""
