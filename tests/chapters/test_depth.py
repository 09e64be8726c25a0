"""attnconv.chapters.depth: per-layer depth measures against independent computations, and the
claim checks on hand-made rows where the answer is known."""
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from attnconv.chapters import depth
from attnconv.chapters.paper_figures import gaussian_head_maps, head_summary, layer_records
from attnconv.core.lattice import lattice_coverage
from attnconv.experiments.train import load_run

DEEP_QUADRATIC = Path(__file__).resolve().parents[2] / "book" / "runs" / "deep" / "quadratic"


@pytest.mark.skipif(not (DEEP_QUADRATIC / "history.json").is_file(), reason="no saved deep quadratic run")
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
        loop = np.mean([sum(float(m[i, j]) * math.hypot(i - 8, j - 8) for i in range(16) for j in range(16))
                        for m in maps])
        assert r["attention_distance"] == pytest.approx(loop, rel=1e-9)
        pairs = sum(1 for a in range(len(maps)) for b in range(a + 1, len(maps))
                    if float(torch.minimum(maps[a], maps[b]).sum()) > depth.OVERLAP_SHARED_MASS)
        assert r["overlapping_pairs"] == pairs


def _rows(distances, pairs=0, localized=(0,) * 6, lr=(0,) * 6, ud=(0,) * 6):
    return [{"layer": i, "attention_distance": d, "centre_distance": d, "overlapping_pairs": pairs,
             "localized": localized[i], "left_right": lr[i], "up_down": ud[i]} for i, d in enumerate(distances)]


def test_claims_hold_and_fail_as_they_should():
    local_first = _rows([1, 1, 3, 3, 4, 4])
    far_first = _rows([4, 4, 1, 1, 1, 1], pairs=1)
    claims = depth.depth_claims({"a": local_first, "b": far_first})
    by = {(c["model"], c["claim"].split(" (")[0]): c["holds"] for c in claims}
    assert by[("a", "deeper layers attend further from the query")] is True
    assert by[("b", "deeper layers attend further from the query")] is False
    assert by[("a", "heads do not overlap")] is True
    assert by[("b", "heads do not overlap")] is False
    learned = depth.depth_claims({"learned": _rows([1] * 6, localized=(3, 2, 1, 0, 0, 0), lr=(0, 0, 0, 2, 2, 1),
                                                   ud=(0, 0, 0, 0, 1, 0))})
    assert all(c["holds"] for c in learned if "pixels" in c["claim"] or "symmetry" in c["claim"])


def test_removal_rows_and_redundancy_claim():
    rem = {"full": 0.6, "without_layer": [0.5, 0.5, 0.5, 0.5, 0.55, 0.58],
           "without_head": [[0.55] * 2, [0.55] * 2, [0.56] * 2, [0.56] * 2, [0.6, 0.598], [0.6, 0.601]]}
    rows = depth.removal_rows({"m": rem})
    assert rows[4]["head_drop_max"] == pytest.approx(0.2)
    assert rows[5]["harmless_heads"] == 2 and rows[0]["harmless_heads"] == 0

    def redundancy(r):
        return [c for c in depth.depth_claims({"m": _rows([1] * 6)}, {"m": r}) if "redundant" in c["claim"]][0]

    assert redundancy(rem)["holds"] is True  # 4 of 4 harmless heads in layers 5-6, 0 of 8 before
    rem["without_head"] = [[0.6] * 2] * 4 + [[0.5] * 2] * 2  # the other way round
    assert redundancy(rem)["holds"] is False


def test_removal_accuracies_match_pruning_by_hand(tmp_path):
    """removal.json of a tiny trained run against copies pruned and evaluated here, one by one."""
    import copy as _copy

    from attnconv.experiments.data import load_cifar10
    from attnconv.experiments.pruning import prune_heads
    from attnconv.experiments.profiles import make_config
    from attnconv.experiments.store import REMOVAL_FILE
    from attnconv.experiments.train import evaluate, train_or_load, write_json

    tiny = dict(hidden_size=16, intermediate_size=16, num_layers=2, num_heads=2, downsample=8)
    config = make_config("quadratic", "cpu", epochs=1, train_subset=100, test_subset=50, model_overrides=tiny)
    run = train_or_load(config, tmp_path / "quadratic", load_model=True, verbose=False)
    assert depth.load_removal(run.run_dir) is None
    saved = depth.removal_accuracies(run)
    write_json(run.run_dir / REMOVAL_FILE, saved)
    assert depth.load_removal(run.run_dir) == saved
    data = load_cifar10("sample", verbose=False).subset(100, 50)
    model = run.model.eval()

    def acc(m):
        return evaluate(m, data.x_test, data.y_test, 500)[1]

    assert saved["full"] == acc(model)
    for layer in range(2):
        assert saved["without_layer"][layer] == acc(prune_heads(_copy.deepcopy(model), {layer: [0, 1]}))
        for head in range(2):
            assert saved["without_head"][layer][head] == acc(prune_heads(_copy.deepcopy(model), {layer: [head]}))
