"""Chapter 9's threshold explorer: at 0.9 its count of fresh seeds is the judge's, at 0.5 the
judge's "threshold 0.5" alternative reads the same count, each dot is a plain loop's largest
probability over the heads of layers 1–2, and in the browser every position shows Python's
counts."""

import json
import re
from html import unescape

import pytest
from conftest import slide_and_read

from attnconv.chapters.peak_slider import PEAK_THRESHOLDS, peak_rows, peak_widget
from attnconv.evidence.judge import arm_runs, confirmatory_verdicts
from attnconv.evidence.protocol import CONFIRMATORY_SEEDS


@pytest.fixture(scope="module")
def runs():
    got = arm_runs("learned", CONFIRMATORY_SEEDS)
    if got is None:
        pytest.skip("the fresh learned seeds are not all saved")
    return got


@pytest.fixture(scope="module")
def rows(runs):
    return peak_rows({"fresh": runs})


def test_the_count_at_the_frozen_threshold_is_the_judges(rows):
    got = confirmatory_verdicts()["learned_pixels"]
    assert rows[0]["count"][PEAK_THRESHOLDS.index(0.9)] == got.shown


def test_each_dot_is_a_plain_loops_largest_peak_of_layers_1_and_2(runs, rows):
    for run, dot in zip(runs, rows[0]["trained"]):
        records = run.history.layer_records(-1)[:2]
        best = 0.0
        for record in records:
            for p in record["peak_probability"]:
                best = max(best, float(p))
        assert dot == pytest.approx(best, abs=5e-4)


def test_counts_fall_as_the_threshold_rises_and_match_the_dots(rows):
    for r in rows:
        assert r["count"] == sorted(r["count"], reverse=True)
        for t, n in zip(PEAK_THRESHOLDS, r["count"]):
            # the dots are rounded to 3 decimals; no dot sits within 5e-4 of a threshold here
            assert n == sum(v > t for v in r["trained"])
        assert max(r["untrained"]) < min(PEAK_THRESHOLDS)  # untrained heads are flat


def test_bad_input_is_one_line(rows):
    with pytest.raises(ValueError, match="rows is empty"):
        peak_widget([])
    with pytest.raises(ValueError, match="not one of the thresholds"):
        peak_widget(rows, at=0.42)
    with pytest.raises(ValueError, match="no runs in the group"):
        peak_rows({"none": []})


def test_the_widget_carries_the_rows(rows):
    html = peak_widget(rows, widget_id="p").data
    data = json.loads(unescape(re.search(r"data-initial='([^']*)'", html).group(1)))
    assert data["rows"] == rows and data["thresholds"] == list(PEAK_THRESHOLDS)


def test_in_the_browser_every_position_shows_pythons_counts(browser, rows):
    page = browser.new_page()
    page.set_content(peak_widget(rows, widget_id="p").data)
    for i in range(len(PEAK_THRESHOLDS)):
        shown = slide_and_read(page, "p", "t", i, "counts")
        assert shown == [[r["count"][i], r["null"][i]] for r in rows], i
    page.close()
