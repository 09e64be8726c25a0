"""attnconv.chapters.shared.depth_measures: per-layer depth measures against independent computations, and the
claim checks on hand-made rows where the answer is known."""

import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from attnconv.chapters import paper_verdicts as pv
from attnconv.chapters.shared import depth_measures
from attnconv.chapters.shared import depth_measures as depth
from attnconv.chapters.shared import paper_claims as pc
from attnconv.chapters.shared.gaussian_maps import gaussian_head_maps
from attnconv.chapters.shared.trained_heads import head_summary, layer_records
from attnconv.core.lattice import lattice_coverage
from attnconv.experiments import studies_removal
from attnconv.experiments import verdicts as v
from attnconv.experiments.checkpoints import load_run
from attnconv.experiments.verdicts import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED

DEEP_QUADRATIC = (
    Path(__file__).resolve().parents[2] / "book" / "runs" / "deep" / "quadratic"
)


@pytest.mark.skipif(
    not (DEEP_QUADRATIC / "history.json").is_file(),
    reason="no saved deep quadratic run",
)
def test_depth_rows_of_the_saved_quadratic_run():
    run = load_run(DEEP_QUADRATIC)
    rows = depth.depth_rows(run, "q")
    assert [r["layer"] for r in rows] == list(range(6))
    summary = head_summary(run.history)
    for r, s, rec in zip(rows, summary, layer_records(run.history, -1)):
        assert r["centre_distance"] == pytest.approx(s["mean_offset"], rel=1e-12)
        assert r["coverage"] == lattice_coverage(rec["centers"]) == s["coverage_end"]
        # attention distance: a plain loop over the 16×16 keys of each Gaussian head's map
        maps = gaussian_head_maps(rec, (16, 16), (8, 8)).double()
        loop = np.mean(
            [
                sum(
                    float(m[i, j]) * math.hypot(i - 8, j - 8)
                    for i in range(16)
                    for j in range(16)
                )
                for m in maps
            ]
        )
        assert r["attention_distance"] == pytest.approx(loop, rel=1e-9)
        pairs = sum(
            1
            for a in range(len(maps))
            for b in range(a + 1, len(maps))
            if float(torch.minimum(maps[a], maps[b]).sum()) > depth.OVERLAP_SHARED_MASS
        )
        assert r["overlapping_pairs"] == pairs


def _rows(
    distances,
    pairs=0,
    localized=(0,) * 6,
    lr=(0,) * 6,
    ud=(0,) * 6,
    loc_pairs=0,
    heads=9,
):
    return [
        {
            "layer": i,
            "heads": heads,
            "grid_tokens": 256,
            "attention_distance": d,
            "centre_distance": d,
            "overlapping_pairs": pairs,
            "pairs": heads * (heads - 1) // 2,
            "localized_overlapping_pairs": loc_pairs,
            "closest_centres": 1.0,
            "near_uniform": 0,
            "non_isotropic": None,
            "localized": localized[i],
            "left_right": lr[i],
            "up_down": ud[i],
        }
        for i, d in enumerate(distances)
    ]


def _key(claims, key):
    found = [c for c in claims if c.key == key]
    assert len(found) == 1, key
    return found[0]


def test_structure_claims_use_every_seed_with_their_interval():
    near = _rows([1, 1, 3, 3, 4, 4], localized=(4, 4, 0, 0, 0, 0))
    seeds = {
        "seed 0": near,
        "seed 1": _rows([1.2, 1, 3, 3.5, 4, 4], localized=(5, 3, 1, 0, 0, 0)),
        "seed 2": _rows([1.5, 1, 3, 3, 5, 4], localized=(4, 5, 0, 1, 0, 0)),
    }
    claims = pc.structure_claims(seeds, {})
    local = _key(claims, "local_then_far")
    assert local.verdict == REPRODUCED and local.kind == "superiority"
    assert (
        "95 % interval" in local.interval
        and "paired within each run, 3 seeds" in local.interval
    )
    assert any("×10" in x for x in local.confounds)
    # the t interval over 3 seeds: the per-seed differences against a plain computation
    d = [
        np.mean([3, 3, 4, 4]) - 1,
        np.mean([3, 3.5, 4, 4]) - 1.1,
        np.mean([3, 3, 5, 4]) - 1.25,
    ]
    half = 4.302653 * np.std(d, ddof=1) / np.sqrt(3)
    assert f"[{np.mean(d) - half:+.2f}, {np.mean(d) + half:+.2f}]" in local.interval
    # a seed going the other way: the interval no longer excludes 0
    seeds["seed 2"] = _rows([4, 4, 1, 1, 1, 1])
    assert (
        _key(pc.structure_claims(seeds, {}), "local_then_far").verdict == INCONCLUSIVE
    )
    first = _key(claims, "localized_first")
    assert first.verdict == REPRODUCED


def test_grid_at_layer_four_judged_on_the_deep_seeds():
    sharp = _rows([1] * 6, localized=(4, 0, 0, 9, 0, 0))
    none = _rows([1] * 6)
    for r in sharp:
        r["sharp_coverage"] = 9 if r["layer"] == 3 else 0
    c = pc.grid_claim({"seed 0": none, "seed 1": none, "seed 2": none})
    assert c.verdict == NOT_REPRODUCED and "layer 4" in c.reason and "0.9" in c.reason
    assert pc.grid_claim({"seed 0": none, "seed 1": sharp}).verdict == REPRODUCED
    c = pc.grid_claim({"seed 0": none}, {"2 layers": sharp})
    assert c.verdict == NOT_REPRODUCED and "2 layers" in c.reason


def test_no_overlap_is_vacuous_without_two_heads_on_one_key():
    none = _rows([1] * 6)  # no head on one key: nothing to test
    two = _rows([1] * 6, localized=(2, 0, 0, 0, 0, 0))
    c = pc.no_overlap_claim({"seed 0": none}, {})
    assert c.verdict == INCONCLUSIVE and "vacuous" in c.evidence[0].measured
    assert (
        pc.no_overlap_claim({"seed 0": none, "seed 1": two}, {}).verdict == REPRODUCED
    )
    overlap = _rows([1] * 6, localized=(2, 0, 0, 0, 0, 0), loc_pairs=1)
    assert pc.no_overlap_claim({"seed 1": overlap}, {}).verdict == NOT_REPRODUCED


def test_learned_pixels_names_the_threshold_where_the_verdict_changes():
    peaks = {
        "seed 0": [0.4] * 6,
        "seed 1": [0.81, 0.6] + [0.3] * 4,
        "seed 2": [0.67] * 6,
    }
    counts = {
        "seed 0": [0] * 6,
        "seed 1": [2, 1, 0, 0, 0, 0],
        "seed 2": [1, 1, 0, 0, 0, 0],
    }
    c = _key(
        pc.learned_claims(peaks, counts, {"learned": [0.99, 0.9]}), "learned_pixels"
    )
    assert c.verdict == REPRODUCED and "2 of 3" in c.reason
    assert "changes at the book's other threshold 0.9: not reproduced" in c.reason
    assert "2 layers" in c.reason  # listed, not counted
    c = _key(
        pc.learned_claims({"seed 0": [0.3] * 6}, {}, {"learned": [0.99]}),
        "learned_pixels",
    )
    assert c.verdict == NOT_REPRODUCED


def test_one_seed_gives_no_verdict_on_a_comparison():
    sym = {"left_right": 5, "up_down": 1, "considered": 20}
    c = _key(pc.learned_claims({}, {}, symmetry=sym), "vertical_rare")
    assert c.verdict == INCONCLUSIVE and "spread over seeds is unknown" in c.reason


def test_learned_localized_reads_the_saved_peaks():
    history = {
        "epochs": [
            {
                "attention": [
                    {"centers": [[0, 0]] * 3, "peak_probability": [0.9, 0.51, 0.5]},
                    {"centers": [[0, 0]] * 3, "peak_probability": [0.1, 0.2, 0.3]},
                ]
            }
        ]
    }
    assert depth.learned_localized(history) == [2, 0]
    assert pc.layer_peaks(history) == [0.9, 0.3]


def test_removal_rows_and_redundancy_by_the_same_model_interval():
    rem = {
        "full": 0.6,
        "without_layer": [0.5, 0.5, 0.5, 0.5, 0.55, 0.58],
        "without_head": [
            [0.55] * 2,
            [0.55] * 2,
            [0.56] * 2,
            [0.56] * 2,
            [0.6, 0.598],
            [0.6, 0.601],
        ],
    }
    rows = depth.removal_rows({"m": rem})
    assert rows[4]["head_drop_max"] == pytest.approx(0.2)
    assert rows[5]["harmless_heads"] == 2 and rows[0]["harmless_heads"] == 0
    # without per-image predictions the unpaired interval (±4 points) cannot show 0.5 points
    c = pc.redundant_claim({"learned": rem}, n_test=1017)
    assert c.verdict == INCONCLUSIVE and "conservative unpaired" in c.reason
    # with a test set large enough, a head costing nothing is shown redundant
    assert pc.redundant_claim({"learned": rem}, n_test=2_000_000).verdict == REPRODUCED
    # a quadratic run is not the claim's (learned) setting
    assert pc.redundant_claim({"quadratic": rem}).verdict == INCONCLUSIVE


def test_removal_figure_of_several_seeds_marks_costs_that_reach_zero():
    """Figure 12.3 on eight seeds of one model: a dot per seed and layer in each panel, a
    hollow dot where the layer's interval reaches 0, and the seeds' mean as a bar per layer."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def study(free_layer):
        without = [0.5] * 6
        without[free_layer] = 0.6  # this layer costs nothing
        return {"full": 0.6, "without_layer": without, "without_head": [[0.6] * 3] * 6}

    removal = {f"seed {s}": study(s % 6) for s in range(1000, 1008)}
    fig = depth.plot_removal_seeds(removal)
    left, right = fig.axes
    dots = [ln for ln in left.lines if ln.get_marker() == "o"]
    filled = [ln for ln in dots if ln.get_markerfacecolor() != "white"]
    hollow = [ln for ln in dots if ln.get_markerfacecolor() == "white"]
    assert sum(len(ln.get_xdata()) for ln in hollow) == 8  # one free layer per seed
    assert sum(len(ln.get_xdata()) for ln in filled) == 40
    assert sum(len(ln.get_xdata()) for ln in right.lines) == 48
    assert len(left.collections) >= 8 + 6  # the intervals, then the means
    assert [t.get_text() for t in left.get_xticklabels()] == [
        str(i) for i in range(1, 7)
    ]
    plt.close(fig)
    with pytest.raises(ValueError):
        depth.plot_removal_seeds({})


def test_pruning_claims_by_the_same_model_interval():
    acc = {
        "6 layers (deep)": {
            "full": 0.608,
            "pruned": 0.607,
            "retrained": 0.618,
            "retrain_epochs": 14,
            "base_epochs": 40,
        },
        "2 layers (cpu)": {"full": 0.507, "pruned": 0.429, "retrained": 0.513},
    }
    counts, hurts, recovers = pc.pruning_claims(
        [2, 4, 1, 2, 6, 0],
        {
            "6 layers (deep), thresholds": [0, 0, 1, 1, 3, 0],
            "6 layers (deep), 1e3": [2] * 6,
        },
        acc,
    )
    assert (
        counts.verdict == NOT_REPRODUCED
        and "the one run at the claim's setting" in counts.reason
    )
    # a 0.1-point drop at 6 layers cannot be told; the 2-layer 7.8 points is listed, not counted
    assert hurts.verdict == INCONCLUSIVE and "+7.8 points" in hurts.evidence[1].measured
    assert "not the claim's setting" in hurts.evidence[1].measured
    # "recovers" (±1 point) is not shown by an interval of ±4 points; the confounds are named
    assert recovers.verdict == INCONCLUSIVE and recovers.margin == "±1 point"
    assert any("retrained for the same epochs" in x for x in recovers.confounds)
    acc["6 layers (deep)"]["pruned"] = 0.50
    assert pc.pruning_claims([0] * 6, {"6 layers (deep)": [0] * 6}, acc)[1].verdict == (
        REPRODUCED
    )


def test_flops_claim_judged_by_flops():
    rows = [
        {
            "implementation": "dense",
            "train_gflops_per_step": 100.0,
            "train_images_per_s": 4.0,
        },
        {
            "implementation": "local",
            "train_gflops_per_step": 73.0,
            "train_images_per_s": 4.0,
        },
    ]
    c = pc.flops_claim({"models": {"quadratic": rows}})
    assert c.verdict == REPRODUCED and "27 % fewer" in c.reason
    rows[1]["train_gflops_per_step"] = 95.0
    assert pc.flops_claim({"models": {"quadratic": rows}}).verdict == NOT_REPRODUCED


def test_book_claims_from_the_committed_runs():
    claims = pv.book_claims()
    every = [c for g in pv.GROUPS for c in claims.get(g, [])]
    keys = {c.key for c in every}
    assert {"grid_layer4", "redundant", "similar_or_better", "pruning_hurts"} <= keys
    grid = _key(claims["depth"], "grid_layer4")
    assert grid.verdict == NOT_REPRODUCED and len(grid.evidence) >= 3
    close = _key(claims["accuracy"], "close_to_resnet")
    # the six-layer learned seeds decide, against every saved ResNet18 seed
    assert "6 layers, 40 epochs" in close.evidence[-1].run
    assert any("ResNet18" in e.measured for e in close.evidence)
    table = pv.claims_table(every)
    assert table.count("\n") == len(every) + 1 and "| equivalence | ±1 point |" in table


def test_book_claims_read_the_profile_of_the_figures(monkeypatch):
    """Issue 34's finding 2: under ATTNCONV_DEEP_PROFILE=paper the verdicts come from the paper
    profile, like the figures (no paper run is committed: its runs are reported missing)."""
    monkeypatch.setattr(depth_measures, "DEEP_PROFILE", "paper")
    claims = pv.book_claims()
    assert claims["profile"] == ["paper"]
    assert any(m.startswith("paper") for m in claims["missing"])
    assert "pruning" not in claims  # the deep generalized run is not read


def test_removal_accuracies_match_pruning_by_hand(tmp_path):
    """removal.json of a tiny trained run against copies pruned and evaluated here, one by one."""
    import copy as _copy

    from attnconv.experiments.checkpoints import write_json
    from attnconv.experiments.data import load_cifar10
    from attnconv.experiments.profiles import make_config
    from attnconv.experiments.pruning import prune_heads
    from attnconv.experiments.store import REMOVAL_FILE, StaleResultError
    from attnconv.experiments.train import train_or_load
    from attnconv.experiments.train_step import evaluate

    tiny = dict(
        hidden_size=16, intermediate_size=16, num_layers=2, num_heads=2, downsample=8
    )
    config = make_config(
        "quadratic",
        "cpu",
        epochs=1,
        train_subset=100,
        test_subset=50,
        model_overrides=tiny,
    )
    run = train_or_load(config, tmp_path / "quadratic", load_model=True, verbose=False)
    assert studies_removal.load_removal(run) is None
    saved = studies_removal.removal_accuracies(run)
    write_json(run.run_dir / REMOVAL_FILE, saved)
    assert studies_removal.load_removal(run) == saved
    stale = dict(
        saved, full=saved["full"] + 1 / 50
    )  # removal accuracies of other weights
    write_json(run.run_dir / REMOVAL_FILE, stale)
    with pytest.raises(StaleResultError, match="regenerate --only .*removal"):
        studies_removal.load_removal(run)
    write_json(run.run_dir / REMOVAL_FILE, saved)
    data = load_cifar10("sample", verbose=False).subset(100, 50)
    model = run.model.eval()

    def acc(m):
        return evaluate(m, data.x_test, data.y_test, 500)[1]

    assert saved["full"] == acc(model)
    for layer in range(2):
        assert saved["without_layer"][layer] == acc(
            prune_heads(_copy.deepcopy(model), {layer: [0, 1]})
        )
        for head in range(2):
            assert saved["without_head"][layer][head] == acc(
                prune_heads(_copy.deepcopy(model), {layer: [head]})
            )


PAPER_MAP = Path(__file__).resolve().parents[2] / "book" / "paper_map.md"


def test_paper_map_names_the_rules_verdicts():
    """Each claim row of the paper map opens with the frozen protocol's verdicts on the fresh
    seeds (:func:`pv.paper_map_text` would write nothing new), then the exploratory rule's."""
    text = PAPER_MAP.read_text()
    assert pv.paper_map_text(text) == text
    claims = pv.book_claims()
    verdicts = {c.key: c.verdict for g in pv.GROUPS for c in claims.get(g, [])}
    rows = text.splitlines()
    judged = set()
    for words, keys in pv.MAP_ROWS.items():
        row = [r for r in rows if words in r and r.startswith("|")]
        assert len(row) == 1, words
        status = row[0].strip().strip("|").split(" | ")[-1].strip()
        for label, key in keys:
            badge = pv.fresh_badge(key)
            assert badge.startswith("{bdg-") and f"{label} {badge}".strip() in status, (
                key
            )
            judged.add(key)
        # the exploratory verdicts follow, in words only, one per claim, labelled as the lead
        explored = status.split(pv.MAP_JOIN, 1)[1].split("; ")
        assert len(explored) == len(keys), words
        for (label, key), said in zip(keys, explored):
            assert (
                said == f"{label} {verdicts.get(key, pv.MAP_NOT_EXPLORED)}".strip()
            ), key
    # every claim the protocol judges has its row
    assert judged == set(pv.fresh_verdicts())


def test_paper_map_states_the_frozen_protocols_tally():
    """The paper map's opening counts the frozen protocol's verdicts on the fresh seeds, and
    names how many seeds per model."""
    from attnconv.evidence.judge import confirmatory_verdicts, tally

    got = confirmatory_verdicts()
    t = tally(got)
    n_seeds = len(next(iter(got.values())).seeds)
    flat = " ".join(PAPER_MAP.read_text().split())
    assert (
        f"{n_seeds} fresh seeds per model, committed after a protocol was {{ref}}`frozen "
        f"<glossary-frozen>` in git ({{ref}}`appendix-protocol`): {t[REPRODUCED]} "
        f"reproduced, {t[NOT_REPRODUCED]} not reproduced, {t[INCONCLUSIVE]} inconclusive."
    ) in flat


def test_intro_tally_counts_the_rules_verdicts():
    """The intro's "N claims: a reproduced at CPU scale; b not reproduced at CPU scale; c
    inconclusive", and chapter 17's box, count the rule's verdicts over the committed runs: the
    experimental claims only (:func:`~attnconv.chapters.paper_verdicts.counted`: the exact FLOP
    count and the per-layer pruning counts are shown apart)."""
    import json

    judged = [c for g in pv.GROUPS for c in pv.book_claims().get(g, [])]
    verdicts = [c.verdict for c in pv.counted(judged)]
    assert len(verdicts) == len(judged) - len(pv.EXACT_CHECKS + pv.DESCRIBED)
    intro = json.loads((PAPER_MAP.parent / "intro.ipynb").read_text())
    text = " ".join(
        "".join(c["source"]) for c in intro["cells"] if c["cell_type"] == "markdown"
    )
    tally = (
        f"{len(verdicts)} claims: {verdicts.count(REPRODUCED)} reproduced at CPU scale; "
        f"{verdicts.count(NOT_REPRODUCED)} not reproduced at CPU scale; "
        f"{verdicts.count(INCONCLUSIVE)} inconclusive"
    )
    assert tally == pv.tally_words(judged)
    flat = " ".join(text.replace("*", "").split())
    # the intro leaves the exploratory tally to chapter 17 (checked below)
    # and the confirmatory tally, the frozen protocol's, leads
    from attnconv.evidence.judge import confirmatory_verdicts, tally

    got = confirmatory_verdicts()
    t = tally(got)
    assert f"{len(got)} claims about trained models hold in part" in flat
    # how they were made is told in chapter 17, in the words of the count
    ch17 = json.loads((PAPER_MAP.parent / "17_what_holds.ipynb").read_text())
    ch17_text = " ".join(
        " ".join(
            "".join(c["source"]) for c in ch17["cells"] if c["cell_type"] == "markdown"
        )
        .replace("*", "")
        .split()
    )
    assert f"Each of the paper's {len(got)} claims about trained models" in ch17_text
    box = (
        f"{{bdg-success}}`{t[REPRODUCED]} reproduced` {{bdg-warning}}`{t[NOT_REPRODUCED]} "
        f"not reproduced` {{bdg-muted}}`{t[INCONCLUSIVE]} inconclusive`"
    )
    assert box in flat
    # chapter 17's box is displayed from the rule's tally: its saved output states it
    what_holds = json.loads((PAPER_MAP.parent / "17_what_holds.ipynb").read_text())
    shown = " ".join(
        "".join(o.get("data", {}).get("text/markdown", ""))
        for c in what_holds["cells"]
        if c["cell_type"] == "code"
        for o in c.get("outputs", [])
    )
    box = " ".join(shown.split())
    assert "result-box" in box
    # the box states the fresh seeds' verdicts only; the exploratory counts are Table 17.4's
    # row, from the same verdicts
    assert "earlier runs judged" not in box and "bdg-dark-line" not in box
    assert (
        f"| {len(verdicts)} | {verdicts.count(REPRODUCED)} | "
        f"{verdicts.count(NOT_REPRODUCED)} | {verdicts.count(INCONCLUSIVE)} |"
    ) in box
    # and its fresh-seed line leads with the frozen protocol's tally, in badges
    got = confirmatory_verdicts()
    t = tally(got)
    assert (
        f"{{bdg-success}}`{t[REPRODUCED]} reproduced` {{bdg-warning}}`{t[NOT_REPRODUCED]} "
        f"not reproduced` {{bdg-muted}}`{t[INCONCLUSIVE]} inconclusive` **The paper's "
        f"{len(got)} experimental claims, judged on fresh seeds (8 per model) under the "
        "{ref}`frozen protocol <appendix-protocol>`.**"
    ) in box


def _removal_with_predictions():
    """A six-layer removal study on the sample's 1,017 test images whose full model is right on
    617 of them; layer 5's head 1 changes nothing, its head 2 loses 30 images."""
    from attnconv.experiments.train_step import encode_predictions
    from attnconv.experiments.verdicts import test_labels

    labels = test_labels("sample")
    wrong = lambda y: (y + 1) % 10  # noqa: E731
    full = [y if i >= 400 else wrong(y) for i, y in enumerate(labels)]
    worse = [
        wrong(y) if 400 <= i < 430 else p for i, (p, y) in enumerate(zip(full, labels))
    ]
    acc = lambda p: sum(a == y for a, y in zip(p, labels)) / len(labels)  # noqa: E731
    heads = [[full, worse] for _ in range(6)]
    return labels, {
        "full": acc(full),
        "without_layer": [acc(worse)] * 6,
        "without_head": [[acc(p) for p in layer] for layer in heads],
        "full_predictions": encode_predictions(full),
        "without_layer_predictions": [encode_predictions(worse)] * 6,
        "without_head_predictions": [
            [encode_predictions(p) for p in layer] for layer in heads
        ],
    }


def test_removal_is_judged_paired_where_the_study_kept_predictions():
    from attnconv.experiments.studies_removal import removal_interval

    labels, rem = _removal_with_predictions()
    same = removal_interval(rem, 4, 0)
    assert (
        same.method == v.MCNEMAR and same.lo == same.hi == 0.0 and same.p_value == 1.0
    )
    worse = removal_interval(rem, 4, 1)
    # plain count: 30 images right only with the full model, none the other way
    assert worse.estimate == pytest.approx(-30 / 1017) and worse.p_value == v.mcnemar_p(
        0, 30
    )
    c = pc.redundant_claim({"learned": rem})
    assert c.verdict == REPRODUCED and "layer 5, head 1" in c.reason
    assert "layer 5, head 2" not in c.reason and v.MCNEMAR in c.evidence[0].measured
    rows = depth.removal_rows({"learned": rem})
    assert rows[0]["paired"] and rows[0]["layer_cost_lo"] > 0  # 30 images lost, paired
    # the same numbers without the predictions: the unpaired interval cannot tell
    bare = {k: x for k, x in rem.items() if not k.endswith("predictions")}
    assert removal_interval(bare, 4, 0).method.startswith(v.UNPAIRED)
    assert pc.redundant_claim({"learned": bare}).verdict == INCONCLUSIVE


def test_pruning_claims_are_paired_where_the_study_kept_predictions():
    from attnconv.experiments.train_step import encode_predictions

    labels, rem = _removal_with_predictions()
    full = rem["full_predictions"]
    worse = rem["without_layer_predictions"][0]
    study = {
        "base_config": {"data": "sample"},
        "curve": {
            "degenerate_first": [rem["full"], rem["full"], rem["without_layer"][0]],
            "degenerate_first_predictions": [full, full, worse],
        },
        "retrained": [
            {"k": 2, "test_acc": [rem["full"]], "test_predictions": full},
        ],
        "retrain_epochs": 14,
        "base_epochs": 40,
    }
    acc = depth.pruning_accuracies(study, 2)
    assert acc["labels"] == labels and acc["pruned_predictions"][400] != labels[400]
    counts, hurts, recovers = pc.pruning_claims(
        [2, 4, 1, 2, 6, 0], {"6 layers (deep)": [0] * 6}, {"6 layers (deep)": acc}
    )
    # 30 of 1,017 images lost by pruning: the paired interval and McNemar show it
    assert hurts.verdict == REPRODUCED and "conservative unpaired" not in hurts.reason
    # retraining gives back the same predictions: inside ±1 point
    assert recovers.verdict == REPRODUCED
    assert encode_predictions([1, 2]) == "12"


def test_plot_layer_distances_draws_both_measures_of_every_seed():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    seeds = {
        "seed 0": _rows([1, 2, 3, 4, 5, 6]),
        "seed 1": _rows([2, 2, 3, 3, 4, 4]),
    }
    fig = depth.plot_layer_distances(seeds)
    left, right = fig.axes
    for ax, key in ((left, "attention_distance"), (right, "centre_distance")):
        assert len(ax.lines) == 2
        for line, rows in zip(ax.lines, seeds.values()):
            assert list(line.get_xdata()) == [1, 2, 3, 4, 5, 6]
            assert list(line.get_ydata()) == [r[key] for r in rows]
    plt.close(fig)


def test_intro_asks_the_questions_the_chapters_answer():
    """The intro asks each experiment chapter's question in plain words, linked to the chapter
    that answers it, and leaves the verdicts' numbers to those chapters: ch. 9 says the learned
    arm's one-hot count as the frozen protocol's judge computes it."""
    import json

    from attnconv.evidence.judge import confirmatory_verdicts

    intro = json.loads((PAPER_MAP.parent / "intro.ipynb").read_text())
    flat = " ".join(
        " ".join("".join(c["source"]) for c in intro["cells"]).replace("*", "").split()
    )
    assert (
        "Do learned encodings find single pixels? {ref}`Ch. 9 <ch-learned-encoding>`."
        in flat
    )
    assert (
        "Does attention come close to a ResNet's accuracy? "
        "{ref}`Ch. 12 <sec-six-layers-accuracy>`." in flat
    )
    assert "points below" not in flat and "times its size" not in flat
    got = confirmatory_verdicts()
    pixels = got["learned_pixels"]
    n_seeds = len(pixels.seeds)
    assert pixels.detail.startswith(f"0 of {n_seeds} seeds")
    ch9 = json.loads((PAPER_MAP.parent / "09_learned_encoding.ipynb").read_text())
    ch9_text = " ".join(
        " ".join(
            "".join(c["source"]) for c in ch9["cells"] if c["cell_type"] == "markdown"
        ).split()
    )
    assert f"none of the {n_seeds} seeds has one" in ch9_text


def test_intro_names_the_scale_and_the_errata_as_the_package_does():
    """The intro's one sentence on CPU scale, last in its box, reads the six-layer runs' hidden
    size, the paper's and the sample's size from the run settings; its errata line names them
    by kind (:func:`~attnconv.chapters.paper_verdicts.errata_words`: one is a conjecture)."""
    import json

    from attnconv.experiments.data import load_cifar10_sample
    from attnconv.experiments.profiles import make_config

    intro = json.loads((PAPER_MAP.parent / "intro.ipynb").read_text())
    flat = " ".join(
        " ".join("".join(c["source"]) for c in intro["cells"]).replace("*", "").split()
    )
    ours, theirs = (
        make_config("quadratic", p).model_config().hidden_size
        for p in ("deep", "paper")
    )
    n_train = len(load_cifar10_sample().y_train)
    # the scale closes the box, after the verdicts it qualifies
    scale = (
        f"sized for a CPU: hidden size {ours} instead of {theirs}, trained on "
        f"{n_train:,} CIFAR-10 images ({{ref}}`CPU scale <sec-cpu-scale>`)."
    )
    assert scale in flat
    assert flat.index("{bdg-success-line}`exact`") < flat.index(scale)
    assert flat.index("{bdg-muted}`") < flat.index(scale)
    words = pv.errata_words()
    assert words == "two statements and one conjecture of the paper"
    assert f"{words[0].upper()}{words[1:]} are wrong, by an exact check" in flat


def test_intro_says_no_share_of_the_seeds_survives_holm():
    """Why ch. 17 (to which the intro points for the rule, naming the 8 fresh seeds per model)
    says that 8 seeds per model are too few to judge all 18 claims jointly, against the judge and
    the binomial arithmetic: the smallest p a share of n seeds can give (all show it, against
    1/2) is above Holm's first threshold, and every reproduced verdict flips under Holm's
    adjustment."""
    import json

    from attnconv.chapters.protocol import HOLM, holm_floor
    from attnconv.evidence.judge import confirmatory_verdicts

    got = confirmatory_verdicts()
    reproduced = [v for v in got.values() if v.verdict == REPRODUCED]
    assert reproduced and all(v.alternatives[HOLM] != REPRODUCED for v in reproduced)
    floor = holm_floor()  # the arithmetic, tested in test_protocol_page.py
    n_seeds = len(reproduced[0].seeds)
    assert n_seeds == floor["seeds"] and len(got) == floor["claims"]
    assert floor["best_p"] > floor["first_threshold"]
    intro = json.loads((PAPER_MAP.parent / "intro.ipynb").read_text())
    flat = " ".join(
        " ".join("".join(c["source"]) for c in intro["cells"]).replace("*", "").split()
    )
    assert (
        f"tested on {n_seeds} {{ref}}`fresh seeds <glossary-confirmatory>` per model, "
        "trained after its test was written down; {ref}`ch. 17 <sec-what-holds-rule>` "
        "tells how." in flat
    )
    # chapter 17 tells how the verdicts were made, under that label
    ch17 = json.loads((PAPER_MAP.parent / "17_what_holds.ipynb").read_text())
    ch17_text = " ".join(
        " ".join("".join(c["source"]) for c in ch17["cells"]).replace("*", "").split()
    )
    assert f"trained again from {n_seeds} new random seeds" in ch17_text
    assert "(sec-what-holds-rule)= ## How the verdicts were made" in ch17_text


def test_depth_measures_figure_titles_do_not_touch():
    """Fig. 12.1: the three panel titles (two lines each) stay apart at the column's width."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from attnconv.chapters.shared.plotting import BOOK_STYLE

    runs = {
        "quadratic, seed 0": _rows([1, 2, 3, 4, 5, 6], pairs=3),
        "learned": _rows([5, 5, 6, 6, 6, 6], localized=(1, 1, 0, 0, 1, 0)),
    }
    with plt.rc_context(BOOK_STYLE):
        fig = depth.plot_depth_measures(runs, {"seed 1": [1, 0, 0, 0, 1, 0]})
        fig.canvas.draw()
    boxes = [ax.title.get_window_extent() for ax in fig.axes]
    assert all("\n" in ax.get_title() for ax in fig.axes)
    for i, a in enumerate(boxes):
        assert not any(a.overlaps(b) for b in boxes[i + 1 :])
    plt.close(fig)


def test_layer_values_rows_one_row_per_run_and_measure():
    from attnconv.chapters.shared.depth_measures import layer_values_rows

    def layer(distance, on_key, pairs):
        return {
            "attention_distance": distance,
            "localized": on_key,
            "overlapping_pairs": pairs,
            "heads": 9,
            "pairs": 36,
        }

    drawn = {
        "quadratic, seed 2": [layer(1.544, 4, 3), layer(3.0, 0, 2)],
        "generalized": [layer(1.5, 5, 0), layer(2.0, 1, 1)],
    }
    columns, rows = layer_values_rows(drawn, {"seed 1": [1, 0]}, {"generalized": 0})
    assert columns == ["model", "seed", "measure", "layer 1", "layer 2"]
    assert rows[0] == ["quadratic", "2", "attention distance (tokens)", "1.54", "3.00"]
    assert rows[1] == ["quadratic", "2", "heads on one key (of 9)", "4", "0"]
    assert rows[2] == ["quadratic", "2", "overlapping pairs (of 36)", "3", "2"]
    assert rows[3][:2] == ["generalized", "0"] and len(rows) == 7
    assert rows[-1] == ["learned", "1", "heads on one key, saved peaks", "1", "0"]


def test_layer_values_rows_refuses_unequal_depths_and_unknown_seeds():
    from attnconv.chapters.shared.depth_measures import layer_values_rows

    one = {
        "attention_distance": 1.0,
        "localized": 0,
        "overlapping_pairs": 0,
        "heads": 9,
        "pairs": 36,
    }
    with pytest.raises(ValueError):
        layer_values_rows({"quadratic, seed 0": [one]}, {"seed 0": [0, 0]})
    with pytest.raises(ValueError):
        layer_values_rows({"generalized": [one]})


def test_paper_map_says_why_where_the_two_verdicts_point_opposite_ways():
    """A row whose fresh-seed verdict and exploratory verdict are reproduced and not reproduced
    (either way round) says why, once; a row where they agree or one is inconclusive does not."""
    text = PAPER_MAP.read_text()
    fresh = pv.fresh_verdicts()
    claims = pv.book_claims()
    earlier = {c.key: c.verdict for g in pv.GROUPS for c in claims.get(g, [])}
    opposite = {REPRODUCED, NOT_REPRODUCED}
    seen = 0
    for words, keys in pv.MAP_ROWS.items():
        (row,) = [r for r in text.splitlines() if words in r and r.startswith("|")]
        flips = [
            k for _, k in keys if {fresh[k].verdict, earlier.get(k, "")} == opposite
        ]
        assert row.count("the two differ") == (1 if flips else 0), words
        for k in flips:
            assert pv.MAP_DIFFERS[k] in row
        seen += bool(flips)
    assert seen == 3  # no overlap, individual pixels, close to ResNet18


def test_paper_map_gives_the_follow_ups_verdict_beside_the_claim_it_asks_again():
    """Once judged, the registered follow-up's verdict stands in the row of the frozen claim it
    asks again, after the fresh lead and before the exploratory verdict, with its number."""
    from attnconv.evidence.judge import PENDING, followup_verdicts

    text = PAPER_MAP.read_text()
    judged = 0
    for frozen, asked_all in pv.MAP_FOLLOWUP.items():
        words = next(
            w for w, keys in pv.MAP_ROWS.items() if frozen in {k for _, k in keys}
        )
        (row,) = [r for r in text.splitlines() if words in r and r.startswith("|")]
        lead = row.split(pv.MAP_JOIN)[0]
        for asked, label in asked_all:
            f = followup_verdicts()[asked]
            if f.verdict == PENDING:
                assert f"{label} {{bdg" not in row
                continue
            judged += 1
            # the number as the verdict's interval prints it, or as its detail opens
            number = (
                f.interval.compact(f.scale, f.unit, f.digits, named=True)
                if f.interval is not None
                else re.match(r"[+−]\d+\.\d points, 95 % interval \[[^]]+\]", f.detail)[
                    0
                ]
            )
            want = f"{label} {pv.verdict_badge(f.verdict)} {number}"
            assert want in lead.split(pv.MAP_FOLLOWUP_LEAD)[1], (want, lead)
    assert judged == sum(
        f.verdict != PENDING
        for k, f in followup_verdicts().items()
        if any(k == a for pairs in pv.MAP_FOLLOWUP.values() for a, _ in pairs)
    )


def test_fresh_map_distances_are_each_layers_mean_distance_under_its_saved_maps():
    """depth_measures.fresh_map_distances for the learned arm, against a plain loop over each
    seed's saved attention maps (attention_maps.json): per layer, the mean over heads of
    Σ p(k)·‖k − q‖ for the centre query of the 16×16 grid."""
    import json
    import math

    from attnconv.chapters.shared.depth_measures import fresh_map_distances
    from attnconv.evidence.protocol import CONFIRMATORY_SEEDS
    from attnconv.experiments.store import runs_dir

    got = fresh_map_distances("learned")
    assert len(got) == len(CONFIRMATORY_SEEDS)
    for seed, layers in zip(CONFIRMATORY_SEEDS, got):
        saved = json.loads(
            (runs_dir() / f"confirm/learned/seed{seed}/attention_maps.json").read_text()
        )
        q = saved["query"]
        assert q == [8, 8] and len(layers) == len(saved["layers"]) == 6
        for value, heads in zip(layers, saved["layers"]):
            each = [
                sum(
                    p * math.hypot(r - q[0], c - q[1])
                    for r, row in enumerate(head)
                    for c, p in enumerate(row)
                )
                for head in heads
            ]
            # the saved maps are rounded to 6 digits; each is renormalised to sum 1
            assert math.isclose(value, sum(each) / len(each), rel_tol=1e-4)
