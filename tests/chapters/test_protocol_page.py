"""The protocol page's tables: the freeze record is checked (a changed protocol fails the page),
every claim and alternative is listed, and a fragile verdict is marked."""

import pytest

from attnconv.chapters import protocol as page
from attnconv.evidence import freeze, protocol
from attnconv.evidence.judge import ConfirmatoryVerdict, confirmatory_verdicts


def test_freeze_table_names_the_commit_and_fails_on_a_change(monkeypatch):
    assert freeze.FREEZE_COMMIT[:10] in page.freeze_table().data
    monkeypatch.setattr(freeze, "FROZEN_DIGEST", "0" * 64)
    with pytest.raises(AssertionError, match="changed after its freeze"):
        page.freeze_table()


def test_every_claim_and_alternative_is_listed():
    claims = page.claims_table().data
    assert claims.count("\n") == 1 + len(protocol.CLAIMS)
    rows = page.robustness_table(confirmatory_verdicts()).data
    n = sum(len(c.alternatives) for c in protocol.CLAIMS.values())
    assert rows.count("\n") == 1 + n


def test_a_fragile_verdict_is_marked():
    v = {k: ConfirmatoryVerdict(k, "pending", "") for k in protocol.CLAIMS}
    v["no_gain"] = ConfirmatoryVerdict(
        "no_gain",
        "reproduced at CPU scale",
        "",
        alternatives={"margin halved": "inconclusive"},
    )
    table = page.verdicts_table(v, {}).data
    assert "reproduced at CPU scale (fragile)" in table
    assert page.tally_words(v).startswith("of 18 claims: 1 reproduced")
