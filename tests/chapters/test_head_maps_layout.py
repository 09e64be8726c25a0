"""plot_layer_head_maps wraps many heads over several rows per layer, so each panel is larger."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from attnconv.chapters.shared.attention_maps import (  # noqa: E402
    plot_layer_head_maps,
    shared_scale_ticks,
)
from attnconv.chapters.shared.plotting import COLUMN_INCHES  # noqa: E402


def _maps(layers: int, heads: int, side: int = 8):
    g = torch.Generator().manual_seed(0)
    return [
        torch.softmax(torch.randn(heads, side * side, generator=g), -1).reshape(
            heads, side, side
        )
        for _ in range(layers)
    ]


def _panel_widths(fig):
    fig.canvas.draw()
    return [ax.get_window_extent().width for ax in fig.axes if ax.axison]


def test_sixteen_heads_wrapped_in_two_rows_per_layer():
    maps = _maps(2, 16)
    one_row = plot_layer_head_maps(maps, (4, 4), panel_size=1.0)
    wrapped = plot_layer_head_maps(maps, (4, 4), panel_size=1.0, heads_per_row=8)
    assert len(_panel_widths(one_row)) == len(_panel_widths(wrapped)) == 32
    assert len(wrapped.axes) == 32  # 2 layers × 2 rows × 8, none empty
    assert min(_panel_widths(wrapped)) > 1.8 * max(_panel_widths(one_row))
    titles = [ax.get_title() for ax in wrapped.axes]
    assert titles[:8] == [f"head {h}" for h in range(1, 9)]
    assert titles[8:16] == [f"head {h}" for h in range(9, 17)]
    assert [ax.get_ylabel() for ax in wrapped.axes[::8]] == [
        "layer 1",
        "",
        "layer 2",
        "",
    ]
    plt.close("all")


def test_uneven_heads_leave_the_last_places_empty():
    fig = plot_layer_head_maps(_maps(2, 12), (4, 4), heads_per_row=8)
    assert len(fig.axes) == 32
    assert len(_panel_widths(fig)) == 24  # 4 empty places in each layer's second row
    plt.close("all")


def test_shared_scale_one_norm_and_a_labelled_colour_bar():
    """Figure 9.1: every panel on one colour scale, read by one labelled colour bar, within the
    column; the scale runs from the uniform head's 1/64 (8×8 tokens) to the largest probability."""
    maps = _maps(6, 9)
    maps[2][3] = torch.full((8, 8), 1 / 64)  # a uniform head
    top = max(float(m.max()) for m in maps)
    fig = plot_layer_head_maps(maps, (4, 4), shared_scale=True)
    images = [im for ax in fig.axes for im in ax.images]
    assert len(images) == 54
    norms = {id(im.norm) for im in images}
    assert len(norms) == 1
    norm = images[0].norm
    assert abs(norm.vmin - 1 / 64) < 1e-12 and abs(norm.vmax - top) < 1e-12
    bars = [ax for ax in fig.axes if not ax.images and ax.get_xlabel()]
    assert len(bars) == 1 and "attention probability" in bars[0].get_xlabel()
    assert "log" in bars[0].get_xlabel()
    labels = [t.get_text() for t in bars[0].get_xticklabels()]
    assert labels[0] == "1/64"
    assert fig.get_figwidth() <= COLUMN_INCHES
    # the default keeps one scale per panel, and no bar
    own = plot_layer_head_maps(maps, (4, 4))
    assert len({id(im.norm) for ax in own.axes for im in ax.images}) == 54
    assert len(own.axes) == 54
    plt.close("all")


def test_shared_scale_ticks_by_hand():
    assert shared_scale_ticks(1 / 256, 0.351) == (
        [1 / 256, 0.01, 0.02, 0.05, 0.1, 0.2],
        ["1/256", "0.01", "0.02", "0.05", "0.1", "0.2"],
    )
    # 0.02 is within a third of a decade of 1/64 = 0.0156: left out
    assert shared_scale_ticks(1 / 64, 0.9)[1] == ["1/64", "0.05", "0.1", "0.2", "0.5"]


def test_a_figure_of_some_layers_names_them_and_keeps_the_scale_of_all():
    """Figs. 9.1 and 9.2 split six layers in two: ``layers`` draws only those, each named by its
    own number, on the colour scale of every layer (the largest probability may lie in a layer
    not drawn)."""
    import pytest

    maps = [torch.full((9, 4, 4), 1 / 16) for _ in range(6)]
    maps[0][0, 0, 0] = 0.9  # the largest probability, in layer 1
    fig = plot_layer_head_maps(maps, (2, 2), shared_scale=True, layers=[3, 4, 5])
    panels = [a for a in fig.axes if a.images]
    assert len(panels) == 27
    assert [a.get_ylabel() for a in panels[::9]] == ["layer 4", "layer 5", "layer 6"]
    assert all(abs(a.images[0].norm.vmax - 0.9) < 1e-6 for a in panels)
    assert fig.get_size_inches()[0] <= 6.7 + 1e-9
    plt.close(fig)
    with pytest.raises(ValueError):
        plot_layer_head_maps(maps, (2, 2), layers=[6])


def test_peak_marks_frame_exactly_the_heads_above_each_threshold():
    maps = _maps(2, 4)
    maps[1][2] = 0.0
    maps[1][2, 3, 3] = 0.95  # a head nearly one-hot
    maps[1][2, 0, 0] = 0.05
    maps[0][1] = 0.0
    maps[0][1, 1, 1] = 0.6  # a head on one key
    maps[0][1, 2, 2] = 0.4
    fig = plot_layer_head_maps(maps, (4, 4), peak_marks=(0.5, 0.9))
    assert fig.marked_heads == {0.5: [(1, 2), (2, 3)], 0.9: [(2, 3)]}
    labels = [ax.get_ylabel() for ax in fig.axes if ax.get_ylabel()]
    assert labels == ["layer 1\nmax 0.60", "layer 2\nmax 0.95"]
    plain = plot_layer_head_maps(maps, (4, 4))
    assert plain.marked_heads == {}
    assert [ax.get_ylabel() for ax in plain.axes if ax.get_ylabel()] == [
        "layer 1",
        "layer 2",
    ]
    plt.close("all")
