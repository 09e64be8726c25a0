import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from attnconv.chapters.weightless import (  # noqa: E402
    diagonal_counterexample,
    diagonal_is_row_max,
    pairwise_bound_holds,
    pairwise_bound_violations,
    pairwise_counterexample,
    plot_violation_rates,
    plot_weightless_example,
    violation_markdown,
    violation_rates,
    violation_table,
    weightless_attention,
)


def loop_weightless(x):
    """S, P, Y of softmax(X Xᵀ/√C) X written out entry by entry with Python floats."""
    t, c = len(x), len(x[0])
    s = [
        [sum(x[i][k] * x[j][k] for k in range(c)) / math.sqrt(c) for j in range(t)]
        for i in range(t)
    ]
    p = []
    for i in range(t):
        e = [math.exp(v - max(s[i])) for v in s[i]]
        p.append([v / sum(e) for v in e])
    y = [[sum(p[i][j] * x[j][k] for j in range(t)) for k in range(c)] for i in range(t)]
    return s, p, y


def loop_claim_a(a):
    t = len(a)
    return all(a[i][i] >= a[i][j] for i in range(t) for j in range(t))


def loop_violations_b(a):
    t = len(a)
    return [
        (i, j) for i in range(t) for j in range(t) if a[i][j] > max(a[i][i], a[j][j])
    ]


def test_weightless_attention_equals_plain_loops():
    torch.manual_seed(0)
    x = torch.randn(3, 5, 4, dtype=torch.float64)
    att = weightless_attention(x)
    assert (
        att.scores.shape == (3, 5, 5)
        and att.probs.shape == (3, 5, 5)
        and att.output.shape == (3, 5, 4)
    )
    for b in range(3):
        s, p, y = loop_weightless(x[b].tolist())
        assert torch.allclose(
            att.scores[b], torch.tensor(s, dtype=torch.float64), atol=1e-12
        )
        assert torch.allclose(
            att.probs[b], torch.tensor(p, dtype=torch.float64), atol=1e-12
        )
        assert torch.allclose(
            att.output[b], torch.tensor(y, dtype=torch.float64), atol=1e-12
        )


def test_weightless_attention_errors():
    with pytest.raises(ValueError, match="one token per row"):
        weightless_attention(torch.randn(4))
    with pytest.raises(ValueError, match="floating-point"):
        weightless_attention(torch.ones(3, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="at least one token"):
        weightless_attention(torch.randn(3, 0))


def test_claim_checkers_equal_loops_on_random_and_tied_matrices():
    g = torch.Generator().manual_seed(1)
    # small integers produce ties and both outcomes of each claim
    a = torch.randint(-3, 4, (200, 4, 4), generator=g).double()
    got_a, got_b = diagonal_is_row_max(a), pairwise_bound_holds(a)
    assert got_a.shape == (200,) and got_b.shape == (200,)
    want_a = [loop_claim_a(m.tolist()) for m in a]
    want_b = [not loop_violations_b(m.tolist()) for m in a]
    assert got_a.tolist() == want_a and got_b.tolist() == want_b
    assert (
        0 < sum(want_a) < 200 and 0 < sum(want_b) < 200
    )  # the test sees both outcomes
    for m in a[:50]:
        assert pairwise_bound_violations(m) == loop_violations_b(m.tolist())


def test_ties_count_as_holding_and_tol():
    assert bool(diagonal_is_row_max(torch.ones(3, 3)))
    assert bool(pairwise_bound_holds(torch.ones(3, 3)))
    a = torch.tensor([[1.0, 1.5], [0.0, 1.0]])
    assert not bool(pairwise_bound_holds(a))
    assert bool(pairwise_bound_holds(a, tol=0.5)) and not bool(
        pairwise_bound_holds(a, tol=0.49)
    )
    assert pairwise_bound_violations(a) == [(0, 1)]


def test_claim_checker_errors():
    for f in (diagonal_is_row_max, pairwise_bound_holds, pairwise_bound_violations):
        with pytest.raises(ValueError, match="square"):
            f(torch.zeros(2, 3))
        with pytest.raises(ValueError, match="square"):
            f(torch.zeros(3))
    with pytest.raises(ValueError, match="tol"):
        pairwise_bound_holds(torch.zeros(2, 2), tol=-1.0)
    with pytest.raises(ValueError, match="single"):
        pairwise_bound_violations(torch.zeros(2, 2, 2))


def test_pairwise_bound_always_holds_for_scores_cauchy_schwarz():
    g = torch.Generator().manual_seed(2)
    z = torch.randn(2000, 6, 3, generator=g, dtype=torch.float64)
    x = z * torch.exp(2 * torch.randn(2000, 6, 1, generator=g, dtype=torch.float64))
    assert bool(pairwise_bound_holds(weightless_attention(x).scores).all())


def test_two_tokens_never_break_claim_b_for_probabilities():
    # P_01 > P_11 would need 2 x0·x1 > |x0|² + |x1|², i.e. |x0 − x1|² < 0
    g = torch.Generator().manual_seed(3)
    x = torch.randn(3000, 2, 2, generator=g, dtype=torch.float64) * torch.exp(
        torch.randn(3000, 2, 1, generator=g, dtype=torch.float64)
    )
    assert bool(pairwise_bound_holds(weightless_attention(x).probs).all())


def test_softmax_is_monotone_so_claim_a_agrees_on_scores_and_probs():
    g = torch.Generator().manual_seed(4)
    att = weightless_attention(torch.randn(500, 4, 4, generator=g, dtype=torch.float64))
    sa, pa = diagonal_is_row_max(att.scores), diagonal_is_row_max(att.probs)
    assert torch.equal(sa, pa) and 0 < int(sa.sum()) < 500


def test_diagonal_counterexample_closed_form():
    x = diagonal_counterexample()
    assert x.shape == (2, 1) and x.dtype == torch.float64
    att = weightless_attention(x)
    assert torch.equal(
        att.scores, torch.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=torch.float64)
    )
    assert not bool(diagonal_is_row_max(att.scores)) and not bool(
        diagonal_is_row_max(att.probs)
    )
    assert math.isclose(float(att.probs[0, 1]), 1 / (1 + math.exp(-1)), rel_tol=1e-14)


def test_pairwise_counterexample_closed_form():
    x = pairwise_counterexample()
    assert x.shape == (3, 1)
    att = weightless_attention(x)
    e = math.exp
    p01, p00 = e(2) / (e(1) + e(2) + e(3)), e(1) / (e(1) + e(2) + e(3))
    p11 = e(4) / (e(2) + e(4) + e(6))
    assert math.isclose(float(att.probs[0, 1]), p01, rel_tol=1e-14)
    assert math.isclose(float(att.probs[1, 1]), p11, rel_tol=1e-14)
    assert p01 > max(p00, p11)
    assert pairwise_bound_violations(att.probs) == [(0, 1)]
    assert bool(pairwise_bound_holds(att.scores))


def test_violation_rates_match_a_per_draw_loop():
    draws, t, c, spread = 40, 3, 1, 0.5
    rates = violation_rates(
        t, c, draws, torch.Generator().manual_seed(5), norm_spread=spread
    )
    # replay the same random stream and judge every draw with the plain loops
    g = torch.Generator().manual_seed(5)
    z = torch.randn(draws, t, c, generator=g, dtype=torch.float64)
    scale = torch.exp(
        spread * torch.randn(draws, t, 1, generator=g, dtype=torch.float64)
    )
    counts = {"(a) scores": 0, "(a) probs": 0, "(b) scores": 0, "(b) probs": 0}
    for xd in (z * scale).tolist():
        s, p, _ = loop_weightless(xd)
        counts["(a) scores"] += not loop_claim_a(s)
        counts["(a) probs"] += not loop_claim_a(p)
        counts["(b) scores"] += bool(loop_violations_b(s))
        counts["(b) probs"] += bool(loop_violations_b(p))
    assert rates == {k: v / draws for k, v in counts.items()}
    assert rates["(b) scores"] == 0 and rates["(b) probs"] > 0


def test_violation_rates_deterministic_and_limits():
    a = violation_rates(8, 4, 200, torch.Generator().manual_seed(6))
    b = violation_rates(8, 4, 200, torch.Generator().manual_seed(6))
    assert a == b and list(a) == ["(a) scores", "(a) probs", "(b) scores", "(b) probs"]
    assert a["(a) scores"] == a["(a) probs"] and a["(b) scores"] == 0.0
    assert all(round(v * 200) == v * 200 for v in a.values())
    # one token: nothing to violate; many channels: the diagonal (≈ √C) dominates N(0, 1) off-diagonals
    assert set(
        violation_rates(1, 3, 50, torch.Generator().manual_seed(0)).values()
    ) == {0.0}
    assert (
        violation_rates(4, 512, 50, torch.Generator().manual_seed(0))["(a) scores"]
        == 0.0
    )


def test_violation_rates_errors():
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError):
        violation_rates(0, 2, 10, g)
    with pytest.raises(ValueError):
        violation_rates(2, 2, 0, g)
    with pytest.raises(ValueError, match="norm_spread"):
        violation_rates(2, 2, 10, g, norm_spread=-1.0)


def test_plots():
    fig = plot_weightless_example(pairwise_counterexample())
    ax = fig.axes[0]
    assert len(ax.texts) == 9 and ax.texts[1].get_text() == "0.245"
    plt.close(fig)
    with pytest.raises(ValueError, match="single"):
        plot_weightless_example(torch.randn(2, 3, 1, dtype=torch.float64))
    rates = {"A": {"x": 0.1, "y": 0.2}, "B": {"x": 0.0, "y": 1.0}}
    fig = plot_violation_rates(rates)
    heights = sorted(round(p.get_height(), 6) for p in fig.axes[0].patches)
    assert heights == [0.0, 0.1, 0.2, 1.0]
    plt.close(fig)
    with pytest.raises(ValueError, match="empty"):
        plot_violation_rates({})


def test_violation_table_is_one_seeded_draw_per_setting():
    settings = [(2, 1, 0.0), (3, 2, 1.5)]
    table = violation_table(settings, draws=50, seed=4)
    assert list(table) == ["T=2, C=1", "T=3, C=2, spread 1.5"]
    again = violation_rates(3, 2, 50, torch.Generator().manual_seed(4), norm_spread=1.5)
    assert table["T=3, C=2, spread 1.5"] == again
    assert table["T=2, C=1"]["(b) probs"] == 0.0  # two tokens never break (b) for P
    md = violation_markdown(table).data.splitlines()
    assert md[0] == "| setting | (a) scores | (a) probs | (b) scores | (b) probs |"
    row = table["T=2, C=1"]
    assert (
        md[2]
        == "| T=2, C=1 | "
        + " | ".join(
            f"{row[k]:.3f}"
            for k in ("(a) scores", "(a) probs", "(b) scores", "(b) probs")
        )
        + " |"
    )
    with pytest.raises(ValueError, match="empty"):
        violation_markdown({})
