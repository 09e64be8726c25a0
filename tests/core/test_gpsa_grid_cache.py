"""GatedPositionalSelfAttention caches its positional features r_δ by the grid's shape: two grids
with the same number of tokens (2×8 and 4×4) have different shifts."""

import torch

from attnconv.core.gpsa import GatedPositionalSelfAttention


def _layer(seed=0):
    torch.manual_seed(seed)
    layer = GatedPositionalSelfAttention(12, 3).double().eval()
    with torch.no_grad():
        layer.gating_param.normal_(0.0, 2.0)
        layer.pos_proj.weight.normal_(0.0, 0.5)
    return layer


def test_a_2x8_grid_then_a_4x4_grid_equal_fresh_computations():
    x = torch.randn(
        2, 16, 12, generator=torch.Generator().manual_seed(1), dtype=torch.float64
    )
    reused = _layer()
    with torch.no_grad():
        wide = reused(x, (2, 8))
        square = reused(x, (4, 4))
        wide_again = reused(x, (2, 8))
        fresh_wide, fresh_square = _layer()(x, (2, 8)), _layer()(x, (4, 4))
    assert torch.equal(wide, fresh_wide) and torch.equal(wide_again, fresh_wide)
    assert torch.equal(square, fresh_square)
    assert (fresh_wide - fresh_square).abs().max() > 1e-3  # the grids do differ
