"""Chapter 17's margin explorer: the comparison claims of the frozen protocol that have a margin,
each drawn as its 95 % interval on the fresh seeds against its margin, with a range input that
scales every margin. Each position's verdicts are the one rule's own
(:func:`~attnconv.experiments.verdicts.decide`, applied here in Python to the judge's interval):
the page only shows them. At ×0.5 and ×2 they are the protocol's "margin halved" and "margin
doubled" alternatives, which make a verdict *fragile*."""

from __future__ import annotations

from html import escape
from typing import List, Mapping, Optional, Sequence

from ..evidence.judge import ConfirmatoryVerdict
from ..evidence.protocol import CLAIMS as FROZEN_CLAIMS
from ..experiments.claims import CLAIMS
from ..experiments.verdicts import EQUIVALENCE, NON_INFERIORITY, decide
from .shared.badges import VERDICT_COLOURS, verdict_word
from .shared.live_kit import controls_readout_svg, range_row, widget_html

__all__ = ["MARGIN_MULTIPLIERS", "FROZEN_AT", "margin_rows", "margin_widget"]

#: The range input's positions: each margin times these. ×1 is the frozen margin; ×0.5 and ×2
#: are the protocol's alternatives.
MARGIN_MULTIPLIERS = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0)
#: The position of the frozen margins.
FROZEN_AT = MARGIN_MULTIPLIERS.index(1.0)


def margin_rows(fresh: Mapping[str, ConfirmatoryVerdict]) -> List[dict]:
    """One row per judged claim with a margin: its title, kind, interval (estimate, ends, in
    the verdict's printed units), margin, and the rule's verdict at every multiplier of
    :data:`MARGIN_MULTIPLIERS`."""
    rows = []
    for key, got in fresh.items():
        claim = FROZEN_CLAIMS.get(key)
        if claim is None or got.interval is None or not claim.margin:
            continue
        if claim.kind not in (NON_INFERIORITY, EQUIVALENCE):
            continue
        iv, s = got.interval, got.scale
        verdicts = [
            decide(claim.kind, iv, claim.margin * m, s, got.unit)[0]
            for m in MARGIN_MULTIPLIERS
        ]
        rows.append(
            {
                "key": key,
                "title": CLAIMS[key].title,
                "kind": claim.kind,
                # in printed units, to 3 decimals: what the page draws, the same on any CPU
                "estimate": round(s * iv.estimate, 3),
                "lo": round(s * iv.lo, 3),
                "hi": round(s * iv.hi, 3),
                "margin": round(s * claim.margin, 3),
                "unit": got.unit.strip(),
                "verdicts": verdicts,
            }
        )
    return rows


def _axis(rows: Sequence[dict]) -> List[float]:
    """The shared axis, in printed units: every interval and every scaled margin, and 0."""
    reach = [abs(r["lo"]) for r in rows] + [abs(r["hi"]) for r in rows]
    reach += [r["margin"] * MARGIN_MULTIPLIERS[-1] for r in rows]
    low = min([0.0] + [r["lo"] for r in rows] + [-max(reach)])
    high = max([0.0] + [r["hi"] for r in rows])
    high = max(high, max(r["margin"] * MARGIN_MULTIPLIERS[-1] for r in rows))
    return [round(float(low) - 0.5, 3), round(float(high) + 0.5, 3)]


def margin_widget(
    rows: Sequence[dict],
    widget_id: str = "live-margins",
    alt: str = "",
    at: Optional[int] = None,
):
    """The explorer as :class:`IPython.display.HTML`: a range input over
    :data:`MARGIN_MULTIPLIERS` (starting at ``at``, default the frozen margins), and one row
    per claim of ``rows`` (:func:`margin_rows`): its interval and estimate, the margin's zone
    (shaded: where the interval must lie to reproduce the claim) and the verdict at that
    position. The readout counts the verdicts; its ``data-verdicts`` holds them in order."""
    from IPython.display import HTML

    if not rows:
        raise ValueError("no claim with a margin to draw: rows is empty")
    at = FROZEN_AT if at is None else at
    if not 0 <= at < len(MARGIN_MULTIPLIERS):
        raise ValueError(f"at = {at} is outside 0..{len(MARGIN_MULTIPLIERS) - 1}")
    verdicts = sorted(
        {v for r in rows for v in r["verdicts"]}
    )  # one order on every run
    initial = {
        "rows": list(rows),
        "mults": list(MARGIN_MULTIPLIERS),
        "frozen": FROZEN_AT,
        "x": _axis(rows),
        "colours": {v: VERDICT_COLOURS[v] for v in verdicts},
        "words": {v: verdict_word(v) for v in verdicts},
    }
    wid = escape(widget_id, quote=True)
    height = 40 + 62 * len(rows)
    controls = range_row(
        wid, "mult", "every margin ×", 0, len(MARGIN_MULTIPLIERS) - 1, at, 1, 0
    )
    body = controls_readout_svg(controls, height)
    return HTML(widget_html(wid, "margins", alt, initial, body, _MARGINS_JS))


#: The explorer's script: it draws the rows at the chosen position and reads each verdict from
#: the row's list (computed in Python by the rule); it computes no verdict itself.
_MARGINS_JS = r"""
  var D = JSON.parse(root.dataset.initial);
  var input = root.querySelector('input[data-role=mult]');
  var out = root.querySelector('output[data-role=mult-value]');
  var readout = root.querySelector('[data-role=readout]');
  var L = 16, R = 500, H = svg.viewBox.baseVal.height;
  function X(v) { return L + (v - D.x[0]) / (D.x[1] - D.x[0]) * (R - L); }
  function num(v) { return (v < 0 ? '\u2212' : '') + Math.abs(v).toFixed(1); }
  function draw() {
    var i = Number(input.value), mult = D.mults[i];
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    out.value = mult + '\u00d7' + (i === D.frozen ? ' (frozen)' : '');
    input.setAttribute('aria-valuetext', 'every margin times ' + mult);
    var shown = [], tally = {};
    D.rows.forEach(function (r, j) {
      var y = 24 + j * 62, m = r.margin * mult, v = r.verdicts[i];
      el('text', {x: L, y: y}, r.title + ' (margin ' + num(m) + ' ' + r.unit + ')');
      var left = X(-m), right = r.kind === 'equivalence' ? X(m) : X(D.x[1]);
      el('rect', {x: left, y: y + 8, width: right - left, height: 26, fill: '#2ca02c',
                  'fill-opacity': 0.14});
      el('line', {x1: X(-m), x2: X(-m), y1: y + 6, y2: y + 36, stroke: '#2ca02c',
                  'stroke-dasharray': '4 3'});
      if (r.kind === 'equivalence')
        el('line', {x1: X(m), x2: X(m), y1: y + 6, y2: y + 36, stroke: '#2ca02c',
                    'stroke-dasharray': '4 3'});
      el('line', {x1: X(0), x2: X(0), y1: y + 4, y2: y + 38, stroke: 'currentColor',
                  'stroke-opacity': 0.35});
      el('line', {x1: X(r.lo), x2: X(r.hi), y1: y + 21, y2: y + 21, stroke: 'currentColor',
                  'stroke-width': 3});
      el('circle', {cx: X(r.estimate), cy: y + 21, r: 4.5, fill: 'currentColor'});
      el('rect', {x: R + 10, y: y + 10, width: 116, height: 22, rx: 4, fill: D.colours[v],
                  stroke: 'currentColor', 'stroke-opacity': 0.35});
      el('text', {x: R + 68, y: y + 25, 'text-anchor': 'middle', style: 'fill: #fff',
                  'font-weight': 'bold'}, D.words[v]);
      var f = r.verdicts[D.frozen];
      if (i !== D.frozen) {  // the frozen margin stays marked, and a verdict it changes
        (r.kind === 'equivalence' ? [-r.margin, r.margin] : [-r.margin]).forEach(function (e) {
          el('line', {x1: X(e), x2: X(e), y1: y + 6, y2: y + 36, stroke: 'currentColor',
                      'stroke-opacity': 0.45, 'stroke-dasharray': '1 2'});
        });
        if (f !== v)
          el('text', {x: R + 68, y: y + 46, 'text-anchor': 'middle', 'font-size': 11,
                      'fill-opacity': 0.8}, 'at 1\u00d7: ' + D.words[f]);
      }
      shown.push(v); tally[D.words[v]] = (tally[D.words[v]] || 0) + 1;
    });
    for (var t = Math.ceil(D.x[0] / 2) * 2; t <= D.x[1]; t += 2)
      el('text', {x: X(t), y: H - 6, 'text-anchor': 'middle', 'fill-opacity': 0.7}, num(t));
    readout.dataset.verdicts = JSON.stringify(shown);
    readout.textContent = 'At ' + mult + '\u00d7 the frozen margins: ' + Object.keys(tally)
      .map(function (w) { return tally[w] + ' ' + w; }).join(', ') + '.';
  }
  input.addEventListener('input', draw);
  draw();
"""
