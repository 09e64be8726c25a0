"""attnconv.chapters.shared.plotting: the figure-text measurement behind the book's readability check."""

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from attnconv.chapters.shared.plotting import (  # noqa: E402
    COLUMN_PX,
    figure_text_sizes,
    shown_text_px,
)


def render(fig):
    return lambda: fig.savefig(io.BytesIO(), format="png", dpi=fig.dpi)


def test_records_the_text_actually_drawn():
    fig, ax = plt.subplots(figsize=(4, 3), dpi=100)
    ax.set_xticks([0, 1], ["a", "b"], fontsize=6)
    ax.set_yticks([])
    ax.set_title("title", fontsize=11)
    hidden = ax.text(0.5, 0.5, "hidden", fontsize=3)
    hidden.set_visible(False)
    ax.text(0.5, 0.5, "   ", fontsize=2)  # blank: nothing drawn
    drawn, _ = figure_text_sizes(fig, render(fig))
    sizes = {text: pt for pt, text in drawn}
    assert sizes == {"a": 6.0, "b": 6.0, "title": 11.0}
    plt.close(fig)


def test_axis_off_draws_no_tick_labels():
    fig, ax = plt.subplots(dpi=100)
    ax.axis("off")
    ax.set_title("only this", fontsize=9)
    drawn, _ = figure_text_sizes(fig, render(fig))
    assert [t for _, t in drawn] == ["only this"]
    plt.close(fig)


def test_shown_size_shrinks_with_wide_figures():
    assert shown_text_px(7, 100, COLUMN_PX) == pytest.approx(7 * 100 / 72)
    assert shown_text_px(7, 100, 500) == pytest.approx(
        7 * 100 / 72
    )  # narrower than the column: as drawn
    assert shown_text_px(7, 100, 2 * COLUMN_PX) == pytest.approx(7 * 100 / 72 / 2)


def test_column_is_the_1280px_window_and_book_text_is_readable_in_it():
    """The column is the width of a notebook output at a 1280 px window (760 px, measured in
    Chromium on the built book; 784 px at 1400 px); the book's smallest text (8.5 pt) in a figure
    of the column's width is at least MIN_TEXT_PX (12 px) there, its axis labels (9 pt) 13.5 px,
    and a figure of the column's width, with the tenths of an inch a tight bounding box adds, is
    shown unshrunk. The same text at the old 100 dpi (11.8 px) and in a 7.8-in figure is not."""
    from attnconv.chapters.shared.plotting import (
        BOOK_STYLE,
        COLUMN_INCHES,
        FIGURE_DPI,
        MIN_TEXT_PX,
    )

    assert COLUMN_PX == 760
    dpi = BOOK_STYLE["figure.dpi"]
    assert dpi == FIGURE_DPI
    assert (COLUMN_INCHES + 0.2) * dpi <= COLUMN_PX
    assert BOOK_STYLE["figure.figsize"][0] == COLUMN_INCHES
    assert MIN_TEXT_PX == 12
    assert shown_text_px(8.5, dpi, COLUMN_INCHES * dpi) == pytest.approx(12.75)
    assert shown_text_px(BOOK_STYLE["axes.labelsize"], dpi, COLUMN_INCHES * dpi) >= 13.5
    assert shown_text_px(8.5, 100, COLUMN_INCHES * 100) < MIN_TEXT_PX
    assert shown_text_px(8.5, dpi, 7.8 * dpi) < MIN_TEXT_PX
    assert (
        shown_text_px(7.5, dpi, 300) < MIN_TEXT_PX
    )  # 7.5-pt text is too small at any width


def test_figure_check_reads_the_retina_png_at_its_css_width(capsys):
    """In a notebook the figures are retina PNGs (twice the pixels, the CSS width in the
    metadata); the check measures text at that CSS width and reports small text on stderr."""
    pytest.importorskip("matplotlib_inline")
    from IPython.core.interactiveshell import InteractiveShell
    from matplotlib.figure import Figure

    from attnconv.chapters.shared import plotting

    ip = InteractiveShell.instance()
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("retina")
        plotting.install_figure_check()
        formatter = ip.display_formatter.formatters["image/png"]
        for width, size, small in (
            (6.5, 8.5, False),
            (10.0, 8.5, True),
            (5, 7.5, True),
        ):
            fig = Figure(figsize=(width, 2), dpi=plotting.FIGURE_DPI)
            ax = fig.add_subplot()
            ax.plot([0, 1], [0, 1])
            ax.set_title("title", fontsize=size)
            ax.tick_params(labelsize=size)
            data, meta = formatter(fig)
            assert plotting._png_width(data) == pytest.approx(2 * meta["width"], abs=1)
            err = capsys.readouterr().err
            assert ("figure text" in err) == small, (width, size, err)
    finally:
        InteractiveShell.clear_instance()


def test_one_colour_per_model_across_the_book():
    from attnconv.chapters.shared.plotting import MODEL_COLOURS, model_colour
    from attnconv.experiments.models import MODEL_NAMES

    for name in MODEL_NAMES:  # every registered model has its colour
        assert model_colour(name) == MODEL_COLOURS[name]
    assert len(set(MODEL_COLOURS.values())) == len(MODEL_COLOURS)
    assert model_colour("GPSA, default start") == MODEL_COLOURS["gpsa"]
    assert model_colour("random") == MODEL_COLOURS["gpsa"]
    assert model_colour("plain ViT (MHSA)") == MODEL_COLOURS["vit"]
    assert model_colour("quadratic, 16 heads") == MODEL_COLOURS["quadratic-16heads"]
    assert model_colour("ResNet18") == MODEL_COLOURS["resnet18"]
    with pytest.raises(ValueError, match="no book colour"):
        model_colour("transformer-xl")


def test_implementations_and_models_never_share_a_colour():
    from attnconv.chapters.shared.plotting import IMPLEMENTATION_COLOURS, MODEL_COLOURS

    shared = set(IMPLEMENTATION_COLOURS.values()) & set(MODEL_COLOURS.values())
    assert not shared, shared
    assert len(set(IMPLEMENTATION_COLOURS.values())) == len(IMPLEMENTATION_COLOURS)


def test_book_style_text_is_at_least_8_5_points():
    from attnconv.chapters.shared.plotting import BOOK_STYLE

    sizes = [v for k, v in BOOK_STYLE.items() if k.endswith(("size", "fontsize"))]
    sizes = [v for v in sizes if isinstance(v, (int, float))]
    assert sizes and min(sizes) >= 8.5


def test_label_colour_reads_the_chapters_labels():
    from attnconv.chapters.beyond import LABELS
    from attnconv.chapters.shared.plotting import MODEL_COLOURS, label_colour

    assert label_colour("SA quadratic") == MODEL_COLOURS["quadratic"]
    assert (
        label_colour("learned + content (8 epochs)") == MODEL_COLOURS["learned_content"]
    )
    assert (
        label_colour("learned, position only (16 epochs)") == MODEL_COLOURS["learned"]
    )
    assert (
        label_colour("quadratic, 16 heads, seed 2")
        == MODEL_COLOURS["quadratic-16heads"]
    )
    assert label_colour(LABELS["mimetic_vo"]) == MODEL_COLOURS["mimetic_vo"]
    assert label_colour(LABELS["mimetic_qk"]) == MODEL_COLOURS["mimetic_qk"]
    assert label_colour("a model the book does not draw") is None


def test_figures_draw_each_model_in_its_book_colour():
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.colors import to_hex

    from attnconv.chapters import beyond
    from attnconv.chapters.shared.depth_measures import plot_accuracy_series
    from attnconv.chapters.shared.plotting import MODEL_COLOURS, model_colour
    from attnconv.experiments.verdicts import spread

    for start in beyond.LABELS:
        assert beyond.COLOURS[start] == model_colour(beyond.LABELS[start])
    fig = plot_accuracy_series({"6 layers": (spread([0.5, 0.6]), spread([0.55, 0.62]))})
    drawn = {to_hex(line.get_color()) for line in fig.axes[0].lines}
    assert drawn == {MODEL_COLOURS["quadratic"], MODEL_COLOURS["learned"]}
    # Figure 12.5 fills the column, its legend right of the axes, off the data
    from attnconv.chapters.shared.plotting import COLUMN_INCHES

    assert abs(fig.get_figwidth() - COLUMN_INCHES) < 1e-9
    fig.canvas.draw()
    legend = fig.axes[0].get_legend().get_window_extent()
    assert legend.x0 >= fig.axes[0].get_window_extent().x1


def test_seed_colours_keep_the_models_hue_and_step_in_lightness():
    """Several seeds of one model: one hue (the model's), lightness rising evenly from the first
    seed, every shade distinct; one seed keeps the model's colour."""
    import colorsys

    from matplotlib.colors import to_rgb

    from attnconv.chapters.shared.plotting import (
        SEED_LIGHTNESS,
        model_colour,
        seed_colours,
    )

    assert seed_colours("quadratic", 1) == [model_colour("quadratic")]
    for name in ("quadratic", "learned", "generalized"):
        hue = colorsys.rgb_to_hls(*to_rgb(model_colour(name)))[0]
        shades = [colorsys.rgb_to_hls(*to_rgb(c)) for c in seed_colours(name, 3)]
        assert all(abs(h - hue) < 0.01 for h, _, _ in shades)
        light = [lightness for _, lightness, _ in shades]
        assert light[0] == pytest.approx(SEED_LIGHTNESS[0], abs=0.01)
        assert light[-1] == pytest.approx(SEED_LIGHTNESS[1], abs=0.01)
        assert light[1] - light[0] > 0.15 and light[2] - light[1] > 0.15
    with pytest.raises(ValueError):
        seed_colours("quadratic", 0)


def test_depth_figure_draws_seeds_in_shades_and_the_16_head_model_apart():
    """Fig. 12.1: the quadratic seeds in three shades of the quadratic colour, each with its own
    marker; the 16-head model in its own colour, dashed, with a marker no seed uses."""
    from matplotlib.colors import to_hex

    from attnconv.chapters.shared.depth_measures import plot_depth_measures
    from attnconv.chapters.shared.plotting import model_colour, seed_colours

    def rows(d):
        return [
            dict(
                layer=i,
                attention_distance=d + i,
                localized=1,
                overlapping_pairs=2,
                pairs=36,
                heads=9,
            )
            for i in range(6)
        ]

    drawn = {f"quadratic, seed {s}": rows(s) for s in range(3)}
    drawn["quadratic, 16 heads"] = rows(5)
    drawn["learned"] = rows(7)
    fig = plot_depth_measures(drawn, {f"seed {s}": [1] * 6 for s in range(3)})
    lines = {line.get_label(): line for line in fig.axes[0].lines}
    shades = seed_colours("quadratic", 3)
    markers = set()
    for s in range(3):
        line = lines[f"quadratic, seed {s}"]
        assert to_hex(line.get_color()) == shades[s]
        markers.add(line.get_marker())
    assert len(markers) == 3
    wide = lines["quadratic, 16 heads"]
    assert to_hex(wide.get_color()) == model_colour("quadratic, 16 heads")
    assert wide.get_linestyle() == "--" and wide.get_marker() not in markers
    assert to_hex(lines["learned, seed 0"].get_color()) == seed_colours("learned", 3)[0]
    # the middle panel: a share of each layer's heads, the learned seeds' counts too
    middle = {ln.get_label(): list(ln.get_ydata()) for ln in fig.axes[1].lines}
    assert middle["learned, seed 1 (middle)"] == [100 / 9] * 6
    # the legend: one entry per model and one for the seeds' markers, not one per run
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == [
        "quadratic (3 seeds)",
        "quadratic, 16 heads",
        "learned (3 seeds)",
        "seeds 0, 1, 2",
    ]
    plt.close(fig)


def test_gpsa_and_impulse_colours_differ_in_lightness():
    """Fig. 18.2 draws the GPSA default start (pink) beside the impulse start (red): the two differ
    in lightness as well as hue, by at least 0.25 (HLS)."""
    import colorsys

    from matplotlib.colors import to_rgb

    from attnconv.chapters.shared.plotting import model_colour

    light = [
        colorsys.rgb_to_hls(*to_rgb(model_colour(m)))[1] for m in ("gpsa", "impulse")
    ]
    assert abs(light[0] - light[1]) >= 0.25


def test_the_dtype_pair_stays_apart_for_red_green_colour_blind_readers():
    """float32 and float64 (ch. 4) stay far apart in CIELAB (ΔE76 > 40) after a deuteranope and a
    protanope simulation (Viénot, Brettel & Mollon 1999, on linear sRGB), where the red-green
    pair the figures used before falls below it; and they share no colour with a model or an
    implementation."""
    import numpy as np
    from matplotlib.colors import to_rgb

    from attnconv.chapters.shared.plotting import (
        DTYPE_COLOURS,
        IMPLEMENTATION_COLOURS,
        MODEL_COLOURS,
    )

    xyz = np.array(
        [[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]
    )
    simulations = [
        [[0.29275, 0.70725, 0.0], [0.29275, 0.70725, 0.0], [-0.02234, 0.02234, 1.0]],
        [[0.11238, 0.88762, 0.0], [0.11238, 0.88762, 0.0], [0.00401, -0.00401, 1.0]],
    ]

    def lab(colour, sim):
        c = np.array(to_rgb(colour))
        rgb = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
        t = xyz @ (np.array(sim) @ rgb) / (xyz @ np.ones(3))
        f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
        return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])

    def delta_e(a, b, sim):
        return float(np.linalg.norm(lab(a, sim) - lab(b, sim)))

    for sim in simulations:
        pair = delta_e(DTYPE_COLOURS["float32"], DTYPE_COLOURS["float64"], sim)
        assert pair > 40, pair
    assert min(delta_e("tab:red", "tab:green", sim) for sim in simulations) < 40
    used = set(MODEL_COLOURS.values()) | set(IMPLEMENTATION_COLOURS.values())
    assert not set(DTYPE_COLOURS.values()) & used
