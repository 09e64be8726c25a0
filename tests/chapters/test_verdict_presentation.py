"""How the chapters show the verdicts (ch. 12's claims table and dropdowns, ch. 17's scorecard and claim board):
presentation only, every verdict and number as the rule gives it."""

import matplotlib

matplotlib.use("Agg")

from dataclasses import replace

from attnconv.chapters import paper_verdicts as pv
from attnconv.chapters.shared import paper_claims as pc
from attnconv.chapters.shared.badges import VERDICT_BADGES
from attnconv.experiments.claims import CLAIMS
from attnconv.experiments.verdicts import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    Evidence,
)


def _claim(verdict=REPRODUCED, evidence=None, confounds=()):
    return Claim(
        quote="the heads attend on specific pixel",
        source="Sec. 4.2",
        test="a test",
        evidence=evidence or [Evidence("run a", "3 heads")],
        verdict=verdict,
        reason="because",
        confounds=confounds,
        where="sec-six-layers-grid",
        key="grid_layer4",
    )


def test_off_setting_runs_are_gathered_under_one_line():
    c = _claim(
        evidence=[
            Evidence("run a", "3 heads"),
            Evidence("run b", "2 heads" + pv.OFF_SETTING_NOTE),
        ]
    )
    at, off = pv.split_evidence(c)
    assert [e.run for e in at] == ["run a"] and [e.measured for e in off] == ["2 heads"]
    text = pv.claim_dropdowns([c])
    assert text.startswith("::::{dropdown}") and text.rstrip().endswith("::::")
    assert "not the claim's setting" not in text
    assert text.count("listed, not counted") == 1
    assert f"**{REPRODUCED}**" in text


def test_confounds_are_named_once_and_tabled_by_claim():
    """Each confound once in the numbered list, with its short name; the table has a row per
    claim a confound touches and a dot in the column of each confound that touches it."""
    from attnconv.experiments.claims import (
        CONFOUND_NAMES,
        NO_CONTROL_CONFOUND,
        SCHEDULE_CONFOUND,
    )

    a = _claim(confounds=(SCHEDULE_CONFOUND,))
    b = _claim(confounds=(SCHEDULE_CONFOUND, NO_CONTROL_CONFOUND))
    b = replace(b, key="pruning_recovers")
    c = replace(_claim(), key="pruning_hurts")  # touched by none
    note = pv.confounds_note([a, b, c])
    assert note.count(SCHEDULE_CONFOUND[:40]) == 1 and note.count("1. **") == 1
    assert f"2. **{CONFOUND_NAMES[NO_CONTROL_CONFOUND]}.**" in note
    rows = pv.confounds_table([a, b, c]).data.splitlines()
    assert rows[0] == "| claim | 1 | 2 |"  # claim + two confounds, by number
    body = [[x.strip() for x in r.strip("|").split("|")] for r in rows[2:]]
    assert [r[1:] for r in body] == [["●", ""], ["●", "●"]]


def test_scorecard_counts_every_verdict():
    claims = [_claim(REPRODUCED), _claim(REPRODUCED), _claim(INCONCLUSIVE)]
    assert pv.verdict_counts(claims) == {
        REPRODUCED: 2,
        NOT_REPRODUCED: 0,
        INCONCLUSIVE: 1,
    }
    table = pv.scorecard_table(claims)
    # the experimental rows count the judge's fresh verdicts, not these (exploratory) claims
    fresh = pv.fresh_counts(list(pv.fresh_verdicts()))
    for verdict, n in fresh.items():
        if verdict in VERDICT_BADGES:
            role, word = VERDICT_BADGES[verdict]
            row = next(r for r in table.splitlines() if f"{{{role}}}`{word}`" in r)
            assert f"| {n} |" in row, (verdict, row)
    assert "{bdg-danger}`errata`" in table


def test_exact_checks_and_descriptions_are_shown_apart_not_tallied():
    """The FLOP count (exact) and the heads pruned per layer (one run of the paper) are not
    experimental verdicts: the tally, the box and the scorecard's experimental rows leave them
    out, and they get a row and a block of their own."""
    flops = replace(_claim(REPRODUCED), key="local_fewer_flops", where="ch-performance")
    pruned = replace(_claim(NOT_REPRODUCED), key="pruned_counts")
    grid = _claim(NOT_REPRODUCED)
    claims = [_claim(REPRODUCED), grid, flops, pruned]
    assert pv.counted(claims) == claims[:2]
    assert [c.key for c in pv.not_counted(claims)] == [
        "local_fewer_flops",
        "pruned_counts",
    ]
    assert pv.tally_words(claims) == (
        "2 claims: 1 reproduced at CPU scale; 1 not reproduced at CPU scale; 0 inconclusive"
    )
    box = " ".join(pv.what_holds_box(claims).split())
    # the box gives the fresh seeds' verdicts only: the exploratory counts are Table 17.4's
    assert "exploratory" not in box and "earlier runs" not in box
    assert box.startswith("```{admonition} In short") and "result-box" in box
    assert "{ref}`frozen protocol <appendix-protocol>`" in box  # one click from ch. 17
    table = pv.scorecard_table(claims)
    assert "{bdg-dark}`not counted`" in table and "(an exact count)" in table
    # the count column is the fresh seeds' count; the exploratory counts are Table 17.4's
    fresh = pv.fresh_counts(list(pv.fresh_verdicts()))[REPRODUCED]
    assert (
        f"| Experimental claims reproduced | {fresh} | "
        "{ref}`below <sec-every-claim>` |" in table
    )
    assert "exploratory" not in table
    text = pv.not_counted_markdown(claims, counts_ref="Table 8.1")
    assert (
        "An exact check, not an experiment" in text
        and "A description, not a verdict" in text
    )
    assert REPRODUCED not in text and NOT_REPRODUCED not in text


def test_statements_shown_apart_get_the_not_counted_badge_everywhere():
    """The dropdowns say "not counted" for a description or an exact count, never the verdict
    the rule computed for it."""
    pruned = replace(_claim(NOT_REPRODUCED), key="pruned_counts")
    drop = pv.claim_dropdowns([pruned])
    assert drop.splitlines()[0].endswith(
        ": not counted (a description beside the paper's one run)"
    )


def test_the_count_sentence_reconciles_registry_and_protocol():
    """The sentence's numbers are the registry's and the frozen protocol's, counted here from
    their own records."""
    from attnconv.evidence.protocol import CLAIMS as FROZEN

    flops = replace(_claim(REPRODUCED), key="local_fewer_flops", where="ch-performance")
    pruned = replace(_claim(NOT_REPRODUCED), key="pruned_counts")
    judged = [replace(_claim(), key=k) for k in FROZEN if k != "pruning_finds_heads"]
    text = pv.claims_count_sentence(judged + [flops, pruned])
    n = len(judged)
    # one count first: the protocol's claims
    assert text.startswith(
        f"The book counts {len(FROZEN)} experimental claims of the paper: the frozen "
        "protocol's, each judged on fresh seeds."
    )
    # then what is left out, and why
    assert "It leaves out two more statements, shown apart without a verdict" in text
    assert "an exact count (settled by counting" in text and "a description (" in text
    # then the exploratory count, and the claim the protocol added
    assert f"cover {n} claims; the protocol added one: " in text
    assert text.endswith(FROZEN["pruning_finds_heads"].prop + ".")


def test_redundancy_note_says_when_only_a_helpful_removal_can_pass():
    note = pc.redundancy_margin_note(0.009, 0.005)
    assert "can pass only when removing a head helps" in note
    assert "at least 0.9 points" in note and "more than 0.4 points" in note
    assert pc.redundancy_margin_note(0.004, 0.005) == ""


def test_a_dropdown_leads_with_the_fresh_seeds_verdict():
    """A claim the frozen protocol judged: its dropdown's title is the claim as a plain phrase
    with the fresh verdict only; its body gives the fresh line, then the earlier runs' verdict
    as a sentence."""
    c = _claim(REPRODUCED)
    fresh = pv.fresh_verdicts()["grid_layer4"].verdict
    assert fresh != REPRODUCED  # so the title's verdict can only be the fresh one
    text = pv.claim_dropdowns([c])
    title = text.splitlines()[0]
    assert title == f"::::{{dropdown}} A grid at layer 4 (Fig. 2), run by run: {fresh}"
    assert "exploratory" not in title
    assert text.index("*Fresh seeds*") < text.index("*Earlier runs.*")
    assert f"not counted, gave **{REPRODUCED}** — because." in text
    assert pv.plain_title("App. A.1: no gain") == "No gain (App. A.1)"
    assert pv.plain_title("no source") == "no source"


def test_a_compact_interval_keeps_the_numbers_of_the_formatted_one():
    """Table 17.2's cell, against :meth:`Interval.format` on made-up intervals: the estimate and
    both ends as format prints them, the method's words and seed counts left out; one run on a
    side says so."""
    from attnconv.experiments.verdicts import PAIRED, SEEDS_PAIRED, Interval

    paired = Interval(-0.037, -0.077, 0.003, 0.02, 7, 0.05, PAIRED, (8, 8))
    assert paired.format().startswith("−3.7 points, 95 % interval [−7.7, +0.3] (")
    assert paired.compact() == "−3.7 points [−7.7, +0.3]"
    assert paired.compact(named=True) == "−3.7 points, 95 % interval [−7.7, +0.3]"
    seeds = Interval(1.75, 0.39, 3.12, 0.3, 2, 1.0, SEEDS_PAIRED, (3, 3))
    assert seeds.format(scale=1, unit=" tokens", digits=2).startswith(
        "+1.75 tokens, 95 % interval [+0.39, +3.12] ("
    )
    assert (
        seeds.compact(scale=1, unit=" tokens", digits=2)
        == "+1.75 tokens [+0.39, +3.12]"
    )
    one = Interval(3, 3, 3, 0, 0, 0, PAIRED, (1, 1), seed_term_known=False)
    assert one.compact(scale=1, unit=" heads", digits=0) == "+3 heads: no interval"


def test_the_claim_board_draws_each_judged_claim_at_its_two_verdicts():
    """Figure 17.1: one row per claim the judge gives a fresh verdict, named as the registry
    names it, grouped reproduced / inconclusive / not reproduced; in each row a filled dot in
    the column of the judge's fresh verdict and a ring in the column of the exploratory verdict
    (read here from the claims, not the board's rows), in the verdict's badge colour, the
    inconclusive dots outlined in the dark theme's grey."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex

    from attnconv.chapters.shared.badges import VERDICT_COLOURS
    from attnconv.evidence.judge import confirmatory_verdicts

    fresh = confirmatory_verdicts()
    claims = [c for g in pv.GROUPS for c in pv.book_claims().get(g, [])]
    before = {c.key: c.verdict for c in claims}
    fig = pv.plot_claim_board(claims, fresh)
    (ax,) = fig.axes
    names = [t.get_text() for t in ax.get_yticklabels()]
    assert len(names) == len(fresh) == len(set(names))
    column = {v: i for i, v in enumerate((REPRODUCED, INCONCLUSIVE, NOT_REPRODUCED))}
    marks = {}
    for line in (m for m in ax.lines if m.get_marker() == "o"):  # not the group lines
        (x,), (y,) = line.get_xdata(), line.get_ydata()
        filled = line.get_markerfacecolor() != "none"
        marks.setdefault(round(y), {})[filled] = (round(x), line)
    for key, got in fresh.items():
        if key not in CLAIMS:
            continue
        y = names.index(CLAIMS[key].title)
        x, dot = marks[y][True]
        assert x == column[got.verdict]
        assert to_hex(dot.get_markerfacecolor()) == to_hex(VERDICT_COLOURS[got.verdict])
        if got.verdict == INCONCLUSIVE:
            assert to_hex(dot.get_markeredgecolor()) == "#6c757d"
        if key in before:
            assert marks[y][False][0] == column[before[key]]
    by_row = sorted(marks)
    columns = [marks[y][True][0] for y in by_row]
    assert columns == sorted(columns)  # grouped by fresh verdict, top to bottom
    plt.close(fig)


def test_clauses_cut_at_semicolons_outside_brackets_only():
    text = "a (1 v 3 seeds; one run: no interval); b [x; y]; c"
    assert pv.clauses(text) == [
        "a (1 v 3 seeds; one run: no interval)",
        "b [x; y]",
        "c",
    ]
    assert "; ".join(pv.clauses(text)) == text  # nothing lost, nothing reworded


def test_paired_label_says_what_is_paired():
    got = pv.paired_over_images(
        "+4.8 points, 95 % interval [+0.6, +9.0] (paired, 3 v 5 seeds)"
    )
    assert got == (
        "+4.8 points, 95 % interval [+0.6, +9.0] (paired over the test images, 3 v 5 seeds)"
    )
    # a same-model comparison and a seeds-only interval are left as they are
    same = "(paired, one model, exact McNemar)"
    assert pv.paired_over_images(same) == same
    assert (
        pv.paired_over_images("(seeds only, 3 v 5 seeds)")
        == "(seeds only, 3 v 5 seeds)"
    )


def _card_claim():
    return Claim(
        quote="our implementation achieves accuracy close to that of ResNet18",
        source="Sec. 4.3",
        test="learned minus ResNet18; lower end above −2 points",
        evidence=[
            Evidence("6 layers", "+4.8 points (paired, 3 v 5 seeds)"),
            Evidence("2 layers", "−1.8 points" + pv.OFF_SETTING_NOTE),
        ],
        verdict=REPRODUCED,
        reason="its lower end is above −2 points; the margin",
        key="close_to_resnet",
        kind="non-inferiority",
        margin="−2 points",
    )


def test_card_rows_hold_the_claim_the_test_each_run_and_both_verdicts():
    rows = pv.claim_card_rows(_card_claim())
    parts = [r[0] for r in rows]
    assert parts == [
        "claim",
        "test",
        "run",
        "run, not counted",
        "fresh seeds",
        "exploratory",
    ]
    assert (
        rows[0][2] == "“our implementation achieves accuracy close to that of ResNet18”"
    )
    assert rows[1] == (
        "test",
        "non-inferiority, margin −2 points",
        "learned minus ResNet18<br>lower end above −2 points",
    )
    assert rows[2][1:] == (
        "6 layers",
        "+4.8 points (paired over the test images, 3 v 5 seeds)",
    )
    assert rows[3][1:] == ("2 layers", "−1.8 points")  # the note is the row's part now
    assert rows[-1][1] == pv.verdict_badge(REPRODUCED)
    assert rows[-1][2] == "its lower end is above −2 points<br>the margin"
    got = pv.fresh_verdicts()["close_to_resnet"]
    assert rows[-2][1].startswith(pv.verdict_badge(got.verdict))


def test_cards_are_numbered_tables_with_at_most_two_sentences():
    c = _card_claim()
    text = pv.claim_cards([c, replace(c, evidence=c.evidence[:1])], "12", 4)
    blocks = text.split("\n\n::::{dropdown}")
    assert len(blocks) == 2 and text.startswith("::::{dropdown}")
    assert (
        "```{table} **Table 12.4 —** Sec. 4.3: accuracy close to ResNet18:" in blocks[0]
    )
    assert "```{table} **Table 12.5 —**" in blocks[1]
    assert "| part | which | what |" in blocks[0]
    for block in blocks:
        after = block.split("```\n", 2)[-1]  # what follows the table
        prose = [line for line in after.splitlines() if line and line != "::::"]
        assert len(prose) == 1  # one paragraph of at most two short sentences
        sentences = prose[0].split(". ")
        assert len(sentences) <= 2 and all(len(s.split()) <= 20 for s in sentences)
    # the first card lists a run at another setting and a paired interval: both notes
    assert pv.OFF_SETTING_SENTENCE in blocks[0] and pv.PAIRED_NOTE in blocks[0]
    # the second lists no run at another setting: the paired note only
    assert pv.OFF_SETTING_SENTENCE not in blocks[1] and pv.PAIRED_NOTE in blocks[1]


def test_a_long_cell_line_is_cut_at_its_first_colon_only():
    long = "the test can pass only when (a: b) it helps: " + "word " * 40 + "end"
    c = replace(_card_claim(), reason="short; " + long)
    cell = pv.claim_card_rows(c)[-1][2]
    assert cell.split("<br>") == [
        "short",
        "the test can pass only when (a: b) it helps:",
        ("word " * 40 + "end"),
    ]
    short = replace(_card_claim(), reason="a: b")
    assert pv.claim_card_rows(short)[-1][2] == "a: b"


def test_six_layers_box_counts_the_fresh_seeds_and_states_findings():
    """Ch. 12's box: one row of badges, the fresh-seed verdicts of the page's claims and of the
    protocol's claims it adds; then the findings, one bullet each; no exploratory verdict and no
    counting notes (ch. 17's Table 17.4 lines up the counts)."""
    from attnconv.evidence.judge import ConfirmatoryVerdict
    from attnconv.evidence.protocol import CLAIMS as FROZEN

    def fresh(verdict):
        return ConfirmatoryVerdict(
            key="x", verdict=verdict, detail="", seeds=(1,) * 8, alternatives={}
        )

    grid = _claim(NOT_REPRODUCED)
    local = replace(_claim(REPRODUCED), key="local_then_far")
    pruned = replace(_claim(NOT_REPRODUCED), key="pruned_counts")
    got = {k: fresh(INCONCLUSIVE) for k in FROZEN}
    got[grid.key] = fresh(NOT_REPRODUCED)
    got["local_then_far"] = fresh(REPRODUCED)
    box = pv.six_layers_box(
        [local, grid, pruned],
        ["pruning_finds_heads"],
        "a headline.",
        ["**By layer.** one.", "**Pruning.** two."],
        fresh=got,
    )
    flat = " ".join(box.split())
    assert box.startswith("```{admonition} In short") and "result-box" in box
    # one row of verdict badges: the fresh seeds' 3 claims (2 counted here, 1 added)
    assert flat.count("{bdg-success}") == flat.count("{bdg-warning}") == 1
    assert (
        "{bdg-success}`1 reproduced` {bdg-warning}`1 not reproduced` "
        "{bdg-muted}`1 inconclusive` **On fresh seeds, a headline.**" in flat
    )
    assert (
        "\n- **By layer.** one.\n- **Pruning.** two.\n- **The badges** count 3 of the "
        f"book's {len(got)} claims about trained models (with *" in box
    )
    # the rest of the protocol's claims: how many, and a link to where each is judged
    rest = [
        k for k in got if k not in ("local_then_far", grid.key, "pruning_finds_heads")
    ]
    assert f"; the other {len(rest)}: *" in flat
    assert flat.count("is judged {ref}`on its own page <") == len(rest)
    assert box.endswith(".\n```")
    # one claim judged elsewhere: named in the singular
    one = {k: v for k, v in got.items() if k not in rest[1:]}
    single = pv.six_layers_box(
        [local, grid, pruned], ["pruning_finds_heads"], "h.", fresh=one
    )
    assert "; the other, *" in " ".join(single.split())
    assert "exploratory" not in box and "Table 12.1" not in box
    # the badges count every claim of the protocol: the book's tally, nothing to explain
    whole = {k: v for k, v in got.items() if k not in rest}
    book = pv.six_layers_box(
        [local, grid, pruned], ["pruning_finds_heads"], "h.", ["b."], whole
    )
    assert "The badges" not in book and "the other" not in book
    assert book.endswith("- b.\n```") and "**On fresh seeds, h.**" in book


def test_chapter_12_counts_the_book_s_claims():
    """Ch. 12's box counts the claims the index and ch. 17 count: its own six-layer claims, the
    learned encoding's (judged on ch. 9's page) and the protocol's claim that the pruning rule
    finds heads."""
    from attnconv.evidence.protocol import CLAIMS as FROZEN

    claims = pv.book_claims()
    every = [c for group in pv.GROUPS for c in claims.get(group, [])]
    tallied = pv.six_layers_tallied(every)
    keys = [c.key for c in tallied] + list(pv.SIX_LAYERS_ADDED)
    assert sorted(keys) == sorted(FROZEN) and len(keys) == len(set(keys))
    assert "learned_matched_lemma" in keys and "pruned_counts" not in keys


def test_each_claim_has_one_card_and_the_chapters_link_to_it():
    """A claim carded on the claims page (ch. 12) is a link elsewhere, with its fresh badge; a
    claim carded nowhere else gets its card in the chapter; every card is a link target."""
    from attnconv.experiments.claims import CLAIMS

    carded = [k for keys in pv.CARDS_IN_12.values() for k in keys]
    assert len(carded) == len(set(carded)) and set(carded) <= set(CLAIMS)
    there = replace(_claim(), key=carded[0])
    here = _claim()  # grid_layer4: its card is in its chapter
    assert here.key not in carded
    text = pv.claim_evidence([there, here])
    assert text.startswith(
        "The evidence for this claim, seed by seed, is on its card in "
    )
    assert "\n\n- {ref}`" in text  # the claim, a bullet linked to its card
    label = pv.card_label(carded[0])
    assert f"<{label}>`" in text and pv.fresh_badge(carded[0]) in text
    assert text.count("::::{dropdown}") == 1  # only the claim carded nowhere else
    assert ":name: card-grid-layer4" in text
    assert pv.card_label("local_then_far") == "card-local-then-far"
    cards = pv.claim_cards([_card_claim()], "12", 4)
    assert f":name: {pv.card_label(_card_claim().key)}" in cards


def test_the_errata_are_one_table_with_both_names():
    """Table 17.1 names each wrong statement by the first of its pair; the count is the
    table's."""
    assert all(len(pair) == 2 and all(pair) for pair in pv.ERRATA_WRONG)
    row = next(r for r in pv.scorecard_table([]).splitlines() if "`errata`" in r).split(
        " | "
    )
    assert row[1] == "; ".join(name for name, _ in pv.ERRATA_WRONG)
    assert row[2] == str(len(pv.ERRATA_WRONG))


def test_the_claims_page_cards_its_own_counted_claims():
    """Every claim of ch. 12's cards is judged there (its evidence section is on that page)."""
    claims = {c.key: c for g in pv.GROUPS for c in pv.book_claims().get(g, [])}
    for keys in pv.CARDS_IN_12.values():
        for key in keys:
            assert claims[key].where.startswith("sec-six-layers"), key


def test_chapter_17s_box_counts_the_judged_follow_up_claims():
    """The box's follow-up line: how many follow-up questions are judged, pointing to the table
    that gives each; nothing when all are pending."""
    from attnconv.evidence.judge import PENDING, followup_verdicts

    got = followup_verdicts()
    line = pv.followup_bullet()
    judged = [v.verdict for v in got.values() if v.verdict != PENDING]
    assert bool(line) == bool(judged)
    if judged:
        assert f"outside the tally: {len(judged)} questions " in line
        assert "tab-what-holds-followup" in line


def test_ch12_gives_the_matched_resnet_finding_first_and_its_numbers_as_a_list():
    """Ch. 12's second test of "close to ResNet18": the finding and verdict in one opening
    sentence pair, then its seeds and its interval as a list (the gap is the box's), and
    fragility as one more item, said once."""
    from attnconv.evidence.judge import ConfirmatoryVerdict
    from attnconv.experiments.verdicts import Interval

    iv = Interval(-0.038, -0.063, -0.012, 0.01, 7.0, 0.02, "paired", (8, 8))
    got = ConfirmatoryVerdict(
        "close_to_resnet_matched", INCONCLUSIVE, "", (), None, 0.05, {}, interval=iv
    )
    text = pv.matched_resnet_list({"close_to_resnet_matched": got})
    first, *rest = text.split("\n")
    assert first.startswith("The learned model is still behind.")
    assert "`inconclusive`" in first and "points" in first
    items = [line for line in rest if line.startswith("- ")]
    assert len(items) == 2
    assert items[0] == "- **Seeds**: 8 new ones, 2000–2007."
    assert items[1].startswith("- **95 % interval**: −6.3 to −1.2 points")
    assert "fragile" not in text and "3.8" not in text
    got.alternatives = {"margin halved": NOT_REPRODUCED}
    text = pv.matched_resnet_list({"close_to_resnet_matched": got})
    assert text.count("`Fragile <glossary-fragile>`") == 1
    assert text.endswith(f"*{NOT_REPRODUCED}*.")


def test_ch12_names_both_resnet_tests_in_two_short_sentences():
    """Ch. 12's two sentences on ResNet18: the frozen test's gap, the tuned ResNet18's size
    ratio and verdict, then the size-matched second test's gap and verdict; while the second
    test's runs are being made, it says so."""
    from attnconv.evidence.judge import ConfirmatoryVerdict, followup_verdicts

    fresh, followup = pv.fresh_verdicts(), followup_verdicts()
    text = pv.resnet_sentence(fresh, followup)
    tuned, matched = fresh["close_to_resnet"], followup["close_to_resnet_matched"]
    ratio = pv.resnet_size_ratio("close_to_resnet")
    assert text.startswith(
        f"The learned model is {-tuned.scale * tuned.interval.estimate:.1f} points behind "
        f"a ResNet18 {ratio:.1f} times its size: *{tuned.verdict}*. Against "
    )
    assert text.endswith(
        f"`one of its own size <sec-six-layers-resnet>`, it is "
        f"{-matched.scale * matched.interval.estimate:.1f} points behind: "
        f"*{matched.verdict}*."
    )
    assert text.count(". ") == 1
    pending = ConfirmatoryVerdict("close_to_resnet_matched", "pending", "runs not made")
    text = pv.resnet_sentence(fresh, {"close_to_resnet_matched": pending})
    assert text.endswith("are being made.")


def test_chapter_17s_box_says_what_the_tally_means_in_its_own_words():
    """Ch. 17's box: the fresh seeds' badges and headline, the share reproduced in words, and
    the errata by kind (one is the paper's own conjecture); not the intro's sentence, and no
    second test (the body tells it)."""
    fresh = pv.fresh_verdicts()
    box = " ".join(pv.what_holds_box([], fresh).split())
    held = sum(v.verdict == REPRODUCED for v in fresh.values())
    assert (
        f"**The tally.** {pv.share_words(held, len(fresh))} of the claims hold at CPU "
        "scale, each on its own evidence" in box
    )
    # what a reader should conclude from the correction over all the claims, linked, in
    # plain words: the seeds per model and the claims counted
    seeds = max(len(v.seeds) for v in fresh.values())
    assert (
        f"With {seeds} seeds, no claim survives a {{ref}}`test that corrects for judging "
        f"{len(fresh)} at once <sec-why-fragile>`." in box
    )
    assert "correction over all the claims" not in box
    # the theory in one line; the errata counted, named in Table 17.1 (not the intro's words)
    assert "Every lemma and theorem checks exactly." in box
    assert (
        f"scores the rest of the paper, with its {len(pv.ERRATA_WRONG)} errata." in box
    )
    assert "are wrong, by an exact check" not in box
    assert "The theory holds as stated" not in box and "Asked again" not in box
    assert pv.share_words(6, 18) == "A third" and pv.share_words(6, 17) == "6 of 17"
    assert pv.share_words(4, 8) == "Half"
    conjectures = [n for n, _ in pv.ERRATA_WRONG if "conjecture" in n]
    assert len(conjectures) == 1
    assert pv.errata_words() == "two statements and one conjecture of the paper"
