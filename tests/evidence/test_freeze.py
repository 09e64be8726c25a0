"""The protocol is frozen: its content is the frozen one, and no confirmatory run or result
entered git at or before the freeze commit."""

import os
import subprocess
from pathlib import Path

import pytest

from attnconv.evidence import freeze, protocol

ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT.parent / "shared" / "papers" / "002_3c48580c3ebf0097.txt"


def _git(*args) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def _history_available() -> bool:
    try:
        return _git("rev-parse", "--is-shallow-repository") == "false"
    except (OSError, subprocess.CalledProcessError):
        return False


def test_content_is_the_frozen_one():
    assert protocol.digest() == freeze.FROZEN_DIGEST, (
        "the protocol's content changed after the freeze: record the change in "
        "protocol.AMENDMENTS (date, claims, what, why) and leave the frozen content as it was"
    )


def test_the_digest_sees_a_change(monkeypatch):
    """The check can fail: a margin moved by a hundredth of a point changes the digest."""
    claim = protocol.CLAIMS["close_to_resnet"]
    moved = type(claim)(**{**claim.__dict__, "margin": 0.0201})
    monkeypatch.setitem(protocol.CLAIMS, "close_to_resnet", moved)
    assert protocol.digest() != freeze.FROZEN_DIGEST


def test_no_confirmatory_file_before_the_freeze():
    if not _history_available():
        # a checkout without its history (a copy of the tree, a shallow clone) cannot show the
        # order; the digest test above still holds the content to the frozen one
        pytest.skip("no full git history here: the order of commits cannot be read")
    if freeze.FREEZE_COMMIT is None:
        # the freeze commit itself: nothing guarded may be in it
        tracked = _git("ls-files", *[f"book/{p}" for p in freeze.GUARDED_PATHS])
        assert tracked == ""
        return
    _git("merge-base", "--is-ancestor", freeze.FREEZE_COMMIT, "HEAD")
    for rel in freeze.GUARDED_PATHS:
        added = _git(
            "log", "--diff-filter=A", "--format=%H", "--", f"book/{rel}"
        ).split()
        for commit in added:
            assert commit != freeze.FREEZE_COMMIT
            # the adding commit descends from the freeze commit
            subprocess.run(
                ["git", "merge-base", "--is-ancestor", freeze.FREEZE_COMMIT, commit],
                cwd=ROOT,
                check=True,
            )


def test_every_paper_quote_is_verbatim():
    if not PAPER.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"CI needs the paper's text beside the repository: {PAPER}")
        pytest.skip("the paper's text is not beside this checkout")
    from attnconv.experiments.verdicts import paper_text_contains

    text = PAPER.read_text()
    missing = [
        k for k, c in protocol.CLAIMS.items() if not paper_text_contains(c.quote, text)
    ]
    assert missing == []


def test_every_claim_names_what_it_needs():
    kinds = {"share", "superiority", "non-inferiority", "equivalence"}
    for key, c in protocol.CLAIMS.items():
        assert c.kind in kinds, key
        assert set(c.arms) <= set(protocol.ARMS), key
        assert c.alternatives, key
        if c.kind in ("non-inferiority", "equivalence"):
            assert c.margin and c.reason, key
        if c.kind == "share":
            assert c.null or c.margin, key
    seeds = set(protocol.CONFIRMATORY_SEEDS) | set(protocol.TUNING_SEEDS)
    assert seeds.isdisjoint(range(0, 10))  # never used by the exploratory series
