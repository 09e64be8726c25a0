"""The "In short" badges a notebook states are read back from its file, counted per verdict."""

import json
import re

import pytest

from attnconv.chapters.shared.badges import (
    counts_text,
    stated_verdicts,
    verdict_badge,
    verdict_counts,
)
from attnconv.experiments.verdicts import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED


def _notebook(tmp_path, box):
    cells = [
        {"cell_type": "markdown", "source": ["# 7. A chapter\n"]},
        {"cell_type": "markdown", "source": [box]},
    ]
    path = tmp_path / "ch.ipynb"
    path.write_text(json.dumps({"cells": cells}))
    return path


def test_counts_numbered_and_bare_badges_and_skips_categories(tmp_path):
    box = (
        "```{admonition} In short\n{bdg-success}`3 reproduced` {bdg-warning}`1 not reproduced` "
        "{bdg-muted}`inconclusive` {bdg-primary}`2 pending`\n```"
    )
    assert stated_verdicts(_notebook(tmp_path, box)) == {
        REPRODUCED: 3,
        NOT_REPRODUCED: 1,
        INCONCLUSIVE: 1,
    }


def test_agrees_with_the_badges_the_book_draws(tmp_path):
    verdicts = [REPRODUCED, INCONCLUSIVE, INCONCLUSIVE]
    box = (
        "```{admonition} In short\n"
        + " ".join(verdict_badge(v) for v in verdicts)
        + "\n```"
    )
    assert stated_verdicts(_notebook(tmp_path, box)) == verdict_counts(verdicts)


def test_a_badge_in_the_wrong_colour_or_no_box_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="drawn as bdg-warning"):
        stated_verdicts(
            _notebook(
                tmp_path, "```{admonition} In short\n{bdg-warning}`2 reproduced`\n```"
            )
        )
    with pytest.raises(ValueError, match="no 'In short' box"):
        stated_verdicts(_notebook(tmp_path, "plain text"))


def test_counts_read_in_the_badges_order():
    counts = verdict_counts([INCONCLUSIVE, REPRODUCED, INCONCLUSIVE, NOT_REPRODUCED])
    assert counts_text(counts) == "1 reproduced · 1 not reproduced · 2 inconclusive"
    assert counts_text({INCONCLUSIVE: 3}) == "3 inconclusive"


def test_the_fresh_seeds_column_follows_the_frozen_protocol():
    """Each claim's fresh-seed badge is its confirmatory verdict (interim marked), "pending"
    while its runs are made, a dash for a statement the protocol does not judge."""
    from attnconv.chapters import paper_verdicts as pv
    from attnconv.evidence.judge import PENDING

    for key, got in pv.fresh_verdicts().items():
        badge, sentence = pv.fresh_badge(key), pv.fresh_sentence(key)
        if got.verdict == PENDING:
            assert "`pending`" in badge and "Pending" in sentence
        else:
            assert got.verdict.split()[0] in badge and got.verdict in sentence
            assert ("(interim)" in badge) == got.interim
    assert pv.fresh_badge("no such claim") == "—"


def test_a_box_reads_its_fresh_seeds_bullet_apart(tmp_path):
    """The exploratory badges and the fresh-seeds bullet's badges are counted apart, "pending"
    among the latter; the bullet's badges are those fresh_badges writes."""
    import json

    from attnconv.chapters import paper_verdicts as pv
    from attnconv.chapters.shared.badges import stated_verdicts

    keys = ["learned_pixels", "close_to_resnet", "no_overlap"]
    box = (
        "```{admonition} In short\n:class: tip result-box\n"
        "{bdg-success}`2 reproduced` **Headline.**\n\n- **The paper says.** x\n"
        f"- **On fresh seeds** (frozen protocol): {pv.fresh_badges(keys)} — so far.\n"
        "- **What it means.** {bdg-muted}`inconclusive` y\n```"
    )
    nb = tmp_path / "x.ipynb"
    nb.write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": box}]}))
    assert stated_verdicts(nb) == {"reproduced at CPU scale": 2, "inconclusive": 1}
    assert stated_verdicts(nb, fresh=True) == pv.fresh_counts(keys)
    assert sum(pv.fresh_counts(keys).values()) == 3


def test_a_box_headline_on_fresh_seeds_is_read_with_the_fresh_badges(tmp_path):
    """A headline that says "On fresh seeds" gives the fresh badges; the exploratory bullet's
    badges stay exploratory."""
    import json

    from attnconv.chapters.shared.badges import stated_verdicts

    box = (
        "```{admonition} In short\n:class: tip result-box\n"
        "{bdg-success}`2 reproduced` {bdg-warning}`1 not reproduced`\n"
        "**On fresh seeds, the headline.**\n\n- **The paper says.** x\n"
        "- {bdg-dark-line}`exploratory` {bdg-muted}`3 inconclusive` before the freeze\n```"
    )
    nb = tmp_path / "x.ipynb"
    nb.write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": box}]}))
    assert stated_verdicts(nb, fresh=True) == {
        "reproduced at CPU scale": 2,
        "not reproduced at CPU scale": 1,
    }
    assert stated_verdicts(nb) == {"inconclusive": 3}


def test_keep_words_keeps_ranges_and_hyphenated_words_whole_but_not_labels():
    from attnconv.chapters.shared.tables import keep_words

    got = keep_words("layers 4-6 of the 2-layer run, {ref}`ch. 12 <sec-six-layers>`")
    assert '<span class="nowrap">4-6</span>' in got
    assert '<span class="nowrap">2-layer</span>' in got and "\u2011" not in got
    assert "<sec-six-layers>" in got  # a label is left as it is


def test_check_fresh_bullet_passes_on_a_chapter_and_fails_on_a_wrong_key_set():
    from pathlib import Path

    import pytest

    from attnconv.chapters import paper_verdicts as pv
    from attnconv.chapters.shared.checks import Checks

    nb = str(Path(__file__).resolve().parents[2] / "book" / "09_learned_encoding.ipynb")
    pv.check_fresh_bullet(Checks(), nb, ["learned_pixels", "learned_matched_lemma"])
    with pytest.raises(AssertionError):
        pv.check_fresh_bullet(Checks(), nb, ["learned_pixels"])


def _light_palette():
    """The ``--pst-color-*`` values the installed themes set for the light colour mode:
    pydata-sphinx-theme's, then sphinx-book-theme's (loaded after it, so its values win)."""
    from importlib.util import find_spec
    from pathlib import Path

    palette = {}
    for package, css in (
        (
            "pydata_sphinx_theme",
            "theme/pydata_sphinx_theme/static/styles/pydata-sphinx-theme.css",
        ),
        (
            "sphinx_book_theme",
            "theme/sphinx_book_theme/static/styles/sphinx-book-theme.css",
        ),
    ):
        spec = find_spec(package)
        if spec is None:
            pytest.skip(f"{package} is not installed")
        text = (Path(spec.origin).parent / css).read_text()
        for block in re.findall(r"html\[data-theme=light\]\{([^}]*)\}", text):
            palette.update(
                re.findall(r"--pst-color-([a-z-]+):(#[0-9a-fA-F]{3,8})", block)
            )
    return palette


def _hex6(colour: str) -> str:
    """``#abc`` as ``#aabbcc``, in lower case."""
    c = colour.lower().lstrip("#")
    return "#" + (c if len(c) == 6 else "".join(x * 2 for x in c))


def test_figure_colours_are_the_badges_colours_in_the_built_book():
    """A figure's verdict colours are the badges' own: each role's fill and text colour in
    BADGE_ROLE_COLOURS is the theme's (sphinx-design's badge colours come from the theme's
    palette; book/_static/*.css overrides none of them in light mode, the figures' mode)."""
    from pathlib import Path

    from attnconv.chapters.shared.badges import (
        BADGE_ROLE_COLOURS,
        CATEGORY_BADGES,
        VERDICT_BADGES,
        VERDICT_COLOURS,
        text_colour,
    )

    palette = _light_palette()
    for role, (fill, text) in BADGE_ROLE_COLOURS.items():
        name = role.removeprefix("bdg-")
        assert _hex6(palette[name]) == fill, role
        assert _hex6(palette[f"{name}-text"]) == text, role
    static = Path(__file__).resolve().parents[2] / "book" / "_static"
    for css in static.glob("*.css"):  # only the dark mode's rules may restyle a badge
        light = re.sub(r'html\[data-theme="dark"\][^{]*\{[^}]*\}', "", css.read_text())
        assert not re.search(r"sd-(?:bg|color|outline)-|bdg-", light), css.name
    for verdict, (role, _) in VERDICT_BADGES.items():
        assert VERDICT_COLOURS[verdict] == BADGE_ROLE_COLOURS[role][0]
        assert text_colour(verdict) == BADGE_ROLE_COLOURS[role][1]
    for word, role in CATEGORY_BADGES.items():
        assert (
            VERDICT_COLOURS[word] == BADGE_ROLE_COLOURS[role.removesuffix("-line")][0]
        )
        # an outlined badge's word is drawn in its border's colour
        if role.endswith("-line"):
            assert text_colour(word) == VERDICT_COLOURS[word]


def test_every_badge_word_has_a_look_of_its_own():
    """No two words share a badge role: "exact" (a proof or exact check holds) is not drawn as
    "reproduced" (an experimental claim at CPU scale), though both are green; it is the
    outline."""
    from attnconv.chapters.shared.badges import (
        CATEGORY_BADGES,
        VERDICT_BADGES,
        outlined,
        text_colour,
    )

    roles = [role for role, _ in VERDICT_BADGES.values()] + list(
        CATEGORY_BADGES.values()
    )
    assert len(set(roles)) == len(roles), roles
    assert CATEGORY_BADGES["exact"] == "bdg-success-line"
    assert outlined("exact") and outlined("exploratory")
    assert not any(outlined(v) for v in VERDICT_BADGES)
    assert text_colour("exact") == "#00843f" != text_colour(REPRODUCED)


def test_a_verdict_word_is_its_badge_word():
    """Tables that name a verdict in words use the badge's word; other words pass through."""
    from attnconv.chapters.shared.badges import VERDICT_BADGES, verdict_word
    from attnconv.experiments.verdicts import NOT_REPRODUCED, REPRODUCED

    assert verdict_word(REPRODUCED) == "reproduced" != REPRODUCED
    assert verdict_word(NOT_REPRODUCED) == "not reproduced"
    assert verdict_word("pending") == "pending"
    assert {verdict_word(v) for v in VERDICT_BADGES} == {
        w for _, w in VERDICT_BADGES.values()
    }
