"""Tests of chapter 4's α slider (attnconv.chapters.alpha_slider): each frame's map against the
core quadratic encoding's softmax (QuadraticEncoding.position_scores over relative_shifts) and
against head_off_target_mass, Lemma 2's bounds, and the figure's frames, slider and size."""

import math

import numpy as np
import pytest
import torch

from attnconv import (
    QuadraticEncoding,
    kernel_shifts,
    off_target_mass_bound,
    relative_shifts,
)
from attnconv.chapters.alpha_slider import (
    SLIDER_ALPHAS,
    alpha_frames,
    alpha_slider_figure,
)
from attnconv.chapters.shared.plotly_style import (
    FIGURE_WIDTH,
    MIN_FONT_SIZE,
    NEUTRAL_COLOR,
    figure_html,
    small_text,
)
from attnconv.chapters.sweeps import head_off_target_mass, random_conv

SHAPE, QUERY, HEAD = (9, 9), (4, 4), 2


@pytest.fixture(scope="module")
def frames():
    conv = random_conv(3, 2, 2, generator=torch.Generator().manual_seed(5))
    return alpha_frames(conv, SLIDER_ALPHAS, SHAPE, QUERY, HEAD)


def test_frames_match_the_core_encoding(frames):
    center = kernel_shifts(3)[HEAD]
    delta = relative_shifts(SHAPE, padding=1)[QUERY[0] * SHAPE[1] + QUERY[1]]
    for f in frames:
        enc = QuadraticEncoding(1, 2, centers=[center.tolist()], alpha=f.alpha).double()
        with torch.no_grad():
            enc.alpha.fill_(f.alpha)
            p = torch.softmax(enc.position_scores(delta)[0], dim=-1).numpy()
        np.testing.assert_allclose(f.probs.ravel(), p, rtol=1e-9, atol=1e-200)
        assert f.probs[f.target] == pytest.approx(p.max(), rel=1e-12)
        core_mass = head_off_target_mass(
            f.alpha, SHAPE, QUERY, tuple(center.tolist()), padding=1
        )
        assert f.off_mass == pytest.approx(core_mass, rel=1e-9)


def test_frames_respect_lemma2(frames):
    assert [f.alpha for f in frames] == list(SLIDER_ALPHAS)
    for f in frames:
        assert f.bound == off_target_mass_bound(f.alpha)
        assert f.off_mass <= f.bound * (1 + 1e-9)
        assert f.largest_off <= math.exp(-f.alpha) * (1 + 1e-9)
    assert frames[-1].off_mass < 1e-16
    assert frames[0].probs[frames[0].target] < 0.05


def test_query_outside_grid_raises():
    conv = random_conv(3, 1, 1, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError):
        alpha_frames(conv, (1.0,), (3, 3), (3, 0), 0)


def test_figure(frames):
    fig = alpha_slider_figure(frames, QUERY, 1)
    assert fig.layout.width is None and fig.layout.autosize  # the column's width
    assert len(fig.frames) == len(SLIDER_ALPHAS)
    (slider,) = fig.layout.sliders
    assert [list(s.args[0]) for s in slider.steps] == [
        [str(i)] for i in range(len(frames))
    ]
    assert all("S(α)" in fr.layout.title.text for fr in fig.frames)
    html = figure_html(fig, "alpha-slider", alt="a <test> alt").data
    assert html.startswith(
        f'<div role="figure" aria-label="a &lt;test&gt; alt" class="book-plotly" '
        f'style="max-width:{FIGURE_WIDTH}px">'
    )
    assert figure_html(fig, "x").data.startswith('<div class="book-plotly"')


def _luminance(hex_colour: str) -> float:
    """WCAG 2 relative luminance of ``#rrggbb``."""
    rgb = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _contrast(a: str, b: str) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def test_figure_axes_and_bound_read_on_both_themes(frames):
    """Figure 4.2: the right panel's axes are titled and ticked at plain numbers (no "0.1 2 5 1 2
    5" log labels), their tick labels stand off the axes, its text is at least 12 px, and the
    bound is drawn in a colour that reads on the white page and on the dark theme's background
    (which plotly-dark.js paints)."""
    fig = alpha_slider_figure(frames, QUERY, 1)
    assert small_text(fig) == []
    assert fig.layout.xaxis2.title.text == "α"
    assert fig.layout.yaxis2.title.text == "off-target mass"
    x2 = fig.layout.xaxis2
    assert list(x2.tickvals) == [0.1, 1.0, 10.0] and list(x2.ticktext) == [
        "0.1",
        "1",
        "10",
    ]
    assert fig.layout.yaxis2.dtick == 3
    # "10⁻¹⁸" (lowest y label) and "0.1" (first x label) meet at the panel's lower-left corner:
    # both stand off their axes by 8 px (in a browser at 680 px they no longer touch)
    assert x2.ticklabelstandoff == fig.layout.yaxis2.ticklabelstandoff == 8
    (bound,) = [t for t in fig.data if t.name == "bound S(α)"]
    assert bound.line.color == NEUTRAL_COLOR
    for background in ("#ffffff", "#14181e"):  # the book's light and dark backgrounds
        assert _contrast(NEUTRAL_COLOR, background) >= 3.0, background
    assert _contrast("#000000", "#14181e") < 1.5  # why black would not do
    assert MIN_FONT_SIZE >= 12


def test_small_text_finds_small_fonts_and_automatic_log_ticks():
    import plotly.graph_objects as go

    fig = go.Figure(go.Scatter(x=[1, 10], y=[1, 2], textfont={"size": 9}))
    fig.update_layout(legend={"font": {"size": 10}}, xaxis={"type": "log"})
    found = small_text(fig)
    assert any(f.startswith("data[0].textfont.size: 9") for f in found)
    assert any(f.startswith("layout.legend.font.size: 10") for f in found)
    assert any(f.startswith("layout.xaxis: log axis") for f in found)
    fig.update_layout(
        legend={"font": {"size": 12}}, xaxis={"tickvals": [1, 10]}
    ).update_traces(textfont={"size": 13})
    assert small_text(fig) == []
