"""The protocol page's tables: the freeze record is checked (a changed protocol fails the page),
every claim and alternative is listed, and a fragile verdict is marked."""

import pytest

from attnconv.chapters import protocol as page
from attnconv.evidence import freeze, protocol
from attnconv.evidence.judge import ConfirmatoryVerdict, confirmatory_verdicts


def test_freeze_table_names_the_commit_and_fails_on_a_change(monkeypatch):
    assert freeze.FREEZE_COMMIT[:10] in page.freeze_table().data
    monkeypatch.setattr(freeze, "FROZEN_DIGEST", "0" * 64)
    with pytest.raises(AssertionError, match="changed after its freeze"):
        page.freeze_table()


def test_every_claim_and_alternative_is_listed():
    claims = page.claims_table().data
    assert claims.count("\n") == 1 + len(protocol.CLAIMS)
    from attnconv.chapters.shared.tables import keep_words

    verdicts = confirmatory_verdicts()
    rows = page.robustness_table(verdicts).data.splitlines()[2:]
    assert len(rows) == len(protocol.CLAIMS)
    for row, (key, c) in zip(rows, protocol.CLAIMS.items()):
        assert row.startswith(f"| {keep_words(page.claim_name(key))} |")
        for alt in c.alternatives:
            assert keep_words(alt) in row
        fragile = any(
            got != verdicts[key].verdict for got in verdicts[key].alternatives.values()
        )
        assert (row.split(" | ")[2] != "—") == fragile


def test_a_fragile_verdict_is_marked():
    v = {k: ConfirmatoryVerdict(k, "pending", "") for k in protocol.CLAIMS}
    v["no_gain"] = ConfirmatoryVerdict(
        "no_gain",
        "reproduced at CPU scale",
        "",
        alternatives={"margin halved": "inconclusive"},
    )
    table = page.verdicts_table(v, {}).data
    assert "reproduced at CPU scale (fragile)" in table
    assert page.tally_words(v).startswith("of 18 claims: 1 reproduced")


def test_the_tuning_table_marks_each_arms_best_validation_run_and_its_grid_ends():
    """Against the saved tuning files read with a plain loop: one row per tuning run, the chosen
    row is the arm's best mean validation accuracy, and "at the grid's end" names exactly the
    values whose choice is the first or last of the frozen grid."""
    import json

    from attnconv.chapters import protocol as page
    from attnconv.evidence import protocol
    from attnconv.experiments.store import results_dir

    rows = page.tuning_table().data.splitlines()[2:]
    tuned = [k for k, a in protocol.ARMS.items() if a.grid]
    for arm in tuned:
        saved = json.loads((results_dir() / f"confirm/tuning-{arm}.json").read_text())
        mine = [r for r in rows if r.startswith(f"| {arm} |")]
        assert len(mine) == len(saved["runs"])
        best = max(saved["runs"], key=lambda r: r["val_acc_last3"])
        chosen = [r for r in mine if "chosen" in r]
        assert len(chosen) == 1 and f"{100 * best['val_acc_last3']:.1f} %" in chosen[0]
        ends = []
        for k, grid in protocol.ARMS[arm].grid.items():
            v = saved["choice"][k]
            v = tuple(v) if isinstance(v, list) else v
            if v in (grid[0], grid[-1]):
                ends.append(k)
        assert ("grid's end" in chosen[0]) == bool(ends), arm
        for k in ends:
            assert k in chosen[0].split("grid's end:")[1]


def test_the_fresh_arms_table_reads_every_fresh_history():
    """Against the histories read with a plain loop: one row per arm with all its seeds, and the
    learned arm's mean test accuracy."""
    import json

    from attnconv.experiments.store import runs_dir

    rows = page.fresh_arms_table().data.splitlines()[2:]
    assert len(rows) == len(protocol.ARMS)
    test = [
        json.loads(p.read_text())["epochs"][-1]["test_acc"]
        for p in sorted((runs_dir() / "confirm/learned").glob("seed*/history.json"))
    ]
    row = next(r for r in rows if r.startswith("| learned |"))
    assert f"| {len(test)} |" in row
    assert f"{100 * sum(test) / len(test):.1f} % ±" in row


def test_the_followup_tables_read_its_freeze_and_its_runs():
    import json
    from pathlib import Path

    from attnconv.evidence import followup
    from attnconv.evidence.judge import PENDING, followup_verdicts

    record = page.followup_record_table().data
    assert freeze.FOLLOWUP_FREEZE_COMMIT[:10] in record
    arms = page.followup_arms_table().data
    # the learned arm's size, as its fresh runs recorded it when they were trained
    saved = Path(__file__).resolve().parents[2] / "book/runs/confirm/learned/seed1000"
    if (saved / "history.json").is_file():
        n = json.loads((saved / "history.json").read_text())["num_parameters"]
        assert f"| learned | {n:,} |" in arms
    verdicts = followup_verdicts()
    assert set(verdicts) == set(followup.all_claims())
    claims = page.followup_claims_table(verdicts).data
    for v in verdicts.values():
        assert v.verdict in claims
        if v.verdict == PENDING:
            assert not v.seeds


def test_the_followup_amendment_table_lists_each_amendment():
    from attnconv.evidence import followup

    text = page.followup_amendments_table().data
    assert len(text.splitlines()) == 2 + len(followup.AMENDMENTS)
    assert followup.AMENDMENTS[0].visible.split(":")[0] in text
    record = page.followup_record_table().data
    assert freeze.FOLLOWUP_AMENDMENT_COMMIT[:10] in record


def test_the_followup_table_stands_beside_the_frozen_verdicts_and_counts_the_registry():
    """Chapter 17's follow-up table: one row per question, with the frozen verdict it asks again
    beside its own verdict and the difference it rests on; the runs made as the registry counts
    them (oracle: RUNS and run_state, read here)."""
    from attnconv.chapters.shared.badges import verdict_badge
    from attnconv.evidence import followup
    from attnconv.evidence.followup_runs import followup_run_name, followup_tuning_runs
    from attnconv.evidence.judge import PENDING, followup_verdicts
    from attnconv.experiments.registry import RUNS, run_state

    frozen, fresh = confirmatory_verdicts(), followup_verdicts()
    rows = page.followup_table(frozen, fresh).data.splitlines()[2:]
    assert set(page.FOLLOWUP_OF) == set(followup.all_claims())
    assert len(rows) == len(page.FOLLOWUP_OF)
    for row, (key, base) in zip(rows, page.FOLLOWUP_OF.items()):
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert base in protocol.CLAIMS
        assert cells[0] == page.claim_name(base)
        assert cells[2] == verdict_badge(frozen[base].verdict)
        got = fresh[key]
        if got.verdict == PENDING:
            assert cells[3:] == ["pending", "pending"]
            continue
        assert cells[3] == verdict_badge(got.verdict)
        if got.interval is not None:  # the judge's own numbers, formatted here
            iv = got.interval
            assert cells[4].startswith(
                f"{100 * iv.estimate:+.1f}".replace("-", "\u2212")
            )
            assert cells[4].endswith("]") and cells[4].count(",") == 1
        else:  # an interval over seeds only: the judge states it in its detail
            assert cells[4] == got.detail.split(" (")[0].replace(
                ", 95 % interval ", " "
            )
    text = page.followup_status(fresh)
    runs_made = page.runs_made_sentence()
    made = lambda names: sum(
        n in RUNS and run_state(RUNS[n]) == "present" for n in names
    )
    tuning = [n for runs in followup_tuning_runs().values() for n, _ in runs]
    seeds = [followup_run_name(a, s) for a in followup.ARMS for s in followup.SEEDS]
    assert (
        f"{made(tuning)} of {len(tuning)} tuning runs and "
        f"{made(seeds)} of {len(seeds)} fresh runs are made." in runs_made
    )
    assert f"trains {len(followup.SEEDS)} new seeds per arm" in text
    assert "<sec-protocol-followup>" in text


def test_the_tuning_curves_are_the_saved_runs_validation_accuracies():
    """Figure P.1's points against a plain reading of each run's history.json: the mean of the
    last three epochs' validation accuracy, every complete tuning run of both protocols."""
    import json
    from pathlib import Path

    from attnconv.evidence.followup_runs import followup_tuning_runs

    points = page.tuning_points()
    assert len(points["frozen: learned"]) == len(protocol.ARMS["learned"].grid["lr"])
    book = Path(__file__).resolve().parents[2] / "book/runs"
    seen = 0
    for arm, runs in followup_tuning_runs().items():
        for name, values in runs:
            path = book / name / "history.json"
            if not path.is_file():
                continue
            raw = json.loads(path.read_text())
            if raw["status"] != "complete":
                continue
            val = [e["val_acc"] for e in raw["epochs"] if e.get("val_acc") is not None]
            expected = sum(val[-3:]) / 3
            got = [p for p in points[f"follow-up: {arm}"] if p["lr"] == values["lr"]]
            assert got and abs(got[0]["val"] - expected) < 1e-12
            seen += 1
    assert seen == sum(len(v) for k, v in points.items() if k.startswith("follow-up"))
    fig = page.tuning_curves_figure()
    assert len(fig.axes) == 2


def _cells(markdown: str):
    """Every cell of a Markdown table's body rows, as the reader reads it: no-wrap spans
    dropped, a code span (a digest `ab12…`, shortened on purpose) left out, closing quotes and
    brackets stripped."""
    import re

    text = re.sub(r"</?span[^>]*>", "", markdown)
    for line in text.splitlines()[2:]:
        for x in line.strip().strip("|").split(" | "):
            yield re.sub(r"`[^`]*`", "", x).strip().rstrip("”’\"')]*").strip()


def test_no_table_cell_of_the_page_is_cut_and_each_claim_is_shown_in_full():
    """Table P.3 and the follow-up's claims cut no text ("…" at a cell's end); the frozen text
    of every claim (quotation, source, measure, null, the bound's reason) is on the page whole,
    in the dropdown under Table P.3."""
    import re

    from attnconv.evidence.judge import followup_verdicts

    verdicts = confirmatory_verdicts()
    tables = {
        "claims": page.claims_table().data,
        "arms": page.arms_table().data,
        "contrasts": page.contrasts_table().data,
        "verdicts": page.verdicts_table(verdicts, {}).data,
        "robustness": page.robustness_table(verdicts).data,
        "follow-up claims": page.followup_claims_table(followup_verdicts()).data,
        "follow-up amendments": page.followup_amendments_table().data,
    }
    for name, text in tables.items():
        for cell in _cells(text):
            assert not cell.endswith("…"), (name, cell)
    full = page.claims_text("title")
    assert full.startswith("::::{dropdown} title\n") and full.endswith("\n::::")
    for c in protocol.CLAIMS.values():
        for text in (c.quote, c.source, c.prop, c.null, c.reason):
            assert text in full, (c.key, text)
        assert f"| {page.claim_name(c.key)} |" in re.sub(
            r"</?span[^>]*>", "", tables["claims"]
        )
    from attnconv.evidence import followup

    for c in followup.all_claims().values():
        assert c.prop in re.sub(r"</?span[^>]*>", "", tables["follow-up claims"])


def test_a_cut_cell_fails_the_check():
    cut = "| claim |\n| :--- |\n| “We can see that after optimization, the heads a…” |"
    assert any(c.endswith("…") for c in _cells(cut))


def test_holm_floor_against_the_binomial_arithmetic():
    """Oracle: the exact one-sided sign test's p when all n of n seeds show the property is
    1/2**n (the sum over one term, counted here with math.comb), against Holm's first threshold
    alpha/m, read from the frozen protocol."""
    import math

    from attnconv.evidence.rule import SHARE_ALPHA

    f = page.holm_floor()
    n, m = len(protocol.CONFIRMATORY_SEEDS), len(protocol.CLAIMS)
    assert (f["seeds"], f["claims"], f["alpha"]) == (n, m, SHARE_ALPHA)
    assert f["best_p"] == pytest.approx(math.comb(n, n) / 2**n, rel=1e-12)
    assert f["first_threshold"] == pytest.approx(SHARE_ALPHA / m, rel=1e-12)
    # the frozen design: 8 seeds and 18 claims, so the best p (0.0039) misses 0.0028
    assert (n, m) == (8, 18) and f["best_p"] > f["first_threshold"]


def test_why_fragile_states_the_numbers_and_the_judges_flips():
    verdicts = confirmatory_verdicts()
    text = page.why_fragile_text(verdicts)
    f = page.holm_floor()
    assert f"$p = 0.5^{{{f['seeds']}}} = {f['best_p']:.4f}$" in text
    assert f"{f['alpha']:g}/{f['claims']} = {f['first_threshold']:.4f}$" in text
    assert "no share of seeds can pass a family-wide correction" in text
    reproduced = [
        v for v in verdicts.values() if v.verdict == "reproduced at CPU scale"
    ]
    assert reproduced and all(
        v.alternatives[page.HOLM] != v.verdict for v in reproduced
    )
    assert f"all {len(reproduced)} reproduced verdicts change" in text
    sentences = [s for p in text.split("\n\n") for s in p.split(". ")]
    assert max(len(s.split()) for s in sentences) <= 25


def test_tables_name_claims_as_the_other_tables_do():
    """Table P.3 and its siblings name a claim by its registry title ("Fig. 3: local first,
    further away deeper"), as Tables 12.1 and 17.2 do, not by its key; a threshold of 10⁵ is
    written 10⁵."""
    from attnconv.experiments.claims import CLAIMS

    table = page.claims_table().data
    assert CLAIMS["local_then_far"].title in table and "local then far" not in table
    assert (
        page.claim_name("pruning_finds_heads") == "pruning finds heads"
    )  # no title: words
    assert "share, > 10⁵" in table and "100000" not in table


def test_the_pruning_sentence_reads_the_follow_ups_three_pruning_verdicts():
    """The intro's and ch. 8's sentence on pruning: nothing while a verdict is pending; once
    judged, each verdict's badge and the number that opens its detail (its interval is over
    seeds only), and a verdict with a kept interval prints that interval."""
    from attnconv.experiments.verdicts import INCONCLUSIVE, REPRODUCED, Interval

    def verdict(key, word, detail, interval=None):
        return ConfirmatoryVerdict(
            key, word, detail, (), None, 0.05, {}, interval=interval
        )

    hurts = verdict(
        "pruning_hurts_fresh",
        REPRODUCED,
        "+1.5 points, 95 % interval [+0.5, +2.6] (seeds only)",
    )
    pending = verdict("pruning_recovers_controlled", "pending", "runs not all made")
    fifteen = verdict(
        "pruning_recovers_15", INCONCLUSIVE, "−1.2 points, 95 % interval [−2.0, −0.3]"
    )
    three = {
        "pruning_hurts_fresh": hurts,
        "pruning_recovers_controlled": pending,
        "pruning_recovers_15": fifteen,
    }
    assert page.pruning_followup_sentence(three) == ""
    iv = Interval(-0.004, -0.011, 0.002, 0.003, 7.0, 0.009, "paired", (8, 8))
    three["pruning_recovers_controlled"] = verdict(
        "pruning_recovers_controlled", INCONCLUSIVE, "ignored", interval=iv
    )
    text = page.pruning_followup_sentence(three)
    assert text.startswith(
        "Pruning hurts at first, {bdg-success}`reproduced`: the unpruned model leads by "
        "+1.5 points, 95 % interval [+0.5, +2.6]."
    )
    assert (
        "ends within 1 point of the same model retrained unpruned: the interval of pruned "
        "minus control must lie above −1 point. Against that control it is "
        "{bdg-muted}`inconclusive` (−0.4 points, 95 % interval [−1.1, +0.2])" in text
    )
    assert text.endswith(
        "{bdg-muted}`inconclusive` with the paper's 15 heads pruned (−1.2 points, 95 % interval "
        "[−2.0, −0.3])."
    )


def test_the_follow_ups_verdicts_are_shown_in_full_with_every_alternative():
    """Appendix B's list under Table P.13: each judged verdict's own detail (for a recovery claim
    the seeds' McNemar p) and every alternative's verdict; a pending claim says so."""
    from attnconv.evidence.judge import PENDING, followup_verdicts

    got = followup_verdicts()
    text = page.followup_details(got)
    assert len(text.splitlines()) == len(got)
    for key, v in got.items():
        (line,) = [
            ln for ln in text.splitlines() if f"**{page.claim_name(key)}:**" in ln
        ]
        if v.verdict == PENDING:
            assert "*pending*" in line
            continue
        assert f"{page.verdict_badge(v.verdict)} {v.detail}." in line
        for alt, word in v.alternatives.items():
            assert f"{alt}: *{word}*" in line


def test_table_p15_gives_every_seeds_pruned_heads_and_mcnemar_p():
    """Table P.15: one row per seed pair, each side's seed, its heads pruned (the total, then
    each layer's count, which add up to it) and its McNemar p, as the judge reports them."""
    from attnconv.evidence.judge import pruning_hurts_mcnemar

    got = pruning_hurts_mcnemar()
    lines = page.hurts_mcnemar_table().data.splitlines()[2:]
    assert len(lines) == len(got["fresh"]) == len(got["followup"])
    for line, a, b in zip(lines, got["fresh"], got["followup"]):
        cells = [c.strip() for c in line.strip("|").split("|")]
        for (seed, per_layer, p), (s, pruned, shown) in zip(
            (a, b), (cells[:3], cells[3:])
        ):
            total, layers = pruned.split(" ", 1)
            assert s == str(seed) and int(total) == sum(per_layer)
            assert layers == "(" + " ".join(map(str, per_layer)) + ")"
            assert shown == ("< 0.001" if p < 0.001 else f"{p:.3f}")
