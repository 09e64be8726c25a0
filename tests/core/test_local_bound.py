"""The window bound of local attention stays fast and safe for wide heads."""

import math
import time

from attnconv.core.local import window_mass_bound, window_radius


def plain_sum(radius, lam, terms=2_000_000):
    """2τ(r)F by brute force: the tail sums of e^{-λ(s+m)²/2}, m = 0 … terms."""
    tail = lambda s: 2 * sum(math.exp(-0.5 * lam * (s + m) ** 2) for m in range(terms))
    return 2 * tail(radius + 0.5) * (1 + tail(0.5))


def test_wide_heads_are_bounded_from_above_and_fast():
    for lam in (5e-4, 1e-5):
        for r in (0, 3, 10):
            exact = plain_sum(r, lam)
            bound = window_mass_bound(r, lam)
            assert exact <= bound <= 1.5 * exact
    start = time.perf_counter()
    assert (
        window_radius(1e-12, 0.0, 1e-6, max_radius=15) == 15
    )  # a nearly uniform head keeps every key
    assert time.perf_counter() - start < 0.1


def test_sharp_heads_unchanged():
    lam = 2.0
    exact = plain_sum(1, lam, terms=200)
    assert math.isclose(window_mass_bound(1, lam), exact, rel_tol=1e-12)
