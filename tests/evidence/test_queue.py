"""The protocol's queues: their order and the lock that lets several processes share one."""

import os

from attnconv import regenerate
from attnconv.evidence.runs import queue, tuning_runs


def test_the_tuning_runs_come_first_then_their_choices():
    q = queue("confirm")
    tuning = [n for runs in tuning_runs().values() for n, _ in runs]
    first = [next(q) for _ in tuning]
    assert sorted(first) == sorted(tuning)
    assert next(q) == "results/confirm-tuning-learned"


def test_chapter_18_queue_starts_with_its_reference_and_the_smaller_size():
    q = queue("beyond")
    assert next(q) == "results/beyond3-linear-pixels"
    assert "/n1000/" in next(q)


def test_a_lock_is_held_once_and_a_stale_one_is_taken(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNCONV_BOOK_DIR", str(tmp_path))
    lock = regenerate._held("a/b")
    assert lock is not None and (lock / "pid").read_text() == str(os.getpid())
    assert regenerate._held("a/b") is None  # this (live) process holds it
    (lock / "pid").write_text("999999999")  # a process that is gone
    assert regenerate._held("a/b") is not None
