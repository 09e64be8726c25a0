"""The book's verdict badges and colours: one home for the three verdicts' look (green reproduced,
orange not reproduced, dark grey inconclusive), used by every chapter and by check_book."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Dict, Iterable

from ...experiments.verdicts import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED

__all__ = [
    "VERDICT_BADGES",
    "BADGE_ROLE_COLOURS",
    "VERDICT_COLOURS",
    "text_colour",
    "outlined",
    "verdict_badge",
    "CATEGORY_BADGES",
    "category_badge",
    "stated_verdicts",
    "verdict_counts",
    "counts_text",
    "verdict_word",
    "verdict_number",
]

#: sphinx-design badge role per verdict (green, orange, dark grey: the theme's "secondary" is
#: purple), and the short word it shows ("at CPU scale" is said once).
VERDICT_BADGES = {
    REPRODUCED: ("bdg-success", "reproduced"),
    NOT_REPRODUCED: ("bdg-warning", "not reproduced"),
    INCONCLUSIVE: ("bdg-muted", "inconclusive"),
}
#: The fill and text colour of each badge role as the built book draws it in its light colour
#: mode: sphinx-design's ``--sd-color-*`` variables, which pydata-sphinx-theme 0.17 sets from its
#: ``--pst-color-*`` palette (sphinx-book-theme 1.3 resets ``primary``); book/_static/*.css
#: overrides none of them. Figures take their verdict colours from here, so that a bar and a badge
#: of the same word share one colour.
BADGE_ROLE_COLOURS = {
    "bdg-success": ("#00843f", "#ffffff"),
    "bdg-warning": ("#f66a0a", "#14181e"),
    "bdg-muted": ("#29313d", "#ffffff"),
    "bdg-danger": ("#d72d47", "#ffffff"),
    "bdg-info": ("#276be9", "#ffffff"),
    "bdg-light": ("#f3f4f5", "#14181e"),
    "bdg-dark": ("#222832", "#ffffff"),
    "bdg-primary": ("#176de8", "#ffffff"),
}


def _fill(role: str) -> str:
    return BADGE_ROLE_COLOURS[role.removesuffix("-line")][0]


def verdict_word(verdict: str) -> str:
    """The short word a verdict's badge shows ("reproduced" for *reproduced at CPU scale*); any
    other word (*pending*, *not computed*) as it is."""
    return VERDICT_BADGES[verdict][1] if verdict in VERDICT_BADGES else verdict


def verdict_number(v) -> str:
    """A judged verdict's difference with its 95 % interval (``+1.5 points, 95 % interval [+0.5,
    +2.6]``): its :meth:`~attnconv.evidence.judge.ConfirmatoryVerdict.number`, or, where the
    interval is over seeds only and not kept (the follow-up's pruning claims), the opening of the
    verdict's own detail, which states it."""
    if v.interval is not None:
        return v.number()
    return v.detail.split(" (")[0]


def verdict_badge(verdict: str) -> str:
    """The verdict as a sphinx-design badge (MyST): green reproduced, orange not reproduced, dark
    grey inconclusive."""
    role, word = VERDICT_BADGES[verdict]
    return f"{{{role}}}`{word}`"


#: Badges that are not verdicts on an experimental claim, each with its colour and a glossary
#: entry: the theory's categories, claims shown without a verdict, and confirmatory claims still
#: waiting for their runs. "exact" (a proof or an exact check holds) is the reproduced badge's
#: green as an outline (green word and border on the page's background), so that the two never
#: look alike; "exploratory" is outlined too, in the dark grey of "not counted".
CATEGORY_BADGES = {
    "exact": "bdg-success-line",
    "beyond the paper": "bdg-info",
    "errata": "bdg-danger",
    "imprecise": "bdg-light",
    "not counted": "bdg-dark",
    "pending": "bdg-primary",
    "exploratory": "bdg-dark-line",
}

#: The colour of each verdict and category badge, for figures: the badge's own colour
#: (:data:`BADGE_ROLE_COLOURS`), keyed by verdict or by category word ("exact", "errata", ...):
#: its fill, or the colour of its border and word when it is :func:`outlined`.
VERDICT_COLOURS = {
    **{v: _fill(role) for v, (role, _) in VERDICT_BADGES.items()},
    **{word: _fill(role) for word, role in CATEGORY_BADGES.items()},
}


def _role(key: str) -> str:
    return VERDICT_BADGES[key][0] if key in VERDICT_BADGES else CATEGORY_BADGES[key]


def outlined(key: str) -> bool:
    """Whether the badge of a verdict or category ``key`` is an outline (a ``bdg-*-line`` role:
    its word and border in :data:`VERDICT_COLOURS`, no fill), as "exact" and "exploratory" are.
    A figure draws such a key the same way: the page's background inside a border of that
    colour, the label in that colour."""
    return _role(key).endswith("-line")


def text_colour(key: str) -> str:
    """The colour of the text on the badge of a verdict or category ``key``: dark on the light
    fills, white on the others, and the badge's own colour on an :func:`outlined` one."""
    role = _role(key)
    if outlined(key):
        return _fill(role)
    return BADGE_ROLE_COLOURS[role][1]


def category_badge(word: str, count: int = 0) -> str:
    """A category of :data:`CATEGORY_BADGES` as a badge, with ``count`` before the word when
    given."""
    text = f"{count} {word}" if count else word
    return f"{{{CATEGORY_BADGES[word]}}}`{text}`"


_BADGE = re.compile(r"\{(bdg-[a-z-]+)\}`(?:(\d+) )?([^`]+)`")


#: The bullet of an "In short" box that gives the verdicts on the fresh seeds (the frozen
#: protocol's): its badges are read by ``stated_verdicts(nb, fresh=True)`` only.
FRESH_BULLET = "- **On fresh seeds**"
#: A box's headline (the text before its first bullet) that holds these words gives the
#: verdicts on the fresh seeds: its badges are read with the fresh-seeds bullet's.
FRESH_HEADLINE = "**On fresh seeds"


def _box_part(box: str, fresh: bool) -> str:
    """The lines of ``box`` in its fresh-seeds bullet or fresh-seeds headline (``fresh``), or
    outside them."""
    lines = box.splitlines()
    first = next(
        (i for i, line in enumerate(lines) if line.startswith("- ")), len(lines)
    )
    head = FRESH_HEADLINE in "\n".join(lines[:first])
    keep, inside = [], head
    for i, line in enumerate(lines):
        if line.startswith("- "):
            inside = line.startswith(FRESH_BULLET)
        elif i < first:
            inside = head and not line.startswith("```") and not line.startswith(":")
        if inside == fresh:
            keep.append(line)
    return "\n".join(keep)


def stated_verdicts(notebook, fresh: bool = False) -> Dict[str, int]:
    """The verdict badges a chapter's "In short" box shows, read from the notebook file: verdict ->
    count (a badge without a number counts 1). The badges of its fresh-seeds bullet
    (:data:`FRESH_BULLET`) are read instead with ``fresh``, "pending" counted too. Raises
    ``ValueError`` when the notebook has no "In short" box, or a badge whose colour does not
    match its word."""
    cells = json.loads(Path(notebook).read_text())["cells"]
    box = next(
        (
            "".join(c["source"])
            for c in cells
            if c["cell_type"] == "markdown"
            and "{admonition} In short" in "".join(c["source"])
        ),
        None,
    )
    if box is None:
        raise ValueError(f"{notebook}: no 'In short' box")
    by_word = {
        word: (role, verdict) for verdict, (role, word) in VERDICT_BADGES.items()
    }
    if fresh:
        by_word["pending"] = (CATEGORY_BADGES["pending"], "pending")
    counts: Counter = Counter()
    for role, number, word in _BADGE.findall(_box_part(box, fresh)):
        if word not in by_word:
            continue  # a category badge (exact, pending, ...), not a verdict
        if by_word[word][0] != role:
            raise ValueError(f"{notebook}: badge '{word}' drawn as {role}")
        counts[by_word[word][1]] += int(number or 1)
    return dict(counts)


def verdict_counts(verdicts: Iterable[str]) -> Dict[str, int]:
    """How many of ``verdicts`` are each verdict (the counts an "In short" box should show)."""
    return dict(Counter(verdicts))


def counts_text(counts: Dict[str, int]) -> str:
    """``counts`` (verdict -> count) in words, in the badges' order: "7 reproduced · 2 not
    reproduced · 8 inconclusive"."""
    return " · ".join(
        f"{counts[v]} {word}"
        for v, (_, word) in VERDICT_BADGES.items()
        if counts.get(v)
    )
