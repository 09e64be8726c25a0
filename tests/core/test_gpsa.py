"""GPSA (attnconv.core.gpsa) against two independent oracles: timm's ConViT layer with the same
weights, and the book's Theorem 1 construction (conv_to_mhsa) as the width α grows."""

import math

import pytest
import torch
from torch import nn

from attnconv.core.conv import conv_to_mhsa
from attnconv.core.encodings import kernel_shifts
from attnconv.core.gpsa import (
    GatedPositionalSelfAttention,
    MultiHeadSelfAttention,
    head_centres,
    quadratic_features,
    quadratic_weights,
)
from attnconv.experiments.initialisations import (
    convit_init,
    gpsa_from_conv,
    random_init,
)

timm_convit = pytest.importorskip("timm.models.convit")

GRID = (6, 6)


def _random_layer(dim=36, heads=9, bias=False, seed=0, dtype=torch.float64):
    torch.manual_seed(seed)
    layer = GatedPositionalSelfAttention(dim, heads, qkv_bias=bias).to(dtype)
    with torch.no_grad():
        layer.gating_param.normal_(0.0, 2.0)  # gates anywhere in (0, 1)
        layer.pos_proj.weight.normal_(0.0, 0.5)
    return layer.eval()


def _timm_copy(layer: GatedPositionalSelfAttention, bias: bool):
    """timm's GPSA with the same weights. timm orders r_δ as (δ_col, δ_row, ‖δ‖²); ours is the
    paper's (‖δ‖², δ_row, δ_col), so the positional weights' columns are permuted."""
    other = timm_convit.GPSA(layer.dim, layer.num_heads, qkv_bias=bias)
    other = other.to(layer.qk.weight.dtype).eval()
    state = {k: v.clone() for k, v in layer.state_dict().items()}
    state["pos_proj.weight"] = state["pos_proj.weight"][:, [2, 1, 0]]
    missing, unexpected = other.load_state_dict(state, strict=False)
    assert not unexpected and set(missing) <= {"rel_indices"}
    return other


@pytest.mark.parametrize("bias", [False, True])
def test_gpsa_equals_timm_float64(bias):
    layer = _random_layer(bias=bias)
    other = _timm_copy(layer, bias)
    x = torch.randn(3, GRID[0] * GRID[1], layer.dim, dtype=torch.float64)
    with torch.no_grad():
        ours, theirs = layer(x, GRID), other(x)
        a_ours, a_theirs = layer.attention(x, GRID), other.get_attention(x)
    assert torch.allclose(a_ours, a_theirs, rtol=0, atol=1e-14)
    assert torch.allclose(ours, theirs, rtol=0, atol=1e-12)


def test_gpsa_equals_timm_float32():
    layer = _random_layer(dtype=torch.float32, seed=3)
    other = _timm_copy(layer, False)
    x = torch.randn(2, 36, layer.dim)
    with torch.no_grad():
        assert torch.allclose(layer(x, GRID), other(x), rtol=0, atol=1e-5)


def test_a_wrong_channel_order_is_caught():
    """The oracle can fail: timm with our positional weights unpermuted differs."""
    layer = _random_layer(seed=1)
    other = _timm_copy(layer, False)
    with torch.no_grad():
        other.pos_proj.weight.copy_(layer.pos_proj.weight)
    x = torch.randn(1, 36, layer.dim, dtype=torch.float64)
    with torch.no_grad():
        assert (layer(x, GRID) - other(x)).abs().max() > 1e-3


def test_convit_init_equals_timm_local_init():
    """Our ConViT initialisation and timm's local_init give the same positional heads (timm
    numbers the lattice column-major, we row-major) and W_val = I."""
    k, alpha = 3, 1.7
    layer = _random_layer(dim=18)
    convit_init(layer, locality_strength=alpha)
    other = timm_convit.GPSA(18, 9, locality_strength=alpha).double()
    other.local_init()
    x = torch.randn(2, 36, 18, dtype=torch.float64)
    other.rel_indices = other.get_rel_indices(36)
    with torch.no_grad():
        theirs = other.pos_proj(other.rel_indices).permute(0, 3, 1, 2).softmax(-1)[0]
        ours = layer.positional_attention(GRID)
    order = [
        row + k * col for row in range(k) for col in range(k)
    ]  # our head h → timm's
    assert torch.allclose(ours, theirs[order], rtol=0, atol=1e-14)
    assert torch.equal(layer.v.weight, other.v.weight)
    assert x.shape[1] == ours.shape[-1]


@pytest.mark.parametrize("heads", [4, 6, 9, 12, 16])
def test_convit_init_equals_timm_local_init_for_any_head_count(heads):
    """K = ⌊√N_h⌋: the first K² heads on timm's lattice (centre (K−1)/2, half-integer for even
    K), the heads left over keep their default weights × α (timm's rule), W_val = I."""
    alpha, dim = 0.8, 4 * heads
    k = math.isqrt(heads)
    torch.manual_seed(0)
    layer = GatedPositionalSelfAttention(dim, heads).double()
    convit_init(
        layer, locality_strength=alpha, generator=torch.Generator().manual_seed(5)
    )
    other = timm_convit.GPSA(dim, heads, locality_strength=alpha).double()
    with torch.no_grad():  # timm's leftover heads keep what they had: give them ours
        default = GatedPositionalSelfAttention(dim, heads).double()
        random_init(default, generator=torch.Generator().manual_seed(5))
        other.pos_proj.weight.copy_(default.pos_proj.weight[:, [2, 1, 0]])
    other.local_init()
    theirs = other.pos_proj.weight.detach()[
        :, [2, 1, 0]
    ]  # to the paper's (‖δ‖², δ_row, δ_col)
    order = [row + k * col for row in range(k) for col in range(k)]  # our head → timm's
    ours = layer.pos_proj.weight.detach()
    assert torch.allclose(ours[: k * k], theirs[order], rtol=0, atol=1e-6)
    assert torch.allclose(ours[k * k :], theirs[k * k :], rtol=0, atol=1e-12)
    assert torch.equal(layer.v.weight, other.v.weight.double())


def test_plain_mhsa_equals_torch_multihead_attention():
    """MultiHeadSelfAttention against nn.MultiheadAttention with the same weights (float64)."""
    torch.manual_seed(0)
    layer = MultiHeadSelfAttention(36, 9, qkv_bias=True).double().eval()
    other = nn.MultiheadAttention(36, 9, batch_first=True).double().eval()
    with torch.no_grad():
        other.in_proj_weight.copy_(torch.cat([layer.qk.weight, layer.v.weight]))
        other.in_proj_bias.copy_(torch.cat([layer.qk.bias, layer.v.bias]))
        other.out_proj.weight.copy_(layer.proj.weight)
        other.out_proj.bias.copy_(layer.proj.bias)
        x = torch.randn(2, 36, 36, dtype=torch.float64)
        want, _ = other(x, x, x, need_weights=False)
        assert torch.allclose(layer(x, GRID), want, rtol=0, atol=1e-12)
        other.out_proj.bias.add_(1e-3)  # the oracle can fail
        assert (
            layer(x, GRID) - other(x, x, x, need_weights=False)[0]
        ).abs().max() > 5e-4
    assert not hasattr(layer, "pos_proj") and not hasattr(layer, "gating_param")


def test_gpsa_and_mhsa_are_siblings_from_one_random_stream():
    """Neither layer is made from the other (timm's GPSA and MHSA); the plain layer holds the
    shared parameters under GPSA's names, drawn from the same random stream, so a ViT and a GPSA
    model of one seed share every weight but the positional ones."""
    assert not issubclass(MultiHeadSelfAttention, GatedPositionalSelfAttention)
    assert not issubclass(GatedPositionalSelfAttention, MultiHeadSelfAttention)
    torch.manual_seed(3)
    gated = GatedPositionalSelfAttention(36, 9)
    after_gated = torch.rand(1)
    torch.manual_seed(3)
    plain = MultiHeadSelfAttention(36, 9)
    assert torch.equal(torch.rand(1), after_gated)
    shared = plain.state_dict()
    assert list(shared) == [
        k for k in gated.state_dict() if not k.startswith(("pos_proj", "gating"))
    ]
    assert all(torch.equal(v, gated.state_dict()[k]) for k, v in shared.items())


def test_quadratic_encoding_is_a_shifted_gaussian():
    """v_pos·r_δ = −α‖δ − Δ‖² + α‖Δ‖² (Lemma 2), and head_centres inverts quadratic_weights."""
    centres = torch.tensor([[1.0, -2.0], [0.5, 0.0]], dtype=torch.float64)
    alpha = torch.tensor([2.0, 0.3], dtype=torch.float64)
    w = quadratic_weights(centres, alpha)
    r = quadratic_features((5, 5), torch.float64)
    delta = r[..., 1:]
    for h in range(2):
        expected = (
            -alpha[h] * ((delta - centres[h]) ** 2).sum(-1)
            + alpha[h] * (centres[h] ** 2).sum()
        )
        assert torch.allclose(r @ w[h], expected, atol=1e-12)
    back, a = head_centres(w)
    assert torch.allclose(back, centres) and torch.allclose(a, alpha)


def _interior(grid, r=1):
    h, w = grid
    return [i * w + j for i in range(r, h - r) for j in range(r, w - r)]


def test_gpsa_tends_to_theorem1_construction():
    """With the gate closed on position, gpsa_from_conv(conv, α) tends to the book's Theorem 1
    layer (conv_to_mhsa with exactly one-hot heads, same rank-D_h slices) as α grows, at every
    query whose 3×3 window lies inside the image (GPSA has no padding keys)."""
    torch.manual_seed(0)
    conv = nn.Conv2d(18, 18, 3, padding=1, bias=True).double()
    x = torch.randn(2, 18, 7, 7, dtype=torch.float64)
    reference = conv_to_mhsa(conv, head_dim=2, hard=True)
    with torch.no_grad():
        want = reference(x).flatten(2).transpose(1, 2)[:, _interior((7, 7))]
        tokens = x.flatten(2).transpose(1, 2)
        errors = []
        for alpha in (0.5, 2.0, 8.0, 32.0, 128.0):
            layer = gpsa_from_conv(conv, alpha)
            got = layer(tokens, (7, 7))[:, _interior((7, 7))]
            errors.append((got - want).abs().max().item())
    assert all(b < a for a, b in zip(errors, errors[1:])), errors
    assert errors[0] > 1e-2 and errors[-1] < 1e-12, errors


def _conv_errors(conv, alphas, grid=(7, 7)):
    """Largest interior error of gpsa_from_conv(conv, α) against ``conv`` itself, per α."""
    x = torch.randn(2, conv.in_channels, *grid, dtype=torch.float64)
    idx = _interior(grid)
    with torch.no_grad():
        want = conv(x).flatten(2).transpose(1, 2)[:, idx]
        tokens = x.flatten(2).transpose(1, 2)
        return [
            (gpsa_from_conv(conv, a)(tokens, grid)[:, idx] - want).abs().max().item()
            for a in alphas
        ]


def test_gpsa_from_conv_equals_a_convolution_of_low_rank_slices_in_the_limit():
    """Every kernel slice of rank ≤ D_h = 2 (18 channels, 9 heads): the layer tends to the
    convolution itself as α grows."""
    torch.manual_seed(1)
    conv = nn.Conv2d(18, 18, 3, padding=1, bias=True).double()
    with torch.no_grad():
        u = torch.randn(3, 3, 18, 2, dtype=torch.float64)
        v = torch.randn(3, 3, 2, 18, dtype=torch.float64)
        conv.weight.copy_((u @ v).permute(2, 3, 0, 1) / 6)
    errors = _conv_errors(conv, (2.0, 8.0, 32.0, 128.0))
    assert all(b < a for a, b in zip(errors, errors[1:])), errors
    assert errors[-1] < 1e-10, errors


def test_gpsa_from_conv_is_not_a_general_convolution_at_any_width():
    """A general 18 → 18 kernel (slices of rank 18 > D_h = 2): the error does not vanish as α
    grows; it settles on the rank-2 truncation's."""
    torch.manual_seed(1)
    conv = nn.Conv2d(18, 18, 3, padding=1, bias=True).double()
    with torch.no_grad():
        conv.weight.normal_(0.0, 0.3)
    errors = _conv_errors(conv, (8.0, 32.0, 128.0))
    assert min(errors) > 0.3, errors
    assert abs(errors[-1] - errors[-2]) < 1e-6 * errors[-1], errors


def test_theorem1_construction_is_the_convolution_at_full_rank():
    """With 9 heads of dimension D/9 = 1 the slices are the best rank-1 factorisation, so
    against the convolution itself a rank-1 kernel (every slice of rank 1) is exact."""
    torch.manual_seed(1)
    conv = nn.Conv2d(9, 9, 3, padding=1, bias=False).double()
    u, v = (
        torch.randn(9, 1, dtype=torch.float64),
        torch.randn(1, 9, dtype=torch.float64),
    )
    with torch.no_grad():
        spatial = torch.randn(3, 3, dtype=torch.float64)
        conv.weight.copy_((u @ v)[:, :, None, None] * spatial)
    layer = gpsa_from_conv(conv, 200.0)
    x = torch.randn(1, 9, 6, 6, dtype=torch.float64)
    with torch.no_grad():
        got = layer(x.flatten(2).transpose(1, 2), (6, 6))
        want = conv(x).flatten(2).transpose(1, 2)
    idx = _interior((6, 6))
    assert torch.allclose(got[:, idx], want[:, idx], atol=1e-10)
    assert kernel_shifts(3).shape == (9, 2)


def test_evaluated_distance_is_recorded_in_eval_mode_only():
    layer = _random_layer(dim=18)
    x = torch.randn(4, 36, 18, dtype=torch.float64)
    layer.train()
    layer(x, GRID)
    assert layer.evaluated_distance() is None
    layer.eval()
    with torch.no_grad():
        layer(x[:2], GRID)
        layer(x[2:], GRID)
        direct = layer.mean_distance(layer.attention(x, GRID), GRID)
    assert torch.allclose(layer.evaluated_distance(), direct.double(), atol=1e-12)
    assert layer.evaluated_distance() is None  # reset after reading
