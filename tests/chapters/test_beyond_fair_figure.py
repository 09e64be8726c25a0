"""Figure 18.1 (the fair test): every arm is named on its panel's x axis, not by colour alone, and
the names fit their columns."""

from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from attnconv.chapters import beyond_fair as bf  # noqa: E402
from attnconv.chapters.shared.plotting import (  # noqa: E402
    BOOK_STYLE,
    COLUMN_INCHES,
)
from attnconv.evidence import beyond as fair  # noqa: E402


def test_fair_figure_names_the_arms_on_the_axis(monkeypatch):
    def summary(arm, size):
        i = fair.ARMS.index(arm)
        est = 0.4 + 0.02 * i + size / 1e5
        return SimpleNamespace(
            test=SimpleNamespace(estimate=est, lo=est - 0.02, hi=est + 0.02)
        )

    monkeypatch.setattr(fair, "arm_summary", summary)
    with plt.rc_context(BOOK_STYLE):
        fig = bf.plot_fair({"sizes": {str(s): {"test": 0.3} for s in fair.SIZES}})
        fig.canvas.draw()
    assert fig.get_figwidth() <= COLUMN_INCHES
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        labels = [t for t in ax.get_xticklabels() if t.get_text()]
        assert [t.get_text() for t in labels] == [bf.FAIR_TICKS[a] for a in fair.ARMS]
        assert all(t.get_fontsize() >= 8.5 for t in labels)
        boxes = [t.get_window_extent(renderer) for t in labels]
        # the names do not run into each other nor out of their panel
        for left, right in zip(boxes, boxes[1:]):
            assert left.x1 < right.x0
        panel = ax.get_window_extent(renderer)
        assert boxes[0].x0 >= panel.x0 - 2 and boxes[-1].x1 <= panel.x1 + 2
    # one y scale for both sizes, its tick labels shown on every panel
    limits = {ax.get_ylim() for ax in fig.axes}
    assert len(limits) == 1, limits
    for ax in fig.axes:
        assert any(t.get_visible() and t.get_text() for t in ax.get_yticklabels())
    plt.close(fig)
