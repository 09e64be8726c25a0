"""The per-layer measures of the pilots appendix (C.5) as a narrow table and as a before/after plot."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from attnconv.chapters.how_convolutional import (  # noqa: E402
    format_measures,
    plot_measures,
    plot_measures_dots,
)


def _row(model, layer, d, cov, mass, one_hot=2, inside=1):
    return {
        "model": model,
        "layer": layer,
        "num_heads": 9,
        "mean_distance": d,
        "mean_integer_distance": d / 2,
        "coverage": cov,
        "mean_mass": mass,
        "one_hot": one_hot,
        "one_hot_in_window": inside,
    }


AFTER = [_row("quadratic", 0, 0.54, 5, 0.51), _row("quadratic", 1, 1.73, 4, 0.25)]
BEFORE = [_row("quadratic", 0, 1.39, 1, 0.27, 0, 0), _row("quadratic", 1, 1.2, 3, 0.26)]


def test_table_is_narrow_and_keeps_the_numbers():
    lines = format_measures(AFTER).splitlines()
    assert all(line.count("|") == 8 for line in lines)  # 7 columns
    assert lines[2] == "| quadratic | 1 | 0.54 | 0.27 | 5 / 9 | 0.51 | 2 (1) |"


def test_plot_draws_initialisation_dashed_in_the_model_colour():
    fig = plot_measures(AFTER, before=BEFORE)
    trained, init = fig.axes[0].lines[:2]
    assert list(trained.get_ydata()) == [0.54, 1.73]
    assert list(init.get_ydata()) == [1.39, 1.2]
    assert init.get_linestyle() == "--" and init.get_color() == trained.get_color()
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["quadratic", "after training", "at initialisation"]
    plt.close(fig)


def test_dot_plot_states_every_number():
    rows = AFTER + [
        _row("learned", 0, 0.68, 3, 0.31),
        _row("learned", 1, 0.99, 3, 0.19),
    ]
    fig = plot_measures_dots(rows)
    assert len(fig.axes) == 3  # one panel per measure
    dots = [line for line in fig.axes[1].lines if line.get_marker() == "o"]
    assert len(dots) == 4  # one dot per layer and model
    assert sorted(line.get_xdata()[0] for line in dots) == [3, 3, 4, 5]
    assert [t.get_text() for t in fig.axes[2].texts] == ["0.51", "0.25", "0.31", "0.19"]
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert ticks == [
        "layer 1, quadratic",
        "layer 1, learned",
        "layer 2, quadratic",
        "layer 2, learned",
    ]
    plt.close(fig)
    fig = plot_measures_dots(AFTER, before=BEFORE)

    def stated(ax):  # the printed numbers (the arrows are empty annotations)
        return [t.get_text() for t in ax.texts if t.get_text()]

    assert stated(fig.axes[0]) == ["1.39 → 0.54", "1.20 → 1.73"]
    assert stated(fig.axes[1]) == ["1 → 5", "3 → 4"]
    opened = [
        line for line in fig.axes[0].lines if line.get_markerfacecolor() == "white"
    ]
    assert [line.get_xdata()[0] for line in opened] == [1.39, 1.2]
    plt.close(fig)
