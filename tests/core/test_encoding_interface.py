"""The encodings' one interface: callers ask an encoding (``is_gaussian``, ``inverse_covariance``,
``inverse_sqrt_covariance``, ``head_record``) instead of switching on its type, so a new encoding
needs only its class, its registration and its test."""

import json

import pytest
import torch
from conftest import synthetic_cifar

from attnconv.core.encodings import RelativeEncoding
from attnconv.core.grid import relative_shifts
from attnconv.experiments.checkpoints import load_run
from attnconv.experiments.models import (
    ENCODINGS,
    SelfAttentionClassifier,
    SelfAttentionConfig,
    build_model,
    register_encoding,
    unregister_encoding,
)
from attnconv.experiments.pruning import degenerate_heads, head_statistics
from attnconv.experiments.train import train
from attnconv.experiments.train_config import TrainConfig

TINY = dict(hidden_size=8, intermediate_size=8, num_layers=2, num_heads=3, downsample=4)


def _trained_like(name: str, seed: int = 0):
    """A tiny model whose encoding parameters are moved away from their initial values."""
    torch.manual_seed(seed)
    model = build_model(name, **TINY)
    with torch.no_grad():
        for layer in model.layers:
            for p in layer.attention.encoding.parameters():
                p.add_(0.3 * torch.randn_like(p))
    return model


def _plain_record(model, layer):
    """The record of one layer, written out without the encoding's methods."""
    enc = layer.attention.encoding
    name = model.config.encoding
    if name == "quadratic":
        s = enc.spread.detach().float()
        return {
            "centers": enc.centers.detach().float(),
            "spreads": s,
            "inverse_covariance": (s**2)[:, None, None] * torch.eye(2),
        }
    if name == "generalized":
        m = enc.inv_sqrt_sigma.detach()
        return {
            "centers": enc.centers.detach().float(),
            "inv_sqrt_sigma": m.float(),
            "inverse_covariance": (m @ m.transpose(-1, -2)).float(),
        }
    g = model.config.tokens_per_side
    delta = relative_shifts(model.config.grid)[(g // 2) * g + g // 2].float()
    probs = torch.softmax(enc.position_scores(delta.long()).float(), -1)
    mean = probs @ delta
    diff = delta[None] - mean[:, None]
    return {
        "centers": mean,
        "covariance": torch.einsum("hk,hki,hkj->hij", probs, diff, diff),
        "peak_shift": delta[probs.argmax(-1)],
        "peak_probability": probs.max(-1).values,
    }


@pytest.mark.parametrize("name", ["quadratic", "generalized", "learned"])
def test_head_records_are_the_plain_ones_bit_for_bit(name):
    model = _trained_like(name)
    records = model.attention_parameters()
    assert len(records) == len(model.layers)
    for record, layer in zip(records, model.layers):
        want = _plain_record(model, layer)
        assert record.keys() == want.keys()
        for key in want:
            assert torch.equal(record[key], want[key]), key


@pytest.mark.parametrize("name", ["quadratic", "generalized"])
def test_gaussian_encodings_share_the_interface(name):
    enc = _trained_like(name).layers[0].attention.encoding
    assert enc.is_gaussian
    a = enc.inverse_covariance()
    assert a.shape == (enc.num_heads, 2, 2)
    m = enc.inverse_sqrt_covariance()
    torch.testing.assert_close(m @ m.transpose(-1, -2), a)
    # the Gaussian of each head is what its position scores are (up to a per-head constant)
    delta = relative_shifts((4, 4))[5].float()
    diff = delta[None] - enc.centers.detach()[:, None]
    want = -0.5 * torch.einsum("hki,hij,hkj->hk", diff, a.detach(), diff)
    torch.testing.assert_close(enc.position_scores(delta.long()).detach(), want)


def test_pruning_spectrum_matches_the_previous_quadratic_factor():
    """M = √(2α)·I computed in float64 from α, as pruning did before it asked the encoding."""
    model = _trained_like("quadratic")
    for stats, layer in zip(head_statistics(model), model.layers):
        a = layer.attention.encoding.width().detach().double()
        m = torch.sqrt(2 * a)[:, None, None] * torch.eye(2, dtype=torch.float64)
        got = layer.attention.encoding.inverse_sqrt_covariance(torch.float64).detach()
        assert torch.equal(got, m)
        torch.testing.assert_close(stats["eigenvalues"][:, 1], 2 * a)


def test_learned_is_not_gaussian():
    enc = build_model("learned", **TINY).layers[0].attention.encoding
    assert not enc.is_gaussian
    with pytest.raises(TypeError):
        head_statistics(build_model("learned", **TINY))


class ToyGaussianEncoding(RelativeEncoding):
    """A fixed isotropic Gaussian per head, Σ_h⁻¹ = τ_h·I, centred on Δ_h: the whole interface."""

    is_gaussian = True

    def __init__(self, num_heads: int, width: float = 0.5):
        super().__init__()
        self.num_heads, self.spatial_dims, self.dim = num_heads, 2, 0
        self.register_buffer("centers", torch.zeros(num_heads, 2))
        self.tau = torch.nn.Parameter(torch.full((num_heads,), width))

    def _position_scores(self, delta):
        self._check_delta(delta)
        diff = delta.to(self.tau.dtype).unsqueeze(0) - self.centers.view(
            self.num_heads, *([1] * (delta.ndim - 1)), 2
        )
        return -0.5 * self.tau.view(-1, *([1] * (diff.ndim - 2))) * (diff**2).sum(-1)

    def inverse_covariance(self):
        return self.tau[:, None, None] * torch.eye(2)

    def inverse_sqrt_covariance(self, dtype=None):
        t = self.tau if dtype is None else self.tau.to(dtype)
        return t.sqrt()[:, None, None] * torch.eye(2, dtype=t.dtype)

    def head_record(self, grid=None):
        return {
            "centers": self.centers.float().cpu(),
            "inverse_covariance": self.inverse_covariance().detach().float().cpu(),
        }


@pytest.fixture
def toy_registered():
    register_encoding("toy", lambda cfg, n: ToyGaussianEncoding(n))
    try:
        yield ENCODINGS["toy"]
    finally:
        unregister_encoding("toy")
    assert "toy" not in ENCODINGS


def test_a_new_encoding_needs_only_its_class_and_registration(toy_registered):
    assert callable(toy_registered)
    model = SelfAttentionClassifier(SelfAttentionConfig(encoding="toy", **TINY))
    assert isinstance(model.layers[0].attention.encoding, ToyGaussianEncoding)
    logits = model(torch.randn(2, 3, 32, 32))
    assert logits.shape == (2, 10) and torch.isfinite(logits).all()
    records = model.attention_parameters()
    assert len(records) == TINY["num_layers"]
    for record in records:
        assert torch.equal(
            record["inverse_covariance"], 0.5 * torch.eye(2).expand(3, 2, 2)
        )
    stats = head_statistics(model)
    for s in stats:
        torch.testing.assert_close(
            s["eigenvalues"], torch.full((3, 2), 0.5, dtype=torch.float64)
        )
        torch.testing.assert_close(s["condition"], torch.ones(3, dtype=torch.float64))
    assert degenerate_heads(model) == {}


def test_registering_a_name_twice_is_refused():
    with pytest.raises(ValueError):
        register_encoding("quadratic", lambda cfg, n: None)
    with pytest.raises(ValueError):
        SelfAttentionConfig(encoding="toy")


@pytest.mark.parametrize("name", ["quadratic", "generalized", "learned"])
def test_a_trained_runs_history_saves_the_plain_records(name, tmp_path):
    """One epoch of a tiny run: the heads its history.json saves are the plain records of the
    trained model, as JSON."""
    cfg = TrainConfig(
        model=name,
        model_overrides=dict(TINY, num_layers=1),
        epochs=1,
        batch_size=10,
        eval_batch_size=16,
        data="sample",
        device="cpu",
        seed=1,
    )
    train(cfg, tmp_path / "run", progress=False, data=synthetic_cifar(30, 12))
    saved = json.loads((tmp_path / "run" / "history.json").read_text())
    model = load_run(tmp_path / "run", load_model=True).model
    want = [
        {k: v.tolist() for k, v in _plain_record(model, layer).items()}
        for layer in model.layers
    ]
    assert saved["epochs"][-1]["attention"] == json.loads(json.dumps(want))
