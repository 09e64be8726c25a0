"""How the chapters show the verdicts (ch. 12b's claims table and dropdowns, ch. 17's scorecard):
presentation only, every verdict and number as the rule gives it."""

import matplotlib

matplotlib.use("Agg")

import pytest

from attnconv.chapters import paper_verdicts as pv
from attnconv.experiments.verdicts import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    Evidence,
)


def _claim(verdict=REPRODUCED, evidence=None, confounds=()):
    return Claim(
        quote="the heads attend on specific pixel",
        source="Sec. 4.2",
        test="a test",
        evidence=evidence or [Evidence("run a", "3 heads")],
        verdict=verdict,
        reason="because",
        confounds=confounds,
        where="sec-six-layers-grid",
        key="grid_layer4",
    )


def test_off_setting_runs_are_gathered_under_one_line():
    c = _claim(
        evidence=[
            Evidence("run a", "3 heads"),
            Evidence("run b", "2 heads" + pv.OFF_SETTING_NOTE),
        ]
    )
    at, off = pv.split_evidence(c)
    assert [e.run for e in at] == ["run a"] and [e.measured for e in off] == ["2 heads"]
    text = pv.claim_dropdowns([c])
    assert text.startswith("::::{dropdown}") and text.rstrip().endswith("::::")
    assert "not the claim's setting" not in text
    assert text.count("listed, not counted") == 1
    assert f"**{REPRODUCED}**" in text


def test_confounds_are_named_once():
    a = _claim(confounds=("Confound one.",))
    b = _claim(confounds=("Confound one.", "Confound two."))
    note = pv.confounds_note([a, b])
    assert note.count("Confound one.") == 1 and note.count("Confound two.") == 1


@pytest.mark.parametrize("verdict", [REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE])
def test_overview_row_has_a_badge_and_a_link(verdict):
    table = pv.claims_overview([_claim(verdict)])
    assert table.count("\n") == 2
    assert pv.VERDICT_BADGES[verdict][0] in table and "<sec-six-layers-grid>" in table


def test_scorecard_counts_every_verdict():
    claims = [_claim(REPRODUCED), _claim(REPRODUCED), _claim(INCONCLUSIVE)]
    assert pv.verdict_counts(claims) == {
        REPRODUCED: 2,
        NOT_REPRODUCED: 0,
        INCONCLUSIVE: 1,
    }
    table = pv.scorecard_table(claims)
    assert "| 2 |" in table and "| 1 |" in table and "| 0 |" in table
    assert "{bdg-danger}`errata`" in table
    fig = pv.plot_scorecard(claims)
    assert len(fig.axes) == 1
