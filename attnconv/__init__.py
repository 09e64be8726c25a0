"""attnconv: the executable companion of *On the Relationship between Self-Attention and
Convolutional Layers* (Cordonnier, Loukas, Jaggi, ICLR 2020)."""
from .core.attention import (
    MultiHeadSelfAttention,
    MultiHeadSelfAttention1d,
    MultiHeadSelfAttention2d,
    ScoreTerms,
)
from .core.softmax import softmax_without_denormals
from .core.bounds import off_target_mass_bound, one_hot_alpha, unit_roundoff
from .core.conv import check_supported_conv, conv1d_to_mhsa, conv_to_mhsa, head_weights_from_kernel
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
from .chapters.plotting import attention_map, plot_attention_heads, plot_error_map

__version__ = "0.1.0"
