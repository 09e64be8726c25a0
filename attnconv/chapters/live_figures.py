"""Two of the book's figures as live HTML and JavaScript (no precomputed frames, no library, no
network), with the native, keyboard-accessible controls of :mod:`attnconv.chapters.live_widgets`:

* :func:`lemma2_alpha_widget` (chapter 4, Lemma 2): one quadratic head of a converted
  convolution over the zero-padded key grid, for any width α on a log-scale slider. The script
  computes the softmax of −α‖δ − Δ‖² over the padded keys (what ``conv_to_mhsa`` computes for a
  position-only head), its off-target mass and the bound S(α) of
  :func:`attnconv.off_target_mass_bound`, and draws both along α.
* :func:`pruning_threshold_widget` (chapter 8, App. A.1): the pruning rule applied to a run's heads
  for any condition-number threshold on a log-scale slider, as
  :func:`attnconv.experiments.pruning.is_degenerate` applies it.

As in :mod:`attnconv.chapters.live_widgets`, the wrapping ``<div>`` carries what Python computes for the start
(``data-initial``), so that a test and a browser check can hold the script to Python.
"""

from __future__ import annotations

import math
from html import escape
from typing import Sequence, Tuple

from attnconv import off_target_mass_bound

from .shared.head_state import HeadState, head_state_probabilities
from .shared.live_kit import BLUES, check_range, range_row, widget_html

__all__ = [
    "LEMMA2_ALPHA_RANGE",
    "THRESHOLD_EXPONENT_RANGE",
    "lemma2_alpha_widget",
    "lemma2_start",
    "pruning_threshold_widget",
]

#: α from 0.1 to 40 on the Lemma 2 slider (log scale): past ``one_hot_alpha(torch.float64)`` ≈ 38.1.
LEMMA2_ALPHA_RANGE = (0.1, 40.0)
#: log₁₀ of the pruning rule's condition threshold on its slider: 10¹ to 10¹⁴.
THRESHOLD_EXPONENT_RANGE = (1.0, 14.0)
#: Probabilities below 10^LOG_FLOOR take the lightest colour of the Lemma 2 map.
LOG_FLOOR = -18
#: Matplotlib's "Blues", nine stops from light to dark (the Lemma 2 map's log₁₀ p).


def _slider(wid: str, role: str, label: str, lo: float, hi: float, value: float) -> str:
    return (
        f'<div class="lw-controls">{range_row(wid, role, label, lo, hi, value)}</div>'
    )


#: What both live figures' scripts start with: ``timesTen``, a number as the book writes it in
#: text (7.696×10⁻¹⁵, ``digits`` after the point; no power of ten from 0.01 to 999).
_TIMES_TEN_JS = r"""
  function timesTen(v, digits) {
    var s = v.toExponential(digits).split('e'), n = parseInt(s[1], 10);
    if (n >= -2 && n <= 2) return v.toPrecision(digits + 1);  // 0.9667, 12.35: no power
    var sup = {'-': '\u207b', 0: '\u2070', 1: '\u00b9', 2: '\u00b2', 3: '\u00b3', 4: '\u2074',
               5: '\u2075', 6: '\u2076', 7: '\u2077', 8: '\u2078', 9: '\u2079'};
    return s[0] + '\u00d710' + String(n).split('').map(function (c) { return sup[c]; }).join('');
  }
"""


def lemma2_start(
    alpha: float, delta: Tuple[int, int], query: Tuple[int, int], grid: Tuple[int, int]
) -> dict:
    """What the Lemma 2 widget shows at width ``alpha``, from Python: the weight on the target key
    q + Δ (:func:`~.shared.head_state.head_state_probabilities` on the padded ``grid``), the off-target mass (the
    other keys' weights, summed) and the bound S(α)."""
    state = HeadState(delta=delta, alpha=alpha, query=query, grid=grid, kernel_size=3)
    p = head_state_probabilities(state).numpy()
    t = (query[0] + delta[0], query[1] + delta[1])
    return {
        "target_weight": float(p[t]),
        "off_mass": _off_sum(p, t),
        "bound": off_target_mass_bound(alpha),
    }


def _off_sum(p, t) -> float:
    """The weights of every key but ``t``, summed (not 1 − p[t], which cancels)."""
    q = p.copy()
    q[t] = 0.0
    return float(q.sum())


_LEMMA2_JS = r"""
  var init = JSON.parse(root.dataset.initial);
  var H = init.grid[0], W = init.grid[1], Q = init.query, D = init.delta, P = init.pad;
  var T = [Q[0] + D[0], Q[1] + D[1]], FLOOR = init.floor, BLUES = init.blues;
  var C = 20, X0 = 30, Y0 = 30, CB = X0 + W * C + 14;
  var PX0 = 400, PX1 = 620, PY0 = 30, PY1 = 30 + H * C;
  var LA0 = Math.log10(init.range[0]), LA1 = Math.log10(init.range[1]);
  function colour(z) {  // z in [0, 1] along Blues
    var x = Math.max(0, Math.min(1, z)) * (BLUES.length - 1), i = Math.min(BLUES.length - 2, Math.floor(x));
    var f = x - i, a = BLUES[i], b = BLUES[i + 1], out = '#';
    for (var c = 1; c < 7; c += 2) {
      var u = parseInt(a.substr(c, 2), 16), v = parseInt(b.substr(c, 2), 16);
      out += ('0' + Math.round(u + f * (v - u)).toString(16)).slice(-2);
    }
    return out;
  }
  function weights(alpha) {  // softmax over the padded keys of -alpha |(k - q) - Delta|^2
    var s = [];
    for (var i = 0; i < H; i++) for (var j = 0; j < W; j++) {
      var u = i - T[0], v = j - T[1];
      s.push(-alpha * (u * u + v * v));
    }
    return softmax(s);
  }
  function offMass(p) { var m = 0; for (var k = 0; k < p.length; k++) if (k !== T[0] * W + T[1]) m += p[k]; return m; }
  function bound(alpha) {  // S(alpha) = theta(e^-alpha)^2 - 1, as off_target_mass_bound
    var tail = 0, n = 1;
    while (true) { var t = Math.exp(-alpha * n * n); tail += 2 * t; if (t < 1e-300 || t < tail * 1e-18) break; n++; }
    return Math.expm1(2 * Math.log1p(tail));
  }
  function px(la) { return PX0 + (la - LA0) / (LA1 - LA0) * (PX1 - PX0); }
  function py(m) { var l = Math.min(0, Math.max(FLOOR, Math.log10(Math.max(m, 1e-300)))); return PY0 + (0 - l) / (0 - FLOOR) * (PY1 - PY0); }
  el('text', {x: X0, y: 16}, 'attention over the padded ' + H + '\u00d7' + W + ' keys');
  var cells = [];
  for (var i = 0; i < H; i++) for (var j = 0; j < W; j++)
    cells.push(el('rect', {x: X0 + j * C, y: Y0 + i * C, width: C - 1, height: C - 1}));
  el('rect', {x: X0 + P * C - 1, y: Y0 + P * C - 1, width: (W - 2 * P) * C + 1, height: (H - 2 * P) * C + 1,
              fill: 'none', stroke: 'currentColor', 'stroke-dasharray': '4 3', 'stroke-opacity': 0.7});
  el('rect', {x: X0 + Q[1] * C, y: Y0 + Q[0] * C, width: C - 1, height: C - 1, fill: 'none', stroke: '#d62728', 'stroke-width': 2.5});
  el('rect', {x: X0 + T[1] * C, y: Y0 + T[0] * C, width: C - 1, height: C - 1, fill: 'none', stroke: '#ff7f0e', 'stroke-width': 2.5});
  el('text', {x: X0, y: Y0 + H * C + 18}, 'red: query q \u00b7 orange: q + \u0394 \u00b7 dashed: the image');
  for (var s = 0; s < 40; s++)
    el('rect', {x: CB, y: Y0 + s * H * C / 40, width: 12, height: H * C / 40 + 0.5, fill: colour(1 - s / 39)});
  var POW = {0: '1', '-6': '10\u207b\u2076', '-12': '10\u207b\u00b9\u00b2', '-18': '10\u207b\u00b9\u2078'};
  [0, -6, -12, -18].forEach(function (l) {
    el('text', {x: CB + 16, y: Y0 + (-l) / (-FLOOR) * H * C + 4}, POW[l]);
  });
  el('text', {x: PX0 - 20, y: 16}, 'off-target mass (line), S(\u03b1) (dashed)');
  el('rect', {x: PX0, y: PY0, width: PX1 - PX0, height: PY1 - PY0, fill: 'none', stroke: 'currentColor', 'stroke-opacity': 0.4});
  [0, -6, -12, -18].forEach(function (l) {
    el('text', {x: PX0 - 5, y: py(Math.pow(10, l)) + 4, 'text-anchor': 'end'}, POW[l]);
  });
  [0.1, 1, 10].forEach(function (a) {
    el('text', {x: px(Math.log10(a)), y: PY1 + 16, 'text-anchor': 'middle'}, String(a));
  });
  el('text', {x: (PX0 + PX1) / 2, y: PY1 + 34, 'text-anchor': 'middle'}, 'width \u03b1 (log scale)');
  var mass = [], bnd = [];
  for (var n = 0; n <= 120; n++) {
    var la = LA0 + n / 120 * (LA1 - LA0), a = Math.pow(10, la);
    mass.push(px(la).toFixed(1) + ',' + py(offMass(weights(a))).toFixed(1));
    bnd.push(px(la).toFixed(1) + ',' + py(bound(a)).toFixed(1));
  }
  el('polyline', {points: bnd.join(' '), fill: 'none', stroke: 'currentColor', 'stroke-width': 1.5, 'stroke-dasharray': '5 3'});
  el('polyline', {points: mass.join(' '), fill: 'none', stroke: '#1f77b4', 'stroke-width': 2});
  var marker = el('circle', {r: 6, fill: '#ff7f0e', stroke: 'currentColor'});
  var input = root.querySelector('[data-role=alpha]'), out = root.querySelector('[data-role=alpha-value]');
  function sci(v) { return timesTen(v, 3); }
  function update() {
    var la = parseFloat(input.value), alpha = Math.pow(10, la), p = weights(alpha), m = offMass(p), b = bound(alpha);
    for (var k = 0; k < p.length; k++) {
      var l = Math.max(FLOOR, Math.log10(Math.max(p[k], 1e-300)));
      cells[k].setAttribute('fill', colour(1 - l / FLOOR));
    }
    marker.setAttribute('cx', px(la).toFixed(1)); marker.setAttribute('cy', py(m).toFixed(1));
    var shown = alpha < 1 ? alpha.toFixed(3) : alpha < 10 ? alpha.toFixed(2) : alpha.toFixed(1);
    out.value = shown;
    input.setAttribute('aria-valuetext', '\u03b1 = ' + shown);
    root.querySelector('[data-role=target-weight]').textContent = p[T[0] * W + T[1]].toFixed(6);
    root.querySelector('[data-role=off-mass]').textContent = sci(m);
    root.querySelector('[data-role=bound]').textContent = sci(b);
  }
  input.addEventListener('input', update);
  update();
"""


def lemma2_alpha_widget(
    alpha: float = 1.0,
    delta: Tuple[int, int] = (-1, 1),
    shape: Tuple[int, int] = (9, 9),
    query: Tuple[int, int] = (4, 4),
    widget_id: str = "live-lemma2-alpha",
    alt: str = "",
):
    """Figure 4.2 as :class:`IPython.display.HTML`: a range input over log₁₀ α
    (:data:`LEMMA2_ALPHA_RANGE`), the head of shift ``delta`` for pixel ``query`` of a ``shape``
    image, its weights over the keys padded by one (log₁₀ colours; query red, target q + Δ
    orange, the image dashed), and, along α, its off-target mass under the bound S(α) with a
    marker at this α. Printed: the target's weight (6 decimals), the off-target mass and S(α)
    (4 significant digits). ``alpha`` must lie on the slider's steps (hundredths of a decade)."""
    from IPython.display import HTML

    check_range("alpha", alpha, *LEMMA2_ALPHA_RANGE)
    log_alpha = round(math.log10(alpha), 2)
    if abs(10**log_alpha - alpha) > 1e-9 * alpha:
        raise ValueError(
            f"alpha = {alpha} is not on the slider's steps (10^0.01 apart)"
        )
    h, w = shape
    if not (0 <= query[0] < h and 0 <= query[1] < w):
        raise ValueError(f"query {tuple(query)} is outside the {h}×{w} image")
    if max(abs(d) for d in delta) > 1:
        raise ValueError(f"delta {tuple(delta)} is not a shift of a 3×3 kernel")
    grid, q = (
        (h + 2, w + 2),
        (query[0] + 1, query[1] + 1),
    )  # padded by the kernel's radius
    initial = {
        "grid": list(grid),
        "query": list(q),
        "delta": [int(d) for d in delta],
        "pad": 1,
        "alpha": alpha,
        "range": list(LEMMA2_ALPHA_RANGE),
        "floor": LOG_FLOOR,
        "blues": list(BLUES),
        **lemma2_start(alpha, tuple(delta), q, grid),
    }
    wid = escape(widget_id, quote=True)
    lo, hi = (math.log10(a) for a in LEMMA2_ALPHA_RANGE)
    body = (
        _slider(wid, "alpha", "width α (log scale)", lo, hi, log_alpha)
        + f'<p class="lw-readout" data-role="readout" aria-live="polite">weight on the '
        f'target q + Δ: <strong data-role="target-weight">'
        f"{initial['target_weight']:.6f}</strong>; off-target mass "
        f'<span data-role="off-mass"></span> ≤ S(α) = <span data-role="bound"></span></p>'
        f'<svg viewBox="0 0 640 310" width="640" aria-hidden="true"></svg>'
    )
    return HTML(
        widget_html(wid, "lemma2-alpha", alt, initial, body, _TIMES_TEN_JS + _LEMMA2_JS)
    )


_PRUNING_JS = r"""
  var init = JSON.parse(root.dataset.initial), rows = init.rows;
  var L = 0, N = 0;
  rows.forEach(function (r) { L = Math.max(L, r.layer + 1); N = Math.max(N, r.head + 1); });
  var CW = 50, CH = 30, X0 = 62, Y0 = 34, BX = X0 + N * CW + 20, BW = 60;
  function short(c) {
    if (c === null) return '\u221e';
    if (c < 9.95) return c.toFixed(1);
    if (c < 999.5) return c.toFixed(0);
    return timesTen(c, 1);
  }
  el('text', {x: X0, y: 16}, 'heads (grey: pruned), condition number written in each');
  el('text', {x: BX, y: 16}, 'heads kept');
  var cells = [], labels = [], bars = [], counts = [];
  rows.forEach(function (r) {
    var x = X0 + r.head * CW, y = Y0 + r.layer * CH;
    cells.push(el('rect', {x: x + 1, y: y + 1, width: CW - 2, height: CH - 2}));
    labels.push(el('text', {x: x + CW / 2, y: y + CH / 2 + 4, 'text-anchor': 'middle', style: 'font-size:12px'}, short(r.condition)));
  });
  for (var l = 0; l < L; l++) {
    el('text', {x: X0 - 8, y: Y0 + l * CH + CH / 2 + 4, 'text-anchor': 'end'}, 'layer ' + (l + 1));
    bars.push(el('rect', {x: BX, y: Y0 + l * CH + 5, height: CH - 10, fill: init.colour}));
    counts.push(el('text', {y: Y0 + l * CH + CH / 2 + 4}));
  }
  for (var h = 0; h < N; h++) el('text', {x: X0 + h * CW + CW / 2, y: Y0 + L * CH + 16, 'text-anchor': 'middle'}, String(h + 1));
  el('text', {x: X0 + N * CW / 2, y: Y0 + L * CH + 34, 'text-anchor': 'middle'}, 'head');
  var input = root.querySelector('[data-role=threshold]'), out = root.querySelector('[data-role=threshold-value]');
  var readout = root.querySelector('[data-role=readout]');
  function pruned(r, t) {  // App. A.1's rule, as is_degenerate
    var cond = r.condition === null ? Infinity : r.condition;
    return r.lambda_max < init.max_eigenvalue_threshold || cond > t;
  }
  function update() {
    var e = parseFloat(input.value), t = Math.pow(10, e), kept = [], gone = {}, total = 0;
    for (var l = 0; l < L; l++) kept.push(0);
    rows.forEach(function (r, k) {
      var p = pruned(r, t);
      cells[k].setAttribute('fill', p ? '#d9d9d9' : init.colour);
      // a condition number written with ×10ⁿ gets a smaller size, to fit its cell
      var size = r.condition !== null && r.condition >= 999.5 ? 11 : 12;
      labels[k].setAttribute('style', 'font-size:' + size + 'px;fill:' + (p ? '#222' : '#fff'));
      if (p) { (gone[r.layer] = gone[r.layer] || []).push(r.head); total++; } else kept[r.layer]++;
    });
    for (var l2 = 0; l2 < L; l2++) {
      var wdt = BW * kept[l2] / N;
      bars[l2].setAttribute('width', wdt.toFixed(1));
      counts[l2].setAttribute('x', (BX + wdt + 4).toFixed(1));
      counts[l2].textContent = kept[l2] + ' of ' + N;
    }
    var power = String(parseFloat(e.toFixed(2)));  // 5, 1.25: no trailing zeros
    out.innerHTML = readout.querySelector('[data-role=at]').innerHTML =
      '10<sup>' + power + '</sup>';
    input.setAttribute('aria-valuetext', 'condition threshold 10 to the power ' + power);
    readout.setAttribute('data-pruned', JSON.stringify(gone));
    readout.querySelector('[data-role=pruned-count]').textContent = String(total);
    readout.querySelector('[data-role=kept-count]').textContent = String(rows.length - total);
  }
  input.addEventListener('input', update);
  update();
"""


def pruning_threshold_widget(
    rows: Sequence[dict],
    colour: str,
    max_eigenvalue_threshold: float,
    exponent: float = 5.0,
    widget_id: str = "live-pruning-threshold",
    alt: str = "",
):
    """Figure 8.3 as :class:`IPython.display.HTML`: a range input over log₁₀ of the condition
    threshold (:data:`THRESHOLD_EXPONENT_RANGE`), every head of ``rows`` (one per head:
    ``layer``, ``head``, ``lambda_max``, ``condition``, 0-based) in ``colour`` where App. A.1's
    rule keeps it and grey where it prunes it, its condition number written in it, and the heads
    each layer keeps. The largest-eigenvalue threshold stays at ``max_eigenvalue_threshold``.
    Printed: how many heads are pruned and kept; the readout's ``data-pruned`` holds the pruned
    heads ``{layer: [heads]}``."""
    from IPython.display import HTML

    check_range("exponent", exponent, *THRESHOLD_EXPONENT_RANGE)
    if not rows:
        raise ValueError("no heads to draw: rows is empty")
    data = [
        {
            "layer": int(r["layer"]),
            "head": int(r["head"]),
            "lambda_max": float(r["lambda_max"]),
            "condition": None if math.isinf(r["condition"]) else float(r["condition"]),
        }
        for r in rows
    ]
    initial = {
        "rows": data,
        "colour": colour,
        "max_eigenvalue_threshold": float(max_eigenvalue_threshold),
        "exponent": float(exponent),
    }
    wid = escape(widget_id, quote=True)
    body = (
        _slider(wid, "threshold", "condition threshold (log scale)", *THRESHOLD_EXPONENT_RANGE, exponent)
        + '<p class="lw-readout" data-role="readout" aria-live="polite">at '
        '<span data-role="at"></span>: <strong data-role="pruned-count"></strong> heads pruned, '
        '<span data-role="kept-count"></span> kept</p>'
        '<svg viewBox="0 0 640 260" width="640" aria-hidden="true"></svg>'
    )  # fmt: skip
    return HTML(
        widget_html(
            wid, "pruning-threshold", alt, initial, body, _TIMES_TEN_JS + _PRUNING_JS
        )
    )
