"""Tests of attnconv.chapters.linear_encoding against loops and closed forms."""

import math

import pytest
import torch

from attnconv.chapters.linear_encoding import (
    best_linear_mass_map,
    circle_encoding_target_mass,
    grid_search_target_mass_linear,
    linear_argmax,
    linear_encoding_attention,
    linear_encoding_target_mass,
    max_target_mass_linear,
    quadratic_encoding_attention,
    quadratic_encoding_target_mass,
    symmetric_mass_bound,
    window_corners,
    window_shifts,
)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_window_shifts_loop_oracle():
    w = window_shifts(1, center=(2, -3))
    expected = [(2 + a, -3 + b) for a in (-1, 0, 1) for b in (-1, 0, 1)]
    assert w.tolist() == [list(e) for e in expected]
    assert window_shifts(0).tolist() == [[0, 0]]
    assert window_shifts(3).shape == (49, 2)
    with pytest.raises(ValueError):
        window_shifts(-1)
    with pytest.raises(ValueError):
        window_shifts(1, center=(0, 0, 0))


def test_window_corners():
    w = window_shifts(2, center=(1, 1))
    corners = {tuple(s) for s in w[window_corners(w)].tolist()}
    assert corners == {(-1, -1), (-1, 3), (3, -1), (3, 3)}
    assert window_corners(window_shifts(0)).tolist() == [True]
    with pytest.raises(ValueError):
        window_corners(torch.zeros(3, 3))


def test_linear_attention_matches_manual_softmax():
    w = window_shifts(1)
    v = torch.tensor([0.7, -1.2], dtype=torch.float64)
    scores = [math.exp(0.7 * a - 1.2 * b) for a, b in w.tolist()]
    manual = torch.tensor([s / sum(scores) for s in scores], dtype=torch.float64)
    p = linear_encoding_attention(v, w)
    assert torch.allclose(p, manual, atol=1e-15)
    batch = linear_encoding_attention(
        torch.randn(4, 3, 2, generator=gen(1), dtype=torch.float64), w
    )
    assert batch.shape == (4, 3, 9) and torch.allclose(
        batch.sum(-1), torch.ones(4, 3, dtype=torch.float64)
    )
    assert torch.allclose(
        linear_encoding_attention(torch.tensor([0, 0]), w),
        torch.full((9,), 1 / 9, dtype=torch.float64),
    )
    with pytest.raises(ValueError):
        linear_encoding_attention(torch.zeros(3), w)
    with pytest.raises(ValueError):
        linear_encoding_attention(torch.zeros(2), torch.zeros(0, 2))


def test_linear_target_mass_and_pairing_bound():
    w = window_shifts(2, center=(1, -1))
    v = torch.randn(500, 2, generator=gen(2), dtype=torch.float64) * 3
    mass = linear_encoding_target_mass(v, w, (1, -1))
    idx = w.tolist().index([1, -1])
    assert torch.allclose(mass, linear_encoding_attention(v, w)[:, idx], atol=1e-14)
    assert (mass <= 1 / 25 + 1e-15).all()  # the pairing argument
    assert float(
        linear_encoding_target_mass(torch.zeros(2), w, (1, -1))
    ) == pytest.approx(1 / 25)
    with pytest.raises(ValueError):
        linear_encoding_target_mass(v, w, (5, 5))
    with pytest.raises(ValueError):
        linear_encoding_target_mass(torch.zeros(3), w, (1, -1))
    with pytest.raises(ValueError):
        linear_encoding_target_mass(v, w, (1, -1, 0))


def test_symmetric_mass_bound():
    w = window_shifts(1, center=(0, 2))
    assert symmetric_mass_bound(w, (0, 2)) == pytest.approx(1 / 9)
    with pytest.raises(ValueError):
        symmetric_mass_bound(w, (1, 3))  # a corner: not symmetric about it
    with pytest.raises(ValueError):
        symmetric_mass_bound(w, (9, 9))
    # a non-square window that is still symmetric about its centre
    cross = torch.tensor([[0, 0], [1, 0], [-1, 0], [0, 2], [0, -2]])
    assert symmetric_mass_bound(cross, (0, 0)) == pytest.approx(1 / 5)


def test_max_target_mass_linear():
    w = window_shifts(2, center=(1, -1))
    mass, v = max_target_mass_linear(w, (1, -1), starts=8, steps=600, generator=gen(3))
    assert mass == pytest.approx(1 / 25, abs=1e-10) and float(v.norm()) < 1e-5
    corner_mass, corner_v = max_target_mass_linear(
        w, (-1, -3), starts=4, steps=600, generator=gen(4)
    )
    assert corner_mass > 0.9 and corner_v[0] < 0 and corner_v[1] < 0
    assert max_target_mass_linear(window_shifts(0), (0, 0))[0] == 1.0
    with pytest.raises(ValueError):
        max_target_mass_linear(w, (1, -1), starts=0)
    with pytest.raises(ValueError):
        max_target_mass_linear(w, (7, 7))


def test_grid_search_target_mass_linear():
    w = window_shifts(1)
    mass, v = grid_search_target_mass_linear(w, (0, 0), limit=5.0, points=51)
    assert mass == pytest.approx(1 / 9, rel=1e-14) and torch.equal(
        v, torch.zeros(2, dtype=torch.float64)
    )
    # an edge middle: the best on the grid pushes v outwards, along the edge's normal
    edge, v_edge = grid_search_target_mass_linear(w, (-1, 0), limit=20.0, points=41)
    assert edge > 0.33 and v_edge[0] < 0 and v_edge[1] == 0
    with pytest.raises(ValueError):
        grid_search_target_mass_linear(w, (0, 0), points=50)
    with pytest.raises(ValueError):
        grid_search_target_mass_linear(w, (0, 0), limit=0.0)


def test_linear_argmax_loop_and_corners():
    w = window_shifts(2)
    v = torch.randn(200, 2, generator=gen(5), dtype=torch.float64)
    idx = linear_argmax(v, w)
    for row, i in zip(v.tolist(), idx.tolist()):
        scores = [row[0] * a + row[1] * b for a, b in w.tolist()]
        assert i == max(range(len(scores)), key=scores.__getitem__)
    assert window_corners(w)[idx].all()
    with pytest.raises(ValueError):
        linear_argmax(torch.zeros(3, 3), w)


def test_best_linear_mass_map():
    m = best_linear_mass_map(1, steps=800, starts=4, generator=gen(6))
    assert m.shape == (3, 3)
    assert float(m[1, 1]) == pytest.approx(1 / 9, abs=1e-9)
    assert (m[[0, 0, 2, 2], [0, 2, 0, 2]] > 0.9).all()
    edges = m[[0, 1, 1, 2], [1, 0, 2, 1]]
    assert ((edges - 1 / 3).abs() < 0.01).all() and (edges <= 1 / 3 + 1e-12).all()
    with pytest.raises(ValueError):
        best_linear_mass_map(-1)
    with pytest.raises(ValueError):
        best_linear_mass_map(1, starts=0)


def test_quadratic_attention_and_mass_closed_form():
    w = window_shifts(2)
    alpha, target = 2.0, (0, 1)
    p = quadratic_encoding_attention(alpha, w, target)
    weights = [
        math.exp(-alpha * ((a - target[0]) ** 2 + (b - target[1]) ** 2))
        for a, b in w.tolist()
    ]
    assert torch.allclose(
        p, torch.tensor(weights, dtype=torch.float64) / sum(weights), atol=1e-15
    )
    # centred target on a 5×5 window: S = (1 + 2q + 2q^4)^2 - 1 with q = e^{-α}
    q = math.exp(-5.0)
    s = (1 + 2 * q + 2 * q**4) ** 2 - 1
    t_mass, off = quadratic_encoding_target_mass(5.0, w, (0, 0))
    assert t_mass == pytest.approx(1 / (1 + s), rel=1e-14) and off == pytest.approx(
        s / (1 + s), rel=1e-12
    )
    assert quadratic_encoding_target_mass(40.0, w, (0, 0))[1] < 1e-16
    with pytest.raises(ValueError):
        quadratic_encoding_attention(0.0, w, (0, 0))
    with pytest.raises(ValueError):
        quadratic_encoding_target_mass(1.0, w, (3, 3))


def test_circle_encoding_target_mass():
    w = window_shifts(1)
    assert circle_encoding_target_mass(w, (0, 0), 0.0) == pytest.approx(1 / 9)
    masses = [
        circle_encoding_target_mass(w, (1, 1), s) for s in (1.0, 10.0, 100.0, 1000.0)
    ]
    assert all(a < b for a, b in zip(masses, masses[1:])) and masses[-1] > 1 - 1e-12
    # loop oracle: shift i sits at angle 2πi/9
    i = w.tolist().index([1, 1])
    scores = [5.0 * math.cos(2 * math.pi * (k - i) / 9) for k in range(9)]
    assert circle_encoding_target_mass(w, (1, 1), 5.0) == pytest.approx(
        math.exp(scores[i]) / sum(map(math.exp, scores))
    )
    with pytest.raises(ValueError):
        circle_encoding_target_mass(w, (0, 0), -1.0)
    with pytest.raises(ValueError):
        circle_encoding_target_mass(w, (4, 4), 1.0)


def test_linear_against_quadratic_figure_draws_its_heads():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from attnconv.chapters.linear_encoding import plot_linear_against_quadratic

    target = (1, -1)
    window = window_shifts(2, center=target)
    v_corner = torch.tensor([-30.0, -30.0], dtype=torch.float64)
    best_map = torch.linspace(0, 1, 25, dtype=torch.float64).view(5, 5)
    v_best = torch.zeros(2, dtype=torch.float64)
    fig = plot_linear_against_quadratic(
        window, target, v_best, 20.0, v_corner, best_map
    )
    heads = [ax.images[0].get_array() for ax in fig.axes[:4]]  # in percent, one scale
    assert heads[0].flatten().tolist() == pytest.approx([100 / 25] * 25)
    assert [t.get_text() for t in fig.axes[0].texts] == ["4"] * 25  # not a blank panel
    quadratic = quadratic_encoding_attention(20.0, window, target).view(5, 5)
    assert heads[1].flatten().tolist() == pytest.approx(
        (100 * quadratic).flatten().tolist()
    )
    assert heads[1][2, 2] > 99.9  # the target is the window's centre
    assert heads[2][0, 0] > 99.9  # v = 30·(−1, −1): the top-left corner
    assert heads[3].tolist() == (100 * best_map).tolist()
    texts = [t.get_text() for t in fig.axes[3].texts]
    assert texts == [f"{100 * v:.0f}" for v in best_map.flatten().tolist()]
    assert {ax.images[0].get_cmap().name for ax in fig.axes[:4]} == {"Blues"}
    titles = [ax.get_title() for ax in fig.axes[:3]]
    assert titles[0].startswith("linear, best $\\mathbf{v}$ for Δ = (1, -1)")
    assert titles[2].startswith("linear, $\\mathbf{v}$ = 30·(−1, −1)")
    # no title runs into another, nor into a panel
    fig.canvas.draw()
    boxes = [ax.title.get_window_extent() for ax in fig.axes[:4]]
    panels = [ax.get_window_extent() for ax in fig.axes]
    for i, a in enumerate(boxes):
        assert not any(a.overlaps(b) for b in boxes[i + 1 :] + panels)
    plt.close(fig)


def test_best_linear_mass_1d_against_the_closed_form():
    """1-D window {−2, …, 2}: the ends reach 1 only in the limit, the centre 1/5 at v = 0, and
    t = ±1 the maximum of x / (x⁻² + x⁻¹ + 1 + x + x²) over x = e^v, where the derivative
    vanishes: x⁴ − x² − 2x − 3 = 0 (solved independently by numpy's polynomial roots)."""
    import numpy as np

    from attnconv.chapters.linear_encoding import best_linear_mass_1d

    roots = np.roots([1, 0, -1, -2, -3])
    x = float(max(r.real for r in roots if abs(r.imag) < 1e-12 and r.real > 0))
    interior = 1 / (x + 1 + 1 / x + 1 / x**2 + 1 / x**3)
    b = best_linear_mass_1d(2)
    assert b.tolist() == pytest.approx([1, interior, 0.2, interior, 1], abs=1e-13)
    assert best_linear_mass_1d(1).tolist() == pytest.approx([1, 1 / 3, 1], abs=1e-15)
    assert best_linear_mass_1d(0).tolist() == [1.0]
    with pytest.raises(ValueError):
        best_linear_mass_1d(-1)


def test_exact_linear_mass_map_against_gradient_ascent_in_2d():
    """The exact map (a product of 1-D suprema) is symmetric under the square's eight symmetries,
    is 1 on the four corners, 1/5 mid-edge and 1/25 at the centre, and bounds from above, and
    within 0.005 off the corners matches, what 2-D gradient ascent (best_linear_mass_map) reaches; and a linear
    head with a finite v = 40·(±1, ±1) puts within 1e-15 of it on each corner."""
    from attnconv.chapters.linear_encoding import (
        exact_linear_mass_map,
        linear_encoding_target_mass,
        window_shifts,
    )

    exact = exact_linear_mass_map(2)
    for m in (exact.T, exact.flip(0), exact.flip(1), exact.rot90(1)):
        assert torch.equal(m, exact)
    assert exact[[0, 0, -1, -1], [0, -1, 0, -1]].tolist() == [1.0] * 4
    assert exact[[0, 2, 2, -1], [2, 0, -1, 2]].tolist() == pytest.approx([0.2] * 4)
    assert float(exact[2, 2]) == pytest.approx(1 / 25, abs=1e-15)
    ascent = best_linear_mass_map(2, steps=2000, starts=8, generator=gen(2))
    assert bool((ascent <= exact + 1e-12).all())
    corners = torch.zeros(5, 5, dtype=torch.bool)
    corners[[0, 0, -1, -1], [0, -1, 0, -1]] = True
    assert float((exact - ascent)[~corners].abs().max()) < 5e-3
    assert float(ascent[corners].min()) > 0.95  # ascent creeps towards the supremum 1
    window = window_shifts(2)
    for corner in ((-2, -2), (-2, 2), (2, -2), (2, 2)):
        v = 40.0 * torch.tensor(corner, dtype=torch.float64) / 2
        mass = float(linear_encoding_target_mass(v, window, corner))
        assert 1 - mass < 1e-15
