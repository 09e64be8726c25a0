import copy
import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from conftest import synthetic_cifar

from attnconv.chapters.quadratic_training import format_table1, table1_rows
from attnconv.chapters.shared.attention_maps import (
    format_variation,
    layer_attention_maps,
    plot_layer_head_maps,
)
from attnconv.chapters.shared.gaussian_maps import (
    gaussian_head_maps,
    head_attention_maps,
)
from attnconv.chapters.shared.parameter_counts import (
    content_variant_module_parameters,
    content_variant_parameters,
    learned_model_parameters,
    paper_size_parameters,
)
from attnconv.chapters.shared.run_plots import (
    plot_accuracy_curves,
    plot_center_trajectories,
    plot_head_grid,
    plot_layer_contours,
    plot_trajectories_per_layer,
)
from attnconv.chapters.shared.saved_runs import (
    book_run_changes,
    run_caption,
    runs_list,
    shared_facts,
)
from attnconv.chapters.shared.trained_heads import (
    center_trajectories,
    format_head_summary,
    head_summary,
    head_table,
)
from attnconv.core.encodings import GeneralizedQuadraticEncoding, QuadraticEncoding
from attnconv.experiments.checkpoints import Run, load_run
from attnconv.experiments.data import normalize
from attnconv.experiments.models import (
    SelfAttentionConfig,
    build_model,
    parameter_count_table,
)
from attnconv.experiments.paper_numbers import PAPER_TABLE1
from attnconv.experiments.profiles import get_profile, make_config
from attnconv.experiments.registry import active_profile
from attnconv.experiments.store import (
    ATTENTION_MAPS_FILE,
    CHECKPOINT,
    MissingResultError,
    StaleResultError,
)
from attnconv.experiments.studies_maps import (
    attention_map_statistics,
    average_attention_maps,
    load_attention_maps,
    run_attention_maps,
    save_attention_maps,
)
from attnconv.experiments.train import train
from attnconv.experiments.train_config import TrainConfig

TINY = dict(
    hidden_size=8, intermediate_size=8, num_layers=2, num_heads=3, downsample=8
)  # 4×4 tokens


@pytest.fixture(scope="module")
def tiny_data():
    return synthetic_cifar(20, 7)


def tiny_images(n=5, seed=1):
    g = torch.Generator().manual_seed(seed)
    return normalize(
        torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=g)
    )


def tiny_run(tmp_path, tiny_data, model="learned", epochs=1, **overrides):
    cfg = TrainConfig(
        model=model,
        model_overrides={**TINY, **overrides},
        epochs=epochs,
        batch_size=10,
        eval_batch_size=7,
        data="sample",
        device="cpu",
        seed=3,
    )
    run_dir = tmp_path / model
    train(cfg, run_dir, progress=False, verbose=False, data=tiny_data)
    return load_run(run_dir)


# ----------------------------------------------------------------- the book's runs
def test_book_run_changes(monkeypatch):
    cpu = get_profile("cpu")
    assert book_run_changes("quadratic", "cpu") == {"epochs": 40}
    sixteen = book_run_changes("quadratic", "cpu", "16heads")
    assert sixteen["model_overrides"] == {
        **cpu.self_attention_overrides,
        "num_heads": 16,
    }
    cfg = make_config("quadratic", "cpu", **sixteen)
    assert cfg.model_config().num_heads == 16 and cfg.model_config().hidden_size == 64
    assert (
        book_run_changes("quadratic", "paper") == {}
    )  # other profiles train as defined
    assert book_run_changes("quadratic", "paper", "16heads") == {
        "model_overrides": {"num_heads": 16}
    }
    # the returned dicts are copies: changing them leaves the registry alone
    sixteen["epochs"] = 1
    assert book_run_changes("quadratic", "cpu", "16heads")["epochs"] == 40
    with pytest.raises(ValueError):
        book_run_changes("resnet18", "cpu", "16heads")
    with pytest.raises(ValueError):
        book_run_changes("quadratic", "cpu", "nosuchtag")
    monkeypatch.setenv("ATTNCONV_PROFILE", "paper")
    assert active_profile() == "paper"


# ----------------------------------------------------------------- Gaussian heads from a history
def fake_history(n_epochs=3, n_heads=2):
    def rec(t):
        c = torch.tensor([[t, -t], [0.5 * t, 1.0]])[:n_heads]
        return [
            {
                "centers": c.tolist(),
                "spreads": [1.0] * n_heads,
                "inverse_covariance": torch.eye(2).expand(n_heads, 2, 2).tolist(),
            },
            {
                "centers": (c + 10).tolist(),
                "spreads": [1.0] * n_heads,
                "inverse_covariance": torch.eye(2).expand(n_heads, 2, 2).tolist(),
            },
        ]

    return {
        "initial_attention": rec(0.0),
        "epochs": [
            {"epoch": e, "attention": rec(float(e)), "test_acc": 0.1 * e}
            for e in range(1, n_epochs + 1)
        ],
    }


def test_center_trajectories_reads_every_epoch():
    h = fake_history(3)
    t = center_trajectories(h, 0)
    assert t.shape == (4, 2, 2)
    for e in range(4):  # plain loop over the records
        assert np.allclose(t[e], [[e, -e], [0.5 * e, 1.0]])
    assert np.allclose(center_trajectories(h, -1), t + 10)
    with pytest.raises(ValueError):
        center_trajectories(h, 2)
    with pytest.raises(ValueError):
        center_trajectories({"initial_attention": [{"num_heads": 0}], "epochs": []}, 0)


@pytest.mark.parametrize("kind", ["quadratic", "generalized"])
def test_gaussian_head_maps_match_the_encodings(kind):
    torch.manual_seed(0)
    if kind == "quadratic":
        enc = QuadraticEncoding(
            4,
            centers=torch.randn(4, 2) * 2,
            parametrization="spread",
            spread=torch.rand(4) + 0.3,
        )
    else:
        enc = GeneralizedQuadraticEncoding(
            4, centers=torch.randn(4, 2) * 2, inv_sqrt_sigma=torch.randn(4, 2, 2)
        )
    model = build_model(SelfAttentionConfig(encoding=kind, **TINY))
    model.layers[0].attention.encoding = enc
    rec = model.attention_parameters()[0]  # what a history saves
    for query in [(0, 0), (2, 1), (3, 3)]:
        ours = gaussian_head_maps(
            {k: v.tolist() for k, v in rec.items()}, (4, 4), query
        )
        ref = head_attention_maps(enc, (4, 4), query).double()
        assert torch.allclose(ours, ref, atol=1e-6)
        ref_model = model.position_attention(query)[0].double()
        assert torch.allclose(ours, ref_model, atol=1e-6)
        assert torch.allclose(ours.sum((1, 2)), torch.ones(4, dtype=torch.float64))
    with pytest.raises(ValueError):
        gaussian_head_maps({"centers": [[0.0, 0.0]]}, (4, 4), (0, 0))
    with pytest.raises(ValueError):
        gaussian_head_maps(rec, (4, 4), (4, 0))


def test_gaussian_head_maps_closed_form_one_head():
    # one head at Δ = (1, 0) with Σ⁻¹ = diag(2, 0.5) on a 3×3 grid, query (1, 1): plain loops
    rec = {"centers": [[1.0, 0.0]], "inverse_covariance": [[[2.0, 0.0], [0.0, 0.5]]]}
    ours = gaussian_head_maps(rec, (3, 3), (1, 1))[0]
    w = torch.zeros(3, 3, dtype=torch.float64)
    for i in range(3):
        for j in range(3):
            d1, d2 = i - 1 - 1.0, j - 1 - 0.0
            w[i, j] = math.exp(-0.5 * (2.0 * d1 * d1 + 0.5 * d2 * d2))
    assert torch.allclose(ours, w / w.sum(), atol=1e-12)


def test_head_summary_known_answers():
    h = fake_history(3)
    rows = head_summary(h)
    assert [r["layer"] for r in rows] == [0, 1]
    r0 = rows[0]  # heads go from (0,0), (0,1) to (3,-3), (1.5,1)
    assert r0["mean_movement"] == pytest.approx((math.hypot(3, 3) + 1.5) / 2)
    assert r0["mean_offset"] == pytest.approx(
        (math.hypot(3, 3) + math.hypot(1.5, 1)) / 2
    )
    assert r0["mean_offset_init"] == pytest.approx(0.5)
    assert (r0["coverage_init"], r0["coverage_end"]) == (2, 0)
    assert (rows[1]["coverage_init"], rows[1]["coverage_end"]) == (0, 0)
    assert r0["spread_init"] == r0["spread_end"] == 1.0
    text = format_head_summary(rows)
    assert (
        "layer 1: 2 heads" in text
        and "2/9 → 0/9" in text
        and "from the query 0.50 → " in text
        and "median standard deviation 1.00 → 1.00" in text
    )
    assert r0["covered_end"] == [] and rows[0]["coverage_end"] == 0
    assert text.splitlines()[2] == "    median standard deviation 1.00 → 1.00 tokens"
    assert text.splitlines()[3] == "    3×3 lattice points covered 2/9 → 0/9: none"
    assert max(len(x) for x in text.splitlines()) <= 89
    h["epochs"][-1]["attention"][0]["centers"] = [[1.1, -0.1], [0.0, 0.2]]
    assert head_summary(h)[0]["covered_end"] == [(0, 0), (1, 0)]
    assert "covered 2/9 → 2/9: (0, 0) (+1, 0)" in format_head_summary(head_summary(h))


def test_head_table_has_each_heads_numbers_by_a_plain_loop():
    h = fake_history(3)
    h["model_config"] = {"image_size": 32, "downsample": 8}  # 4×4 tokens, query (2, 2)
    md = head_table(h).data.splitlines()
    assert md[0].startswith("| head | layer 1: Δ | s | dist. | max p |")
    assert md[0].count("layer 2: Δ") == 1 and len(md) == 2 + 2  # header, rule, 2 heads
    for layer, rec in enumerate(h["epochs"][-1]["attention"]):
        for head, (c, s) in enumerate(zip(rec["centers"], rec["spreads"])):
            # the nearest point of the 3×3 lattice, by a plain loop over its nine points
            dist = min(
                math.hypot(c[0] - i, c[1] - j) for i in (-1, 0, 1) for j in (-1, 0, 1)
            )
            # softmax over the 16 keys of -1/2 |δ - Δ|² (Σ⁻¹ = I in the fake history)
            scores = [
                -0.5 * ((di - c[0]) ** 2 + (dj - c[1]) ** 2)
                for di in range(-2, 2)
                for dj in range(-2, 2)
            ]
            top = max(scores)
            p_max = 1 / sum(math.exp(x - top) for x in scores)
            cells = [x.strip() for x in md[2 + head].strip("|").split("|")]
            assert cells[0] == str(head + 1)
            assert cells[1 + 4 * layer : 5 + 4 * layer] == [
                f"{c[0]:+.2f},\u00a0{c[1]:+.2f}",
                f"{abs(s):.2f}",
                f"{dist:.2f}",
                f"{p_max:.2f}",
            ]


def test_plots_draw_the_right_panels():
    h = fake_history(3)
    fig = plot_center_trajectories(h, 0)
    ax = fig.axes[0]
    assert len(ax.lines) == 3 * 2  # path, start, end per head
    assert np.allclose(ax.lines[0].get_xdata(), [0, -1, -2, -3]) and np.allclose(
        ax.lines[0].get_ydata(), [0, 1, 2, 3]
    )
    plt.close(fig)
    fig = plot_layer_contours(h, (6, 6))
    assert len([a for a in fig.axes if a.axison]) == 2
    ellipses = [p for p in fig.axes[0].patches if type(p).__name__ == "Ellipse"]
    assert len(ellipses) == 2 * 2  # 50 % and 90 % ellipse per head
    assert fig.axes[0].get_title() == "layer 1"
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[:2] == ["head 1", "head 2"]  # heads numbered from 1
    plt.close(fig)
    flat = fake_history(1)
    flat["epochs"][-1]["attention"][0]["inverse_covariance"] = [
        [[0.0, 0.0], [0.0, 0.0]],
        [[1.0, 0.0], [0.0, 1.0]],
    ]
    fig = plot_layer_contours(flat, (6, 6))  # head 1 is uniform: not drawn
    ellipses = [p for p in fig.axes[0].patches if type(p).__name__ == "Ellipse"]
    assert (
        len(ellipses) == 2
        and fig.axes[0].get_title() == "layer 1\n1 wide head not drawn"
    )
    plt.close(fig)
    fig = plot_layer_contours(
        flat, (6, 6), hide_uniform=False
    )  # a uniform head has no finite ellipse
    assert len([p for p in fig.axes[0].patches if type(p).__name__ == "Ellipse"]) == 2
    plt.close(fig)
    fig = plot_trajectories_per_layer(h)
    assert len(fig.axes) == 2 and [a.get_title() for a in fig.axes] == [
        "layer 1",
        "layer 2",
    ]
    assert fig.axes[0].get_xlim() == fig.axes[1].get_xlim()
    plt.close(fig)
    runs = {"a": Run(None, None, h), "b": Run(None, None, fake_history(5))}
    fig = plot_accuracy_curves(runs)
    assert [len(l.get_xdata()) for l in fig.axes[0].lines] == [3, 5]
    assert np.allclose(fig.axes[0].lines[1].get_ydata(), [10 * e for e in range(1, 6)])
    assert fig.axes[0].get_ylabel() == "test accuracy (%)"  # percent, not fractions
    plt.close(fig)
    maps = [torch.rand(3, 4, 4), None]
    fig = plot_layer_head_maps(maps, (2, 2))
    assert len(fig.axes) == 6 and sum(a.axison for a in fig.axes) == 3
    assert fig.axes[0].images[0].get_clim() == (0, max(float(maps[0][0].max()), 0.05))
    assert len(fig.axes[0].collections) == 0
    plt.close(fig)
    uniform = [torch.full((2, 8, 8), 1 / 64)]
    fig = plot_layer_head_maps(uniform, (4, 4), contours=True)
    assert fig.axes[0].images[0].get_clim() == (0, 0.05)  # a uniform head shows pale
    assert len(fig.axes[0].collections) == 2  # 50 % and 90 % outlines
    plt.close(fig)
    with pytest.raises(ValueError):
        plot_layer_head_maps([None], (0, 0))


# ----------------------------------------------------------------- Table 1
def test_paper_size_parameters_and_table(tmp_path, tiny_data):
    counted = {r["model"]: r["ours"] for r in parameter_count_table()}
    for name in ("quadratic", "learned", "resnet18"):
        assert paper_size_parameters(name) == counted[name]
    assert (
        paper_size_parameters("learned_content") > 2 * counted["learned"]
    )  # the q, k projections
    run = tiny_run(tmp_path, tiny_data, "quadratic", epochs=2)
    line = runs_list({"quadratic": run})
    acc = 100 * run.epochs[-1]["test_acc"]
    hidden = run.history["model_config"]["hidden_size"]
    assert line == (
        f"- **quadratic**: 2 layers × 3 heads, hidden {hidden}, 4×4 tokens; 2 epochs on the "
        f"synthetic data (20 training / 7 test images); "
        f"{run.history['num_parameters']:,} parameters; test accuracy {acc:.1f} %."
    )
    two = runs_list({"a": run, "b": run}).splitlines()  # what they share, said once
    assert two[0] == (
        "All 2 runs: 2 layers × 3 heads, hidden "
        f"{hidden}, 4×4 tokens; 2 epochs on the synthetic data (20 training / 7 test images)."
    )
    assert two[1:] == [
        "",
        f"- **a**: {run.history['num_parameters']:,} parameters; test accuracy {acc:.1f} %.",
        f"- **b**: {run.history['num_parameters']:,} parameters; test accuracy {acc:.1f} %.",
    ]
    # one sentence for runs that share their setting (ch. 9), and a clear error if not
    same = shared_facts({"a": run, "b": run})
    assert same == {
        "model": f"2 layers × 3 heads, hidden {hidden}, 4×4 tokens",
        "parameters": f"{run.history['num_parameters']:,}",
        "epochs": "2 epochs",
    }
    other = copy.deepcopy(run)
    other.history["num_parameters"] += 1
    with pytest.raises(ValueError, match="differ in parameters"):
        shared_facts({"a": run, "b": other})
    with pytest.raises(ValueError):
        shared_facts({})
    assert (
        run_caption(run)
        == "CUSTOM profile (2 layers, 3 heads, 4×4 tokens, synthetic data, 2 epochs)"
    )
    assert (
        run_caption(run, epochs=False)
        == "CUSTOM profile (2 layers, 3 heads, 4×4 tokens, synthetic data)"
    )
    rows = table1_rows({"quadratic": run})
    (row,) = rows
    assert row["epochs"] == 2 and row["test_acc"] == run.epochs[-1]["test_acc"]
    assert row["parameters"] == sum(
        p.numel() for p in build_model(run.config.model_config()).parameters()
    )
    assert row["paper_size_parameters"] == counted["quadratic"]
    assert row["gflops_paper_way"] == pytest.approx(6.2, abs=0.05)
    assert row["gflops_with_attention"] > row["gflops_paper_way"]
    assert row["paper_accuracy"] == PAPER_TABLE1["quadratic"]["accuracy"] == "93.8%"
    text = format_table1(rows, "cpu")
    assert (
        "SA quadratic emb." in text
        and "93.8 %" in text
        and "| 12.1 M | 6.2 B |" in text
        # our paper-size model set as the paper's table sets its numbers: M and B
        and f"| {counted['quadratic'] / 1e6:.2f} M | 6.2 B |" in text
    )
    for table in text.split("\n\n"):  # our runs, our paper-size models, the paper's
        lines = table.splitlines()
        assert len(lines) == 3 and all(
            line.startswith("| ") and line.endswith(" |") for line in lines
        )
        assert (
            len({line.count(" | ") for line in lines}) == 1
        )  # a well-formed Markdown table
    assert len(text.split("\n\n")) == 3
    # narrow enough for the column: four columns, short headers
    assert all(line.count("|") == 5 for line in text.splitlines() if line)
    assert "(ICLR only)" not in text  # the quadratic row is in v1 Fig. 5
    with pytest.raises(ValueError):
        table1_rows({"generalized_pruned": run})
    # several seeds: the mean and the range; a model not trained: dashes
    other = copy.deepcopy(run)
    other.epochs[-1]["test_acc"] = run.epochs[-1]["test_acc"] + 0.1
    seeds, absent = table1_rows({"quadratic": [run, other], "learned_content": None})
    acc = run.epochs[-1]["test_acc"]
    assert seeds["seeds"] == 2 and seeds["test_acc"] == pytest.approx(acc + 0.05)
    assert seeds["test_acc_range"] == (acc, acc + 0.1) and absent["seeds"] == 0
    first = format_table1([seeds, absent], "six layers").split("\n\n")[0]
    assert f"({100 * acc:.1f}–{100 * (acc + 0.1):.1f}, 2 seeds)" in first
    assert first.splitlines()[-1].endswith("| — | — | — |")


def test_paper_accuracy_table_is_v1_fig5_plus_the_iclr_row():
    # arXiv v1 Fig. 5: "ResNet18 0.938 11.2M 1.1B", "SA quadratic 0.938 12.1M 6.2B",
    # "SA learned 0.918 12.3M 6.2B"; ICLR Table 1 adds the content model at 0.871, 29.5M, 15B.
    expected = {
        "resnet18": ("93.8%", "11.2M", "1.1B"),
        "quadratic": ("93.8%", "12.1M", "6.2B"),
        "learned": ("91.8%", "12.3M", "6.2B"),
        "learned_content": ("87.1%", "29.5M", "15B"),
    }
    for name, (acc, params, flops) in expected.items():
        row = PAPER_TABLE1[name]
        assert (row["accuracy"], row["parameters"], row["flops"]) == (
            acc,
            params,
            flops,
        )
    assert PAPER_TABLE1["learned_content"]["source"] == "ICLR Table 1 only"
    assert {
        PAPER_TABLE1[m]["source"] for m in ("resnet18", "quadratic", "learned")
    } == {"v1 Fig. 5"}


def test_content_variant_counts_29_5m_and_ours_29_6m():
    terms = content_variant_parameters()
    assert (
        terms["total"] == sum(v for k, v in terms.items() if k != "total") == 29_484_282
    )
    assert (
        content_variant_module_parameters() == terms["total"]
    )  # the same count from modules
    assert paper_size_parameters("learned_content") == 29_601_882
    # our model minus the variant: 400 instead of 200 per axis, plus one 800-d key vector per head
    assert 29_601_882 - 29_484_282 == 6 * (2 * 31 * (400 - 200) + 9 * 800)
    # the backbone is the quadratic model without its 6 × 9 × 3 Gaussian parameters
    assert terms["backbone"] == paper_size_parameters("quadratic") - 6 * 9 * 3


def test_learned_model_readings():
    # the code's reading (400 per axis, one table per layer) is the model we build: 12,278,682
    assert (
        learned_model_parameters(400, shared=False)
        == paper_size_parameters("learned")
        == 12_278_682
    )
    assert (
        learned_model_parameters(200, shared=True) == 12_120_682
    )  # the text's reading: 12.1M
    assert learned_model_parameters(200, shared=False) == 12_182_682


# ----------------------------------------------------------------- attention maps from the weights
def test_position_only_maps_equal_position_attention():
    torch.manual_seed(0)
    model = build_model(SelfAttentionConfig(encoding="learned", **TINY)).train()
    maps = average_attention_maps(model, tiny_images(5), query=(1, 2), batch_size=2)
    ref = model.position_attention((1, 2))
    assert len(maps) == 2
    for m, r in zip(maps, ref):
        assert m.shape == (3, 4, 4) and torch.allclose(m, r.double(), atol=1e-6)
    assert model.training  # mode restored
    stats = attention_map_statistics(model, tiny_images(5), query=(1, 2))
    assert all(
        float(v.abs().max()) < 1e-6 for v in stats["variation"]
    )  # no image dependence


def content_oracle(model, images, query):
    """Per layer, mean over images of softmax_k(q·k/√D_h + log p_pos), with each layer's input
    captured by forward pre-hooks during a plain model(images) call."""
    inputs = {}
    hooks = [
        layer.register_forward_pre_hook(
            lambda m, a, i=i: inputs.__setitem__(i, a[0].detach())
        )
        for i, layer in enumerate(model.layers)
    ]
    model.eval()
    with torch.no_grad():
        model(images)
        pos = model.position_attention(query)
    for h in hooks:
        h.remove()
    g = model.config.tokens_per_side
    qi = query[0] * g + query[1]
    out = []
    for i, layer in enumerate(model.layers):
        att = layer.attention
        assert att.terms.content_content and att.terms.position_only
        assert not att.terms.key_bias and not att.terms.content_position
        x = inputs[i].double()  # (T, B, D)
        t, b, d = x.shape
        nh = att.num_heads
        with torch.no_grad():
            q = (x @ att.query.weight.double().T + att.query.bias.double()).view(
                t, b, nh, -1
            )
            k = (x @ att.key.weight.double().T + att.key.bias.double()).view(
                t, b, nh, -1
            )
        acc = torch.zeros(nh, t, dtype=torch.float64)
        for img in range(b):
            for h in range(nh):
                s = (
                    torch.stack(
                        [(q[qi, img, h] * k[kk, img, h]).sum() for kk in range(t)]
                    )
                    * att.scale
                )
                s = s + pos[i][h].reshape(-1).double().log()
                acc[h] += torch.softmax(s, 0)
        out.append((acc / b).view(nh, g, g))
    return out


def test_content_maps_match_a_loop_oracle():
    torch.manual_seed(1)
    model = build_model(SelfAttentionConfig(encoding="learned", content=True, **TINY))
    with torch.no_grad():  # make the content term matter
        for layer in model.layers:
            layer.attention.query.weight.mul_(30)
    images = tiny_images(4, seed=2)
    maps = average_attention_maps(model, images, query=(2, 1), batch_size=3)
    ref = content_oracle(model, images, (2, 1))
    for m, r in zip(maps, ref):
        assert torch.allclose(m, r, atol=1e-5)
        assert torch.allclose(
            m.sum((1, 2)), torch.ones(3, dtype=torch.float64), atol=1e-6
        )
    # variation: mean total-variation distance of each image's map to the mean, by plain loops
    stats = attention_map_statistics(model, images, query=(2, 1), batch_size=3)
    for layer in range(2):
        per_image = [
            content_oracle(model, images[b : b + 1], (2, 1))[layer]
            for b in range(len(images))
        ]
        mean = sum(per_image) / len(per_image)
        tv = torch.stack([0.5 * (p - mean).abs().sum((1, 2)) for p in per_image]).mean(
            0
        )
        assert torch.allclose(stats["variation"][layer], tv, atol=1e-5)
        assert float(tv.max()) > 1e-2 and float(tv.max()) <= 1
    # the content term makes the maps differ from the position-only ones
    pos = model.position_attention((2, 1))
    assert max(float((m - p.double()).abs().max()) for m, p in zip(maps, pos)) > 1e-2
    with pytest.raises(ValueError):
        average_attention_maps(model, images, query=(4, 0))
    with pytest.raises(ValueError):
        average_attention_maps(model, images[:0])


def test_save_load_and_run_attention_maps(tmp_path, tiny_data):
    run = tiny_run(tmp_path, tiny_data, "learned_content")
    assert load_attention_maps(run.run_dir) is None
    with pytest.raises(MissingResultError, match="python -m attnconv.regenerate"):
        run_attention_maps(run, num_images=5)  # reading never computes
    assert not (run.run_dir / ATTENTION_MAPS_FILE).exists()
    save_attention_maps(
        load_run(run.run_dir, load_model=True), num_images=5, data=tiny_data
    )
    got = run_attention_maps(run, num_images=5)
    path = run.run_dir / ATTENTION_MAPS_FILE
    assert (
        path.is_file()
        and got["num_images"] == 5
        and got["content"]
        and got["query"] == [2, 2]
    )
    model = load_run(run.run_dir, load_model=True).model
    ref = average_attention_maps(model, normalize(tiny_data.x_test[:5]))
    for m, r in zip(got["layers"], ref):
        assert torch.allclose(m, r, rtol=1e-5, atol=1e-7)
    ref_var = attention_map_statistics(model, normalize(tiny_data.x_test[:5]))[
        "variation"
    ]
    for v, r in zip(got["variation"], ref_var):
        assert v.shape == (3,) and torch.allclose(v, r, rtol=1e-5, atol=1e-7)
    # without the checkpoint the saved file is used; maps of another image count are stale
    (run.run_dir / CHECKPOINT).unlink()
    again = run_attention_maps(run, num_images=5)
    assert all(torch.equal(a, b) for a, b in zip(again["layers"], got["layers"]))
    saved = path.read_bytes()
    with pytest.raises(StaleResultError, match="python -m attnconv.regenerate"):
        run_attention_maps(run, num_images=6)
    assert path.read_bytes() == saved
    assert layer_attention_maps(run, num_images=5) is not None
    with pytest.raises(ValueError):
        layer_attention_maps(run, query=(0, 0), num_images=5)
    with pytest.raises(ValueError):
        save_attention_maps(run)  # no model


def test_layer_attention_maps_of_gaussian_runs(tmp_path, tiny_data):
    run = tiny_run(tmp_path, tiny_data, "quadratic")
    model = load_run(run.run_dir, load_model=True).model
    for query in [(2, 2), (0, 3)]:
        maps = layer_attention_maps(run, query)
        for m, r in zip(maps, model.position_attention(query)):
            assert torch.allclose(m, r.double(), atol=1e-5)
    assert not (
        run.run_dir / ATTENTION_MAPS_FILE
    ).exists()  # Gaussian maps need no artifact


def test_format_variation():
    text = format_variation(
        "m", [torch.tensor([0.0, 0.3, 0.051]), None, torch.tensor([0.01])]
    )
    assert (
        text
        == "m, layer 1: above 0.05 in 2 of 3 heads; per head: 0.00, 0.30, 0.05\nm, layer 3: above 0.05 in 0 of 1 heads; per head: 0.01"
    )


def test_layer_contours_max_extent_and_degenerate_heads():
    """``max_extent`` leaves out heads whose 50 % ellipse is wider than it; heads named as
    degenerate are drawn black and dotted, clipped to a finite size, with a legend entry."""
    h = fake_history(1)
    h["epochs"][-1]["attention"][0]["inverse_covariance"] = [
        [[0.25, 0.0], [0.0, 0.25]],  # 50 % ellipse 2·sqrt(2 ln 2)/0.5 ≈ 4.7 wide
        [[1e-9, 0.0], [0.0, 4.0]],  # a line along the columns: nearly singular
    ]
    fig = plot_layer_contours(h, (6, 6), max_extent=4.0)
    ellipses = [p for p in fig.axes[0].patches if type(p).__name__ == "Ellipse"]
    assert fig.axes[0].get_title() == "layer 1\n2 wide heads not drawn"
    assert ellipses == []
    plt.close(fig)
    fig = plot_layer_contours(h, (6, 6), degenerate={0: [1]})
    ellipses = [p for p in fig.axes[0].patches if type(p).__name__ == "Ellipse"]
    dotted = [e for e in ellipses if e.get_linestyle() == "dotted"]
    assert len(ellipses) == 4 and len(dotted) == 2  # head 1 normal, head 2 degenerate
    assert all(max(e.width, e.height) == 4.0 * 6 for e in dotted)  # clipped
    assert all(e.get_edgecolor()[:3] == (0.0, 0.0, 0.0) for e in dotted)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[-1] == "degenerate"
    plt.close(fig)


def test_layer_contours_split_many_heads_over_panels():
    """With heads_per_panel, each layer spans several panels, every head drawn once, in the
    colour it has when all heads share one panel."""
    h = fake_history(2)
    whole = plot_layer_contours(h, (6, 6))
    split = plot_layer_contours(h, (6, 6), heads_per_panel=1, ncols=2)
    drawn = [a for a in split.axes if a.axison]
    assert [a.get_title() for a in drawn] == [
        "layer 1, heads 1–1",
        "layer 1, heads 2–2",
        "layer 2, heads 1–1",
        "layer 2, heads 2–2",
    ]

    def ellipses(ax):
        return [p for p in ax.patches if type(p).__name__ == "Ellipse"]

    assert all(len(ellipses(a)) == 2 for a in drawn)  # one head each: 50 % and 90 %
    together = [e.get_edgecolor() for e in ellipses(whole.axes[0])]
    apart = [e.get_edgecolor() for a in drawn[:2] for e in ellipses(a)]
    assert together == apart  # each head keeps its colour
    plt.close(whole), plt.close(split)


def grid_history(n_layers, n_heads):
    """A saved history whose layer l has ``n_heads`` heads, head k centred at (l, k - 4) with an
    identity covariance, except head 0 of layer 0, which is nearly uniform."""
    layers = []
    for l in range(n_layers):
        inverse = [[[1.0, 0.0], [0.0, 1.0]] for _ in range(n_heads)]
        if l == 0:
            inverse[0] = [[1e-6, 0.0], [0.0, 1e-6]]
        centers = [[float(l), float(k - 4)] for k in range(n_heads)]
        layers.append({"centers": centers, "inverse_covariance": inverse})
    return {"initial_attention": layers, "epochs": [{"epoch": 1, "attention": layers}]}


def test_head_grid_draws_one_panel_per_head():
    from matplotlib.colors import to_hex

    from attnconv.chapters.shared.plotting import model_colour

    def panels(fig):
        return [a for a in fig.axes if a.axison]

    fig = plot_head_grid(grid_history(2, 9), (8, 8), "quadratic")
    drawn = panels(fig)
    assert len(drawn) == 2 * 9  # layers × heads
    assert [a.get_title() for a in drawn[:9]] == [f"head {k}" for k in range(1, 10)]
    assert [a.get_ylabel() for a in drawn[::9]] == ["layer 1", "layer 2"]
    assert len({a.get_xlim() for a in drawn}) == 1  # shared limits
    assert len({a.get_ylim() for a in drawn}) == 1
    ellipses = [p for p in drawn[1].patches if type(p).__name__ == "Ellipse"]
    assert len(ellipses) == 2 and to_hex(ellipses[0].get_edgecolor()) == model_colour(
        "quadratic"
    )
    assert [t.get_text() for t in drawn[0].texts] == ["wide"]  # the uniform head
    assert all(not a.texts for a in drawn[1:])
    # the key in the figure names every mark drawn, "wide" too
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [
        "50 % of its attention",
        "90 % of its attention",
        "head centre",
        "query token",
        "wide: wider than the grid",
    ]
    plt.close(fig)
    one = plot_head_grid(grid_history(2, 9), (8, 8), "quadratic", layers=[1])
    assert len(panels(one)) == 9 and one.axes[0].get_gridspec().get_geometry() == (3, 3)
    plt.close(one)
    sixteen = plot_head_grid(grid_history(1, 16), (8, 8), "quadratic, 16 heads")
    assert len(panels(sixteen)) == 16
    assert sixteen.axes[0].get_gridspec().get_geometry() == (4, 4)
    plt.close(sixteen)
    wrapped = plot_head_grid(grid_history(2, 16), (8, 8), "quadratic", heads_per_row=8)
    assert len(panels(wrapped)) == 32
    # a block (subfigure) of two rows of eight per layer, named once, a rule between blocks
    blocks = wrapped.subfigs[::2]
    assert [b.axes[0].get_gridspec().get_geometry() for b in blocks] == [(2, 8)] * 2
    assert [b._supylabel.get_text() for b in blocks] == ["layer 1", "layer 2"]
    assert [a.get_title() for a in panels(wrapped)[:16]] == [
        f"head {k}" for k in range(1, 17)
    ]
    assert all(not a.get_ylabel() for a in panels(wrapped))
    assert len(wrapped.subfigs[1].artists) == 1  # the rule between the two layers
    narrow = plot_head_grid(
        grid_history(6, 16), (16, 16), "quadratic", heads_per_row=8, width=7.2
    )
    assert narrow.get_size_inches()[0] <= 7.2 + 1e-9
    plt.close(wrapped), plt.close(narrow)
    with pytest.raises(ValueError):
        plot_head_grid(grid_history(2, 9), (8, 8), "quadratic", layers=[2])


def test_head_grid_frames_the_marked_heads():
    from matplotlib.colors import to_hex

    fig = plot_head_grid(
        grid_history(2, 9), (8, 8), "generalized", marked={0: [2], 1: [0, 8]}
    )
    drawn = [a for a in fig.axes if a.axison]
    framed = [
        k
        for k, a in enumerate(drawn)
        if {to_hex(s.get_edgecolor()) for s in a.spines.values()} == {"#000000"}
        and all(s.get_linewidth() > 2 for s in a.spines.values())
    ]
    assert framed == [2, 9, 17]  # layer 1 head 3; layer 2 heads 1 and 9
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[-1] == "degenerate" and len(labels) == 6  # after "wide" (layer 1)
    plt.close(fig)
    plain = plot_head_grid(grid_history(2, 9), (8, 8), "generalized", marked={})
    assert len(plain.legends[0].get_texts()) == 5
    plt.close(plain)


def test_head_grid_markers_are_at_least_six_px_on_the_page():
    """Fig. 7.1: the query token's square and each head's centre cross are markers of a fixed
    size, at least 6 px at the book's 108 px per inch, whatever the grid (one token of a 16×16
    grid in a panel about 70 px wide was a 4 px square)."""
    import matplotlib.pyplot as plt

    from attnconv.chapters.shared.plotting import FIGURE_DPI

    fig = plot_head_grid(grid_history(2, 9), (16, 16), "quadratic")
    sizes = {
        line.get_marker(): line.get_markersize() * FIGURE_DPI / 72
        for ax in fig.axes
        for line in ax.lines
        if line.get_marker() in ("s", "x")
    }
    assert set(sizes) == {"s", "x"} and min(sizes.values()) >= 6
    plt.close(fig)


def test_head_grid_puts_a_disc_on_the_key_of_each_head_on_one_key():
    """Fig. 7.1's disc: drawn on the key holding more than ``one_key`` of a head's attention,
    that key and that share checked against a plain loop over the keys (eq. 16)."""
    inverse = [[[8.0, 0.0], [0.0, 8.0]]] * 3
    centers = [[1.0, -2.0], [0.0, 0.5], [0.0, 0.0]]  # sharp; between two keys; sharp
    inverse = inverse[:2] + [[[0.5, 0.0], [0.0, 0.5]]]  # the third one broad
    layer = {"centers": centers, "inverse_covariance": inverse}
    history = {
        "initial_attention": [layer],
        "epochs": [{"epoch": 1, "attention": [layer]}],
    }
    query = (4, 4)

    def loop_peak(c, p):
        w = {
            (i, j): math.exp(
                -0.5
                * p[0][0]
                * ((i - query[0] - c[0]) ** 2 + (j - query[1] - c[1]) ** 2)
            )
            for i in range(8)
            for j in range(8)
        }
        key = max(w, key=w.get)
        return key, w[key] / sum(w.values())

    want = [loop_peak(c, p) for c, p in zip(centers, inverse)]
    assert want[0][1] > 0.9 and want[1][1] < 0.5 and want[2][1] < 0.5
    fig = plot_head_grid(history, (8, 8), "quadratic", one_key=0.5)
    discs = [
        [
            (ln.get_ydata()[0], ln.get_xdata()[0])
            for ln in a.get_lines()
            if ln.get_marker() == "o"
        ]
        for a in fig.axes
        if a.axison
    ]
    assert discs == [[want[0][0]], [], []]  # only the sharp head on an integer shift
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[-1] == "on one key (> 50 %)"
    plt.close(fig)
    plain = plot_head_grid(history, (8, 8), "quadratic")
    assert not any(ln.get_marker() == "o" for a in plain.axes for ln in a.get_lines())
    plt.close(plain)


def test_head_grid_close_up_shows_the_window_around_the_query_and_shades_one_key():
    """Fig. 7.2: with ``window`` every panel spans the (2w + 1)² tokens around the query, with a
    line between two tokens, and a head on one key has that token shaded (not a disc)."""
    from matplotlib.patches import Rectangle

    layer = {
        "centers": [[1.0, -2.0], [0.0, 0.5]],
        "inverse_covariance": [[[8.0, 0.0], [0.0, 8.0]]] * 2,
    }
    history = {
        "initial_attention": [layer],
        "epochs": [{"epoch": 1, "attention": [layer]}],
    }
    fig = plot_head_grid(history, (16, 16), "quadratic", one_key=0.5, window=3)
    drawn = [a for a in fig.axes if a.axison]
    for ax in drawn:
        assert ax.get_xlim() == (8 - 3.5, 8 + 3.5) and ax.get_ylim() == (
            8 + 3.5,
            8 - 3.5,
        )
        assert len([ln for ln in ax.get_lines() if ln.get_color() == "0.88"]) == 2 * 8
    shaded = [
        [(p.get_x() + 0.5, p.get_y() + 0.5) for p in a.patches if type(p) is Rectangle]
        for a in drawn
    ]
    assert shaded == [[(8 - 2, 8 + 1)], []]  # (column, row) of the key at δ = (1, −2)
    assert not any(ln.get_marker() == "o" for a in drawn for ln in a.get_lines())
    plt.close(fig)
