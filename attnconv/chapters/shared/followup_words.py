"""The registered follow-up's claims in the book's words, in one home: the frozen claim each asks
again, and how a page names it (:class:`FollowupWords`). The protocol page, ch. 17's box and
lists, and the paper map read their names here; chapter modules do not import each other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Tuple

__all__ = ["FollowupWords", "FOLLOWUP", "asked_again"]


@dataclass(frozen=True)
class FollowupWords:
    """One follow-up claim: ``asks_again`` (the frozen claim's key), its ``title`` on its own
    (the protocol page's box), its ``short`` name in a result box's line, and its name
    ``beside`` the frozen claim it asks again (ch. 17's lists, the paper map)."""

    asks_again: str
    title: str
    short: str
    beside: str


#: Every follow-up claim (the keys of :func:`attnconv.evidence.followup.all_claims`), in order.
FOLLOWUP: Dict[str, FollowupWords] = {
    "close_to_resnet_matched": FollowupWords(
        "close_to_resnet",
        "close to ResNet18, against a ResNet18 of the same size",
        "the learned model against a ResNet18 of its size",
        "against a ResNet18 of its size",
    ),
    "pruning_hurts_fresh": FollowupWords(
        "pruning_hurts",
        "pruning hurts a bit, on other seeds",
        "pruning hurts at first",
        "hurts",
    ),
    "pruning_recovers_controlled": FollowupWords(
        "pruning_recovers",
        "pruning recovers, against a retrained unpruned model",
        "retraining recovers, against a retrained control",
        "recovers, against a retrained control",
    ),
    "pruning_recovers_15": FollowupWords(
        "pruning_recovers",
        "pruning the paper's 15 heads recovers, against the same control",
        "the same with the paper's 15 heads pruned",
        "with the paper's 15 heads pruned",
    ),
}


def asked_again() -> Dict[str, Tuple[Tuple[str, str], ...]]:
    """Each frozen claim the follow-up asks again → its follow-up claims, each with its name
    beside the frozen one: ``{"pruning_recovers": (("pruning_recovers_controlled", ...), ...)}``."""
    out: Dict[str, Tuple[Tuple[str, str], ...]] = {}
    for key, words in FOLLOWUP.items():
        out[words.asks_again] = out.get(words.asks_again, ()) + ((key, words.beside),)
    return out
