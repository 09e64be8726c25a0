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


def test_one_colour_per_model_across_the_book():
    from attnconv.chapters.shared.plotting import MODEL_COLOURS, model_colour
    from attnconv.experiments.models import MODEL_NAMES

    for name in MODEL_NAMES:  # every registered model has its colour
        assert model_colour(name) == MODEL_COLOURS[name]
    distinct = {k: v for k, v in MODEL_COLOURS.items() if k != "vit"}
    assert len(set(distinct.values())) == len(distinct)
    assert model_colour("quadratic, 16 heads") == MODEL_COLOURS["quadratic-16heads"]
    assert model_colour("ResNet18") == MODEL_COLOURS["resnet18"]
    with pytest.raises(ValueError, match="no book colour"):
        model_colour("transformer-xl")


def test_book_style_text_is_at_least_8_5_points():
    from attnconv.chapters.shared.plotting import BOOK_STYLE

    sizes = [v for k, v in BOOK_STYLE.items() if k.endswith(("size", "fontsize"))]
    sizes = [v for v in sizes if isinstance(v, (int, float))]
    assert sizes and min(sizes) >= 8.5
