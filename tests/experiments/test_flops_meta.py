"""Counting FLOPs on the meta device must leave nothing behind (issue: a meta tensor cached in
``attnconv.core.grid`` broke every later real model on the same token grid)."""

import torch

from attnconv.core.grid import relative_shifts
from attnconv.experiments.data import load_cifar10_sample
from attnconv.experiments.flops import flops_table
from attnconv.experiments.profiles import make_config
from attnconv.experiments.train import train


def test_paper_table_then_paper_training_step(tmp_path):
    rows = flops_table()  # paper-size models on the meta device
    assert {r["model"] for r in rows} >= {"quadratic", "learned"}
    assert relative_shifts((16, 16), 0).device.type == "cpu"
    # then train the paper profile in the same process: two images, one step
    config = make_config(
        "quadratic",
        "paper",
        epochs=1,
        data="sample",
        train_subset=2,
        test_subset=2,
        batch_size=2,
        eval_batch_size=2,
    )
    history = train(
        config,
        tmp_path / "run",
        progress=False,
        verbose=False,
        data=load_cifar10_sample(),
    )
    assert torch.isfinite(torch.tensor(history["epochs"][0]["train_loss"]))
    assert (
        history["model_config"]["hidden_size"] == 400
        and history["model_config"]["num_layers"] == 6
    )
