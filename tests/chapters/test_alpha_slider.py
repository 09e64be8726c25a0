"""Tests of chapter 4's α slider (attnconv.chapters.alpha_slider): each frame's map against the
core quadratic encoding's softmax (QuadraticEncoding.position_scores over relative_shifts) and
against head_off_target_mass, Lemma 2's bounds, and Figure 4.2's in-page head against them."""

import json
import math
import re
from html import unescape

import numpy as np
import pytest
import torch

from attnconv import (
    QuadraticEncoding,
    kernel_shifts,
    off_target_mass_bound,
    relative_shifts,
)
from attnconv.chapters.alpha_slider import SLIDER_ALPHAS, alpha_frames
from attnconv.chapters.live_figures import lemma2_alpha_widget, lemma2_start
from attnconv.chapters.live_widgets import head_weights
from attnconv.chapters.shared.plotly_style import small_text
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


def test_the_page_computes_the_layers_head(frames):
    """Figure 4.2 computes the head in the page as the softmax of −α‖δ − Δ‖² over the padded keys
    (the formula of :func:`head_weights`, which its script repeats): at every α it is the head
    ``conv_to_mhsa`` makes, and the widget starts on the layer's numbers."""
    shift = tuple(kernel_shifts(3)[HEAD].tolist())
    padded = (QUERY[0] + 1, QUERY[1] + 1)
    for f in frames:
        page = head_weights(f.alpha, shift, padded, f.probs.shape)
        np.testing.assert_allclose(page, f.probs, rtol=1e-12, atol=1e-250)  # subnormals
        start = lemma2_start(f.alpha, shift, padded, f.probs.shape)
        assert start["target_weight"] == pytest.approx(f.probs[f.target], rel=1e-12)
        assert start["off_mass"] == pytest.approx(f.off_mass, rel=1e-9)
        assert start["bound"] == f.bound
    html = lemma2_alpha_widget(1.0, shift, SHAPE, QUERY, alt="a <test> alt").data
    initial = json.loads(unescape(re.search(r"data-initial='([^']*)'", html)[1]))
    (f1,) = [f for f in frames if f.alpha == 1.0]
    assert initial["grid"] == [11, 11] and initial["query"] == list(padded)
    assert initial["target_weight"] == pytest.approx(f1.probs[f1.target], rel=1e-12)
    assert 'aria-label="a &lt;test&gt; alt"' in html


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"alpha": 50.0}, "outside the slider's range"),
        ({"alpha": 1.234}, "not on the slider's steps"),
        ({"query": (9, 0)}, "outside the 9×9 image"),
        ({"delta": (2, 0)}, "not a shift of a 3×3 kernel"),
    ],
)
def test_the_widget_refuses_what_it_cannot_draw(kwargs, message):
    with pytest.raises(ValueError, match=message):
        lemma2_alpha_widget(**kwargs)


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
