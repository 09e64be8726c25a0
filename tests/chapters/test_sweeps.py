"""Tests of attnconv.chapters.sweeps against independent oracles (F.conv2d, loops, closed forms)."""

import copy
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attnconv import (
    MultiHeadSelfAttention2d,
    ScoreTerms,
    conv_to_mhsa,
    off_target_mass_bound,
)
from attnconv.chapters.sweeps import (
    STANDARD_CASES,
    ConvCase,
    alpha_sweep,
    attention_is_one_hot_on_shifts,
    border_mask,
    conversion_error,
    conversion_errors,
    effective_kernel,
    hard_error,
    head_off_target_mass,
    pixel_errors,
    predicted_rank_error,
    random_conv,
    rank_sweep,
    reference_conv,
    relative_kernel_error,
    smallest_exact_alpha,
    unpadded_mhsa,
)
from attnconv.core.encodings import LearnedRelativeEncoding
from attnconv.core.metrics import relative_frobenius_error


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


# --------------------------------------------------------------------------- cases, random convs
def test_standard_cases_cover_the_brief():
    ks = {c.kernel_size for c in STANDARD_CASES}
    assert ks == {1, 3, 5}
    assert any(c.in_channels < c.out_channels for c in STANDARD_CASES)
    assert any(c.in_channels > c.out_channels for c in STANDARD_CASES)
    assert any(c.shape[0] != c.shape[1] for c in STANDARD_CASES)
    assert any(c.batch > 1 for c in STANDARD_CASES)
    assert {c.bias for c in STANDARD_CASES} == {True, False}
    # some image is so small that most of its pixels are within K//2 of the border
    assert any(
        2 * int(border_mask(c.shape, c.kernel_size // 2).sum())
        > c.shape[0] * c.shape[1]
        for c in STANDARD_CASES
    )


def test_conv_case_label():
    label = ConvCase(3, 4, 6, (7, 11), 2, False).label
    for part in ("K=3", "D_in=4", "D_out=6", "batch=2", "7×11", "bias=no"):
        assert part in label


def test_random_conv_properties_and_determinism():
    conv = random_conv(3, 4, 5, bias=True, generator=gen(1))
    assert (
        isinstance(conv, nn.Conv2d)
        and conv.padding == (1, 1)
        and conv.weight.dtype == torch.float64
    )
    assert conv.weight.shape == (5, 4, 3, 3) and conv.bias.shape == (5,)
    bound = 1 / math.sqrt(4 * 9)
    assert conv.weight.abs().max() <= bound and conv.bias.abs().max() <= bound
    assert torch.equal(conv.weight, random_conv(3, 4, 5, generator=gen(1)).weight)
    assert not torch.equal(conv.weight, random_conv(3, 4, 5, generator=gen(2)).weight)
    c1 = random_conv(
        5, 2, 3, bias=False, spatial_dims=1, dtype=torch.float32, generator=gen(0)
    )
    assert (
        isinstance(c1, nn.Conv1d)
        and c1.bias is None
        and c1.padding == (2,)
        and c1.weight.dtype == torch.float32
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(kernel_size=2),
        dict(kernel_size=0),
        dict(in_channels=0),
        dict(spatial_dims=3),
    ],
)
def test_random_conv_rejects_bad_arguments(kwargs):
    args = dict(kernel_size=3, in_channels=2, out_channels=2)
    args.update(kwargs)
    with pytest.raises(ValueError):
        random_conv(**args)


def test_reference_conv_matches_module_and_loop():
    conv = random_conv(3, 2, 3, generator=gen(3))
    x = torch.randn(1, 2, 4, 5, generator=gen(4), dtype=torch.float64)
    y = reference_conv(conv, x)
    assert torch.allclose(y, conv(x), atol=1e-14)
    # plain loop at one border pixel (0, 4): zeros outside the image
    w, b = conv.weight, conv.bias
    i, j, acc = 0, 4, b.clone()
    for a in range(3):
        for c in range(3):
            ii, jj = i + a - 1, j + c - 1
            if 0 <= ii < 4 and 0 <= jj < 5:
                acc += w[:, :, a, c] @ x[0, :, ii, jj]
    assert torch.allclose(y[0, :, i, j], acc, atol=1e-14)
    c1 = random_conv(3, 2, 2, spatial_dims=1, generator=gen(0))
    x1 = torch.randn(2, 2, 6, dtype=torch.float64)
    assert torch.allclose(reference_conv(c1, x1), c1(x1), atol=1e-14)


def test_reference_conv_rejects_unsupported():
    with pytest.raises(ValueError):
        reference_conv(nn.Conv2d(2, 2, 3, stride=2, padding=1), torch.randn(1, 2, 5, 5))


# --------------------------------------------------------------------------- errors
def test_relative_frobenius_error():
    a, b = (
        torch.tensor([[1.0, 2.0], [3.0, 4.0]]),
        torch.tensor([[1.0, 2.0], [3.0, 5.0]]),
    )
    assert relative_frobenius_error(a, b) == pytest.approx(
        1 / math.sqrt(1 + 4 + 9 + 25)
    )
    with pytest.raises(ValueError):
        relative_frobenius_error(a, b[0])
    with pytest.raises(ValueError):
        relative_frobenius_error(a, torch.zeros(2, 2))


def test_conversion_error_hard_soft_and_measures():
    conv = random_conv(3, 3, 4, generator=gen(5))
    x = torch.randn(2, 3, 5, 6, generator=gen(6), dtype=torch.float64)
    assert conversion_error(conv, x, hard=True) < 1e-13
    assert conversion_error(conv, x) < 1e-12  # default alpha = one_hot_alpha(float64)
    assert (
        conversion_error(conv, x, alpha=0.1) > 0.1
    )  # a blurred head is far from the conv
    mhsa = conv_to_mhsa(conv, alpha=1.0)
    with torch.no_grad():
        y, ref = mhsa(x), F.conv2d(x, conv.weight, conv.bias, padding=1)
    assert conversion_error(conv, x, "fro", alpha=1.0) == pytest.approx(
        float((y - ref).norm() / ref.norm()), rel=1e-12
    )
    assert conversion_error(conv, x, "max", alpha=1.0) == pytest.approx(
        float((y - ref).abs().max() / ref.abs().max()), rel=1e-12
    )


def test_conversion_error_dtype_leaves_conv_alone():
    conv = random_conv(3, 2, 2, generator=gen(7))
    x = torch.randn(1, 2, 5, 5, generator=gen(8), dtype=torch.float64)
    e32 = conversion_error(conv, x, dtype=torch.float32)
    assert conv.weight.dtype == torch.float64
    assert 1e-9 < e32 < 1e-5  # float32 round-off, not float64's
    with pytest.raises(ValueError):
        conversion_error(conv, x, measure="median")
    with pytest.raises(ValueError):
        conversion_error(nn.Linear(2, 2), x)


def test_conversion_errors_matches_manual_draw():
    cases = (ConvCase(3, 2, 3, (4, 5), 2, True), ConvCase(1, 3, 2, (7,), 1, False))
    rows = conversion_errors(cases, gen(11))
    assert len(rows) == 2 and set(rows[0]) == {torch.float32, torch.float64}
    g = gen(11)
    conv = random_conv(3, 2, 3, True, 2, torch.float64, g)
    x = torch.randn(2, 2, 4, 5, generator=g, dtype=torch.float64)
    assert rows[0][torch.float64] == conversion_error(conv, x)
    assert all(r[torch.float64] < 1e-12 and r[torch.float32] < 1e-5 for r in rows)
    with pytest.raises(ValueError):
        conversion_errors((), gen(0))


# --------------------------------------------------------------------------- border
def test_border_mask_counts_and_loop():
    m = border_mask((5, 7), 1)
    assert m.shape == (5, 7) and int(m.sum()) == 5 * 7 - 3 * 5
    for i in range(5):
        for j in range(7):
            assert bool(m[i, j]) == (i in (0, 4) or j in (0, 6))
    assert not border_mask((4, 4), 0).any()
    assert border_mask((3, 8), 2).all()
    with pytest.raises(ValueError):
        border_mask((0, 3), 1)
    with pytest.raises(ValueError):
        border_mask((3, 3), -1)


def test_pixel_errors():
    exp = torch.zeros(2, 3, 4, 5)
    exp[0, 0, 0, 0] = 2.0
    act = exp.clone()
    act[1, 2, 3, 1] = 0.5
    act[0, 1, 2, 2] = float("nan")
    e = pixel_errors(act, exp)
    assert e.shape == (4, 5)
    assert e[3, 1] == 0.25 and torch.isnan(e[2, 2]) and e[0, 0] == 0
    assert int((e == 0).sum()) == 18
    with pytest.raises(ValueError):
        pixel_errors(act, exp[0])
    with pytest.raises(ValueError):
        pixel_errors(act[0], exp[0])
    with pytest.raises(ValueError):
        pixel_errors(act, torch.zeros_like(exp))


def test_unpadded_hard_is_nan_exactly_on_border_and_exact_inside():
    conv = random_conv(3, 2, 3, generator=gen(12))
    x = torch.randn(2, 2, 6, 7, generator=gen(13), dtype=torch.float64)
    layer = unpadded_mhsa(conv, hard=True)
    assert layer.key_padding == 0
    with torch.no_grad():
        e = pixel_errors(layer(x), reference_conv(conv, x))
    border = border_mask((6, 7), 1)
    assert torch.equal(e.isnan(), border)
    assert (e[~border] < 1e-13).all()


def test_unpadded_quadratic_equals_replicate_padding_conv():
    # A quadratic head whose target is outside the image attends to the nearest pixel, which for a
    # rectangle is the coordinate-wise clamp: exactly what 'replicate' padding reads.
    conv = random_conv(3, 3, 2, generator=gen(14))
    x = torch.randn(1, 3, 5, 6, generator=gen(15), dtype=torch.float64)
    with torch.no_grad():
        y = unpadded_mhsa(conv, hard=False)(x)
    oracle = F.conv2d(F.pad(x, (1, 1, 1, 1), mode="replicate"), conv.weight, conv.bias)
    assert torch.allclose(y, oracle, atol=1e-12)
    assert (
        pixel_errors(y, reference_conv(conv, x))[border_mask((5, 6), 1)] > 1e-3
    ).all()


def test_unpadded_k1_is_still_exact():
    conv = random_conv(1, 3, 2, generator=gen(16))
    x = torch.randn(1, 3, 4, 4, generator=gen(17), dtype=torch.float64)
    with torch.no_grad():
        assert torch.allclose(
            unpadded_mhsa(conv)(x), reference_conv(conv, x), atol=1e-13
        )


def test_attention_is_one_hot_on_shifts():
    conv = random_conv(3, 2, 2, generator=gen(18))
    x = torch.zeros(1, 2, 4, 5, dtype=torch.float64)
    shifts = conv_to_mhsa(conv, hard=True).encoding.shifts
    _, probs = conv_to_mhsa(conv, hard=True)(x, return_attention=True)
    assert attention_is_one_hot_on_shifts(probs, (4, 5), shifts, 1)
    assert not attention_is_one_hot_on_shifts(
        probs, (4, 5), shifts.flip(0), 1
    )  # heads swapped
    _, soft = conv_to_mhsa(conv, alpha=2.0)(x, return_attention=True)
    assert not attention_is_one_hot_on_shifts(soft, (4, 5), shifts, 1)
    _, unpadded = unpadded_mhsa(conv)(x, return_attention=True)
    assert not attention_is_one_hot_on_shifts(
        unpadded, (4, 5), shifts, 0
    )  # border targets missing
    with pytest.raises(ValueError):
        attention_is_one_hot_on_shifts(probs, (4, 6), shifts, 1)


# --------------------------------------------------------------------------- rank
def impulse_kernel(mhsa, d_in, k):
    """Oracle: read the kernel off the layer's response to unit impulses."""
    r, n = k // 2, 2 * k + 1
    c0 = n // 2
    x = torch.zeros(d_in, d_in, n, n, dtype=torch.float64)
    for c in range(d_in):
        x[c, c, c0, c0] = 1.0
    with torch.no_grad():
        y = mhsa(x)
        if mhsa.out.bias is not None:
            y = y - mhsa.out.bias.view(1, -1, 1, 1)
    kern = torch.zeros(mhsa.out_channels, d_in, k, k, dtype=torch.float64)
    for c in range(d_in):
        for a in range(-r, r + 1):
            for b in range(-r, r + 1):
                kern[:, c, a + r, b + r] = y[c, :, c0 - a, c0 - b]
    return kern


@pytest.mark.parametrize("head_dim", [1, 2, None])
def test_effective_kernel_matches_impulse_response(head_dim):
    conv = random_conv(3, 3, 4, generator=gen(19))
    mhsa = conv_to_mhsa(conv, hard=True, head_dim=head_dim)
    assert torch.allclose(
        effective_kernel(mhsa, 3), impulse_kernel(mhsa, 3, 3), atol=1e-13
    )
    if head_dim is None:
        assert torch.allclose(effective_kernel(mhsa, 3), conv.weight, atol=1e-14)
        assert torch.allclose(
            effective_kernel(conv_to_mhsa(conv), 3), conv.weight, atol=1e-14
        )  # quadratic heads


def test_effective_kernel_errors():
    conv = random_conv(3, 2, 2, generator=gen(20))
    mhsa = conv_to_mhsa(conv)
    with pytest.raises(ValueError):
        effective_kernel(mhsa, 2)
    with pytest.raises(ValueError):
        effective_kernel(mhsa, 1)  # heads at shift ±1 do not fit in a 1×1 kernel
    with torch.no_grad():
        mhsa.encoding.centers += 0.5
    with pytest.raises(ValueError):
        effective_kernel(mhsa, 3)
    learned = MultiHeadSelfAttention2d(
        2,
        9,
        2,
        2,
        encoding=LearnedRelativeEncoding(9, 4, 3),
        terms=ScoreTerms.position_only_terms(),
    )
    with pytest.raises(ValueError):
        effective_kernel(learned, 3)


def test_relative_kernel_error():
    w = torch.ones(2, 2, 3, 3)
    assert relative_kernel_error(w * 1.5, w) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        relative_kernel_error(w[:1], w)
    with pytest.raises(ValueError):
        relative_kernel_error(w, torch.zeros_like(w))


def test_predicted_rank_error_closed_form():
    # Slices built with known singular values: U diag(s) Vᵀ, U, V orthonormal.
    g = gen(21)
    sv = torch.tensor([[4.0, 2.0, 1.0], [3.0, 3.0, 0.5]], dtype=torch.float64)
    weight = torch.zeros(5, 3, 1, 2, dtype=torch.float64)
    for i, s in enumerate(sv):
        u, _ = torch.linalg.qr(torch.randn(5, 3, generator=g, dtype=torch.float64))
        v, _ = torch.linalg.qr(torch.randn(3, 3, generator=g, dtype=torch.float64))
        weight[:, :, 0, i] = u @ torch.diag(s) @ v.T
    total = float((sv**2).sum())
    for r in range(4):
        tail = float((sv[:, r:] ** 2).sum())
        assert predicted_rank_error(weight, r) == pytest.approx(
            math.sqrt(tail / total), rel=1e-12, abs=1e-15
        )
    assert predicted_rank_error(weight, 0) == pytest.approx(1.0)
    assert predicted_rank_error(weight, 7) == 0.0


def test_predicted_rank_error_is_a_lower_bound():
    # Eckart–Young: no rank-1 kernel (random ones here) beats the truncated SVD.
    w = random_conv(3, 3, 3, generator=gen(22)).weight.detach()
    best = predicted_rank_error(w, 1)
    g = gen(23)
    for _ in range(20):
        a = torch.randn(3, 1, 3, 3, generator=g, dtype=torch.float64)
        b = torch.randn(1, 3, 3, 3, generator=g, dtype=torch.float64)
        approx = torch.einsum("oikl,ijkl->ojkl", a, b)
        assert relative_kernel_error(approx, w) >= best


def test_predicted_rank_error_errors():
    with pytest.raises(ValueError):
        predicted_rank_error(torch.ones(3, 3), 1)
    with pytest.raises(ValueError):
        predicted_rank_error(torch.ones(2, 2, 3, 3), -1)
    with pytest.raises(ValueError):
        predicted_rank_error(torch.zeros(2, 2, 3, 3), 1)


def test_rank_sweep():
    conv = random_conv(3, 3, 5, generator=gen(24))
    x = torch.randn(1, 3, 5, 5, generator=gen(25), dtype=torch.float64)
    res = rank_sweep(conv, x, [1, 2, 3])
    assert set(res) == {"output", "measured", "predicted"} and all(
        len(v) == 3 for v in res.values()
    )
    for m, p in zip(res["measured"], res["predicted"]):
        assert m == pytest.approx(p, rel=1e-9, abs=1e-13)
    assert res["measured"][0] > res["measured"][1] > res["measured"][2]
    assert (
        res["measured"][2] < 1e-14
        and res["output"][2] < 1e-13
        and res["output"][1] > 1e-3
    )
    with pytest.raises(ValueError):
        rank_sweep(conv, x, [])
    with pytest.raises(ValueError):
        rank_sweep(conv, x, [0, 1])


# --------------------------------------------------------------------------- alpha
def test_alpha_sweep_and_hard_error():
    conv = random_conv(3, 2, 2, generator=gen(26))
    x = torch.randn(2, 2, 5, 5, generator=gen(27), dtype=torch.float64)
    alphas = [1.0, 5.0, 15.0, 45.0]
    e = alpha_sweep(conv, x, alphas)
    assert e.dtype == torch.float64 and e.shape == (4,)
    assert e[0] > e[1] > e[2] > e[3]
    assert float(e[1]) == conversion_error(conv, x, "fro", alpha=5.0)
    floor = hard_error(conv, x)
    assert floor < 1e-14 and float(e[3]) < 4 * floor + 1e-16
    e32 = alpha_sweep(conv, x, [45.0], dtype=torch.float32)
    # float32's error, against the exact (float64) convolution of the same rounded weights
    # and input, is float32 round-off: never 0, far below 1e-5; the float64 convolution is
    # left as it was
    assert 1e-9 < float(e32[0]) < 1e-5 and conv.weight.dtype == torch.float64
    floor32 = hard_error(conv, x, dtype=torch.float32)
    assert 1e-9 < floor32 < 1e-5
    # the same by hand: hard heads run in float32, the convolution in float64
    c32, x32 = copy.deepcopy(conv).float(), x.float()
    with torch.no_grad():
        out = conv_to_mhsa(c32, hard=True)(x32).double()
        exact = F.conv2d(
            x32.double(), c32.weight.double(), c32.bias.double(), padding=1
        )
    assert floor32 == pytest.approx(
        float((out - exact).norm() / exact.norm()), rel=1e-12
    )
    with pytest.raises(ValueError):
        alpha_sweep(conv, x, [])
    with pytest.raises(ValueError):
        alpha_sweep(conv, x, [1.0, 0.0])


def test_smallest_exact_alpha():
    alphas = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert (
        smallest_exact_alpha(alphas, [10, 1, 3, 1.5, 1], 1.0) == 4.0
    )  # 3 fails, so 2 does not count
    assert smallest_exact_alpha(alphas, [1, 1, 1, 1, 1], 1.0) == 1.0
    assert smallest_exact_alpha(alphas, [9, 9, 9, 9, 3], 1.0) is None
    assert smallest_exact_alpha(alphas, [9, 9, 9, 9, 3], 1.0, factor=3.0) == 5.0
    with pytest.raises(ValueError):
        smallest_exact_alpha(alphas, [1, 2], 1.0)
    with pytest.raises(ValueError):
        smallest_exact_alpha([2.0, 1.0], [1, 1], 1.0)
    with pytest.raises(ValueError):
        smallest_exact_alpha(alphas, [1] * 5, 0.0)
    with pytest.raises(ValueError):
        smallest_exact_alpha(alphas, [1] * 5, 1.0, factor=0.5)
    with pytest.raises(ValueError):
        smallest_exact_alpha([], [], 1.0)


def test_head_off_target_mass_loop_oracle_and_bound():
    alpha, shape, query, center = 1.3, (6, 7), (2, 4), (1, -1)
    weights = {}
    for i in range(-1, 7):  # padded by 1
        for j in range(-1, 8):
            d = (i - query[0] - center[0]) ** 2 + (j - query[1] - center[1]) ** 2
            weights[(i, j)] = math.exp(-alpha * d)
    total = sum(weights.values())
    tgt = (query[0] + center[0], query[1] + center[1])
    oracle = (total - weights[tgt]) / total
    assert head_off_target_mass(
        alpha, shape, query, center, padding=1
    ) == pytest.approx(oracle, rel=1e-12)
    for a in (0.5, 3.0, 20.0):
        assert head_off_target_mass(a, (9, 9), (4, 4), (0, 1)) <= off_target_mass_bound(
            a
        ) * (1 + 1e-12)
    assert head_off_target_mass(20.0, (15, 15), (7, 7), (0, 0)) == pytest.approx(
        4 * math.exp(-20.0), rel=1e-6
    )
    with pytest.raises(ValueError):
        head_off_target_mass(1.0, (4, 4), (4, 0), (0, 0))
    with pytest.raises(ValueError):
        head_off_target_mass(1.0, (4, 4), (0, 0), (-1, 0), padding=0)


def test_chapter_4_figures_draw_their_data():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from attnconv import one_hot_alpha, unit_roundoff
    from attnconv.chapters.sweeps import plot_alpha_sweep, plot_off_target_mass

    alphas = [1.0, 2.0, 4.0, 8.0]
    measured = [head_off_target_mass(a, (7, 7), (3, 3), (0, 1), 1) for a in alphas]
    fig = plot_off_target_mass(alphas, measured)
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    drawn = {line.get_label(): list(line.get_ydata()) for line in ax.lines}
    assert drawn["measured, centre of a 15×15 image"] == measured
    bound = drawn["bound $S(α) = θ(e^{-α})^2 - 1$"]
    assert bound == [off_target_mass_bound(a) for a in alphas]
    assert all(m <= b for m, b in zip(measured, bound))
    assert drawn["$4e^{-α}$"] == pytest.approx([4 * math.exp(-a) for a in alphas])
    levels = sorted(
        line.get_ydata()[0] for line in ax.lines if "_child" in line.get_label()
    )
    assert levels == sorted(unit_roundoff(dt) for dt in (torch.float32, torch.float64))
    plt.close(fig)

    sweep = {
        torch.float32: torch.tensor([1.0, 0.1]),
        torch.float64: torch.tensor([1.0, 0.01]),
    }
    floor = {torch.float32: 1e-7, torch.float64: 1e-16}
    smallest = {torch.float32: 17.5, torch.float64: 37.0}
    fig = plot_alpha_sweep([1.0, 2.0], sweep, floor, smallest)
    ax = fig.axes[0]
    curves = [line for line in ax.lines if "error of conv_to_mhsa" in line.get_label()]
    assert [list(c.get_ydata()) for c in curves] == [[1.0, 0.1], [1.0, 0.01]]
    marks = {line.get_label(): line.get_xdata()[0] for line in ax.lines}
    bound32 = one_hot_alpha(torch.float32)
    assert marks[f"float32: bound one_hot_alpha = {bound32:.1f}"] == bound32
    assert marks["float64: measured smallest exact α = 37.0"] == 37.0
    assert marks["slides: α ≥ 46 (float32)"] == 46
    # direct labels, no legend: every line named where it is drawn
    assert ax.get_legend() is None and not fig.legends
    texts = [t.get_text() for t in ax.texts]
    assert f"one_hot_alpha {bound32:.1f}" in texts and "exact from 37" in texts
    assert "float32 error\ndashed: floor (α = ∞)" in texts
    plt.close(fig)


def test_ch3_figures_draw_the_numbers_they_are_given():
    """Figures 3.3 and 3.7 draw exactly the errors handed to them (a zero at the floor of the
    log axis) and the bound S(α) of ch. 4 at every width they span."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from attnconv.chapters.sweeps import plot_padding_errors, plot_rank_sweep
    from attnconv.core.bounds import off_target_mass_bound

    alphas = [1.0, 2.0, 5.0]
    rep, zero = [[0.5, 0.1, 1e-3], [0.4, 0.2, 1e-4]], [[0.6, 0.5, 0.5], [0.7, 0.6, 0.6]]
    fig = plot_padding_errors(alphas, rep, zero)
    lines = fig.axes[0].get_lines()
    assert [list(ln.get_ydata()) for ln in lines[:4]] == [
        rep[0],
        zero[0],
        rep[1],
        zero[1],
    ]
    x, y = lines[4].get_data()
    assert x[0] == 1.0 and x[-1] == 5.0
    assert all(abs(b - off_target_mass_bound(a)) <= 1e-12 * b for a, b in zip(x, y))
    plt.close(fig)
    sweep = {"predicted": [0.3, 0.0], "measured": [0.3, 0.0], "output": [0.2, 1e-16]}
    fig = plot_rank_sweep([1, 2], sweep, full_rank=2)
    drawn = [list(ln.get_ydata()) for ln in fig.axes[0].get_lines()[:3]]
    assert drawn == [[0.3, 1e-17], [0.3, 1e-17], [0.2, 1e-16]]
    plt.close(fig)
