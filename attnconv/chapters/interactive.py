"""The distance of one quadratic head of the explorer (:mod:`.explorer`) to the convolution it
approximates (:func:`one_tap_error`), shown by chapter 6's live head explorer
(:func:`attnconv.chapters.live_widgets.head_explorer_widget`) and asserted by its checks.
"""

from __future__ import annotations

import math

import torch

from .shared.head_state import HeadState, head_state_probabilities

__all__ = ["one_tap_error"]


def one_tap_error(state: HeadState) -> float:
    """How far the head of ``state`` is from the convolution it approximates at its query:
    ‖p − c‖₁, with p the head's attention probabilities over the key grid
    (:func:`~attnconv.chapters.explorer.head_state_probabilities`) and c the one-tap kernel of a
    convolution at the nearest integer shift round(Δ) (the head of Theorem 1 that this head
    approximates): 1 at the key q + round(Δ), 0 elsewhere, and all 0 when that key is off the grid
    (a zero-padded convolution reads 0 there).

    For inputs with |x_k| ≤ 1 this is the largest possible difference between the head's output
    Σ_k p_k x_k and the convolution's x_{q+round(Δ)}: 2·(off-target mass) on the grid, 1 when the
    target is off the grid. It is 0 exactly for a one-hot head (Lemma 1) and at most
    2·S(α)/(1 + S(α)) for an integer Δ (Lemma 2)."""
    p = head_state_probabilities(state)
    c = torch.zeros_like(p)
    t0 = state.query[0] + math.floor(state.delta[0] + 0.5)
    t1 = state.query[1] + math.floor(state.delta[1] + 0.5)
    if 0 <= t0 < state.grid[0] and 0 <= t1 < state.grid[1]:
        c[t0, t1] = 1.0
    return float((p - c).abs().sum())
