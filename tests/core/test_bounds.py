import math

import pytest
import torch

from attnconv import (
    QuadraticEncoding,
    off_target_mass_bound,
    one_hot_alpha,
    relative_shifts,
    unit_roundoff,
)


def measured_off_target_mass(alpha, shape, query, center):
    """Off-centre softmax mass of one quadratic head, computed directly in float64."""
    enc = QuadraticEncoding(
        1,
        centers=torch.tensor([center], dtype=torch.float64),
        alpha=torch.tensor(alpha, dtype=torch.float64),
    )
    delta = relative_shifts(shape, 0)
    q = query[0] * shape[1] + query[1]
    p = torch.softmax(enc.position_scores(delta)[0, q], 0)
    target = int((query[0] + center[0]) * shape[1] + query[1] + center[1])
    return 1 - p[target].item(), p


@pytest.mark.parametrize("alpha", [0.3, 1.0, 2.5, 6.0, 12.0])
def test_bound_holds_on_finite_grids(alpha):
    for shape, query, center in [
        ((21, 21), (10, 10), (0.0, 0.0)),
        ((9, 12), (4, 5), (1.0, -2.0)),
        ((5, 5), (0, 0), (1.0, 1.0)),
    ]:
        mass, _ = measured_off_target_mass(alpha, shape, query, center)
        assert mass <= off_target_mass_bound(alpha) * (1 + 1e-12)
    # on a large grid around an interior pixel the bound is nearly attained: ε = S/(1+S)
    mass, _ = measured_off_target_mass(alpha, (41, 41), (20, 20), (0.0, 0.0))
    s = off_target_mass_bound(alpha)
    assert mass == pytest.approx(s / (1 + s), rel=1e-9)


def test_bound_asymptotics_and_dimension():
    a = 20.0
    assert off_target_mass_bound(a, 2) == pytest.approx(4 * math.exp(-a), rel=1e-6)
    assert off_target_mass_bound(a, 1) == pytest.approx(2 * math.exp(-a), rel=1e-6)


@pytest.mark.parametrize(
    "dtype,dims",
    [(torch.float32, 2), (torch.float64, 2), (torch.float32, 1), (torch.bfloat16, 2)],
)
def test_one_hot_alpha_is_the_smallest_alpha_under_the_roundoff(dtype, dims):
    a = one_hot_alpha(dtype, dims)
    u = unit_roundoff(dtype)
    below = torch.nextafter(
        torch.tensor(a, dtype=torch.float32), torch.tensor(0.0)
    ).item()
    assert torch.tensor(a, dtype=torch.float32).item() == a  # representable in float32
    assert off_target_mass_bound(a, dims) <= u < off_target_mass_bound(below, dims)


def test_one_hot_alpha_gives_a_one_hot_float32_softmax():
    a = one_hot_alpha(torch.float32)
    assert 17.5 < a < 18.5 and 37.5 < one_hot_alpha(torch.float64) < 38.5
    enc = QuadraticEncoding(1, centers=[[0.0, 0.0]], alpha=a)
    p = torch.softmax(
        enc.position_scores(relative_shifts((15, 15), 0))[0, 7 * 15 + 7], 0
    )
    assert p.max().item() >= 1 - 2 * unit_roundoff(torch.float32)
    assert (p.sum() - p.max()).item() <= 2 * unit_roundoff(torch.float32)


def test_errors():
    with pytest.raises(ValueError):
        off_target_mass_bound(0.0)
    with pytest.raises(ValueError):
        off_target_mass_bound(1.0, 0)
    with pytest.raises(ValueError):
        unit_roundoff(torch.int32)
