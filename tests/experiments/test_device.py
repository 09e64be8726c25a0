"""The device module (attnconv.experiments.device) and the device decisions of the command line,
tested without a GPU: torch.cuda is mocked where a CUDA machine is needed."""

import json
from unittest import mock

import pytest
import torch
from conftest import synthetic_cifar

import attnconv.experiments.train_cli as cli_mod
from attnconv.experiments import device as dev
from attnconv.experiments.train import train
from attnconv.experiments.train_config import TrainConfig

CUDA0 = torch.device("cuda", 0)
CUDA1 = torch.device("cuda", 1)


def test_precision_defaults_keep_the_cpu_in_fp32():
    cpu = torch.device("cpu")
    assert dev.resolve_precision(cpu).name == "fp32"
    assert dev.resolve_precision(cpu, bf16=True, precision=None).dtype is None
    assert dev.resolve_precision(cpu, precision="bf16").dtype == torch.bfloat16
    assert dev.resolve_precision(cpu, precision="bf16").grad_scaler() is None


def test_precision_on_cuda_bf16_or_fp16_with_loss_scaling(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda **kw: True)
    assert dev.resolve_precision(CUDA0).name == "bf16"
    assert dev.resolve_precision(CUDA0, bf16=False).name == "fp32"
    assert dev.resolve_precision(CUDA0, precision="fp32").name == "fp32"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda **kw: False)
    p = dev.resolve_precision(CUDA0)  # a V100: no bf16
    assert p.name == "fp16" and p.uses_scaler and p.dtype == torch.float16
    assert "fp16 with loss scaling" in p.describe()
    with pytest.raises(ValueError, match="precision must be one of"):
        dev.resolve_precision(CUDA0, precision="fp8")


def test_fp32_everywhere_makes_cuda_compute_as_the_cpu(monkeypatch):
    """``regenerate --fp32``: a GPU run of a config that leaves the precision to the device
    computes in fp32 with TF32 off; an explicit precision still wins; switching back restores
    bf16 autocast as CUDA's default (and cuDNN's TF32 default)."""
    import attnconv.regenerate as regen

    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda **kw: True)
    try:
        with mock.patch.object(regen, "entries", return_value=[]):
            assert regen.main(["--fp32", "--only", "nothing/*"]) == 2
        assert dev.resolve_precision(CUDA0).name == "fp32"
        assert dev.resolve_precision(CUDA0, precision="bf16").name == "bf16"
        assert not torch.backends.cudnn.allow_tf32
        assert not torch.backends.cuda.matmul.allow_tf32
    finally:
        dev.fp32_everywhere(False)
    assert dev.resolve_precision(CUDA0).name == "bf16"
    assert torch.backends.cudnn.allow_tf32


def test_start_lines(monkeypatch):
    assert (
        dev.start_line(dev.resolve_precision(torch.device("cpu"))) == "device cpu, fp32"
    )
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda **kw: True)
    monkeypatch.setattr(
        torch.cuda, "get_device_name", lambda i=None: "NVIDIA H100 80GB HBM3"
    )
    line = dev.start_line(dev.resolve_precision(CUDA0))
    assert line == "device cuda:0 (NVIDIA H100 80GB HBM3), bf16 autocast"


def test_training_says_where_it_runs(tmp_path, capsys):
    cfg = TrainConfig(
        model="quadratic",
        model_overrides=dict(
            hidden_size=8, intermediate_size=8, num_layers=1, num_heads=3, downsample=4
        ),
        epochs=1,
        batch_size=10,
        data="sample",
        device="cpu",
    )
    history = train(cfg, tmp_path / "r", progress=False, data=synthetic_cifar(20, 10))
    assert "device cpu, fp32" in capsys.readouterr().out.splitlines()[:3]
    assert history["device"] == "cpu" and history["precision"] == "fp32"
    saved = json.loads((tmp_path / "r" / "history.json").read_text())
    assert (saved["data"], saved["train_size"], saved["test_size"]) == (
        "synthetic",
        20,
        10,
    )
    assert (saved["device"], saved["precision"]) == ("cpu", "fp32")


class FakeCudaRng:
    """torch.cuda's generators of a machine with ``n`` GPUs (states are small tensors)."""

    def __init__(self, n):
        self.states = [torch.full((4,), i, dtype=torch.uint8) for i in range(n)]
        self.set_calls = []

    def get(self, device=0):
        return self.states[device].clone()

    def set(self, state, device=0):
        self.states[device]  # IndexError on a GPU this machine does not have
        self.set_calls.append((device, state.clone()))


def test_rng_state_is_the_current_gpus_only(monkeypatch):
    rng = FakeCudaRng(4)
    monkeypatch.setattr(torch.cuda, "get_rng_state", rng.get)
    monkeypatch.setattr(
        torch.cuda, "get_rng_state_all", mock.Mock(side_effect=AssertionError)
    )
    state = dev.rng_state(CUDA1)
    assert torch.equal(state["cuda_device"], rng.states[1]) and "cuda" not in state


def test_resume_a_4_gpu_checkpoint_with_2_gpus(monkeypatch):
    """A checkpoint of a 4-GPU job (one state per visible GPU, the old format, or the current
    device's only) restores on a machine with 2 GPUs: each process sets its own GPU only."""
    saved = dev.rng_state(torch.device("cpu"))
    saved["cuda"] = [torch.full((4,), 10 + i, dtype=torch.uint8) for i in range(4)]
    rng = FakeCudaRng(2)
    monkeypatch.setattr(torch.cuda, "set_rng_state", rng.set)
    monkeypatch.setattr(
        torch.cuda, "set_rng_state_all", mock.Mock(side_effect=IndexError)
    )
    dev.set_rng_state(saved, CUDA1)
    assert [(d, int(s[0])) for d, s in rng.set_calls] == [(1, 11)]
    new = {**saved, "cuda_device": torch.full((4,), 7, dtype=torch.uint8)}
    del new["cuda"]
    dev.set_rng_state(new, CUDA0)
    assert [(d, int(s[0])) for d, s in rng.set_calls][-1] == (0, 7)


def test_on_device_constants_are_made_once():
    made = []

    def make():
        made.append(1)
        return torch.arange(3.0)

    a = dev.on_device("test-constant", torch.device("cpu"), make)
    b = dev.on_device("test-constant", "cpu", make)
    assert a is b and made == [1]


def test_host_value_on_the_cpu():
    v = dev.HostValue(torch.tensor(2.5))
    assert v.ready() and float(v.get()) == 2.5


def test_host_value_on_cuda_records_on_the_values_own_stream(monkeypatch):
    """HostValue's CUDA branch with the CUDA calls mocked: a value on cuda:1 while cuda:0 is the
    current device (a single-process ``--device cuda:1``). The copy must be queued on cuda:1's
    stream and the event recorded on that stream (the bug: ``record()`` on the current device's
    stream, so the progress bar could read the loss before its copy landed); ``ready`` asks that
    event, ``get`` waits for it alone and returns the pinned copy."""
    from unittest import mock

    log = []
    streams = {}

    def current_stream(device=None):
        d = torch.device(device) if device is not None else torch.device("cuda", 0)
        return streams.setdefault(d.index, f"stream of cuda:{d.index}")

    class Stream:
        def __init__(self, stream):
            self.stream = stream

        def __enter__(self):
            log.append(("enter", self.stream))

        def __exit__(self, *exc):
            log.append(("exit", self.stream))

    host = mock.MagicMock(name="pinned")
    host.copy_.side_effect = lambda *a, **k: log.append(("copy", k))
    event = mock.MagicMock(name="event")
    event.record.side_effect = lambda *a: log.append(("record", a))
    event.query.return_value = True
    value = mock.MagicMock(name="loss")
    value.detach.return_value = value
    value.device, value.shape, value.dtype = torch.device("cuda", 1), (), torch.float32
    monkeypatch.setattr(dev.torch, "empty", lambda *a, **k: host)
    monkeypatch.setattr(torch.cuda, "current_stream", current_stream)
    monkeypatch.setattr(torch.cuda, "stream", Stream)
    monkeypatch.setattr(torch.cuda, "Event", lambda *a, **k: event)
    v = dev.HostValue(value)
    assert log == [
        ("enter", "stream of cuda:1"),
        ("copy", {"non_blocking": True}),
        ("exit", "stream of cuda:1"),
        ("record", ("stream of cuda:1",)),
    ]
    assert v.ready() and v.get() is host
    event.synchronize.assert_called_once_with()


# ----------------------------------------------------------------- the command line
@pytest.fixture
def fake_train(monkeypatch):
    calls = []

    def record(config, run_dir, **kw):
        calls.append(config)
        return {"epochs": []}

    monkeypatch.setattr(cli_mod, "train", record)
    return calls


@pytest.mark.parametrize("profile", ["paper", "gpu"])
def test_gpu_profile_without_cuda_is_refused_in_one_line(
    tmp_path, monkeypatch, capsys, fake_train, profile
):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    args = [
        "--model",
        "quadratic",
        "--profile",
        profile,
        "--run-dir",
        str(tmp_path / "r"),
    ]
    assert cli_mod.main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"the {profile} profile is sized for a GPU" in err[0]
    assert "--device cpu" in err[0] and fake_train == []
    assert cli_mod.main(args + ["--device", "cpu"]) == 0
    assert len(fake_train) == 1 and fake_train[0].device == "cpu"


def test_cpu_profile_runs_without_cuda(tmp_path, monkeypatch, fake_train):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    args = ["--model", "quadratic", "--profile", "cpu", "--run-dir", str(tmp_path)]
    assert cli_mod.main(args) == 0 and len(fake_train) == 1


def test_precision_flag_reaches_the_config(tmp_path, fake_train):
    args = ["--model", "quadratic", "--profile", "cpu", "--run-dir", str(tmp_path)]
    assert cli_mod.main(args + ["--precision", "bf16"]) == 0
    assert fake_train[-1].precision == "bf16"
    assert cli_mod.main(args) == 0 and fake_train[-1].precision is None
    assert (
        "precision" not in fake_train[-1].to_dict()
    )  # saved configs stay as they were


def test_fp32_everywhere_off_restores_tf32_as_it_was():
    """``fp32_everywhere(False)`` puts back the TF32 flags found by the first
    ``fp32_everywhere(True)`` (matmul TF32 on stays on), not torch's defaults."""
    flags = torch.backends.cuda.matmul, torch.backends.cudnn
    before = (flags[0].allow_tf32, flags[1].allow_tf32)
    try:
        for was in [(True, False), (False, True), (True, True)]:
            flags[0].allow_tf32, flags[1].allow_tf32 = was
            dev.fp32_everywhere(True)
            dev.fp32_everywhere(True)  # twice: still the flags from before the first
            assert (flags[0].allow_tf32, flags[1].allow_tf32) == (False, False)
            dev.fp32_everywhere(False)
            assert (flags[0].allow_tf32, flags[1].allow_tf32) == was
    finally:
        dev.fp32_everywhere(False)
        flags[0].allow_tf32, flags[1].allow_tf32 = before


def test_peak_flops_by_exact_card_name():
    """An H100 PCIe or NVL does not get the SXM card's peak, nor an L40 the L4's (the bug: the
    table was matched by substring); an unknown card has no peak (no MFU)."""
    peak = dev.peak_bf16_flops
    assert peak("cuda:0 (NVIDIA H100 80GB HBM3)") == 989e12
    assert peak("NVIDIA H100 PCIe") == 756e12 and peak("NVIDIA H100 NVL") == 835e12
    assert peak("cuda:1 (NVIDIA L40)") == 181e12 and peak("NVIDIA L4") == 121e12
    assert peak("NVIDIA L40S") == 362e12
    assert peak("cuda:0 (NVIDIA H100 80GB HBM3 prototype)") is None
    assert peak("cpu") is None


def test_gpu_estimate_is_the_audits_roofline():
    """Until a card measures them: 12-16 ms a step (position-only), 45-55 ms (learned +
    content), 500 steps and the evaluation an epoch, 4.6-6 h for the six paper runs."""
    from attnconv.experiments.profiles import GPU_ESTIMATE

    seconds = GPU_ESTIMATE["seconds_per_epoch"]
    for model, (lo, hi) in GPU_ESTIMATE["ms_per_step"].items():
        assert 500 * lo / 1e3 <= seconds[model] <= 500 * hi / 1e3 + 2
    six = [seconds[m] for m in seconds] + [seconds["quadratic"]]  # + 16-head quadratic
    hours = 300 * sum(six) / 3600
    lo, hi = GPU_ESTIMATE["hours_for_the_six_paper_runs"]
    assert lo <= hours <= hi, hours
