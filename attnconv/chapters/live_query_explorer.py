"""Chapter 7b's query explorer as live HTML and JavaScript: pick a layer and a query token (by
clicking the image, or with two sliders), and see what each Gaussian head of that layer attends to
from it; with several test images, buttons pick the image too. The maps are computed in the page from the heads' saved centres Δ_h and
inverse covariances Σ_h⁻¹ (the softmax over the keys of −½ (δ − Δ_h)ᵀ Σ_h⁻¹ (δ − Δ_h), eqs. 9
and 16, as :func:`~attnconv.chapters.shared.gaussian_maps.gaussian_head_maps` computes them), so
a six-layer model's every query fits in a few kilobytes. The model has no content term, so the
maps do not depend on the image; the image shows which pixels a token covers.

As in :mod:`attnconv.chapters.live_widgets`, the wrapping ``<div>`` carries its data (``data-initial``), so that a
test and a browser check can hold the script to Python.
"""

from __future__ import annotations

import base64
import json
from html import escape
from typing import Mapping, Optional, Sequence, Tuple

import numpy as np

from .shared.live_kit import BLUES, CONTROLS_CSS, DARK_CSS, live_script, range_row

__all__ = ["query_explorer_data", "query_explorer_widget"]


def query_explorer_data(
    records: Sequence[Mapping],
    images: Sequence[np.ndarray],
    labels: Sequence[str],
    grid: Tuple[int, int],
    initial: Tuple[int, int, int, int] = (0, 3, 8, 8),
) -> dict:
    """What the explorer carries: per layer, each head's centre ``c`` = Δ_h and ``a`` = (Σ⁻¹₁₁,
    Σ⁻¹₁₂, Σ⁻¹₂₂) from ``records`` (one layer record each, with ``centers`` and
    ``inverse_covariance``); the ``images`` (``(H, W, 3)`` uint8, one size, H and W multiples of
    the ``grid``) as base64 RGB bytes with their ``labels``; and where it starts: ``initial`` =
    (image, layer, query row, query column), 0-based."""
    if not records:
        raise ValueError("no layer records: the explorer needs at least one layer")
    if len(images) != len(labels) or not images:
        raise ValueError(f"{len(images)} images for {len(labels)} labels")
    shapes = {tuple(np.shape(im)) for im in images}
    if len(shapes) != 1 or len(next(iter(shapes))) != 3 or next(iter(shapes))[2] != 3:
        raise ValueError(
            f"images must be (H, W, 3) arrays of one size, got {sorted(shapes)}"
        )
    h, w, _ = next(iter(shapes))
    if h % grid[0] or w % grid[1]:
        raise ValueError(
            f"a {h}×{w} image does not split into {grid[0]}×{grid[1]} tokens"
        )
    image, layer, row, col = initial
    if not (0 <= image < len(images) and 0 <= layer < len(records)):
        raise ValueError(f"initial image {image} or layer {layer} does not exist")
    if not (0 <= row < grid[0] and 0 <= col < grid[1]):
        raise ValueError(
            f"initial query ({row}, {col}) is outside the {grid[0]}×{grid[1]} grid"
        )
    layers = []
    for rec in records:
        centers = np.asarray(rec["centers"], dtype=np.float64).reshape(-1, 2)
        inv = np.asarray(rec["inverse_covariance"], dtype=np.float64).reshape(-1, 2, 2)
        layers.append(
            [
                {"c": c.tolist(), "a": [m[0, 0], (m[0, 1] + m[1, 0]) / 2, m[1, 1]]}
                for c, m in zip(centers, inv)
            ]
        )
    return {
        "grid": [int(grid[0]), int(grid[1])],
        "size": [int(h), int(w)],
        "layers": [[{k: [float(x) for x in v] for k, v in hd.items()} for hd in ly] for ly in layers],
        "images": [
            base64.b64encode(np.ascontiguousarray(im, dtype=np.uint8).tobytes()).decode()
            for im in images
        ],
        "labels": [str(s) for s in labels],
        "initial": [int(v) for v in initial],
        "blues": [list(c) for c in _BLUES],
    }  # fmt: skip


_JS = r"""
  var D = JSON.parse(root.dataset.initial), G = D.grid, S = D.size;
  var state = {image: D.initial[0], layer: D.initial[1], row: D.initial[2], col: D.initial[3]};
  var PX = 6, M = 8;  // image pixels and map tokens, in canvas px
  var pics = D.images.map(function (b) {
    var s = atob(b), a = new Uint8ClampedArray(S[0] * S[1] * 4);
    for (var i = 0, j = 0; i < s.length; i += 3, j += 4) {
      a[j] = s.charCodeAt(i); a[j + 1] = s.charCodeAt(i + 1); a[j + 2] = s.charCodeAt(i + 2); a[j + 3] = 255;
    }
    return new ImageData(a, S[1], S[0]);
  });
  var img = root.querySelector('canvas[data-role=image]'), maps = root.querySelectorAll('canvas[data-role=map]');
  var titles = root.querySelectorAll('[data-role=map-title]');
  var inputs = {row: root.querySelector('[data-role=row]'), col: root.querySelector('[data-role=col]')};
  var readout = root.querySelector('[data-role=readout]');
  var BLUES = D.blues;
  function blue(z) {
    var x = Math.max(0, Math.min(1, z)) * (BLUES.length - 1), i = Math.min(BLUES.length - 2, Math.floor(x)), f = x - i;
    var c = BLUES[i].map(function (u, k) { return Math.round(u + f * (BLUES[i + 1][k] - u)); });
    return 'rgb(' + c.join(',') + ')';
  }
  function weights(head, r, c) {  // softmax over the keys of -1/2 (d - Delta)^T A (d - Delta)
    var s = [], a = head.a;
    for (var i = 0; i < G[0]; i++) for (var j = 0; j < G[1]; j++) {
      var u = i - r - head.c[0], v = j - c - head.c[1];
      s.push(-0.5 * (a[0] * u * u + 2 * a[1] * u * v + a[2] * v * v));
    }
    return softmax(s);
  }
  function signed(v) { return (v > 0 ? '+' : v < 0 ? '\u2212' : '') + Math.abs(v); }
  function pressed(role, value) {
    root.querySelectorAll('button[data-role=' + role + ']').forEach(function (b) {
      b.setAttribute('aria-pressed', String(Number(b.dataset.value) === value));
    });
  }
  function update() {
    var ctx = img.getContext('2d'), th = S[0] / G[0], tw = S[1] / G[1];
    var tmp = document.createElement('canvas'); tmp.width = S[1]; tmp.height = S[0];
    tmp.getContext('2d').putImageData(pics[state.image], 0, 0);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(tmp, 0, 0, S[1] * PX, S[0] * PX);
    ctx.strokeStyle = '#d62728'; ctx.lineWidth = 3;
    ctx.strokeRect(state.col * tw * PX + 1.5, state.row * th * PX + 1.5, tw * PX - 3, th * PX - 3);
    var heads = D.layers[state.layer], all = heads.map(function (h) { return weights(h, state.row, state.col); });
    var top = 0, report = [];
    all.forEach(function (p) { for (var k = 0; k < p.length; k++) if (p[k] > top) top = p[k]; });
    all.forEach(function (p, h) {
      var c = maps[h].getContext('2d'), best = 0;
      for (var k = 0; k < p.length; k++) {
        if (p[k] > p[best]) best = k;
        c.fillStyle = blue(Math.sqrt(p[k] / top));
        c.fillRect((k % G[1]) * M, Math.floor(k / G[1]) * M, M, M);
      }
      c.strokeStyle = '#d62728'; c.lineWidth = 2;
      c.strokeRect(state.col * M + 1, state.row * M + 1, M - 2, M - 2);
      var dr = Math.floor(best / G[1]) - state.row, dc = best % G[1] - state.col;
      titles[h].textContent = 'head ' + (h + 1) + '\n' + p[best].toFixed(3) + ' at (' + signed(dr) + ', ' + signed(dc) + ')';
      report.push({head: h, weight: p[best], shift: [dr, dc]});
      maps[h].style.display = '';
    });
    for (var h2 = heads.length; h2 < maps.length; h2++) { maps[h2].style.display = 'none'; titles[h2].textContent = ''; }
    inputs.row.value = String(state.row + 1); inputs.col.value = String(state.col + 1);
    root.querySelector('[data-role=row-value]').value = String(state.row + 1);
    root.querySelector('[data-role=col-value]').value = String(state.col + 1);
    inputs.row.setAttribute('aria-valuetext', 'query row ' + (state.row + 1) + ' of ' + G[0]);
    inputs.col.setAttribute('aria-valuetext', 'query column ' + (state.col + 1) + ' of ' + G[1]);
    pressed('image', state.image); pressed('layer', state.layer);
    readout.dataset.weights = JSON.stringify(report);
    readout.querySelector('[data-role=where]').textContent = (D.labels.length > 1 ? D.labels[state.image] + ' · ' : '') +
      'layer ' + (state.layer + 1) + ' · query at row ' + (state.row + 1) + ', column ' + (state.col + 1);
    readout.querySelector('[data-role=head1]').textContent = report[0].weight.toFixed(3) + ' at (' +
      signed(report[0].shift[0]) + ', ' + signed(report[0].shift[1]) + ')';
  }
  root.querySelectorAll('button[data-role]').forEach(function (b) {
    b.addEventListener('click', function () { state[b.dataset.role] = Number(b.dataset.value); update(); });
  });
  inputs.row.addEventListener('input', function () { state.row = Number(inputs.row.value) - 1; update(); });
  inputs.col.addEventListener('input', function () { state.col = Number(inputs.col.value) - 1; update(); });
  img.addEventListener('click', function (e) {
    var r = img.getBoundingClientRect();
    state.row = Math.min(G[0] - 1, Math.max(0, Math.floor((e.clientY - r.top) / r.height * G[0])));
    state.col = Math.min(G[1] - 1, Math.max(0, Math.floor((e.clientX - r.left) / r.width * G[1])));
    update();
  });
  update();
"""

_CSS = """
#{id} .qe-buttons {{ display: flex; flex-wrap: wrap; gap: 4px; margin: 4px 0; align-items: center; }}
#{id} .qe-buttons button {{ font: inherit; font-size: 13px; padding: 2px 8px; border-radius: 4px;
  border: 1px solid currentColor; background: transparent; color: inherit; cursor: pointer; }}
#{id} .qe-buttons button[aria-pressed=true] {{ background: #1f77b4; border-color: #1f77b4; color: #fff; }}
#{id} .qe-buttons button:focus-visible {{ outline: 2px solid #ff7f0e; outline-offset: 2px; }}
#{id} .qe-body {{ display: flex; flex-wrap: wrap; gap: 14px; align-items: flex-start; margin-top: 6px; }}
#{id} canvas {{ image-rendering: pixelated; display: block; max-width: 100%; }}
#{id} canvas[data-role=image] {{ cursor: crosshair; width: 192px; height: 192px; }}
#{id} .qe-maps {{ display: grid; grid-template-columns: repeat(3, 128px); gap: 4px 8px; }}
#{id} .qe-map {{ margin: 0; padding: 0; }}
#{id} .qe-map div {{ font-size: 12px; font-variant-numeric: tabular-nums; white-space: pre;
  text-align: left; margin: 0 0 2px; }}
#{id} .qe-maps canvas {{ width: 128px; height: 128px; outline: 1px solid rgba(128, 128, 128, 0.5); }}
#{id} .qe-key {{ display: flex; align-items: center; gap: 6px; font-size: 13px; margin: 4px 0; }}
#{id} .qe-key span[data-role=ramp] {{ display: inline-block; width: 120px; height: 10px;
  outline: 1px solid rgba(128, 128, 128, 0.5);
  background: linear-gradient(to right, {ramp}); }}
"""
#: The maps' colours, light to dark: every other stop of the book's Blues, as RGB triples (the
#: script's ramp and the key's).
_BLUES = tuple(tuple(int(h[i : i + 2], 16) for i in (1, 3, 5)) for h in BLUES[::2])


def query_explorer_widget(
    records: Sequence[Mapping],
    images: Sequence[np.ndarray],
    labels: Sequence[str],
    grid: Tuple[int, int],
    initial: Tuple[int, int, int, int] = (0, 3, 8, 8),
    widget_id: str = "live-query-explorer",
    alt: str = "",
    max_heads: Optional[int] = None,
):
    """The explorer as :class:`IPython.display.HTML` (data: :func:`query_explorer_data`): image
    buttons (only where there are several images: the maps do not depend on the image), layer
    buttons, two sliders for the query token's row and column (1-based), the image
    (click a token to make it the query; red: the query), and one map per head of the layer over
    the token grid, shaded by √(p / the layer's largest p) and titled with its largest weight and
    that key's shift from the query (3 decimals, so that broad heads still differ). Printed, as
    one short line: the layer, where the query is, and head 1's largest weight (3 decimals) and
    its shift; the readout's ``data-weights`` holds every head's."""
    from IPython.display import HTML

    data = query_explorer_data(records, images, labels, grid, initial)
    n = max_heads or max(len(ly) for ly in data["layers"])
    wid = escape(widget_id, quote=True)
    m = 8  # canvas px per token of a map

    def buttons(role: str, names: Sequence[str], lead: str) -> str:
        return (
            f'<div class="qe-buttons" role="group" aria-label="{lead}"><span>{lead}</span>'
            + "".join(
                f'<button type="button" data-role="{role}" data-value="{i}" '
                f'aria-pressed="false">{escape(s)}</button>'
                for i, s in enumerate(names)
            )
            + "</div>"
        )

    sliders = "".join(
        range_row(wid, role, f"query {what}", 1, size, start + 1, step=1, digits=0)
        for role, what, size, start in (
            ("row", "row", grid[0], initial[2]),
            ("col", "column", grid[1], initial[3]),
        )
    )
    maps = "".join(
        f'<div class="qe-map"><div data-role="map-title"></div><canvas data-role="map" '
        f'width="{grid[1] * m}" height="{grid[0] * m}"></canvas></div>'
        for _ in range(n)
    )
    h, w = data["size"]
    ramp = ", ".join(f"rgb{c}" for c in _BLUES)
    label = f' aria-label="{escape(alt, quote=True)}"' if alt else ""
    html = (
        f'<div id="{wid}" class="live-widget" data-live-widget="query-explorer" role="group"{label} '
        f"data-initial='{escape(json.dumps(data), quote=True)}'>"
        f"<style>{CONTROLS_CSS.format(id=wid, width=640)}{_CSS.format(id=wid, ramp=ramp)}"
        f"{DARK_CSS.format(id=wid)}</style>"
        + (buttons("image", data["labels"], "image") if len(data["images"]) > 1 else "")
        + buttons("layer", [str(i + 1) for i in range(len(data["layers"]))], "layer")
        + f'<div class="lw-controls">{sliders}</div>'
        f'<p class="lw-readout" data-role="readout" aria-live="polite">'
        f'<span data-role="where"></span> · head 1: <strong data-role="head1"></strong></p>'
        '<p class="qe-key">0 <span data-role="ramp"></span> the layer\'s largest weight '
        "(square-root scale); each map's title gives its own largest weight and where it "
        "falls.</p>"
        f'<div class="qe-body"><canvas data-role="image" width="{w * 6}" height="{h * 6}" '
        f'aria-hidden="true"></canvas><div class="qe-maps" aria-hidden="true">{maps}</div></div>'
        f"<script>{live_script(_JS, widget_id)}</script></div>"
    )  # fmt: skip
    return HTML(html)
