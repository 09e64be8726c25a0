"""Part B: the Plotly figures can be used from the keyboard (book/_static/plotly-keys.js).

Plotly draws its sliders and buttons in SVG, which takes no focus. For every Plotly figure with
sliders (``layout.sliders``) or buttons (``layout.updatemenus``), the page must hold, right
after the figure, a group ``.plotly-keys`` with one ``<input type="range">`` per slider (min 0,
max the steps less one) and one ``<button>`` per menu button, each taking the focus and labelled
(a ``<label>``, or a button's text). On each range input, ArrowRight (ArrowLeft at the last step)
moves the Plotly slider's ``active`` step to the input's new value, changes the figure (its data
or layout, the sliders and menus left out: common.PLOTLY_SIG_JS), and the label then names the
new step (the step's label). A click on the Plotly slider's rail moves the range input with it.
Enter on the first button (play) changes the figure; Enter on the last one (pause) is pressed
after it, so no animation runs on into the checks that follow.
"""

from __future__ import annotations

import time

from .common import PLOTLY_SIG_JS, Report, fail_unreachable, wait_change

#: Seconds a key or click has to show its effect.
KEY_SECONDS = 3.0

# The figure's sliders and menu buttons, and the native controls found right after it.
KEYS_JS = r"""
(gd) => {
  const L = gd.layout || {};
  const sliders = (L.sliders || []).filter(s => s && s.steps && s.steps.length);
  const buttons = (L.updatemenus || []).reduce(
    (n, m) => n + (m.buttons || []).filter(b => b.visible !== false).length, 0);
  const box = gd.nextElementSibling && gd.nextElementSibling.matches('.plotly-keys')
    ? gd.nextElementSibling : null;
  const controls = box ? [...box.querySelectorAll('input[type=range], button')].map((c, i) => {
    c.focus();
    const label = c.tagName === 'BUTTON' ? c.textContent
      : (c.labels && c.labels.length ? c.labels[0].textContent : c.getAttribute('aria-label'));
    return {i, tag: c.tagName.toLowerCase(), focused: document.activeElement === c,
            label: (label || '').trim(), min: c.min, max: c.max};
  }) : null;
  if (document.activeElement) document.activeElement.blur();
  return {sliders: sliders.length, buttons, steps: sliders.map(s => s.steps.length),
          controls};
}
"""

# Range input i's value and label, and the state of the Plotly slider it mirrors.
RANGE_STATE_JS = r"""
([gd, i]) => {
  const input = gd.nextElementSibling.querySelectorAll('input[type=range]')[i];
  const s = gd.layout.sliders[+input.dataset.slider || i];
  const active = s.active || 0;
  const step = s.steps[active] || {};
  const text = String(step.label === undefined ? (step.value === undefined ? active : step.value)
                                                : step.label).replace(/<[^>]*>/g, '');
  return {value: +input.value, max: +input.max, active, stepLabel: text,
          label: input.labels && input.labels.length ? input.labels[0].textContent : ''};
}
"""


def _state(page, gd, i: int) -> dict:
    return page.evaluate(RANGE_STATE_JS, [gd, i])


def _range_checks(page, rep: Report, name: str, label: str, gd, i: int) -> dict:
    """ArrowRight (or ArrowLeft) on range input ``i``, then a click on the Plotly rail."""
    sig = lambda: page.evaluate(PLOTLY_SIG_JS, gd)  # noqa: E731
    before, fig0 = _state(page, gd, i), sig()
    key = "ArrowRight" if before["value"] < before["max"] else "ArrowLeft"
    gd.evaluate(
        "(gd, i) => gd.nextElementSibling.querySelectorAll('input[type=range]')[i].focus()",
        i,
    )
    page.keyboard.press(key)
    changed = wait_change(page, sig, fig0, seconds=KEY_SECONDS)
    after = _state(page, gd, i)
    res = {
        "key": key,
        "active_before": before["active"],
        "active_after": after["active"],
        "value_after": after["value"],
        "figure_changes": changed,
        "label_after": after["label"],
    }
    what = f"{label}, slider {i + 1}"
    if after["value"] == before["value"]:
        rep.fail(name, "interactive", f"{what}: {key} does not move its range input")
    elif after["active"] != after["value"]:
        rep.fail(
            name,
            "interactive",
            f"{what}: {key} moves the range input to {after['value']} but the Plotly slider "
            f"stays at step {after['active']}",
        )
    if not changed:
        rep.fail(name, "interactive", f"{what}: {key} does not change the figure")
    if after["stepLabel"] not in after["label"]:
        rep.fail(
            name,
            "interactive",
            f"{what}: the label {after['label']!r} does not name the step "
            f"{after['stepLabel']!r}",
        )
    # the mouse on the Plotly slider: the range input follows
    rails = gd.query_selector_all(
        "rect.slider-rail-touch-rect"
    ) or gd.query_selector_all("rect.slider-rail-rect")
    if i < len(rails):
        rails[i].scroll_into_view_if_needed()
        box = rails[i].bounding_box()
        if box is not None:
            frac = 0.1 if after["active"] > after["max"] / 2 else 0.9
            page.mouse.click(
                box["x"] + box["width"] * frac, box["y"] + box["height"] / 2
            )
            end = time.monotonic() + KEY_SECONDS
            while True:
                moved = _state(page, gd, i)
                if (
                    moved["active"] != after["active"]
                    and moved["value"] == moved["active"]
                ):
                    break
                if time.monotonic() > end:
                    break
                time.sleep(0.15)
            res["follows_mouse"] = (
                moved["active"] != after["active"] and moved["value"] == moved["active"]
            )
            if not res["follows_mouse"]:
                rep.fail(
                    name,
                    "interactive",
                    f"{what}: a click on the Plotly slider (step {moved['active']}) leaves the "
                    f"range input at {moved['value']}",
                )
    return res


def check_plotly_keys(page, rep: Report, name: str, info: dict) -> None:
    """The checks of this module's docstring on one open page; measurements go to ``info``."""
    results = []
    for gi, gd in enumerate(page.query_selector_all("div.plotly-graph-div")):
        label = f"plotly figure {gi + 1}"
        if not page.evaluate("(gd) => !!(gd._fullLayout && gd.layout)", gd):
            continue  # not drawn: check_plotly reports it
        gd.scroll_into_view_if_needed()
        found = page.evaluate(KEYS_JS, gd)
        if not found["sliders"] and not found["buttons"]:
            continue
        entry = {
            "figure": gi + 1,
            "sliders": found["sliders"],
            "buttons": found["buttons"],
        }
        results.append(entry)
        controls = found["controls"]
        if controls is None:
            rep.fail(
                name,
                "interactive",
                f"{label}: no keyboard controls (.plotly-keys) after the figure",
            )
            continue
        ranges = [c for c in controls if c["tag"] == "input"]
        buttons = [c for c in controls if c["tag"] == "button"]
        entry.update(ranges=len(ranges), native_buttons=len(buttons))
        if len(ranges) != found["sliders"] or len(buttons) != found["buttons"]:
            rep.fail(
                name,
                "interactive",
                f"{label}: {found['sliders']} sliders and {found['buttons']} buttons, but "
                f"{len(ranges)} range inputs and {len(buttons)} buttons for the keyboard",
            )
        fail_unreachable(rep, name, label, controls)
        for r, steps in zip(ranges, found["steps"]):
            if (r["min"], r["max"]) != ("0", str(steps - 1)):
                rep.fail(
                    name,
                    "interactive",
                    f"{label}: range input {r['label']!r} spans {r['min']}-{r['max']}, "
                    f"the slider has {steps} steps",
                )
        entry["keys"] = [
            _range_checks(page, rep, name, label, gd, i)
            for i in range(min(len(ranges), found["sliders"]))
        ]
        if buttons:
            sig = lambda: page.evaluate(PLOTLY_SIG_JS, gd)  # noqa: E731
            box = gd.evaluate_handle("(gd) => gd.nextElementSibling")
            native = box.query_selector_all("button")
            before = sig()
            native[0].focus()
            page.keyboard.press("Enter")
            entry["play_changes_figure"] = wait_change(
                page, sig, before, seconds=KEY_SECONDS
            )
            if len(native) > 1:
                native[-1].focus()
                page.keyboard.press("Enter")
            time.sleep(0.3)
            if not entry["play_changes_figure"]:
                rep.fail(
                    name,
                    "interactive",
                    f"{label}: Enter on its first button ({buttons[0]['label']!r}) does "
                    "not change the figure",
                )
    if results:
        info["plotly_keys"] = results
