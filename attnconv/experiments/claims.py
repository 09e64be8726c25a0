"""The paper's experimental claims as the book's *exploratory* verdicts judge them, one record per
claim. These records were first committed after many of the runs they judge existed (git shows the
order); the confirmatory verdicts come from the protocol frozen before its runs,
:mod:`attnconv.evidence.protocol`.

Each :class:`ClaimRecord` holds the claim's ``key``, its ``kind`` (:data:`~attnconv.experiments.
verdicts.KINDS`: *superiority* — "better", "faster", "more"; *non-inferiority* — "not much below",
"close to"; *equivalence* — "similar", "no gain", "recovers"; *existence* — "some heads ..."), the
``quote`` verbatim from the paper's text (``shared/papers``; arXiv v1 unless the source says
otherwise) and its ``source``, the ``setting`` (which runs are at it, in words, and the registry
series that hold them), for non-inferiority and equivalence a ``margin`` with the ``margin_reason``
it was chosen for, for a superiority claim with a stated size the ``margin`` it must exceed, for an
existence claim its ``threshold`` (and the book's other ``thresholds`` for the same concept), and
the ``confounds`` a verdict on it must name. The margins are held to these values by a test
(``tests/experiments/test_claims.py``).

The verdicts come from one rule, :mod:`attnconv.experiments.verdicts` (:func:`~attnconv.
experiments.verdicts.judge`, :func:`~attnconv.experiments.verdicts.judge_same_model`,
:func:`~attnconv.experiments.verdicts.judge_existence`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from .paper_numbers import PAPER_ACCURACY
from .verdicts import EQUIVALENCE, EXISTENCE, KINDS, NON_INFERIORITY, SUPERIORITY

__all__ = [
    "ClaimRecord",
    "CLAIMS",
    "claim",
    "ONE_KEY",
    "ONE_HOT",
    "ONE_KEY_THRESHOLDS",
    "SIMILAR_MARGIN",
    "CLOSE_MARGIN",
    "HARMLESS_DROP",
    "SIGNIFICANT_FLOP_REDUCTION",
    "POSITIONAL_LR_CONFOUND",
    "LOCAL_DROPOUT_CONFOUND",
    "SCHEDULE_CONFOUND",
    "NO_CONTROL_CONFOUND",
    "NOTHING_TO_RECOVER",
]

# --------------------------------------------------------------------------- thresholds and margins
#: A head *attends to one key* (the book's one term: "on one key") when one key gets more than this
#: share of its attention (the centre query). The book's second threshold for the same concept,
#: :data:`ONE_HOT`, is a head *nearly one-hot*; an existence verdict says when it changes between them.
ONE_KEY = 0.5
#: A head is *nearly one-hot* when one key gets more than this share of its attention (ch. 12).
ONE_HOT = 0.9
#: The book's thresholds for "attends to one key", in the order the verdicts name them.
ONE_KEY_THRESHOLDS = (ONE_KEY, ONE_HOT)
#: "Similar" (equivalence, non-inferiority of "similar or better"): within 1 point of test
#: accuracy. Reason: half of the 2.0-point gap the paper itself calls "close" (ResNet18 93.8 %
#: against 91.8 %, v1 Fig. 5); "similar" is read as the stronger word.
SIMILAR_MARGIN = 0.01
#: "Close to" (non-inferiority): at most 2 points below. Reason: the gap the paper calls close
#: (v1 Fig. 5: ResNet18 93.8 %, SA learned emb. 91.8 %).
CLOSE_MARGIN = 0.02
#: A head is *redundant* when removing it costs at most this much test accuracy (0.5 points: 5 of
#: the 1,017 test images of the sample). Reason: "seem to be redundant" names no size; 0.5 points
#: is the smallest cost the book prints.
HARMLESS_DROP = 0.005
#: "Reduce significantly the number of FLOPS": at least a tenth fewer FLOPs per training step.
#: Reason: the paper names no size; a tenth is the smallest saving a reader would call significant.
SIGNIFICANT_FLOP_REDUCTION = 0.10

# --------------------------------------------------------------------------- confounds
#: Words for the confounds a verdict names where they touch it.
POSITIONAL_LR_CONFOUND = (
    "The cpu and deep profiles train every positional parameter (Δ, s, M, the learned "
    "tables) with ×10 the learning rate. The paper states no such multiplier, and it "
    "covers far more parameters in the learned tables than in the quadratic encoding."
)
LOCAL_DROPOUT_CONFOUND = (
    "The deep quadratic runs use local attention, whose attention dropout removes entries "
    "of a head's row and column factors rather than single probabilities; the deep learned "
    "runs use dense attention."
)
SCHEDULE_CONFOUND = (
    "In the runs made before the freeze, the ResNet18 divides its learning rate by 10 at "
    "epochs 11, 20 and 33 (a step schedule), while the attention models follow a cosine to "
    "epoch 40. So the epochs to converge measure the schedules as much as the "
    "architectures. The fresh ResNet18 follows the same cosine as the attention arms."
)
NO_CONTROL_CONFOUND = (
    "No unpruned model was retrained for the same epochs, so the extra epochs alone could "
    "account for a recovery."
)
NOTHING_TO_RECOVER = (
    "Where pruning cost nothing measurable, a recovery has nothing to recover from."
)

#: Each confound's short name, heading its item in ch. 12's numbered list of confounds.
CONFOUND_NAMES = {
    POSITIONAL_LR_CONFOUND: "×10 positional learning rate",
    LOCAL_DROPOUT_CONFOUND: "Local attention's dropout",
    SCHEDULE_CONFOUND: "ResNet18's step schedule",
    NO_CONTROL_CONFOUND: "No retrained control",
    NOTHING_TO_RECOVER: "Nothing to recover",
}


@dataclass(frozen=True)
class ClaimRecord:
    """One claim of the paper the book judges (see the module's docstring). ``a`` and ``b`` name
    the two sides of a comparison ("a <kind> b": the interval is of a − b)."""

    key: str
    kind: str
    quote: str
    source: str
    title: str
    setting: str
    test: str
    series: Tuple[str, ...] = ()
    a: str = ""
    b: str = ""
    margin: Optional[float] = None
    margin_reason: str = ""
    threshold: Optional[float] = None
    thresholds: Tuple[float, ...] = ()
    confounds: Tuple[str, ...] = ()
    where: str = ""
    margin_unit: str = "point"

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(
                f"{self.key}: kind must be one of {KINDS}, got {self.kind!r}"
            )
        if self.kind in (NON_INFERIORITY, EQUIVALENCE) and not (
            self.margin and self.margin_reason
        ):
            raise ValueError(
                f"{self.key}: a {self.kind} claim needs a margin and its reason"
            )
        if self.kind == EXISTENCE and self.threshold is None:
            raise ValueError(f"{self.key}: an existence claim names its threshold")

    @property
    def margin_words(self) -> str:
        """``±1 point`` (equivalence), ``−2 points`` (non-inferiority), ``> 5 points``, or —."""
        if self.margin is None:
            return "—"
        v = 100 * self.margin
        pts = (
            f"{v:g} %"
            if self.margin_unit == "%"
            else f"{v:g} {self.margin_unit}{'s' * (v != 1)}"
        )
        sign = {
            EQUIVALENCE: "±",
            NON_INFERIORITY: "−",
            EXISTENCE: "−",
            SUPERIORITY: "> ",
        }.get(self.kind, "")
        return sign + pts


_LOCAL_FAR = (
    "in the first few layers the heads tend to focus on local patterns (layers 1 and 2), while "
    "deeper layers (layers 3-6) also attend to larger patterns by positioning the center of "
    "attention further from the queried pixel position"
)
_LEARNED_PIXELS = (
    "The figure confirms our hypothesis for the first two layers and partially for the third: "
    "even when left to learn the encoding from the data, certain self-attention heads (depicted "
    "on the left) learn to attend to individual pixels, closely matching the condition of Lemma 1 "
    "and thus Theorem 1."
)
_NON_ISOTROPIC = "the network did learn non-isotropic attention probability patterns, especially in high layers"
_PRUNED = (
    "Specifically in our model with 6-layer and 9-heads each, we pruned [2,4,1,2,6,0] heads from "
    "the first to the last layer."
)
_QS = ("deep/quadratic",)
_LS = ("deep/learned",)
_GAUSS = (POSITIONAL_LR_CONFOUND, LOCAL_DROPOUT_CONFOUND)


def _r(*args, **kw) -> ClaimRecord:
    return ClaimRecord(*args, **kw)


_RECORDS = (
    _r(
        "local_then_far",
        SUPERIORITY,
        _LOCAL_FAR,
        "Sec. 4.2, Fig. 3 (ICLR Fig. 4)",
        "Fig. 3: local first, further away deeper",
        "the quadratic model, 6 layers, every seed",
        "per seed, the mean attention distance and the mean centre distance of layers 3-6 minus "
        "those of layers 1-2 (tokens), above 0",
        _QS,
        "layers 3-6",
        "layers 1-2",
        confounds=_GAUSS,
        where="sec-six-layers-claims",
    ),
    _r(
        "grid_layer4",
        EXISTENCE,
        "We can see that after optimization, the heads attend on specific pixel of the image "
        "forming a grid around the query pixel.",
        "Sec. 4.2, Fig. 2 (ICLR Fig. 3), layer 4 of 6",
        "Fig. 2: a grid at layer 4",
        "layer 4 of the quadratic model, 6 layers, every seed",
        "heads on one key (> 0.5) sit within 0.5 token on at least 5 of the 9 points of the "
        "3×3 lattice around the query",
        _QS,
        threshold=ONE_KEY,
        thresholds=ONE_KEY_THRESHOLDS,
        confounds=_GAUSS,
        where="sec-six-layers-grid",
    ),
    _r(
        "no_overlap",
        EXISTENCE,
        "Interestingly, attention heads do not overlap and seem to take an arrangement "
        "maximizing the coverage of the input space.",
        "Sec. 4.2, on Fig. 10 (ICLR Fig. 14)",
        "Fig. 10: heads do not overlap",
        "the quadratic model, 6 layers (9 and 16 heads)",
        "a layer with at least two heads on one key (> 0.5), none of whose pairs shares more "
        "than half of its attention; a run without two such heads in a layer cannot show it "
        "(vacuous, not counted)",
        _QS + ("deep/quadratic-16heads",),
        threshold=ONE_KEY,
        confounds=_GAUSS,
        where="sec-six-layers-claims",
    ),
    _r(
        "localized_first",
        SUPERIORITY,
        "Localized heads (i.e., those that attend to nearly individual pixels) appear more "
        "frequently in the first few layers.",
        "App. A.2, Fig. 10 (ICLR Fig. 14)",
        "App. A.2: localized heads in the first layers",
        "the quadratic model, 6 layers, every seed",
        "per seed, heads on one key (> 0.5) per layer in layers 1-2 minus in layers 3-6, above 0",
        _QS,
        "layers 1-2",
        "layers 3-6",
        confounds=_GAUSS,
        where="sec-six-layers-claims",
    ),
    _r(
        "learned_pixels",
        EXISTENCE,
        _LEARNED_PIXELS,
        "Sec. 4.3, Fig. 6 (ICLR Fig. 5)",
        "Fig. 6: learned heads on single pixels",
        "layers 1-2 of the learned model, 6 layers",
        "a head of layers 1-2 on one key: its largest probability on one key (centre query) "
        f"above {ONE_KEY:g} (on fresh seeds the frozen protocol asks {ONE_HOT:g}, nearly one-hot)",
        _LS,
        threshold=ONE_KEY,
        thresholds=ONE_KEY_THRESHOLDS,
        confounds=(POSITIONAL_LR_CONFOUND,),
        where="sec-six-layers-claims",
    ),
    _r(
        "learned_matched_lemma",
        EXISTENCE,
        "in our experiments, the relative encoding learned by the neural network also matched "
        "the conditions of the lemma",
        "Sec. 3, after eq. (9)",
        "Sec. 3: the learned encoding matched the lemma",
        "every learned run (the sentence names no depth)",
        "in some layer, heads on one key (> 0.5) on each of the 9 shifts of a 3×3 kernel",
        _LS + ("cpu/learned", "cpu/learned-40epochs"),
        threshold=ONE_KEY,
        confounds=(POSITIONAL_LR_CONFOUND,),
        where="ch-learned-encoding",
    ),
    _r(
        "high_layers_deviate",
        SUPERIORITY,
        "The phenomenon is particularly prominent for layers four to six, where the behavior of "
        "self-attention can be seen to deviate from that of convolution.",
        "Sec. 4.3, Fig. 6 (ICLR Fig. 5)",
        "Fig. 6: layers 4-6 deviate",
        "the learned model, 6 layers, every seed",
        "per seed, heads on one key (> 0.5) per layer in layers 1-2 minus in layers 4-6, above 0",
        _LS,
        "layers 1-2",
        "layers 4-6",
        confounds=(POSITIONAL_LR_CONFOUND,),
        where="sec-six-layers-claims",
    ),
    _r(
        "vertical_rare",
        SUPERIORITY,
        "We also notice that vertical symmetry is much more rare in the learned attention "
        "probabilities of high layers.",
        "Sec. 4.3, Fig. 6 (ICLR Fig. 5)",
        "Fig. 6: vertical symmetry rarer in high layers",
        "layers 4-6 of the learned model, 6 layers (the runs that keep maps)",
        "left-right symmetric heads minus up-down symmetric heads in layers 4-6 (heads not "
        "nearly uniform), above 0",
        _LS,
        "left-right",
        "up-down",
        confounds=(POSITIONAL_LR_CONFOUND,),
        where="sec-six-layers-claims",
    ),
    _r(
        "redundant",
        EXISTENCE,
        "some of the heads in the last two layers seem to be redundant",
        "Sec. 4.3, Fig. 6 (ICLR Fig. 5)",
        "Fig. 6: redundant heads in layers 5-6",
        "layers 5-6 of the learned model, 6 layers",
        "a head of layers 5-6 whose removal alone (no retraining) costs at most 0.5 points: the "
        "lower end of the paired interval of (without − with) above −0.5 points",
        _LS,
        "without the head",
        "full model",
        margin=HARMLESS_DROP,
        margin_reason="'seem to be redundant' names no size; 0.5 points (5 of 1,017 images) "
        "is the smallest cost the book prints",
        threshold=HARMLESS_DROP,
        where="sec-six-layers-redundant",
    ),
    _r(
        "non_isotropic",
        EXISTENCE,
        _NON_ISOTROPIC,
        "App. A.1, Fig. 7 (ICLR Fig. 12)",
        "App. A.1: non-isotropic heads",
        "the generalized model, 6 layers",
        "heads whose Σ⁻¹ has a condition number above 2",
        ("deep/generalized",),
        threshold=2.0,
        confounds=(POSITIONAL_LR_CONFOUND,),
        where="sec-six-layers-claims",
    ),
    _r(
        "non_isotropic_high",
        SUPERIORITY,
        _NON_ISOTROPIC,
        "App. A.1, Fig. 7 (ICLR Fig. 12): 'especially in high layers'",
        "App. A.1: non-isotropic, especially in high layers",
        "the generalized model, 6 layers",
        "per seed, non-isotropic heads in layers 4-6 minus in layers 1-3, above 0",
        ("deep/generalized",),
        "layers 4-6",
        "layers 1-3",
        confounds=(POSITIONAL_LR_CONFOUND,),
        where="sec-six-layers-claims",
    ),
    _r(
        "pruned_counts",
        EXISTENCE,
        _PRUNED,
        "App. A.1",
        "App. A.1: [2,4,1,2,6,0] heads pruned",
        "the generalized model, 6 layers, at the paper's thresholds (1e-5, 1e5; the authors' "
        "code's 1e3 shown beside)",
        "the paper's pruning rule prunes the same number of heads in each layer",
        ("deep/generalized",),
        threshold=1e5,
        thresholds=(1e5, 1e3),
        confounds=(POSITIONAL_LR_CONFOUND,),
        where="sec-six-layers-pruning",
    ),
    _r(
        "pruning_hurts",
        SUPERIORITY,
        "this ablation initially hurts a bit the performance, probably due to off biases",
        "App. A.1, Fig. 8",
        "App. A.1: pruning initially hurts a bit",
        "the generalized model, 6 layers (the 2-layer run listed)",
        "unpruned minus pruned (no retraining) test accuracy on the same images, above 0",
        ("deep/generalized",),
        "unpruned",
        "pruned",
        where="sec-six-layers-pruning",
    ),
    _r(
        "pruning_recovers",
        EQUIVALENCE,
        "after a few epochs of continued training with a smaller learning rate (divided by 10) "
        "the accuracy recovers its unpruned value",
        "App. A.1, Fig. 8",
        "App. A.1: retraining recovers the accuracy",
        "the generalized model, 6 layers (the 2-layer run listed)",
        "retrained minus unpruned test accuracy on the same images, inside ±1 point",
        ("deep/generalized",),
        "retrained",
        "unpruned",
        margin=SIMILAR_MARGIN,
        margin_reason="'recovers its unpruned value' read as 'similar': the book's 1 point "
        "(half the gap the paper calls close)",
        confounds=(NO_CONTROL_CONFOUND, NOTHING_TO_RECOVER),
        where="sec-six-layers-pruning",
    ),
    _r(
        "no_gain",
        EQUIVALENCE,
        "the fact that we do not obtain any performance improvement seems to suggest that "
        "attention non-isotropy is not particularly helpful in practice",
        "App. A.1",
        "App. A.1: no gain from the generalized encoding",
        "generalized against quadratic, 6 layers, 40 epochs (2 layers listed)",
        "generalized minus quadratic test accuracy, inside ±1 point",
        ("deep/generalized",) + _QS,
        "generalized",
        "quadratic",
        margin=SIMILAR_MARGIN,
        margin_reason="'no performance improvement' read as 'similar': the book's 1 point",
        confounds=(POSITIONAL_LR_CONFOUND,),
        where="sec-six-layers-accuracy",
    ),
    _r(
        "similar_or_better",
        NON_INFERIORITY,
        "while also reaching similar or better empirical performance (than the learned one)",
        f"Sec. 3, after eq. (9); Fig. 5 (ICLR Table 1): {PAPER_ACCURACY['quadratic']} vs "
        f"{PAPER_ACCURACY['learned']}",
        "Sec. 3: quadratic similar or better than learned",
        "quadratic against learned, 6 layers, 40 epochs (the 2-layer series listed)",
        "quadratic minus learned test accuracy, lower end of the interval above −1 point",
        _QS + _LS,
        "quadratic",
        "learned",
        margin=SIMILAR_MARGIN,
        margin_reason="'similar': half of the 2.0-point gap the paper calls close",
        confounds=_GAUSS,
        where="sec-six-layers-accuracy",
    ),
    _r(
        "resnet_faster",
        SUPERIORITY,
        "The ResNet is faster to converge, but we cannot ascertain whether this corresponds to "
        "an inherent property of the architecture or an artifact of the adopted optimization "
        "procedures.",
        "Sec. 4.2, Fig. 4 (ICLR Fig. 2)",
        "Sec. 4.2: the ResNet converges faster",
        "quadratic, 6 layers, against ResNet18, 40 epochs each (the 2-layer series listed)",
        "epochs to reach 95 % of the final test accuracy, quadratic minus ResNet18, above 0",
        _QS + ("cpu/resnet18-40epochs",),
        "quadratic",
        "ResNet18",
        confounds=(SCHEDULE_CONFOUND,),
        where="sec-six-layers-accuracy",
    ),
    _r(
        "close_to_resnet",
        NON_INFERIORITY,
        "our implementation achieves accuracy close to that of ResNet18",
        "Sec. 4.3, Fig. 5 (ICLR Table 1)",
        "Sec. 4.3: accuracy close to ResNet18",
        "learned, 6 layers, against ResNet18, 40 epochs each (the 2-layer series listed)",
        "learned minus ResNet18 test accuracy, lower end of the interval above −2 points",
        _LS + ("cpu/resnet18-40epochs",),
        "learned",
        "ResNet18",
        margin=CLOSE_MARGIN,
        margin_reason="the gap the paper calls close (93.8 % against 91.8 %, v1 Fig. 5)",
        confounds=(POSITIONAL_LR_CONFOUND, SCHEDULE_CONFOUND),
        where="sec-six-layers-accuracy",
    ),
    _r(
        "local_fewer_flops",
        SUPERIORITY,
        "Our implementation could be optimized to exploit the locality of Gaussian attention "
        "probabilities and reduce significantly the number of FLOPS.",
        "Sec. 4.2",
        "Sec. 4.2: locality reduces the FLOPs",
        "the quadratic model at the paper's settings, dense against local attention (the "
        "saved CPU benchmark)",
        "counted FLOPs per training step, dense minus local, as a share of dense: above a "
        "tenth",
        (),
        "dense",
        "local",
        margin=SIGNIFICANT_FLOP_REDUCTION,
        margin_reason="'significantly' names no size; a tenth fewer FLOPs",
        margin_unit="%",
        where="ch-performance",
    ),
)

#: The claims, key → :class:`ClaimRecord`, in the order of the book.
CLAIMS: Dict[str, ClaimRecord] = {r.key: r for r in _RECORDS}


def claim(key: str) -> ClaimRecord:
    """The record of ``key``; an unknown key raises naming the known ones."""
    if key not in CLAIMS:
        raise KeyError(f"no claim {key!r}; claims: {', '.join(CLAIMS)}")
    return CLAIMS[key]
