import itertools
import math

import pytest
import torch

from attnconv import (
    AbsoluteEncoding,
    GeneralizedQuadraticEncoding,
    HardShiftEncoding,
    LearnedRelativeEncoding,
    QuadraticEncoding,
    kernel_shifts,
    relative_shifts,
)


def test_kernel_shifts_are_the_k_by_k_window():
    s = kernel_shifts(3)
    assert [tuple(r) for r in s.tolist()] == list(
        itertools.product([-1, 0, 1], repeat=2)
    )
    assert kernel_shifts(5, 1).squeeze(-1).tolist() == [-2, -1, 0, 1, 2]
    with pytest.raises(ValueError):
        kernel_shifts(4)


def test_quadratic_scores_equal_eq9_up_to_constant():
    torch.manual_seed(0)
    enc = QuadraticEncoding(
        4, centers=torch.randn(4, 2) * 2, alpha=torch.rand(4) * 3
    ).double()
    delta = relative_shifts((5, 6), 2)
    scores = enc.position_scores(delta)
    eq9 = torch.einsum("qkp,hp->hqk", enc.features(delta), enc.v())
    const = enc.alpha * (enc.centers**2).sum(-1)
    assert torch.allclose(eq9, scores + const[:, None, None], atol=1e-10)
    # plain-loop oracle of −α‖δ−Δ‖²
    for h in range(4):
        a, (c1, c2) = enc.alpha[h].item(), enc.centers[h].tolist()
        for qi in range(0, delta.shape[0], 7):
            for ki in range(0, delta.shape[1], 5):
                d1, d2 = delta[qi, ki].tolist()
                assert math.isclose(
                    scores[h, qi, ki].item(),
                    -a * ((d1 - c1) ** 2 + (d2 - c2) ** 2),
                    abs_tol=1e-9,
                )


def test_quadratic_1d_has_dp_2():
    enc = QuadraticEncoding(
        3, spatial_dims=1, centers=[[-1.0], [0.0], [1.0]], alpha=2.0
    )
    assert enc.dim == 2
    r = enc.features(torch.tensor([[3]]))
    assert r.tolist() == [[9.0, 3.0]]


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(num_heads=0),
        dict(num_heads=2, spatial_dims=3),
        dict(num_heads=2, centers=torch.zeros(3, 2)),
        dict(num_heads=2, alpha=torch.ones(3)),
    ],
)
def test_quadratic_errors(kwargs):
    with pytest.raises(ValueError):
        QuadraticEncoding(**kwargs)


def test_encoding_rejects_wrong_shift_dimension():
    with pytest.raises(ValueError, match="2-dimensional"):
        QuadraticEncoding(2).position_scores(torch.zeros(3, 1, dtype=torch.long))


def test_generalized_matches_gaussian_quadratic_form_loop():
    torch.manual_seed(1)
    enc = GeneralizedQuadraticEncoding(
        3, centers=torch.randn(3, 2), inv_sqrt_sigma=torch.randn(3, 2, 2)
    ).double()
    enc.requires_grad_(False)
    delta = relative_shifts((4, 4), 0)
    scores = enc.position_scores(delta)
    inv_cov = enc.inverse_covariance()
    for h in range(3):
        for qi in range(delta.shape[0]):
            for ki in range(0, delta.shape[1], 3):
                d = delta[qi, ki].double() - enc.centers[h]
                want = -0.5 * float(d @ inv_cov[h] @ d)
                assert math.isclose(
                    scores[h, qi, ki].item(), want, rel_tol=1e-9, abs_tol=1e-9
                )
    # eq. 16: v·r_δ differs from the centred score by the per-head constant ½ΔᵀΣ⁻¹Δ
    eq16 = torch.einsum("qkp,hp->hqk", enc.features(delta), enc.v())
    const = 0.5 * torch.einsum("hi,hij,hj->h", enc.centers, inv_cov, enc.centers)
    assert torch.allclose(eq16, scores + const[:, None, None], atol=1e-10)


def test_generalized_isotropic_equals_quadratic():
    centers = torch.tensor([[1.0, -2.0], [0.5, 0.0]], dtype=torch.float64)
    alpha = torch.tensor([0.7, 3.0], dtype=torch.float64)
    quad = QuadraticEncoding(2, centers=centers, alpha=alpha).double()
    m = torch.stack(
        [torch.eye(2, dtype=torch.float64) * math.sqrt(2 * a) for a in alpha]
    )
    gen = GeneralizedQuadraticEncoding(2, centers=centers, inv_sqrt_sigma=m).double()
    delta = relative_shifts((5, 5), 1)
    assert torch.allclose(
        quad.position_scores(delta), gen.position_scores(delta), atol=1e-10
    )


def test_generalized_errors():
    with pytest.raises(ValueError):
        GeneralizedQuadraticEncoding(2, inv_sqrt_sigma=torch.eye(3))


def test_learned_relative_features_are_row_and_column_embeddings():
    torch.manual_seed(0)
    enc = LearnedRelativeEncoding(num_heads=3, dim=8, max_shift=4)
    delta = relative_shifts((3, 3), 1)
    r = enc.features(delta)
    rows, cols = enc.axis_embeddings[0].weight, enc.axis_embeddings[1].weight
    for qi in range(delta.shape[0]):
        for ki in range(delta.shape[1]):
            d1, d2 = delta[qi, ki].tolist()
            assert torch.equal(r[qi, ki], torch.cat([rows[d1 + 4], cols[d2 + 4]]))
    s = enc.position_scores(delta)
    assert torch.allclose(s[2], r @ enc.head_keys[2], atol=1e-6)


def test_learned_relative_errors():
    with pytest.raises(ValueError, match="divisible"):
        LearnedRelativeEncoding(2, dim=5, max_shift=3)
    enc = LearnedRelativeEncoding(2, dim=4, max_shift=2)
    with pytest.raises(ValueError, match="max_shift"):
        enc.features(relative_shifts((4, 4), 0))


def test_hard_shift_is_exactly_one_hot():
    enc = HardShiftEncoding(kernel_shifts(3))
    delta = relative_shifts((4, 5), 1)
    p = torch.softmax(enc.position_scores(delta), dim=-1)
    assert torch.equal(p.sum(-1), torch.ones_like(p.sum(-1)))
    assert set(p.unique().tolist()) == {0.0, 1.0}
    hits = (delta[None] == enc.shifts[:, None, None, :]).all(-1)
    assert torch.equal(p == 1, hits)
    with pytest.raises(TypeError):
        enc.features(delta)


def test_absolute_encoding_is_tied_to_one_grid():
    enc = AbsoluteEncoding(3, (4, 4))
    x = torch.zeros(2, 3, 4, 4)
    assert torch.equal(enc(x)[0], enc.embedding)
    with pytest.raises(ValueError, match="cannot change image size"):
        enc(torch.zeros(2, 3, 5, 4))


@pytest.mark.parametrize("shape, padding", [((16, 16), 0), ((5, 7), 1), ((8, 8), 2)])
def test_learned_grid_scores_are_the_position_scores_of_every_shift(shape, padding):
    """LearnedRelativeEncoding.grid_position_scores (two axis tables and a broadcast sum) against
    position_scores of the full (T_q, T_k, 2) table of shifts: the same numbers bit for bit, and
    the same gradients (float64)."""
    from attnconv.core.grid import relative_shifts

    torch.manual_seed(0)
    enc = LearnedRelativeEncoding(3, 8, max(shape) - 1 + padding).double()
    fast = enc.grid_position_scores(shape, padding)
    slow = enc.position_scores(relative_shifts(shape, padding))
    assert fast.is_contiguous() and torch.equal(fast, slow)
    for a, b in zip(
        torch.autograd.grad(fast.sin().sum(), list(enc.parameters())),
        torch.autograd.grad(slow.sin().sum(), list(enc.parameters())),
    ):
        assert torch.allclose(a, b, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="max_shift"):
        LearnedRelativeEncoding(3, 8, 2).grid_position_scores((4, 4))
