"""The border proposition of ch. 3: with keys on the image only, the quadratic layer of Theorem 1
tends, as α → ∞, to the K×K convolution with replicate (edge) padding, exactly, at every pixel;
against zero padding it stays wrong on the border however large α is."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attnconv import max_relative_error, one_hot_alpha
from attnconv.chapters.sweeps import random_conv, reference_conv, unpadded_mhsa
from attnconv.core.bounds import off_target_mass_bound
from attnconv.core.conv import conv2d_replicate_padding

SHAPES = [(1, 1), (2, 3), (3, 4), (6, 6), (5, 9), (12, 7)]


def gen(seed):
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("k", [1, 3, 5, 7])
@pytest.mark.parametrize("shape", SHAPES)
def test_conv2d_replicate_padding_matches_nn_conv2d_replicate(k, shape):
    """The limit function against an independent oracle: nn.Conv2d's own replicate padding."""
    conv = random_conv(k, 3, 4, bias=True, generator=gen(k))
    x = torch.randn(2, 3, *shape, generator=gen(100 + k), dtype=torch.float64)
    oracle = nn.Conv2d(3, 4, k, padding=k // 2, padding_mode="replicate").double()
    oracle.load_state_dict(conv.state_dict())
    with torch.no_grad():
        assert torch.allclose(
            conv2d_replicate_padding(conv, x), oracle(x), rtol=0, atol=1e-12
        )


def test_conv2d_replicate_padding_refuses_what_theorem_1_does_not_cover():
    with pytest.raises(ValueError, match="stride"):
        conv2d_replicate_padding(
            nn.Conv2d(2, 2, 3, stride=2, padding=1), torch.ones(1, 2, 4, 4)
        )


@pytest.mark.parametrize("k", [3, 5])
@pytest.mark.parametrize("shape", SHAPES[1:])
def test_unpadded_quadratic_layer_is_the_replicate_padded_convolution(k, shape):
    conv = random_conv(k, 4, 6, bias=True, generator=gen(7 * k))
    x = torch.randn(2, 4, *shape, generator=gen(11 * k + shape[0]), dtype=torch.float64)
    replicate = F.conv2d(
        F.pad(x, (k // 2,) * 4, mode="replicate"), conv.weight, conv.bias
    )
    with torch.no_grad():
        y = unpadded_mhsa(conv, alpha=one_hot_alpha(torch.float64), hard=False)(x)
    assert max_relative_error(y, replicate) < 1e-14
    # zero padding differs on the border by the order of the signal
    assert max_relative_error(y, reference_conv(conv, x)) > 0.1


@pytest.mark.parametrize("alpha", [3.0, 6.0, 12.0, 24.0])
def test_the_error_falls_with_the_off_target_mass(alpha):
    """Towards the limit, not just at it: the error to replicate padding is of the order of
    S(α) ≈ 4e^{−α} (within a factor of K² for the K² heads), while to zero padding it does not fall."""
    conv = random_conv(3, 3, 5, bias=True, generator=gen(3))
    x = torch.randn(1, 3, 7, 8, generator=gen(4), dtype=torch.float64)
    with torch.no_grad():
        y = unpadded_mhsa(conv, alpha=alpha, hard=False)(x)
    err = max_relative_error(y, conv2d_replicate_padding(conv, x))
    s = off_target_mass_bound(alpha)
    assert s / 100 < err < 9 * 2 * s
    assert max_relative_error(y, reference_conv(conv, x)) > 0.1


def test_every_head_attends_the_clamped_target():
    """The proof's step: each head's most attended key is clamp(q + Δ_h) onto the image."""
    shape, k = (4, 5), 5
    conv = random_conv(k, 2, 2, generator=gen(5))
    layer = unpadded_mhsa(conv, alpha=10.0, hard=False)
    with torch.no_grad():
        _, probs = layer(
            torch.zeros(1, 2, *shape, dtype=torch.float64), return_attention=True
        )
    shifts = layer.encoding.centers.round().long().tolist()
    h, w = shape
    for head, (d1, d2) in enumerate(shifts):
        for i in range(h):
            for j in range(w):
                ci, cj = min(max(i + d1, 0), h - 1), min(max(j + d2, 0), w - 1)
                p = probs[0, head, i * w + j]
                assert int(p.argmax()) == ci * w + cj
                assert float(p[ci * w + cj]) > 1 - off_target_mass_bound(10.0)
