"""Chapter 18's confirmatory machinery end to end, on the exploratory runs of the earlier grid
standing in for the fresh seeds (4×4 tokens, 510 images): the arms' summaries, the frozen
contrasts with Holm and the per-seed cross-check, the claims over sizes, and the chapter's
table and figure."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from attnconv.chapters import beyond as chapter  # noqa: E402
from attnconv.evidence import beyond as fair  # noqa: E402
from attnconv.experiments.registry import load_series  # noqa: E402
from attnconv.experiments.verdicts import VERDICTS  # noqa: E402

STAND_IN = {"vit": "vit", "vit_mimetic": "mimetic", "gpsa": "random", "convit": "convit",
            "impulse": "impulse"}  # fmt: skip


@pytest.fixture()
def stand_ins(monkeypatch):
    runs = {arm: load_series(f"beyond2/{s}/n510") for arm, s in STAND_IN.items()}
    monkeypatch.setattr(fair, "arm_runs", lambda arm, size: runs[arm])
    return runs


def test_contrasts_follow_the_one_rule_and_holm(stand_ins):
    assert len(stand_ins["vit"]) == 4  # the earlier grid's four seeds
    results = fair.contrast_results()
    assert {r.key for r in results} == {c["key"] for c in fair.BEYOND["contrasts"]}
    for r in results:
        assert r.verdict in VERDICTS and r.unadjusted in VERDICTS
        assert r.holm_p is None or r.holm_p >= r.p  # Holm never lowers a p-value
        # Holm can only take a "reproduced" away
        assert r.verdict == r.unadjusted or r.unadjusted == VERDICTS[0]
    claims = fair.claim_verdicts(results)
    assert set(claims) == {c["key"] for c in fair.BEYOND["contrasts"]}


def test_the_chapter_shows_them(stand_ins):
    assert set(stand_ins) == set(fair.ARMS)
    table = chapter.fair_table().data
    assert "plain ViT" in table and "pending" not in table
    rows = chapter.fair_contrasts_table(fair.contrast_results()).data.splitlines()
    assert len(rows) == 2 + sum(len(c["sizes"]) for c in fair.BEYOND["contrasts"])
    fig = chapter.plot_fair({"sizes": {"1000": {"test": 0.27}, "4000": {"test": 0.33}}})
    assert len(fig.axes) == 2
    assert fair.fitted_regime()  # every stand-in arm has a gap


def test_pending_without_runs():
    assert fair.arm_summary("vit", 1000) is None or fair.arm_runs("vit", 1000)
    assert "pending" in chapter.fair_table().data or fair.arm_runs("vit", 1000)
