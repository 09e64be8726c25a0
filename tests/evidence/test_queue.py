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


def test_a_protocol_run_is_thinned_once_made(tmp_path, monkeypatch):
    """The queue thins each run it has made (its epochs' heads dropped, the last epoch's kept);
    a study is left as it is."""
    import json

    from attnconv.evidence import runs as protocol_runs
    from attnconv.experiments.registry import RUNS
    from attnconv.experiments.store import THINNED_NOTE

    monkeypatch.setenv("ATTNCONV_BOOK_DIR", str(tmp_path))
    name = next(queue("confirm"))
    entry = RUNS[name]

    def make(entry, force):
        entry.path.mkdir(parents=True)
        epochs = [
            {"epoch": e, "train_loss": 1.0, "attention": [{"centers": [[e, e]]}]}
            for e in (1, 2, 3)
        ]
        history = {
            "config": entry.config.to_dict(),
            "status": "complete",
            "epochs": epochs,
        }
        (entry.path / "history.json").write_text(json.dumps(history))

    monkeypatch.setattr(regenerate, "_make", make)
    monkeypatch.setattr(protocol_runs, "queue", lambda part: iter([name]))
    assert regenerate._run_protocol("confirm") == 0
    saved = json.loads((entry.path / "history.json").read_text())
    assert saved["attention_epochs"] == THINNED_NOTE
    assert ["attention" in e for e in saved["epochs"]] == [False, False, True]


def test_an_arm_whose_tuning_runs_are_missing_is_made_last(monkeypatch):
    """No process waits on another's tuning run while an arm whose tuning is made could go on:
    the arms with missing tuning runs come after every seed of the others."""
    from attnconv.evidence import runs as protocol_runs

    missing = {n for n, _ in tuning_runs()["generalized"]}
    monkeypatch.setattr(
        protocol_runs,
        "run_state",
        lambda e: "missing" if e.name in missing else "present",
    )
    names = list(protocol_runs.queue("confirm"))
    study = names.index("results/confirm-tuning-generalized")
    before = names[:study]
    assert "results/confirm-tuning-quadratic" in before
    assert not [n for n in before if "/generalized/" in n and n not in missing]
    assert [
        n for n in names[study:] if n.startswith("confirm/")
    ]  # generalized's seeds after


def test_a_pruning_study_thins_its_retraining_beside_the_run(tmp_path, monkeypatch):
    """The generalized arm's pruning study retrains into ``<run>-pruned``: that history is
    thinned too (the claims read its last epoch only)."""
    import json

    from attnconv.evidence import runs as protocol_runs
    from attnconv.experiments.registry import RUNS
    from attnconv.experiments.store import THINNED_NOTE

    monkeypatch.setenv("ATTNCONV_BOOK_DIR", str(tmp_path))
    run = protocol_runs.confirm_run_name("generalized", 1000)
    assert run in RUNS  # registered: the arm's tuning is saved in the book
    pruned = type(RUNS[run].path)(f"{RUNS[run].path}-pruned")
    pruned.mkdir(parents=True)
    epochs = [{"epoch": e, "attention": [{"centers": [[e, e]]}]} for e in (1, 2)]
    history = {"status": "complete", "epochs": epochs}
    (pruned / "history.json").write_text(json.dumps(history))
    protocol_runs.thin_made_run(f"{run}/pruning")
    saved = json.loads((pruned / "history.json").read_text())
    assert saved["attention_epochs"] == THINNED_NOTE
    assert ["attention" in e for e in saved["epochs"]] == [False, True]


def test_an_arms_seeds_are_registered_once_with_its_tuned_values():
    """``register_arm_seeds`` (shared by the frozen protocol and the follow-up) registers each
    seed's run with the arm's tuned values, in its series, with its studies, and nothing twice."""
    from attnconv.evidence import protocol
    from attnconv.evidence.runs import register_arm_seeds
    from attnconv.experiments.registry import RUNS, SERIES
    from attnconv.experiments.studies import STUDIES, StudyEntry

    arm = protocol.ARMS["learned"]
    names = ["test-only/learned/seed7", "test-only/learned/seed3"]

    def study(name):
        return [StudyEntry(f"{name}-study", "x.json", (name,), print, print)]

    kwargs = dict(
        name_of=lambda arm, seed: f"test-only/{arm}/seed{seed}",
        purpose="seed {seed} of {arm}",
        chapters=("17",),
        studies=study,
    )
    try:
        assert register_arm_seeds(arm, {"lr": 0.0125}, (7, 3), **kwargs) == names
        for name, seed in zip(names, (7, 3)):
            entry = RUNS[name]
            assert entry.description == f"seed {seed} of learned"
            assert entry.series == "test-only/learned" and entry.chapters == ("17",)
            assert entry.config.seed == seed and entry.config.lr == 0.0125
            assert entry.config.epochs == protocol.EPOCHS
            assert f"{name}-study" in STUDIES
        assert SERIES["test-only/learned"] == names[::-1]
        assert register_arm_seeds(arm, {"lr": 0.0125}, (7, 3), **kwargs) == []
    finally:
        for name in names:
            RUNS.pop(name, None)
            STUDIES.pop(f"{name}-study", None)
        SERIES.pop("test-only/learned", None)


def test_a_study_another_process_holds_does_not_stop_the_runs_after_it(
    tmp_path, monkeypatch
):
    """A pruning study held by another live process is passed over: the registered runs after
    it are made at once, with no wait for the study (the queue waits only for a held tuning,
    whose choice registers the runs after it)."""
    from attnconv.evidence import followup_runs
    from attnconv.evidence import runs as protocol_runs
    from attnconv.experiments.studies import STUDIES

    monkeypatch.setenv("ATTNCONV_BOOK_DIR", str(tmp_path))
    study = next(n for n in STUDIES if "pruning" in n)
    run = next(queue("confirm"))
    assert regenerate._held(study) is not None  # held by this live process
    made = []
    monkeypatch.setattr(
        regenerate, "_make", lambda entry, force: made.append(entry.name)
    )
    monkeypatch.setattr(
        regenerate, "run_state", lambda e: "missing" if e.name == run else "present"
    )
    monkeypatch.setattr(protocol_runs, "thin_made_run", lambda name: None)
    monkeypatch.setattr(followup_runs, "followup_queue", lambda: iter([study, run]))

    def no_wait(seconds):
        raise AssertionError("the queue waited on a study another process holds")

    monkeypatch.setattr(regenerate.time, "sleep", no_wait)
    assert regenerate._run_protocol("followup") == 0
    assert made == [run]


def test_a_study_whose_run_is_still_being_made_is_deferred_to_the_end(
    tmp_path, monkeypatch
):
    """A pruning study whose run another process is still training does not hold this process:
    the entries after it are made first, and the study once its run is present."""
    from attnconv.evidence import followup_runs
    from attnconv.evidence import runs as protocol_runs
    from attnconv.experiments.studies import STUDIES

    monkeypatch.setenv("ATTNCONV_BOOK_DIR", str(tmp_path))
    study = next(n for n in STUDIES if "pruning" in n)
    training = STUDIES[study].runs[0]  # made by another process while this one starts
    later = next(n for n in queue("confirm") if n != training)
    present = set()
    made = []

    def make(entry, force):
        made.append(entry.name)
        present.add(entry.name)

    def sleep(seconds):  # the other process finishes its run while this one waits
        assert made == [later], "the queue waited before making the later entry"
        present.add(training)

    monkeypatch.setattr(regenerate, "_make", make)
    monkeypatch.setattr(
        regenerate,
        "run_state",
        lambda e: "present" if e.name in present else "missing",
    )
    monkeypatch.setattr(protocol_runs, "thin_made_run", lambda name: None)
    monkeypatch.setattr(followup_runs, "followup_queue", lambda: iter([study, later]))
    monkeypatch.setattr(regenerate.time, "sleep", sleep)
    assert regenerate._run_protocol("followup") == 0
    assert made == [later, study]
