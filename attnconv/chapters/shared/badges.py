"""The book's verdict badges and colours: one home for the three verdicts' look (green reproduced,
amber not reproduced, grey inconclusive), used by every chapter and by check_book."""

from __future__ import annotations

from ...experiments.verdicts import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED

__all__ = ["VERDICT_BADGES", "VERDICT_COLOURS", "verdict_badge"]

#: sphinx-design badge role per verdict (green, amber, grey: the theme's "secondary" is orange), and
#: the short word it shows ("at CPU scale" is said once).
VERDICT_BADGES = {
    REPRODUCED: ("bdg-success", "reproduced"),
    NOT_REPRODUCED: ("bdg-warning", "not reproduced"),
    INCONCLUSIVE: ("bdg-muted", "inconclusive"),
}
#: Colours of the same three verdicts, for figures and HTML (sphinx-design's success / warning /
#: muted), and of the theory's two rows (exact checks, errata).
VERDICT_COLOURS = {
    REPRODUCED: "#198754",
    NOT_REPRODUCED: "#c98a00",
    INCONCLUSIVE: "#6c757d",
    "exact": "#198754",
    "errata": "#dc3545",
}


def verdict_badge(verdict: str) -> str:
    """The verdict as a sphinx-design badge (MyST): green reproduced, amber not reproduced, grey
    inconclusive."""
    role, word = VERDICT_BADGES[verdict]
    return f"{{{role}}}`{word}`"
