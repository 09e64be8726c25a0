"""Each initialisation of attnconv.experiments.initialisations has the property it claims, and
the GPSA classifier is wired into the training harness."""

import math

import pytest
import torch

from attnconv.core.encodings import kernel_shifts
from attnconv.core.gpsa import GatedPositionalSelfAttention
from attnconv.experiments.beyond import (
    EPOCHS,
    FRACTIONS,
    GPSA_OVERRIDES,
    SEEDS,
    STEPS_FRACTIONS,
    beyond_runs,
    equal_steps_epochs,
    steps_per_epoch,
    steps_runs,
    subset_size,
)
from attnconv.experiments.gpsa_models import GPSAClassifier, GPSAConfig
from attnconv.experiments.initialisations import (
    IMPULSE_ALPHA,
    MIMETIC_SCALES,
    convit_init,
    impulse_init,
    initialise,
    mimetic_init,
    random_init,
)
from attnconv.experiments.models import (
    build_model,
    model_config_from_dict,
    model_config_to_dict,
)

GRID = (8, 8)
CENTRE_QUERY = 4 * 8 + 4  # token (4, 4)


def _layer(seed=0, dim=72):
    torch.manual_seed(seed)
    return GatedPositionalSelfAttention(dim, 9)


def _peaks(layer):
    """The shift (row, column) each head's positional attention peaks on, seen from (4, 4)."""
    with torch.no_grad():
        maps = layer.positional_attention(GRID)[:, CENTRE_QUERY]
    k = maps.argmax(dim=-1)
    return torch.stack([k // 8 - 4, k % 8 - 4], dim=-1), maps.max(dim=-1).values


def test_convit_heads_peak_on_the_lattice_shifts():
    layer = _layer()
    convit_init(layer)
    peaks, _ = _peaks(layer)
    assert torch.equal(peaks, kernel_shifts(3))  # each shift once, in lattice order
    assert torch.equal(layer.v.weight, torch.eye(72))


def test_random_heads_do_not_sit_on_the_lattice():
    layer = _layer()
    random_init(layer)
    for linear in (layer.qk, layer.v, layer.proj):
        assert abs(linear.weight.std().item() - 0.02) < 0.002
    assert torch.all(layer.gating_param == 1) and torch.all(layer.pos_proj.bias == 0)
    peaks, top = _peaks(layer)
    assert not torch.equal(peaks, kernel_shifts(3))
    assert (
        top.max() < 0.1
    )  # the ViT default: nearly uniform positional attention (1/64)


def test_impulse_heads_are_nearly_one_hot_on_random_window_shifts():
    layer = _layer()
    impulse_init(layer, generator=torch.Generator().manual_seed(0))
    peaks, top = _peaks(layer)
    assert peaks.abs().max() <= 1  # inside the 3×3 window
    assert top.min() >= 0.93  # Lemma 2's near one-hot regime at α = IMPULSE_ALPHA
    expected = 1 / (1 + 4 * math.exp(-IMPULSE_ALPHA) + 4 * math.exp(-2 * IMPULSE_ALPHA))
    assert top.min() >= expected - 1e-3
    draws = {
        tuple(map(tuple, _peaks_after(seed).tolist())) for seed in range(4)
    }  # other draws, other filters
    assert len(draws) > 1


def _peaks_after(seed):
    layer = _layer()
    impulse_init(layer, generator=torch.Generator().manual_seed(seed))
    return _peaks(layer)[0]


def _products(layer):
    """W_q W_kᵀ and W_v W_out in the row-vector convention, read off the layer's forward maps."""
    d = layer.dim
    eye = torch.eye(d)
    with torch.no_grad():
        q, k = layer.qk(eye).split(d, dim=-1)
        vo = layer.proj(layer.v(eye)) - layer.proj.bias
    return (q @ k.T).double(), vo.double()


def test_mimetic_products_are_near_plus_and_minus_identity():
    layer = _layer(dim=144)
    mimetic_init(layer, generator=torch.Generator().manual_seed(0))
    a1, b1, a2, b2 = MIMETIC_SCALES
    d = layer.dim
    for product, alpha, beta in zip(_products(layer), (a1, a2), (b1, -b2)):
        diag = product.diagonal()
        off = product[~torch.eye(d, dtype=torch.bool)]
        # β I plus N(0, α²/D) noise: the diagonal's mean is β, the off-diagonal is centred noise
        assert abs(diag.mean() - beta) < 5 * alpha / d
        assert abs(off.mean()) < 5 * alpha / d
        assert abs(off.std() - alpha / math.sqrt(d)) < 0.1 * alpha / math.sqrt(d)
        cosine = diag.sum() / (product.norm() * math.sqrt(d))
        assert cosine * math.copysign(1, beta) > 0.6


def test_default_products_are_not_near_identity():
    """The property fails for the baseline: the oracle can tell."""
    layer = _layer(dim=144)
    random_init(layer)
    qk, vo = _products(layer)
    for product in (qk, vo):
        cosine = product.diagonal().sum() / (product.norm() * 12)
        assert abs(cosine) < 0.3


def test_initialise_every_layer_and_reject_unknown_names():
    torch.manual_seed(0)
    model = GPSAClassifier(GPSAConfig(init="random", num_layers=2, hidden_size=36))
    initialise(model, "convit")
    for block in model.blocks:
        assert torch.equal(_peaks(block.attn)[0], kernel_shifts(3))
    with pytest.raises(ValueError, match="unknown initialisation"):
        initialise(model, "xavier")
    with pytest.raises(ValueError, match="init must be one of"):
        GPSAConfig(init="xavier")


def test_gpsa_classifier_through_the_model_registry():
    cfg = build_model("gpsa", init="convit", num_layers=2).config
    d = model_config_to_dict(cfg)
    assert d["kind"] == "gpsa" and model_config_from_dict(d) == cfg
    torch.manual_seed(0)
    model = build_model(cfg)
    logits = model(torch.randn(5, 3, 32, 32))
    assert logits.shape == (5, 10)
    record = model.attention_parameters()
    assert len(record) == 2 and "distance" not in record[0]
    model.eval()
    with torch.no_grad():
        model(torch.randn(5, 3, 32, 32))
    record = model.attention_parameters()
    assert set(record[0]) == {
        "num_heads",
        "centers",
        "alpha",
        "gate",
        "position_distance",
        "distance",
    }
    assert torch.allclose(
        torch.tensor(record[0]["centers"]).double(),
        kernel_shifts(3).double(),
        atol=1e-6,
    )


def test_the_experiment_registers_every_size_and_seed():
    runs = list(beyond_runs())
    per_model = 3 * 3 + 5
    assert len(runs) == 5 * per_model
    sizes = {r.changes.get("train_subset") for r in runs}
    assert sizes == {508, 1271, 2542, None}
    assert [subset_size(f) for f in FRACTIONS] == [508, 1271, 2542, None]
    assert SEEDS[1.0] == 5
    gpsa = [r for r in runs if r.model == "gpsa"]
    assert all(
        {k: v for k, v in r.changes["model_overrides"].items() if k != "init"}
        == GPSA_OVERRIDES
        for r in gpsa
    )
    assert len({r.changes["epochs"] for r in runs}) == 1  # equal epochs for every run


def test_the_equal_steps_runs_take_the_full_samples_steps():
    runs = list(steps_runs())
    assert len(runs) == 5 * 2 * 3
    full = EPOCHS * steps_per_epoch(1.0)
    for r in runs:
        steps = r.changes["epochs"] * -(-r.changes["train_subset"] // 100)
        assert abs(steps - full) <= steps_per_epoch(0.25) / 2  # rounded to whole epochs
    assert {equal_steps_epochs(f) for f in STEPS_FRACTIONS} == {51, 24}
