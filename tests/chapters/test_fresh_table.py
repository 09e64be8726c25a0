"""Table 17.2, led by the frozen protocol: each row's numbers are the judge's own (its
ConfirmatoryVerdict objects), its threshold or margin the protocol's, and nothing is judged in
the chapter layer."""

import re

import pytest

from attnconv.chapters import paper_verdicts as pv
from attnconv.evidence.judge import PENDING, ConfirmatoryVerdict, confirmatory_verdicts
from attnconv.evidence.protocol import CLAIMS as FROZEN
from attnconv.experiments.verdicts import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED

SEEDS = tuple(range(1000, 1008))


def _verdicts():
    """One made-up verdict per claim of the protocol, with its numbers and the judge's words."""
    from attnconv.evidence.judge import one_sided_bounds
    from attnconv.experiments.verdicts import PAIRED, Interval

    out = {}
    for i, (key, c) in enumerate(FROZEN.items()):
        verdict = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE)[i % 3]
        alts = {"margin halved": INCONCLUSIVE if i % 2 else verdict}
        if c.kind == "share":
            lo, hi = one_sided_bounds(i % 9, 8)
            detail = (
                f"{i % 9} of 8 seeds (share {lo:.2f}-{hi:.2f}, each end a one-sided "
                "95 % bound); null (untrained models): 0.00; one-sided p = 0.5 against 0.50"
            )
            extra = {"shown": i % 9}
        else:
            iv = Interval(-(i + 0.5) / 100, -(i + 1.1) / 100, i % 10 / 1000, 0.01, 7, 0.02,
                          PAIRED, (8, 8))  # fmt: skip
            detail = f"{iv.format()}: the interval does not settle it"
            extra = {"interval": iv}
        out[key] = ConfirmatoryVerdict(
            key, verdict, detail, SEEDS, 0.5, 0.05, alts, **extra
        )
    return out


def _rows(table):
    rows = {}
    for line in table.splitlines()[2:]:
        cells = [x.strip() for x in line.strip("|").split(" | ")]
        assert len(cells) == 5, line
        rows[cells[0]] = cells
    return rows


def _row_of(rows, key):
    title = (
        pv.CLAIMS[key].title if key in pv.CLAIMS else pv.keep_words(FROZEN[key].prop)
    )
    title = pv.keep_ranges(title)  # as the table keeps "4-6" on one line
    (row,) = [r for t, r in rows.items() if title in t]
    return row


class _Claim:
    def __init__(self, key, verdict):
        self.key, self.verdict = key, verdict


def test_each_row_prints_the_judges_numbers_and_the_protocols_bound():
    verdicts = _verdicts()
    claims = [_Claim(k, INCONCLUSIVE) for k in pv.CLAIMS if k in FROZEN]
    rows = _rows(
        pv.claims_table(claims, link=False, badge=True, fresh=True, verdicts=verdicts)
    )
    assert len(rows) == len(FROZEN)  # every claim the protocol judges, none else
    for key, got in verdicts.items():
        _, bound, measure, badge, exploratory = _row_of(rows, key)
        c = FROZEN[key]
        # the protocol's threshold or margin, never the registry's
        if c.margin is not None:
            assert bound.endswith(
                f"{100 * c.margin:g} point" + "s" * (c.margin != 0.01)
            )
        elif c.threshold is not None:
            assert bound == f"threshold {pv._number(c.threshold)}"
        else:
            assert bound == "—"
        # the measure: the judge's numbers as it wrote them
        numbers = re.findall(r"\d+(?:\.\d+)?", got.detail.split(" (")[0])
        if c.kind == "share":
            k, n, lo, hi = re.match(
                r"(\d+) of (\d+) seeds \(share ([\d.]+)-([\d.]+)", got.detail
            ).groups()
            assert measure == f"{k} of {n} seeds; share {lo}\u2060–\u2060{hi}"
        else:
            lo, hi = re.search(r"\[([^,]+), ([^\]]+)\]", got.detail).groups()
            assert (
                measure.startswith(got.detail.split(",")[0])
                and f"[{lo}, {hi}]" in measure
            )
            assert numbers[0] in measure
        word = got.verdict.removesuffix(" at CPU scale")
        assert f"`{word}`" in badge
        # the protocol's alternatives other than Holm's adjustment (the caption says it once)
        others = [a for a, w in got.alternatives.items()
                  if w != got.verdict and not a.startswith("Holm's adjustment")]  # fmt: skip
        assert ("*fragile*" in badge) == bool(others)
        assert ("—" == exploratory) == (key not in pv.CLAIMS)
        if key in pv.CLAIMS:
            assert exploratory.startswith(pv.verdict_badge(INCONCLUSIVE))


def test_a_pending_claim_shows_no_number():
    got = ConfirmatoryVerdict("close_to_resnet", PENDING, "runs made: learned 3 of 8")
    assert pv.fresh_measure(got) == "—"
    words = ConfirmatoryVerdict(
        "close_to_resnet", INCONCLUSIVE, "not testable: no spread"
    )
    assert pv.fresh_measure(words) == "not testable: no spread"


def test_the_registrys_own_threshold_is_shown_where_it_differs():
    """Ch. 9's claim: the registry judged heads on one key at 0.5, the protocol at 0.9."""
    verdicts = _verdicts()
    claims = [_Claim("learned_pixels", REPRODUCED)]
    table = pv.claims_table(
        claims, link=False, badge=True, fresh=True, verdicts=verdicts
    )
    row = _row_of(_rows(table), "learned_pixels")
    assert row[1] == "threshold 0.9" and row[4].endswith("(threshold 0.5)")


@pytest.fixture(scope="module")
def judged():
    return confirmatory_verdicts()


def test_the_committed_runs_verdicts_as_table_17_2_prints_them(judged):
    """On the committed fresh runs: each judged claim's cell prints only numbers of the judge's
    detail, its estimate (or count of seeds) first, e.g. the learned model's "−10.0 points"
    below ResNet18, and both ends of its interval (an end that rounds onto the margin to one
    more digit, which rounds back to the judge's)."""

    def one_digit(number):
        x = float(number.replace("\u2212", "-"))
        return f"{round(x, 1) + 0.0:+.1f}".replace("-", "\u2212")

    for key, got in judged.items():
        measure = pv.fresh_measure(got)
        if got.verdict == PENDING:
            assert measure == "—"
            continue
        for number in re.findall(r"[+\u2212]?\d+(?:\.\d+)?", measure):
            if (
                number not in got.detail
            ):  # sharpened: two decimals, the judge's when rounded
                assert len(number.split(".")[1]) == 2, (key, number)
                assert one_digit(number) in got.detail, (key, number)
        assert measure.split(" ")[0] == got.detail.split(" ")[0].rstrip(","), key
        ends = re.search(
            r"(?:interval \[|share )([\d.+\u2212]+)(?:, |-)([\d.+\u2212]+)", got.detail
        )
        shown = re.search(
            r"(?:\[|share )([\d.+\u2212]+)(?:, |\u2060–\u2060)([\d.+\u2212]+)", measure
        )
        for judge_end, cell_end in zip(ends.groups(), shown.groups()):
            assert cell_end == judge_end or one_digit(cell_end) == judge_end, key


def test_a_box_names_where_the_protocols_other_claim_is_judged(tmp_path):
    keys = [k for k in FROZEN if k != "learned_matched_lemma"]
    elsewhere = pv.judged_elsewhere(keys)
    assert elsewhere == {
        "learned_matched_lemma": pv.CLAIMS["learned_matched_lemma"].where
    }
    box = (
        "```{admonition} In short\n:class: tip\n- On fresh seeds: ... The protocol's "
        f"{len(FROZEN)}th claim is judged in\n{{ref}}`ch. 9 <{elsewhere['learned_matched_lemma']}>`.\n```"
    )
    nb = tmp_path / "x.ipynb"
    cell = {"cell_type": "markdown", "source": box.splitlines(keepends=True)}
    nb.write_text(__import__("json").dumps({"cells": [cell]}))
    assert pv.elsewhere_stated(nb, elsewhere)
    cell["source"] = box.replace(f"{len(FROZEN)}th", "17th").splitlines(keepends=True)
    nb.write_text(__import__("json").dumps({"cells": [cell]}))
    assert not pv.elsewhere_stated(nb, elsewhere)
    assert (
        pv._ordinal(1) == "1st"
        and pv._ordinal(12) == "12th"
        and pv._ordinal(22) == "22nd"
    )


def test_an_end_that_rounds_onto_the_margin_gets_one_more_digit():
    """Against a −1-point margin, −0.958 points prints as −1.0: it reads −0.96; the other end,
    and an end away from the margin, keep the judge's digit."""
    from attnconv.experiments.verdicts import Interval

    iv = Interval(-0.0289, -0.0482, -0.00958, 0.01, 7.0, 0.02, "paired", (8, 8))
    assert iv.ends() == ("−4.8", "−1.0")  # as the judge prints it
    assert iv.ends(boundaries=(-1.0,)) == ("−4.8", "−0.96")
    assert iv.compact(boundaries=(-1.0,)) == "−2.9 points [−4.8, −0.96]"
    # equivalence: either end against ±1 point
    iv2 = Interval(0.0, -0.01049, 0.0102, 0.01, 7.0, 0.02, "paired", (8, 8))
    assert iv2.ends(boundaries=(-1.0, 1.0)) == ("−1.05", "+1.02")
    # away from the margin: unchanged
    far = Interval(-0.1, -0.122, -0.078, 0.01, 7.0, 0.02, "paired", (8, 8))
    assert far.ends(boundaries=(-2.0,)) == far.ends() == ("−12.2", "−7.8")
    # the chapter's margins, in printed units: a non-inferiority claim's −margin
    assert pv._boundaries("similar_or_better") == (
        -100 * FROZEN["similar_or_better"].margin,
    )


def test_the_committed_runs_numbers_are_the_judges(judged):
    """The interval and share a verdict carries print exactly as the judge's words print them:
    the table's numbers are the judge's, not read back from its text."""
    from attnconv.evidence.judge import one_sided_bounds

    for key, got in judged.items():
        if got.verdict == PENDING:
            continue
        if got.interval is None:
            lo, hi = one_sided_bounds(got.shown, len(got.seeds))
            assert got.detail.startswith(
                f"{got.shown} of {len(got.seeds)} seeds (share {lo:.2f}-{hi:.2f}"
            ), key
            continue
        unit = "" if got.scale == 1.0 else got.unit
        printed = got.interval.format(got.scale, unit, got.digits).split(" (")[0]
        assert got.detail.startswith(printed), key
        assert pv._ends(got, margin=False) in got.detail, key


def test_the_dropdown_sharpens_only_the_interval(judged):
    """The dropdown's line keeps the judge's words but for the interval's ends and a unit
    after a bare estimate (the judge prints epochs to converge without one)."""
    for key, got in judged.items():
        if got.verdict == PENDING or got.interval is None:
            continue
        line = pv.sharpened_detail(got)
        words = pv._one_line(got.detail)
        bare = words.split(", 95 % interval")[0]
        if got.interval.seed_term_known and not bare.endswith(got.unit.strip()):
            words = words.replace(bare, bare + got.unit, 1)  # "+2.75" → "+2.75 epochs"
            assert got.unit.strip() and bare[0] in "+−"
        assert line.replace(pv._ends(got), pv._ends(got, margin=False)) == words


def test_the_dropdowns_numbers_are_the_verdicts_own(judged):
    """The difference and interval of the dropdown's line are printed from the verdict's
    structured interval, and agree with the judge's words: a verdict whose words say other
    numbers than its interval is an error, not a silent mismatch."""
    from dataclasses import replace

    for key, got in judged.items():
        if got.verdict == PENDING or got.interval is None:
            continue
        if not got.interval.seed_term_known:
            continue
        full = got.interval.format(got.scale, got.unit, got.digits)
        line = pv.sharpened_detail(got)
        assert line.startswith(full.replace(pv._ends(got, margin=False), pv._ends(got)))
        wrong = replace(
            got, detail="+99.9 points" + got.detail[got.detail.index(",") :]
        )
        with pytest.raises(ValueError):
            pv.sharpened_detail(wrong)


def test_the_single_pixel_claims_test_names_both_thresholds():
    """Table 12.1's test cell for "learned heads on single pixels" names the exploratory
    threshold and the frozen protocol's, as each rule reads them."""
    from attnconv.evidence.protocol import CLAIMS as FROZEN
    from attnconv.experiments.claims import CLAIMS

    test = CLAIMS["learned_pixels"].test
    assert f"above {CLAIMS['learned_pixels'].threshold:g} " in test
    assert f"asks {FROZEN['learned_pixels'].threshold:g}," in test


def test_chapter_17_gives_every_interval_its_estimates_digits():
    """Table 17.2 (``margin_digit=False``): every end has its estimate's digits, as the judge
    prints them; the default keeps the extra digit for an end that rounds onto the margin."""
    got = pv.fresh_verdicts()["similar_or_better"]
    iv = got.interval
    plain = pv.fresh_measure(got, margin_digit=False)
    assert plain == iv.compact(got.scale, got.unit, got.digits)
    ends = plain.split(" [")[1].rstrip("]").split(", ")
    head = plain.split(" ")[0]
    assert all(len(e.split(".")[1]) == len(head.split(".")[1]) for e in ends)
    table = pv.fresh_claims_table(pv.counted([]), margin_digit=False)
    assert plain in table
