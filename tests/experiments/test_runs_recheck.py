"""Re-checking a saved run: tolerances for the precision and device it was trained with, and a
paper-size run re-checked only on request (never by a chapter), saying why."""

import pytest
import torch

from attnconv import regenerate
from attnconv.chapters.shared.checks import Checks
from attnconv.chapters.shared.recheck import RECHECK_ROWS, recheck
from attnconv.experiments import runs
from attnconv.experiments.checkpoints import Run, attention_record
from attnconv.experiments.models import build_model
from attnconv.experiments.profiles import make_config
from attnconv.experiments.store import History

TINY = dict(hidden_size=8, intermediate_size=8, num_layers=1, num_heads=2, downsample=8)


def fake_run(tmp_path, device="cpu", precision=None, parameters=5_000, images=5_085):
    config = make_config("quadratic", "cpu", model_overrides=TINY)
    torch.manual_seed(config.seed)
    heads = attention_record(build_model(config.model_config()))
    h = {
        "config": config.to_dict(),
        "num_parameters": parameters,
        "train_size": images,
        "initial_attention": heads,
        "epochs": [
            {
                "epoch": 1,
                "train_loss": 2.0,
                "train_acc": 0.3,
                "test_loss": 1.9,
                "test_acc": 0.31,
            }
        ],
        "device": device,
        "first_step_losses": [2.30, 2.29, 2.28],
        "status": "complete",
    }
    if precision:
        h["precision"] = precision
    return Run(tmp_path, config, History.from_json(h))


def replay(loss_scale=1.0, step_scale=1.0, device="cpu", precision=None):
    h = {
        "epochs": [
            {
                "train_loss": 2.0 * loss_scale,
                "train_acc": 0.3,
                "test_loss": 1.9,
                "test_acc": 0.31,
            }
        ],
        "first_step_losses": [x * step_scale for x in (2.30, 2.29, 2.28)],
        "device": device,
        "config": {"bf16": True},
    }
    if precision:
        h["precision"] = precision
    return h


def test_precision_and_tolerance_set_follow_the_run(tmp_path):
    assert runs.run_precision({"device": "cuda:0", "config": {"bf16": True}}) == "bf16"
    assert runs.run_precision({"device": "cuda:0", "config": {"bf16": False}}) == "fp32"
    assert runs.run_precision({"device": "cpu", "config": {"bf16": True}}) == "fp32"
    assert runs.run_precision({"device": "cpu", "precision": "bf16"}) == "bf16"
    cpu, cuda = {"device": "cpu"}, {"device": "cuda:1", "config": {"bf16": False}}
    assert runs.tolerance_key(cpu, cpu) == "fp32 cpu"
    assert runs.tolerance_key(cuda, cpu) == "fp32 across devices"
    assert (
        runs.tolerance_key(cuda, {"device": "cuda:0", "precision": "fp32"})
        == "fp32 cuda"
    )
    assert runs.tolerance_key(cpu, {"device": "cuda:0"}) == "mixed precision"
    assert runs.tolerance_key(cpu, {"device": "cpu", "precision": "fp16"}) == (
        "mixed precision"
    )
    t = runs.TOLERANCES
    assert t["fp32 cpu"].step == runs.STEP_LOSS_TOLERANCE  # today's, measured
    assert (
        t["fp32 cpu"].step
        < t["fp32 cuda"].step
        < t["fp32 across devices"].step
        < t["mixed precision"].step
    )
    assert "not comparable bit-for-bit" in t["mixed precision"].basis
    assert "measured on one H200" in t["fp32 cuda"].basis
    # above the largest difference measured between an H200 and the CPU (steps 1-5, epoch 1)
    assert (
        t["fp32 across devices"].step > 2.6e-3
        and t["fp32 across devices"].loss > 6.0e-3
    )


def test_a_bf16_run_is_checked_at_the_loss_level(tmp_path):
    # steps 1 % off: another rounding, not another run
    bf16 = fake_run(tmp_path, device="cuda:0")
    check = runs.verify_first_epoch(bf16, replayed=replay(step_scale=1.01))
    assert check["match"] and check["tolerances"] == "mixed precision"
    # the same difference between two fp32 CPU runs is a mismatch
    fp32 = fake_run(tmp_path)
    check = runs.verify_first_epoch(fp32, replayed=replay(step_scale=1.01))
    assert check["match"] is False and check["tolerances"] == "fp32 cpu"
    assert runs.verify_first_epoch(fp32, replayed=replay())["match"]
    # a bf16 run 10 % off at the first step or in its epoch loss is not this run
    assert not runs.verify_first_epoch(bf16, replayed=replay(step_scale=1.1))["match"]
    assert not runs.verify_first_epoch(bf16, replayed=replay(loss_scale=1.1))["match"]


def test_a_paper_size_run_is_rechecked_only_on_request(tmp_path, monkeypatch, capsys):
    calls = []

    def replayed(run):
        calls.append(run)
        return replay(device="cuda:0")

    monkeypatch.setattr(runs, "replay_first_epoch", replayed)
    big = fake_run(tmp_path, device="cuda:0", parameters=12_086_844, images=50_000)
    check = runs.verify_first_epoch(big)
    assert check["match"] is None and check["checked"] is False and calls == []
    out = capsys.readouterr().out
    assert "not re-checked here" in out and "50,000 images" in out
    assert "python -m attnconv.regenerate --check --only" in out
    checks = Checks()
    recheck(
        checks, big, "quadratic"
    )  # a chapter's check table: one row saying why not here
    (row,) = checks.rows
    assert (
        row.name == "quadratic: first epoch trained again"
        and row.measured.startswith("not here")
    )
    assert calls == []
    # on request it is re-trained and compared
    check = runs.verify_first_epoch(big, on_request=True)
    assert check["checked"] and check["match"] and len(calls) == 1
    # a small run is re-checked by the chapters as before
    small = fake_run(tmp_path)
    monkeypatch.setattr(runs, "replay_first_epoch", lambda run: replay())
    checks = Checks()
    recheck(checks, small)
    assert [r.name for r in checks.rows] == [
        f"quadratic: {what}" for _, what, _ in RECHECK_ROWS
    ]


def test_regenerate_check_asks_on_request(monkeypatch, capsys):
    seen = {}

    def verify(run, **kw):
        seen.update(kw)
        return {"match": True, "checks": {}, "tolerances": "fp32 cpu", "checked": True}

    monkeypatch.setattr(runs, "verify_first_epoch", verify)
    entry = regenerate.RUNS["cpu/quadratic"]
    assert regenerate._check(entry) is True
    assert seen == {"on_request": True}
    assert "fp32 cpu tolerances" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["cpu/quadratic", "deep/learned"])
def test_the_committed_runs_are_rechecked_by_the_chapters(name):
    from attnconv.experiments.registry import load_run

    assert runs.recheck_only_on_request(load_run(name)) is None


def test_the_measured_deviations_are_returned_beside_their_bounds(tmp_path):
    run = fake_run(tmp_path)
    check = runs.verify_first_epoch(run, replayed=replay(step_scale=1 + 5e-5))
    dev, bounds = check["deviations"], check["bounds"]
    assert dev["initial_heads"] == 0.0  # the same seed builds the same heads
    assert dev["first_steps"] == pytest.approx(5e-5, rel=1e-6)
    assert dev["epoch_loss"] == 0.0 and dev["epoch_accuracy"] == 0.0
    assert bounds["first_steps"] == runs.STEP_LOSS_TOLERANCE and check["match"]
    # a step 2e-4 off is reported as such, and fails
    off = runs.verify_first_epoch(run, replayed=replay(step_scale=1 + 2e-4))
    assert off["deviations"]["first_steps"] == pytest.approx(2e-4, rel=1e-6)
    assert off["match"] is False and off["checks"]["first_steps"] is False
    # another seed's heads: the largest difference is measured, and fails
    other = fake_run(tmp_path)
    other.history["initial_attention"][0]["centers"] = [
        [c + 1e-3 for c in row]
        for row in other.history["initial_attention"][0]["centers"]
    ]
    bad = runs.verify_first_epoch(other, replayed=replay())
    assert bad["deviations"]["initial_heads"] == pytest.approx(1e-3, rel=1e-3)
    assert bad["match"] is False


def test_a_chapter_shows_bounds_every_cpu_meets_and_asserts(tmp_path, monkeypatch):
    from attnconv.chapters.shared.checks import CheckFailed, Checks
    from attnconv.chapters.shared.recheck import recheck

    run = fake_run(tmp_path)
    monkeypatch.setattr(
        runs, "replay_first_epoch", lambda r: replay(step_scale=1 + 1e-7)
    )
    checks = Checks()
    recheck(checks, run, "quadratic")
    assert [r.measured for r in checks.rows] == ["< 1e-5", "< 1e-5", "< 1e-5", "< 0.1"]
    assert [r.tolerance for r in checks.rows] == ["< 1e-4", "< 1e-4", "< 0.03", "< 6"]
    # within the tolerance but above the shown bound: fails, so the table never shows a bound
    # the run does not meet
    monkeypatch.setattr(
        runs, "replay_first_epoch", lambda r: replay(step_scale=1 + 5e-5)
    )
    with pytest.raises(CheckFailed, match="first step losses"):
        recheck(Checks(), run, "quadratic")
    # a paper-size run is not trained again: one row says how it is re-checked
    big = fake_run(tmp_path, parameters=12_086_844, images=50_000)
    checks = Checks()
    recheck(checks, big, "quadratic")
    assert len(checks.rows) == 1 and "--check" in checks.rows[0].tolerance


def test_a_chapter_never_shows_a_bound_equal_to_its_tolerance(tmp_path, monkeypatch):
    from attnconv.chapters.shared.checks import Checks
    from attnconv.chapters.shared.recheck import recheck

    run = fake_run(tmp_path, precision="bf16")  # no shown bounds: each is its tolerance
    monkeypatch.setattr(
        runs, "replay_first_epoch", lambda r: replay(step_scale=1 + 1e-3)
    )
    checks = Checks()
    recheck(checks, run, "quadratic")
    assert checks.rows and all(
        r.measured == "within; differs by CPU" and r.tolerance.startswith("< ")
        for r in checks.rows
    )
