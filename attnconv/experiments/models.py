"""The paper's CIFAR-10 models (Sec. 4; v1 Fig. 5 = ICLR Table 1) at the settings of the authors' code.

Self-attention classifier (:class:`SelfAttentionClassifier`):

* 2×2 space-to-depth ("invertible down-sampling"): token (I, J) holds the pixels of rows 2I, 2I+1
  and columns 2J, 2J+1, channel index (dh·f + dw)·C + c; 16×16 tokens of 12 channels, then a
  Linear(12 → 400). No input positional encoding.
* 6 post-LN BERT layers: x = LN(x + Dropout(Linear(MHSA(x)))), x = LN(x + Dropout(Linear(GELU(Linear(x))))),
  LayerNorm eps 1e-12, dropout 0.1 on hidden states and on attention probabilities.
* MHSA without value projection (the position-only models of Sec. 4): each of the 9 heads averages
  the raw 400-dim hidden states with its attention probabilities, the 9 results (3600) go through
  one Linear(3600 → 400) — eq. (4) with W_val^h W_out^h merged.
* Encodings: quadratic (Lemma 2 / eq. 9, Σ⁻¹ = s²·I), generalized quadratic (eq. 16, Σ⁻¹ = M Mᵀ),
  learned relative (Sec. 4.3), optionally with the content term q·k/√400 (eq. 8).
* Mean pooling of the tokens, Linear(400 → 10).

ResNet18 (:class:`ResNet`): the CIFAR variant (3×3 stride-1 stem, no max-pool).

Parameter counts at paper size (tested exactly): quadratic 12,086,844; generalized 12,087,006;
learned 12,278,682; generalized with 15 heads pruned 9,686,916; ResNet18 11,173,962.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Callable, Dict, List, Mapping, Optional, Tuple, Union

import torch
import torch.nn.functional as F
from torch import nn

from ..core.attention import MultiHeadSelfAttention2d, ScoreTerms
from ..core.encodings import (
    GeneralizedQuadraticEncoding,
    LearnedRelativeEncoding,
    QuadraticEncoding,
)
from ..core.grid import relative_shifts
from .gpsa_models import GPSAClassifier, GPSAConfig
from .paper_numbers import PAPER_PARAMETERS

__all__ = [
    "PAPER_MODELS",
    "ModelKind",
    "MODEL_KINDS",
    "register_model_kind",
    "MODEL_NAMES",
    "ENCODINGS",
    "register_encoding",
    "unregister_encoding",
    "GAUSSIAN_MODELS",
    "SelfAttentionConfig",
    "ResNetConfig",
    "space_to_depth",
    "depth_to_space",
    "SelfAttentionLayer",
    "SelfAttentionClassifier",
    "BasicBlock",
    "ResNet",
    "paper_model_config",
    "build_model",
    "model_config_to_dict",
    "model_config_from_dict",
    "count_parameters",
    "parameter_count_table",
]

#: The paper's models (Sec. 4, Table 1), in the order the book lists them.
PAPER_MODELS = ("quadratic", "generalized", "learned", "learned_content", "resnet18")
#: The models whose heads are Gaussians (quadratic encodings): the ones local attention
#: (:mod:`attnconv.core.local`) can run.
GAUSSIAN_MODELS = ("quadratic", "generalized")


# --------------------------------------------------------------------------- configs
@dataclass
class SelfAttentionConfig:
    """A self-attention classifier; the defaults are the paper's (Sec. 4, authors' code)."""

    encoding: str = "quadratic"  # "quadratic" | "generalized" | "learned"
    content: bool = False  # add the content-content term q·k/√D_h of eq. (8)
    hidden_size: int = 400
    intermediate_size: int = 512
    num_layers: int = 6
    num_heads: int = 9
    downsample: int = 2  # space-to-depth factor: 2 → 16×16 tokens, 4 → 8×8 tokens
    image_size: int = 32
    in_channels: int = 3
    num_classes: int = 10
    hidden_dropout: float = 0.1
    attention_dropout: float = 0.1
    layer_norm_eps: float = 1e-12
    center_init_std: float = 2.0  # Δ ~ N(0, 2²) per coordinate
    spread_init_std: float = 0.01  # s = 1 + N(0, 0.01²); M = I + N(0, 0.01²) per entry
    learned_max_shift: Optional[int] = (
        None  # default: tokens per side − 1 (15 at paper size)
    )
    qk_bias: bool = True  # biases of the query/key Linear(400 → 3600) when ``content``
    attention_implementation: str = (
        "dense"  # or "local" (Gaussian position-only heads, attnconv.core.local)
    )

    def __post_init__(self):
        if self.encoding not in ENCODINGS:
            raise ValueError(
                f"encoding must be one of {tuple(ENCODINGS)}, got {self.encoding!r}"
            )
        for name in (
            "hidden_size",
            "intermediate_size",
            "num_layers",
            "num_heads",
            "downsample",
            "num_classes",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.image_size % self.downsample:
            raise ValueError(
                f"image_size {self.image_size} is not divisible by downsample {self.downsample}"
            )
        for name in ("hidden_dropout", "attention_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in [0, 1)")
        if (
            self.learned_max_shift is not None
            and self.learned_max_shift < self.tokens_per_side - 1
        ):
            raise ValueError(
                f"learned_max_shift must be >= {self.tokens_per_side - 1} for a {self.grid} grid"
            )

    @property
    def tokens_per_side(self) -> int:
        return self.image_size // self.downsample

    @property
    def grid(self) -> Tuple[int, int]:
        return (self.tokens_per_side, self.tokens_per_side)

    @property
    def num_tokens(self) -> int:
        return self.tokens_per_side**2

    @property
    def token_channels(self) -> int:
        return self.in_channels * self.downsample**2

    @property
    def max_shift(self) -> int:
        return (
            self.tokens_per_side - 1
            if self.learned_max_shift is None
            else self.learned_max_shift
        )


@dataclass
class ResNetConfig:
    """ResNet18 for CIFAR (He et al. 2015 in the paper's references, the 'kuangliu' variant used by the authors)."""

    num_blocks: Tuple[int, ...] = (2, 2, 2, 2)
    widths: Tuple[int, ...] = (64, 128, 256, 512)
    num_classes: int = 10
    in_channels: int = 3

    def __post_init__(self):
        self.num_blocks, self.widths = tuple(self.num_blocks), tuple(self.widths)
        if len(self.num_blocks) != len(self.widths) or not self.widths:
            raise ValueError(
                "num_blocks and widths must have the same, non-zero length"
            )


ModelConfig = Union[SelfAttentionConfig, ResNetConfig]


def paper_model_config(name: str, **overrides) -> ModelConfig:
    """The paper's configuration of model ``name`` (one of :data:`MODEL_KINDS`), with ``overrides``."""
    if name not in MODEL_KINDS:
        raise ValueError(f"unknown model {name!r}; choose one of {tuple(MODEL_KINDS)}")
    kind = MODEL_KINDS[name]
    return kind.config(**{**kind.fields, **overrides})


def _kind_of_config(config) -> ModelKind:
    """The first registered kind whose config class ``config`` is an instance of."""
    for kind in MODEL_KINDS.values():
        if isinstance(config, kind.config):
            return kind
    raise TypeError(f"not a model config: {type(config).__name__}")


def model_config_to_dict(config: ModelConfig) -> dict:
    """A JSON-ready dict with a ``kind`` tag (inverse: :func:`model_config_from_dict`)."""
    kind = _kind_of_config(config).tag
    d = asdict(config)
    return {
        "kind": kind,
        **{k: list(v) if isinstance(v, tuple) else v for k, v in d.items()},
    }


def model_config_from_dict(d: dict) -> ModelConfig:
    d = dict(d)
    tag = d.pop("kind", "self_attention")
    cls = next((k.config for k in MODEL_KINDS.values() if k.tag == tag), None)
    if cls is None:
        raise ValueError(f"unknown model config kind {tag!r}")
    names = {f.name for f in fields(cls)}
    unknown = set(d) - names
    if unknown:
        raise ValueError(f"unknown {cls.__name__} fields: {sorted(unknown)}")
    return cls(**d)


# --------------------------------------------------------------------------- space-to-depth
def space_to_depth(x: torch.Tensor, factor: int) -> torch.Tensor:
    """``(B, C, H, W)`` → ``(B, H/f, W/f, f·f·C)``; token (I, J) holds pixel (f·I + dh, f·J + dw),
    channel c, at index (dh·f + dw)·C + c (c fastest), as the authors' ``downsample_concatenate``.
    (``F.pixel_unshuffle`` orders the channels (c, dh, dw) instead.)"""
    if x.ndim != 4:
        raise ValueError(f"expected (B, C, H, W), got shape {tuple(x.shape)}")
    b, c, h, w = x.shape
    if factor < 1 or h % factor or w % factor:
        raise ValueError(f"factor {factor} must divide the image size {h}×{w}")
    f = factor
    return (
        x.view(b, c, h // f, f, w // f, f)
        .permute(0, 2, 4, 3, 5, 1)
        .reshape(b, h // f, w // f, f * f * c)
    )


def depth_to_space(t: torch.Tensor, factor: int) -> torch.Tensor:
    """Inverse of :func:`space_to_depth`: ``(B, H', W', f·f·C)`` → ``(B, C, f·H', f·W')``."""
    if t.ndim != 4:
        raise ValueError(f"expected (B, H', W', f·f·C), got shape {tuple(t.shape)}")
    b, hp, wp, k = t.shape
    f = factor
    if f < 1 or k % (f * f):
        raise ValueError(f"channel count {k} is not a multiple of factor² = {f * f}")
    c = k // (f * f)
    return (
        t.view(b, hp, wp, f, f, c)
        .permute(0, 5, 1, 3, 2, 4)
        .reshape(b, c, hp * f, wp * f)
    )


# --------------------------------------------------------------------------- encodings
def _quadratic(cfg: SelfAttentionConfig, num_heads: int) -> QuadraticEncoding:
    """One layer's quadratic encoding (eq. 9), initialised as in the authors' code: centres
    Δ ~ N(0, 2²) per coordinate, spreads s = 1 + N(0, 0.01²)."""
    centers = torch.randn(num_heads, 2) * cfg.center_init_std
    s = 1.0 + cfg.spread_init_std * torch.randn(num_heads)
    return QuadraticEncoding(
        num_heads, centers=centers, parametrization="spread", spread=s
    )


def _generalized(
    cfg: SelfAttentionConfig, num_heads: int
) -> GeneralizedQuadraticEncoding:
    centers = torch.randn(num_heads, 2) * cfg.center_init_std
    m = torch.eye(2) + cfg.spread_init_std * torch.randn(num_heads, 2, 2)
    return GeneralizedQuadraticEncoding(num_heads, centers=centers, inv_sqrt_sigma=m)


def _learned(cfg: SelfAttentionConfig, num_heads: int) -> LearnedRelativeEncoding:
    """One layer's learned relative encoding (Sec. 4.3) with D_p = 2·hidden, i.e. 400 per axis at
    paper size, as in the authors' code, for shifts up to ``cfg.max_shift``."""
    return LearnedRelativeEncoding(num_heads, 2 * cfg.hidden_size, cfg.max_shift)


#: Every encoding a :class:`SelfAttentionConfig` can name → the factory ``(config, num_heads) →
#: encoding`` that builds one layer's; adding an encoding is one :func:`register_encoding`.
ENCODINGS: Dict[str, Callable[[SelfAttentionConfig, int], nn.Module]] = {}


def register_encoding(
    name: str, factory: Callable[[SelfAttentionConfig, int], nn.Module]
) -> None:
    """Register encoding ``name``: ``factory(config, num_heads)`` builds one layer's encoding
    (random draws on the CPU, :func:`_make_encoding` moves it)."""
    if name in ENCODINGS:
        raise ValueError(f"encoding {name!r} is already registered")
    ENCODINGS[name] = factory


def unregister_encoding(name: str) -> None:
    """Remove encoding ``name`` from :data:`ENCODINGS` (a test's toy encoding)."""
    del ENCODINGS[name]


register_encoding("quadratic", _quadratic)
register_encoding("generalized", _generalized)
register_encoding("learned", _learned)


def _make_encoding(cfg: SelfAttentionConfig, num_heads: int) -> nn.Module:
    """The encoding of one layer, initialised as in the authors' code. Random draws are made on
    the CPU (same numbers on every device) and the module is then moved to the default device
    (so that building under ``torch.device("meta")`` works)."""
    target = torch.get_default_device()
    with torch.device("cpu"):
        enc = ENCODINGS[cfg.encoding](cfg, num_heads)
    return enc.to(target)


# --------------------------------------------------------------------------- self-attention model
class SelfAttentionLayer(nn.Module):
    """One post-LN BERT layer around :class:`~attnconv.core.attention.MultiHeadSelfAttention2d`.

    ``attention`` is the MHSA of eq. (4) without value projection (its ``out`` is the
    Linear(N_h·D → D) of the merged heads); ``attention_dense`` is BERT's self-output Linear(D → D).
    After pruning all heads (:func:`attnconv.experiments.pruning.prune_heads`), ``attention`` is ``None`` and
    the MHSA output is the constant ``attention_bias``.
    """

    def __init__(self, cfg: SelfAttentionConfig):
        super().__init__()
        d = cfg.hidden_size
        self.config = cfg
        self.attention: Optional[MultiHeadSelfAttention2d] = self.make_attention(
            cfg, cfg.num_heads
        )
        self.attention_bias: Optional[nn.Parameter] = None
        self.attention_dense = nn.Linear(d, d)
        self.attention_norm = nn.LayerNorm(d, eps=cfg.layer_norm_eps)
        self.intermediate = nn.Linear(d, cfg.intermediate_size)
        self.output = nn.Linear(cfg.intermediate_size, d)
        self.output_norm = nn.LayerNorm(d, eps=cfg.layer_norm_eps)
        self.dropout = nn.Dropout(cfg.hidden_dropout)

    @staticmethod
    def make_attention(
        cfg: SelfAttentionConfig, num_heads: int
    ) -> MultiHeadSelfAttention2d:
        """One layer's MHSA of eq. (4) without value projection. Its score is the position-only
        term of eq. (8), plus the content-content term when ``cfg.content``."""
        terms = (
            ScoreTerms(True, False, False, True)
            if cfg.content
            else ScoreTerms.position_only_terms()
        )
        return MultiHeadSelfAttention2d(
            cfg.hidden_size,
            num_heads,
            encoding=_make_encoding(cfg, num_heads),
            terms=terms,
            qkv_bias=cfg.qk_bias,
            value_projection=False,
            attention_dropout=cfg.attention_dropout,
            implementation=cfg.attention_implementation,
        )

    @property
    def num_heads(self) -> int:
        return 0 if self.attention is None else self.attention.num_heads

    def attend(self, x: torch.Tensor, grid: Tuple[int, int]) -> torch.Tensor:
        """The MHSA of eq. (4) on tokens ``(T, B, D)`` → ``(T, B, D)``."""
        t, b, d = x.shape
        if self.attention is None:
            return self.attention_bias.to(x.dtype).expand(t, b, d)
        return self.attention.forward_tokens(x, grid)

    def forward(self, x: torch.Tensor, grid: Tuple[int, int]) -> torch.Tensor:
        """One layer on tokens ``(T, B, D)`` (the layout of ``MultiHeadSelfAttention.forward_tokens``)."""
        x = self.attention_norm(
            x + self.dropout(self.attention_dense(self.attend(x, grid)))
        )
        h = self.output(F.gelu(self.intermediate(x)))
        return self.output_norm(x + self.dropout(h))


class SelfAttentionClassifier(nn.Module):
    """The paper's self-attention classifier (module docstring); input: normalised ``(B, 3, 32, 32)``."""

    def __init__(self, config: SelfAttentionConfig):
        super().__init__()
        self.config = config
        self.embedding = nn.Linear(config.token_channels, config.hidden_size)
        self.layers = nn.ModuleList(
            SelfAttentionLayer(config) for _ in range(config.num_layers)
        )
        self.classifier = nn.Linear(config.hidden_size, config.num_classes)

    def tokens(self, images: torch.Tensor) -> torch.Tensor:
        """Embedded tokens ``(T, B, D)`` (row-major token order) before the first layer."""
        cfg = self.config
        if images.ndim != 4 or images.shape[1:] != (
            cfg.in_channels,
            cfg.image_size,
            cfg.image_size,
        ):
            raise ValueError(
                f"expected images (B, {cfg.in_channels}, {cfg.image_size}, {cfg.image_size}), got {tuple(images.shape)}"
            )
        return self.embedding(
            space_to_depth(images, cfg.downsample).flatten(1, 2).transpose(0, 1)
        )

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, num_classes)`` of normalised images ``(B, 3, 32, 32)``."""
        x = self.tokens(images)
        for layer in self.layers:
            x = layer(x, self.config.grid)
        return self.classifier(x.mean(0))

    @property
    def heads_per_layer(self) -> List[int]:
        return [layer.num_heads for layer in self.layers]

    @torch.no_grad()
    def position_attention(
        self, query: Optional[Tuple[int, int]] = None
    ) -> List[Optional[torch.Tensor]]:
        """The position-only attention probabilities softmax(v_hᵀ r_δ) of every head for one query
        token (default: the centre token (T/2, T/2)), per layer a ``(N_h, H', W')`` tensor (``None``
        for a layer without heads). With ``content`` these are the probabilities the position term
        alone would give."""
        g = self.config.tokens_per_side
        qi, qj = (g // 2, g // 2) if query is None else query
        if not (0 <= qi < g and 0 <= qj < g):
            raise ValueError(f"query {query} outside the {g}×{g} token grid")
        maps = []
        for layer in self.layers:
            if layer.attention is None:
                maps.append(None)
                continue
            enc = layer.attention.encoding
            p = next(enc.parameters())
            delta = relative_shifts(self.config.grid, 0, p.device)[
                qi * g + qj
            ]  # (T_k, 2)
            scores = enc.position_scores(delta).float()  # (N_h, T_k)
            maps.append(torch.softmax(scores, -1).view(-1, g, g).cpu())
        return maps

    @torch.no_grad()
    def attention_parameters(self) -> List[Dict[str, torch.Tensor]]:
        """Per layer, the attention parameters of every head (CPU tensors, first dim = head):

        * quadratic: ``centers`` Δ (N_h, 2), ``spreads`` s (N_h,), ``inverse_covariance`` s²·I;
        * generalized: ``centers``, ``inv_sqrt_sigma`` M, ``inverse_covariance`` Σ⁻¹ = M Mᵀ;
        * learned: no centres as parameters, so the summary of each head's position-only
          attention for the centre query: ``centers`` = mean shift E[δ], ``covariance`` of δ,
          ``peak_shift`` argmax δ and ``peak_probability``.

        Δ and δ are (row, column) shifts in token units (key − query)."""
        out = []
        for layer in self.layers:
            att = layer.attention
            if att is None:
                out.append({"num_heads": torch.tensor(0)})
                continue
            out.append(att.encoding.head_record(self.config.grid))
        return out


# --------------------------------------------------------------------------- ResNet18
class BasicBlock(nn.Module):
    def __init__(self, in_planes: int, planes: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, 1, stride, bias=False),
                nn.BatchNorm2d(planes),
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    """ResNet for 32×32 inputs: 3×3 stride-1 stem, no max-pool, BasicBlocks, global average pool."""

    def __init__(self, config: ResNetConfig):
        super().__init__()
        self.config = config
        w0 = config.widths[0]
        self.conv1 = nn.Conv2d(config.in_channels, w0, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(w0)
        stages, in_planes = [], w0
        for i, (n, w) in enumerate(zip(config.num_blocks, config.widths)):
            blocks = []
            for j in range(n):
                blocks.append(BasicBlock(in_planes, w, 2 if (i > 0 and j == 0) else 1))
                in_planes = w
            stages.append(nn.Sequential(*blocks))
        self.stages = nn.Sequential(*stages)
        self.linear = nn.Linear(in_planes, config.num_classes)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.stages(out)
        return self.linear(F.adaptive_avg_pool2d(out, 1).flatten(1))

    def attention_parameters(self) -> list:
        """ResNet18 has no attention heads: an empty list."""
        return []

    @property
    def heads_per_layer(self) -> List[int]:
        return []


# --------------------------------------------------------------------------- the model kinds
@dataclass(frozen=True)
class ModelKind:
    """One kind of model a run can name: its config class, the model class built from that config,
    the config fields the name sets (``fields``) and the config's tag in a saved run (``tag``)."""

    config: type
    model: type
    tag: str
    fields: Mapping = field(default_factory=dict)


#: Every model a run can name → its kind, in the manner of timm's registry: adding a kind is one
#: :func:`register_model_kind`; :func:`paper_model_config`, :func:`build_model` and
#: :data:`MODEL_NAMES` read this table.
MODEL_KINDS: Dict[str, ModelKind] = {}


def register_model_kind(
    name: str, config: type, model: type, tag: Optional[str] = None, **fields
) -> ModelKind:
    """Register model ``name``: ``config(**fields, **overrides)`` is its configuration, ``model(config)``
    the model; ``tag`` (default ``name``) marks its config in a saved run."""
    if name in MODEL_KINDS:
        raise ValueError(f"model {name!r} is already registered")
    kind = ModelKind(config, model, tag or name, dict(fields))
    MODEL_KINDS[name] = kind
    return kind


for _encoding in ENCODINGS:
    register_model_kind(
        _encoding,
        SelfAttentionConfig,
        SelfAttentionClassifier,
        "self_attention",
        encoding=_encoding,
    )
register_model_kind(
    "learned_content",
    SelfAttentionConfig,
    SelfAttentionClassifier,
    "self_attention",
    encoding="learned",
    content=True,
)
register_model_kind("resnet18", ResNetConfig, ResNet, "resnet")
# chapter 18's GPSA classifier (:mod:`attnconv.experiments.gpsa_models`)
register_model_kind("gpsa", GPSAConfig, GPSAClassifier)
#: Every model a run can train: the paper's (:data:`PAPER_MODELS`) and chapter 18's GPSA
#: classifier.
MODEL_NAMES = tuple(MODEL_KINDS)


# --------------------------------------------------------------------------- helpers
def build_model(config: Union[ModelConfig, str], **overrides) -> nn.Module:
    """A model from a config, or from a name of :data:`MODEL_KINDS` (paper settings + ``overrides``)."""
    if isinstance(config, str):
        config = paper_model_config(config, **overrides)
    elif overrides:
        config = replace(config, **overrides)
    return _kind_of_config(config).model(config)


def count_parameters(model: nn.Module) -> int:
    """Number of scalar parameters (shared parameters counted once)."""
    return sum(p.numel() for p in model.parameters())


def parameter_count_table(pruned_heads: int = 15) -> List[dict]:
    """Parameter counts of our models at paper size vs the paper's v1 Figs. 5 and 9 (ICLR Table 1).

    Rows: ``model``, ``ours`` (exact count), ``ours_rounded`` (millions, 1 decimal), ``paper``,
    ``match``. Models are built on the ``meta`` device (no memory, no time). The pruned row removes
    ``pruned_heads`` heads of the generalized model (the count does not depend on which)."""
    from .pruning import prune_heads

    rows = []
    with torch.device("meta"):
        models = {
            name: build_model(name)
            for name in ("quadratic", "generalized", "learned", "resnet18")
        }
        g = build_model("generalized")
        cfg = g.config
        chosen: Dict[int, List[int]] = {}
        for k in range(pruned_heads):
            chosen.setdefault(k % cfg.num_layers, []).append(k // cfg.num_layers)
        prune_heads(g, chosen)
        models["generalized_pruned"] = g
    for name in (
        "quadratic",
        "generalized",
        "learned",
        "generalized_pruned",
        "resnet18",
    ):
        n = count_parameters(models[name])
        rounded = f"{n / 1e6:.1f}M"
        rows.append(
            {
                "model": name,
                "ours": n,
                "ours_rounded": rounded,
                "paper": PAPER_PARAMETERS[name],
                "match": rounded == PAPER_PARAMETERS[name],
            }
        )
    return rows
