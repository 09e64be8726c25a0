import math

import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from attnconv.experiments.flops import MacCount, analytic_macs, count_macs, flops_table
from attnconv.experiments.models import (
    MODEL_KINDS,
    MODEL_NAMES,
    PAPER_MODELS,
    ResNetConfig,
    SelfAttentionClassifier,
    SelfAttentionConfig,
    SelfAttentionLayer,
    build_model,
    count_parameters,
    depth_to_space,
    model_config_from_dict,
    model_config_to_dict,
    paper_model_config,
    parameter_count_table,
    register_model_kind,
    space_to_depth,
)

TINY = dict(
    hidden_size=8, intermediate_size=12, num_layers=2, num_heads=3, downsample=4
)


def tiny(name, **kw):
    if name == "resnet18":
        return build_model("resnet18", widths=(4, 8, 8, 8), **kw)
    return build_model(name, **{**TINY, **kw})


# ----------------------------------------------------------------- space-to-depth
def loop_space_to_depth(x, f):
    b, c, h, w = x.shape
    out = torch.empty(b, h // f, w // f, f * f * c, dtype=x.dtype)
    for i in range(h // f):
        for j in range(w // f):
            for dh in range(f):
                for dw in range(f):
                    for ch in range(c):
                        out[:, i, j, (dh * f + dw) * c + ch] = x[
                            :, ch, f * i + dh, f * j + dw
                        ]
    return out


@pytest.mark.parametrize("f", [2, 4])
def test_space_to_depth_matches_loop_and_inverts(f):
    x = torch.randn(2, 3, 8, 8)
    t = space_to_depth(x, f)
    assert torch.equal(t, loop_space_to_depth(x, f))
    assert torch.equal(depth_to_space(t, f), x)


def test_space_to_depth_is_not_pixel_unshuffle_order():
    x = torch.randn(1, 3, 4, 4)
    ours = space_to_depth(x, 2)
    theirs = F.pixel_unshuffle(x, 2).permute(0, 2, 3, 1)  # channel order (c, dh, dw)
    assert not torch.equal(ours, theirs)
    assert torch.equal(
        ours.sort(-1).values, theirs.sort(-1).values
    )  # same pixels, other order


def test_space_to_depth_errors():
    with pytest.raises(ValueError):
        space_to_depth(torch.zeros(1, 3, 6, 6), 4)
    with pytest.raises(ValueError):
        space_to_depth(torch.zeros(3, 6, 6), 2)
    with pytest.raises(ValueError):
        depth_to_space(torch.zeros(1, 2, 2, 6), 2)


# ----------------------------------------------------------------- parameter counts
def test_exact_parameter_counts_against_the_paper():
    rows = {r["model"]: r for r in parameter_count_table()}
    assert rows["quadratic"]["ours"] == 12_086_844
    assert rows["generalized"]["ours"] == 12_087_006
    assert rows["learned"]["ours"] == 12_278_682
    assert rows["generalized_pruned"]["ours"] == 9_686_916
    assert rows["resnet18"]["ours"] == 11_173_962
    assert all(r["match"] for r in rows.values())
    assert [r["paper"] for r in rows.values()] == [
        "12.1M",
        "12.1M",
        "12.3M",
        "9.7M",
        "11.2M",
    ]


def test_parameter_count_by_formula():
    # D=400, I=512, 6 layers, 9 heads, 12 token channels: the paper's quadratic model term by term
    d, i, h = 400, 512, 9
    per_layer = (
        (h * d * d + d)
        + (d * d + d)
        + 2 * d
        + (d * i + i)
        + (i * d + d)
        + 2 * d
        + 3 * h
    )
    assert 12 * d + d + 6 * per_layer + d * 10 + 10 == 12_086_844
    with torch.device("meta"):
        content = build_model("learned_content")
    # + query and key Linear(400 -> 3600) with biases in each layer
    assert count_parameters(content) == 12_278_682 + 6 * 2 * (d * h * d + h * d)


# ----------------------------------------------------------------- forward passes
@pytest.mark.parametrize(
    "name", ["quadratic", "generalized", "learned", "learned_content", "resnet18"]
)
def test_forward_shapes(name):
    torch.manual_seed(0)
    m = tiny(name)
    out = m(torch.randn(3, 3, 32, 32))
    assert out.shape == (3, 10) and torch.isfinite(out).all()
    out.sum().backward()
    assert all(p.grad is not None for p in m.parameters())


def test_sixteen_by_sixteen_tokens():
    m = build_model(
        "quadratic",
        hidden_size=8,
        intermediate_size=8,
        num_layers=1,
        num_heads=2,
        downsample=2,
    )
    assert m.config.grid == (16, 16) and m.config.token_channels == 12
    assert m(torch.randn(1, 3, 32, 32)).shape == (1, 10)
    with pytest.raises(ValueError):
        m(torch.randn(1, 3, 16, 16))


def test_layer_is_post_ln_bert():
    torch.manual_seed(0)
    cfg = SelfAttentionConfig(**TINY)
    layer = SelfAttentionLayer(cfg).eval()
    x = torch.randn(cfg.num_tokens, 2, cfg.hidden_size)  # (T, B, D)
    grid = x.permute(1, 2, 0).reshape(2, cfg.hidden_size, *cfg.grid)
    att = (
        layer.attention(grid).flatten(2).permute(2, 0, 1)
    )  # the core layer on (B, C, H, W)
    eps = cfg.layer_norm_eps
    a = F.layer_norm(
        x + layer.attention_dense(att),
        (cfg.hidden_size,),
        layer.attention_norm.weight,
        layer.attention_norm.bias,
        eps,
    )
    h = layer.output(
        0.5
        * layer.intermediate(a)
        * (1 + torch.erf(layer.intermediate(a) / math.sqrt(2)))
    )
    expect = F.layer_norm(
        a + h, (cfg.hidden_size,), layer.output_norm.weight, layer.output_norm.bias, eps
    )
    assert torch.allclose(layer(x, cfg.grid), expect, atol=1e-5)
    assert layer.attention_norm.eps == 1e-12 and layer.dropout.p == 0.1
    assert layer.attention.attention_dropout.p == 0.1
    assert (
        layer.attention.value is None
        and layer.attention.out.in_features == cfg.num_heads * cfg.hidden_size
    )


def test_classifier_mean_pools_tokens():
    torch.manual_seed(0)
    m = tiny("quadratic").eval()
    x = torch.randn(2, 3, 32, 32)
    t = m.tokens(x)
    for layer in m.layers:
        t = layer(t, m.config.grid)
    assert torch.allclose(m(x), m.classifier(t.mean(0)), atol=1e-6)
    tok = m.tokens(x)
    assert torch.allclose(
        tok, m.embedding(space_to_depth(x, 4).flatten(1, 2)).transpose(0, 1)
    )


def test_content_term_scale_and_bias():
    m = build_model("learned_content", **TINY)
    att = m.layers[0].attention
    assert (
        att.terms.content_content
        and att.terms.position_only
        and not att.terms.content_position
    )
    assert att.scale == pytest.approx(1 / math.sqrt(TINY["hidden_size"]))
    assert (
        att.query.bias is not None
        and att.query.out_features == TINY["num_heads"] * TINY["hidden_size"]
    )
    with torch.device("meta"):
        full = build_model("learned_content")
    assert full.layers[0].attention.scale == pytest.approx(1 / 20)


def test_initialisations():
    torch.manual_seed(0)
    cfg = SelfAttentionConfig(hidden_size=4, num_heads=3000)
    q = SelfAttentionLayer.make_attention(cfg, 3000).encoding
    assert q.parametrization == "spread"
    assert (
        abs(q.centers.std().item() - 2.0) < 0.1 and abs(q.centers.mean().item()) < 0.1
    )
    assert (
        abs(q.spread.mean().item() - 1) < 1e-3
        and abs(q.spread.std().item() - 0.01) < 1e-3
    )
    g = SelfAttentionLayer.make_attention(
        SelfAttentionConfig(encoding="generalized", hidden_size=4), 3000
    ).encoding
    m = g.inv_sqrt_sigma
    assert abs((m - torch.eye(2)).std().item() - 0.01) < 1e-3
    learned = SelfAttentionLayer.make_attention(
        SelfAttentionConfig(encoding="learned", hidden_size=200), 9
    ).encoding
    assert (
        abs(learned.axis_embeddings[0].weight.std().item() - 1) < 0.05
    )  # nn.Embedding default N(0, 1)
    assert learned.head_keys.abs().max() <= 1 / math.sqrt(
        200
    )  # nn.Linear(200, 9) default bound
    assert (
        learned.max_shift == 15 and learned.dim == 400
    )  # 16×16 tokens at downsample 2


def test_attention_parameters():
    torch.manual_seed(0)
    q = tiny("quadratic")
    p = q.attention_parameters()
    enc = q.layers[1].attention.encoding
    assert len(p) == 2 and torch.equal(p[1]["centers"], enc.centers.detach())
    s = enc.spread.detach()
    assert torch.allclose(
        p[1]["inverse_covariance"], (s**2)[:, None, None] * torch.eye(2)
    )
    g = tiny("generalized")
    pg = g.attention_parameters()[0]
    m = g.layers[0].attention.encoding.inv_sqrt_sigma.detach()
    for h in range(3):
        assert torch.allclose(pg["inverse_covariance"][h], m[h] @ m[h].T)
    learned = tiny("learned")
    pl = learned.attention_parameters()[0]
    maps = learned.position_attention()[0]  # (N_h, 8, 8) for the centre query (4, 4)
    rows = torch.arange(8).float() - 4
    mean_row = (maps.sum(2) * rows).sum(1)
    assert torch.allclose(pl["centers"][:, 0], mean_row, atol=1e-6)
    assert set(pl) == {"centers", "covariance", "peak_shift", "peak_probability"}
    assert tiny("resnet18").attention_parameters() == []


def test_position_attention_peaks_at_centre():
    m = tiny("quadratic")
    enc = m.layers[0].attention.encoding
    with torch.no_grad():
        enc.centers.copy_(torch.tensor([[0.0, 1.0], [-1.0, 0.0], [1.0, -1.0]]))
        enc.spread.fill_(5.0)
    maps = m.position_attention(query=(0, 0))[0]
    assert torch.allclose(maps.sum((1, 2)), torch.ones(3))
    assert maps[0, 0, 1] > 0.99 and maps[2, 1, 0] > 0.99
    assert (
        maps[1].argmax() == 0
    )  # Δ = (−1, 0) falls outside the grid: the nearest key wins
    with pytest.raises(ValueError):
        m.position_attention(query=(8, 0))


def test_config_validation_and_roundtrip():
    with pytest.raises(ValueError):
        SelfAttentionConfig(encoding="sinusoidal")
    with pytest.raises(ValueError):
        SelfAttentionConfig(downsample=3)
    with pytest.raises(ValueError):
        SelfAttentionConfig(learned_max_shift=10)
    with pytest.raises(ValueError):
        SelfAttentionConfig(hidden_dropout=1.0)
    with pytest.raises(ValueError):
        paper_model_config("vit")
    with pytest.raises(ValueError):
        ResNetConfig(num_blocks=(2, 2), widths=(8,))
    for name in ("learned_content", "resnet18"):
        cfg = paper_model_config(name)
        assert model_config_from_dict(model_config_to_dict(cfg)) == cfg
    with pytest.raises(ValueError):
        model_config_from_dict({"kind": "resnet", "depth": 18})
    with pytest.raises(TypeError):
        build_model(3)


# ----------------------------------------------------------------- FLOPs
PAPER_CONFIGS = ["quadratic", "generalized", "learned", "learned_content", "resnet18"]


@pytest.mark.parametrize("name", PAPER_CONFIGS)
def test_hooks_equal_formulas_at_paper_size(name):
    cfg = paper_model_config(name)
    with torch.device("meta"):
        model = build_model(cfg)
        hooked = count_macs(model, batch=2)
    assert hooked == analytic_macs(cfg)


def test_paper_flops_reproduced_and_attention_left_out():
    rows = {r["model"]: r for r in flops_table(use_hooks=False)}
    for name in ("quadratic", "generalized", "learned"):
        assert round(rows[name]["ours_paper_way_gflops"], 1) == 6.2
        assert rows[name]["attention_gmacs"] == pytest.approx(
            9 * 256 * 256 * 400 * 6 / 1e9
        )
        assert round(rows[name]["attention_gmacs"], 2) == 1.42
    assert round(rows["resnet18"]["ours_paper_way_gflops"], 1) == 1.1
    assert round(rows["learned_content"]["ours_paper_way_gflops"]) == 15
    c = analytic_macs(paper_model_config("quadratic"))
    assert (
        c.paper_flops == 2 * (c.linear + c.conv)
        and c.flops_with_attention == 2 * c.total
    )


@pytest.mark.parametrize(
    "name", ["quadratic", "learned", "learned_content", "resnet18"]
)
def test_hooks_against_torch_flop_counter(name):
    """FlopCounterMode counts 2 × every matrix product; the per-image part is the difference
    between two batch sizes (the position scores are computed once per batch)."""
    torch.manual_seed(0)
    m = tiny(name).eval()
    flops = []
    for b in (1, 3):
        with FlopCounterMode(display=False) as fc, torch.no_grad():
            m(torch.randn(b, 3, 32, 32))
        flops.append(fc.get_total_flops())
    per_image = (flops[1] - flops[0]) // 2
    c = count_macs(m)
    assert per_image == 2 * c.total
    assert c == analytic_macs(m.config)


def test_pruned_model_macs():
    from attnconv.experiments.pruning import prune_heads

    m = tiny("generalized")
    prune_heads(m, {0: [0, 2], 1: [0, 1, 2]})
    assert count_macs(m) == analytic_macs(m.config, heads_per_layer=[1, 0])
    with pytest.raises(ValueError):
        analytic_macs(m.config, heads_per_layer=[1])
    assert MacCount(1, 2, 3, 4) + MacCount(1, 1, 1, 1) == MacCount(2, 3, 4, 5)


def test_a_model_kind_is_one_registration():
    """A toy kind (a config dataclass and a tiny module) registered in ``MODEL_KINDS`` is built by
    name and from its config through ``build_model``, its config saved and read back by its tag,
    with no other edit; the paper's names keep their kinds."""
    from dataclasses import dataclass

    @dataclass
    class ToyConfig:
        width: int = 4
        num_classes: int = 10

    class Toy(torch.nn.Module):
        def __init__(self, config):
            super().__init__()
            self.head = torch.nn.Linear(config.width, config.num_classes)

    before = dict(MODEL_KINDS)
    register_model_kind("toy", ToyConfig, Toy, width=3)
    try:
        with pytest.raises(ValueError, match="already registered"):
            register_model_kind("toy", ToyConfig, Toy)
        model = build_model("toy", num_classes=2)
        assert isinstance(model, Toy) and model.head.weight.shape == (2, 3)
        assert isinstance(build_model(ToyConfig(width=5)), Toy)
        saved = model_config_to_dict(paper_model_config("toy"))
        assert saved == {"kind": "toy", "width": 3, "num_classes": 10}
        assert model_config_from_dict(saved) == ToyConfig(width=3)
    finally:
        MODEL_KINDS.pop("toy")
    assert MODEL_KINDS == before
    with pytest.raises(ValueError, match="unknown model 'toy'"):
        paper_model_config("toy")
    assert MODEL_NAMES == PAPER_MODELS + ("gpsa",) == tuple(MODEL_KINDS)
    assert type(build_model("learned_content")) is SelfAttentionClassifier
    assert paper_model_config("learned_content") == SelfAttentionConfig(
        encoding="learned", content=True
    )
