"""Tests of attnconv.chapters.low_dim_encodings: D_p = 2 satisfies Lemma 1's condition on every
image size; D_p = 1 cannot. Oracles: plain Python loops over queries, keys and heads, and F.conv2d."""

import itertools

import pytest
import torch
import torch.nn.functional as F

from attnconv.chapters.low_dim_encodings import (
    PairedQuadraticEncoding,
    cantor_pairing,
    conv_to_paired_mhsa,
    degree_on_lines,
    paired_conversion_error,
    paired_encoding_features,
    paired_encoding_v,
    paired_scores_check,
    paired_scores_on_sizes,
    polynomial_code,
    polynomial_shift_index,
    scalar_encoding_reachable_targets,
    shift_index,
)


def test_shift_index_is_injective_on_a_box():
    r = range(-20, 21)
    codes = [int(shift_index(torch.tensor([a, b]))) for a in r for b in r]
    assert len(set(codes)) == len(codes) == 41 * 41


def test_polynomial_code_and_index_against_python_formulas():
    for a in range(-30, 31):
        assert int(polynomial_code(torch.tensor(a))) == 2 * a * a + a >= 0
    for x in range(0, 25):
        for y in range(0, 25):
            assert (
                int(cantor_pairing(torch.tensor(x), torch.tensor(y)))
                == (x + y) * (x + y + 1) // 2 + y
            )
    # ι′ written out as a polynomial in δ (Python integers, no torch): the same values
    for a in range(-15, 16):
        for b in range(-15, 16):
            p1, p2 = 2 * a * a + a, 2 * b * b + b
            assert (
                int(polynomial_shift_index(torch.tensor([a, b])))
                == ((p1 + p2) ** 2 + p1 + 3 * p2) // 2
            )


def test_polynomial_index_is_injective_on_a_box():
    codes = [
        int(polynomial_shift_index(torch.tensor([a, b])))
        for a in range(-40, 41)
        for b in range(-40, 41)
    ]
    assert len(set(codes)) == len(codes) == 81 * 81
    assert (
        len(set(int(polynomial_code(torch.tensor(a))) for a in range(-500, 501)))
        == 1001
    )


def test_degree_on_lines():
    assert degree_on_lines(polynomial_shift_index) == 4
    assert degree_on_lines(lambda d: polynomial_code(d[..., 0])) == 2
    assert degree_on_lines(lambda d: d[..., 0] * d[..., 1] ** 2 + 3) == 3
    assert (
        degree_on_lines(shift_index) is None
    )  # the zig-zag folds signs: not a polynomial


def loop_oracle(shape, padding, alpha, index=shift_index):
    """Plain loops: for every query, head and key, the score v·r_δ as two products of Python ints;
    returns (every argmax is q + Δ, smallest gap between the target and another key)."""
    h, w = shape
    ok, gap = True, None
    for qi, qj in itertools.product(range(h), range(w)):
        for target in itertools.product((-1, 0, 1), repeat=2):
            v = [int(c) for c in paired_encoding_v(target, alpha, index)]
            scores = {}
            for ki, kj in itertools.product(
                range(-padding, h + padding), range(-padding, w + padding)
            ):
                r = [
                    int(c)
                    for c in paired_encoding_features(
                        torch.tensor([ki - qi, kj - qj]), index
                    )
                ]
                scores[(ki, kj)] = v[0] * r[0] + v[1] * r[1]
            goal = (qi + target[0], qj + target[1])
            best = max(scores.values())
            ok = (
                ok
                and scores[goal] == best
                and sum(s == best for s in scores.values()) == 1
            )
            g = scores[goal] - max(s for k, s in scores.items() if k != goal)
            gap = g if gap is None else min(gap, g)
    return ok, gap


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (4, 6), (7, 5)])
@pytest.mark.parametrize("alpha", [1, 3])
def test_argmax_is_the_target_with_gap_alpha_against_loops(shape, alpha):
    ok, gap = loop_oracle(shape, 1, alpha)
    assert ok and gap >= alpha
    check = paired_scores_check(shape, padding=1, alpha=alpha)
    assert (
        check["argmax_is_target"]
        and check["corner_argmax_is_target"]
        and check["interior_argmax_is_target"]
    )
    assert check["min_gap"] == gap
    assert min(check["corner_min_gap"], check["interior_min_gap"]) >= alpha


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (4, 6)])
def test_polynomial_encoding_argmax_is_the_target_with_gap_alpha_against_loops(shape):
    ok, gap = loop_oracle(shape, 1, 2, polynomial_shift_index)
    assert ok and gap >= 2
    check = paired_scores_check(shape, padding=1, alpha=2, index=polynomial_shift_index)
    assert check["argmax_is_target"] and check["min_gap"] == gap


def test_polynomial_encoding_on_larger_grids_and_as_a_convolution():
    for shape in ((16, 16), (32, 32)):
        check = paired_scores_check(
            shape, padding=1, alpha=1, index=polynomial_shift_index
        )
        assert check["argmax_is_target"] and check["min_gap"] >= 1
    gen = torch.Generator().manual_seed(5)
    conv = torch.nn.Conv2d(3, 4, 3, padding=1).double()
    mhsa = conv_to_paired_mhsa(conv, index=polynomial_shift_index)
    assert mhsa.encoding.index is polynomial_shift_index
    for shape in ((1, 1), (5, 7), (32, 32)):
        x = torch.randn(1, 3, *shape, generator=gen, dtype=torch.float64)
        ref = F.conv2d(x, conv.weight, conv.bias, padding=1)
        with torch.no_grad():
            assert (mhsa(x) - ref).abs().max() / ref.abs().max() < 1e-12


def test_larger_grids_and_padding_too_small_is_an_error():
    for shape in ((16, 16), (9, 31)):
        check = paired_scores_check(shape, padding=1, alpha=2)
        assert check["argmax_is_target"] and check["min_gap"] >= 2
    with pytest.raises(ValueError):
        paired_scores_check((5, 5), padding=0)


def test_position_scores_are_v_dot_r_minus_a_constant():
    shifts = torch.tensor([[-1, -1], [0, 1], [1, 0]])
    enc = PairedQuadraticEncoding(shifts, alpha=2.0)
    delta = torch.stack(
        torch.meshgrid(torch.arange(-4, 5), torch.arange(-4, 5), indexing="ij"), -1
    )
    feats = paired_encoding_features(delta)
    for h, target in enumerate(shifts.tolist()):
        v_dot_r = (feats @ paired_encoding_v(target, 2)).double()
        const = 2 * float(shift_index(torch.tensor(target))) ** 2
        assert torch.equal(enc.position_scores(delta)[h], v_dot_r - const)
    assert enc.dim == 2


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
def test_d_p_2_layer_equals_the_convolution_on_several_sizes(dtype, tol):
    gen = torch.Generator().manual_seed(3)
    conv = torch.nn.Conv2d(3, 4, 3, padding=1).to(dtype)
    with torch.no_grad():
        conv.weight.copy_(torch.randn(conv.weight.shape, generator=gen, dtype=dtype))
        conv.bias.copy_(torch.randn(conv.bias.shape, generator=gen, dtype=dtype))
    mhsa = conv_to_paired_mhsa(conv)
    for shape in ((1, 1), (3, 8), (12, 12)):
        x = torch.randn(2, 3, *shape, generator=gen, dtype=dtype)
        ref = F.conv2d(x, conv.weight, conv.bias, padding=1)
        with torch.no_grad():
            err = (mhsa(x) - ref).abs().max() / ref.abs().max()
        assert err < tol


def test_scalar_encoding_reaches_at_most_two_keys():
    gen = torch.Generator().manual_seed(0)
    for _ in range(20):
        values = torch.randn(9, generator=gen, dtype=torch.float64)
        directions = torch.cat(
            [
                torch.randn(500, generator=gen, dtype=torch.float64) * 100,
                torch.tensor([1.0, -1.0]),
            ]
        )
        reached = set(scalar_encoding_reachable_targets(values, directions).tolist())
        assert reached == {int(values.argmax()), int(values.argmin())}


def test_paired_encoding_figure_singles_out_its_target():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from attnconv.chapters.low_dim_encodings import plot_paired_encoding

    r = torch.arange(-2, 3)
    shifts = torch.stack(torch.meshgrid(r, r, indexing="ij"), -1).reshape(-1, 2)
    iota = shift_index(shifts).double()
    for (
        target
    ) in shifts.tolist():  # v = (2ι(Δ), −1) on r = (ι, ι²): a plain loop as oracle
        t = float(shift_index(torch.tensor(target)))
        scores = [2 * t * float(i) - float(i) ** 2 for i in iota]
        best = max(range(len(scores)), key=scores.__getitem__)
        assert shifts[best].tolist() == target
        assert sorted(scores)[-1] - sorted(scores)[-2] >= 1
    fig = plot_paired_encoding(target=(1, -1))
    line = fig.axes[0].lines[0]
    assert len(line.get_xdata()) == 25
    plt.close(fig)


def test_paired_scores_on_sizes_is_every_size_s_check_together():
    sizes = ((3, 3), (5, 7))
    found = [paired_scores_check(size, padding=1, alpha=2) for size in sizes]
    ok, gap = paired_scores_on_sizes(sizes, alpha=2)
    assert ok is True and gap == min(c["min_gap"] for c in found) >= 2
    # an index that is not injective (the row only) cannot single out a shift
    ok, gap = paired_scores_on_sizes(sizes, index=lambda d: torch.as_tensor(d)[..., 0])
    assert ok is False and gap <= 0


@pytest.mark.parametrize("index", [shift_index, polynomial_shift_index])
def test_paired_conversion_error_against_f_conv2d(index):
    conv = torch.nn.Conv2d(3, 4, 3, padding=1).double()
    sizes = ((1, 1), (4, 5))
    error = paired_conversion_error(conv, torch.float64, sizes, index=index)
    oracle = []
    layer = conv_to_paired_mhsa(conv, index=index)
    for size in sizes:
        x = torch.randn(
            2,
            3,
            *size,
            generator=torch.Generator().manual_seed(size[0]),
            dtype=torch.float64,
        )
        with torch.no_grad():
            ref = F.conv2d(x, conv.weight, conv.bias, padding=1)
            oracle.append(float((layer(x) - ref).abs().max() / ref.abs().max()))
    assert error == pytest.approx(max(oracle), rel=1e-6, abs=1e-15)
    assert error < 1e-12
    assert conv.weight.dtype == torch.float64  # the convolution is left alone
    # far from one-hot heads the layer is not the convolution
    assert paired_conversion_error(conv, torch.float64, sizes, alpha=0.01) > 0.1
