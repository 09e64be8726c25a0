import math

import pytest
import torch
from torch import nn

from attnconv import (
    AbsoluteEncoding,
    GeneralizedQuadraticEncoding,
    LearnedRelativeEncoding,
    MultiHeadSelfAttention1d,
    MultiHeadSelfAttention2d,
    QuadraticEncoding,
    ScoreTerms,
    softmax_without_denormals,
)


def loop_mhsa(layer, x):
    """Plain-loop eqs. (4) and (8): every score, softmax and sum written out pixel by pixel."""
    b, c, h, w = x.shape
    p = layer.key_padding
    nh, dh = layer.num_heads, layer.head_dim
    xp = torch.nn.functional.pad(x, [p, p, p, p])
    enc, terms = layer.encoding, layer.terms
    xa = enc(x) if isinstance(enc, AbsoluteEncoding) else x
    xap = torch.nn.functional.pad(xa, [p, p, p, p])
    out = torch.zeros(b, layer.out_channels, h, w, dtype=x.dtype)
    probs = torch.zeros(b, nh, h * w, (h + 2 * p) * (w + 2 * p), dtype=x.dtype)
    keys = [(i, j) for i in range(-p, h + p) for j in range(-p, w + p)]

    def lin(m, v):
        return m.weight @ v + (m.bias if m.bias is not None else 0)

    for bi in range(b):
        for qi in range(h):
            for qj in range(w):
                qidx = qi * w + qj
                heads = []
                for hd in range(nh):
                    sl = slice(hd * dh, (hd + 1) * dh)
                    q = (
                        lin(layer.query, xa[bi, :, qi, qj])[sl]
                        if layer.query is not None
                        else None
                    )
                    scores = []
                    for ki, kj in keys:
                        xk = xap[bi, :, ki + p, kj + p]
                        delta = torch.tensor([[ki - qi, kj - qj]])
                        s = 0.0
                        if terms.content_content:
                            s += float(q @ lin(layer.key, xk)[sl])
                        if terms.key_bias:
                            s += float(
                                layer.key_bias_query[hd] @ lin(layer.key, xk)[sl]
                            )
                        if terms.content_position:
                            r = enc.features(delta)[0]
                            s += float(q @ layer.relative_key[hd] @ r)
                        s *= layer.scale
                        if terms.position_only:
                            s += float(enc.position_scores(delta)[hd, 0])
                        scores.append(s)
                    m = max(scores)
                    e = [math.exp(s - m) for s in scores]
                    z = sum(e)
                    acc = torch.zeros(dh, dtype=x.dtype)
                    for ki_, (ki, kj) in enumerate(keys):
                        probs[bi, hd, qidx, ki_] = e[ki_] / z
                        xv = xp[bi, :, ki + p, kj + p]
                        vals = (
                            lin(layer.value, xv)
                            if layer.value is not None
                            else xv.repeat(nh)
                        )
                        acc += (e[ki_] / z) * vals[sl]
                    heads.append(acc)
                out[bi, :, qi, qj] = lin(layer.out, torch.cat(heads))
    return out, probs


@pytest.mark.parametrize(
    "make_encoding,terms,padding,qkv_bias",
    [
        (lambda: None, ScoreTerms.content_only(), 0, True),
        (lambda: AbsoluteEncoding(3, (3, 4)), ScoreTerms.content_only(), 0, False),
        (
            lambda: LearnedRelativeEncoding(2, 4, max_shift=5),
            ScoreTerms.all_terms(),
            0,
            True,
        ),
        (
            lambda: LearnedRelativeEncoding(2, 4, max_shift=5),
            ScoreTerms.all_terms(),
            1,
            False,
        ),
        (lambda: QuadraticEncoding(2, alpha=0.5), ScoreTerms.all_terms(), 1, False),
        (
            lambda: QuadraticEncoding(2, alpha=0.5),
            ScoreTerms.position_only_terms(),
            1,
            False,
        ),
        (
            lambda: QuadraticEncoding(2, alpha=0.5),
            ScoreTerms(True, False, False, True),
            0,
            False,
        ),
    ],
)
def test_layer_equals_plain_loop_of_eq8(make_encoding, terms, padding, qkv_bias):
    torch.manual_seed(0)
    layer = MultiHeadSelfAttention2d(
        3,
        2,
        head_dim=2,
        out_channels=5,
        encoding=make_encoding(),
        terms=terms,
        qkv_bias=qkv_bias,
        key_padding=padding,
    ).double()
    layer.requires_grad_(False)
    x = torch.randn(2, 3, 3, 4, dtype=torch.float64)
    y, probs = layer(x, return_attention=True)
    y_ref, probs_ref = loop_mhsa(layer, x)
    assert y.shape == (2, 5, 3, 4)
    assert torch.allclose(y, y_ref, atol=1e-10)
    assert torch.allclose(probs.expand_as(probs_ref), probs_ref, atol=1e-12)
    if terms == ScoreTerms.position_only_terms():
        assert layer.shares_probabilities and probs.shape[0] == 1


def test_content_only_equals_torch_multihead_attention():
    torch.manual_seed(0)
    e, nh = 12, 3
    mha = nn.MultiheadAttention(e, nh, batch_first=True)
    layer = MultiHeadSelfAttention2d(e, nh, qkv_bias=True)
    with torch.no_grad():
        wq, wk, wv = mha.in_proj_weight.chunk(3)
        bq, bk, bv = mha.in_proj_bias.chunk(3)
        for lin, wt, bs in [
            (layer.query, wq, bq),
            (layer.key, wk, bk),
            (layer.value, wv, bv),
        ]:
            lin.weight.copy_(wt), lin.bias.copy_(bs)
        (
            layer.out.weight.copy_(mha.out_proj.weight),
            layer.out.bias.copy_(mha.out_proj.bias),
        )
    x = torch.randn(2, e, 4, 5)
    tokens = x.flatten(2).transpose(1, 2)
    ref, ref_w = mha(tokens, tokens, tokens, average_attn_weights=False)
    y, probs = layer(x, return_attention=True)
    assert torch.allclose(y.flatten(2).transpose(1, 2), ref, atol=1e-5)
    assert torch.allclose(probs, ref_w, atol=1e-6)


def test_position_only_probabilities_do_not_depend_on_the_image():
    torch.manual_seed(0)
    layer = MultiHeadSelfAttention2d(
        4, 3, 2, encoding=QuadraticEncoding(3), terms=ScoreTerms.position_only_terms()
    )
    _, p1 = layer(torch.randn(1, 4, 5, 5), return_attention=True)
    _, p2 = layer(torch.randn(3, 4, 5, 5), return_attention=True)
    assert p1.shape == (1, 3, 25, 25) and torch.equal(p1, p2)
    # batched application equals one image at a time
    x = torch.randn(3, 4, 5, 5)
    assert torch.allclose(
        layer(x), torch.cat([layer(x[i : i + 1]) for i in range(3)]), atol=1e-6
    )


@pytest.mark.parametrize(
    "terms", [ScoreTerms.position_only_terms(), ScoreTerms(True, False, False, True)]
)
def test_without_value_projection_heads_average_the_raw_input(terms):
    torch.manual_seed(0)
    enc = QuadraticEncoding(3, parametrization="spread")
    layer = MultiHeadSelfAttention2d(
        4, 3, encoding=enc, terms=terms, value_projection=False, key_padding=1
    ).double()
    assert layer.value is None and layer.head_dim == 4 and layer.out.in_features == 12
    ref = MultiHeadSelfAttention2d(
        4, 3, 4, encoding=enc, terms=terms, key_padding=1
    ).double()
    with torch.no_grad():
        ref.value.weight.copy_(torch.eye(4, dtype=torch.float64).repeat(3, 1))
        ref.out.load_state_dict(layer.out.state_dict())
        if layer.query is not None:
            (
                ref.query.load_state_dict(layer.query.state_dict()),
                ref.key.load_state_dict(layer.key.state_dict()),
            )
    x = torch.randn(2, 4, 5, 3, dtype=torch.float64)
    assert torch.allclose(layer(x), ref(x), atol=1e-12)
    with pytest.raises(ValueError, match="D_h"):
        MultiHeadSelfAttention2d(4, 3, head_dim=2, value_projection=False)


def test_spread_parametrization_is_alpha_half_spread_squared():
    enc = QuadraticEncoding(
        2,
        centers=torch.zeros(2, 2),
        alpha=torch.tensor([0.5, 2.0]),
        parametrization="spread",
    )
    assert torch.allclose(enc.spread, torch.tensor([1.0, 2.0])) and not hasattr(
        enc, "alpha"
    )
    d = torch.tensor([[1, 1]])
    assert torch.allclose(enc.position_scores(d)[:, 0], -0.5 * enc.spread**2 * 2)
    with pytest.raises(ValueError):
        QuadraticEncoding(2, parametrization="sigma")


def test_gradients_reach_encoding_parameters():
    enc = QuadraticEncoding(2)
    layer = MultiHeadSelfAttention2d(
        3, 2, 2, encoding=enc, terms=ScoreTerms.position_only_terms()
    )
    layer(torch.randn(2, 3, 4, 4)).square().sum().backward()
    assert enc.centers.grad.abs().sum() > 0 and enc.alpha.grad.abs().sum() > 0


def test_1d_layer_shapes_and_loop():
    torch.manual_seed(0)
    enc = QuadraticEncoding(3, spatial_dims=1, alpha=1.0)
    layer = MultiHeadSelfAttention1d(
        2,
        3,
        2,
        out_channels=4,
        encoding=enc,
        terms=ScoreTerms.position_only_terms(),
        key_padding=1,
    ).double()
    x = torch.randn(2, 2, 6, dtype=torch.float64)
    y = layer(x)
    assert y.shape == (2, 4, 6)
    # the same layer written as a 2D layer over a 1×L image with a height-0 padding is not possible,
    # so check against an explicit softmax-weighted sum
    xp = torch.nn.functional.pad(x, [1, 1])
    v = torch.einsum("oc,bcl->bol", layer.value.weight, xp).view(2, 3, 2, 8)
    want = torch.zeros(2, 3, 2, 6, dtype=torch.float64)
    for h in range(3):
        for q in range(6):
            s = torch.tensor(
                [
                    -enc.alpha[h].item() * (k - 1 - q - enc.centers[h, 0].item()) ** 2
                    for k in range(8)
                ],
                dtype=torch.float64,
            )
            want[:, h, :, q] = (torch.softmax(s, 0)[None, None] * v[:, h]).sum(-1)
    ref = (
        torch.einsum("oi,bil->bol", layer.out.weight, want.reshape(2, 6, 6))
        + layer.out.bias[None, :, None]
    )
    assert torch.allclose(y, ref, atol=1e-10)


def test_forward_tokens_layout_and_errors():
    torch.manual_seed(0)
    layer = MultiHeadSelfAttention2d(
        4,
        3,
        encoding=QuadraticEncoding(3),
        terms=ScoreTerms.position_only_terms(),
        value_projection=False,
        key_padding=2,
    )
    x = torch.randn(2, 4, 5, 6)
    tokens = x.flatten(2).permute(2, 0, 1)  # (T, B, C)
    y = layer.forward_tokens(tokens, (5, 6))
    assert y.shape == (30, 2, 4)
    assert torch.allclose(y.permute(1, 2, 0).reshape(2, 4, 5, 6), layer(x), atol=1e-6)
    with pytest.raises(ValueError, match=r"\(T=36, B, C=4\)"):
        layer.forward_tokens(tokens, (6, 6))
    with pytest.raises(ValueError, match="2-dimensional"):
        layer.forward_tokens(tokens, (30,))


def test_input_shape_errors():
    layer = MultiHeadSelfAttention2d(4, 2)
    with pytest.raises(ValueError, match=r"\(B, C, H, W\)"):
        layer(torch.randn(4, 5, 5))
    with pytest.raises(ValueError, match="input channels"):
        layer(torch.randn(1, 3, 5, 5))
    with pytest.raises(ValueError, match=r"\(B, C, L\)"):
        MultiHeadSelfAttention1d(4, 2)(torch.randn(1, 4, 5, 5))


def test_configuration_errors():
    with pytest.raises(ValueError, match="RelativeEncoding"):
        MultiHeadSelfAttention2d(4, 2, terms=ScoreTerms.position_only_terms())
    with pytest.raises(ValueError, match="heads"):
        MultiHeadSelfAttention2d(
            4, 2, encoding=QuadraticEncoding(3), terms=ScoreTerms.position_only_terms()
        )
    with pytest.raises(ValueError, match="1-d encoding"):
        MultiHeadSelfAttention2d(4, 1, encoding=QuadraticEncoding(1, spatial_dims=1))
    with pytest.raises(ValueError, match="key_padding"):
        MultiHeadSelfAttention2d(
            4, 2, encoding=AbsoluteEncoding(4, (3, 3)), key_padding=1
        )
    with pytest.raises(ValueError, match="at least one term"):
        MultiHeadSelfAttention2d(4, 2, terms=ScoreTerms(False, False, False, False))
    with pytest.raises(TypeError):
        MultiHeadSelfAttention2d(4, 2, encoding=nn.Linear(2, 2))
    with pytest.raises(ValueError, match="head_dim"):
        MultiHeadSelfAttention2d(4, 8)


def test_softmax_without_denormals_has_no_denormals_and_matches_softmax():
    s = -torch.arange(0, 400, dtype=torch.float32).view(1, -1) * 0.5  # down to e^-200
    ref = torch.softmax(s, -1)
    assert (
        (ref > 0) & (ref < torch.finfo(torch.float32).tiny)
    ).any()  # plain softmax makes denormals
    p = softmax_without_denormals(s)
    info = torch.finfo(torch.float32)
    assert not ((p > 0) & (p < info.tiny / info.eps)).any()
    assert (p - ref).abs().max() < info.tiny / info.eps
    assert torch.equal(p[ref >= info.tiny / info.eps], ref[ref >= info.tiny / info.eps])
    assert torch.isclose(p.sum(), torch.tensor(1.0))


def test_layer_output_has_no_denormal_probabilities():
    layer = MultiHeadSelfAttention2d(
        2,
        1,
        2,
        encoding=QuadraticEncoding(1, centers=[[0.0, 0.0]], alpha=5.0),
        terms=ScoreTerms.position_only_terms(),
    )
    _, p = layer(torch.randn(1, 2, 8, 8), return_attention=True)
    assert not ((p > 0) & (p < torch.finfo(torch.float32).tiny)).any()


@pytest.mark.parametrize("implementation", ["naive", "dense", "local"])
@pytest.mark.parametrize("value_projection", [False, True])
@pytest.mark.parametrize(
    "make_encoding",
    [
        lambda: QuadraticEncoding(
            4, alpha=torch.rand(4, dtype=torch.float64) + 0.3, parametrization="spread"
        ),
        lambda: GeneralizedQuadraticEncoding(
            4, inv_sqrt_sigma=torch.eye(2) + 0.3 * torch.randn(4, 2, 2)
        ),
    ],
)
def test_implementations_are_interchangeable(
    implementation, value_projection, make_encoding
):
    """naive, dense and local give the same layer: local within its bound 2ε·max|value| (attnconv.core.local)."""
    torch.manual_seed(3)
    enc = make_encoding()
    layer = MultiHeadSelfAttention2d(
        3,
        4,
        head_dim=None if not value_projection else 2,
        encoding=enc,
        terms=ScoreTerms.position_only_terms(),
        value_projection=value_projection,
        key_padding=1,
        local_tolerance=1e-8,
    ).double()
    x = torch.randn(1, 3, 5, 6, dtype=torch.float64)
    with torch.no_grad():
        ref, p_ref = loop_mhsa(layer, x)
    layer.implementation = implementation
    y, p = layer(x, return_attention=True)
    tol = 1e-10 if implementation != "local" else 2 * 1e-8 * 50
    assert torch.allclose(y, ref, atol=tol) and torch.allclose(
        p[0], p_ref[0], atol=max(tol, 1e-12)
    )
    y.square().sum().backward()  # gradients reach the encoding
    assert enc.centers.grad.abs().sum() > 0


def test_local_is_within_its_bound_and_rejects_unsupported_layers():
    torch.manual_seed(0)
    enc = QuadraticEncoding(
        3,
        centers=[[0.2, 0.4], [6.0, -7.0], [-1.6, 2.5]],
        alpha=torch.tensor([0.3, 1.0, 2.0]),
    )
    layer = MultiHeadSelfAttention2d(
        2,
        3,
        encoding=enc,
        terms=ScoreTerms.position_only_terms(),
        value_projection=False,
        local_tolerance=1e-4,
    ).double()
    x = torch.randn(1, 2, 12, 12, dtype=torch.float64)
    _, dense = layer(x, return_attention=True)
    layer.implementation = "local"
    _, local = layer(x, return_attention=True)
    left_out = (dense * (local == 0)).sum(-1)  # mass of the keys that local dropped
    assert left_out.max() <= 1e-4 and left_out.max() > 0  # the window really drops keys
    with pytest.raises(ValueError, match="position-only"):
        MultiHeadSelfAttention2d(
            4, 2, encoding=QuadraticEncoding(2), implementation="local"
        )
    with pytest.raises(ValueError, match="Gaussian"):
        MultiHeadSelfAttention2d(
            4,
            2,
            encoding=LearnedRelativeEncoding(2, 4, 8),
            terms=ScoreTerms.position_only_terms(),
            implementation="local",
        )
    with pytest.raises(ValueError, match="implementation"):
        MultiHeadSelfAttention2d(4, 2, implementation="fast")


def test_merge_heads_matches_a_concatenation_and_its_gradients():
    """The merge against concat(heads) @ W_outᵀ + b, values and gradients."""
    from attnconv.core.attention import merge_heads

    torch.manual_seed(0)
    heads = torch.randn(3, 5, 2, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(4, dtype=torch.float64, requires_grad=True)
    oracle = torch.cat(heads.unbind(0), dim=1) @ weight.t() + bias
    assert torch.allclose(merge_heads(heads, weight, bias), oracle)
    assert torch.autograd.gradcheck(merge_heads, (heads, weight, bias))
    assert torch.autograd.gradcheck(merge_heads, (heads, weight, None))


def test_merge_heads_equals_the_per_head_sum_it_replaced():
    """fp32, paper-like shapes (9 heads of 44, D_out 400): the one-GEMM merge equals the old
    per-head sum Σ_h heads_h W_out^hᵀ + b (addmm per head, the benchmark's "before") within
    fp32 rounding, values and gradients."""
    from attnconv.core.attention import merge_heads
    from attnconv.experiments.bench import per_head_merge

    g = torch.Generator().manual_seed(0)
    heads = torch.randn(9, 300, 44, generator=g)
    weight = torch.randn(400, 9 * 44, generator=g) / 20
    bias = torch.randn(400, generator=g)
    grad = torch.randn(300, 400, generator=g)
    results = []
    for merge in (merge_heads, per_head_merge):
        leaves = [t.clone().requires_grad_() for t in (heads, weight, bias)]
        y = merge(*leaves)
        y.backward(grad)
        results.append([y.detach()] + [t.grad for t in leaves])
    for new, old in zip(*results):
        torch.testing.assert_close(new, old, rtol=1e-5, atol=1e-4)


def test_separable_heads_match_the_dense_kronecker_product_and_its_gradients():
    """separable_heads against its definition: the (R_h ⊗ C_h) attention matrices built densely,
    applied to the values, heads concatenated and W_out applied; then gradcheck."""
    from attnconv.core.local import separable_heads

    torch.manual_seed(0)
    h_k, w_k, b, c, nh, h_q, w_q, d = 5, 6, 3, 4, 3, 4, 5, 2
    values = torch.randn(h_k, w_k, b, c, dtype=torch.float64, requires_grad=True)
    rows = torch.rand(nh, h_q, h_k, dtype=torch.float64, requires_grad=True)
    cols = torch.rand(nh, w_q, w_k, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(d, nh * c, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(d, dtype=torch.float64, requires_grad=True)
    probs = torch.einsum("hik,hjl->hijkl", rows, cols).reshape(nh, h_q * w_q, h_k * w_k)
    heads = torch.stack(
        [probs[h] @ values.reshape(h_k * w_k, b * c) for h in range(nh)]
    )  # (N_h, T_q, B·C)
    concat = heads.view(nh, h_q * w_q, b, c).permute(1, 2, 0, 3).reshape(-1, nh * c)
    oracle = concat @ weight.t() + bias
    assert torch.allclose(
        separable_heads(values, rows, cols, weight, bias), oracle, rtol=0, atol=1e-12
    )
    assert torch.autograd.gradcheck(separable_heads, (values, rows, cols, weight, bias))
    assert torch.autograd.gradcheck(separable_heads, (values, rows, cols, weight, None))


def test_local_layer_uses_the_merged_separable_path_with_the_same_result():
    """A position-only quadratic layer without value projection, local: the merged path (used when
    no attention maps are asked for) equals the unmerged one (used when they are)."""
    torch.manual_seed(1)
    layer = MultiHeadSelfAttention2d(
        6,
        4,
        encoding=QuadraticEncoding(4, alpha=0.7),
        terms=ScoreTerms.position_only_terms(),
        value_projection=False,
        implementation="local",
    ).double()
    x = torch.randn(2, 6, 7, 5, dtype=torch.float64)
    merged = layer(x)
    unmerged, _ = layer(x, return_attention=True)
    assert torch.allclose(merged, unmerged, rtol=0, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_denormal_flush_keeps_exactly_the_probabilities_from_tiny_over_eps(dtype):
    """The flush in one pass (threshold) against its definition p < tiny/eps → 0, at the boundary."""
    info = torch.finfo(dtype)
    edge = torch.tensor(info.tiny / info.eps, dtype=dtype)
    below = torch.nextafter(edge, torch.zeros((), dtype=dtype))
    # scores whose softmax puts probabilities on both sides of the edge
    scores = torch.log(
        torch.stack([edge, below, edge * 3, torch.tensor(0.5, dtype=dtype)])
    )
    p = torch.softmax(scores, -1)
    assert torch.equal(softmax_without_denormals(scores), p.masked_fill(p < edge, 0.0))
    big = torch.randn(9, 64, 64, dtype=dtype) * 40
    plain = torch.softmax(big, -1)
    assert torch.equal(
        softmax_without_denormals(big), plain.masked_fill(plain < edge, 0.0)
    )
