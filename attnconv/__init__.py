"""attnconv: the executable companion of *On the Relationship between Self-Attention and
Convolutional Layers* (Cordonnier, Loukas, Jaggi, ICLR 2020)."""

from .core.attention import (
    MultiHeadSelfAttention,
    MultiHeadSelfAttention1d,
    MultiHeadSelfAttention2d,
    ScoreTerms,
)
from .core.bounds import off_target_mass_bound, one_hot_alpha, unit_roundoff
from .core.conv import (
    check_supported_conv,
    conv1d_to_mhsa,
    conv_to_mhsa,
    head_weights_from_kernel,
)
from .core.encodings import (
    AbsoluteEncoding,
    GeneralizedQuadraticEncoding,
    HardShiftEncoding,
    LearnedRelativeEncoding,
    QuadraticEncoding,
    RelativeEncoding,
    kernel_shifts,
)
from .core.grid import grid_coordinates, relative_shifts
from .core.metrics import max_relative_error, relative_frobenius_error
from .core.softmax import softmax_without_denormals

__version__ = "0.1.0"

#: Plotting helpers of the book layer, offered here too; loaded on first use, so that
#: ``import attnconv`` loads neither matplotlib nor :mod:`attnconv.chapters`.
_PLOTTING = ("attention_map", "plot_attention_heads", "plot_error_map")


def __getattr__(name):
    if name in _PLOTTING:
        from .chapters.shared import plotting

        return getattr(plotting, name)
    raise AttributeError(f"module 'attnconv' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_PLOTTING))
