"""Live widgets of the book in plain HTML and JavaScript (no precomputed frames, no library, no
network): each is an :class:`IPython.display.HTML` whose inline script draws an SVG and answers
native, keyboard-accessible controls (``<input type="range">`` with a ``<label>``, ``<button>``).

* :func:`head_explorer_widget` (chapter 6): one quadratic head (eq. 9) over a 9×9 grid of keys
  around its query, for any width α (log scale) and any centre Δ, with buttons that jump to the
  telling states of :data:`EXPLORER_PRESETS`. The script computes the softmax of −α‖δ − Δ‖²
  itself, as :func:`head_weights` does in Python, and prints, one line each with its meaning in
  words, the weight on the target key q + round(Δ), the window mass and the distance to a
  one-tap convolution.
* :func:`lemma1_head_picker` (chapter 3): pick one of the K² heads of Lemma 1 and see the key it
  attends to and the kernel slice its matrix carries.
* :func:`sortable_table_script` (chapter 17): makes a table's column headers sort it, by click or
  by keyboard (each header text is a ``<button>``).

The numbers each widget starts with are written into its HTML (``data-initial``), computed here in
Python, so that a test can compare them with an independent computation and a browser check with
what the script prints. The ``text/plain`` part of every output is IPython's fixed placeholder, so
nbval compares nothing that depends on the machine.
"""

from __future__ import annotations

import json
import math
import re
from html import escape
from typing import NamedTuple, Optional, Sequence, Tuple

import numpy as np

from ..experiments.claims import ONE_HOT
from .shared.head_state import HeadState, head_state_probabilities
from .shared.live_kit import CONTROLS_CSS, DARK_CSS, check_range, live_script, range_row

__all__ = [
    "EXPLORER_ALPHA_RANGE",
    "EXPLORER_DELTA_RANGE",
    "EXPLORER_PRESETS",
    "ExplorerPreset",
    "explorer_preset",
    "head_weights",
    "target_key",
    "target_weight",
    "head_explorer_widget",
    "lemma1_head_picker",
    "sortable_table_script",
    "sort_key",
    "VERDICT_SORT_ORDER",
]

#: α from 0.1 to 100 on the explorer's log-scale slider (its value is log₁₀ α).
EXPLORER_ALPHA_RANGE = (0.1, 100.0)
#: Each centre coordinate Δ₁, Δ₂ from −3 to 3 (the 9×9 grid reaches ±4 around the query).
EXPLORER_DELTA_RANGE = (-3.0, 3.0)
#: The explorer's grid of keys and its query (the centre pixel): key offsets δ ∈ {−4, …, 4}².
EXPLORER_GRID = (9, 9)
EXPLORER_QUERY = (4, 4)


class ExplorerPreset(NamedTuple):
    """A button of the head explorer: it sets the sliders to Δ and log₁₀ α (on their steps)."""

    key: str
    label: str
    delta: Tuple[float, float]
    log_alpha: float

    @property
    def alpha(self) -> float:
        """The width α the α slider holds at this preset: 10 ** log_alpha."""
        return 10.0**self.log_alpha


#: The explorer's buttons, each a telling state named by its label: a wide blur, a nearly
#: one-hot head on a tap, a centre half way between two keys, a centre outside the 3×3 kernel.
EXPLORER_PRESETS = (
    ExplorerPreset("wide", "Wide blur (α ≈ 0.3)", (0.0, 0.0), -0.52),
    ExplorerPreset("one-hot", "One tap (α = 10)", (1.0, -1.0), 1.0),
    ExplorerPreset("between", "Between two keys", (0.5, 0.0), 1.0),
    ExplorerPreset("far", "Outside the kernel", (3.0, 3.0), 1.0),
)


def explorer_preset(key: str) -> ExplorerPreset:
    """The preset of :data:`EXPLORER_PRESETS` called ``key``."""
    for p in EXPLORER_PRESETS:
        if p.key == key:
            return p
    raise KeyError(f"no explorer preset {key!r}: {[p.key for p in EXPLORER_PRESETS]}")


def head_weights(
    alpha: float,
    delta: Tuple[float, float],
    query: Tuple[int, int] = EXPLORER_QUERY,
    grid: Tuple[int, int] = EXPLORER_GRID,
) -> np.ndarray:
    """The quadratic head's attention weights over the ``grid`` of keys for ``query``: the
    softmax over the keys k of −α‖(k − q) − Δ‖² (eq. 9 without its constant), from the package's
    own encoding (:func:`~attnconv.chapters.shared.head_state.head_state_probabilities`),
    float64, shape ``grid``."""
    state = HeadState(delta=delta, alpha=alpha, query=query, grid=grid, kernel_size=3)
    return head_state_probabilities(state).numpy()


def target_key(
    delta: Tuple[float, float], query: Tuple[int, int] = EXPLORER_QUERY
) -> Tuple[int, int]:
    """The key q + round(Δ) (halves rounded up, as ``Math.floor(d + 0.5)`` in the widget)."""
    return tuple(int(q + math.floor(d + 0.5)) for q, d in zip(query, delta))


def target_weight(
    alpha: float,
    delta: Tuple[float, float],
    query: Tuple[int, int] = EXPLORER_QUERY,
    grid: Tuple[int, int] = EXPLORER_GRID,
) -> float:
    """The head's weight on its target key q + round(Δ) (0 when that key is off the grid)."""
    t = target_key(delta, query)
    if not (0 <= t[0] < grid[0] and 0 <= t[1] < grid[1]):
        return 0.0
    return float(head_weights(alpha, delta, query, grid)[t])


_EXPLORER_JS = r"""
  var init = JSON.parse(root.dataset.initial);
  var H = init.grid[0], W = init.grid[1], Q = init.query, R = 1;  // 3x3 window
  var C = 30, K = 50, X0 = 34, Y0 = 26, KX = X0 + W * C + 60;
  el('text', {x: X0, y: 16}, 'attention over the ' + H + '\u00d7' + W + ' keys');
  el('text', {x: KX, y: 16}, '3\u00d73 kernel (shifts \u03b4)');
  var cells = [], kcells = [], ktext = [];
  for (var i = 0; i < H; i++) {
    el('text', {x: X0 - 6, y: Y0 + i * C + C / 2 + 4, 'text-anchor': 'end'}, fmt(i - Q[0], 0));
    for (var j = 0; j < W; j++) {
      if (i === 0) el('text', {x: X0 + j * C + C / 2, y: Y0 + H * C + 16, 'text-anchor': 'middle'}, fmt(j - Q[1], 0));
      el('rect', {x: X0 + j * C, y: Y0 + i * C, width: C, height: C, fill: 'none',
                  stroke: 'currentColor', 'stroke-opacity': 0.15});
      cells.push(el('rect', {x: X0 + j * C + 1, y: Y0 + i * C + 1, width: C - 2, height: C - 2,
                             fill: '#1f77b4'}));
    }
  }
  el('text', {x: X0 + W * C / 2, y: Y0 + H * C + 34, 'text-anchor': 'middle'}, 'key offset \u03b4\u2082 (column); rows: \u03b4\u2081');
  el('rect', {x: X0 + Q[1] * C, y: Y0 + Q[0] * C, width: C, height: C, fill: 'none',
              stroke: '#d62728', 'stroke-width': 2.5});
  el('rect', {x: X0 + (Q[1] - R) * C, y: Y0 + (Q[0] - R) * C, width: 3 * C, height: 3 * C,
              fill: 'none', stroke: '#2ca02c', 'stroke-width': 2, 'stroke-dasharray': '5 3'});
  var target = el('rect', {width: C, height: C, fill: 'none', stroke: '#ff7f0e', 'stroke-width': 2.5});
  var cross = el('path', {stroke: '#ff7f0e', 'stroke-width': 2.5, fill: 'none'});
  for (var a = 0; a < 3; a++) for (var b = 0; b < 3; b++) {
    el('rect', {x: KX + b * K, y: Y0 + a * K, width: K, height: K, fill: 'none',
                stroke: 'currentColor', 'stroke-opacity': 0.3});
    kcells.push(el('rect', {x: KX + b * K + 1, y: Y0 + a * K + 1, width: K - 2, height: K - 2, fill: '#2ca02c'}));
    ktext.push(el('text', {x: KX + b * K + K / 2, y: Y0 + a * K + K / 2 + 5, 'text-anchor': 'middle'}, ''));
    if (a === 2) el('text', {x: KX + b * K + K / 2, y: Y0 + 3 * K + 16, 'text-anchor': 'middle'}, fmt(b - R, 0));
  }
  for (var a2 = 0; a2 < 3; a2++) el('text', {x: KX - 6, y: Y0 + a2 * K + K / 2 + 4, 'text-anchor': 'end'}, fmt(a2 - R, 0));
  var inputs = {alpha: root.querySelector('[data-role=alpha]'), d1: root.querySelector('[data-role=delta1]'),
                d2: root.querySelector('[data-role=delta2]')};
  var outs = {alpha: root.querySelector('[data-role=alpha-value]'), d1: root.querySelector('[data-role=delta1-value]'),
              d2: root.querySelector('[data-role=delta2-value]')};
  var weightOut = root.querySelector('[data-role=target-weight]');
  var readout = root.querySelector('[data-role=readout]');
  function fmt(v, d) { return v.toFixed(d).replace('-', '\u2212'); }
  function weights(alpha, d1, d2) {  // softmax over the keys of -alpha * |(k - q) - Delta|^2
    var s = [];
    for (var i = 0; i < H; i++) for (var j = 0; j < W; j++) {
      var u = i - Q[0] - d1, v = j - Q[1] - d2;
      s.push(-alpha * (u * u + v * v));
    }
    return softmax(s);
  }
  function update() {
    var alpha = Math.pow(10, parseFloat(inputs.alpha.value));
    var d1 = parseFloat(inputs.d1.value), d2 = parseFloat(inputs.d2.value);
    var p = weights(alpha, d1, d2), top = Math.max.apply(null, p.concat([0.02]));
    for (var k = 0; k < p.length; k++) cells[k].setAttribute('fill-opacity', Math.min(1, p[k] / top).toFixed(4));
    var ti = Q[0] + Math.floor(d1 + 0.5), tj = Q[1] + Math.floor(d2 + 0.5);
    var on = ti >= 0 && ti < H && tj >= 0 && tj < W, pt = on ? p[ti * W + tj] : 0, mass = 0;
    for (var a = 0; a < 3; a++) for (var b = 0; b < 3; b++) {
      var v = p[(Q[0] - R + a) * W + (Q[1] - R + b)];
      mass += v;
      kcells[a * 3 + b].setAttribute('fill-opacity', v.toFixed(4));
      ktext[a * 3 + b].textContent = v.toFixed(2);
      ktext[a * 3 + b].setAttribute('style', v > 0.55 ? 'fill:#fff' : '');
    }
    target.setAttribute('x', X0 + tj * C); target.setAttribute('y', Y0 + ti * C);
    target.setAttribute('visibility', on ? 'visible' : 'hidden');
    var cx = X0 + (Q[1] + d2 + 0.5) * C, cy = Y0 + (Q[0] + d1 + 0.5) * C;
    cross.setAttribute('d', 'M' + (cx - 6) + ' ' + (cy - 6) + 'L' + (cx + 6) + ' ' + (cy + 6) +
                            'M' + (cx - 6) + ' ' + (cy + 6) + 'L' + (cx + 6) + ' ' + (cy - 6));
    var shown = alpha < 1 ? alpha.toFixed(3) : alpha < 10 ? alpha.toFixed(2) : alpha.toFixed(1);
    outs.alpha.value = shown; outs.d1.value = fmt(d1, 2); outs.d2.value = fmt(d2, 2);
    inputs.alpha.setAttribute('aria-valuetext', '\u03b1 = ' + shown);
    inputs.d1.setAttribute('aria-valuetext', '\u0394\u2081 = ' + fmt(d1, 2));
    inputs.d2.setAttribute('aria-valuetext', '\u0394\u2082 = ' + fmt(d2, 2));
    weightOut.textContent = pt.toFixed(6);
    readout.querySelector('[data-role=target]').textContent =
      '(' + fmt(ti - Q[0], 0) + ', ' + fmt(tj - Q[1], 0) + ')';
    readout.querySelector('[data-role=target-meaning]').textContent = '\u2014 ' + (
      pt > init.one_hot ? 'nearly one-hot (over ' + init.one_hot + '): the head reads this one key'
      : pt >= 0.5 ? 'most of the weight, not one-hot: a blur around this key'
      : 'under half: the weight is shared with other keys');
    readout.querySelector('[data-role=window-mass]').textContent = mass.toFixed(4);
    readout.querySelector('[data-role=window-meaning]').textContent = '\u2014 ' + (
      mass >= 0.99 ? 'nearly all: the head is a 3\u00d73 kernel'
      : mass < 0.01 ? 'nearly none: the 3\u00d73 kernel is empty'
      : 'the rest comes from keys outside the window');
    var inKernel = Math.abs(ti - Q[0]) <= R && Math.abs(tj - Q[1]) <= R;
    var dist = on ? 2 * (1 - pt) : 1;
    readout.querySelector('[data-role=distance]').textContent = !inKernel
      ? 'the target is outside the 3\u00d73 kernel: no one-tap 3\u00d73 convolution is near'
      : 'distance to a one-tap convolution: ' + small(dist) + ' \u2014 ' + (dist < 0.01
        ? 'near 0: the head is one tap of the kernel'
        : '0 is one tap, 2 the farthest a head can be');
  }
  function small(v) {  // 0.52; 3.6\u00d710\u207b\u2074 below 0.01
    if (v >= 0.01 || v === 0) return v.toFixed(2);
    var e = v.toExponential(1).split('e'), sup = '\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079';
    var p = e[1].replace('+', '').replace('-', '\u207b');
    return e[0] + '\u00d710' + p.replace(/[0-9]/g, function (c) { return sup[+c]; });
  }
  for (var n in inputs) inputs[n].addEventListener('input', update);
  root.querySelectorAll('button[data-preset]').forEach(function (b) {
    b.addEventListener('click', function () {
      var p = init.presets[+b.dataset.preset];
      inputs.alpha.value = String(p.log_alpha);
      inputs.d1.value = String(p.delta[0]); inputs.d2.value = String(p.delta[1]);
      update();
    });
  });
  update();
"""


#: The preset buttons in a row below the sliders, and the readout's lines (each starts with a
#: capital on the page; the script writes them in lower case).
_PRESETS_CSS = """
#{id} .lw-presets {{ display: flex; flex-wrap: wrap; gap: 4px 6px; margin: 8px 0 4px;
  align-items: center; }}
#{id} .lw-presets button {{ font: inherit; font-size: 13px; padding: 2px 8px; color: inherit;
  background: transparent; border: 1px solid currentColor; border-radius: 4px; cursor: pointer; }}
#{id} .lw-presets button:focus-visible {{ outline: 2px solid #ff7f0e; outline-offset: 2px; }}
#{id} .lw-readout p {{ margin: 0 0 2px; }}
#{id} .lw-readout p::first-letter {{ text-transform: uppercase; }}
"""


def head_explorer_widget(
    initial: Tuple[float, float, float] = (1.0, -1.0, 10.0),
    widget_id: str = "live-head-explorer",
    alt: str = "",
    max_width: int = 640,
):
    """The live head explorer of chapter 6 as :class:`IPython.display.HTML`: three labelled range
    inputs (α on a log scale, :data:`EXPLORER_ALPHA_RANGE`; Δ₁ and Δ₂,
    :data:`EXPLORER_DELTA_RANGE`), the head's weights over the 9×9 keys (query: red; target
    q + round(Δ): orange square; centre q + Δ: orange cross; 3×3 window: green dashed), its 3×3
    kernel, a row of buttons, one per :data:`EXPLORER_PRESETS`, that set the three sliders, and
    three printed lines, each with its meaning in words: the weight on the target key
    (6 decimals), the window mass (4 decimals) and the distance to a one-tap convolution
    2(1 − p_target) (two significant digits; a sentence instead when the target lies outside the
    3×3 kernel).

    ``initial`` is (Δ₁, Δ₂, α). The wrapping ``<div>`` carries ``data-initial``: the grid, the
    query, α, Δ, the target weight that :func:`target_weight` computes for them and the
    presets (Δ and log₁₀ α)."""
    from IPython.display import HTML

    d1, d2, alpha = (float(v) for v in initial)
    lo, hi = EXPLORER_ALPHA_RANGE
    check_range("alpha", alpha, lo, hi)
    for name, d in (("delta1", d1), ("delta2", d2)):
        check_range(name, d, *EXPLORER_DELTA_RANGE)
    log_alpha = round(math.log10(alpha), 2)
    if (
        abs(10**log_alpha - alpha) > 1e-9 * alpha
        or round(d1, 2) != d1
        or round(d2, 2) != d2
    ):
        raise ValueError(f"initial {initial} is not on the sliders' steps")
    initial_data = {
        "grid": list(EXPLORER_GRID),
        "query": list(EXPLORER_QUERY),
        "alpha": alpha,
        "delta": [d1, d2],
        "target_weight": target_weight(alpha, (d1, d2)),
        "presets": [
            {"key": p.key, "delta": list(p.delta), "log_alpha": p.log_alpha}
            for p in EXPLORER_PRESETS
        ],
        "one_hot": ONE_HOT,  # the glossary's "nearly one-hot": more than this on one key
    }
    buttons = "".join(
        f'<button type="button" data-preset="{i}" data-key="{escape(p.key)}">'
        f"{escape(p.label)}</button>"
        for i, p in enumerate(EXPLORER_PRESETS)
    )
    wid = escape(widget_id, quote=True)
    t = target_key((d1, d2))
    shift = f"({t[0] - EXPLORER_QUERY[0]}, {t[1] - EXPLORER_QUERY[1]})".replace(
        "-", "−"
    )
    dl, dh = EXPLORER_DELTA_RANGE
    rows = "".join(
        (
            range_row(wid, "alpha", "width α (log scale)", math.log10(lo), math.log10(hi), log_alpha),
            range_row(wid, "delta1", "centre Δ₁ (rows)", dl, dh, d1),
            range_row(wid, "delta2", "centre Δ₂ (columns)", dl, dh, d2),
        )
    )  # fmt: skip
    role = (
        f' role="group" aria-label="{escape(alt, quote=True)}"'
        if alt
        else ' role="group"'
    )
    html = (
        f'<div id="{wid}" class="live-widget" data-live-widget="head-explorer"{role} '
        f"data-initial='{escape(json.dumps(initial_data), quote=True)}'>"
        f"<style>{CONTROLS_CSS.format(id=wid, width=int(max_width))}"
        f"{_PRESETS_CSS.format(id=wid)}{DARK_CSS.format(id=wid)}</style>"
        f'<div class="lw-controls">{rows}</div>'
        f'<div class="lw-presets" role="group" aria-label="presets"><span>Try:</span>'
        f"{buttons}</div>"
        f'<div id="{wid}-hint" class="lw-readout" data-role="readout" aria-live="polite">'
        f'<p>on the target key q + <span data-role="target">{shift}</span>: '
        f'<strong data-role="target-weight">{initial_data["target_weight"]:.6f}</strong> '
        f'<span data-role="target-meaning"></span></p>'
        f'<p>in the 3×3 window: <span data-role="window-mass"></span> '
        f'<span data-role="window-meaning"></span></p>'
        f'<p><span data-role="distance"></span></p></div>'
        f'<svg viewBox="0 0 620 345" width="620" aria-hidden="true"></svg>'
        f"<script>{live_script(_EXPLORER_JS, widget_id)}</script></div>"
    )
    return HTML(html)


def _array(x) -> np.ndarray:
    """``x`` (a tensor, even one that requires grad, or a nested list) as a float64 array."""
    detach = getattr(x, "detach", None)
    return np.asarray(detach().cpu() if detach else x, dtype=np.float64)


_PICKER_JS = r"""
  var data = JSON.parse(root.dataset.initial);
  var buttons = root.querySelectorAll('button[data-head]');
  var keys = root.querySelectorAll('[data-key]');
  var readout = root.querySelector('[data-role=readout]');
  var body = root.querySelector('[data-role=matrix]');
  function fmt(v) { return (v < 0 ? '\u2212' : '') + Math.abs(v).toFixed(3); }
  var OFF_KEY_TOLERANCE = 1e-6;
  var live = data.live, slider = root.querySelector('[data-role=alpha]');
  var alphaOut = root.querySelector('[data-role=alpha-value]'), current = data.start;
  // with a width slider: the head's softmax over the image's keys of -alpha |(k - q) - Delta|^2
  // (eq. 9), computed here; keys is the (2r + 3)^2 zoom around the query
  function weights(shift) {
    var a = Math.pow(10, parseFloat(slider.value)), H = live.grid[0], W = live.grid[1];
    var q = live.query, s = [], m = -Infinity, z = 0, out = {};
    for (var i = 0; i < H; i++) for (var j = 0; j < W; j++) {
      var u = i - q[0] - shift[0], v = j - q[1] - shift[1], x = -a * (u * u + v * v);
      s.push(x); if (x > m) m = x;
    }
    for (var t = 0; t < s.length; t++) z += Math.exp(s[t] - m);
    keys.forEach(function (k) {
      var d = k.dataset.key.split(',').map(Number), i = q[0] + d[0], j = q[1] + d[1];
      out[k.dataset.key] = (i >= 0 && i < H && j >= 0 && j < W) ? Math.exp(s[i * W + j] - m) / z : 0;
    });
    alphaOut.value = a < 1 ? a.toFixed(3) : a < 10 ? a.toFixed(2) : a.toFixed(1);
    readout.querySelector('[data-role=alpha-shown]').textContent = alphaOut.value;
    slider.setAttribute('aria-valuetext', '\u03b1 = ' + alphaOut.value);
    return out;
  }
  function pick(h) {
    current = h;
    var head = data.heads[h], w = live ? weights(head.shift) : null;
    if (w) head = Object.assign({}, head, {weight: w[head.shift.join(',')]});
    buttons.forEach(function (b, i) {
      b.setAttribute('aria-pressed', i === h ? 'true' : 'false');
      b.tabIndex = i === h ? 0 : -1;
    });
    keys.forEach(function (k) {
      var on = k.dataset.key === head.shift.join(',');
      k.classList.toggle('lw-on', on && !w);
      k.textContent = on ? head.weight.toFixed(3) : '';
      if (w) {  // every key shaded by its weight, the target's written in
        var v = w[k.dataset.key];
        k.style.background = 'rgba(31, 119, 180, ' + v.toFixed(4) + ')';
        k.style.color = v > 0.55 ? '#fff' : '';
      }
    });
    readout.querySelector('[data-role=head]').textContent = String(h + 1);
    readout.querySelector('[data-role=shift]').textContent =
      '(' + head.shift.map(function (v) { return String(v).replace('-', '\u2212'); }).join(', ') + ')';
    readout.querySelector('[data-role=weight]').textContent = head.weight.toFixed(6);
    readout.querySelector('[data-role=gap]').textContent = head.gap === 0 ? '0' : head.gap.toExponential(1);
    // the matrix is exact at any width; the layer is the convolution only once the head is
    // one-hot: what its other keys hold says how far it is
    var off = 1 - head.weight;
    readout.querySelector('[data-role=off-key]').textContent = off < OFF_KEY_TOLERANCE
      ? 'its other keys hold less than 10\u207b\u2076 of its attention, so this head is the convolution\u2019s tap.'
      : 'its other keys hold ' + off.toFixed(3) + ' of its attention, so the layer is not yet the convolution.';
    var cells = body.querySelectorAll('[data-cell]');
    head.matrix.forEach(function (row, i) {
      row.forEach(function (v, j) { cells[i * row.length + j].textContent = fmt(v); });
    });
  }
  // the heads as one grid of K × K buttons: one Tab stop (the pressed head), the arrow keys
  // move between heads in the grid, Home and End to the first and last
  var k = Math.round(Math.sqrt(buttons.length));
  function move(i, key) {
    var row = Math.floor(i / k), col = i % k;
    if (key === 'ArrowLeft') return col > 0 ? i - 1 : i;
    if (key === 'ArrowRight') return col < k - 1 ? i + 1 : i;
    if (key === 'ArrowUp') return row > 0 ? i - k : i;
    if (key === 'ArrowDown') return row < k - 1 ? i + k : i;
    if (key === 'Home') return 0;
    if (key === 'End') return buttons.length - 1;
    return null;
  }
  buttons.forEach(function (b, i) {
    b.addEventListener('click', function () { pick(i); });
    b.addEventListener('keydown', function (e) {
      var to = move(i, e.key);
      if (to === null) return;
      e.preventDefault();
      pick(to);
      buttons[to].focus();
    });
  });
  if (live) slider.addEventListener('input', function () { pick(current); });
  pick(data.start);
"""

_PICKER_CSS = """
#{id} {{ max-width: 700px; font-size: 14px; line-height: 1.4; }}
#{id} .lw-row {{ display: flex; flex-wrap: wrap; gap: 28px; align-items: flex-start; margin-top: 6px; }}
#{id} .lw-heads {{ display: grid; grid-template-columns: repeat({k}, 4.6em); gap: 4px; }}
#{id} .lw-heads button {{ font: inherit; font-size: 13px; padding: 4px 0; color: inherit;
  background: transparent; border: 1px solid currentColor; border-radius: 4px; cursor: pointer; }}
#{id} .lw-heads button[aria-pressed=true] {{ background: #1f77b4; border-color: #1f77b4; color: #fff; }}
#{id} .lw-heads button:focus-visible {{ outline: 2px solid #ff7f0e; outline-offset: 2px; }}
#{id} .lw-keys {{ display: grid; grid-template-columns: repeat({n}, 2.6em); }}
#{id} .lw-keys span {{ height: 2.6em; display: flex; align-items: center; justify-content: center;
  border: 1px solid rgba(128, 128, 128, 0.35); font-size: 11.5px; }}
#{id} .lw-keys span.lw-q {{ outline: 2.5px solid #d62728; outline-offset: -3px; }}
#{id} .lw-keys span.lw-on {{ background: #1f77b4; color: #fff; }}
#{id} .lw-matrix {{ display: grid; grid-template-columns: repeat({cols}, auto); gap: 2px 16px;
  font-variant-numeric: tabular-nums; text-align: right; }}
#{id} .lw-matrix b {{ font-weight: 600; }}
#{id} .lw-caption {{ font-size: 13px; margin-bottom: 2px; }}
#{id} .lw-controls {{ display: grid; grid-template-columns: max-content 1fr 5.5em;
  gap: 4px 10px; align-items: center; max-width: 480px; margin-bottom: 4px; }}
#{id} input[type=range] {{ width: 100%; accent-color: #1f77b4; }}
#{id} input[type=range]:focus-visible {{ outline: 2px solid #ff7f0e; outline-offset: 2px; }}
#{id} output {{ font-variant-numeric: tabular-nums; }}
"""


def lemma1_head_picker(
    shifts: Sequence[Sequence[int]],
    matrices,
    kernel_slices,
    target_weights: Sequence[float],
    widget_id: str = "lemma1-head-picker",
    in_names: Sequence[str] = ("R", "G", "B"),
    out_names: Sequence[str] = ("∂col", "∂row", "blur"),
    start: int = 0,
    alpha: Optional[float] = None,
    grid: Optional[Tuple[int, int]] = None,
    query: Optional[Tuple[int, int]] = None,
):
    """Lemma 1, one head at a time, as :class:`IPython.display.HTML`: a button per head (its
    number h and shift Δ_h; click, or Tab to the grid and the arrow keys, Home and End), the keys around the query with the one
    head h attends to filled in (its attention weight written in), and the matrix W^(h)
    ``(D_in, D_out)`` it carries, with its largest difference from the convolution's kernel slice
    at Δ_h. ``shifts`` (K², 2), ``matrices`` and ``kernel_slices`` (K², D_in, D_out),
    ``target_weights`` each head's attention on its key; the data are written into
    ``data-initial``.

    With ``alpha``, the heads' width, and the ``grid`` of keys and the ``query`` (in that grid's
    coordinates) of the layer the heads come from, a log-scale slider over α
    (:data:`EXPLORER_ALPHA_RANGE`, starting at α rounded to its steps) recomputes the pressed
    head's attention in the page, as :func:`head_weights` does: the zoom's keys are shaded by
    their weights and the target's is written in."""
    from IPython.display import HTML

    shifts = [[int(a), int(b)] for a, b in shifts]
    m, s = _array(matrices), _array(kernel_slices)
    n_heads = len(shifts)
    k = math.isqrt(n_heads)
    if k * k != n_heads or m.shape[0] != n_heads or s.shape != m.shape:
        raise ValueError(
            f"need K² shifts, matrices and slices, got {n_heads}, {m.shape}, {s.shape}"
        )
    if len(target_weights) != n_heads or m.shape[1:] != (len(in_names), len(out_names)):
        raise ValueError("target_weights or channel names do not match the heads")
    r = k // 2
    zoom = r + 1  # keys within r + 1 of the query: the window and one ring beyond it
    data = {
        "start": int(start),
        "heads": [
            {
                "shift": sh,
                "weight": float(w),
                "matrix": m[h].tolist(),
                "gap": float(np.abs(m[h] - s[h]).max()),
            }
            for h, (sh, w) in enumerate(zip(shifts, target_weights))
        ],
    }
    if alpha is not None:
        if grid is None or query is None:
            raise ValueError("a live picker needs the grid of keys and the query")
        lo, hi = EXPLORER_ALPHA_RANGE
        check_range("alpha", alpha, lo, hi)
        data["live"] = {
            "grid": [int(g) for g in grid],
            "query": [int(q) for q in query],
        }
    wid = escape(widget_id, quote=True)

    def signed(v: int) -> str:
        return "0" if v == 0 else f"{v:+d}".replace("-", "−")

    buttons = "".join(
        f'<button type="button" data-head="{h}" aria-pressed="false" '
        f'aria-label="head {h + 1}, shift ({a}, {b})">h{h + 1}<br>'
        f"({signed(a)}, {signed(b)})</button>"
        for h, (a, b) in enumerate(shifts)
    )
    query_class = ' class="lw-q"'
    keys = "".join(
        f'<span data-key="{a},{b}"{query_class if (a, b) == (0, 0) else ""}></span>'
        for a in range(-zoom, zoom + 1)
        for b in range(-zoom, zoom + 1)
    )
    # a grid of spans, not a <table>: the book numbers and captions its tables
    header = "<span></span>" + "".join(f"<b>{escape(o)}</b>" for o in out_names)
    body = "".join(
        f"<b>{escape(i)}</b>" + "<span data-cell></span>" * len(out_names)
        for i in in_names
    )
    slider = (
        '<div class="lw-controls">'
        + range_row(
            wid,
            "alpha",
            "width α (log scale)",
            math.log10(EXPLORER_ALPHA_RANGE[0]),
            math.log10(EXPLORER_ALPHA_RANGE[1]),
            round(math.log10(alpha), 2),
        )
        + "</div>"
        if alpha is not None
        else ""
    )
    html = (
        f'<div id="{wid}" class="live-widget" data-live-widget="lemma1-head-picker" role="group" '
        f'aria-label="Pick one of the {n_heads} heads of Lemma 1" '
        f"data-initial='{escape(json.dumps(data), quote=True)}'>"
        f"<style>{_PICKER_CSS.format(id=wid, k=k, n=2 * zoom + 1, cols=len(out_names) + 1)}{DARK_CSS.format(id=wid)}</style>"
        f"{slider}"
        f'<div class="lw-row"><div><div class="lw-caption">the {n_heads} heads (by shift Δ)</div>'
        f'<div class="lw-heads">{buttons}</div></div>'
        f'<div><div class="lw-caption">keys around the query (red)</div>'
        f'<div class="lw-keys" aria-hidden="true">{keys}</div></div>'
        f'<div><div class="lw-caption">its matrix W<sup>(h)</sup> (inputs × outputs)</div>'
        f'<div class="lw-matrix" data-role="matrix">{header}{body}</div></div></div>'
        f'<p class="lw-readout" data-role="readout" aria-live="polite">head '
        f'<span data-role="head"></span> attends to the key at shift '
        f'<span data-role="shift"></span> with weight <span data-role="weight"></span>'
        + (' at α = <span data-role="alpha-shown"></span>' if alpha is not None else "")
        + ". Its matrix is the kernel slice at that shift (largest difference "
        f'<span data-role="gap"></span>); <span data-role="off-key"></span></p>'
        f"<script>{live_script(_PICKER_JS, widget_id)}</script></div>"
    )
    return HTML(html)


_SORT_JS = r"""
(function () {
  function setup() {
    var host = document.getElementById(%(id)s);
    if (!host) return;
    var table = host.tagName === 'TABLE' ? host : host.querySelector('table');
    if (!table || table.dataset.sortable) return;
    table.dataset.sortable = '1';
    table.classList.add('sortable-table');
    var body = table.tBodies[0], heads = table.tHead ? table.tHead.rows[0].cells : [];
    var original = Array.prototype.slice.call(body.rows);
    // a cell sorts by its data-sort value (its own or its one marked child's), else its text
    function text(row, c) {
      var cell = row.cells[c];
      if (!cell) return '';
      var s = cell.getAttribute('data-sort');
      if (s === null) { var e = cell.querySelector('[data-sort]'); s = e ? e.getAttribute('data-sort') : cell.textContent; }
      return s.replace(/\s+/g, ' ').trim();
    }
    // the key: a verdict's rank, else a leading number, else the text (after every number)
    var RANKS = %(ranks)s;
    var NUMBER = /^[+\-\u2212]?\d[\d,]*(?:\.\d+)?(?:[eE][+\-\u2212]?\d+)?/;
    function key(t) {
      var low = t.toLowerCase();
      for (var i = 0; i < RANKS.length; i++) {
        var w = RANKS[i][0];
        if (low.indexOf(w) === 0 && !/[a-z0-9]/.test(low.charAt(w.length))) return [0, RANKS[i][1]];
      }
      var m = NUMBER.exec(t);
      if (m) return [0, parseFloat(m[0].replace(/,/g, '').replace(/\u2212/g, '-'))];
      return [1, t];
    }
    function compare(x, y) {
      if (x[0] !== y[0]) return x[0] - y[0];
      if (x[0] === 0) return x[1] - y[1];
      return x[1].localeCompare(y[1], undefined, {numeric: true, sensitivity: 'base'});
    }
    function sortBy(c, button) {
      var th = heads[c], dir = th.getAttribute('aria-sort') === 'ascending' ? 'descending' : 'ascending';
      for (var i = 0; i < heads.length; i++) heads[i].setAttribute('aria-sort', 'none');
      th.setAttribute('aria-sort', dir);
      var keys = original.map(function (r) { return key(text(r, c)); });
      var order = original.map(function (r, i) { return i; }).sort(function (a, b) {
        var x = compare(keys[a], keys[b]);
        return (dir === 'ascending' ? x : -x) || a - b;  // ties keep the table's order
      });
      var rows = order.map(function (i) { return original[i]; });
      rows.forEach(function (r, i) {
        body.appendChild(r);
        if (/\brow-(odd|even)\b/.test(r.className))  // the theme's stripes follow the new order
          r.className = r.className.replace(/\brow-(odd|even)\b/, i %% 2 ? 'row-odd' : 'row-even');
      });
      button.setAttribute('aria-label', 'sort by ' + button.dataset.name + ', now ' + dir);
    }
    Array.prototype.forEach.call(heads, function (th, c) {
      th.setAttribute('aria-sort', 'none');  // sortable, not sorted yet: the header shows it
      var b = document.createElement('button');
      b.type = 'button';
      b.className = 'sort-button';
      b.dataset.name = th.textContent.trim();
      b.setAttribute('aria-label', 'sort by ' + b.dataset.name);
      var holder = th.children.length === 1 && th.firstElementChild.tagName === 'P' ? th.firstElementChild : th;
      while (holder.firstChild) b.appendChild(holder.firstChild);
      holder.appendChild(b);
      b.addEventListener('click', function () { sortBy(c, b); });
    });
    var style = document.createElement('style');
    style.textContent = 'table.sortable-table .sort-button { all: unset; cursor: pointer; }' +
      ' table.sortable-table .sort-button:focus-visible { outline: 2px solid #ff7f0e; outline-offset: 2px; }' +
      ' table.sortable-table th[aria-sort=none] .sort-button::after { content: " \u21c5"; font-size: 0.8em; opacity: 0.55; }' +
      ' table.sortable-table th[aria-sort=ascending] .sort-button::after { content: " \u25b2"; font-size: 0.8em; }' +
      ' table.sortable-table th[aria-sort=descending] .sort-button::after { content: " \u25bc"; font-size: 0.8em; }';
    document.head.appendChild(style);
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', setup);
  else setup();
})();
"""


#: The verdict column's order when sorted ascending (not the alphabet's).
VERDICT_SORT_ORDER = ("reproduced", "inconclusive", "not reproduced")
#: Each verdict word with its rank; "not reproduced" is tried before "reproduced".
_RANKS = sorted(
    ([w, i] for i, w in enumerate(VERDICT_SORT_ORDER)), key=lambda p: -len(p[0])
)
_LEADING_NUMBER = re.compile(r"[+\-\u2212]?\d[\d,]*(?:\.\d+)?(?:[eE][+\-\u2212]?\d+)?")


def sort_key(text: str) -> Tuple[int, float, str]:
    """The key a sortable table sorts a cell by (what the script computes, for the tests): a
    cell starting with a verdict sorts by :data:`VERDICT_SORT_ORDER`; one starting with a
    number (sign, thousands commas, "−") by that number, whatever unit follows; any other by its
    text, after all of those."""
    t = " ".join(text.split())
    low = t.lower()
    for word, rank in _RANKS:
        if re.match(re.escape(word) + r"(?![a-z0-9])", low):
            return (0, float(rank), "")
    m = _LEADING_NUMBER.match(t)
    if m:
        return (0, float(m.group().replace(",", "").replace("\u2212", "-")), "")
    return (1, 0.0, t)


def sortable_table_script(table_id: str):
    """A script (:class:`IPython.display.HTML`) that makes the table with HTML id ``table_id`` (or
    the first table inside that element) sortable: each column header's content moves into a
    ``<button>`` (focusable; Enter or Space activates it), and a click sorts the body rows by
    that column (by :func:`sort_key` of each cell's ``data-sort`` value or text: verdicts in
    :data:`VERDICT_SORT_ORDER`, leading numbers as numbers whatever their unit), ascending, then
    descending; ties keep the table's order. Every header carries ``aria-sort`` ("none" and a
    ⇅ mark until it sorts the table, then "ascending" ▲ or "descending" ▼)."""
    from IPython.display import HTML

    return HTML(
        f'<script data-sortable-table="{escape(table_id, quote=True)}">'
        f"{_SORT_JS % {'id': json.dumps(table_id), 'ranks': json.dumps(_RANKS)}}</script>"
    )
