"""Tests of attnconv.chapters.explorer: the pure head-state functions and the ipywidgets head explorer."""

import math

import matplotlib

matplotlib.use("Agg")
import ipywidgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from attnconv import off_target_mass_bound  # noqa: E402
from attnconv.chapters.explorer import (  # noqa: E402
    HeadExplorer,
    draw_head_state,
    head_explorer,
    head_state_figure,
)
from attnconv.chapters.shared.head_state import (  # noqa: E402
    HeadState,
    head_state_encoding,
    head_state_kernel,
    head_state_probabilities,
)


def _loop_probs(state):
    """Plain-loop softmax over the key grid of −α‖δ−Δ‖² (eq. 9) or −½‖(δ−Δ)ᵀM‖² (eq. 16)."""
    h, w = state.grid
    q0, q1 = state.query
    scores = {}
    for i in range(h):
        for j in range(w):
            e = (i - q0 - state.delta[0], j - q1 - state.delta[1])
            if state.inv_sqrt_sigma is None:
                scores[i, j] = -state.alpha * (e[0] ** 2 + e[1] ** 2)
            else:
                m = state.inv_sqrt_sigma
                p = (e[0] * m[0][0] + e[1] * m[1][0], e[0] * m[0][1] + e[1] * m[1][1])
                scores[i, j] = -0.5 * (p[0] ** 2 + p[1] ** 2)
    top = max(scores.values())
    z = sum(math.exp(s - top) for s in scores.values())
    return [[math.exp(scores[i, j] - top) / z for j in range(w)] for i in range(h)]


STATES = [
    HeadState(),
    HeadState(delta=(0.4, -1.3), alpha=0.3, query=(0, 6), grid=(5, 7), kernel_size=5),
    HeadState(
        delta=(-2.0, 2.0),
        inv_sqrt_sigma=((0.9, 0.2), (-0.4, 0.3)),
        query=(6, 1),
        grid=(7, 7),
    ),
    HeadState(delta=(0.0, 0.0), alpha=0.0, grid=(3, 4), query=(1, 2), kernel_size=1),
]


# ----------------------------------------------------------------------------- HeadState
def test_head_state_normalises_fields():
    s = HeadState(
        delta=[1, 2], alpha=3, query=[0, 1], grid=[4, 5], inv_sqrt_sigma=torch.eye(2)
    )
    assert s.delta == (1.0, 2.0) and isinstance(s.delta[0], float)
    assert s.query == (0, 1) and s.grid == (4, 5) and s.alpha == 3.0
    assert s.inv_sqrt_sigma == ((1.0, 0.0), (0.0, 1.0)) and s.generalized
    assert not HeadState().generalized
    with pytest.raises(Exception):
        s.alpha = 2.0  # frozen


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"query": (9, 0)}, "outside"),
        ({"query": (0, -1)}, "outside"),
        ({"kernel_size": 4}, "odd"),
        ({"kernel_size": 0}, "odd"),
        ({"kernel_size": 2.5}, "odd"),
        ({"alpha": -0.1}, "alpha"),
        ({"alpha": float("nan")}, "alpha"),
        ({"delta": (1.0,)}, "pair"),
        ({"delta": (float("inf"), 0.0)}, "finite"),
        ({"grid": (0, 3), "query": (0, 0)}, "positive"),
        ({"inv_sqrt_sigma": ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0))}, "2×2"),
        ({"inv_sqrt_sigma": ((1.0, float("nan")), (0.0, 1.0))}, "2×2"),
    ],
)
def test_head_state_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        HeadState(**kwargs)


# ----------------------------------------------------------------------------- pure functions
@pytest.mark.parametrize("state", STATES)
def test_head_state_probabilities_match_plain_loop(state):
    p = head_state_probabilities(state)
    assert p.shape == state.grid and p.dtype == torch.float64
    assert p.sum().item() == pytest.approx(1.0, abs=1e-12)
    want = _loop_probs(state)
    for i in range(state.grid[0]):
        for j in range(state.grid[1]):
            assert p[i, j].item() == pytest.approx(want[i][j], rel=1e-9, abs=1e-300)


def test_head_state_encoding_kinds():
    assert type(head_state_encoding(HeadState())).__name__ == "QuadraticEncoding"
    enc = head_state_encoding(STATES[2])
    assert type(enc).__name__ == "GeneralizedQuadraticEncoding"
    assert enc.inv_sqrt_sigma.dtype == torch.float64
    assert enc.inv_sqrt_sigma[0].tolist() == [
        [0.9, 0.2],
        [-0.4, 0.3],
    ]  # exact float64 values


@pytest.mark.parametrize("state", STATES)
def test_head_state_kernel_is_the_window_mass(state):
    p = _loop_probs(state)
    k = head_state_kernel(state)
    r = (state.kernel_size - 1) // 2
    assert k.shape == (state.kernel_size, state.kernel_size)
    window_mass = 0.0
    for i in range(state.kernel_size):
        for j in range(state.kernel_size):
            a, b = state.query[0] + i - r, state.query[1] + j - r
            inside = 0 <= a < state.grid[0] and 0 <= b < state.grid[1]
            want = p[a][b] if inside else 0.0
            window_mass += want
            assert k[i, j].item() == pytest.approx(want, rel=1e-9, abs=1e-300)
    assert k.sum().item() == pytest.approx(window_mass, rel=1e-9)


def test_one_hot_head_is_one_kernel_tap():
    """Lemma 2 / Theorem 1: at an integer Δ and large α the kernel is one-hot on the tap Δ + r."""
    for delta in [(-1, -1), (0, 1), (2, -2)]:
        state = HeadState(delta=delta, alpha=12.0, kernel_size=5)
        k = head_state_kernel(state)
        tap = k[delta[0] + 2, delta[1] + 2].item()
        assert (
            tap >= 1 / (1 + off_target_mass_bound(12.0)) - 1e-12
        )  # bound of Lemma 2, up to rounding
        assert k.sum().item() - tap < 1e-4


def test_head_state_kernel_accepts_precomputed_probabilities_and_checks_shape():
    state = HeadState(query=(1, 1))
    p = torch.arange(81, dtype=torch.float64).reshape(9, 9)
    k = head_state_kernel(state, p)
    assert k.tolist() == p[0:3, 0:3].tolist()
    k = head_state_kernel(
        HeadState(query=(0, 8)), p
    )  # window sticks out at the top and right
    assert k.tolist() == [[0.0, 0.0, 0.0], [7.0, 8.0, 0.0], [16.0, 17.0, 0.0]]
    with pytest.raises(ValueError, match="grid"):
        head_state_kernel(state, torch.zeros(5, 5))


def test_draw_head_state_and_figure():
    state = STATES[1]
    fig = head_state_figure(state)
    ax_a, ax_k = fig.axes
    torch.testing.assert_close(
        torch.as_tensor(ax_a.images[0].get_array().data),
        head_state_probabilities(state),
    )
    torch.testing.assert_close(
        torch.as_tensor(ax_k.images[0].get_array().data), head_state_kernel(state)
    )
    assert len(ax_k.texts) == 25
    assert "5×5 kernel" in ax_k.get_title()
    plt.close(fig)
    fig, (a, b) = plt.subplots(1, 2)
    draw_head_state(a, b, HeadState(inv_sqrt_sigma=((1.0, 0.0), (0.0, 1.0))))
    assert "generalized" in a.get_title() and len(b.texts) == 9
    assert not any(t.get_text() == "off grid" for t in b.texts)
    plt.close(fig)
    # at the corner, the 5 taps with δ₁ = −1 or δ₂ = −1 have no key; the view widens to show q + Δ
    fig, (a, b) = plt.subplots(1, 2)
    draw_head_state(a, b, HeadState(delta=(-2.0, -1.0), alpha=10.0, query=(0, 0)))
    labels = [[b.texts[3 * i + j].get_text() for j in range(3)] for i in range(3)]
    assert labels == [
        ["off grid"] * 3,
        ["off grid", "1.00", "0.00"],
        ["off grid", "0.00", "0.00"],
    ]
    assert a.get_xlim() == (-1.5, 8.5) and a.get_ylim() == (8.5, -2.5)
    plt.close(fig)


# ----------------------------------------------------------------------------- widget
def test_widget_builds_and_draws_without_a_display(capsys):
    open_before = set(plt.get_fignums())
    w = head_explorer()
    assert isinstance(w, HeadExplorer) and isinstance(w, ipywidgets.Widget)
    assert w.state == HeadState() and w.redraws == 1
    assert w.output in w.children
    w.sliders["delta1"].value = 2.0
    assert w.redraws == 2 and w.state.delta == (2.0, -1.0)
    assert set(plt.get_fignums()) == open_before  # redraws close their figures
    capsys.readouterr()


def test_slider_changes_update_state_and_probabilities():
    w = head_explorer(draw=False)
    p0 = w.probabilities()
    torch.testing.assert_close(p0, head_state_probabilities(HeadState()))
    w.sliders["alpha"].value = 0.5
    assert w.state.alpha == 0.5 and w.redraws == 2
    p1 = w.probabilities()
    assert (p1 - p0).abs().max() > 0.1
    torch.testing.assert_close(p1, head_state_probabilities(HeadState(alpha=0.5)))
    w.sliders["delta2"].value = 1.5
    w.sliders["query_row"].value = 0
    w.sliders["query_col"].value = 8
    w.sliders["kernel_size"].value = 5
    assert w.state == HeadState(
        delta=(1.0, 1.5), alpha=0.5, query=(0, 8), kernel_size=5
    )
    assert head_state_kernel(w.state).shape == (5, 5)
    assert w.redraws == 6


def test_generalized_toggle_starts_from_the_same_head_then_follows_m_sliders():
    w = head_explorer(HeadState(alpha=2.0), draw=False)
    assert w.sliders["m11"].disabled and not w.sliders["alpha"].disabled
    p_quad = w.probabilities()
    w.sliders["generalized"].value = True
    assert w.redraws == 2  # one redraw, not one per M slider
    assert w.state.generalized and w.state.inv_sqrt_sigma == (
        (2.0, 0.0),
        (0.0, 2.0),
    )  # √(2α) = 2
    assert not w.sliders["m11"].disabled and w.sliders["alpha"].disabled
    torch.testing.assert_close(w.probabilities(), p_quad)
    w.sliders["m21"].value = 1.0
    assert w.state.inv_sqrt_sigma == ((2.0, 0.0), (1.0, 2.0))
    assert (w.probabilities() - p_quad).abs().max() > 0.01
    want = _loop_probs(w.state)
    assert w.probabilities()[5, 3].item() == pytest.approx(want[5][3], rel=1e-9)
    w.sliders["generalized"].value = False
    assert not w.state.generalized
    torch.testing.assert_close(w.probabilities(), p_quad)


def test_widget_errors():
    with pytest.raises(ValueError, match="HeadState"):
        head_explorer(state={"alpha": 1.0})
    with pytest.raises(ValueError, match="3 and 5"):
        head_explorer(HeadState(kernel_size=7), draw=False)
