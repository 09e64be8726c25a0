"""The later papers' recipe (TrainConfig's optimizer, label_smoothing, evaluate_every): off by
default (earlier configs save and train as before), AdamW's groups decay only the weight
matrices, label smoothing is the textbook formula, skipped evaluations are recorded as such."""

import pytest
import torch
import torch.nn.functional as F
from conftest import synthetic_cifar

from attnconv.experiments.models import build_model
from attnconv.experiments.train import train
from attnconv.experiments.train_config import (
    RECIPE_DEFAULTS,
    TrainConfig,
    make_optimizer,
    parameter_groups,
)
from attnconv.experiments.train_step import compute_loss

TINY_GPSA = dict(
    hidden_size=9,
    intermediate_size=9,
    num_layers=1,
    num_heads=9,
    downsample=8,
    position_embedding=True,
)


def _config(**kw):
    base = dict(
        model="gpsa",
        model_overrides=TINY_GPSA,
        epochs=3,
        batch_size=10,
        eval_batch_size=16,
        data="sample",
        device="cpu",
        seed=1,
    )
    base.update(kw)
    return TrainConfig(**base)


def test_the_recipe_fields_stay_out_of_default_configs():
    d = _config().to_dict()
    assert not set(RECIPE_DEFAULTS) & set(d)
    d = _config(optimizer="adamw", label_smoothing=0.1, evaluate_every=2).to_dict()
    assert d["optimizer"] == "adamw" and d["evaluate_every"] == 2
    assert TrainConfig.from_dict(d) == _config(
        optimizer="adamw", label_smoothing=0.1, evaluate_every=2
    )
    with pytest.raises(ValueError, match="optimizer must be one of"):
        _config(optimizer="lamb")
    with pytest.raises(ValueError, match="label_smoothing"):
        _config(label_smoothing=1.0)


def test_adamw_decays_weight_matrices_only():
    cfg = _config(optimizer="adamw", weight_decay=0.05, lr=1e-3)
    model = build_model(cfg.model_config())
    decay = {
        n: g["weight_decay"] for g in parameter_groups(model, cfg) for n in g["names"]
    }
    assert set(decay) == {n for n, _ in model.named_parameters()}
    none = {n for n, wd in decay.items() if wd == 0.0}
    assert {
        "pos_embed",
        "blocks.0.attn.gating_param",
        "blocks.0.attn.pos_proj.weight",
        "blocks.0.attn.pos_proj.bias",
        "blocks.0.norm1.weight",
        "blocks.0.attn.proj.bias",
    } <= none
    assert decay["blocks.0.attn.qk.weight"] == decay["head.weight"] == 0.05
    assert decay["embed.weight"] == 0.05
    assert isinstance(make_optimizer(model, cfg), torch.optim.AdamW)
    sgd = {
        n: g["weight_decay"]
        for g in parameter_groups(model, _config())
        for n in g["names"]
    }
    assert set(sgd.values()) == {1e-4}  # SGD as before: every GPSA parameter decays


def test_label_smoothing_is_the_textbook_mixture():
    torch.manual_seed(0)
    logits = torch.randn(6, 10, dtype=torch.float64)
    labels = torch.randint(0, 10, (6,))

    def model(x):
        return logits

    loss, _ = compute_loss(model, None, labels, 0.1)
    logp = logits.log_softmax(-1)
    want = (0.9 * -logp[torch.arange(6), labels] + 0.1 * -logp.mean(-1)).mean()
    assert abs(loss.item() - want.item()) < 1e-6
    plain, _ = compute_loss(model, None, labels)
    assert abs(plain.item() - F.cross_entropy(logits, labels).item()) < 1e-6  # fp32


def test_skipped_evaluations_are_recorded_as_none(tmp_path):
    data = synthetic_cifar(30, 12)
    cfg = _config(optimizer="adamw", lr=1e-3, label_smoothing=0.1, evaluate_every=2)
    h = train(cfg, tmp_path / "run", progress=False, data=data)
    assert [e["test_acc"] is None for e in h["epochs"]] == [True, False, False]
    assert h["epochs"][-1]["test_predictions"]
    assert all(len(e["attention"][0]["gate"]) == 9 for e in h["epochs"])
