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


def test_claims_follow_the_verdict_rule():
    near, far = _rows([1, 1, 3, 3, 4, 4]), _rows([4, 4, 1, 1, 1, 1], pairs=1)
    # three agreeing Gaussian runs reproduce the comparative claim; a mixed set is inconclusive
    c = _by_source(
        depth.depth_claims({"a": near, "b": near, "c": near}), "mean attention distance"
    )[0]
    assert c.verdict == depth.REPRODUCED and len(c.evidence) == 3
    c = _by_source(
        depth.depth_claims({"a": near, "b": far, "c": near}), "mean attention distance"
    )[0]
    assert c.verdict == depth.INCONCLUSIVE
    c = _by_source(
        depth.depth_claims({"a": near, "b": near}), "mean attention distance"
    )[0]
    assert (
        c.verdict == depth.INCONCLUSIVE
    )  # two runs are too few for a comparative claim
    # overlap: none anywhere reproduces; broad heads only is inconclusive; localized pairs do not reproduce
    overlap = lambda rows: (
        _by_source(depth.depth_claims(rows), "share more than")[0].verdict
    )
    assert overlap({"a": near}) == depth.REPRODUCED
    assert overlap({"a": far}) == depth.INCONCLUSIVE
    assert overlap({"a": _rows([1] * 6, pairs=2, loc_pairs=1)}) == depth.NOT_REPRODUCED
    # the learned run: localized in a 2-layer run but not at depth -> inconclusive
    learned_deep = _rows([6] * 6)
    learned_2 = _rows([2, 2], localized=(6, 5))
    c = _by_source(
        depth.depth_claims(
            {"learned": learned_deep}, shallow_rows={"learned": learned_2}
        ),
        "layers 1-2 of the learned",
    )[0]
    assert c.verdict == depth.INCONCLUSIVE and len(c.evidence) == 2
    c = _by_source(
        depth.depth_claims({"learned": _rows([2] * 6, localized=(3, 2, 0, 0, 0, 0))}),
        "layers 1-2 of the learned",
    )[0]
    assert c.verdict == depth.REPRODUCED
    # symmetry from one run is inconclusive
    c = _by_source(
        depth.depth_claims({"learned": _rows([2] * 6, lr=(0, 0, 0, 2, 2, 1))}),
        "up-down",
    )[0]
    assert c.verdict == depth.INCONCLUSIVE


def test_removal_rows_and_redundancy_claim_tested_as_written():
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

    def redundancy(r):
        claims = depth.depth_claims({"learned": _rows([1] * 6)}, {"learned": r})
        return _by_source(claims, "at least one head")[0], _by_source(
            claims, "larger share"
        )[0]

    as_written, comparative = redundancy(rem)
    assert (
        as_written.verdict == depth.REPRODUCED
        and comparative.verdict == depth.INCONCLUSIVE
    )  # one run
    rem["without_head"] = [[0.6] * 2] * 4 + [
        [0.59] * 2,
        [0.6, 0.59],
    ]  # one harmless head in 5-6, many before
    as_written, _ = redundancy(rem)
    assert (
        as_written.verdict == depth.REPRODUCED
    )  # an existence claim: one harmless head is enough
    rem["without_head"] = [[0.6] * 2] * 4 + [[0.5] * 2] * 2
    assert redundancy(rem)[0].verdict == depth.NOT_REPRODUCED


def test_pruning_and_accuracy_claims():
    from attnconv.experiments.verdicts import spread

    c = depth.pruning_claims(
        [2, 4, 1, 2, 6, 0],
        {"deep": [0, 0, 1, 1, 3, 0]},
        {"deep": {"full": 0.608, "pruned": 0.607, "retrained": 0.618}},
    )
    assert (
        c[0].verdict == depth.NOT_REPRODUCED and "most in the same layer" in c[0].reason
    )
    assert c[1].verdict == depth.REPRODUCED
    q, l = spread([0.43, 0.44, 0.45]), spread([0.46, 0.47, 0.48])
    assert depth.accuracy_claim({"cpu": (q, l)}).verdict == depth.NOT_REPRODUCED
    assert depth.accuracy_claim({"cpu": (l, q)}).verdict == depth.REPRODUCED
    assert depth.accuracy_claim({"cpu": (q, None)}).verdict == depth.INCONCLUSIVE
    assert (
        depth.accuracy_claim({"cpu": (spread([0.5]), spread([0.4]))}).verdict
        == depth.INCONCLUSIVE
    )
    # one seed each never gives an ordering, whichever way the two runs lie
    assert (
        depth.accuracy_claim({"deep": (spread([0.604]), spread([0.638]))}).verdict
        == depth.INCONCLUSIVE
    )
    # two series that disagree
    assert (
        depth.accuracy_claim({"a": (q, l), "b": (l, q)}).verdict == depth.INCONCLUSIVE
    )


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
