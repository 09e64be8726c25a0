"""plot_layer_head_maps wraps many heads over several rows per layer, so each panel is larger."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from attnconv.chapters.shared.attention_maps import plot_layer_head_maps  # noqa: E402


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
