"""Tests of attnconv.chapters.gaussian: the generalized quadratic encoding (App. A.1, eq. 16) and its figures."""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from torch.distributions import MultivariateNormal  # noqa: E402

from attnconv import (  # noqa: E402
    GeneralizedQuadraticEncoding,
    HardShiftEncoding,
    LearnedRelativeEncoding,
    QuadraticEncoding,
    relative_shifts,
)
from attnconv.chapters.gaussian import (  # noqa: E402
    covariance_of_heads,
    describe_heads,
    encoding_scores,
    gaussian_log_density,
    inv_sqrt_sigma_from_axes,
    inverse_covariance_spectrum,
    isotropic_generalized,
    log_density_gap_spread,
    plot_gaussian_heads,
    pruned_heads,
    score_constant,
)
from attnconv.chapters.shared.gaussian_maps import (  # noqa: E402
    draw_mass_contours,
    head_attention_maps,
    probability_mass_levels,
    query_shifts,
)


def _gen_heads(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    enc = GeneralizedQuadraticEncoding(n).double()
    with torch.no_grad():
        enc.centers.copy_(torch.randn(n, 2, generator=g, dtype=torch.float64) * 2)
        enc.inv_sqrt_sigma.copy_(torch.randn(n, 2, 2, generator=g, dtype=torch.float64))
    return enc


def _random_spd(d, seed):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(d, d, generator=g, dtype=torch.float64)
    return a @ a.T + 0.5 * torch.eye(d, dtype=torch.float64)


def _loop_log_density_2d(x, mu, cov):
    """Plain-Python closed form with the explicit 2×2 inverse and determinant."""
    (a, b), (c, d) = cov
    det = a * d - b * c
    inv = ((d / det, -b / det), (-c / det, a / det))
    e = (x[0] - mu[0], x[1] - mu[1])
    q = sum(e[i] * inv[i][j] * e[j] for i in range(2) for j in range(2))
    return -0.5 * q - math.log(2 * math.pi) - 0.5 * math.log(det)


# ----------------------------------------------------------------------------- gaussian_log_density
@pytest.mark.parametrize("d", [1, 2, 3])
def test_gaussian_log_density_matches_torch_distributions(d):
    cov = _random_spd(d, seed=d)
    mu = torch.randn(d, dtype=torch.float64)
    x = torch.randn(4, 5, d, dtype=torch.float64) * 3
    got = gaussian_log_density(x, mu, cov)
    want = MultivariateNormal(mu, cov).log_prob(x)
    assert got.shape == (4, 5)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


def test_gaussian_log_density_matches_plain_loop_and_accepts_integer_shifts():
    cov = [[2.0, 0.7], [0.7, 1.0]]
    mu = [0.5, -1.25]
    delta = relative_shifts((3, 4))  # integer tensor
    got = gaussian_log_density(delta, mu, cov)
    assert got.dtype == torch.get_default_dtype()
    for i in range(delta.shape[0]):
        for j in range(delta.shape[1]):
            x = delta[i, j].tolist()
            assert got[i, j].item() == pytest.approx(
                _loop_log_density_2d(x, mu, cov), rel=1e-5
            )


def test_gaussian_log_density_errors():
    x = torch.zeros(3, 2)
    with pytest.raises(ValueError, match="symmetric"):
        gaussian_log_density(x, [0.0, 0.0], [[1.0, 0.5], [0.0, 1.0]])
    with pytest.raises(ValueError, match="positive definite"):
        gaussian_log_density(x, [0.0, 0.0], [[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(ValueError, match="positive definite"):
        gaussian_log_density(x, [0.0, 0.0], [[0.0, 0.0], [0.0, 0.0]])
    with pytest.raises(ValueError, match="expected"):
        gaussian_log_density(x, [0.0, 0.0, 0.0], torch.eye(2))
    with pytest.raises(ValueError, match="expected"):
        gaussian_log_density(x, [0.0, 0.0], torch.eye(3))
    with pytest.raises(ValueError, match="expected"):
        gaussian_log_density(torch.tensor(1.0), [0.0], torch.eye(1))


# ----------------------------------------------------------------------------- encoding_scores
def test_encoding_scores_is_the_literal_inner_product():
    enc = _gen_heads(3)
    delta = relative_shifts((3, 3)).double()
    got = encoding_scores(enc, delta)
    v = enc.v().detach()
    assert got.shape == (3, 9, 9)
    for h in range(3):
        for qi in (0, 4, 8):
            for ki in (1, 5, 7):
                d1, d2 = delta[qi, ki].tolist()
                r = [d1, d2, d1 * d1, d2 * d2, d1 * d2]
                assert got[h, qi, ki].item() == pytest.approx(
                    sum(v[h, p].item() * r[p] for p in range(5)), abs=1e-10
                )


def test_encoding_scores_quadratic_closed_form():
    enc = QuadraticEncoding(
        2, centers=[[1.0, -2.0], [0.5, 0.25]], alpha=[0.5, 3.0]
    ).double()
    delta = relative_shifts((4, 4)).double()
    got = encoding_scores(enc, delta)
    c, a = enc.centers.detach(), enc.alpha.detach()
    for h in range(2):
        want = -a[h] * ((delta - c[h]) ** 2).sum(-1) + a[h] * (c[h] ** 2).sum()
        torch.testing.assert_close(got[h].detach(), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "enc", [LearnedRelativeEncoding(2, 4, 3), HardShiftEncoding([[0, 1], [1, 0]])]
)
def test_encoding_scores_rejects_encodings_without_v(enc):
    with pytest.raises(ValueError, match="no vector v"):
        encoding_scores(enc, relative_shifts((2, 2)))


# ----------------------------------------------------------------------------- covariance / constants
def test_covariance_of_heads_inverts_m_mT_and_is_symmetric():
    enc = _gen_heads(5, seed=3)
    cov = covariance_of_heads(enc)
    m = enc.inv_sqrt_sigma.detach()
    eye = torch.eye(2, dtype=torch.float64).expand(5, 2, 2)
    torch.testing.assert_close(cov @ (m @ m.transpose(1, 2)), eye, rtol=0, atol=1e-9)
    torch.testing.assert_close(cov, cov.transpose(1, 2), rtol=0, atol=0)


def test_covariance_of_heads_rejects_singular_heads():
    enc = GeneralizedQuadraticEncoding(
        2, inv_sqrt_sigma=[[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [0.5, 1.0]]]
    )
    with pytest.raises(ValueError, match="singular"):
        covariance_of_heads(enc)


def test_score_constant_both_encodings():
    gen = _gen_heads(4, seed=1)
    a = gen.inverse_covariance().detach()
    c = gen.centers.detach()
    want = [
        0.5
        * sum(c[h, i] * a[h, i, j] * c[h, j] for i in range(2) for j in range(2)).item()
        for h in range(4)
    ]
    assert score_constant(gen).tolist() == pytest.approx(want, rel=1e-12)
    quad = QuadraticEncoding(2, centers=[[1.0, 2.0], [-3.0, 0.0]], alpha=[0.5, 2.0])
    assert score_constant(quad).tolist() == pytest.approx([0.5 * 5, 2.0 * 9])
    with pytest.raises(ValueError, match="not a quadratic"):
        score_constant(LearnedRelativeEncoding(2, 4, 3))


def test_position_scores_is_literal_minus_constant():
    enc = _gen_heads(3, seed=2)
    delta = relative_shifts((5, 5)).double()
    literal = encoding_scores(enc, delta) - score_constant(enc).view(-1, 1, 1)
    torch.testing.assert_close(
        enc.position_scores(delta).detach(), literal.detach(), rtol=1e-10, atol=1e-10
    )


def test_isotropic_generalized_reproduces_quadratic():
    quad = QuadraticEncoding(
        3, centers=[[1.0, -1.0], [0.3, 2.0], [0.0, 0.0]], alpha=[0.1, 1.0, 7.0]
    ).double()
    gen = isotropic_generalized(quad)
    assert (
        isinstance(gen, GeneralizedQuadraticEncoding)
        and gen.centers.dtype == torch.float64
    )
    delta = relative_shifts((5, 4)).double()
    torch.testing.assert_close(
        gen.position_scores(delta), quad.position_scores(delta), rtol=1e-12, atol=1e-12
    )
    torch.testing.assert_close(
        encoding_scores(gen, delta),
        encoding_scores(quad, delta),
        rtol=1e-12,
        atol=1e-10,
    )
    want = 2 * quad.alpha.detach()[:, None, None] * torch.eye(2, dtype=torch.float64)
    torch.testing.assert_close(gen.inverse_covariance().detach(), want)


def test_isotropic_generalized_spread_parametrization():
    try:
        quad = QuadraticEncoding(
            2,
            centers=[[1.0, 0.0], [0.0, -2.0]],
            alpha=[0.5, 2.0],
            parametrization="spread",
        )
    except TypeError:
        pytest.skip("QuadraticEncoding has no spread parametrization")
    quad = quad.double()
    gen = isotropic_generalized(quad)
    delta = relative_shifts((4, 4)).double()
    torch.testing.assert_close(
        gen.position_scores(delta), quad.position_scores(delta), rtol=1e-12, atol=1e-12
    )
    assert score_constant(quad).tolist() == pytest.approx([0.5 * 1.0, 2.0 * 4.0])


def test_isotropic_generalized_errors():
    with pytest.raises(ValueError, match="2D QuadraticEncoding"):
        isotropic_generalized(_gen_heads(1))
    with pytest.raises(ValueError, match="2D QuadraticEncoding"):
        isotropic_generalized(QuadraticEncoding(2, spatial_dims=1))
    with pytest.raises(ValueError, match="alpha"):
        isotropic_generalized(QuadraticEncoding(1, alpha=-1.0))


# ----------------------------------------------------------------------------- log_density_gap_spread
def test_log_density_gap_spread_is_rounding_small():
    enc = _gen_heads(6, seed=4)
    spread = log_density_gap_spread(enc, relative_shifts((7, 7)).double())
    assert spread.shape == (6,)
    assert float(spread.max()) < 1e-9


def test_log_density_gap_spread_detects_a_wrong_v():
    class WrongV(GeneralizedQuadraticEncoding):
        def v(self):  # off-diagonal coefficient without its factor 2: not eq. (16)
            v = super().v().clone()
            v[:, 4] = v[:, 4] / 2
            return v

    enc = WrongV(
        2, centers=[[0.0, 0.0], [1.0, 1.0]], inv_sqrt_sigma=[[1.0, 0.5], [0.5, 1.0]]
    ).double()
    spread = log_density_gap_spread(enc, relative_shifts((5, 5)).double())
    assert float(spread.min()) > 1.0


def test_log_density_gap_spread_errors():
    with pytest.raises(ValueError, match="GeneralizedQuadraticEncoding"):
        log_density_gap_spread(QuadraticEncoding(1), relative_shifts((2, 2)))


# ----------------------------------------------------------------------------- shapes of heads
@pytest.mark.parametrize("angle", [0.0, 0.4, -math.pi / 6, 2.0])
def test_inv_sqrt_sigma_from_axes(angle):
    m = inv_sqrt_sigma_from_axes((0.5, 4.0), angle).double()
    torch.testing.assert_close(m, m.T)
    a = m @ m.T
    # Σ = A⁻¹ has variance σ_a² along u = (cos θ, sin θ) and σ_b² along (−sin θ, cos θ)
    sigma = torch.linalg.inv(a)
    u = torch.tensor([math.cos(angle), math.sin(angle)], dtype=torch.float64)
    w = torch.tensor([-math.sin(angle), math.cos(angle)], dtype=torch.float64)
    assert float(u @ sigma @ u) == pytest.approx(0.25, rel=1e-6)
    assert float(w @ sigma @ w) == pytest.approx(16.0, rel=1e-6)
    assert float(u @ sigma @ w) == pytest.approx(0.0, abs=1e-6)


def test_inv_sqrt_sigma_from_axes_errors():
    with pytest.raises(ValueError, match="positive"):
        inv_sqrt_sigma_from_axes((0.0, 1.0))
    with pytest.raises(ValueError, match="positive"):
        inv_sqrt_sigma_from_axes((1.0, -2.0))
    with pytest.raises(ValueError, match="positive"):
        inv_sqrt_sigma_from_axes((1.0, math.inf))


def test_inverse_covariance_spectrum_closed_form():
    enc = _gen_heads(5, seed=5)
    eig, cond = inverse_covariance_spectrum(enc)
    a = enc.inverse_covariance().detach()
    for h in range(5):
        tr, det = (
            (a[h, 0, 0] + a[h, 1, 1]).item(),
            (a[h, 0, 0] * a[h, 1, 1] - a[h, 0, 1] ** 2).item(),
        )
        disc = math.sqrt(tr * tr / 4 - det)
        lo, hi = tr / 2 - disc, tr / 2 + disc
        assert eig[h].tolist() == pytest.approx([lo, hi], rel=1e-8, abs=1e-12)
        assert cond[h].item() == pytest.approx(hi / lo, rel=1e-6)


def test_inverse_covariance_spectrum_singular_and_errors():
    enc = GeneralizedQuadraticEncoding(
        1, inv_sqrt_sigma=[[1.0, 0.0], [0.0, 0.0]]
    ).double()
    eig, cond = inverse_covariance_spectrum(enc)
    assert eig[0].tolist() == [0.0, 1.0]
    assert math.isinf(cond[0].item())
    with pytest.raises(ValueError, match="GeneralizedQuadraticEncoding"):
        inverse_covariance_spectrum(QuadraticEncoding(1))


def test_pruned_heads_rule():
    ms = torch.stack(
        [
            torch.eye(2),  # fine
            1e-3 * torch.eye(2),  # λ_max = 1e-6 < 1e-5: uniform
            torch.diag(torch.tensor([1.0, 1e-3])),  # condition 1e6 > 1e5: a line
            torch.diag(torch.tensor([1.0, 0.1])),  # condition 100: fine
            torch.diag(torch.tensor([1.0, 0.0])),  # singular: infinite condition
        ]
    ).double()
    enc = GeneralizedQuadraticEncoding(5, inv_sqrt_sigma=ms).double()
    assert pruned_heads(enc).tolist() == [False, True, True, False, True]
    assert pruned_heads(enc, min_eigenvalue=0.0, max_condition=1e7).tolist() == [
        False,
        False,
        False,
        False,
        True,
    ]
    assert pruned_heads(enc, max_condition=50).tolist() == [
        False,
        True,
        True,
        True,
        True,
    ]
    with pytest.raises(ValueError):
        pruned_heads(enc, min_eigenvalue=-1.0)
    with pytest.raises(ValueError):
        pruned_heads(enc, max_condition=0.5)


def test_describe_heads_table():
    ms = torch.stack(
        [torch.eye(2), 1e-3 * torch.eye(2), torch.diag(torch.tensor([2.0, 1.0]))]
    )
    enc = GeneralizedQuadraticEncoding(3, inv_sqrt_sigma=ms).double()
    text = describe_heads(enc, ["a", "bb", "c"])
    lines = text.splitlines()
    assert len(lines) == 4
    assert lines[1].split() == ["a", "1", "1", "1", "no"]
    assert lines[2].split() == ["bb", "1e-06", "1e-06", "1", "yes"]
    assert lines[3].split() == ["c", "1", "4", "4", "no"]
    with pytest.raises(ValueError, match="names"):
        describe_heads(enc, ["a"])


# ----------------------------------------------------------------------------- maps
def test_query_shifts_loop_and_errors():
    d = query_shifts((3, 5), (1, 4))
    assert d.shape == (3, 5, 2)
    for i in range(3):
        for j in range(5):
            assert d[i, j].tolist() == [i - 1, j - 4]
    with pytest.raises(ValueError, match="outside"):
        query_shifts((3, 5), (3, 0))
    with pytest.raises(ValueError, match="outside"):
        query_shifts((3, 5), (0, -1))
    with pytest.raises(ValueError, match="positive"):
        query_shifts((0, 5), (0, 0))


def test_head_attention_maps_against_plain_loop_softmax():
    centers, alphas = [[1.0, -2.0], [0.5, 0.5]], [0.7, 2.0]
    enc = QuadraticEncoding(2, centers=centers, alpha=alphas).double()
    maps = head_attention_maps(enc, (5, 6), (2, 3))
    assert maps.shape == (2, 5, 6)
    for h in range(2):
        w = [
            [
                math.exp(
                    -alphas[h]
                    * ((i - 2 - centers[h][0]) ** 2 + (j - 3 - centers[h][1]) ** 2)
                )
                for j in range(6)
            ]
            for i in range(5)
        ]
        z = sum(map(sum, w))
        for i in range(5):
            for j in range(6):
                assert maps[h, i, j].item() == pytest.approx(
                    w[i][j] / z, rel=1e-6, abs=1e-15
                )
        assert maps[h].sum().item() == pytest.approx(1.0, abs=1e-12)


def test_head_attention_maps_generalized_against_density():
    enc = _gen_heads(2, seed=7)
    maps = head_attention_maps(enc, (7, 7), (3, 3))
    cov = covariance_of_heads(enc)
    shifts = query_shifts((7, 7), (3, 3)).double()
    for h in range(2):
        dens = gaussian_log_density(shifts, enc.centers[h].detach(), cov[h]).exp()
        torch.testing.assert_close(maps[h], dens / dens.sum(), rtol=1e-9, atol=1e-15)


# ----------------------------------------------------------------------------- probability_mass_levels
def _brute_force_level(p, m):
    """max t among the values of p with mass{p ≥ t} ≥ m·total (plain loops)."""
    vals = p.reshape(-1).tolist()
    total = sum(vals)
    best = None
    for t in set(vals):
        mass = sum(v for v in vals if v >= t)
        if mass >= m * total and (best is None or t > best):
            best = t
    return best


@pytest.mark.parametrize("seed", range(5))
def test_probability_mass_levels_brute_force(seed):
    g = torch.Generator().manual_seed(seed)
    p = torch.rand(6, 7, generator=g, dtype=torch.float64) ** 4
    p = p / p.sum()
    masses = [0.1, 0.5, 0.9, 0.37]
    got = probability_mass_levels(p, masses)
    assert got.shape == (4,)
    for m, t in zip(masses, got.tolist()):
        assert t == _brute_force_level(p, m)
        assert p[p >= t].sum() >= m - 1e-12
        assert p[p > t].sum() < m


def test_probability_mass_levels_ties_unnormalised_and_shapes():
    p = torch.tensor([[4.0, 2.0, 2.0], [2.0, 2.0, 0.0]])  # total 12
    # 50 %: 4 (1/3) is not enough, the 2s are tied, so t = 2 and {p ≥ 2} holds everything but 0
    assert probability_mass_levels(p, [0.3, 0.5, 1.0]).tolist() == [4.0, 2.0, 2.0]
    assert probability_mass_levels(p, 0.5).shape == ()
    assert probability_mass_levels(p, [[0.2], [0.9]]).shape == (2, 1)
    assert probability_mass_levels([0.0, 1.0, 0.0], [1.0]).tolist() == [1.0]


@pytest.mark.parametrize(
    "probs,masses,match",
    [
        ([0.5, -0.1, 0.6], [0.5], "non-negative"),
        ([0.0, 0.0], [0.5], "positive"),
        ([], [0.5], "empty"),
        ([0.5, float("nan")], [0.5], "non-negative"),
        ([0.5, 0.5], [0.0], r"\(0, 1\]"),
        ([0.5, 0.5], [1.5], r"\(0, 1\]"),
        ([0.5, 0.5], [float("nan")], r"\(0, 1\]"),
    ],
)
def test_probability_mass_levels_errors(probs, masses, match):
    with pytest.raises(ValueError, match=match):
        probability_mass_levels(probs, masses)


# ----------------------------------------------------------------------------- drawing
def _boundary_edges(mask):
    h, w = len(mask), len(mask[0])
    n = 0
    for i in range(h):
        for j in range(w):
            if mask[i][j]:
                for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                    a, b = i + di, j + dj
                    if not (0 <= a < h and 0 <= b < w) or not mask[a][b]:
                        n += 1
    return n


def test_draw_mass_contours_outlines_the_superlevel_sets():
    enc = GeneralizedQuadraticEncoding(
        1, centers=[[1.0, 0.0]], inv_sqrt_sigma=[[0.8, 0.3], [0.0, 0.5]]
    ).double()
    probs = head_attention_maps(enc, (9, 9), (4, 4))[0]
    fig, ax = plt.subplots()
    ax.imshow(probs.numpy())
    lcs = draw_mass_contours(ax, probs, (0.5, 0.9))
    levels = probability_mass_levels(probs, (0.5, 0.9)).tolist()
    assert len(lcs) == 2
    for lc, t in zip(lcs, levels):
        mask = (probs >= t).tolist()
        assert len(lc.get_segments()) == _boundary_edges(mask)
    assert len(lcs[0].get_segments()) < len(lcs[1].get_segments())
    # every segment lies on a cell edge (half-integer coordinates)
    for seg in lcs[1].get_segments():
        for x, y in seg:
            assert (x + 0.5) == int(x + 0.5) and (y + 0.5) == int(y + 0.5)
    with pytest.raises(ValueError, match="2D"):
        draw_mass_contours(ax, probs.reshape(-1), (0.5,))
    with pytest.raises(ValueError, match="line style"):
        draw_mass_contours(ax, probs, (0.3, 0.5, 0.9))
    plt.close(fig)


def test_plot_gaussian_heads_panels_and_errors():
    ms = torch.stack(
        [
            inv_sqrt_sigma_from_axes((0.7, 0.7)),
            inv_sqrt_sigma_from_axes((0.6, 3.0), 0.5),
        ]
    )
    enc = GeneralizedQuadraticEncoding(
        2, centers=[[-2.0, 1.0], [1.0, 1.0]], inv_sqrt_sigma=ms
    ).double()
    fig = plot_gaussian_heads(enc, (9, 9), (4, 4), titles=["a", "b"], ncols=3)
    axes = fig.axes
    assert len(axes) == 3
    assert [ax.get_title() for ax in axes[:2]] == ["a", "b"]
    assert all(len(ax.images) == 1 for ax in axes[:2]) and not axes[2].axison
    maps = head_attention_maps(enc, (9, 9), (4, 4))
    for ax, m in zip(axes[:2], maps):
        torch.testing.assert_close(torch.as_tensor(ax.images[0].get_array().data), m)
        cross = ax.lines[0].get_xydata()[0]
    assert cross.tolist() == [
        4 + 1.0,
        4 + 1.0,
    ]  # (x, y) = (column, row) of q + Δ of the last head
    plt.close(fig)
    with pytest.raises(ValueError, match="titles"):
        plot_gaussian_heads(enc, (9, 9), (4, 4), titles=["only one"])
    with pytest.raises(ValueError, match="outside"):
        plot_gaussian_heads(enc, (9, 9), (9, 4))


# ----------------------------------------------------------------- heads drawn as the paper draws them
def test_mass_ellipse_holds_its_mass():
    """Monte Carlo oracle: the fraction of samples of N(0, Σ) inside the ellipse is the mass."""
    from matplotlib.patches import Ellipse

    from attnconv.chapters.shared.gaussian_maps import mass_ellipse

    inverse = torch.tensor([[2.0, 0.6], [0.6, 0.5]], dtype=torch.float64)
    gen = torch.Generator().manual_seed(0)
    cov = torch.linalg.inv(inverse)
    x = (
        torch.randn(200_000, 2, generator=gen, dtype=torch.float64)
        @ torch.linalg.cholesky(cov).T
    )
    for mass in (0.5, 0.9):
        width, height, angle = mass_ellipse(inverse, mass)
        inside = Ellipse((0, 0), width, height, angle=angle).contains_points(x.numpy())
        assert abs(inside.mean() - mass) < 0.005


def test_mass_ellipse_of_a_degenerate_head_is_infinite():
    from attnconv.chapters.shared.gaussian_maps import mass_ellipse

    width, height, _ = mass_ellipse([[1.0, 0.0], [0.0, 0.0]], 0.5)
    assert math.isfinite(width) != math.isfinite(height)
    with pytest.raises(ValueError):
        mass_ellipse([[1.0, 0.0], [0.0, 1.0]], 1.0)
