"""Chapter 18's confirmatory machinery end to end, on the exploratory runs of the earlier grid
standing in for the fresh seeds (4×4 tokens, 510 images): the arms' summaries, the frozen
contrasts with Holm and the per-seed cross-check, the claims over sizes, and the chapter's
table and figure."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from attnconv.chapters import beyond_fair as chapter  # noqa: E402
from attnconv.evidence import beyond as fair  # noqa: E402
from attnconv.experiments.registry import load_series  # noqa: E402
from attnconv.experiments.verdicts import VERDICTS  # noqa: E402

STAND_IN = {"vit": "vit", "vit_mimetic": "mimetic", "gpsa": "random", "convit": "convit",
            "impulse": "impulse"}  # fmt: skip


@pytest.fixture()
def stand_ins(monkeypatch):
    runs = {arm: load_series(f"beyond2/{s}/n510") for arm, s in STAND_IN.items()}
    monkeypatch.setattr(fair, "arm_runs", lambda arm, size: runs[arm])
    return runs


def test_contrasts_follow_the_one_rule_and_holm(stand_ins):
    assert len(stand_ins["vit"]) == 4  # the earlier grid's four seeds
    results = fair.contrast_results()
    assert {r.key for r in results} == {c["key"] for c in fair.BEYOND["contrasts"]}
    for r in results:
        assert r.verdict in VERDICTS and r.unadjusted in VERDICTS
        assert r.holm_p is None or r.holm_p >= r.p  # Holm never lowers a p-value
        # Holm can only take a "reproduced" away
        assert r.verdict == r.unadjusted or r.unadjusted == VERDICTS[0]
    claims = fair.claim_verdicts(results)
    assert set(claims) == {c["key"] for c in fair.BEYOND["contrasts"]}


def test_the_chapter_shows_them(stand_ins):
    assert set(stand_ins) == set(fair.ARMS)
    table = chapter.fair_table().data
    assert "plain ViT" in table and "pending" not in table
    rows = chapter.fair_contrasts_table(fair.contrast_results()).data.splitlines()
    # one row per pair of arms and size: a superiority and an equivalence contrast of the
    # same two arms share their row, each verdict in its own column
    pairs = {(c["a"], c["b"], n) for c in fair.BEYOND["contrasts"] for n in c["sizes"]}
    assert (
        len(rows)
        == 2 + len(pairs)
        < 2 + sum(len(c["sizes"]) for c in fair.BEYOND["contrasts"])
    )
    both = [r for r in rows[2:] if r.count("{bdg-") == 2]
    assert both and all("ConViT start" in r or "impulse start" in r for r in both)
    assert all("≈" not in r for r in rows[2:])  # the pair's title, not the test's
    assert "a ≈ b within ±2 points? (Holm p)" in rows[0]
    # negative differences carry a true minus sign, as the book's text writes them
    assert all("[-" not in r and "-0" not in r for r in rows[2:])
    fig = chapter.plot_fair({"sizes": {"1000": {"test": 0.27}, "4000": {"test": 0.33}}})
    assert len(fig.axes) == 2
    # every arm and the reference line named in the one legend, nothing written on the panels
    (legend,) = fig.legends
    names = [t.get_text() for t in legend.get_texts()]
    assert names == [chapter.FAIR_LABELS[a] for a in fair.ARMS] + ["linear on pixels"]
    assert not any(ax.texts for ax in fig.axes)
    assert fig.axes[0].lines[-1].get_linestyle() == "--"  # the reference line itself
    assert fair.fitted_regime()  # every stand-in arm has a gap
    fig = chapter.plot_fair_curves(1000)
    # training (left) and validation (right, its own scale) of every arm, one legend
    assert [len(ax.lines) for ax in fig.axes] == [len(fair.ARMS)] * 2
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        chapter.FAIR_LABELS[a] for a in fair.ARMS
    ]
    # each arm its own marker, the same in both panels (pink and violet stay apart)
    markers = [[ln.get_marker() for ln in ax.lines] for ax in fig.axes]
    assert markers[0] == markers[1] and len(set(markers[0])) == len(fair.ARMS)
    val_low, val_high = fig.axes[1].get_ylim()
    assert (
        val_high - val_low < 40
    )  # validation is not squeezed under training's 0-100 %
    # the held-out column appears at 1,000 images only
    held = {"convit_start": fair.contrast_results()[0].interval}
    text = chapter.fair_contrasts_table(fair.contrast_results(), held).data
    assert "held-out, points" in text and text.count("—") >= 1
    verdicts = fair.claim_verdicts(fair.contrast_results())
    claims = chapter.fair_claims_table(verdicts).data
    assert all(
        chapter.CONTRAST_TITLES[c["key"]] in claims for c in fair.BEYOND["contrasts"]
    )
    # the start-only contrast says it tests ConViT's claim only in part
    row = next(r for r in claims.splitlines() if "ConViT start − default" in r)
    assert "the start alone" in row and "last row" in row and ";" not in row
    badges = chapter.fair_badges(verdicts)
    total = sum(int(b.split("`")[1].split()[0]) for b in badges.split("{")[1:])
    assert total == len(fair.BEYOND["contrasts"])


def test_tuning_table_marks_each_choice():
    from attnconv.evidence.runs import beyond_tuning

    got = beyond_tuning(1000)
    if got is None:
        pytest.skip("chapter 18's tuning is not saved")
    text = chapter.tuning_table().data
    # one bold cell per arm and size: the chosen rate's validation accuracy
    assert text.count("**") == 2 * len(fair.ARMS) * len(fair.SIZES)
    best = max(got["vit"]["scores"].values())
    assert f"**{100 * best:.1f}**" in text.splitlines()[2]


def test_pending_without_runs():
    assert fair.arm_summary("vit", 1000) is None or fair.arm_runs("vit", 1000)
    assert "pending" in chapter.fair_table().data or fair.arm_runs("vit", 1000)


def test_held_out_images_against_a_plain_loop(monkeypatch):
    # the two fresh seeds saved for every arm stand in for the six
    import json

    from attnconv.evidence.runs import HELD_OUT, beyond_run_name
    from attnconv.experiments.data import load_cifar10
    from attnconv.experiments.registry import RUNS
    from attnconv.experiments.train_step import decode_predictions

    seeds = (1000, 1001)
    names = [beyond_run_name(a, 1000, s) for a in fair.ARMS for s in seeds]
    if not all((RUNS[n].path / "held-out.json").is_file() for n in names):
        pytest.skip("the held-out studies of seeds 1000-1001 are not saved")
    monkeypatch.setattr(fair, "SEEDS", seeds)
    labels = load_cifar10("sample", verbose=False).y_train[HELD_OUT[0] : HELD_OUT[1]]
    side = fair.held_out_side("gpsa")
    assert side.n_images == 3000 and len(side.values) == 2
    for seed, value, right in zip(seeds, side.values, side.correct):
        got = json.loads(
            (
                RUNS[beyond_run_name("gpsa", 1000, seed)].path / "held-out.json"
            ).read_text()
        )
        pred = decode_predictions(got["predictions"])
        loop = sum(int(p) == int(y) for p, y in zip(pred, labels)) / len(labels)
        assert value == pytest.approx(loop, abs=1e-12) and sum(right) == round(
            loop * 3000
        )
    diffs = dict(fair.held_out_contrasts())
    assert set(diffs) == {
        c["key"] for c in fair.BEYOND["contrasts"] if 1000 in c["sizes"]
    }
    a, b = fair.held_out_side("convit"), fair.held_out_side("gpsa")
    mean = sum(a.values) / 2 - sum(b.values) / 2
    assert diffs["convit_start"].estimate == pytest.approx(mean, abs=1e-12)
    assert diffs["convit_start"].lo < mean < diffs["convit_start"].hi


def test_thinning_keeps_what_is_read_again(tmp_path):
    """A thinned history keeps what the re-check and the tuning read (initial heads, first-step
    losses, every epoch's losses and accuracies, the last epoch's heads), drops the rest, and
    thinning twice changes nothing."""
    import copy

    from attnconv.experiments.store import THINNED_NOTE, History, thin_history

    h = {
        "initial_attention": [{"centers": [[0.0, 0.0]]}],
        "first_step_losses": [2.3, 2.2],
        "status": "complete",
        "epochs": [
            {
                "epoch": e,
                "train_loss": 2.0 / e,
                "val_acc": 0.1 * e,
                "attention": [{"centers": [[e, e]]}],
            }
            for e in range(1, 5)
        ],
    }
    before = copy.deepcopy(h)
    t = thin_history(h)
    assert h == before  # the input is not changed
    assert t["initial_attention"] == h["initial_attention"]
    assert t["first_step_losses"] == h["first_step_losses"]
    assert [e["val_acc"] for e in t["epochs"]] == [e["val_acc"] for e in h["epochs"]]
    assert ["attention" in e for e in t["epochs"]] == [False, False, False, True]
    assert t["attention_epochs"] == THINNED_NOTE and thin_history(t) == t
    typed = History.from_json(t)  # the typed history reads it
    assert typed.layer_records(-1)[0]["centers"] == [[4, 4]]
