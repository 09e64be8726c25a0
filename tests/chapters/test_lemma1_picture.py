"""Tests of attnconv.chapters.lemma1_picture (the paper's Fig. 1 on a real image). Oracles: the
convolution's own kernel slices and F.conv2d of the luminance with the hand-written filters."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from attnconv import conv_to_mhsa, kernel_shifts  # noqa: E402
from attnconv.chapters.lemma1_picture import (  # noqa: E402
    edge_blur_conv,
    head_matrices,
    plot_heads_and_matrices,
    plot_outputs,
)


def test_edge_blur_conv_is_sobel_and_blur_of_the_luminance():
    conv = edge_blur_conv(torch.float64)
    x = torch.rand(2, 3, 9, 8, dtype=torch.float64)
    lum = (0.299 * x[:, 0] + 0.587 * x[:, 1] + 0.114 * x[:, 2])[:, None]
    sobel = (
        torch.tensor([[-1.0, 0, 1], [-2, 0, 2], [-1, 0, 1]], dtype=torch.float64) / 4
    )
    blur = torch.tensor([[1.0, 2, 1], [2, 4, 2], [1, 2, 1]], dtype=torch.float64) / 16
    expected = torch.cat(
        [F.conv2d(lum, k[None, None], padding=1) for k in (sobel, sobel.t(), blur)], 1
    )
    with torch.no_grad():
        assert torch.allclose(conv(x), expected, atol=1e-12)


def test_head_matrices_are_the_kernel_slices_and_plots_draw():
    conv = edge_blur_conv(torch.float64)
    mhsa = conv_to_mhsa(conv)
    mats = head_matrices(mhsa)
    for h, (a, b) in enumerate(kernel_shifts(3).tolist()):
        assert torch.allclose(
            mats[h], conv.weight[:, :, a + 1, b + 1].t(), atol=1e-14
        )  # (D_in, D_out)
    x = torch.rand(1, 3, 6, 7, dtype=torch.float64)
    with torch.no_grad():
        y, probs = mhsa(x, return_attention=True)
    fig = plot_heads_and_matrices(probs, (6, 7), (3, 3), mats)
    assert len(fig.axes) == 19  # 9 maps, 9 matrices, a colour bar
    bar = fig.axes[-1]
    assert (
        not bar.images and "W^{(h)}" in bar.get_ylabel()
    )  # the bar says what it reads
    # attention and weights in two colour maps: the weights' blue (negative) is never the
    # attention's dark (1)
    maps = {ax.images[0].get_cmap().name for ax in fig.axes[:-1] if ax.images}
    assert maps == {"Purples", "RdBu_r"}
    # one title a head, over its pair of panels; no two titles touch, nor a title a panel
    fig.canvas.draw()
    titles = [ax.title for ax in fig.axes if ax.get_title(loc="left")]
    assert len(titles) == 9
    boxes = [t.get_window_extent() for t in titles]
    panels = [ax.get_window_extent() for ax in fig.axes[:-1]]
    for i, a in enumerate(boxes):
        assert not any(a.overlaps(b) for b in boxes[i + 1 :] + panels)
    # a matrix's output ticks are named under the last row only, and only there marked
    matrices = [ax for ax in fig.axes[:-1] if ax.images and ax.get_yticks().size]
    for k, ax in enumerate(matrices):
        named = any(t.get_text() for t in ax.get_xticklabels())
        marked = ax.xaxis.get_major_ticks()[0].tick1line.get_markersize() > 0
        assert named == marked == (k >= 6), k
    plt.close(fig)
    fig = plot_outputs(x[0], conv(x)[0].detach(), y[0].detach(), (3, 3))
    assert len(fig.axes) == 9
    plt.close(fig)


def _coloured_cells(ax):
    from matplotlib.patches import Rectangle

    return {
        (round(p.get_y() + 0.5), round(p.get_x() + 0.5))
        for p in ax.patches
        if isinstance(p, Rectangle) and p.get_fill() and p.get_width() == 1
    }


def test_one_panel_shows_each_head_on_its_shift():
    from attnconv.chapters.lemma1_picture import plot_head_targets

    shape = (6, 7)
    layer = conv_to_mhsa(torch.nn.Conv2d(2, 3, 3, padding=1).double(), hard=True)
    _, probs = layer(
        torch.zeros(1, 2, *shape, dtype=torch.float64), return_attention=True
    )
    fig = plot_head_targets(probs, shape, [(2, 3), (0, 0)], key_padding=1)
    for ax, q in zip(fig.axes, [(2, 3), (0, 0)]):
        want = {(q[0] + 1 + a, q[1] + 1 + b) for a, b in kernel_shifts(3).tolist()}
        assert _coloured_cells(ax) == want  # padded coordinates: q + 1 + Δ_h
    plt.close(fig)


def test_opening_figure_heads_sit_on_the_kernel_taps():
    from attnconv.chapters.lemma1_picture import plot_kernel_as_heads

    fig = plot_kernel_as_heads(kernel_size=3, alpha=6.0, grid=7)
    heads = fig.axes[1:]
    assert len(heads) == 9
    for ax, (a, b) in zip(heads, kernel_shifts(3).tolist()):
        image = ax.images[0].get_array()
        r, c = divmod(int(image.argmax()), image.shape[1])
        assert (r, c) == (3 + a, 3 + b)
        assert float(image.max()) > 0.95
        # drawn on the 5×5 keys around the query: the kernel and one ring
        assert ax.get_xlim() == (0.5, 5.5) and ax.get_ylim() == (5.5, 0.5)
        ring = image[1:6, 1:6].sum()
        assert float(image.sum() - ring) < 0.01  # what the view leaves out
    # the weight on the taps said once, rounded down (oracle: each map read at its tap)
    low = min(
        float(ax.images[0].get_array()[3 + a, 3 + b])
        for ax, (a, b) in zip(heads, kernel_shifts(3).tolist())
    )
    (header,) = fig.texts
    assert header.get_text() == f"9 heads, each ≥ {int(100 * low) / 100:.2f} on its tap"
    # no two titles touch
    fig.canvas.draw()
    boxes = [t.get_window_extent() for t in [ax.title for ax in fig.axes] + [header]]
    for i, a in enumerate(boxes):
        assert not any(a.overlaps(b) for b in boxes[i + 1 :])
    plt.close(fig)
