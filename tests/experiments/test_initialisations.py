"""Each initialisation of attnconv.experiments.initialisations has the property it claims, and
the GPSA classifier is wired into the training harness."""

import math

import numpy as np
import pytest
import torch

from attnconv.core.encodings import kernel_shifts
from attnconv.core.gpsa import GatedPositionalSelfAttention
from attnconv.experiments.beyond import (
    ABLATION_SIZES,
    ABLATION_STARTS,
    SEEDS,
    SIZES,
    STARTS,
    STEPS,
    beyond_runs,
    steps_per_epoch,
)
from attnconv.experiments.gpsa_models import GPSAClassifier, GPSAConfig
from attnconv.experiments.initialisations import (
    IMPULSE_ALPHA,
    MIMETIC_SCALES,
    convit_init,
    impulse_init,
    initialise,
    mimetic_init,
    mimetic_qk_init,
    mimetic_vo_init,
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


def test_impulse_heads_are_nearly_one_hot_on_every_window_shift():
    layer = _layer()
    impulse_init(layer, generator=torch.Generator().manual_seed(0))
    peaks, top = _peaks(layer)
    # every shift of the 3×3 window is some head's centre (Theorem 1's layer), each once
    assert sorted(map(tuple, peaks.tolist())) == sorted(
        map(tuple, kernel_shifts(3).tolist())
    )
    assert top.min() >= 0.93  # Lemma 2's near one-hot regime at α = IMPULSE_ALPHA
    expected = 1 / (1 + 4 * math.exp(-IMPULSE_ALPHA) + 4 * math.exp(-2 * IMPULSE_ALPHA))
    assert top.min() >= expected - 1e-3
    orders = {
        tuple(map(tuple, _peaks_after(seed).tolist())) for seed in range(4)
    }  # other draws, other assignments of the shifts to the heads
    assert len(orders) > 1


def test_impulse_with_more_heads_than_shifts_still_covers_the_window():
    for seed in range(5):
        torch.manual_seed(seed)
        layer = GatedPositionalSelfAttention(48, 16)
        impulse_init(
            layer, kernel_size=3, generator=torch.Generator().manual_seed(seed)
        )
        peaks = {tuple(p) for p in _peaks(layer)[0].tolist()}
        assert peaks == {tuple(p) for p in kernel_shifts(3).tolist()}
    with pytest.raises(ValueError, match="cannot hold"):
        impulse_init(GatedPositionalSelfAttention(32, 8), kernel_size=3)


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


def _head_products(layer):
    """Each head's W_q^h W_k^hᵀ (row-vector convention) read off the layer's forward map."""
    d, dh = layer.dim, layer.head_dim
    with torch.no_grad():
        q, k = layer.qk(torch.eye(d)).double().split(d, dim=-1)
    return [
        q[:, h * dh : (h + 1) * dh] @ k[:, h * dh : (h + 1) * dh].T
        for h in range(layer.num_heads)
    ]


def _truncated(m, rank):
    """The best rank-``rank`` approximation of m (numpy's SVD: an independent oracle)."""
    u, s, vh = np.linalg.svd(m.numpy())
    return torch.from_numpy((u[:, :rank] * s[:rank]) @ vh[:rank])


def test_mimetic_factors_each_head_on_its_own_noise():
    """Head by head, W_q^h W_k^hᵀ is the best rank-D_h approximation of α₁Z^h + β₁I with Z^h the
    head's own draw, and W_v W_out = α₂Z − β₂I for the layer (the draws replayed)."""
    d, heads = 54, 9
    torch.manual_seed(0)
    layer = GatedPositionalSelfAttention(d, heads)
    mimetic_init(layer, generator=torch.Generator().manual_seed(3))
    a1, b1, a2, b2 = MIMETIC_SCALES
    replay = torch.Generator().manual_seed(3)
    random_init(GatedPositionalSelfAttention(d, heads), generator=replay)
    eye = torch.eye(d, dtype=torch.float64)

    def draw():
        return torch.randn(d, d, generator=replay, dtype=torch.float64) / math.sqrt(d)

    for h, product in enumerate(_head_products(layer)):
        want = _truncated(a1 * draw() + b1 * eye, layer.head_dim)
        assert (product - want).abs().max() < 1e-5, h
    _, vo = _products(layer)
    assert (vo - (a2 * draw() - b2 * eye)).abs().max() < 1e-5


def _self_attention_share(layer, seed=0):
    """Each head's mean content attention on the query token itself, over layer-normed tokens."""
    x = torch.nn.functional.layer_norm(
        torch.randn(8, 64, layer.dim, generator=torch.Generator().manual_seed(seed)),
        (layer.dim,),
    )
    with torch.no_grad():
        a = layer.content_attention(x)
    return a.diagonal(dim1=-2, dim2=-1).mean((0, 2))


def test_every_mimetic_head_attends_to_itself_more_than_uniformly():
    """The property per head (the whole-layer factorisation gave the last heads almost nothing):
    each head's attention on the token itself is several times uniform (1/64), while the
    default start's stays at uniform."""
    torch.manual_seed(0)
    layer = GatedPositionalSelfAttention(54, 9)
    mimetic_init(layer, generator=torch.Generator().manual_seed(0))
    share = _self_attention_share(layer)
    assert share.min() > 3 / 64, share
    random_init(layer, generator=torch.Generator().manual_seed(0))
    assert (_self_attention_share(layer) - 1 / 64).abs().max() < 0.5 / 64


def test_mimetic_halves_set_only_their_own_products():
    torch.manual_seed(0)
    full, qk_only, vo_only = (GatedPositionalSelfAttention(54, 9) for _ in range(3))
    mimetic_init(full, generator=torch.Generator().manual_seed(1))
    mimetic_qk_init(qk_only, generator=torch.Generator().manual_seed(1))
    mimetic_vo_init(vo_only, generator=torch.Generator().manual_seed(1))
    assert torch.equal(
        qk_only.qk.weight, full.qk.weight
    )  # the same draws, the same heads
    for layer, default_part in ((qk_only, 1), (vo_only, 0)):
        products = _products(layer)
        # the half it sets is near ±I, the other is the default's (cosine with I near 0)
        set_part = products[1 - default_part]
        cos = [p.diagonal().sum() / (p.norm() * math.sqrt(54)) for p in products]
        assert abs(cos[default_part]) < 0.3
        assert abs(cos[1 - default_part]) > 0.3, set_part.shape


def test_default_products_are_not_near_identity():
    """The property fails for the baseline: the oracle can tell."""
    layer = _layer(dim=144)
    random_init(layer)
    qk, vo = _products(layer)
    assert len(_head_products(layer)) == 9
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


def test_plain_vit_has_no_positional_heads_and_a_position_embedding():
    cfg = GPSAConfig(attention="mhsa", position_embedding=True, num_layers=2)
    torch.manual_seed(0)
    model = GPSAClassifier(cfg)
    names = {n for n, _ in model.named_parameters()}
    assert "pos_embed" in names
    assert not any("pos_proj" in n or "gating_param" in n for n in names)
    assert abs(model.pos_embed.std().item() - 0.02) < 0.004
    model.eval()
    with torch.no_grad():
        model(torch.randn(3, 3, 32, 32))
    assert set(model.attention_parameters()[0]) == {"num_heads", "distance"}
    with pytest.raises(ValueError, match="positional heads"):
        GPSAConfig(attention="mhsa", init="convit")


def test_the_experiment_registers_every_start_size_and_seed():
    runs = list(beyond_runs())
    assert len(runs) == SEEDS * (len(SIZES) * len(STARTS) + len(ABLATION_SIZES) * 2)
    assert len({r.name for r in runs}) == len(runs)
    for r in runs:
        size = r.changes.get("train_subset") or 5085
        assert r.changes["epochs"] * steps_per_epoch(size) == STEPS  # equal steps
        assert r.changes["optimizer"] == "adamw"
        assert r.changes["attention_lr_multiplier"] == 1.0
    grid = {(r.series.split("/")[1], r.changes.get("train_subset")) for r in runs}
    assert {s for s, _ in grid} == set(STARTS) | set(ABLATION_STARTS)
    assert {n for _, n in grid} == {510, 1700, None}
    seeds = {}
    for r in runs:
        seeds.setdefault(r.series, []).append(r.changes["seed"])
    assert all(v == list(range(SEEDS)) for v in seeds.values())  # paired seeds
    vit = [r for r in runs if r.series.startswith("beyond2/vit/")]
    assert all(r.changes["model_overrides"]["attention"] == "mhsa" for r in vit)
    assert {r.series.split("/")[1] for r in runs if "mimetic_" in r.series} == set(
        ABLATION_STARTS
    )
