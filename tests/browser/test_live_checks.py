"""The browser checks of the live widgets (tests/browser/book_checks/live.py) on a page holding
the book's widgets (attnconv.chapters.live_widgets): they pass, and a widget whose script does
not run, or a weight that differs from Python's, fails. Skipped without Chromium."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import torch

from attnconv import conv_to_mhsa, kernel_shifts
from attnconv.chapters.lemma1_picture import edge_blur_conv, head_matrices
from attnconv.chapters.live_figures import lemma2_alpha_widget, pruning_threshold_widget
from attnconv.chapters.live_query_explorer import query_explorer_widget
from attnconv.chapters.live_widgets import (
    head_explorer_widget,
    lemma1_head_picker,
    sortable_table_script,
)

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("check_book", HERE / "check_book.py")
check_book = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_book)

TABLE = (
    "<table id='t'><thead><tr><th><p>claim</p></th><th><p>n</p></th></tr></thead><tbody>"
    "<tr class='row-even'><td>b</td><td>10</td></tr><tr class='row-odd'><td>a</td><td>9</td></tr>"
    "<tr class='row-even'><td>c</td><td>100</td></tr></tbody></table>"
)


def _widgets() -> str:
    conv = edge_blur_conv(torch.float64)
    shifts = kernel_shifts(3).tolist()
    slices = torch.stack([conv.weight[:, :, a + 1, b + 1].t() for a, b in shifts])
    picker = lemma1_head_picker(
        shifts,
        head_matrices(conv_to_mhsa(conv)),
        slices,
        [1.0] * 9,
        alpha=18.0,
        grid=(8, 9),
        query=(1, 4),  # one row from the top: its keys reach the grid's edge
    )
    return (
        head_explorer_widget().data
        + picker.data
        + TABLE
        + sortable_table_script("t").data
    )


def _run(browser, body: str):
    context = browser.new_context(viewport=check_book.VIEWPORT)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_content(
        f"<html><body><main><article>{body}</article></main></body></html>"
    )
    rep, info = check_book.Report(), {}
    check_book.check_live_widgets(page, rep, "book/x.html", info)
    context.close()
    return rep, info, errors


def test_the_book_widgets_pass(browser):
    rep, info, errors = _run(browser, _widgets())
    assert not errors and not rep.failures, (errors, dict(rep.failures))
    explorer, picker, table = info["live_widgets"]
    # three sliders and four preset buttons
    assert explorer["controls"] == 7 and explorer["keyboard_changes_readout"]
    weights = explorer["target_weight"]
    assert weights["log10 alpha = 1.26"]["alpha"] == 10**1.26
    assert 0.1 < weights["log10 alpha = 0.3"]["python"] < 0.99  # a blur: a real test
    assert weights["keyboard"]["alpha"] < 10.0  # moved down from 10 by keys
    assert weights["outside"] == (
        "the target is outside the 3\u00d73 kernel: no one-tap 3\u00d73 convolution is near"
    )
    assert picker["controls"] == 10 and picker["keyboard_changes_readout"]
    blur = picker["weights"]["log10 alpha = 0.3"]
    assert 0.1 < blur["python"] < 0.99 and blur["printed"] == round(blur["python"], 6)
    assert [s["pressed"] for s in picker["arrow_keys"]] == [1, 4, 3, 0, 8, 0]
    assert table["click_sorts"] and table["enter_sorts"]


def test_a_sorted_table_keeps_its_stripes(browser):
    context = browser.new_context(viewport=check_book.VIEWPORT)
    page = context.new_page()
    page.set_content(TABLE + sortable_table_script("t").data)
    page.click("th >> nth=1 >> button")
    rows = page.evaluate(
        "() => [...document.querySelectorAll('tbody tr')].map(r => [r.className, r.textContent])"
    )
    context.close()
    assert rows == [["row-even", "a9"], ["row-odd", "b10"], ["row-even", "c100"]]


VERDICTS = (
    "<table id='t'><thead><tr><th>verdict</th><th>on fresh seeds</th></tr></thead><tbody>"
    "<tr><td>not reproduced</td><td>0 of 8 seeds</td></tr>"
    "<tr><td>reproduced <em>fragile</em></td><td>+2.75 epochs</td></tr>"
    "<tr><td>inconclusive</td><td>\u221210.0 points</td></tr>"
    "<tr><td>reproduced</td><td><span data-sort='-20'>far below</span></td></tr>"
    "</tbody></table>"
)


def test_verdicts_sort_by_rank_and_mixed_units_by_number(browser):
    context = browser.new_context(viewport=check_book.VIEWPORT)
    page = context.new_page()
    page.set_content(VERDICTS + sortable_table_script("t").data)
    column = "() => [...document.querySelectorAll('tbody tr')].map(r => r.cells[%d].textContent)"
    page.click("th >> nth=0 >> button")
    by_verdict = page.evaluate(column % 0)
    page.click("th >> nth=0 >> button")
    descending = page.evaluate(column % 0)
    page.click("th >> nth=1 >> button")
    by_number = page.evaluate(column % 1)
    rep, info = check_book.Report(), {}
    check_book.check_live_widgets(page, rep, "book/x.html", info)
    context.close()
    assert by_verdict == [
        "reproduced fragile",
        "reproduced",
        "inconclusive",
        "not reproduced",
    ]
    assert descending == [
        "not reproduced",
        "inconclusive",
        "reproduced fragile",
        "reproduced",
    ]
    assert by_number == [
        "far below",
        "\u221210.0 points",
        "0 of 8 seeds",
        "+2.75 epochs",
    ]
    assert not rep.failures and info["live_widgets"][0]["click_sorts"]


def test_a_widget_without_its_script_fails(browser):
    body = head_explorer_widget().data.split("<script>")[0] + "</div>" + TABLE
    rep, _, _ = _run(browser, body)
    texts = [t for _, t in rep.failures["interactive"]]
    assert any("changes nothing" in t for t in texts), texts


def test_a_printed_weight_off_pythons_fails(browser):
    html = head_explorer_widget().data.replace(
        "pt.toFixed(6)", "(pt + 1e-5).toFixed(6)"
    )
    rep, _, _ = _run(browser, html)
    texts = [t for _, t in rep.failures["interactive"]]
    assert any("printed target weight" in t for t in texts), texts


def test_a_live_widget_counts_as_a_figure_and_may_not_reach_past_the_column(browser):
    context = browser.new_context(viewport={"width": 900, "height": 900})
    page = context.new_page()
    page.set_content(
        "<html><body style='margin:0'><article class='bd-article' style='width:500px'>"
        "<div class='cell'><div class='cell_output'>"
        + head_explorer_widget().data.replace("max-width: 640px", "width: 700px")
        + "</div></div></article></body></html>"
    )
    top = page.evaluate(check_book.FIGURE_TOP_JS)
    wide = page.evaluate(check_book.NARROW_OVERFLOW_JS, check_book.OUTPUT_PRE_SELECTOR)
    context.close()
    assert top == 0
    assert [o["what"] for o in wide] == ["div"], wide


def test_a_picker_whose_arrow_keys_do_nothing_fails(browser):
    """The same picker with its keyboard handler removed: the check names the first key."""
    html = _widgets().replace(
        "b.addEventListener('keydown'", "b.addEventListener('keyup'"
    )
    rep, _, errors = _run(browser, html)
    texts = [t for _, t in rep.failures["interactive"]]
    assert not errors and any("ArrowRight leaves head 1 pressed" in t for t in texts), (
        texts
    )


def test_a_picker_weight_off_pythons_fails(browser):
    html = _widgets().replace(
        "textContent = head.weight.toFixed(6)",
        "textContent = (head.weight + 1e-5).toFixed(6)",
    )
    rep, _, _ = _run(browser, html)
    texts = [t for _, t in rep.failures["interactive"]]
    assert any("printed weight" in t and "Python" in t for t in texts), texts


ROWS = [  # six heads of two layers: a uniform one, one along a line, four of rising condition
    {"layer": 0, "head": 0, "lambda_max": 1e-7, "condition": 2.0},
    {"layer": 0, "head": 1, "lambda_max": 0.3, "condition": float("inf")},
    {"layer": 0, "head": 2, "lambda_max": 0.3, "condition": 40.0},
    {"layer": 1, "head": 0, "lambda_max": 0.3, "condition": 500.0},
    {"layer": 1, "head": 1, "lambda_max": 0.3, "condition": 5e3},
    {"layer": 1, "head": 2, "lambda_max": 0.3, "condition": 3e6},
]


def _figures() -> str:
    return (
        lemma2_alpha_widget(alpha=1.0).data
        + pruning_threshold_widget(ROWS, "#2ca02c", 1e-5).data
    )


def test_the_live_figures_pass(browser):
    rep, info, errors = _run(browser, _figures())
    assert not errors and not rep.failures, (errors, dict(rep.failures))
    lemma2, pruning = info["live_widgets"]
    assert lemma2["controls"] == 1 and lemma2["keyboard_changes_readout"]
    blur = lemma2["masses"]["log10 alpha = 0.3"]
    assert 0.1 < blur["python"]["target_weight"] < 0.99  # a blur: a real test
    assert (
        blur["python"]["off_mass"] <= blur["python"]["bound"]
    )  # Lemma 2's bound holds
    sharp = lemma2["masses"]["log10 alpha = 1.26"]["printed"]
    assert (
        0 < sharp["off_mass"] < 1e-7
    )  # a near one-hot head, printed without cancellation
    assert pruning["pruned"]["log10 threshold = 3.0"]["python"] == {
        "0": [0, 1],
        "1": [1, 2],
    }
    assert pruning["pruned"]["log10 threshold = 5.0"]["widget"] == {
        "0": [0, 1],
        "1": [2],
    }


def test_a_lemma2_head_off_pythons_fails(browser):
    html = _figures().replace(
        "s.push(-alpha * (u * u + v * v))", "s.push(-0.9 * alpha * (u * u + v * v))"
    )
    assert html != _figures()
    rep, _, _ = _run(browser, html)
    texts = [t for _, t in rep.failures["interactive"]]
    assert any("printed target_weight" in t for t in texts), texts
    assert any("printed off_mass" in t for t in texts), texts


def test_a_pruning_rule_off_the_papers_fails(browser):
    html = _figures().replace("|| cond > t", "|| cond > 10 * t")
    assert html != _figures()
    rep, _, _ = _run(browser, html)
    texts = [t for _, t in rep.failures["interactive"]]
    assert any("at 10^3.0 it prunes" in t for t in texts), texts


def _explorer(n_images: int = 2) -> str:
    """The query explorer on two hand-made layers (a sharp, a broad and an elongated head) and
    ``n_images`` 8×8 images of 4×4 tokens."""
    records = [
        {
            "centers": [[-1.0, 1.0], [0.5, 0.0], [2.0, -2.0]],
            "inverse_covariance": [
                [[8.0, 0.0], [0.0, 8.0]],
                [[0.2, 0.0], [0.0, 0.2]],
                [[3.0, 1.2], [1.2, 0.8]],
            ],
        },
        {
            "centers": [[0.0, 0.0], [1.0, 1.0], [-3.0, 0.0]],
            "inverse_covariance": [[[1.0, 0.0], [0.0, 1.0]]] * 3,
        },
    ]
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, (8, 8, 3), dtype=np.uint8) for _ in range(n_images)]
    labels = ["a", "b", "c"][:n_images]
    return query_explorer_widget(records, images, labels, (4, 4), (0, 0, 1, 2)).data


def test_the_query_explorer_passes(browser):
    rep, info, errors = _run(browser, _explorer())
    assert not errors and not rep.failures, (errors, dict(rep.failures))
    (explorer,) = info["live_widgets"]
    assert explorer["controls"] == 6 and explorer["keyboard_changes_readout"]
    corner = explorer["maxima"]["layer 1, query (1, 1)"]
    assert corner["python"][0]["shift"] == [0, 1]  # Δ = (−1, 1), cut by the top edge
    assert 0.5 < corner["python"][0]["weight"] < 1  # a sharp head: a real test


def test_the_query_explorer_on_one_image_passes_without_image_buttons(browser):
    """Chapter 7b's form: one test image (the maps do not depend on it), so no image buttons;
    the layer buttons and the two sliders still reach every map, by keyboard too."""
    rep, info, errors = _run(browser, _explorer(n_images=1))
    assert not errors and not rep.failures, (errors, dict(rep.failures))
    (explorer,) = info["live_widgets"]
    assert explorer["controls"] == 4 and explorer["keyboard_changes_readout"]


def test_a_query_explorer_off_pythons_fails(browser):
    html = _explorer().replace(
        "2 * a[1] * u * v", "0 * a[1] * u * v"
    )  # drops Σ⁻¹'s off-diagonal
    assert html != _explorer()
    rep, _, _ = _run(browser, html)
    texts = [t for _, t in rep.failures["interactive"]]
    assert any("the page's largest weight" in t for t in texts), texts


def test_every_header_shows_it_can_sort_before_any_click(browser):
    """aria-sort="none" (drawn as ⇅) on every header until it sorts; then the sorted one says
    its direction and the others go back to "none"."""
    context = browser.new_context(viewport=check_book.VIEWPORT)
    page = context.new_page()
    page.set_content(TABLE + sortable_table_script("t").data)
    states = "() => [...document.querySelectorAll('th')].map(t => t.getAttribute('aria-sort'))"
    before = page.evaluate(states)
    mark = page.evaluate(
        "() => getComputedStyle(document.querySelector('.sort-button'), '::after').content"
    )
    page.click("th >> nth=1 >> button")
    after = page.evaluate(states)
    context.close()
    assert before == ["none", "none"] and mark == '" \u21c5"'
    assert after == ["none", "ascending"]


def test_the_explorers_sliders_say_their_values(browser):
    """Each of the head explorer's three sliders tells a screen reader its value in the
    figure's words (α = …, Δ₁ = …, Δ₂ = …), not a bare step number."""
    context = browser.new_context(viewport=check_book.VIEWPORT)
    page = context.new_page()
    page.set_content(head_explorer_widget().data)
    texts = page.evaluate(
        "() => [...document.querySelectorAll('input[type=range]')]"
        ".map(i => i.getAttribute('aria-valuetext'))"
    )
    context.close()
    assert texts == ["α = 10.0", "Δ₁ = 1.00", "Δ₂ = −1.00"], texts


def test_condition_numbers_are_written_times_ten_and_fit_their_cells(browser):
    """Figure 8.3 writes a large condition number as the book's text does (2.4×10¹², the live
    kit's ``timesTen``), small ones as plain numbers, and every label of nine heads a layer,
    the book's widest case, lies inside its cell."""
    rows = [
        {"layer": 0, "head": h, "lambda_max": 0.3, "condition": c}
        for h, c in enumerate(
            (2.4e12, 2.0e13, 2.7e8, 1.2e5, 2.7e4, 3.1, 40.0, 500.0, 7e3)
        )
    ]
    page = browser.new_page()
    try:
        page.set_content(
            "<html><body>" + pruning_threshold_widget(rows, "#2ca02c", 1e-5).data
            + "</body></html>"
        )  # fmt: skip
        got = page.evaluate(
            """() => {
              const svg = document.querySelector('svg');
              const rects = [...svg.querySelectorAll('rect')].slice(0, 9);
              const texts = [...svg.querySelectorAll('text')].filter(t => t.getAttribute('x')
                && rects.some(r => Math.abs(+r.getAttribute('x') + +r.getAttribute('width') / 2
                                   - +t.getAttribute('x')) < 1e-6));
              return texts.slice(0, 9).map((t, i) => {
                const b = t.getBBox(), r = rects[i];
                return [t.textContent, b.x >= +r.getAttribute('x'),
                        b.x + b.width <= +r.getAttribute('x') + +r.getAttribute('width')];
              });
            }"""
        )
    finally:
        page.close()
    labels = [t for t, _, _ in got]
    assert labels[:5] == ["2.4×10¹²", "2.0×10¹³", "2.7×10⁸", "1.2×10⁵", "2.7×10⁴"]
    assert labels[5:] == ["3.1", "40", "500", "7.0×10³"]
    assert all(left and right for _, left, right in got), got
