"""The registered follow-up: three questions the frozen protocol (:mod:`~attnconv.evidence.protocol`)
could not answer, written down and frozen in git **before** its runs exist, like the protocol.

The frozen protocol's verdicts stay as they are: its 18 claims, its tally and its fresh seeds are
untouched. The follow-up answers the weaknesses an independent referee found in the frozen design,
each with runs nobody has seen:

* **an unequal baseline** — the frozen ResNet18 arm has 6.8× the learned model's parameters;
  here a ResNet18 of the same depth and schedule, narrowed to at most the learned model's size;
* **grid ends** — three frozen tunings chose a value at the end of their grid; here every arm is
  tuned on one wider learning-rate grid (:data:`LR_GRID`);
* **no control for "recovers"** — the frozen measure compares the retrained pruned model with the
  unpruned one *before* retraining; here the unpruned model is retrained for the same epochs at
  the same learning rate (the control), and the pruned model is compared with it.

Everything else (the split, the budget, the measures, the rule's arithmetic and the margins'
reasons) is the frozen protocol's, referred to by name. :func:`digest` covers this module's
content; :mod:`attnconv.evidence.freeze` records it and the commit that froze it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from typing import Dict, Tuple

from .protocol import ARMS as FROZEN_ARMS
from .protocol import CLAIMS as FROZEN_CLAIMS
from .protocol import EPOCHS, SPLIT, Arm, ProtocolClaim

__all__ = [
    "SEEDS",
    "TUNING_SEEDS",
    "LR_GRID",
    "MATCHED_WIDTHS",
    "ARMS",
    "CLAIMS",
    "RULE",
    "FAMILY",
    "content",
    "digest",
]

#: Fresh seeds of every follow-up arm (never used by a run of the book before this freeze).
SEEDS: Tuple[int, ...] = (2000, 2001, 2002, 2003, 2004, 2005, 2006, 2007)
#: Seed of the follow-up's tuning runs (validation only; never counted).
TUNING_SEEDS: Tuple[int, ...] = (902,)
#: One learning-rate grid for every follow-up arm: the frozen grid (0.05, 0.1, 0.2) widened by
#: one factor of 2 above and two below, so that no frozen choice sits at its end.
LR_GRID = {"lr": (0.0125, 0.025, 0.05, 0.1, 0.2, 0.4)}
#: The size-matched ResNet18's stage widths: the widest (w, 2w, 4w, 8w) whose parameters do not
#: exceed the learned arm's (w = 6: 99,616 parameters against 103,850; w = 7 has 135,285).
MATCHED_WIDTHS = (6, 12, 24, 48)

ARMS: Dict[str, Arm] = {
    a.key: a
    for a in (
        Arm(
            "learned",
            "learned",
            FROZEN_ARMS["learned"].description,
            grid=LR_GRID,
        ),
        Arm(
            "resnet18-matched",
            "resnet18",
            "ResNet18 with the attention arms' schedule, its widths narrowed to "
            "(6, 12, 24, 48) so that it has no more parameters than the learned arm",
            changes={
                "schedule": "warmup_cosine",
                "warmup_fraction": 0.05,
                "widths": MATCHED_WIDTHS,
            },
            grid=LR_GRID,
        ),
        Arm(
            "generalized",
            "generalized",
            FROZEN_ARMS["generalized"].description
            + "; its pruning study also retrains "
            "the unpruned model (the control)",
            grid=LR_GRID,
        ),
    )
}

_HOLM = "Holm's adjustment over the follow-up's family"
_HALF = "margin halved"
_DOUBLE = "margin doubled"

CLAIMS: Dict[str, ProtocolClaim] = {
    c.key: c
    for c in (
        ProtocolClaim(
            "close_to_resnet_matched",
            FROZEN_CLAIMS["close_to_resnet"].quote,
            FROZEN_CLAIMS["close_to_resnet"].source,
            "non-inferiority",
            ("learned", "resnet18-matched"),
            "learned minus size-matched ResNet18 test accuracy",
            margin=FROZEN_CLAIMS["close_to_resnet"].margin,
            reason=FROZEN_CLAIMS["close_to_resnet"].reason,
            alternatives=(_HALF, _DOUBLE, _HOLM),
            confounds=(
                "the paper's ResNet18 is full width (11 M parameters); this arm asks whether "
                "the gap is the architecture's at equal size, not the paper's comparison",
            ),
        ),
        ProtocolClaim(
            "pruning_recovers_controlled",
            FROZEN_CLAIMS["pruning_recovers"].quote,
            FROZEN_CLAIMS["pruning_recovers"].source,
            "equivalence",
            ("generalized",),
            "retrained pruned minus retrained unpruned (the control: the same epochs at the "
            "same learning rate) test accuracy, per seed on the same images; the interval "
            "over seeds of the per-seed differences",
            margin=FROZEN_CLAIMS["pruning_recovers"].margin,
            reason=FROZEN_CLAIMS["pruning_recovers"].reason,
            alternatives=(
                _HALF,
                _DOUBLE,
                "typed as non-inferiority (the pruned model loses at most the margin)",
                "against the unpruned model before retraining (the frozen measure)",
                _HOLM,
            ),
            confounds=(
                "where the rule marks no head of a seed, its pruned model is its unpruned one "
                "and its difference is 0",
            ),
        ),
        ProtocolClaim(
            "pruning_hurts_fresh",
            FROZEN_CLAIMS["pruning_hurts"].quote,
            FROZEN_CLAIMS["pruning_hurts"].source,
            "superiority",
            ("generalized",),
            FROZEN_CLAIMS["pruning_hurts"].prop,
            alternatives=(_HOLM,),
        ),
    )
}

RULE = {
    "frozen": "the frozen protocol's RULE, its split (SPLIT), budget (EPOCHS epochs) and "
    "measures, unchanged; its TUNING procedure on LR_GRID with TUNING_SEEDS",
    "pruning": "the frozen protocol's pruning study (the paper's thresholds, retraining for "
    "a third of the epochs at the learning rate divided by 10), plus the control: the "
    "unpruned model retrained the same way from the same weights",
    "seeds": "every verdict reads all of SEEDS; every follow-up run made is reported",
    "place": "the follow-up's verdicts are shown beside the frozen protocol's, never in its "
    "tally of 18 claims",
}

FAMILY = {
    "claims": tuple(CLAIMS),
    "control": "each claim at its own level (one-sided 2.5 %, as the two-sided 95 % "
    "interval); Holm's step-down adjustment over these 3 claims is every claim's alternative",
}


def content() -> dict:
    """Everything this freeze covers, as plain JSON-ready data."""
    return {
        "seeds": {"confirmatory": SEEDS, "tuning": TUNING_SEEDS},
        "lr_grid": LR_GRID,
        "matched_widths": MATCHED_WIDTHS,
        "epochs": EPOCHS,
        "split": SPLIT,
        "arms": {k: asdict(a) for k, a in ARMS.items()},
        "claims": {k: asdict(c) for k, c in CLAIMS.items()},
        "rule": RULE,
        "family": FAMILY,
    }


def digest() -> str:
    """The SHA-256 of :func:`content` as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(
        content(), sort_keys=True, separators=(",", ":"), ensure_ascii=True
    )
    return hashlib.sha256(text.encode()).hexdigest()
