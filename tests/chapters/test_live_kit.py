"""The live widgets' labelled range inputs, made in one place (``live_kit.range_row``): in every
widget each range input has a unique id, a ``<label>`` naming it, the ``<output>`` its script
writes, and a start value inside its range on its step grid (parsed from the widgets' HTML)."""

from types import SimpleNamespace

import numpy as np
import pytest
from bs4 import BeautifulSoup

from attnconv.chapters.live_figures import lemma2_alpha_widget, pruning_threshold_widget
from attnconv.chapters.live_query_explorer import query_explorer_widget
from attnconv.chapters.live_widgets import head_explorer_widget
from attnconv.chapters.shared.live_kit import range_row


def controls(html: str) -> SimpleNamespace:
    """The range inputs' attributes, and the ids that labels and outputs name."""
    soup = BeautifulSoup(html, "html.parser", multi_valued_attributes=None)
    return SimpleNamespace(
        ranges=[dict(i.attrs) for i in soup.find_all("input", type="range")],
        labels=[t.get("for") for t in soup.find_all("label")],
        outputs=[t.get("for") for t in soup.find_all("output")],
    )


def _widgets():
    rows = [{"layer": 0, "head": 0, "lambda_max": 1.0, "condition": 50.0}]
    records = [
        {"centers": [[-1.0, 1.0]], "inverse_covariance": [[[8.0, 0.0], [0.0, 8.0]]]}
    ]
    image = np.zeros((8, 8, 3), dtype=np.uint8)
    yield "head explorer", head_explorer_widget().data
    yield "Lemma 2", lemma2_alpha_widget(1.0, (1, 1), (9, 9), (4, 4)).data
    yield "pruning", pruning_threshold_widget(rows, "#000000", 1e-5).data
    yield (
        "query",
        query_explorer_widget(records, [image], ["x"], (4, 4), (0, 0, 1, 2)).data,
    )


@pytest.mark.parametrize("name, html", list(_widgets()))
def test_every_range_input_is_labelled_has_an_output_and_starts_in_range(name, html):
    got = controls(html)
    assert got.ranges, name
    ids = [r["id"] for r in got.ranges]
    assert len(set(ids)) == len(ids)
    for r in got.ranges:
        assert r["id"] in got.labels and r["id"] in got.outputs, (name, r["id"])
        lo, hi, step, value = (float(r[k]) for k in ("min", "max", "step", "value"))
        assert lo <= value <= hi and step > 0, (name, r)
        assert abs((value - lo) / step - round((value - lo) / step)) < 1e-6, (name, r)


def test_range_row_formats_its_numbers():
    got = controls(range_row("w", "a", "α", -1.0, 1.5, 0.123, step=0.01))
    assert got.ranges == [
        {"type": "range", "id": "w-a", "data-role": "a", "min": "-1", "max": "1.5",
         "step": "0.01", "value": "0.12"}
    ]  # fmt: skip
    whole = controls(range_row("w", "r", "row", 1, 16, 5, step=1, digits=0)).ranges[0]
    assert (whole["min"], whole["max"], whole["step"], whole["value"]) == (
        "1",
        "16",
        "1",
        "5",
    )
