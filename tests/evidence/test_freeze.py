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


# --------------------------------------------------------------------------- the follow-up
def test_followup_content_is_the_frozen_one():
    from attnconv.evidence import followup

    assert followup.digest() == freeze.FOLLOWUP_DIGEST, (
        "the registered follow-up's content changed after its freeze: leave it as frozen"
    )


def test_followup_digest_sees_a_change(monkeypatch):
    from attnconv.evidence import followup

    monkeypatch.setattr(followup, "SEEDS", followup.SEEDS[:-1])
    assert followup.digest() != freeze.FOLLOWUP_DIGEST


def test_no_followup_file_before_its_freeze():
    if not _history_available():
        pytest.skip("no full git history here: the order of commits cannot be read")
    paths = [f"book/{p}" for p in freeze.FOLLOWUP_GUARDED_PATHS]
    if freeze.FOLLOWUP_FREEZE_COMMIT is None:
        assert _git("ls-files", *paths) == ""
        return
    _git("merge-base", "--is-ancestor", freeze.FOLLOWUP_FREEZE_COMMIT, "HEAD")
    for commit in _git("log", "--diff-filter=A", "--format=%H", "--", *paths).split():
        assert commit != freeze.FOLLOWUP_FREEZE_COMMIT
        subprocess.run(
            [
                "git",
                "merge-base",
                "--is-ancestor",
                freeze.FOLLOWUP_FREEZE_COMMIT,
                commit,
            ],
            cwd=ROOT,
            check=True,
        )


def test_followup_names_fresh_seeds_and_matches_the_learned_size():
    from attnconv.evidence import followup
    from attnconv.experiments.models import build_model

    used = set(protocol.CONFIRMATORY_SEEDS) | set(protocol.TUNING_SEEDS)
    used |= set(protocol.BEYOND["seeds"]) | {900, 901}  # chapter 18's tuning seeds
    fresh = set(followup.SEEDS) | set(followup.TUNING_SEEDS)
    assert fresh.isdisjoint(used) and fresh.isdisjoint(range(0, 10))

    def size(model, **kw):
        return sum(p.numel() for p in build_model(model, **kw).parameters())

    learned = size(
        "learned", hidden_size=32, intermediate_size=64, num_layers=6, downsample=2
    )
    w = followup.MATCHED_WIDTHS
    assert size("resnet18", widths=w) <= learned
    wider = tuple(x + x // w[0] for x in w)  # the next width (w + 1, ...)
    assert size("resnet18", widths=wider) > learned
    # every follow-up claim quotes the frozen claim it re-asks, word for word
    for c in followup.CLAIMS.values():
        assert any(c.quote == f.quote for f in protocol.CLAIMS.values()), c.key
    # no frozen grid value is at the end of the follow-up's grid
    frozen = {v for a in protocol.ARMS.values() for v in a.grid.get("lr", ())}
    grid = followup.LR_GRID["lr"]
    assert min(grid) < min(frozen) and max(grid) > max(frozen)


def test_followup_amendment_is_the_recorded_one():
    from attnconv.evidence import followup

    count, digest, _ = freeze.FOLLOWUP_AMENDMENTS[-1]
    assert followup.amendment_digest() == digest, (
        "the follow-up's amendment or the analysis code it fixes changed: record a new "
        "dated amendment instead"
    )
    assert count == len(followup.AMENDMENTS)
    # each amendment adds records, and only the first is the one that fixed the analysis
    counts = [c for c, _, _ in freeze.FOLLOWUP_AMENDMENTS]
    assert counts == sorted(set(counts))
    assert freeze.FOLLOWUP_AMENDMENTS[0][1:] == (
        freeze.FOLLOWUP_AMENDMENT_DIGEST,
        freeze.FOLLOWUP_AMENDMENT_COMMIT,
    )


def test_each_followup_amendment_commit_recorded_the_digest_it_names():
    """What git shows at each amendment's commit: freeze.py there records its digest, and the
    commits follow one another."""
    if not _history_available():
        pytest.skip("no full git history here: the order of commits cannot be read")
    earlier = freeze.FOLLOWUP_FREEZE_COMMIT
    for _, digest, commit in freeze.FOLLOWUP_AMENDMENTS:
        if commit is None:
            continue
        then = _git("show", f"{commit}:attnconv/evidence/freeze.py")
        assert digest in then
        subprocess.run(
            ["git", "merge-base", "--is-ancestor", earlier, commit],
            cwd=ROOT,
            check=True,
        )
        earlier = commit


def test_no_learned_or_generalized_followup_run_before_the_amendment():
    """The amendment changes the learned and generalized arms' analysis: none of their runs (nor
    any fresh follow-up run) entered git at or before its commit."""
    if not _history_available():
        pytest.skip("no full git history here: the order of commits cannot be read")
    paths = [
        "book/runs/followup",
        "book/runs/followup-tuning/learned",
        "book/runs/followup-tuning/generalized",
    ]
    if freeze.FOLLOWUP_AMENDMENT_COMMIT is None:
        assert _git("ls-files", *paths) == ""
        return
    for commit in _git("log", "--diff-filter=A", "--format=%H", "--", *paths).split():
        assert commit != freeze.FOLLOWUP_AMENDMENT_COMMIT
        subprocess.run(
            [
                "git",
                "merge-base",
                "--is-ancestor",
                freeze.FOLLOWUP_AMENDMENT_COMMIT,
                commit,
            ],
            cwd=ROOT,
            check=True,
        )
