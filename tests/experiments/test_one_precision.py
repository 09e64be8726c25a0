"""A run resolves its :class:`~attnconv.experiments.device.Precision` once and hands that object to
the training step and to every evaluation: nothing inside the run works it out again (so the
grad scaler and the autocast of every step and evaluation come from the same answer)."""

import json

import pytest
from conftest import synthetic_cifar

import attnconv.experiments.train as train_mod
from attnconv.experiments import device as dev
from attnconv.experiments.checkpoints import ResumeMismatchError
from attnconv.experiments.train import train
from attnconv.experiments.train_config import TrainConfig

TINY = dict(hidden_size=8, intermediate_size=8, num_layers=1, num_heads=3, downsample=4)


@pytest.mark.parametrize("precision", [None, "bf16"])
def test_a_run_builds_one_precision(tmp_path, monkeypatch, precision):
    built = []
    original = dev.Precision.__init__

    def counting(self, *args, **kwargs):
        built.append((args, kwargs))
        original(self, *args, **kwargs)

    monkeypatch.setattr(dev.Precision, "__init__", counting)
    extra = {} if precision is None else {"precision": precision}
    config = TrainConfig(
        model="quadratic",
        model_overrides=TINY,
        epochs=2,
        batch_size=10,
        eval_batch_size=16,
        data="sample",
        device="cpu",
        seed=3,
        validation=6,
        **extra,
    )
    history = train(
        config,
        tmp_path / "run",
        progress=False,
        data=synthetic_cifar(30, 12),
        verbose=False,
    )
    # two epochs, each evaluated on the validation images, the test set read once at the end
    assert len(history["epochs"]) == 2
    assert len(built) == 1, built
    assert history["precision"] == (precision or "fp32")


def test_each_session_is_recorded_and_a_change_of_precision_refused(
    tmp_path, monkeypatch
):
    """A resume on a machine that computes in another precision (a CUDA box resuming a CPU run,
    imitated here) is refused in one line, nothing changed; allowed, the history records both
    sessions."""
    config = TrainConfig(
        model="quadratic",
        model_overrides=TINY,
        epochs=2,
        batch_size=10,
        eval_batch_size=16,
        data="sample",
        device="cpu",
        seed=4,
    )
    data, run = synthetic_cifar(30, 12), tmp_path / "run"
    quiet = dict(progress=False, data=data, verbose=False)
    first = train(config, run, stop_after=1, **quiet)
    cpu = {"device": "cpu", "precision": "fp32", "first_epoch": 1}
    assert first["sessions"] == [cpu]
    saved = (run / "history.json").read_bytes()
    monkeypatch.setattr(
        train_mod,
        "resolve_precision",
        lambda device, bf16=True, precision=None: dev.Precision(device, "bf16"),
    )
    with pytest.raises(ResumeMismatchError) as refused:
        train(config, run, resume=True, **quiet)
    message = str(refused.value)
    assert "\n" not in message and "fp32" in message and "bf16" in message
    assert (run / "history.json").read_bytes() == saved
    resumed = train(config, run, resume=True, allow_precision_change=True, **quiet)
    assert resumed["sessions"] == [cpu, {**cpu, "precision": "bf16", "first_epoch": 2}]
    assert (
        json.loads((run / "history.json").read_text())["sessions"]
        == resumed["sessions"]
    )
