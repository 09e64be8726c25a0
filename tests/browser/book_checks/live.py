"""Part B: the book's live widgets (attnconv.chapters.live_widgets) and sortable tables respond,
from the keyboard.

For every element with ``data-live-widget``: each range input and button has a label and takes
the focus; a key pressed on its first control (ArrowRight on a range, Enter on the last button)
changes its printed readout. The Lemma 1 head picker's arrow keys, Home and End move the
pressed head in its K × K grid, with the focus and its one Tab stop (PICKER_KEY_PATH); with a
width slider, its printed weight equals Python's at CHECKED_LOG_ALPHAS. For the
head explorer (``head-explorer``) the printed weight on the
target key equals, within LIVE_TOLERANCE, what Python computes
(attnconv.chapters.live_widgets.target_weight): at its start (``data-initial``), after the α
slider moves by keyboard, and at α ≈ 2 and α ≈ 18 (CHECKED_LOG_ALPHAS). Figure 4.2's Lemma 2
widget (``lemma2-alpha``, attnconv.chapters.live_figures) prints the weight on q + Δ, the
off-target mass and S(α) that Python computes at those α; Figure 8.3's pruning widget
(``pruning-threshold``) greys the heads App. A.1's rule prunes at CHECKED_EXPONENTS; chapter 7b's
query explorer (``query-explorer``) finds each head's largest weight, and its key, where Python's
maps of the same heads do (CHECKED_QUERIES). For every
table made sortable
(``table.sortable-table``): a click on a header button sorts the rows by that column
(``aria-sort`` ascending, the column in the order of attnconv.chapters.live_widgets.sort_key:
verdicts by rank, leading numbers as numbers, then texts), and Enter on another header sorts by it.
For every figure with hover values (``div.hover-spots``, attnconv.chapters.shared.hover_spots):
one spot per listed point, each inside its figure's image, and focusing a spot shows its text.
"""

from __future__ import annotations

import json
import math

from .common import Report, fail_unreachable

#: Largest difference between the weight the widget prints (6 decimals) and Python's.
LIVE_TOLERANCE = 1e-6
#: The query explorer prints its largest weight to three decimals: within half a unit of the
#: third decimal of the weight Python computes.
PRINTED_HALF_UNIT = 5e-4
#: log₁₀ α where the explorer is also checked, set by script: α ≈ 2 (a blur) and α ≈ 18.2,
#: where the head at an integer Δ has turned one-hot.
CHECKED_LOG_ALPHAS = (0.3, 1.26)

#: A figure's hover values: spots laid (one per listed point), how many fall outside the figure's
#: image, and the tooltip's text after the first spot takes the focus.
HOVER_JS = r"""
(h) => {
  const listed = JSON.parse(h.dataset.spots);
  const cell = h.closest('.cell') || h.parentElement;
  const before = cell.previousElementSibling;
  const frame = cell.querySelector('.hover-frame') ||
    (before ? before.querySelector('.hover-frame') : null);
  const spots = frame ? [...frame.querySelectorAll('button.hover-spot')] : [];
  const img = frame ? frame.querySelector('img').getBoundingClientRect() : null;
  const outside = spots.filter(b => { const r = b.getBoundingClientRect();
    const x = r.left + r.width / 2, y = r.top + r.height / 2;
    return !img || x < img.left || x > img.right || y < img.top || y > img.bottom; }).length;
  if (spots.length) spots[0].focus();
  const tip = document.getElementById('hover-tip');
  const shown = tip && !tip.hidden ? tip.textContent : null;
  if (spots.length) spots[0].blur();
  return {listed: listed.length, spots: spots.length, outside,
          first: listed.length ? listed[0].text : null, tip: shown};
}
"""

CONTROLS_JS = r"""
(w) => [...w.querySelectorAll('input[type=range], button')].map((c, i) => {
  c.focus();
  const label = (c.labels && c.labels.length ? c.labels[0].textContent : '') ||
                c.getAttribute('aria-label') || c.textContent;
  return {i, tag: c.tagName.toLowerCase(), focused: document.activeElement === c,
          label: (label || '').trim()};
})
"""

READOUT_JS = "(w) => (w.querySelector('[data-role=readout]') || w).textContent"

EXPLORER_STATE_JS = r"""
(w) => ({alpha: parseFloat(w.querySelector('[data-role=alpha]').value),
         d1: parseFloat(w.querySelector('[data-role=delta1]').value),
         d2: parseFloat(w.querySelector('[data-role=delta2]').value),
         printed: w.querySelector('[data-role=target-weight]').textContent,
         initial: JSON.parse(w.dataset.initial)})
"""

SET_ALPHA_JS = r"""
([w, v]) => { const a = w.querySelector('[data-role=alpha]'); a.value = String(v);
              a.dispatchEvent(new Event('input', {bubbles: true})); }
"""

#: What each body cell of column c sorts by: its data-sort value (or its marked child's), else its text.
TABLE_JS = r"""
([t, c]) => [...t.tBodies[0].rows].map(r => {
  const cell = r.cells[c];
  if (!cell) return '';
  const marked = cell.hasAttribute('data-sort') ? cell : cell.querySelector('[data-sort]');
  return (marked ? marked.getAttribute('data-sort') : cell.textContent).trim();
})
"""

#: Keys in ascending order (attnconv.chapters.live_widgets.sort_key: [group, number, text]):
#: groups in order, numbers (verdict ranks included) as numbers, texts as the browser collates them.
IN_ORDER_JS = r"""
(keys) => keys.every((y, i) => {
  if (i === 0) return true;
  const x = keys[i - 1];
  if (x[0] !== y[0]) return x[0] < y[0];
  if (x[0] === 0) return x[1] <= y[1];
  return x[2].localeCompare(y[2], undefined, {numeric: true, sensitivity: 'base'}) <= 0;
})
"""


def _sorted_ascending(page, texts: list) -> bool:
    """Whether a column's sort texts are in the ascending order of Python's sort_key."""
    from attnconv.chapters.live_widgets import sort_key

    return page.evaluate(IN_ORDER_JS, [list(sort_key(t)) for t in texts])


def _python_weight(alpha: float, d1: float, d2: float) -> float:
    from attnconv.chapters.live_widgets import target_weight

    return target_weight(alpha, (d1, d2))


def _explorer_checks(page, rep: Report, name: str, label: str, w) -> dict:
    """The printed target weight against Python's, at the start, after a keyboard move of α and
    at each of CHECKED_LOG_ALPHAS."""
    results = {}

    def compare(what: str) -> None:
        s = page.evaluate(EXPLORER_STATE_JS, w)
        alpha = 10 ** s["alpha"]
        expected = _python_weight(alpha, s["d1"], s["d2"])
        try:
            printed = float(s["printed"])
        except ValueError:
            printed = math.nan
        gap = abs(printed - expected)
        results[what] = {"alpha": alpha, "printed": printed, "python": expected}
        if not gap <= LIVE_TOLERANCE:
            rep.fail(
                name,
                "interactive",
                f"{label}: {what}, α = {alpha:.4g}: printed target weight {s['printed']}, "
                f"Python {expected:.8f} (difference {gap:.1e}, tolerance {LIVE_TOLERANCE:g})",
            )

    s0 = page.evaluate(EXPLORER_STATE_JS, w)
    start = s0["initial"]["target_weight"]
    try:
        printed0 = float(s0["printed"])
    except ValueError:
        printed0 = math.nan
    if not abs(printed0 - start) <= LIVE_TOLERANCE:
        rep.fail(
            name,
            "interactive",
            f"{label}: printed start weight {s0['printed']}, data-initial {start:.8f}",
        )
    compare("start")
    alpha = w.query_selector("[data-role=alpha]")
    alpha.focus()
    for key in ("ArrowLeft", "ArrowLeft", "PageDown"):
        page.keyboard.press(key)
    compare("keyboard")
    for v in CHECKED_LOG_ALPHAS:
        page.evaluate(SET_ALPHA_JS, [w, v])
        compare(f"log10 alpha = {v}")
    # a centre outside the 3×3 kernel: no one-tap 3×3 convolution to be near
    results["outside"] = page.evaluate(OUTSIDE_JS, w)
    if not results["outside"].startswith("the target is outside the 3×3 kernel"):
        rep.fail(
            name,
            "interactive",
            f"{label}: with Δ₁ = {OUTSIDE_DELTA1} the distance to a one-tap 3×3 convolution "
            f"reads {results['outside']!r}, not 'the target is outside the 3×3 kernel: ...'",
        )
    return results


#: Δ₁ whose nearest key lies two rows from the query, outside the 3×3 kernel.
OUTSIDE_DELTA1 = -1.84
OUTSIDE_JS = (
    r"""
(w) => { const d = w.querySelector('[data-role=delta1]'); d.value = '%s';
         d.dispatchEvent(new Event('input', {bubbles: true}));
         return w.querySelector('[data-role=distance]').textContent; }
"""
    % OUTSIDE_DELTA1
)


#: The head picker's pressed head and its one Tab stop, after pressing each key in turn from
#: the first head (attnconv.chapters.live_widgets.lemma1_head_picker: a K × K grid of heads).
PICKER_KEYS_JS = r"""
(w) => {
  const buttons = [...w.querySelectorAll('button[data-head]')];
  const state = () => ({pressed: buttons.findIndex(b => b.getAttribute('aria-pressed') === 'true'),
                        focused: buttons.indexOf(document.activeElement),
                        stops: buttons.filter(b => b.tabIndex === 0).length});
  buttons[0].click(); buttons[0].focus();
  const out = [];
  for (const key of ['ArrowRight', 'ArrowDown', 'ArrowLeft', 'ArrowUp', 'End', 'Home']) {
    document.activeElement.dispatchEvent(new KeyboardEvent('keydown', {key, bubbles: true}));
    out.push(Object.assign({key}, state()));
  }
  return out;
}
"""
#: Where each key of PICKER_KEYS_JS leaves a 3 × 3 picker started on head 0.
PICKER_KEY_PATH = {
    "ArrowRight": 1,
    "ArrowDown": 4,
    "ArrowLeft": 3,
    "ArrowUp": 0,
    "End": 8,
    "Home": 0,
}


PICKER_STATE_JS = r"""
(w) => { const data = JSON.parse(w.dataset.initial);
         const pressed = [...w.querySelectorAll('button[data-head]')]
           .findIndex(b => b.getAttribute('aria-pressed') === 'true');
         return {live: data.live || null, shift: data.heads[pressed].shift,
                 alpha: parseFloat((w.querySelector('[data-role=alpha]') || {}).value),
                 printed: w.querySelector('[data-role=weight]').textContent,
                 offKey: w.querySelector('[data-role=off-key]').textContent}; }
"""


def _picker_weights(page, rep: Report, name: str, label: str, w) -> dict:
    """A picker with a width slider: the printed weight of the pressed head on its key against
    Python's (:func:`attnconv.chapters.live_widgets.head_weights` on the picker's grid and query)
    at each of CHECKED_LOG_ALPHAS, within LIVE_TOLERANCE."""
    from attnconv.chapters.live_widgets import head_weights

    results = {}
    for v in CHECKED_LOG_ALPHAS:
        page.evaluate(SET_ALPHA_JS, [w, v])
        s = page.evaluate(PICKER_STATE_JS, w)
        (q1, q2), (d1, d2) = s["live"]["query"], s["shift"]
        alpha = 10 ** s["alpha"]
        grid = tuple(s["live"]["grid"])
        t1, t2 = q1 + d1, q2 + d2  # its key, which may lie off the grid (weight 0)
        on = 0 <= t1 < grid[0] and 0 <= t2 < grid[1]
        weights = head_weights(alpha, (d1, d2), (q1, q2), grid)
        expected = float(weights[t1, t2]) if on else 0.0
        try:
            printed = float(s["printed"])
        except ValueError:
            printed = math.nan
        results[f"log10 alpha = {v}"] = {"printed": printed, "python": expected}
        if not abs(printed - expected) <= LIVE_TOLERANCE:
            rep.fail(
                name,
                "interactive",
                f"{label}: α = {alpha:.4g}, head at shift ({d1}, {d2}): printed weight "
                f"{s['printed']}, Python {expected:.8f} (tolerance {LIVE_TOLERANCE:g})",
            )
        # the readout says the layer is not yet the convolution while the head is not one-hot
        if ("not yet the convolution" in s["offKey"]) != (1 - expected >= 1e-6):
            rep.fail(
                name,
                "interactive",
                f"{label}: α = {alpha:.4g}, off-key mass {1 - expected:.3g}, readout says "
                f"{s['offKey']!r}",
            )
    return results


def _picker_keys(page, rep: Report, name: str, label: str, w) -> list:
    """The head picker's arrow keys: each moves the pressed head (and the focus, and the one Tab
    stop) as :data:`PICKER_KEY_PATH` says; a failure names the first key that does not."""
    steps = page.evaluate(PICKER_KEYS_JS, w)
    for step in steps:
        want = PICKER_KEY_PATH[step["key"]]
        if (step["pressed"], step["focused"], step["stops"]) != (want, want, 1):
            rep.fail(
                name,
                "interactive",
                f"{label}: {step['key']} leaves head {step['pressed'] + 1} pressed, focus on "
                f"{step['focused'] + 1}, {step['stops']} Tab stops (want head {want + 1}, one stop)",
            )
            break
    return steps


LEMMA2_STATE_JS = r"""
(w) => ({alpha: parseFloat(w.querySelector('[data-role=alpha]').value),
         weight: w.querySelector('[data-role=target-weight]').textContent,
         off: w.querySelector('[data-role=off-mass]').textContent,
         bound: w.querySelector('[data-role=bound]').textContent,
         initial: JSON.parse(w.dataset.initial)})
"""
#: Largest relative difference between a mass the Lemma 2 widget prints (4 significant digits)
#: and Python's.
MASS_TOLERANCE = 1e-3


#: Superscript digits and minus, as a widget writes a power of ten (7.696×10⁻¹⁵).
_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")


def _printed_float(text: str) -> float:
    """A number as a widget prints it: plain, with a minus sign, or as m×10ⁿ."""
    text = text.replace("\u2212", "-")
    if "\u00d710" in text:
        mantissa, power = text.split("\u00d710", 1)
        text = f"{mantissa}e{power.translate(_SUPERSCRIPT)}"
    try:
        return float(text)
    except ValueError:
        return math.nan


def _lemma2_checks(page, rep: Report, name: str, label: str, w) -> dict:
    """Figure 4.2's widget: at each of CHECKED_LOG_ALPHAS, the printed weight on q + Δ, the
    off-target mass and S(α) against Python's (attnconv.chapters.live_figures.lemma2_start, the
    package's head on the padded grid, and attnconv.off_target_mass_bound)."""
    from attnconv.chapters.live_figures import lemma2_start

    results = {}
    for v in CHECKED_LOG_ALPHAS:
        page.evaluate(SET_ALPHA_JS, [w, v])
        s = page.evaluate(LEMMA2_STATE_JS, w)
        init = s["initial"]
        alpha = 10 ** s["alpha"]
        want = lemma2_start(
            alpha, tuple(init["delta"]), tuple(init["query"]), tuple(init["grid"])
        )
        got = {
            "target_weight": _printed_float(s["weight"]),
            "off_mass": _printed_float(s["off"]),
            "bound": _printed_float(s["bound"]),
        }
        results[f"log10 alpha = {v}"] = {"printed": got, "python": want}
        gaps = {
            "target_weight": abs(got["target_weight"] - want["target_weight"])
            <= LIVE_TOLERANCE,
            "off_mass": abs(got["off_mass"] - want["off_mass"])
            <= MASS_TOLERANCE * want["off_mass"],
            "bound": abs(got["bound"] - want["bound"])
            <= MASS_TOLERANCE * want["bound"],
        }
        for what, ok in gaps.items():
            if not ok:
                rep.fail(
                    name,
                    "interactive",
                    f"{label}: α = {alpha:.4g}: printed {what} {got[what]}, Python "
                    f"{want[what]:.6g}",
                )
    return results


SET_THRESHOLD_JS = r"""
([w, v]) => { const a = w.querySelector('[data-role=threshold]'); a.value = String(v);
              a.dispatchEvent(new Event('input', {bubbles: true}));
              const r = w.querySelector('[data-role=readout]');
              return {pruned: JSON.parse(r.dataset.pruned),
                      count: r.querySelector('[data-role=pruned-count]').textContent,
                      initial: JSON.parse(w.dataset.initial)}; }
"""
#: log₁₀ of the condition thresholds where the pruning widget is checked: the authors' code's
#: 10³, the paper's 10⁵, and one between decades.
CHECKED_EXPONENTS = (3.0, 5.0, 2.5)


def _pruning_checks(page, rep: Report, name: str, label: str, w) -> dict:
    """Figure 8.3's widget: at each of CHECKED_EXPONENTS, the heads it greys are the ones
    App. A.1's rule prunes (attnconv.experiments.pruning.is_degenerate on its rows), and the
    printed count is theirs."""
    from attnconv.experiments.pruning import is_degenerate

    results = {}
    for e in CHECKED_EXPONENTS:
        s = page.evaluate(SET_THRESHOLD_JS, [w, e])
        init = s["initial"]
        want: dict = {}
        for r in init["rows"]:
            cond = math.inf if r["condition"] is None else r["condition"]
            if is_degenerate(
                r["lambda_max"], cond, init["max_eigenvalue_threshold"], 10.0**e
            ):
                want.setdefault(str(r["layer"]), []).append(r["head"])
        got = {k: sorted(v) for k, v in s["pruned"].items()}
        results[f"log10 threshold = {e}"] = {"widget": got, "python": want}
        n = sum(len(v) for v in want.values())
        if got != want or s["count"] != str(n):
            rep.fail(
                name,
                "interactive",
                f"{label}: at 10^{e} it prunes {json.dumps(got)} ({s['count']}), the rule "
                f"{json.dumps(want)} ({n})",
            )
    return results


QUERY_JS = r"""
([w, layer, row, col]) => {
  w.querySelector(`button[data-role=layer][data-value="${layer}"]`).click();
  for (const [role, v] of [['row', row], ['col', col]]) {
    const a = w.querySelector(`[data-role=${role}]`); a.value = String(v + 1);
    a.dispatchEvent(new Event('input', {bubbles: true}));
  }
  const r = w.querySelector('[data-role=readout]');
  return {weights: JSON.parse(r.dataset.weights), head1: r.querySelector('[data-role=head1]').textContent,
          initial: JSON.parse(w.dataset.initial),
          said: ['row', 'col'].map(k => w.querySelector(`[data-role=${k}]`).getAttribute('aria-valuetext'))};
}
"""
#: (layer, query row, query column), 0-based, where the query explorer is checked: a corner
#: token, where the maps are cut by the grid's edge, and an inner one of the last layer.
CHECKED_QUERIES = ((0, 0, 0), (-1, 9, 6))


def _query_checks(page, rep: Report, name: str, label: str, w) -> dict:
    """Chapter 7b's query explorer: at each of CHECKED_QUERIES, every head's largest weight and
    its shift from the query against Python's maps of the same heads
    (attnconv.chapters.shared.gaussian_maps.gaussian_head_maps), and head 1's printed weight."""
    from attnconv.chapters.shared.gaussian_maps import gaussian_head_maps

    results = {}
    shape = page.evaluate(
        "(w) => { const d = JSON.parse(w.dataset.initial); return [d.layers.length, d.grid]; }",
        w,
    )
    for layer, row, col in CHECKED_QUERIES:
        # the last layer for -1; a query past a small grid's edge on its last row or column
        layer, row, col = (
            layer % shape[0],
            min(row, shape[1][0] - 1),
            min(col, shape[1][1] - 1),
        )
        s = page.evaluate(QUERY_JS, [w, layer, row, col])
        heads = s["initial"]["layers"][layer]
        record = {
            "centers": [h["c"] for h in heads],
            "inverse_covariance": [
                [[h["a"][0], h["a"][1]], [h["a"][1], h["a"][2]]] for h in heads
            ],
        }
        maps = gaussian_head_maps(record, s["initial"]["grid"], (row, col)).numpy()
        want = []
        for m in maps:
            k = int(m.argmax())
            r, c = divmod(k, m.shape[1])
            want.append({"weight": float(m.max()), "shift": [r - row, c - col]})
        got = s["weights"]
        where = f"layer {layer + 1}, query ({row + 1}, {col + 1})"
        # a screen reader hears where the query is, not a bare number
        said = [
            f"query row {row + 1} of {shape[1][0]}",
            f"query column {col + 1} of {shape[1][1]}",
        ]
        if s["said"] != said:
            rep.fail(
                name, "interactive", f"{label}: at {where} the sliders say {s['said']}"
            )
        results[where] = {"widget": got, "python": want}
        bad = [
            i
            for i, (g, p) in enumerate(zip(got, want))
            if abs(g["weight"] - p["weight"]) > LIVE_TOLERANCE
            or g["shift"] != p["shift"]
        ]
        printed = _printed_float(s["head1"].split(" ")[0])
        if (
            len(got) != len(want)
            or bad
            or not abs(printed - want[0]["weight"])
            <= PRINTED_HALF_UNIT + LIVE_TOLERANCE
        ):
            i = bad[0] if bad else 0
            rep.fail(
                name,
                "interactive",
                f"{label}: {where}, head {i + 1}: the page's largest weight "
                f"{got[i]['weight'] if i < len(got) else None} at {got[i]['shift'] if i < len(got) else None}, "
                f"Python's {want[i]['weight']:.8f} at {want[i]['shift']} (printed {s['head1']!r})",
            )
    page.evaluate(
        QUERY_JS, [w, 0, 0, 0]
    )  # back to layer 1, so that a key on a button acts
    return results


def check_live_widgets(page, rep: Report, name: str, info: dict) -> None:
    """The checks of this module's docstring on one open page; measurements go to ``info``."""
    results = []
    for wi, w in enumerate(page.query_selector_all("[data-live-widget]")):
        kind = w.get_attribute("data-live-widget")
        label = f"live widget {wi + 1} ({kind})"
        w.scroll_into_view_if_needed()
        controls = page.evaluate(CONTROLS_JS, w)
        entry = {"widget": wi + 1, "kind": kind, "controls": len(controls)}
        results.append(entry)
        if not controls:
            rep.fail(name, "interactive", f"{label}: no range input or button")
            continue
        fail_unreachable(rep, name, label, controls)
        if kind == "head-explorer":
            entry["target_weight"] = _explorer_checks(page, rep, name, label, w)
        if kind == "lemma2-alpha":
            entry["masses"] = _lemma2_checks(page, rep, name, label, w)
        if kind == "query-explorer":
            entry["maxima"] = _query_checks(page, rep, name, label, w)
        if kind == "pruning-threshold":
            entry["pruned"] = _pruning_checks(page, rep, name, label, w)
        if kind == "lemma1-head-picker":
            entry["arrow_keys"] = _picker_keys(page, rep, name, label, w)
            if w.query_selector("[data-role=alpha]"):
                entry["weights"] = _picker_weights(page, rep, name, label, w)
        before = page.evaluate(READOUT_JS, w)
        if controls[0]["tag"] == "input":
            w.query_selector("input[type=range]").focus()
            page.keyboard.press("ArrowRight")
        else:
            w.query_selector_all("button")[-1].focus()
            page.keyboard.press("Enter")
        entry["keyboard_changes_readout"] = page.evaluate(READOUT_JS, w) != before
        if not entry["keyboard_changes_readout"]:
            rep.fail(
                name,
                "interactive",
                f"{label}: a key on its first control changes nothing",
            )
    for ti, t in enumerate(page.query_selector_all("table.sortable-table")):
        label = f"sortable table {ti + 1}"
        buttons = t.query_selector_all("thead th button")
        entry = {"table": ti + 1, "header_buttons": len(buttons)}
        results.append(entry)
        if len(buttons) < 2:
            rep.fail(name, "interactive", f"{label}: fewer than 2 header buttons")
            continue
        buttons[0].click()
        first = page.evaluate(TABLE_JS, [t, 0])
        sort0 = buttons[0].evaluate("(b) => b.closest('th').getAttribute('aria-sort')")
        buttons[1].focus()
        page.keyboard.press("Enter")
        second = page.evaluate(TABLE_JS, [t, 1])
        sort1 = buttons[1].evaluate("(b) => b.closest('th').getAttribute('aria-sort')")
        # every further column (a verdict, a number with its unit) by a click too
        later = []
        for c, b in enumerate(buttons[2:], start=2):
            b.click()
            ok = b.evaluate("(b) => b.closest('th').getAttribute('aria-sort')")
            later.append(
                ok == "ascending"
                and _sorted_ascending(page, page.evaluate(TABLE_JS, [t, c]))
            )
        entry.update(
            click_sorts=sort0 == "ascending"
            and _sorted_ascending(page, first)
            and all(later),
            enter_sorts=sort1 == "ascending" and _sorted_ascending(page, second),
        )
        for how in ("click", "enter"):
            if not entry[f"{how}_sorts"]:
                rep.fail(
                    name,
                    "interactive",
                    f"{label}: {'a click' if how == 'click' else 'Enter'} on a header does not "
                    f"sort the rows ({json.dumps(first if how == 'click' else second)[:120]})",
                )
    for hi, h in enumerate(page.query_selector_all("div.hover-spots")):
        label = f"hover values {hi + 1} ({h.get_attribute('data-label')})"
        h.scroll_into_view_if_needed()
        got = page.evaluate(HOVER_JS, h)
        results.append({"hover": hi + 1, **got})
        if got["spots"] != got["listed"] or got["outside"]:
            rep.fail(
                name,
                "interactive",
                f"{label}: {got['spots']} spots for {got['listed']} points, "
                f"{got['outside']} outside the figure",
            )
        elif got["listed"] and got["tip"] != got["first"]:
            rep.fail(name, "interactive", f"{label}: focusing a spot shows no text")
    if results:
        info["live_widgets"] = results
