import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attnconv import (
    MultiHeadSelfAttention1d,
    MultiHeadSelfAttention2d,
    check_supported_conv,
    conv1d_to_mhsa,
    conv_to_mhsa,
    head_weights_from_kernel,
    max_relative_error,
    one_hot_alpha,
)

TOL = {torch.float32: 1e-5, torch.float64: 1e-12}


def random_case(seed, dtype, spatial_dims=2):
    """A convolution and an input whose sizes and values are drawn from the seed, not chosen."""
    g = torch.Generator().manual_seed(seed)
    k = int(torch.randint(0, 3, (1,), generator=g)) * 2 + 1
    d_in, d_out = (int(v) for v in torch.randint(1, 9, (2,), generator=g))
    bias = bool(torch.randint(0, 2, (1,), generator=g))
    size = [int(v) for v in torch.randint(1, 11, (spatial_dims,), generator=g)]
    batch = int(torch.randint(1, 4, (1,), generator=g))
    cls = nn.Conv2d if spatial_dims == 2 else nn.Conv1d
    torch.manual_seed(seed)
    conv = cls(d_in, d_out, k, padding="same" if seed % 2 else k // 2, bias=bias).to(
        dtype
    )
    x = torch.randn(batch, d_in, *size, generator=g, dtype=dtype) * 3
    return conv, x


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("seed", range(12))
def test_conv_to_mhsa_equals_conv2d_on_random_cases(seed, dtype):
    conv, x = random_case(seed, dtype)
    mhsa = conv_to_mhsa(conv)
    assert isinstance(mhsa, MultiHeadSelfAttention2d)
    k = conv.kernel_size[0]
    expected = F.conv2d(x, conv.weight, conv.bias, padding=k // 2)
    with torch.no_grad():
        assert max_relative_error(mhsa(x), expected) < TOL[dtype]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("seed", range(6))
def test_conv1d_to_mhsa_equals_conv1d(seed, dtype):
    conv, x = random_case(seed, dtype, spatial_dims=1)
    mhsa = conv1d_to_mhsa(conv)
    assert isinstance(mhsa, MultiHeadSelfAttention1d) and mhsa.encoding.dim == 2
    expected = F.conv1d(x, conv.weight, conv.bias, padding=conv.kernel_size[0] // 2)
    with torch.no_grad():
        assert max_relative_error(mhsa(x), expected) < TOL[dtype]


def test_border_is_exact_and_needs_padding():
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 4, 3, padding=1).double()
    x = torch.randn(2, 3, 6, 7, dtype=torch.float64)
    mhsa = conv_to_mhsa(conv)
    assert mhsa.key_padding == 1 and mhsa.num_heads == 9
    err = (mhsa(x) - conv(x)).abs()
    assert err[..., 0, :].max() < 1e-12 and err[..., :, -1].max() < 1e-12


def test_hard_attention_lemma1_and_default_alpha():
    torch.manual_seed(0)
    conv = nn.Conv2d(5, 3, 5, padding=2).double()
    x = torch.randn(2, 5, 7, 4, dtype=torch.float64)
    assert max_relative_error(conv_to_mhsa(conv, hard=True)(x), conv(x)) < 1e-13
    assert conv_to_mhsa(conv).encoding.alpha[0].item() == pytest.approx(
        one_hot_alpha(torch.float64)
    )
    assert conv_to_mhsa(conv.float()).encoding.alpha[0].item() == pytest.approx(
        one_hot_alpha(torch.float32)
    )


def test_small_alpha_is_not_exact():
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 3, 3, padding=1).double()
    x = torch.randn(1, 3, 6, 6, dtype=torch.float64)
    assert max_relative_error(conv_to_mhsa(conv, alpha=1.0)(x), conv(x)) > 1e-2


def test_head_weights_factor_the_kernel_slice():
    torch.manual_seed(0)
    for d_out, d_in in [(3, 5), (5, 3), (4, 4)]:
        w = torch.randn(d_out, d_in, dtype=torch.float64)
        w_out, w_val = head_weights_from_kernel(w, min(d_in, d_out))
        assert torch.allclose(w_out @ w_val, w, atol=1e-14)
    # D_h below the rank: best rank-r approximation (Eckart–Young)
    w = torch.randn(6, 6, dtype=torch.float64)
    s = torch.linalg.svdvals(w)
    for r in range(1, 6):
        w_out, w_val = head_weights_from_kernel(w, r)
        assert torch.linalg.matrix_rank(w_out @ w_val) == r
        assert torch.isclose(
            torch.linalg.norm(w - w_out @ w_val), s[r:].norm(), atol=1e-10
        )


def test_low_rank_heads_cannot_express_the_convolution():
    torch.manual_seed(0)
    conv = nn.Conv2d(6, 6, 3, padding=1).double()
    x = torch.randn(1, 6, 5, 5, dtype=torch.float64)
    errors = [
        max_relative_error(conv_to_mhsa(conv, head_dim=r)(x), conv(x))
        for r in range(1, 7)
    ]
    assert all(a > b for a, b in zip(errors, errors[1:]))
    assert errors[-2] > 1e-3 and errors[-1] < 1e-12


@pytest.mark.parametrize(
    "conv,needle",
    [
        (nn.Conv2d(3, 3, (3, 5), padding=(1, 2)), "non-square"),
        (nn.Conv2d(3, 3, 4, padding="same"), "even kernel"),
        (nn.Conv2d(3, 3, 3, stride=2, padding=1), "stride"),
        (nn.Conv2d(3, 3, 3, dilation=2, padding=2), "dilation"),
        (nn.Conv2d(4, 4, 3, groups=2, padding=1), "groups"),
        (nn.Conv2d(3, 3, 3), "padding"),
        (nn.Conv2d(3, 3, 3, padding="valid"), "padding"),
        (nn.Conv2d(3, 3, 3, padding=1, padding_mode="reflect"), "padding_mode"),
        (nn.Conv2d(3, 3, 3, padding=1, padding_mode="circular"), "padding_mode"),
        (nn.ConvTranspose2d(3, 3, 3, padding=1), "Conv2d"),
        (nn.Conv1d(3, 3, 3, padding=1), "Conv2d"),
        (nn.Linear(3, 3), "Conv2d"),
    ],
)
def test_unsupported_convolutions_raise_value_error(conv, needle):
    with pytest.raises(ValueError, match=needle):
        conv_to_mhsa(conv)


def test_unsupported_conv1d_raises():
    with pytest.raises(ValueError, match="stride"):
        conv1d_to_mhsa(nn.Conv1d(2, 2, 3, stride=2, padding=1))
    with pytest.raises(ValueError, match="Conv1d"):
        conv1d_to_mhsa(nn.Conv2d(2, 2, 3, padding=1))
    assert check_supported_conv(nn.Conv1d(2, 2, 5, padding="same"), spatial_dims=1) == 5
