import json
import math

import pytest
import torch
import torch.nn.functional as F
from conftest import synthetic_cifar

import attnconv.experiments.train as train_mod
import attnconv.experiments.train_step as train_step_mod
from attnconv.experiments.checkpoints import (
    ResumeMismatchError,
    RunExistsError,
    load_run,
)
from attnconv.experiments.models import build_model
from attnconv.experiments.profiles import (
    PROFILES,
    default_profile_name,
    get_profile,
    make_config,
)
from attnconv.experiments.train import NonFiniteLossError, train, train_or_load
from attnconv.experiments.train_config import (
    TrainConfig,
    lr_factor,
    make_optimizer,
    make_scheduler,
    parameter_groups,
)
from attnconv.experiments.train_step import evaluate

TINY_MODEL = dict(
    hidden_size=8, intermediate_size=8, num_layers=1, num_heads=3, downsample=4
)


def tiny_config(**kw):
    base = dict(
        model="quadratic",
        model_overrides=TINY_MODEL,
        epochs=3,
        batch_size=10,
        eval_batch_size=16,
        data="sample",
        device="cpu",
        seed=1,
    )
    base.update(kw)
    return TrainConfig(**base)


@pytest.fixture(scope="module")
def tiny_data():
    return synthetic_cifar(30, 12)


def losses(history):
    return [
        (e["train_loss"], e["test_loss"], e["train_acc"], e["test_acc"])
        for e in history["epochs"]
    ]


# ----------------------------------------------------------------- schedule and optimiser
def test_warmup_cosine_shape():
    cfg = TrainConfig(epochs=10)
    spe = 20  # 200 steps, warm-up int(200 * 0.05) = 10 steps
    f = [lr_factor(s, cfg, spe) for s in range(200)]
    assert f[0] == 0 and f[5] == pytest.approx(0.5) and f[10] == pytest.approx(1.0)
    assert all(a < b for a, b in zip(f[:10], f[1:11]))  # linear increase
    assert all(a >= b for a, b in zip(f[10:], f[11:]))  # then decreasing
    assert f[105] == pytest.approx(0.5)  # half-way through the cosine
    assert f[199] == pytest.approx(0.5 * (1 + math.cos(math.pi * 189 / 190)))
    assert lr_factor(10_000, cfg, spe) == pytest.approx(0.0)
    with pytest.raises(ValueError):
        lr_factor(-1, cfg, spe)


def test_step_schedule_matches_multisteplr():
    cfg = make_config("resnet18", "paper")
    assert cfg.schedule == "step" and cfg.milestones == (80, 150, 250)
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=0.1)
    ref = torch.optim.lr_scheduler.MultiStepLR(
        opt, milestones=[80, 150, 250], gamma=0.1
    )
    spe = 3
    ours, theirs = [], []
    for epoch in range(300):
        for k in range(spe):
            ours.append(0.1 * lr_factor(epoch * spe + k, cfg, spe))
            theirs.append(opt.param_groups[0]["lr"])
        opt.step()
        ref.step()
    assert all(math.isclose(a, b, rel_tol=1e-9) for a, b in zip(ours, theirs))
    assert sorted(set(round(v, 12) for v in ours)) == [1e-4, 1e-3, 1e-2, 0.1]


def test_scheduler_sets_group_learning_rates():
    model = build_model("quadratic", **TINY_MODEL)
    cfg = tiny_config(attention_lr_multiplier=10.0, epochs=2)
    opt = make_optimizer(model, cfg)
    sched = make_scheduler(opt, cfg, steps_per_epoch=100)
    for _ in range(7):
        opt.step()
        sched.step()
    for g in opt.param_groups:
        assert g["lr"] == pytest.approx(cfg.lr * g["lr_multiplier"] * 7 / 10)


def test_parameter_groups_weight_decay_and_multiplier():
    model = build_model("generalized", **TINY_MODEL)
    cfg = tiny_config(attention_lr_multiplier=5.0)
    groups = parameter_groups(model, cfg)
    seen = {}
    for g in groups:
        for n in g["names"]:
            seen[n] = (g["weight_decay"], g["lr_multiplier"])
    assert set(seen) == {n for n, _ in model.named_parameters()}
    assert seen["layers.0.attention.encoding.centers"] == (0.0, 5.0)
    assert seen["layers.0.attention.encoding.inv_sqrt_sigma"] == (0.0, 5.0)
    assert seen["layers.0.attention.out.weight"] == (1e-4, 1.0)
    assert seen["layers.0.attention_norm.weight"] == (1e-4, 1.0)
    learned = {
        n: (g["weight_decay"], g["lr_multiplier"])
        for g in parameter_groups(build_model("learned", **TINY_MODEL), cfg)
        for n in g["names"]
    }
    assert learned["layers.0.attention.encoding.head_keys"] == (1e-4, 5.0)
    q = {
        n: g["weight_decay"]
        for g in parameter_groups(build_model("quadratic", **TINY_MODEL), cfg)
        for n in g["names"]
    }
    assert q["layers.0.attention.encoding.spread"] == 0.0


def test_one_training_step_lowers_the_loss():
    torch.manual_seed(0)
    cfg = tiny_config(
        model_overrides={**TINY_MODEL, "hidden_dropout": 0.0, "attention_dropout": 0.0},
        lr=0.05,
    )
    model = build_model(cfg.model_config())
    opt = make_optimizer(model, cfg)
    x, y = torch.randn(20, 3, 32, 32), torch.randint(0, 10, (20,))
    before, _ = train_step_mod.compute_loss(model, x, y)
    opt.zero_grad()
    before.backward()
    opt.step()
    after, _ = train_step_mod.compute_loss(model, x, y)
    assert after.item() < before.item()


def test_evaluate_matches_manual(tiny_data):
    torch.manual_seed(0)
    model = build_model("quadratic", **TINY_MODEL)
    loss, acc = evaluate(model, tiny_data.x_test, tiny_data.y_test, batch_size=5)
    assert model.training  # mode restored
    from attnconv.experiments.data import normalize

    model.eval()
    with torch.no_grad():
        logits = model(normalize(tiny_data.x_test))
    assert loss == pytest.approx(
        F.cross_entropy(logits, tiny_data.y_test).item(), rel=1e-5
    )
    assert acc == pytest.approx(
        (logits.argmax(1) == tiny_data.y_test).double().mean().item()
    )


def test_evaluate_predictions_are_the_argmax_of_each_image(tiny_data):
    torch.manual_seed(0)
    model = build_model("quadratic", **TINY_MODEL)
    classes = []
    _, acc = evaluate(
        model, tiny_data.x_test, tiny_data.y_test, batch_size=5, predictions=classes
    )
    from attnconv.experiments.data import normalize

    model.eval()
    with torch.no_grad():  # one image at a time: the oracle
        one_by_one = [
            int(model(normalize(tiny_data.x_test[i : i + 1])).argmax(1))
            for i in range(len(tiny_data.x_test))
        ]
    assert classes == one_by_one
    right = sum(c == int(y) for c, y in zip(classes, tiny_data.y_test))
    assert acc == right / len(classes)


def test_predictions_round_trip_and_refuse_two_digit_classes():
    from attnconv.experiments.train_step import decode_predictions, encode_predictions

    assert decode_predictions(encode_predictions([3, 0, 9, 9, 1])) == [3, 0, 9, 9, 1]
    with pytest.raises(ValueError, match="0-9"):
        encode_predictions([10])


# ----------------------------------------------------------------- runs
def test_run_folder_history_and_load(tmp_path, tiny_data, capsys):
    cfg = tiny_config(epochs=2)
    h = train(cfg, tmp_path / "run", progress=False, data=tiny_data)
    out = capsys.readouterr().out
    assert "synthetic test images" in out
    assert (
        h["status"] == "complete" and len(h["epochs"]) == 2 and h["data"] == "synthetic"
    )
    e = h["epochs"][1]
    assert set(e) >= {
        "epoch",
        "train_loss",
        "train_acc",
        "test_loss",
        "test_acc",
        "lr",
        "attention",
    }
    assert e["lr"] == pytest.approx(0.1 * lr_factor(5, cfg, 3))
    assert len(e["attention"]) == 1 and len(e["attention"][0]["centers"]) == 3
    assert len(h["initial_attention"][0]["spreads"]) == 3
    # the last epoch keeps every test image's predicted class, and only the last one
    assert "test_predictions" not in h["epochs"][0]
    preds = [int(c) for c in e["test_predictions"]]
    right = sum(p == int(y) for p, y in zip(preds, tiny_data.y_test))
    assert len(preds) == h["test_size"] and right / len(preds) == e["test_acc"]
    for name in ("config.json", "history.json", "checkpoint.pt"):
        assert (tmp_path / "run" / name).is_file()
    assert json.loads((tmp_path / "run" / "history.json").read_text()) == json.loads(
        json.dumps(h)
    )
    run = load_run(tmp_path / "run", load_model=True)
    assert (
        run.complete
        and run.config == cfg
        and run.series("test_loss") == [r["test_loss"] for r in h["epochs"]]
    )
    final = run.model.attention_parameters()[0]["centers"].tolist()
    assert final == e["attention"][0]["centers"]
    with pytest.raises(RunExistsError):
        train(cfg, tmp_path / "run", progress=False, data=tiny_data)
    with pytest.raises(FileNotFoundError):
        load_run(tmp_path / "nothing")


def test_kill_and_resume_equals_uninterrupted(tmp_path, tiny_data, monkeypatch):
    cfg = tiny_config(epochs=3)
    full = train(cfg, tmp_path / "full", progress=False, data=tiny_data, verbose=False)
    # interrupted after epoch 1, resumed
    train(
        cfg,
        tmp_path / "cut",
        progress=False,
        data=tiny_data,
        stop_after=1,
        verbose=False,
    )
    resumed = train(
        cfg,
        tmp_path / "cut",
        resume=True,
        progress=False,
        data=tiny_data,
        verbose=False,
    )
    assert losses(resumed) == losses(full)
    again = train(
        cfg,
        tmp_path / "cut",
        resume=True,
        progress=False,
        data=tiny_data,
        verbose=False,
    )
    assert again["status"] == "complete" and losses(again) == losses(
        full
    )  # nothing left to do
    # killed in the middle of epoch 2 (nothing of epoch 2 saved), resumed
    real = train_step_mod.compute_loss
    calls = {"n": 0}

    def dies(*args):
        calls["n"] += 1
        if calls["n"] == 5:  # 3 steps per epoch: the 2nd step of epoch 2
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(train_step_mod, "compute_loss", dies)
    with pytest.raises(KeyboardInterrupt):
        train(cfg, tmp_path / "killed", progress=False, data=tiny_data, verbose=False)
    monkeypatch.setattr(train_step_mod, "compute_loss", real)
    assert len(load_run(tmp_path / "killed").epochs) == 1
    resumed = train(
        cfg,
        tmp_path / "killed",
        resume=True,
        progress=False,
        data=tiny_data,
        verbose=False,
    )
    assert losses(resumed) == losses(full)
    a = torch.load(tmp_path / "full" / "checkpoint.pt", weights_only=False)["model"]
    b = torch.load(tmp_path / "killed" / "checkpoint.pt", weights_only=False)["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)
    with pytest.raises(ResumeMismatchError, match="other settings"):
        train(
            tiny_config(epochs=3, lr=0.2),
            tmp_path / "cut",
            resume=True,
            progress=False,
            data=tiny_data,
        )


def test_nan_loss_stops_and_keeps_last_good_checkpoint(
    tmp_path, tiny_data, monkeypatch
):
    real = train_step_mod.compute_loss
    calls = {"n": 0}

    def nan_in_epoch_2(*args):
        calls["n"] += 1
        loss, logits = real(*args)
        return (loss * float("nan") if calls["n"] == 5 else loss), logits

    monkeypatch.setattr(train_step_mod, "compute_loss", nan_in_epoch_2)
    with pytest.raises(
        NonFiniteLossError, match=r"epoch 2.*last good checkpoint \(epoch 1\)"
    ) as e:
        train(
            tiny_config(),
            tmp_path / "run",
            progress=False,
            data=tiny_data,
            verbose=False,
        )
    assert e.value.epoch == 2 and e.value.step == 1 and e.value.last_good_epoch == 1
    state = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=False)
    assert state["epoch"] == 1 and all(
        torch.isfinite(v).all() for v in state["model"].values()
    )
    run = load_run(tmp_path / "run")
    assert (
        run.history["status"] == "failed"
        and len(run.epochs) == 1
        and "nan" in run.history["error"]
    )


def test_train_or_load_uses_a_saved_run(tmp_path, tiny_data, monkeypatch, capsys):
    cfg = tiny_config(epochs=1)
    train(cfg, tmp_path / "run", progress=False, data=tiny_data, verbose=False)

    def no_training(*args, **kwargs):
        raise AssertionError("should not train")

    monkeypatch.setattr(train_mod, "train", no_training)
    run = train_or_load(cfg, tmp_path / "run")
    assert run.complete and "saved run" in capsys.readouterr().out
    with pytest.raises(ValueError):
        train_or_load(tiny_config(epochs=1, seed=5), tmp_path / "run")


def test_resnet_run_with_tuple_overrides_reloads(tmp_path, tiny_data):
    cfg = tiny_config(
        model="resnet18",
        model_overrides={"widths": (2, 2, 4, 4)},
        schedule="step",
        epochs=1,
    )
    run = train_or_load(
        cfg, tmp_path / "r", load_model=True, verbose=False, data=tiny_data
    )
    assert run.complete and run.model.config.widths == (2, 2, 4, 4)
    assert train_or_load(cfg, tmp_path / "r", verbose=False).epochs == run.epochs
    assert run.history["data"] == "synthetic" and run.history["train_size"] == 30
    assert run.history["epochs"][0]["attention"] == []


def test_config_validation():
    with pytest.raises(ValueError):
        TrainConfig(model="vgg")
    with pytest.raises(ValueError):
        TrainConfig(schedule="linear")
    with pytest.raises(ValueError):
        TrainConfig(data="imagenet")
    with pytest.raises(TypeError):
        TrainConfig(model_overrides={"depth": 3})
    with pytest.raises(ValueError):
        TrainConfig(model_overrides={"downsample": 3})
    with pytest.raises(ValueError):
        TrainConfig.from_dict({"model": "quadratic", "optimizer": "adam"})
    cfg = make_config("learned_content", "cpu")
    assert TrainConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg


# ----------------------------------------------------------------- profiles and CLI
def test_paper_profile_is_the_paper():
    cfg = make_config("quadratic", "paper")
    assert (cfg.epochs, cfg.batch_size, cfg.lr, cfg.momentum, cfg.weight_decay) == (
        300,
        100,
        0.1,
        0.9,
        1e-4,
    )
    assert (
        cfg.schedule == "warmup_cosine"
        and cfg.warmup_fraction == 0.05
        and cfg.model_overrides == {}
    )
    assert cfg.attention_lr_multiplier == 1.0 and cfg.data == "auto" and cfg.bf16
    m = cfg.model_config()
    assert (
        m.hidden_size,
        m.intermediate_size,
        m.num_layers,
        m.num_heads,
        m.downsample,
    ) == (400, 512, 6, 9, 2)


def test_cpu_and_gpu_profiles():
    cpu = make_config("generalized", "cpu")
    assert cpu.data == "sample" and cpu.model_config().num_heads == 9
    gpu = make_config("resnet18", "gpu")
    assert gpu.data == "auto" and gpu.milestones == tuple(
        round(m * gpu.epochs / 300) for m in (80, 150, 250)
    )
    assert make_config("resnet18", "gpu", epochs=30).milestones == (8, 15, 25)
    assert set(PROFILES) == {"paper", "gpu", "gpu-sample", "cpu", "deep"}
    assert default_profile_name() == ("gpu" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError):
        get_profile("tpu")
    with pytest.raises(ValueError):
        get_profile("cpu").config("vit")


def test_validation_split_reads_the_test_set_once(tmp_path, tiny_data):
    """With ``validation``: the last n training images are held out, every epoch is measured on
    them, the test set only after the last epoch; the validation accuracy is that of a plain
    evaluation of the saved model on those images (the oracle: ``evaluate`` on the slice)."""
    cfg = tiny_config(validation=8, epochs=2)
    history = train(
        cfg, tmp_path / "run", progress=False, verbose=False, data=tiny_data
    )
    assert history["train_size"] == 22 and history["validation_size"] == 8
    first, last = history["epochs"]
    assert first["test_acc"] is None and first["val_acc"] is not None
    assert last["test_acc"] is not None and len(last["test_predictions"]) == 12
    run = load_run(tmp_path / "run", load_model=True)
    loss, acc = evaluate(run.model, tiny_data.x_train[22:], tiny_data.y_train[22:], 16)
    assert abs(acc - last["val_acc"]) < 1e-12 and abs(loss - last["val_loss"]) < 1e-5


def test_validation_split_refuses_bad_sizes(tiny_data):
    with pytest.raises(ValueError, match="validation must be >= 0"):
        TrainConfig(validation=-1)
    with pytest.raises(ValueError, match="validation must hold 1 to 29"):
        tiny_data.split_validation(30)
