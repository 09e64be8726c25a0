import copy
import json
import math
from dataclasses import replace
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch

import attnconv.chapters.generalized_pruning as gf
import attnconv.experiments.studies_pruning as sp
from attnconv.experiments.checkpoints import Run, attention_record
from attnconv.experiments.data import load_cifar10_sample
from attnconv.experiments.models import build_model, model_config_to_dict
from attnconv.experiments.pruning import degenerate_heads, prune_heads
from attnconv.experiments.store import PRUNING_FILE
from attnconv.experiments.train_config import TrainConfig
from attnconv.experiments.train_step import evaluate
from attnconv.experiments.verdicts import Interval

PAPER = (
    Path(__file__).resolve().parents[3]
    / "shared"
    / "papers"
    / "002_3c48580c3ebf0097.txt"
)

TINY = dict(
    hidden_size=8, intermediate_size=12, num_layers=2, num_heads=4, downsample=8
)


def tiny(name="generalized", seed=0):
    torch.manual_seed(seed)
    return build_model(name, **TINY).eval()


def fake_history(model):
    rec = attention_record(model)
    return {
        "model_config": model_config_to_dict(model.config),
        "initial_attention": rec,
        "epochs": [{"attention": rec}],
    }


def set_m(model, layer, head, m):
    with torch.no_grad():
        model.layers[layer].attention.encoding.inv_sqrt_sigma[head] = torch.as_tensor(
            m, dtype=torch.float32
        )


def shaped_model():
    """Heads with known spectra: (0,1) non-localised, (1,0) condition 1e6, (1,3) 2500, (0,2) 100."""
    model = tiny()
    set_m(model, 0, 1, [[1e-4, 0.0], [0.0, 1e-4]])
    set_m(model, 1, 0, [[1.0, 0.0], [0.0, 1e-3]])
    set_m(model, 1, 3, [[1.0, 0.0], [0.0, 0.02]])
    set_m(model, 0, 2, [[1.0, 0.0], [0.0, 0.1]])
    for layer, head in [(0, 0), (0, 3), (1, 1), (1, 2)]:
        set_m(model, layer, head, [[1.0, 0.0], [0.0, 1.0 + 0.1 * head]])
    return model


@pytest.fixture(scope="module")
def data():
    return load_cifar10_sample().subset(200, 100)


def tiny_config(**kw):
    base = dict(
        model="generalized",
        model_overrides=TINY,
        epochs=3,
        batch_size=50,
        eval_batch_size=100,
        lr=0.1,
        data="sample",
        train_subset=200,
        test_subset=100,
        attention_lr_multiplier=10.0,
    )
    base.update(kw)
    return TrainConfig(**base)


def test_settings_per_profile():
    assert gf.generalized_run_changes("cpu") == {"epochs": 40}
    assert gf.generalized_run_changes("paper") == {}
    with pytest.raises(ValueError):
        gf.generalized_run_changes("nope")
    gf.generalized_run_changes("cpu")["epochs"] = 1  # a copy
    assert gf.generalized_run_changes("cpu")["epochs"] == 40
    assert sp.retrain_epochs(TrainConfig(epochs=300)) == 100
    assert (
        sp.retrain_epochs(TrainConfig(epochs=40)) == 14
        and sp.retrain_epochs(TrainConfig(epochs=1)) == 1
    )


def test_attention_only_model_restores_the_saved_heads():
    model = shaped_model()
    rebuilt = gf.attention_only_model(fake_history(model))
    for a, b in zip(model.layers, rebuilt.layers):
        assert torch.equal(a.attention.encoding.centers, b.attention.encoding.centers)
        assert torch.equal(
            a.attention.encoding.inv_sqrt_sigma, b.attention.encoding.inv_sqrt_sigma
        )
    initial = gf.attention_only_model(fake_history(tiny(seed=1)), epoch=None)
    assert torch.equal(
        initial.layers[0].attention.encoding.centers,
        tiny(seed=1).layers[0].attention.encoding.centers,
    )
    with pytest.raises(ValueError):
        gf.attention_only_model(fake_history(tiny("quadratic")))
    h = fake_history(model)
    h["epochs"][0]["attention"] = h["epochs"][0]["attention"][:1]
    with pytest.raises(ValueError):
        gf.attention_only_model(h)


def test_head_table_against_eigensolver():
    model = shaped_model()
    rows = sp.head_table(model, 1e-5, 1e3)
    assert len(rows) == 8
    for r in rows:
        m = (
            model.layers[r["layer"]]
            .attention.encoding.inv_sqrt_sigma[r["head"]]
            .detach()
            .double()
        )
        eig = torch.linalg.eigvalsh(m @ m.T)
        assert r["lambda_max"] == pytest.approx(float(eig[1]), rel=1e-9)
        assert r["lambda_min"] == pytest.approx(float(eig[0]), rel=1e-6, abs=1e-14)
    flagged = {(r["layer"], r["head"]) for r in rows if r["degenerate"]}
    assert flagged == {(0, 1), (1, 0), (1, 3)}
    for cond in (1e3, 1e5):
        want = degenerate_heads(model, 1e-5, cond)
        got = sp.selection_of(
            [
                (r["layer"], r["head"])
                for r in sp.head_table(model, 1e-5, cond)
                if r["degenerate"]
            ]
        )
        assert got == want
    with pytest.raises(ValueError):
        sp.head_table(model, condition_threshold=0.5)
    with pytest.raises(ValueError):
        sp.head_table(tiny("quadratic"))


def test_head_table_keeps_tiny_eigenvalues_exact():
    """A nearly singular Σ⁻¹: an eigensolver's λ_min is noise at ~eps·λ_max, the closed form is
    exact: M = diag(1, 1e-9) → λ = (1e-18, 1), condition 1e18; a rank-one M → λ_min = 0, inf."""
    model = tiny()
    set_m(model, 0, 0, [[1.0, 0.0], [0.0, 1e-9]])
    set_m(model, 0, 1, [[1.0, 2.0], [0.5, 1.0]])  # rank one
    rows = sp.head_table(model)
    m0 = float(torch.tensor(1e-9, dtype=torch.float32))
    assert rows[0]["lambda_min"] == pytest.approx(m0**2, rel=1e-12) and rows[0][
        "condition"
    ] == pytest.approx(1 / m0**2, rel=1e-12)
    assert (
        rows[1]["lambda_min"] == 0.0
        and rows[1]["condition"] == math.inf
        and rows[1]["lambda_max"] == pytest.approx(6.25)
    )
    assert rows[0]["degenerate"] and rows[1]["degenerate"]


def test_degeneracy_order_and_prefix_property():
    model = shaped_model()
    order = sp.degeneracy_order(model)
    assert order[:4] == [(0, 1), (1, 0), (1, 3), (0, 2)]
    assert sorted(order) == [(li, h) for li in range(2) for h in range(4)]
    for cond in (1e1, 50.0, 1e3, 1e5, 1e7):
        sel = degenerate_heads(model, 1e-5, cond)
        assert sp.selection_of(order[: sp.count_selected(sel)]) == sel
    assert sp.selection_of([(1, 3), (0, 2), (1, 0)]) == {0: [2], 1: [0, 3]}
    assert sp.count_selected({0: [1, 2], 3: [0]}) == 3


def test_per_head_outputs_against_loops():
    model = tiny()
    x = torch.randn(2, 3, 32, 32)
    outs = gf.per_head_outputs(model, x)
    tokens = model.tokens(x).detach()  # (T, B, D), grid 4×4
    enc = model.layers[0].attention.encoding
    g = 4
    h, q = 2, 5
    qi, qj = divmod(q, g)
    a = enc.inverse_covariance().detach()[h].double()
    c = enc.centers.detach()[h].double()
    scores = []
    for k in range(g * g):
        d = torch.tensor([k // g - qi, k % g - qj], dtype=torch.float64) - c
        scores.append(-0.5 * float(d @ a @ d))
    p = torch.softmax(torch.tensor(scores), 0)
    expect = sum(p[k] * tokens[k].double() for k in range(g * g))
    assert torch.allclose(outs[0][h, q].double(), expect, atol=1e-5)
    assert outs[1].shape == (4, 16, 2, 8)


def test_pruning_check_passes_and_can_fail(monkeypatch):
    model = tiny()
    x = torch.randn(2, 3, 32, 32)
    for sel in ({0: [1, 3], 1: [0]}, {1: [0, 1, 2, 3]}, {0: [2]}):
        assert all(gf.pruning_check(model, sel, x).values())

    def wrong_prune(m, sel):  # removes the heads after the chosen ones
        return prune_heads(m, {k: [(h + 1) % 4 for h in v] for k, v in sel.items()})

    monkeypatch.setattr(gf, "prune_heads", wrong_prune)
    res = gf.pruning_check(model, {0: [1]}, x)
    assert (
        not res["kept_parameters_equal"]
        and not res["kept_head_outputs_equal"]
        and not res["matches_zeroed_model"]
    )


def test_retrain_lowers_lr_and_is_deterministic(data):
    cfg = tiny_config()
    model = prune_heads(tiny(), {0: [0]})
    before = copy.deepcopy(model)
    h = sp.retrain(model, cfg, data, epochs=1)
    assert (
        h["status"] == "complete"
        and len(h["epochs"]) == 1
        and h["heads_per_layer"] == [3, 4]
    )
    back = TrainConfig.from_dict(h["config"])
    assert (
        back.lr == pytest.approx(0.01)
        and back.epochs == 1
        and back.warmup_fraction == 0.0
    )
    assert (
        h["initial"]["test_acc"] == evaluate(before, data.x_test, data.y_test, 100)[1]
    )
    # the model given is left as it was (the loop trains a copy) and the retraining moved away
    assert torch.equal(model.classifier.weight, before.classifier.weight)
    assert h["epochs"][0]["attention"] != h["initial_attention"]
    again = sp.retrain(copy.deepcopy(before), cfg, data, epochs=1)
    assert again["epochs"][0]["train_loss"] == h["epochs"][0]["train_loss"]
    with pytest.raises(ValueError):
        sp.retrain(model, cfg, data, epochs=0)


def test_pruning_study_on_a_tiny_model(data):
    cfg = tiny_config()
    model = shaped_model()
    study = sp.pruning_study(
        model, cfg, data, 1e-5, 1e3, retrain_counts=[1], epochs=1, random_orders=2
    )
    assert study["selected"] == {"0": [1], "1": [0, 3]}
    assert study["selected_paper_thresholds"] == {"0": [1], "1": [0]}
    curve = study["curve"]
    assert curve["k"] == list(range(9)) and len(curve["random"]) == 2
    assert (
        curve["degenerate_first"][0]
        == evaluate(model, data.x_test, data.y_test, 100)[1]
    )
    none_left = prune_heads(copy.deepcopy(model), {0: [0, 1, 2, 3], 1: [0, 1, 2, 3]})
    assert (
        curve["degenerate_first"][8]
        == evaluate(none_left, data.x_test, data.y_test, 100)[1]
    )
    assert curve["random"][0][8] == curve["degenerate_first"][8]
    assert [r["k"] for r in study["retrained"]] == [1, 3]
    assert study["retrained"][1]["test_acc_before"] == curve["degenerate_first"][3]
    assert study["parameters"]["before"] - study["parameters"]["after"] == 3 * (
        8 * 8 + 6
    )
    assert study["macs"]["after"]["dense"] < study["macs"]["before"]["dense"]
    assert study["pruned_history"]["heads_per_layer"] == [3, 2]
    json.dumps(study)  # JSON-ready


def test_load_pruning_study_reads_only(tmp_path, data):
    from attnconv.experiments.checkpoints import write_json
    from attnconv.experiments.store import MissingResultError, StaleResultError

    cfg = tiny_config()
    run_dir = tmp_path / "cpu" / "generalized"
    run_dir.mkdir(parents=True)
    run = Run(run_dir, cfg, {"epochs": []})
    with pytest.raises(MissingResultError, match="python -m attnconv.regenerate"):
        sp.load_pruning_study(run, condition_threshold=1e3)
    with pytest.raises(MissingResultError, match="python -m attnconv.regenerate"):
        sp.load_pruned_run(run)
    study = sp.pruning_study(
        shaped_model(),
        cfg,
        data,
        1e-5,
        1e3,
        retrain_counts=[],
        epochs=1,
        random_orders=1,
    )
    pruned = study.pop("pruned_history")
    write_json(run_dir / PRUNING_FILE, study)
    sp.pruned_folder(run).mkdir()
    write_json(sp.pruned_folder(run) / "history.json", pruned)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*.json")}
    assert sp.load_pruning_study(run, condition_threshold=1e3) == json.loads(
        json.dumps(study)
    )
    assert sp.load_pruned_run(run).history["heads_per_layer"] == [3, 2]
    with pytest.raises(StaleResultError, match="python -m attnconv.regenerate"):
        sp.load_pruning_study(
            run, condition_threshold=1e5
        )  # other thresholds: not this study
    with pytest.raises(StaleResultError):
        sp.load_pruning_study(
            Run(run_dir, replace(cfg, epochs=cfg.epochs + 1), {"epochs": []}),
            condition_threshold=1e3,
        )
    assert {
        p: p.read_bytes() for p in tmp_path.rglob("*.json")
    } == before  # nothing written


def test_figures_and_table(data):
    model = shaped_model()
    fig = gf.plot_heads_by_layer(model, degenerate={0: [1]})
    assert len([a for a in fig.axes if a.axison]) == 2
    study = sp.pruning_study(
        model,
        tiny_config(),
        data,
        1e-5,
        1e3,
        retrain_counts=[],
        epochs=1,
        random_orders=1,
    )
    fig2 = gf.plot_pruning(study)
    assert len(fig2.axes) == 2
    # accuracy in percent on both panels
    assert [a.get_ylabel() for a in fig2.axes] == ["test accuracy (%)"] * 2
    first = fig2.axes[0].lines[0].get_ydata()
    assert list(first) == [100 * v for v in study["curve"]["degenerate_first"]]
    table = gf.pruning_table(study)
    assert "12,087,006" in table and "9,686,916" in table
    assert (
        f"{study['parameters']['before']:,}" in table
        and f"{study['parameters']['after']:,}" in table
    )
    import matplotlib.pyplot as plt

    plt.close("all")


def test_chapter_tables_are_markdown_with_the_numbers():
    counts = gf.pruned_counts_table(
        {"the paper": [2, 4, 1, 2, 6, 0], "ours": [0, 1, 2, 0, 2, 0]}
    )
    assert counts.splitlines()[0].startswith("| heads pruned | layer 1 |")
    assert "| the paper | 2 | 4 | 1 | 2 | 6 | 0 | 15 |" in counts
    assert "| ours | 0 | 1 | 2 | 0 | 2 | 0 | 5 |" in counts
    red = gf.reduction_table()
    assert "| the paper's Fig. 9 | 19.8 % | 21.0 % | 27.8 % |" in red
    assert (
        gf.by_layer({1: [0, 8], 0: [1, 2]})
        == "layer 1: heads 2, 3; layer 2: heads 1, 9"
    )
    assert gf.by_layer({0: []}) == "none"
    rows = [
        {"layer": 0, "head": 0, "lambda_max": 1.0, "condition": 1e6},
        {"layer": 0, "head": 1, "lambda_max": 2.0, "condition": 3.0},
        {"layer": 1, "head": 0, "lambda_max": 4.0, "condition": 1.5},
    ]
    rule = gf.pilot_rule_table(rows, {"10⁵": {0: [0]}})
    assert "| 10⁵ | layer 1: heads 1 | 3 |" in rule  # the largest kept: 3
    heads = gf.pilot_heads_table(rows, 2)
    assert "| 1 | 2 of 2 | 2.00 |" in heads and "| 2 | 0 of 1 | 4.00 |" in heads


def test_verdicts_table_prints_the_interval_it_is_given():
    iv = Interval(0.005, -0.012, 0.022, 0.008, 7.0, 0.02, "paired")
    table = gf.verdicts_table([("cost", "seed 0", iv, "inconclusive")])
    assert (
        "| cost | seed 0 | +0.5 | [−1.2, +2.2] | {bdg-muted}`inconclusive` |" in table
    )


def test_verdicts_table_without_runs_drops_only_that_column():
    """Table 8.2 and Table 8.3 name their runs in the caption: the same cells, no runs column."""
    iv = Interval(0.005, -0.012, 0.022, 0.008, 7.0, 0.02, "paired")
    table = gf.verdicts_table([("cost", "seed 0", iv, "inconclusive")], runs=False)
    lines = table.splitlines()
    assert lines[0] == "| question | difference (points) | 95 % interval | verdict |"
    assert "| cost | +0.5 | [−1.2, +2.2] | {bdg-muted}`inconclusive` |" in table
    assert "seed 0" not in table


def test_fresh_and_second_test_rows_split_the_pruning_rows():
    """Table 8.2 holds the fresh seeds' rows only (the ones the box counts), Table 8.3 the
    second test's; together they are every pruning verdict on new seeds."""
    from attnconv.chapters import paper_verdicts as pv
    from attnconv.evidence.judge import followup_verdicts

    fresh, follow, intervals = (
        pv.fresh_verdicts(),
        followup_verdicts(),
        gf.followup_intervals(),
    )
    counted = gf.fresh_verdict_rows(fresh)
    second = gf.second_test_rows(follow, intervals)
    assert {r[1] for r in counted} == {gf.FRESH_RUNS}
    assert {r[1] for r in second} == {gf.SECOND_RUNS}
    assert [r[3] for r in counted] == [
        fresh["pruning_hurts"],
        fresh["pruning_recovers"],
    ]
    every = gf.pruning_verdict_rows(fresh, follow, intervals)
    assert len(every) == len(counted) + len(second)
    assert [r[:2] for r in every] == [
        r[:2] for r in (counted[0], second[0], counted[1], second[1], second[2])
    ]


def test_verdicts_list_says_each_rows_numbers_as_the_table_does():
    """Seed 0's aside lists its rows: one item each, with the table's difference, interval and
    badge, and the verdict word of an object with a ``verdict``."""
    iv = Interval(0.005, -0.012, 0.022, 0.008, 7.0, 0.02, "paired")
    back = Interval(0.015, -0.002, 0.031, 0.008, 7.0, 0.02, "paired")

    class Judged:
        verdict = "reproduced at CPU scale"

    items = gf.verdicts_list(
        [("cost", "seed 0", iv, "inconclusive"), ("back", "seed 0", back, Judged())]
    ).splitlines()
    assert items == [
        "- cost: +0.5 points, 95 % interval [−1.2, +2.2], {bdg-muted}`inconclusive`",
        "- back: +1.5 points, 95 % interval [−0.2, +3.1], {bdg-success}`reproduced`",
    ]


def test_verdicts_table_agrees_with_the_judge():
    """Table 8.2 and its seed-0 aside print, row by row, the difference and interval the judge's
    verdict states (the fresh seeds', the second test's, seed 0's claim)."""
    from attnconv.chapters import paper_verdicts as pv
    from attnconv.chapters.shared import depth_measures as depth
    from attnconv.chapters.shared.badges import verdict_badge, verdict_number
    from attnconv.evidence.judge import followup_verdicts

    runs, _ = depth.deep_runs()
    study = sp.load_pruning_study(runs["generalized"], verbose=False)
    claims = pv.book_claims()
    seed0 = {c.key: c for group in pv.GROUPS for c in claims.get(group, [])}
    rows = gf.pruning_verdict_rows(
        pv.fresh_verdicts(), followup_verdicts(), gf.followup_intervals()
    ) + gf.seed_verdict_rows(seed0, gf.seed_intervals(study))
    table = gf.verdicts_table(rows).splitlines()[2:]
    assert len(table) == len(rows) == 7
    for line, (_, _, _, v) in zip(table, rows):
        cells = [c.strip() for c in line.strip("|").split("|")]
        stated = v.interval if isinstance(v.interval, str) else verdict_number(v)
        assert stated.startswith(f"{cells[2]} points, 95 % interval {cells[3]}"), (
            line,
            stated,
        )
        assert cells[4] == verdict_badge(v.verdict)


def test_paper_pruning_reduction_is_a_fifth_not_a_fourth():
    red = gf.paper_pruning_reduction()
    # oracle: the paper's Fig. 9 numbers by hand, 12.1M → 9.7M and 6.2B → 4.9B
    assert red["parameters"] == pytest.approx(2.4 / 12.1) and red[
        "flops"
    ] == pytest.approx(1.3 / 6.2)
    assert (
        0.19 < red["parameters"] < 0.21 and 0.20 < red["flops"] < 0.22
    )  # about a fifth
    assert (
        abs(red["parameters"] - 0.25) > 0.04 and abs(red["flops"] - 0.25) > 0.04
    )  # not a fourth
    assert red["heads"] == pytest.approx(15 / 54)


def _study(curve, random_curves, selected, retrain=14, base=40):
    return {
        "selected": selected,
        "curve": {"degenerate_first": curve, "random": random_curves},
        "retrain_epochs": retrain,
        "base_epochs": base,
    }


def test_initial_drop_reads_the_study_and_states_the_noise():
    s = _study(
        [0.5, 0.45, 0.40, 0.3],
        [[0.5, 0.46, 0.41, 0.2], [0.5, 0.4, 0.38, 0.1]],
        {"0": [1], "1": [0]},
    )
    d = gf.initial_drop(s, test_size=1000)
    assert d["k"] == 2 and d["full"] == 0.5 and d["pruned"] == 0.40
    assert abs(d["drop"] - 10.0) < 1e-9
    assert abs(d["random_lo"] - 9.0) < 1e-9 and abs(d["random_hi"] - 12.0) < 1e-9
    # two binomial standard errors of 0.5 over 1000 images, in points: 2 * sqrt(0.25 / 1000)
    assert abs(d["noise"] - 200 * (0.25 / 1000) ** 0.5) < 1e-9
    assert (d["retrain_epochs"], d["base_epochs"]) == (14, 40)


def test_plot_eigenvalues_marks_the_degenerate_heads():
    rows = [
        {
            "layer": 0,
            "head": 0,
            "lambda_max": 2.0,
            "condition": 3.0,
            "degenerate": False,
        },
        {
            "layer": 0,
            "head": 1,
            "lambda_max": 1e-7,
            "condition": 2.0,
            "degenerate": True,
        },
        {
            "layer": 1,
            "head": 0,
            "lambda_max": 1.0,
            "condition": 1e9,
            "degenerate": True,
        },
    ]
    fig = gf.plot_eigenvalues(rows, code_condition_threshold=1e3)
    ax = fig.axes[0]
    sizes = [len(c.get_offsets()) for c in ax.collections]
    assert sizes == [2, 1, 2]  # layer 1, layer 2, the circled degenerate heads
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "layer 1",
        "layer 2",
        "degenerate (pruned)",
    ]
    assert len(ax.lines) == 3  # the two thresholds and the code's
    plt.close(fig)


def test_pruning_figure_keeps_model_colours_for_models():
    """Fig. 8 draws one model, the generalized one, in its book colour; the random order, the
    reference lines and the retrained models take colours outside the models' palette, the
    retrained ones sequential (lighter for fewer heads pruned)."""
    from matplotlib.colors import to_hex, to_rgb

    from attnconv.chapters.shared.plotting import MODEL_COLOURS

    palette = {to_hex(c) for c in MODEL_COLOURS.values()}
    assert gf.PRUNING_COLOURS["degenerate first"] == MODEL_COLOURS["generalized"]
    others = [gf.PRUNING_COLOURS[k] for k in ("random", "reference")]
    shades = gf.retrained_colours([6, 5, 9])
    assert list(shades) == [5, 6, 9]
    assert not {to_hex(c) for c in others + list(shades.values())} & palette
    lightness = [sum(to_rgb(shades[k])) for k in (5, 6, 9)]
    assert lightness == sorted(lightness, reverse=True)
    assert len(gf.retrained_colours([5])) == 1


def _plot_study(n_random: int):
    k = [0, 1, 2, 3]
    return {
        "selected": {"0": [1], "1": [0]},
        "curve": {
            "k": k,
            "degenerate_first": [0.5, 0.48, 0.45, 0.3],
            "random": [[0.5, 0.46 - 0.01 * i, 0.41, 0.2] for i in range(n_random)],
        },
        "retrained": [
            {
                "k": 2,
                "test_acc_before": 0.45,
                "test_acc": [0.46 + 0.001 * e for e in range(13)],
            }
        ],
        "retrain_epochs": 13,
        "base_epochs": 40,
    }


@pytest.mark.parametrize("n_random", [1, 3])
def test_pruning_figure_ticks_epochs_as_integers_and_names_the_draws(n_random):
    """Fig. 8.1: heads pruned and retraining epochs are ticked at whole numbers only, and the
    random order's legend entry says one draw, not "mean of 1"."""
    fig = gf.plot_pruning(_plot_study(n_random))
    fig.canvas.draw()
    for ax in fig.axes:  # heads pruned (left), retraining epochs (right)
        lo, hi = ax.get_xlim()
        ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
        assert len(ticks) >= 3 and all(float(t).is_integer() for t in ticks)
        labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
        assert labels and all("." not in s for s in labels)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    random_label = next(s for s in legend if s.startswith("random heads"))
    assert "mean of 1" not in random_label
    if n_random == 1:
        assert random_label.endswith("(one draw)")
    else:
        assert random_label.endswith(f"(mean of {n_random} draws)")
    plt.close(fig)


def test_binomial_band_is_the_plain_formula():
    """The band of Fig. 8.1's right panel: p ± 1.96 sqrt(p (1 − p) / n), written out by hand for
    a few accuracies (oracle: the arithmetic below, not the package's)."""
    low, high = gf.binomial_band([0.6, 0.5, 0.0, 1.0], 1017)
    # 0.6: sqrt(0.24 / 1017) = 0.015361...; 0.5: sqrt(0.25 / 1017) = 0.015679...
    assert low[0] == pytest.approx(0.6 - 1.96 * 0.0153617, abs=1e-6)
    assert high[0] == pytest.approx(0.6 + 1.96 * 0.0153617, abs=1e-6)
    assert high[1] - low[1] == pytest.approx(2 * 1.96 * 0.0156787, abs=1e-6)
    assert (low[2], high[2], low[3], high[3]) == (0.0, 0.0, 1.0, 1.0)
    assert gf.BAND_STANDARD_ERRORS == 1.96
    with pytest.raises(ValueError):
        gf.binomial_band([0.5], 0)


def test_pruning_figure_draws_one_band_around_the_first_retraining():
    """With the run's number of test images, the first retraining curve of the right panel (the
    fewest heads) has its ±1.96 SE band, the others none, and the legend names it with n;
    without n, no band."""
    study = _plot_study(1)
    more = dict(study["retrained"][0], k=3)
    study["retrained"].append(more)
    fig = gf.plot_pruning(study, test_size=1017)
    right = fig.axes[1]
    (band,) = right.collections
    top = band.get_paths()[0].vertices[:, 1].max()
    acc = [study["retrained"][0]["test_acc_before"]] + study["retrained"][0]["test_acc"]
    p = max(acc)
    assert top == pytest.approx(100 * (p + 1.96 * math.sqrt(p * (1 - p) / 1017)))
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "±1.96 SE (1,017 test images)" in legend
    plt.close(fig)
    fig = gf.plot_pruning(study)
    assert not fig.axes[1].collections
    assert not any("SE" in t.get_text() for t in fig.legends[0].get_texts())
    plt.close(fig)


def test_seed_pruning_rows_read_each_study_at_its_rule_count():
    """Fig. 8.1 over seeds: each row is the seed's unpruned accuracy, the accuracy with its
    rule's k heads pruned (the curve at k) and after retraining those k heads (the last test
    accuracy of the retraining at k, the epochs before it unkept: None)."""
    a = _plot_study(1)  # rule: 2 heads; retrained at 2 heads
    b = _plot_study(1)
    b["selected"] = {"0": [1]}  # rule: 1 head
    b["retrained"] = [
        {"k": 1, "test_acc_before": 0.48, "test_acc": [None] * 12 + [0.52]},
        {"k": 3, "test_acc_before": 0.3, "test_acc": [None] * 12 + [0.4]},
    ]
    rows = gf.seed_pruning_rows([a, b], [1000, 1001])
    assert rows == [
        {
            "seed": 1000,
            "k": 2,
            "unpruned": 0.5,
            "pruned": 0.45,
            "retrained": 0.46 + 0.012,
        },
        {"seed": 1001, "k": 1, "unpruned": 0.5, "pruned": 0.48, "retrained": 0.52},
    ]
    fig = gf.plot_seed_pruning([a, b], [1000, 1001])
    left, right = fig.axes
    # the left panel's mean curve: the change from unpruned, in points
    mean = [line for line in left.lines if line.get_label() == "most degenerate first"]
    assert list(mean[0].get_ydata()) == pytest.approx([0.0, -2.0, -5.0, -20.0])
    labels = [t.get_text() for t in right.get_yticklabels()]
    assert labels == ["1000: 2 heads", "1001: 1 head"]
    stars = [line for line in right.lines if line.get_marker() == "*"]
    assert [s.get_xdata()[0] for s in stars] == pytest.approx([-2.8, 2.0])
    plt.close(fig)
