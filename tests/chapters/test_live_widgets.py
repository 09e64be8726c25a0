"""The live widgets (attnconv.chapters.live_widgets): the head explorer's weights against an
independent numpy softmax of eq. (9), the numbers written into each widget's HTML, the
widgets' controls (labelled native inputs and buttons), and, in a browser, the explorer's preset
buttons: each sets the sliders and the readout to what Python computes for its state."""

import json
import math
import re
from html import unescape

import numpy as np
import pytest
import torch

from attnconv import conv_to_mhsa, kernel_shifts
from attnconv.chapters.lemma1_picture import edge_blur_conv, head_matrices
from attnconv.chapters.live_widgets import (
    EXPLORER_ALPHA_RANGE,
    EXPLORER_DELTA_RANGE,
    EXPLORER_PRESETS,
    explorer_preset,
    head_explorer_widget,
    head_weights,
    lemma1_head_picker,
    sort_key,
    sortable_table_script,
    target_key,
    target_weight,
)


def numpy_softmax_head(alpha, delta, query=(4, 4), grid=(9, 9)):
    """Eq. (9) written out: the score of key k is −α‖(k − q) − Δ‖² (the paper's
    vᵀr_δ = −α‖δ − Δ‖² + α‖Δ‖², whose constant a softmax ignores); softmax over the keys."""
    rows, cols = np.meshgrid(np.arange(grid[0]), np.arange(grid[1]), indexing="ij")
    d1, d2 = rows - query[0], cols - query[1]
    full = -alpha * ((d1**2 + d2**2) - 2 * (delta[0] * d1 + delta[1] * d2))  # vᵀ r_δ
    e = np.exp(full - full.max())
    return e / e.sum()


@pytest.mark.parametrize(
    "alpha, delta",
    [(0.1, (0.0, 0.0)), (1.0, (1.0, -1.0)), (10.0, (1.0, -1.0)), (18.2, (0.37, 2.5)),
     (100.0, (-3.0, 3.0)), (3.0, (-0.5, 0.49))],
)  # fmt: skip
def test_head_weights_equal_a_numpy_softmax_of_eq_9(alpha, delta):
    p = head_weights(alpha, delta)
    assert p.shape == (9, 9) and p.dtype == np.float64
    np.testing.assert_allclose(p, numpy_softmax_head(alpha, delta), rtol=0, atol=1e-12)
    t = target_key(delta)
    expected = (
        numpy_softmax_head(alpha, delta)[t] if 0 <= min(t) and max(t) < 9 else 0.0
    )
    assert target_weight(alpha, delta) == pytest.approx(expected, abs=1e-12)


def test_target_key_rounds_halves_up_like_the_script():
    assert target_key((0.5, -0.5)) == (5, 4)  # Math.floor(d + 0.5)
    assert target_key((1.49, -1.51)) == (5, 2)
    assert target_weight(10.0, (5.0, 0.0), grid=(9, 9)) == 0.0  # off the grid


def test_target_weight_rises_to_one_with_alpha():
    w = [target_weight(a, (1.0, -1.0)) for a in (0.1, 1.0, 10.0, 18.0, 100.0)]
    assert all(a < b for a, b in zip(w, w[1:]))
    assert w[-1] == pytest.approx(1.0, abs=1e-12)


def _initial(html: str) -> dict:
    return json.loads(unescape(re.search(r"data-initial='([^']*)'", html)[1]))


def test_explorer_html_carries_its_start_and_labelled_range_inputs():
    html = head_explorer_widget((1.0, -1.0, 10.0), alt="A head explorer.").data
    data = _initial(html)
    assert data["alpha"] == 10.0 and data["delta"] == [1.0, -1.0]
    expected = numpy_softmax_head(10.0, (1.0, -1.0))[5, 3]
    assert data["target_weight"] == pytest.approx(expected, abs=1e-12)
    assert f'<strong data-role="target-weight">{expected:.6f}</strong>' in html
    ids = re.findall(r'<input type="range" id="([^"]+)"', html)
    assert len(ids) == 3
    for i in ids:
        assert f'<label for="{i}">' in html
    lo, hi = (math.log10(a) for a in EXPLORER_ALPHA_RANGE)
    assert f'min="{lo:g}" max="{hi:g}" step="0.01" value="1.00"' in html
    assert "http" not in html.replace(
        "http://www.w3.org/2000/svg", ""
    )  # nothing to fetch
    assert 'aria-label="A head explorer."' in html


def test_explorer_rejects_a_start_off_its_sliders():
    with pytest.raises(ValueError, match="range"):
        head_explorer_widget((0.0, 0.0, 1000.0))
    with pytest.raises(ValueError, match="steps"):
        head_explorer_widget((0.123, 0.0, 1.0))


def test_explorer_html_is_deterministic():
    assert head_explorer_widget().data == head_explorer_widget().data
    assert repr(head_explorer_widget()).startswith("<IPython.core.display.HTML object")


def test_head_picker_carries_each_head_and_its_kernel_slice():
    conv = edge_blur_conv(torch.float64)
    mhsa = conv_to_mhsa(conv)
    shifts = kernel_shifts(3).tolist()
    slices = torch.stack([conv.weight[:, :, a + 1, b + 1].t() for a, b in shifts])
    html = lemma1_head_picker(shifts, head_matrices(mhsa), slices, [1.0] * 9).data
    data = _initial(html)
    assert [h["shift"] for h in data["heads"]] == shifts
    for h, head in enumerate(data["heads"]):
        np.testing.assert_allclose(
            head["matrix"], slices[h].detach().numpy(), atol=1e-12
        )
        assert head["gap"] < 1e-12
    assert html.count("<button") == 9 and html.count('aria-pressed="false"') == 9
    assert "<table" not in html  # the book numbers and captions every table
    assert html.count("<span data-cell>") == 9
    with pytest.raises(ValueError):
        lemma1_head_picker(shifts[:8], head_matrices(mhsa)[:8], slices[:8], [1.0] * 8)


def test_sort_key_orders_verdicts_by_rank_and_numbers_by_value():
    # Table 17.2's cells, in the order a reader expects (written out by hand)
    verdicts = ["reproduced *fragile*", "inconclusive", "not reproduced", "—"]
    assert sorted(reversed(verdicts), key=sort_key) == verdicts
    fresh = [
        "\u221210.0 points [\u221212.2, \u22127.8]",
        "\u22122.9 points [\u22124.8, \u22120.96]",
        "0 of 8 seeds; share 0.00\u20130.31",
        "+1.2 points [\u22120.1, +2.5]",
        "+2.75 epochs [+0.75, +4.75]",
        "8 of 8 seeds; share 0.69\u20131.00",
        "1,000",
        "threshold 0.5",
    ]
    assert sorted(reversed(fresh), key=sort_key) == fresh
    assert sort_key("reproducedly") == sort_key(
        "reproducedly "
    )  # a word, not a verdict
    assert sort_key("reproducedly")[0] == 1


def test_sortable_table_script_names_its_table():
    html = sortable_table_script("tab-x").data
    assert html.startswith('<script data-sortable-table="tab-x">')
    assert 'getElementById("tab-x")' in html and "aria-sort" in html
    assert '[["not reproduced", 2], ["inconclusive", 1], ["reproduced", 0]]' in html


@pytest.mark.parametrize(
    "alpha, delta", [(0.3, (0.0, 0.0)), (10.0, (1.0, -1.0)), (30.0, (0.5, 0.2))]
)
def test_the_printed_distance_is_one_tap_error(alpha, delta):
    """The widget prints 2(1 − p_target) as the distance to a one-tap convolution: that is
    one_tap_error's ‖p − c‖₁ when the target key is on the grid."""
    from attnconv.chapters.interactive import one_tap_error
    from attnconv.chapters.shared.head_state import HeadState

    err = one_tap_error(HeadState(delta=delta, alpha=alpha))
    assert 2 * (1 - target_weight(alpha, delta)) == pytest.approx(err, abs=1e-12)


def test_a_live_picker_has_a_width_slider_and_needs_its_grid():
    """With α, the picker carries a log-scale width slider starting at α rounded to its steps,
    and the grid and query its page computes the heads' weights on; without them it refuses."""
    conv = edge_blur_conv(torch.float64)
    shifts = kernel_shifts(3).tolist()
    slices = torch.stack([conv.weight[:, :, a + 1, b + 1].t() for a, b in shifts])
    args = (shifts, head_matrices(conv_to_mhsa(conv)), slices, [1.0] * 9)
    html = lemma1_head_picker(*args, alpha=18.02, grid=(34, 34), query=(13, 16)).data
    assert 'data-role="alpha"' in html and 'value="1.26"' in html
    assert (
        "&quot;live&quot;: {&quot;grid&quot;: [34, 34], &quot;query&quot;: [13, 16]}"
        in html
    )
    assert 'data-role="alpha"' not in lemma1_head_picker(*args).data
    with pytest.raises(ValueError, match="grid of keys"):
        lemma1_head_picker(*args, alpha=18.02)
    with pytest.raises(ValueError, match="outside"):
        lemma1_head_picker(*args, alpha=500.0, grid=(34, 34), query=(13, 16))


def test_each_preset_lies_on_the_sliders_steps_and_has_a_button():
    lo, hi = (math.log10(a) for a in EXPLORER_ALPHA_RANGE)
    for p in EXPLORER_PRESETS:
        assert lo <= p.log_alpha <= hi and round(p.log_alpha, 2) == p.log_alpha, p
        for d in p.delta:
            assert EXPLORER_DELTA_RANGE[0] <= d <= EXPLORER_DELTA_RANGE[1], p
            assert round(d, 2) == d, p
        head_explorer_widget((*p.delta, p.alpha))  # a start the sliders can show
    html = head_explorer_widget().data
    assert _initial(html)["presets"] == [
        {"key": p.key, "delta": list(p.delta), "log_alpha": p.log_alpha}
        for p in EXPLORER_PRESETS
    ]
    for i, p in enumerate(EXPLORER_PRESETS):
        assert (
            f'<button type="button" data-preset="{i}" data-key="{p.key}">{p.label}</button>'
            in html
        )
    assert explorer_preset("one-hot").alpha == 10.0
    with pytest.raises(KeyError, match="one-hot"):
        explorer_preset("nope")


#: What the readout's lines say in words at each preset (the numbers are checked against
#: Python's separately): the target weight's, the window mass's and the distance's.
PRESET_WORDS = {
    "wide": ("under half", "outside the window", "0 is one tap, 2 the farthest"),
    "one-hot": ("nearly one-hot", "nearly all", "near 0: the head is one tap"),
    "between": ("under half", "nearly all", "0 is one tap, 2 the farthest"),
    "far": ("nearly one-hot", "the 3×3 kernel is empty", "the target is outside"),
}

EXPLORER_READ_JS = """(w) => ({
  sliders: ['alpha', 'delta1', 'delta2'].map(
    r => parseFloat(w.querySelector(`input[data-role=${r}]`).value)),
  target: w.querySelector('[data-role=target]').textContent,
  weight: w.querySelector('[data-role=target-weight]').textContent,
  mass: w.querySelector('[data-role=window-mass]').textContent,
  distance: w.querySelector('[data-role=distance]').textContent,
  lines: [...w.querySelectorAll('[data-role=readout] p')].map(p => p.textContent)})"""

_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")


def _printed_distance(text: str) -> float:
    """The distance the readout prints: 0.52, or 3.6×10⁻⁴ below 0.01."""
    number = text.split(": ", 1)[1].split(" ")[0]
    if "×10" in number:
        mantissa, power = number.split("×10")
        return float(mantissa) * 10.0 ** int(power.translate(_SUPERSCRIPT))
    return float(number)


@pytest.mark.parametrize("how", ["click", "Enter", "Space"])
def test_each_preset_button_sets_the_sliders_and_the_readout_to_pythons(browser, how):
    """Start the explorer elsewhere (ch. 6's start), press each preset button (a click, or
    the key on the focused button), and compare the three sliders with the preset and each
    printed number with Python's for that state: the target key, its weight (6 decimals), the
    3×3 window mass (4 decimals) and the distance to a one-tap convolution 2(1 − p_target) (two
    significant digits), and the words each line says."""
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_content(head_explorer_widget((1.0, -1.0, 1.0), widget_id="x").data)
    w = page.query_selector("#x")
    for i, p in enumerate(EXPLORER_PRESETS):
        button = page.query_selector(f"#x button[data-preset='{i}']")
        if how == "click":
            button.click()
        else:
            button.focus()
            page.keyboard.press(how)
        got = page.evaluate(EXPLORER_READ_JS, w)
        assert got["sliders"] == [p.log_alpha, *p.delta], (p.key, got)
        t = target_key(p.delta)
        shift = f"({t[0] - 4}, {t[1] - 4})".replace("-", "\u2212")
        assert got["target"] == shift, (p.key, got)
        weight = target_weight(p.alpha, p.delta)
        assert abs(float(got["weight"]) - weight) <= 5e-7 + 1e-12, (p.key, got)
        window = head_weights(p.alpha, p.delta)[3:6, 3:6].sum()
        assert abs(float(got["mass"]) - window) <= 5e-5 + 1e-12, (p.key, got)
        if max(abs(t[0] - 4), abs(t[1] - 4)) <= 1:
            distance = 2 * (1 - weight)
            assert _printed_distance(got["distance"]) == pytest.approx(
                distance, rel=0.05
            ), (p.key, got)
        else:
            assert got["distance"].startswith("the target is outside the 3×3 kernel")
        for line, words in zip(got["lines"], PRESET_WORDS[p.key]):
            assert words in line, (p.key, got["lines"])
    page.close()
    assert not errors, errors


def test_the_explorer_calls_a_head_nearly_one_hot_at_the_glossarys_threshold():
    """The readout's "nearly one-hot" is the glossary's term: more than claims.ONE_HOT on one
    key, carried in the widget's data and read by its script."""
    from attnconv.chapters.live_widgets import head_explorer_widget
    from attnconv.experiments.claims import ONE_HOT

    html = head_explorer_widget().data
    data = json.loads(unescape(re.search(r"data-initial='([^']*)'", html).group(1)))
    assert data["one_hot"] == ONE_HOT
    assert "pt > init.one_hot ? 'nearly one-hot (over ' + init.one_hot" in html
