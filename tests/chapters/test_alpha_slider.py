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
from attnconv.chapters.shared.plotly_style import FIGURE_WIDTH, figure_html
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
