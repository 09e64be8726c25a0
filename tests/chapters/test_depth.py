"""attnconv.chapters.depth: per-layer depth measures against independent computations, and the
claim checks on hand-made rows where the answer is known."""

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from attnconv.chapters import depth
from attnconv.chapters.shared.gaussian_maps import gaussian_head_maps
from attnconv.chapters.shared.trained_heads import head_summary, layer_records
from attnconv.core.lattice import lattice_coverage
from attnconv.experiments.train import load_run
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


def _by_source(claims, word):
    return [c for c in claims if word in c.test]


def _key(claims, key):
    found = [c for c in claims if depth.claim_key(c) == key]
    assert len(found) == 1, key
    return found[0]


def test_structural_claims_use_every_seed_at_the_claims_setting():
    near, far = _rows([1, 1, 3, 3, 4, 4]), _rows([4, 4, 1, 1, 1, 1])
    # three quadratic seeds whose ranges separate reproduce "local first, further away deeper"
    seeds = {"seed 0": near, "seed 1": near, "seed 2": _rows([1.5, 1, 3, 3, 5, 4])}
    c = _key(
        depth.depth_claims({"quadratic": near}, quadratic_seeds=seeds), "local_then_far"
    )
    assert c.verdict == REPRODUCED
    assert "2.50–3.50" not in c.evidence[0].measured  # the printed range is the seeds'
    assert "3 seeds" in c.evidence[0].measured
    assert any("×10" in x for x in c.confounds)
    # one seed cannot tell; a seed that goes the other way makes the ranges touch
    c = _key(depth.depth_claims({"quadratic": near}), "local_then_far")
    assert c.verdict == INCONCLUSIVE
    seeds["seed 2"] = far
    c = _key(
        depth.depth_claims({"quadratic": near}, quadratic_seeds=seeds), "local_then_far"
    )
    assert c.verdict == INCONCLUSIVE
    # other models are listed, never counted as replicates
    c = _key(
        depth.depth_claims({"quadratic": near, "generalized": near, "x": near}),
        "local_then_far",
    )
    assert c.verdict == INCONCLUSIVE
    assert sum("listed, not counted" in e.measured for e in c.evidence) == 2


def test_grid_at_layer_four_judged_on_the_deep_seeds():
    sharp = _rows([1] * 6, localized=(4, 0, 0, 9, 0, 0))
    none = _rows([1] * 6)
    for r in sharp:
        r["sharp_coverage"] = 9 if r["layer"] == 3 else 0
    c = depth.grid_claim({"seed 0": none, "seed 1": none, "seed 2": none})
    assert c.verdict == NOT_REPRODUCED and "layer 4" in c.reason
    c = depth.grid_claim({"seed 0": none, "seed 1": sharp})
    assert c.verdict == REPRODUCED
    # a grid in another layer, or at 2 layers, is listed and does not count
    c = depth.grid_claim({"seed 0": none}, {"2 layers": sharp})
    assert c.verdict == NOT_REPRODUCED and "2 layers" in c.reason


def test_learned_pixels_symmetric_with_the_setting():
    # the 2-layer run shows it, the six-layer seeds decide: none localised -> not reproduced
    deep = {"seed 0": [0] * 6, "seed 1": [0] * 6}
    shallow = {"learned": _rows([2, 2], localized=(6, 5))}
    c = _key(
        depth.depth_claims({}, shallow_rows=shallow, learned_seeds=deep),
        "learned_pixels",
    )
    assert c.verdict == NOT_REPRODUCED and "2 layers" in c.reason
    # one seed with two heads on one key in layer 1 -> reproduced
    deep["seed 2"] = [2, 0, 0, 0, 0, 0]
    c = _key(
        depth.depth_claims({}, shallow_rows=shallow, learned_seeds=deep),
        "learned_pixels",
    )
    assert c.verdict == REPRODUCED and "1 of 3" in c.reason
    # only the 2-layer run: no run at the setting
    c = _key(depth.depth_claims({}, shallow_rows=shallow), "learned_pixels")
    assert c.verdict == INCONCLUSIVE


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


def test_removal_rows_and_redundancy_within_the_noise():
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

    def redundancy(r, n_test=1017, model="learned"):
        claims = depth.depth_claims({}, {model: r}, n_test=n_test)
        return _key(claims, "redundant")

    # 0.5 points is 5 of 1,017 images, below the ±3 points of the test set: cannot tell
    c = redundancy(rem)
    assert c.verdict == INCONCLUSIVE and "noise" in c.reason
    assert "±3.0 points" in c.evidence[0].measured
    # with a test set large enough for 0.5 points to exceed the noise, it is reproduced
    assert redundancy(rem, n_test=200_000).verdict == REPRODUCED
    rem["without_head"] = [[0.6] * 2] * 4 + [[0.5] * 2] * 2
    assert redundancy(rem).verdict == NOT_REPRODUCED
    # a quadratic run is not the claim's (learned) setting
    assert redundancy(rem, model="quadratic").verdict == INCONCLUSIVE


def test_pruning_claims_with_the_binomial_noise():
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
    c = depth.pruning_claims(
        [2, 4, 1, 2, 6, 0], {"6 layers (deep)": [0, 0, 1, 1, 3, 0]}, acc
    )
    counts, hurts, recovers = c
    assert counts.verdict == NOT_REPRODUCED
    assert "most in the same layer" in counts.reason
    # a 0.1-point drop at 6 layers is within the noise; the 2-layer 7.8 points is listed
    assert hurts.verdict == INCONCLUSIVE
    assert (
        "consistent with the claim (not the claim's setting"
        in hurts.evidence[1].measured
    )
    assert recovers.verdict == REPRODUCED
    assert "14 epochs of retraining after 40" in recovers.test
    acc["6 layers (deep)"]["pruned"] = 0.50
    c = depth.pruning_claims([0] * 6, {"6 layers (deep)": [0] * 6}, acc)
    assert c[0].verdict == REPRODUCED and c[1].verdict == REPRODUCED


def test_accuracy_claim_uses_every_series():
    from attnconv.experiments.verdicts import spread

    q, l = spread([0.43, 0.44, 0.45]), spread([0.46, 0.47, 0.48])
    over = spread([0.57, 0.58, 0.60]), spread([0.58, 0.60, 0.64])
    assert depth.accuracy_claim({"16 epochs": (q, l)}).verdict == NOT_REPRODUCED
    assert depth.accuracy_claim({"x": (l, q)}).verdict == REPRODUCED
    c = depth.accuracy_claim({"16 epochs": (q, l), "6 layers": over})
    assert c.verdict == INCONCLUSIVE and "disagree" in c.reason
    assert "16 epochs" in c.reason and "6 layers" in c.reason
    c = depth.accuracy_claim({"16 epochs": (q, l), "40 epochs": (q, None)})
    assert c.verdict == NOT_REPRODUCED
    assert any("missing: learned" in e.measured for e in c.evidence)
    # one seed each never gives an ordering, whichever way the two runs lie
    c = depth.accuracy_claim({"deep": (spread([0.604]), spread([0.638]))})
    assert c.verdict == INCONCLUSIVE


def test_resnet_claims():
    def history(accs, n_test=1017):
        return {"epochs": [{"test_acc": a} for a in accs], "test_size": n_test}

    resnet = history([0.3, 0.5, 0.55, 0.55])
    slow = {f"seed {k}": history([0.2, 0.3, 0.4, 0.5 + k / 100]) for k in range(3)}
    faster, close = depth.resnet_claims(resnet, slow, slow)
    assert faster.verdict == INCONCLUSIVE and "one ResNet run" in faster.reason
    assert "4 epochs" in faster.evidence[0].measured
    assert close.verdict == REPRODUCED  # 50-52 % touches 55 % ± 3.1
    far = {f"seed {k}": history([0.2, 0.3, 0.4, 0.40 + k / 100]) for k in range(3)}
    assert depth.resnet_claims(resnet, {}, far)[0].verdict == NOT_REPRODUCED


def test_book_claims_from_the_committed_runs():
    claims = depth.book_claims()
    keys = {
        depth.claim_key(c) for g in ("depth", "accuracy", "pruning") for c in claims[g]
    }
    assert {"grid_layer4", "redundant", "similar_or_better", "pruning_hurts"} <= keys
    grid = _key(claims["depth"], "grid_layer4")
    assert grid.verdict == NOT_REPRODUCED and len(grid.evidence) >= 3
    local = _key(claims["depth"], "local_then_far")
    assert "3 seeds" in local.evidence[0].measured


PAPER = (
    Path(__file__).resolve().parents[3]
    / "shared"
    / "papers"
    / "002_3c48580c3ebf0097.txt"
)


@pytest.mark.skipif(not PAPER.is_file(), reason="paper text not beside the checkout")
def test_every_quoted_claim_is_verbatim_in_the_paper():
    from attnconv.experiments.verdicts import paper_text_contains

    text = PAPER.read_text()
    for key, (quote, _) in depth.PAPER_CLAIMS.items():
        assert paper_text_contains(quote, text), key


def test_removal_accuracies_match_pruning_by_hand(tmp_path):
    """removal.json of a tiny trained run against copies pruned and evaluated here, one by one."""
    import copy as _copy

    from attnconv.experiments.data import load_cifar10
    from attnconv.experiments.profiles import make_config
    from attnconv.experiments.pruning import prune_heads
    from attnconv.experiments.store import REMOVAL_FILE, StaleResultError
    from attnconv.experiments.train import evaluate, train_or_load, write_json

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
    assert depth.load_removal(run) is None
    saved = depth.removal_accuracies(run)
    write_json(run.run_dir / REMOVAL_FILE, saved)
    assert depth.load_removal(run) == saved
    stale = dict(
        saved, full=saved["full"] + 1 / 50
    )  # removal accuracies of other weights
    write_json(run.run_dir / REMOVAL_FILE, stale)
    with pytest.raises(StaleResultError, match="regenerate --only .*removal"):
        depth.load_removal(run)
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
#: claim key → words of its paper-map row (the row's status must open with the rule's verdict)
MAP_ROWS = {
    "grid_layer4": "forming a grid around the query pixel",
    "local_then_far": "tend to focus on local patterns",
    "no_overlap": "attention heads do not overlap",
    "localized_first": "appear more frequently in the first few layers",
    "learned_pixels": "learn to attend to individual pixels",
    "vertical_rare": "vertical symmetry is much more rare",
    "redundant": "seem to be redundant",
    "similar_or_better": "similar or better empirical performance",
    "resnet_faster": "faster to converge",
    "close_to_resnet": "close to that of ResNet18",
    "no_gain": "do not obtain any performance improvement",
    "learned_matched_lemma": "matched the conditions of the lemma",
}


def test_paper_map_names_the_rules_verdicts():
    claims = depth.book_claims()
    verdicts = {
        depth.claim_key(c): c.verdict
        for g in ("depth", "accuracy", "pruning")
        for c in claims[g]
    }
    rows = PAPER_MAP.read_text().splitlines()
    for key, words in MAP_ROWS.items():
        row = [r for r in rows if words in r and r.startswith("|")]
        assert len(row) == 1, key
        status = row[0].strip().strip("|").split(" | ")[-1].strip()
        assert status.startswith(verdicts[key]), (key, status[:60])
