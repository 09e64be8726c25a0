"""attnconv.core.map_measures against plain Python loops over the keys."""

import math

import pytest
import torch

from attnconv.core.map_measures import (
    attention_spread,
    distance_to_uniform,
    mean_attention_distance,
    mirror_symmetry,
    shared_mass,
)


def random_maps(n=4, h=7, w=9, seed=0):
    g = torch.Generator().manual_seed(seed)
    m = torch.rand(n, h, w, generator=g, dtype=torch.float64) ** 4
    return m / m.flatten(1).sum(1)[:, None, None]


def test_distance_and_spread_match_loops():
    maps, q = random_maps(), (2, 5)
    d, s = mean_attention_distance(maps, q), attention_spread(maps)
    for n in range(maps.shape[0]):
        e = ex = ey = 0.0
        for i in range(maps.shape[1]):
            for j in range(maps.shape[2]):
                p = float(maps[n, i, j])
                e += p * math.hypot(i - q[0], j - q[1])
                ex += p * i
                ey += p * j
        var = sum(
            float(maps[n, i, j]) * ((i - ex) ** 2 + (j - ey) ** 2)
            for i in range(maps.shape[1])
            for j in range(maps.shape[2])
        )
        assert d[n].item() == pytest.approx(e, rel=1e-12)
        assert s[n].item() == pytest.approx(math.sqrt(var), rel=1e-12)


def test_one_hot_head():
    m = torch.zeros(1, 5, 5, dtype=torch.float64)
    m[0, 1, 4] = 1
    assert mean_attention_distance(m, (2, 2)).item() == pytest.approx(math.hypot(1, 2))
    assert attention_spread(m).item() == 0
    assert mirror_symmetry(m, (2, 2), "left-right").item() == 0
    assert distance_to_uniform(m).item() == pytest.approx(1 - 1 / 25)


def test_shared_mass_matches_loop_and_bounds():
    maps = random_maps(3)
    s = shared_mass(maps)
    for a in range(3):
        for b in range(3):
            loop = sum(
                min(float(x), float(y))
                for x, y in zip(maps[a].flatten(), maps[b].flatten())
            )
            assert s[a, b].item() == pytest.approx(loop, rel=1e-12)
    assert torch.allclose(s.diagonal(), torch.ones(3, dtype=torch.float64))
    disjoint = torch.zeros(2, 3, 3, dtype=torch.float64)
    disjoint[0, 0, 0] = disjoint[1, 2, 2] = 1
    assert shared_mass(disjoint)[0, 1].item() == 0


def test_mirror_symmetry_matches_loop():
    maps, q = random_maps(2, 6, 9, seed=3), (3, 3)
    for axis in ("left-right", "up-down"):
        got = mirror_symmetry(maps, q, axis)
        for n in range(2):
            if axis == "left-right":
                r = min(q[1], 9 - 1 - q[1])
                keys = [(i, j) for i in range(6) for j in range(q[1] - r, q[1] + r + 1)]
                mirror = {(i, j): (i, 2 * q[1] - j) for i, j in keys}
            else:
                r = min(q[0], 6 - 1 - q[0])
                keys = [(i, j) for i in range(q[0] - r, q[0] + r + 1) for j in range(9)]
                mirror = {(i, j): (2 * q[0] - i, j) for i, j in keys}
            mass = sum(float(maps[n][k]) for k in keys)
            tv = (
                0.5
                * sum(abs(float(maps[n][k]) - float(maps[n][mirror[k]])) for k in keys)
                / mass
            )
            assert got[n].item() == pytest.approx(1 - tv, rel=1e-12)


def test_symmetric_maps_score_one():
    m = random_maps(1, 7, 7)
    lr = (m + m.flip(2)) / 2
    ud = (m + m.flip(1)) / 2
    assert mirror_symmetry(lr, (3, 3), "left-right").item() == pytest.approx(1)
    assert mirror_symmetry(ud, (3, 3), "up-down").item() == pytest.approx(1)
    assert mirror_symmetry(lr, (3, 3), "up-down").item() < 0.99


def test_bad_input():
    with pytest.raises(ValueError, match="sum to 1"):
        mean_attention_distance(torch.ones(1, 3, 3), (1, 1))
    with pytest.raises(ValueError, match="outside"):
        mean_attention_distance(random_maps(), (9, 0))
    with pytest.raises(ValueError, match="axis"):
        mirror_symmetry(random_maps(), (1, 1), "diagonal")
