"""Chapter 17's margin explorer: its verdicts are the rule's (at ×1 the judge's verdict, at ×0.5
and ×2 the judge's "margin halved" and "margin doubled" alternatives), its rows are every judged
claim with a margin, and in the browser each position shows the verdicts computed in Python."""

import json
import re
from html import unescape

import pytest
from conftest import slide_and_read

from attnconv.chapters.margin_slider import (
    FROZEN_AT,
    MARGIN_MULTIPLIERS,
    margin_rows,
    margin_widget,
)
from attnconv.evidence.judge import confirmatory_verdicts
from attnconv.evidence.protocol import CLAIMS as FROZEN


@pytest.fixture(scope="module")
def fresh():
    return confirmatory_verdicts()


def test_each_position_is_the_rules_verdict_and_the_protocols_alternatives(fresh):
    rows = margin_rows(fresh)
    halved, doubled = MARGIN_MULTIPLIERS.index(0.5), MARGIN_MULTIPLIERS.index(2.0)
    assert rows
    for r in rows:
        got = fresh[r["key"]]
        assert r["verdicts"][FROZEN_AT] == got.verdict
        assert r["verdicts"][halved] == got.alternatives["margin halved"]
        assert r["verdicts"][doubled] == got.alternatives["margin doubled"]
        assert r["lo"] <= r["estimate"] <= r["hi"]
        assert r["margin"] == pytest.approx(100 * FROZEN[r["key"]].margin)


def test_the_rows_are_every_judged_non_inferiority_or_equivalence_claim(fresh):
    want = {
        k
        for k, got in fresh.items()
        if got.interval is not None
        and FROZEN[k].margin
        and FROZEN[k].kind in ("non-inferiority", "equivalence")
    }
    assert {r["key"] for r in margin_rows(fresh)} == want


def test_a_wider_margin_never_turns_reproduced_into_something_else(fresh):
    """Monotone, as the rule is: an interval inside a margin stays inside a wider one."""
    for r in margin_rows(fresh):
        v = r["verdicts"]
        first = next((i for i, x in enumerate(v) if x.startswith("reproduced")), None)
        if first is not None:
            assert all(x.startswith("reproduced") for x in v[first:]), r["key"]


def test_the_widget_carries_the_rows_and_rejects_bad_input(fresh):
    rows = margin_rows(fresh)
    html = margin_widget(rows, alt="margins").data
    data = json.loads(unescape(re.search(r"data-initial='([^']*)'", html).group(1)))
    assert data["rows"] == rows and data["frozen"] == FROZEN_AT
    with pytest.raises(ValueError, match="rows is empty"):
        margin_widget([])
    with pytest.raises(ValueError, match="outside"):
        margin_widget(rows, at=len(MARGIN_MULTIPLIERS))


def test_in_the_browser_every_position_shows_pythons_verdicts(browser, fresh):
    rows = margin_rows(fresh)
    page = browser.new_page()
    page.set_content(margin_widget(rows, widget_id="m").data)
    for i in range(len(MARGIN_MULTIPLIERS)):
        shown = slide_and_read(page, "m", "mult", i, "verdicts")
        assert shown == [r["verdicts"][i] for r in rows], i
    page.close()


def test_the_widget_is_the_same_under_any_hash_seed():
    """nbval compares the saved HTML byte for byte: no set or dict order may leak into it."""
    import os
    import subprocess
    import sys

    code = (
        "from attnconv.chapters.margin_slider import margin_rows, margin_widget\n"
        "from attnconv.evidence.judge import confirmatory_verdicts\n"
        "print(margin_widget(margin_rows(confirmatory_verdicts())).data)"
    )
    out = {
        seed: subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert out["1"] == out["2"] == out["3"] and out["1"].startswith("<div")
