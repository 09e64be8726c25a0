"""The "In short" badges a notebook states are read back from its file, counted per verdict."""

import json

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
    table = pv.claims_overview(pv.counted(pv.book_claims()["depth"]))
    assert "| exploratory | fresh seeds |" in table


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


def test_keep_words_keeps_ranges_and_hyphenated_words_whole_but_not_labels():
    from attnconv.chapters.shared.tables import keep_words

    got = keep_words("layers 4-6 of the 2-layer run, {ref}`ch. 12b <sec-six-layers>`")
    assert "4\u20116" in got and "2\u2011layer" in got
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
