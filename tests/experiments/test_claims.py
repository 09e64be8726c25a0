"""The claims registry: every record typed, quoted verbatim, its margin held to its recorded value."""

import pytest
from conftest import paper_text

from attnconv.experiments import claims as cl
from attnconv.experiments.verdicts import (
    EQUIVALENCE,
    EXISTENCE,
    NON_INFERIORITY,
    paper_text_contains,
)

#: The margins as written before any result was computed: a change must be deliberate.
RECORDED_MARGINS = {
    "similar_or_better": 0.01,
    "close_to_resnet": 0.02,
    "no_gain": 0.01,
    "pruning_recovers": 0.01,
    "redundant": 0.005,
    "local_fewer_flops": 0.10,
}


def test_margins_hold_their_recorded_values():
    got = {k: c.margin for k, c in cl.CLAIMS.items() if c.margin is not None}
    assert got == pytest.approx(RECORDED_MARGINS)
    for c in cl.CLAIMS.values():
        if c.kind in (NON_INFERIORITY, EQUIVALENCE):
            assert c.margin and len(c.margin_reason) > 20, c.key
        if c.kind == EXISTENCE:
            assert c.threshold is not None, c.key


def test_one_term_one_threshold_for_one_key():
    assert cl.ONE_KEY_THRESHOLDS == (0.5, 0.9)
    assert cl.CLAIMS["learned_pixels"].thresholds == cl.ONE_KEY_THRESHOLDS


def test_records_refuse_a_missing_margin_or_threshold():
    base = dict(quote="q", source="s", title="t", setting="x", test="y")
    with pytest.raises(ValueError, match="margin"):
        cl.ClaimRecord("k", EQUIVALENCE, **base)
    with pytest.raises(ValueError, match="threshold"):
        cl.ClaimRecord("k", EXISTENCE, **base)
    with pytest.raises(ValueError, match="kind"):
        cl.ClaimRecord("k", "better", **base)
    with pytest.raises(KeyError, match="claims:"):
        cl.claim("nope")


def test_every_quote_is_verbatim():
    text = paper_text()
    for c in cl.CLAIMS.values():
        assert paper_text_contains(c.quote, text), c.key


def test_the_quote_check_fails_under_ci_without_the_paper(tmp_path, monkeypatch):
    """Beside a checkout without ``../shared/papers`` the quote tests skip; under CI they fail."""
    missing = tmp_path / "paper.txt"
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set"):
        paper_text(missing)
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception):
        paper_text(missing)
    missing.write_text("the text")
    assert paper_text(missing) == "the text"
