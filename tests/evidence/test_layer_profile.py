"""evidence.measures.layer_profile and its figure (depth_measures.plot_fresh_profiles): the
measures against a plain loop over the keys, learned heads without maps, and the figure's lines
and bands against the seeds' mean, lowest and highest values."""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from attnconv.chapters.shared.depth_measures import (  # noqa: E402
    plot_fresh_profiles,
    uniform_attention_distance,
)
from attnconv.evidence.measures import GRID, QUERY, layer_profile  # noqa: E402


def _loop_distance(center, prec):
    """E‖k − q‖ of one Gaussian head by a plain loop over the 16×16 keys."""
    w, d = [], []
    for i in range(GRID):
        for j in range(GRID):
            u, v = i - QUERY[0] - center[0], j - QUERY[1] - center[1]
            s = -0.5 * (
                prec[0][0] * u * u + 2 * prec[0][1] * u * v + prec[1][1] * v * v
            )
            w.append(math.exp(s))
            d.append(math.hypot(i - QUERY[0], j - QUERY[1]))
    z = sum(w)
    return sum(a * b for a, b in zip(w, d)) / z


def test_gaussian_layers_against_a_plain_loop():
    sharp, broad = [[50.0, 0.0], [0.0, 50.0]], [[0.3, 0.1], [0.1, 0.2]]
    recs = [
        {"centers": [[0.0, 1.0], [2.0, -1.0]], "inverse_covariance": [sharp, broad]},
        {"centers": [[-3.0, 0.0]], "inverse_covariance": [broad]},
    ]
    got = layer_profile(recs)
    want = [
        (_loop_distance([0, 1], sharp) + _loop_distance([2, -1], broad)) / 2,
        _loop_distance([-3, 0], broad),
    ]
    assert got["attention_distance"] == pytest.approx(want, rel=1e-12)
    assert got["one_key"] == [1.0, 0.0]  # only the sharp head puts > 0.5 on one key


def test_learned_layers_count_their_saved_peaks_and_have_no_distance():
    recs = [
        {"peak_probability": [0.7, 0.4, 0.51], "peak_shift": [[0, 1], [1, 1], [0, 0]]}
    ]
    assert layer_profile(recs) == {"attention_distance": None, "one_key": [2.0]}
    assert layer_profile(recs, threshold=0.9)["one_key"] == [0.0]


def test_the_figure_draws_each_models_mean_and_seed_range():
    seeds = [
        {"attention_distance": [2.0, 3.0], "one_key": [4.0, 0.0]},
        {"attention_distance": [3.0, 5.0], "one_key": [2.0, 1.0]},
    ]
    learned = [{"attention_distance": None, "one_key": [1.0, 0.0]}] * 2
    fig = plot_fresh_profiles({"quadratic": seeds, "learned": learned})
    left, right = fig.axes
    (line,) = [ln for ln in left.get_lines() if ln.get_label().startswith("quadratic")]
    assert list(line.get_ydata()) == [2.5, 4.0]
    (band,) = left.collections
    ys = band.get_paths()[0].vertices[:, 1]
    assert ys.min() == 2.0 and ys.max() == 5.0  # lowest and highest seed
    assert len(right.collections) == 2  # learned drawn on the right only
    # ... and the left panel says why it is not there
    notes = [t.get_text() for t in left.texts if t.get_text().startswith("learned")]
    assert notes == ["learned: only each head's peak\nis saved, no distance"]
    assert right.get_ylabel() == "share of the layer's heads"
    (share,) = [ln for ln in right.get_lines() if ln.get_label().startswith("quad")]
    assert list(share.get_ydata()) == [3.0 / 9, 0.5 / 9]  # mean count over 9 heads
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [
        "quadratic (2 seeds)",
        "learned (2 seeds)",
    ]
    (uniform,) = [ln for ln in left.get_lines() if ln.get_linestyle() == ":"]
    assert uniform.get_ydata()[0] == uniform_attention_distance(16)
    plt.close(fig)


def test_the_right_panel_is_a_share_of_each_models_own_heads():
    """16-head and 9-head models side by side: each count over its own layer's heads, read from
    the registered fresh runs' configs unless given."""
    from attnconv.chapters.shared.depth_measures import fresh_heads

    assert (fresh_heads("quadratic"), fresh_heads("quadratic-16heads")) == (9, 16)
    nine = [{"attention_distance": [2.0], "one_key": [9.0]}]
    sixteen = [{"attention_distance": [2.0], "one_key": [8.0]}]
    fig = plot_fresh_profiles({"quadratic": nine, "quadratic-16heads": sixteen})
    got = {ln.get_label(): list(ln.get_ydata()) for ln in fig.axes[1].get_lines()}
    assert got == {"quadratic (1 seed)": [1.0], "quadratic, 16 heads (1 seed)": [0.5]}
    fig = plot_fresh_profiles({"quadratic": nine}, heads={"quadratic": 18})
    assert list(fig.axes[1].get_lines()[0].get_ydata()) == [0.5]
    plt.close("all")
