import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from attnconv import (  # noqa: E402
    AbsoluteEncoding,
    GeneralizedQuadraticEncoding,
    HardShiftEncoding,
    LearnedRelativeEncoding,
    MultiHeadSelfAttention1d,
    MultiHeadSelfAttention2d,
    QuadraticEncoding,
    ScoreTerms,
    conv_to_mhsa,
    kernel_shifts,
)
from attnconv.chapters.equivariance import (  # noqa: E402
    apply_torch_mha,
    border_distance,
    copy_weights_from_torch_mha,
    error_map_norm,
    local_learned_encoding,
    permutation_equivariance_error,
    permutation_invariance_error,
    plot_score_terms,
    plot_translation_errors,
    region_error_stats,
    score_terms,
    shift_image,
    translation_error_map,
)
from attnconv.chapters.shared.plotting import BOOK_STYLE, COLUMN_INCHES  # noqa: E402

F64 = torch.float64


# ----------------------------------------------------------------------------- nn.MultiheadAttention
def plain_mha(mha, tokens):
    """softmax(Q Kᵀ/√d) V per head, then out_proj: eq. (4) with nn.MultiheadAttention's weights."""
    e, nh = mha.embed_dim, mha.num_heads
    dh = e // nh
    wq, wk, wv = mha.in_proj_weight.chunk(3)
    bq, bk, bv = (
        mha.in_proj_bias.chunk(3) if mha.in_proj_bias is not None else (0, 0, 0)
    )
    q, k, v = tokens @ wq.T + bq, tokens @ wk.T + bk, tokens @ wv.T + bv
    heads = []
    for h in range(nh):
        sl = slice(h * dh, (h + 1) * dh)
        a = torch.softmax(q[..., sl] @ k[..., sl].transpose(-1, -2) / math.sqrt(dh), -1)
        heads.append(a @ v[..., sl])
    out = torch.cat(heads, -1) @ mha.out_proj.weight.T
    return out + (mha.out_proj.bias if mha.out_proj.bias is not None else 0)


@pytest.mark.parametrize("bias", [True, False])
def test_copied_layer_equals_torch_mha(bias):
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(12, 3, bias=bias, batch_first=True).double()
    if bias:
        nn.init.normal_(mha.in_proj_bias), nn.init.normal_(mha.out_proj.bias)
    layer = MultiHeadSelfAttention2d(
        12, 3, terms=ScoreTerms.content_only(), qkv_bias=bias, out_bias=bias
    ).double()
    assert copy_weights_from_torch_mha(layer, mha) is layer
    x = torch.randn(2, 12, 3, 5, dtype=F64)
    with torch.no_grad():
        ours, theirs = layer(x), apply_torch_mha(mha, x)
        tokens = x.flatten(2).transpose(1, 2)
        oracle = plain_mha(mha, tokens).transpose(1, 2).reshape(2, 12, 3, 5)
    assert (ours - theirs).abs().max() < 1e-12
    assert (theirs - oracle).abs().max() < 1e-12


def test_apply_torch_mha_sequence_first_and_errors():
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2, batch_first=False).double().eval()
    x = torch.randn(3, 4, 2, 3, dtype=F64)
    with torch.no_grad():
        y = apply_torch_mha(mha, x)
        want = (
            plain_mha(mha, x.flatten(2).transpose(1, 2))
            .transpose(1, 2)
            .reshape(3, 4, 2, 3)
        )
    assert torch.allclose(y, want, atol=1e-12)
    with pytest.raises(ValueError, match="B, C, H, W"):
        apply_torch_mha(mha, torch.randn(3, 4, 6))


def test_copy_weights_errors():
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    ok = dict(terms=ScoreTerms.content_only(), qkv_bias=True)
    with pytest.raises(ValueError, match="heads"):
        copy_weights_from_torch_mha(MultiHeadSelfAttention2d(8, 4, **ok), mha)
    with pytest.raises(ValueError, match="bias"):
        copy_weights_from_torch_mha(
            MultiHeadSelfAttention2d(8, 2, terms=ScoreTerms.content_only()), mha
        )
    with pytest.raises(ValueError, match="positional encoding"):
        copy_weights_from_torch_mha(
            MultiHeadSelfAttention2d(8, 2, encoding=AbsoluteEncoding(8, (2, 2)), **ok),
            mha,
        )
    with pytest.raises(ValueError, match="content-content"):
        copy_weights_from_torch_mha(
            MultiHeadSelfAttention2d(
                8, 2, encoding=QuadraticEncoding(2), qkv_bias=True
            ),
            mha,
        )
    with pytest.raises(ValueError, match="channels"):
        copy_weights_from_torch_mha(
            MultiHeadSelfAttention2d(8, 2, out_channels=4, **ok), mha
        )
    with pytest.raises(ValueError, match="scale"):
        copy_weights_from_torch_mha(
            MultiHeadSelfAttention2d(8, 2, scale=1.0, **ok), mha
        )
    with pytest.raises(ValueError, match="add_bias_kv"):
        copy_weights_from_torch_mha(
            MultiHeadSelfAttention2d(8, 2, **ok),
            nn.MultiheadAttention(8, 2, add_bias_kv=True, batch_first=True),
        )
    with pytest.raises(ValueError, match="kdim"):
        copy_weights_from_torch_mha(
            MultiHeadSelfAttention2d(8, 2, **ok),
            nn.MultiheadAttention(8, 2, kdim=4, vdim=4, batch_first=True),
        )
    with pytest.raises(ValueError, match="value"):
        copy_weights_from_torch_mha(
            MultiHeadSelfAttention2d(8, 1, value_projection=False, **ok),
            nn.MultiheadAttention(8, 1, batch_first=True),
        )
    with pytest.raises(ValueError, match="nn.MultiheadAttention"):
        copy_weights_from_torch_mha(
            MultiHeadSelfAttention2d(8, 2, **ok), nn.Linear(8, 8)
        )


# ----------------------------------------------------------------------------- permutations
def test_permutation_error_zero_without_positions_large_with():
    torch.manual_seed(0)
    x = torch.randn(2, 4, 5, 5, dtype=F64)
    g = torch.Generator().manual_seed(0)
    plain = MultiHeadSelfAttention2d(4, 2, qkv_bias=True).double()
    assert permutation_equivariance_error(plain, x, g) < 1e-12
    padded = MultiHeadSelfAttention2d(
        4, 2, key_padding=2
    ).double()  # padded zero keys form the same set
    assert permutation_equivariance_error(padded, x, g) < 1e-12
    pixelwise = nn.Conv2d(4, 3, 1).double()
    assert permutation_equivariance_error(pixelwise, x, g) < 1e-12
    conv = nn.Conv2d(4, 3, 3, padding=1).double()
    assert permutation_equivariance_error(conv, x, g) > 0.1
    rel = MultiHeadSelfAttention2d(
        4,
        2,
        encoding=QuadraticEncoding(2, alpha=1.0),
        terms=ScoreTerms.position_only_terms(),
    ).double()
    assert permutation_equivariance_error(rel, x, g) > 0.1


def test_permutation_error_uses_the_generator_and_equals_oracle():
    x = torch.arange(2 * 1 * 2 * 3, dtype=F64).reshape(2, 1, 2, 3)
    layer = nn.Conv2d(
        1, 1, 3, padding=1
    ).double()  # not permutation equivariant, keeps H × W
    err = permutation_equivariance_error(layer, x, torch.Generator().manual_seed(7))
    perm = torch.randperm(6, generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        y, yp = layer(x), layer(x.reshape(2, 1, 6)[:, :, perm].reshape(2, 1, 2, 3))
    want = float(
        (yp - y.reshape(2, 1, 6)[:, :, perm].reshape(y.shape)).abs().max()
        / y.abs().max()
    )
    assert err == want


def test_permutation_error_errors():
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="B, C, H, W"):
        permutation_equivariance_error(nn.Identity(), torch.randn(2, 3, 4), g)
    with pytest.raises(ValueError, match="spatial size"):
        permutation_equivariance_error(nn.MaxPool2d(2), torch.randn(1, 1, 4, 4), g)
    with pytest.raises(ValueError, match="all zeros"):
        permutation_equivariance_error(nn.Identity(), torch.zeros(1, 1, 3, 3), g)


# ----------------------------------------------------------------------------- eq. (8) term by term
def loop_terms(layer, x, b, h, q, k):
    """The four terms of eq. (8) for one image b, head h, query pixel q and key pixel k (both as
    (row, col), k on the padded grid with its unpadded coordinate), from the paper's formulas."""
    enc, p, dh, s = layer.encoding, layer.key_padding, layer.head_dim, layer.scale
    xa = x + enc.embedding if isinstance(enc, AbsoluteEncoding) else x
    xp = F.pad(xa, [p, p, p, p])
    xq, xk = xa[b, :, q[0], q[1]], xp[b, :, k[0] + p, k[1] + p]
    sl = slice(h * dh, (h + 1) * dh)

    def lin(m, v):
        return (m.weight @ v + (m.bias if m.bias is not None else 0))[sl]

    d1, d2 = k[0] - q[0], k[1] - q[1]
    if isinstance(enc, QuadraticEncoding):
        r = torch.tensor([d1 * d1 + d2 * d2, d1, d2], dtype=F64)
        a, c = float(enc.width()[h]), enc.centers[h].tolist()
        pos = -a * ((d1 - c[0]) ** 2 + (d2 - c[1]) ** 2)  # eq. (9), centred
    elif isinstance(enc, GeneralizedQuadraticEncoding):
        r = torch.tensor([d1, d2, d1 * d1, d2 * d2, d1 * d2], dtype=F64)
        diff = torch.tensor([d1, d2], dtype=F64) - enc.centers[h]
        pos = float(-0.5 * diff @ enc.inverse_covariance()[h] @ diff)
    elif isinstance(enc, LearnedRelativeEncoding):
        m = enc.max_shift
        r = torch.cat(
            [
                enc.axis_embeddings[0].weight[d1 + m],
                enc.axis_embeddings[1].weight[d2 + m],
            ]
        )
        pos = float(r @ enc.head_keys[h])
    out = {
        "content_content": 0.0,
        "content_position": 0.0,
        "key_bias": 0.0,
        "position_only": 0.0,
    }
    t = layer.terms
    if t.content_content:
        out["content_content"] = s * float(lin(layer.query, xq) @ lin(layer.key, xk))
    if t.content_position:
        out["content_position"] = s * float(
            lin(layer.query, xq) @ layer.relative_key[h] @ r
        )
    if t.key_bias:
        out["key_bias"] = s * float(layer.key_bias_query[h] @ lin(layer.key, xk))
    if t.position_only:
        out["position_only"] = pos
    return out


LAYERS = [
    lambda: MultiHeadSelfAttention2d(
        3, 2, 3, encoding=LearnedRelativeEncoding(2, 4, 6), qkv_bias=True
    ),
    lambda: MultiHeadSelfAttention2d(
        3, 2, 2, encoding=LearnedRelativeEncoding(2, 4, 6), key_padding=1
    ),
    lambda: MultiHeadSelfAttention2d(
        3, 2, 3, encoding=QuadraticEncoding(2, alpha=0.7), key_padding=1
    ),
    lambda: MultiHeadSelfAttention2d(
        3, 2, 2, encoding=QuadraticEncoding(2, alpha=0.7, parametrization="spread")
    ),
    lambda: MultiHeadSelfAttention2d(
        3,
        2,
        3,
        encoding=GeneralizedQuadraticEncoding(
            2, inv_sqrt_sigma=torch.tensor([[1.0, 0.3], [-0.2, 0.8]])
        ),
    ),
    lambda: MultiHeadSelfAttention2d(
        3,
        2,
        2,
        encoding=QuadraticEncoding(2),
        terms=ScoreTerms.position_only_terms(),
        key_padding=1,
    ),
    lambda: MultiHeadSelfAttention2d(
        3,
        2,
        2,
        encoding=QuadraticEncoding(2),
        terms=ScoreTerms(True, False, True, False),
    ),
    lambda: MultiHeadSelfAttention2d(
        3, 3, 2, encoding=AbsoluteEncoding(3, (3, 4), init_std=1.0), qkv_bias=True
    ),
    lambda: MultiHeadSelfAttention2d(3, 3, 2),
]


@pytest.mark.parametrize("make", LAYERS)
def test_score_terms_sum_to_layer_scores_and_match_loop(make):
    torch.manual_seed(0)
    layer = make().double()
    with torch.no_grad():
        for prm in layer.parameters():
            if prm.ndim and prm is not getattr(layer.encoding, "inv_sqrt_sigma", None):
                prm.add_(0.5 * torch.randn_like(prm))  # make every term sizeable
    x = torch.randn(2, 3, 3, 4, dtype=F64)
    terms = score_terms(layer, x)
    p = layer.key_padding
    t_k = (3 + 2 * p) * (4 + 2 * p)
    assert list(terms) == [
        "content_content",
        "content_position",
        "key_bias",
        "position_only",
    ]
    for name, t in terms.items():
        assert t.shape == (2, layer.num_heads, 12, t_k) and not t.requires_grad
        if not getattr(layer.terms, name):
            assert not t.any()
    total = sum(terms.values())
    with torch.no_grad():
        ref = layer.attention_scores(x)
    assert (total - ref.expand_as(total)).abs().max() < 1e-12
    keys = [(i, j) for i in range(-p, 3 + p) for j in range(-p, 4 + p)]
    for b, h, q, ki in [
        (0, 0, (0, 0), 0),
        (1, layer.num_heads - 1, (2, 1), t_k - 1),
        (1, 0, (1, 3), 5),
    ]:
        with torch.no_grad():
            want = loop_terms(layer, x, b, h, q, keys[ki])
        for name, v in want.items():
            assert math.isclose(
                float(terms[name][b, h, q[0] * 4 + q[1], ki]),
                v,
                rel_tol=1e-10,
                abs_tol=1e-12,
            )


def test_score_terms_errors():
    x = torch.randn(1, 3, 3, 3)
    hard = MultiHeadSelfAttention2d(
        3,
        1,
        encoding=HardShiftEncoding(torch.zeros(1, 2)),
        terms=ScoreTerms.position_only_terms(),
    )
    with pytest.raises(ValueError, match="HardShiftEncoding"):
        score_terms(hard, x)
    with pytest.raises(ValueError, match="2-D"):
        score_terms(MultiHeadSelfAttention1d(3, 1), torch.randn(1, 3, 5))
    with pytest.raises(ValueError, match="expected"):
        score_terms(MultiHeadSelfAttention2d(3, 1), torch.randn(1, 2, 3, 3))
    small = MultiHeadSelfAttention2d(3, 1, encoding=LearnedRelativeEncoding(1, 2, 1))
    with pytest.raises(ValueError, match="max_shift"):
        score_terms(small, x)


def test_plot_score_terms():
    torch.manual_seed(0)
    layer = MultiHeadSelfAttention2d(
        3, 2, encoding=QuadraticEncoding(2), key_padding=1
    ).double()
    x = torch.randn(1, 3, 4, 5, dtype=F64)
    terms = score_terms(layer, x)
    fig = plot_score_terms(terms, (4, 5), (1, 2), head=1, key_padding=1)
    images = [ax.images[0].get_array() for ax in fig.axes if ax.images]
    assert len(images) == 5 and images[0].shape == (6, 7)
    want = sum(terms.values())[0, 1, 7].reshape(6, 7).numpy()
    assert abs(images[4] - want).max() < 1e-12
    plt.close(fig)
    with pytest.raises(ValueError, match="outside"):
        plot_score_terms(terms, (4, 5), (4, 0))


def test_plot_score_terms_rows():
    """Three panels on the first row, the last two centred below, all in the book's column."""
    torch.manual_seed(0)
    layer = MultiHeadSelfAttention2d(3, 2, encoding=QuadraticEncoding(2)).double()
    terms = score_terms(layer, torch.randn(1, 3, 4, 4, dtype=F64))
    fig = plot_score_terms(terms, (4, 4), (1, 1))
    boxes = [ax.get_position() for ax in fig.axes if ax.images]
    assert len(boxes) == 5 and fig.get_figwidth() <= COLUMN_INCHES
    tops = [round(b.y1, 6) for b in boxes]
    assert tops[0] == tops[1] == tops[2] > tops[3] == tops[4]
    first_row = (boxes[0].x0 + boxes[2].x1) / 2
    second_row = (boxes[3].x0 + boxes[4].x1) / 2
    assert abs(first_row - second_row) < 0.03
    panel_inches = boxes[0].width * fig.get_figwidth()
    # each heat map (without its colour bar) at least a fifth of the column wide
    assert panel_inches > COLUMN_INCHES / 5
    plt.close(fig)
    with matplotlib.rc_context(BOOK_STYLE):  # the book's fonts leave room for 5 bars
        one_row = plot_score_terms(terms, (4, 4), (1, 1), per_row=5)
    assert (
        len({round(ax.get_position().y1, 6) for ax in one_row.axes if ax.images}) == 1
    )
    plt.close(one_row)
    with pytest.raises(ValueError, match="per_row"):
        plot_score_terms(terms, (4, 4), (1, 1), per_row=0)


# ----------------------------------------------------------------------------- translations
def test_shift_image_equals_loop():
    x = torch.randn(2, 3, 5, 6)
    for shift in [(0, 0), (2, 1), (-1, 3), (4, -5), (-4, 0)]:
        y = shift_image(x, shift)
        want = torch.zeros_like(x)
        for i in range(5):
            for j in range(6):
                si, sj = i - shift[0], j - shift[1]
                if 0 <= si < 5 and 0 <= sj < 6:
                    want[..., i, j] = x[..., si, sj]
        assert torch.equal(y, want)
    assert torch.equal(
        shift_image(x[0, 0], (1, 1))[1:, 1:], x[0, 0, :-1, :-1]
    )  # plain (H, W) works too


def test_shift_image_errors():
    x = torch.randn(1, 1, 4, 5)
    with pytest.raises(ValueError, match="whole"):
        shift_image(x, (4, 0))
    with pytest.raises(ValueError, match="whole"):
        shift_image(x, (0, -5))
    with pytest.raises(ValueError, match="two integers"):
        shift_image(x, (1,))
    with pytest.raises(ValueError, match="two integers"):
        shift_image(x, (0.5, 1))
    with pytest.raises(ValueError, match="H, W"):
        shift_image(torch.randn(4), (1, 1))


def test_translation_error_map_closed_forms():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 7, 8, dtype=F64)
    shift = (2, -1)
    valid = torch.zeros(7, 8, dtype=torch.bool)
    valid[2:, :7] = True
    # a pixel-wise map commutes with every translation: zero wherever defined, NaN elsewhere
    err = translation_error_map(nn.Conv2d(3, 4, 1).double(), x, shift)
    assert (
        err.shape == (7, 8)
        and torch.equal(err.isnan(), ~valid)
        and err[valid].max() < 1e-12
    )
    # a 3×3 'same' convolution: exact except on the outer ring on the side the content leaves
    conv = nn.Conv2d(3, 4, 3, padding=1).double()
    err = translation_error_map(conv, x, shift)
    with torch.no_grad():
        want = (
            (conv(shift_image(x, shift)) - shift_image(conv(x), shift))
            .abs()
            .amax(dim=(0, 1))
        )
    assert torch.equal(err[valid], want[valid])
    nonzero = (err > 1e-12) & valid
    rows, cols = nonzero.nonzero().T
    assert len(rows) > 0 and bool(((rows == 6) | (cols == 0)).all())
    # the attention version of that convolution (Theorem 1) behaves the same way
    att = translation_error_map(conv_to_mhsa(conv), x, shift)
    assert (att[valid] - err[valid]).abs().max() < 1e-12


def test_translation_error_map_errors():
    with pytest.raises(ValueError, match="B, C, H, W"):
        translation_error_map(nn.Identity(), torch.randn(3, 4, 4), (1, 1))
    with pytest.raises(ValueError, match="whole"):
        translation_error_map(nn.Identity(), torch.randn(1, 1, 4, 4), (5, 1))
    with pytest.raises(ValueError, match="spatial size"):
        translation_error_map(nn.MaxPool2d(2), torch.randn(1, 1, 4, 4), (1, 1))


def test_border_distance_equals_loop():
    for h, w in [(1, 1), (4, 7), (6, 6)]:
        d = border_distance((h, w))
        want = [[min(i, h - 1 - i, j, w - 1 - j) for j in range(w)] for i in range(h)]
        assert d.tolist() == want
    with pytest.raises(ValueError):
        border_distance((0, 3))
    with pytest.raises(ValueError):
        border_distance((3,))


def test_region_error_stats():
    e = torch.zeros(5, 5, dtype=F64)
    e[0, :] = torch.tensor([1.0, 2.0, 3.0, 4.0, float("nan")])
    e[2, 2] = 0.5
    s = region_error_stats(e, 1)
    assert s == {
        "interior_max": 0.5,
        "interior_mean": 0.5 / 9,
        "border_max": 4.0,
        "border_mean": 10.0 / 15,
    }
    with pytest.raises(ValueError, match="border"):
        region_error_stats(e, 0)
    with pytest.raises(ValueError, match="interior"):
        region_error_stats(e, 3)
    with pytest.raises(ValueError, match="width"):
        region_error_stats(e, -1)
    with pytest.raises(ValueError, match="H, W"):
        region_error_stats(e[None], 1)


def test_error_map_norm_fits_each_map():
    """Round-off counts as 0; a map spanning over two decades gets a log scale from its 2nd
    percentile to its largest error, any other a linear one from 0 to its largest error."""
    from matplotlib.colors import LogNorm

    ring = torch.zeros(6, 6, dtype=F64)
    ring[-1, :], ring[2, 2], ring[0, 0] = 0.5, 1e-15, float("nan")
    ring[1, 1] = 1.0
    norm = error_map_norm(ring)
    assert not isinstance(norm, LogNorm) and (norm.vmin, norm.vmax) == (0.0, 1.0)
    wide = torch.logspace(-5, 0, 100, dtype=F64).view(10, 10)
    norm = error_map_norm(wide)
    assert isinstance(norm, LogNorm) and norm.vmax == 1.0
    assert norm.vmin == pytest.approx(float(wide.flatten().quantile(0.02)))
    narrow = torch.linspace(0.01, 0.5, 100, dtype=F64).view(10, 10)  # under two decades
    norm = error_map_norm(narrow)
    assert not isinstance(norm, LogNorm) and (norm.vmin, norm.vmax) == (0.0, 0.5)
    assert error_map_norm(torch.zeros(3, 3)).vmax == 1e-11  # exact everywhere
    with pytest.raises(ValueError, match="finite"):
        error_map_norm(torch.full((2, 2), float("nan")))
    with pytest.raises(ValueError, match="non-negative"):
        error_map_norm(-torch.ones(2, 2))


def test_plot_translation_errors_one_scale_per_panel():
    from matplotlib.colors import LogNorm

    maps = [torch.linspace(0, 1, 16).view(4, 4), torch.logspace(-6, 0, 16).view(4, 4)]
    maps[0][0, 0] = float("nan")
    fig = plot_translation_errors(maps, ["a", "b"])
    images = [ax.images[0] for ax in fig.axes if ax.images]
    assert [type(im.norm) is LogNorm for im in images] == [False, True]
    assert [ax.get_title() for ax in fig.axes if ax.images] == ["a", "b"]
    assert len(fig.axes) == 4  # two maps and their two colour bars
    plt.close(fig)
    with pytest.raises(ValueError, match="titles"):
        plot_translation_errors(maps, ["a"])


def test_local_learned_encoding_closed_form():
    g = torch.Generator().manual_seed(0)
    enc = local_learned_encoding(3, 6, 4, width=1.5, noise_std=0.0, generator=g)
    assert isinstance(enc, LearnedRelativeEncoding) and enc.max_shift == 4
    d = torch.stack(
        torch.meshgrid(torch.arange(-4, 5), torch.arange(-4, 5), indexing="ij"), -1
    )
    want = -(d**2).sum(-1).double() / (2 * 1.5**2)
    assert torch.allclose(
        enc.position_scores(d).double(), want.expand(3, 9, 9), atol=1e-6
    )
    flat = local_learned_encoding(2, 4, 3, width=None, noise_std=0.0, generator=g)
    assert flat.position_scores(d[1:-1, 1:-1]).abs().max() == 0
    a = local_learned_encoding(2, 4, 3, 2.0, 0.3, torch.Generator().manual_seed(1))
    b = local_learned_encoding(2, 4, 3, 2.0, 0.3, torch.Generator().manual_seed(1))
    c = local_learned_encoding(2, 4, 3, 2.0, 0.3, torch.Generator().manual_seed(2))
    pa, pb, pc = (e.position_scores(d[1:-1, 1:-1]) for e in (a, b, c))
    assert torch.equal(pa, pb) and not torch.equal(pa, pc)


def test_local_learned_encoding_errors():
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="dim"):
        local_learned_encoding(2, 5, 3, 1.0, 0.1, g)
    with pytest.raises(ValueError, match="dim"):
        local_learned_encoding(2, 2, 3, 1.0, 0.1, g)
    with pytest.raises(ValueError, match="width"):
        local_learned_encoding(2, 4, 3, 0.0, 0.1, g)
    with pytest.raises(ValueError, match="noise_std"):
        local_learned_encoding(2, 4, 3, 1.0, -0.1, g)


def test_relative_layer_far_from_the_border_is_translation_equivariant():
    """Theorem-1 layer (α at float64's one-hot value): exact away from the border, broken on it."""
    torch.manual_seed(0)
    conv = nn.Conv2d(2, 2, 3, padding=1).double()
    layer = conv_to_mhsa(conv)
    x = torch.randn(1, 2, 9, 9, dtype=F64)
    s = region_error_stats(translation_error_map(layer, x, (1, 2)), 1)
    assert s["interior_max"] < 1e-12 and s["border_max"] > 1e-3
    assert kernel_shifts(3).shape[0] == layer.num_heads


def test_self_attention_is_equivariant_not_invariant():
    """Oracle: a plain loop that permutes the pixels by hand and compares outputs pixel by pixel."""
    torch.manual_seed(1)
    x = torch.randn(1, 4, 3, 3, dtype=F64)
    plain = MultiHeadSelfAttention2d(4, 2, qkv_bias=True).double()
    assert (
        permutation_invariance_error(plain, x, torch.Generator().manual_seed(0)) > 0.1
    )
    perm = torch.randperm(9, generator=torch.Generator().manual_seed(0))
    xp = torch.empty_like(x)
    for i in range(9):
        xp[0, :, i // 3, i % 3] = x[0, :, perm[i] // 3, perm[i] % 3]
    with torch.no_grad():
        y, yp = plain(x), plain(xp)
    diff = max(
        float((yp[0, :, i // 3, i % 3] - y[0, :, i // 3, i % 3]).abs().max())
        for i in range(9)
    )
    assert permutation_invariance_error(
        plain, x, torch.Generator().manual_seed(0)
    ) == pytest.approx(diff / float(y.abs().max()), rel=1e-12)
    constant = nn.Conv2d(4, 3, 1).double()
    with torch.no_grad():
        constant.weight.zero_()
        constant.bias.fill_(1.0)
    assert permutation_invariance_error(constant, x, torch.Generator()) == 0.0
