"""The progress line of an epoch (attnconv.experiments.train._epoch_line): a run with a validation
split keeps its test numbers out of the log (the protocol reads the test set once, in its rule);
a run without one prints them."""

from types import SimpleNamespace

from attnconv.experiments.train import _epoch_line

RECORD = {
    "epoch": 40,
    "train_loss": 1.2,
    "train_acc": 0.55,
    "test_loss": 1.31,
    "test_acc": 0.5369,
    "lr": 1e-7,
    "seconds": 50.0,
}


def test_a_validated_run_does_not_print_its_test_accuracy():
    config = SimpleNamespace(epochs=40)
    line = _epoch_line(
        config, {**RECORD, "val_loss": 1.33, "val_acc": 0.534}, 50, 5000, 0
    )
    assert "test evaluated | val loss 1.3300 acc 0.5340" in line
    assert "0.5369" not in line and "1.3100" not in line
    plain = _epoch_line(config, RECORD, 50, 5000, 0)
    assert "test loss 1.3100 acc 0.5369" in plain
