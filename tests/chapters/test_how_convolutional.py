import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch

from attnconv.chapters.how_convolutional import (
    format_locality,
    format_measures,
    format_peaks,
    layer_measures,
    locality_summary,
    measures_rows,
    plot_measures,
    reference_list,
    reference_measures,
    run_measures,
)
from attnconv.chapters.shared.gaussian_maps import head_attention_maps
from attnconv.chapters.shared.saved_runs import load_saved_runs
from attnconv.chapters.shared.tables import fit_column
from attnconv.core.encodings import QuadraticEncoding
from attnconv.core.lattice import (
    covered_lattice_points,
    lattice_coverage,
    lattice_distance,
    neighbourhood_mass,
    peak_shifts,
)
from attnconv.experiments.checkpoints import Run
from attnconv.experiments.models import (
    SelfAttentionConfig,
    build_model,
    model_config_to_dict,
)

LATTICE3 = [(i, j) for i in (-1, 0, 1) for j in (-1, 0, 1)]


def loop_distance(c, k):
    r = k // 2
    return min(
        math.hypot(c[0] - i, c[1] - j)
        for i in range(-r, r + 1)
        for j in range(-r, r + 1)
    )


# ----------------------------------------------------------------- distance to the lattice
def test_distance_known_answers():
    centers = [(0.0, 0.0), (1.0, -1.0), (2.5, 0.0), (0.5, 0.5), (-3.0, -4.0)]
    d = lattice_distance(centers)
    assert torch.allclose(
        d,
        torch.tensor(
            [0.0, 0.0, 1.5, math.sqrt(0.5), math.hypot(2, 3)], dtype=torch.float64
        ),
    )
    # a 5×5 lattice reaches further
    assert float(lattice_distance([(2.5, 0.0)], kernel_size=5)[0]) == pytest.approx(0.5)
    assert float(lattice_distance([(0.3, 0.4)], kernel_size=1)[0]) == pytest.approx(0.5)


def test_distance_matches_loops():
    g = torch.Generator().manual_seed(0)
    c = torch.randn(50, 2, generator=g, dtype=torch.float64) * 3
    for k in (1, 3, 5):
        ours = lattice_distance(c, k)
        ref = torch.tensor(
            [loop_distance(x.tolist(), k) for x in c], dtype=torch.float64
        )
        assert torch.allclose(ours, ref, atol=1e-12)


def test_distance_errors():
    with pytest.raises(ValueError):
        lattice_distance([(0.0, 0.0)], kernel_size=2)
    with pytest.raises(ValueError):
        lattice_distance([0.0, 1.0])
    with pytest.raises(ValueError):
        lattice_distance(torch.zeros(0, 2))
    with pytest.raises(ValueError):
        lattice_distance([(float("nan"), 0.0)])


# ----------------------------------------------------------------- coverage
def loop_coverage(centers, k, radius):
    r = k // 2
    return sum(
        any(math.hypot(c[0] - i, c[1] - j) < radius for c in centers)
        for i in range(-r, r + 1)
        for j in range(-r, r + 1)
    )


def test_coverage_known_answers():
    assert lattice_coverage(LATTICE3) == 9  # Lemma 1's heads
    assert lattice_coverage([(0.1, -0.1)] * 9) == 1  # every head on one point
    assert lattice_coverage([(0.0, 0.0), (5.0, 5.0)]) == 1
    assert lattice_coverage([(0.5, 0.0)]) == 0  # radius is strict
    assert lattice_coverage([(0.5, 0.0)], radius=0.51) == 2  # (0,0) and (1,0)
    shifted = [(i + 0.3, j) for i, j in LATTICE3]
    assert lattice_coverage(shifted) == 9 and lattice_coverage(shifted, radius=0.3) == 0
    assert lattice_coverage(LATTICE3, kernel_size=5) == 9  # of 25


def test_coverage_matches_loops():
    g = torch.Generator().manual_seed(1)
    for _ in range(20):
        c = (torch.rand(9, 2, generator=g, dtype=torch.float64) * 4 - 2).tolist()
        for radius in (0.3, 0.5, 0.8):
            assert lattice_coverage(c, 3, radius) == loop_coverage(c, 3, radius)
    with pytest.raises(ValueError):
        lattice_coverage(LATTICE3, radius=0.0)
    assert covered_lattice_points(LATTICE3) == LATTICE3  # row-major, like kernel_shifts
    assert covered_lattice_points([(0.9, 0.1), (-1.2, -0.9), (3.0, 0.0)]) == [
        (-1, -1),
        (1, 0),
    ]
    for _ in range(10):
        c = (torch.rand(5, 2, generator=g, dtype=torch.float64) * 4 - 2).tolist()
        pts = covered_lattice_points(c)
        assert len(pts) == lattice_coverage(c)
        assert pts == [
            (i, j)
            for i, j in LATTICE3
            if any(math.hypot(x - i, y - j) < 0.5 for x, y in c)
        ]
    with pytest.raises(ValueError):
        covered_lattice_points(LATTICE3, radius=-1)


# ----------------------------------------------------------------- mass in the window
def test_mass_one_hot_and_uniform():
    maps = torch.zeros(3, 6, 6, dtype=torch.float64)
    maps[0, 3, 3] = 1  # on the query
    maps[1, 2, 4] = 1  # shift (-1, +1): inside
    maps[2, 5, 3] = 1  # shift (+2, 0): outside
    assert neighbourhood_mass(maps, (3, 3)).tolist() == [1.0, 1.0, 0.0]
    assert neighbourhood_mass(maps, (3, 3), kernel_size=5).tolist() == [1.0, 1.0, 1.0]
    uniform = torch.full((1, 6, 6), 1 / 36, dtype=torch.float64)
    assert float(neighbourhood_mass(uniform, (3, 3))[0]) == pytest.approx(9 / 36)
    assert float(neighbourhood_mass(uniform, (0, 0))[0]) == pytest.approx(
        4 / 36
    )  # cut at the corner
    assert float(neighbourhood_mass(uniform, (5, 2))[0]) == pytest.approx(
        6 / 36
    )  # cut at the border


def test_mass_matches_loops():
    g = torch.Generator().manual_seed(2)
    maps = torch.softmax(
        torch.randn(4, 7, 5, generator=g, dtype=torch.float64).view(4, -1), -1
    ).view(4, 7, 5)
    for query in [(0, 0), (3, 2), (6, 4), (1, 4)]:
        for k in (1, 3, 5):
            r = k // 2
            ref = torch.zeros(4, dtype=torch.float64)
            for h in range(4):
                for i in range(7):
                    for j in range(5):
                        if abs(i - query[0]) <= r and abs(j - query[1]) <= r:
                            ref[h] += maps[h, i, j]
            assert torch.allclose(neighbourhood_mass(maps, query, k), ref, atol=1e-12)


def test_mass_errors():
    with pytest.raises(ValueError):
        neighbourhood_mass(torch.zeros(4, 4), (0, 0))
    with pytest.raises(ValueError):
        neighbourhood_mass(torch.zeros(1, 4, 4), (4, 0))
    with pytest.raises(ValueError):
        neighbourhood_mass(torch.zeros(1, 4, 4), (0, 0), kernel_size=4)


# ----------------------------------------------------------------- a layer, a run
def test_layer_measures_of_a_near_one_hot_convolution_layer():
    # Theorem 1's layer: 9 quadratic heads on the lattice with a large alpha
    enc = QuadraticEncoding(
        9, centers=torch.tensor(LATTICE3, dtype=torch.float64), alpha=50.0
    ).double()
    maps = head_attention_maps(enc, (8, 8), (4, 4))
    m = layer_measures(enc.centers.detach(), maps, (4, 4))
    assert m["num_heads"] == 9 and m["coverage"] == 9 and m["mean_distance"] == 0.0
    assert m["mean_mass"] > 1 - 1e-9
    # a wide head at the query puts most of its mass outside the window
    wide = QuadraticEncoding(
        1, centers=torch.zeros(1, 2, dtype=torch.float64), alpha=0.01
    ).double()
    w = layer_measures(
        wide.centers.detach(), head_attention_maps(wide, (8, 8), (4, 4)), (4, 4)
    )
    assert w["coverage"] == 1 and w["mean_mass"] < 0.2
    assert "masses" not in layer_measures(LATTICE3)
    with pytest.raises(ValueError):
        layer_measures(LATTICE3, maps)  # no query
    with pytest.raises(ValueError):
        layer_measures(LATTICE3[:3], maps, (4, 4))  # 9 maps for 3 centres


def fake_run(model):
    recs = [{k: v.tolist() for k, v in r.items()} for r in model.attention_parameters()]
    return Run(
        None,
        None,
        {
            "model_config": model_config_to_dict(model.config),
            "initial_attention": recs,
            "epochs": [{"attention": recs, "test_acc": 0.5}],
        },
    )


def test_run_measures_against_direct_computation():
    torch.manual_seed(0)
    model = build_model(
        SelfAttentionConfig(
            encoding="quadratic",
            hidden_size=8,
            intermediate_size=8,
            num_layers=2,
            num_heads=9,
            downsample=4,
        )
    )
    with torch.no_grad():
        model.layers[1].attention.encoding.centers.copy_(
            torch.tensor(LATTICE3, dtype=torch.float32) + 0.1
        )
        model.layers[1].attention.encoding.spread.fill_(5.0)
    run = fake_run(model)
    measures = run_measures(run)
    for layer, m in enumerate(measures):
        enc = model.layers[layer].attention.encoding
        c = enc.centers.detach().double()
        assert m["coverage"] == sum(
            any(math.hypot(x - i, y - j) < 0.5 for x, y in c.tolist())
            for i, j in LATTICE3
        )
        assert m["mean_distance"] == pytest.approx(
            sum(loop_distance(x, 3) for x in c.tolist()) / 9, abs=1e-6
        )
        ref_mass = neighbourhood_mass(model.position_attention((4, 4))[layer], (4, 4))
        assert m["mean_mass"] == pytest.approx(float(ref_mass.mean()), abs=1e-5)
    assert measures[1]["coverage"] == 9 and measures[1]["mean_mass"] > 0.99
    rows = measures_rows({"tiny": run})
    assert [(r["model"], r["layer"]) for r in rows] == [("tiny", 0), ("tiny", 1)]
    assert rows[1]["coverage"] == 9
    text = format_measures(rows)
    assert "9 / 9" in text and "tiny" in text
    fig = plot_measures(rows)
    assert len(fig.axes) == 3 and list(fig.axes[1].lines[0].get_ydata()) == [
        r["coverage"] for r in rows
    ]
    assert fig.axes[1].get_ylim() == (0, 9.5) and fig.axes[2].get_ylim() == (0, 1.05)
    plt.close(fig)
    resnet = Run(None, None, {"model_config": {"kind": "resnet"}, "epochs": []})
    with pytest.raises(ValueError):
        run_measures(resnet)


# ----------------------------------------------------------------- peaks and locality per layer
def test_peak_shifts_and_locality():
    maps = torch.full((3, 5, 5), 0.01, dtype=torch.float64)
    maps[0, 2, 2] = 0.9  # on the query (2, 2)
    maps[1, 0, 4] = 0.5  # shift (-2, +2)
    maps[2, 3, 1] = 0.3  # shift (+1, -1)
    assert peak_shifts(maps, (2, 2)).tolist() == [[0, 0], [-2, 2], [1, -1]]
    assert peak_shifts(maps, (0, 0)).tolist() == [[2, 2], [0, 4], [3, 1]]
    g = torch.Generator().manual_seed(3)
    rnd = torch.rand(4, 6, 7, generator=g, dtype=torch.float64)
    for h in range(4):  # plain loop oracle
        best = max(
            ((i, j) for i in range(6) for j in range(7)),
            key=lambda ij: rnd[h, ij[0], ij[1]],
        )
        assert peak_shifts(rnd, (1, 5))[h].tolist() == [best[0] - 1, best[1] - 5]
    mass = neighbourhood_mass(maps, (2, 2))
    (s, none) = locality_summary([maps, None], (2, 2))
    assert (
        none is None
        and s["num_heads"] == 3
        and s["peak_inside"] == 2
        and s["peaked"] == 1
    )
    assert s["mass_above"] == int((mass > 0.5).sum()) == 1
    assert s["mean_mass"] == pytest.approx(float(mass.mean()))
    text = format_locality("toy", [s, None])
    assert text == fit_column(
        "toy, layer 1 (3 heads): 1 give > 50% to a single key; 1 put > 50% in the 3×3 window; "
        "2 have their most probable key in it"
    )
    assert max(len(x) for x in text.splitlines()) <= 89
    peaks = format_peaks("toy", [None, maps], (2, 2))
    assert (
        max(len(x) for x in peaks.splitlines()) <= 89
    )  # fits the book's column, items never split
    assert " ".join(x.strip() for x in peaks.splitlines()) == (
        "toy, layer 2, head: (peak shift) probability — 1: (+0,+0) 0.90, 2: (-2,+2) 0.50, 3: (+1,-1) 0.30"
    )
    with pytest.raises(ValueError):
        peak_shifts(torch.zeros(5, 5), (0, 0))
    with pytest.raises(ValueError):
        peak_shifts(maps, (5, 0))
    with pytest.raises(ValueError):
        locality_summary([maps], (2, 2), threshold=1.5)


def test_run_measures_at_initialisation_and_references():
    torch.manual_seed(0)
    model = build_model(
        SelfAttentionConfig(
            encoding="quadratic",
            hidden_size=8,
            intermediate_size=8,
            num_layers=1,
            num_heads=9,
            downsample=4,
        )
    )
    init = [{k: v.tolist() for k, v in r.items()} for r in model.attention_parameters()]
    with torch.no_grad():
        model.layers[0].attention.encoding.centers.copy_(
            torch.tensor(LATTICE3, dtype=torch.float32)
        )
        model.layers[0].attention.encoding.spread.fill_(6.0)
    end = [{k: v.tolist() for k, v in r.items()} for r in model.attention_parameters()]
    run = Run(
        None,
        None,
        {
            "model_config": model_config_to_dict(model.config),
            "initial_attention": init,
            "epochs": [{"attention": end}],
        },
    )
    (m0,) = run_measures(run, epoch=0)
    (m1,) = run_measures(run)
    c0 = torch.tensor(init[0]["centers"], dtype=torch.float64)
    assert m0["coverage"] == lattice_coverage(c0) and m0[
        "mean_distance"
    ] == pytest.approx(float(lattice_distance(c0).mean()))
    assert (m1["coverage"], m1["mean_distance"]) == (9, 0.0) and m1["mean_mass"] > 0.999
    assert [r["coverage"] for r in measures_rows({"x": run}, epoch=0)] == [
        m0["coverage"]
    ]
    ref = reference_measures((8, 8))
    assert (ref["theorem1"]["coverage"], ref["theorem1"]["mean_distance"]) == (9, 0.0)
    assert ref["theorem1"]["mean_mass"] > 0.999
    assert ref["uniform"]["mean_mass"] == pytest.approx(9 / 64)
    assert (
        reference_measures((8, 8), alpha=0.5)["theorem1"]["mean_mass"]
        < ref["theorem1"]["mean_mass"]
    )
    # in words for the page: one item per layer, its three numbers
    words = reference_list(ref).splitlines()
    assert words == [
        "- **Theorem 1's layer**: mean distance to the lattice 0.00 tokens, 9 of 9 lattice "
        "points covered, 1.00 of the attention in the 3×3 window.",
        "- **The uniform layer**: mean distance to the lattice 0.00 tokens, 1 of 9 lattice "
        "points covered, 0.14 of the attention in the 3×3 window.",
    ]


def test_load_saved_runs(tmp_path, monkeypatch):
    import json

    from attnconv.experiments.registry import run_entry

    monkeypatch.setenv("ATTNCONV_BOOK_DIR", str(tmp_path))
    for name, status in (
        ("quadratic", "complete"),
        ("learned", "running"),
        ("generalized", "complete"),
    ):
        cfg = run_entry(f"cpu/{name}").config.to_dict()
        if name == "generalized":
            cfg["epochs"] = 3  # a run of other settings than the registry's
        folder = tmp_path / "runs" / "cpu" / name
        folder.mkdir(parents=True)
        (folder / "history.json").write_text(
            json.dumps({"config": cfg, "status": status, "epochs": []})
        )
    before = sorted(p.stat().st_mtime_ns for p in tmp_path.rglob("*"))
    runs, missing = load_saved_runs(
        {
            "a": ("quadratic", None),
            "b": ("learned", None),
            "c": ("quadratic", "16heads"),
            "d": ("generalized", None),
        },
        "cpu",
    )
    assert list(runs) == ["a"] and missing == ["b", "c", "d"]
    assert runs["a"].run_dir == tmp_path / "runs" / "cpu" / "quadratic"
    assert (
        sorted(p.stat().st_mtime_ns for p in tmp_path.rglob("*")) == before
    )  # read only


def test_one_hot_at_any_integer_shift_vs_inside_the_window():
    from attnconv.core.encodings import QuadraticEncoding
    from attnconv.core.lattice import integer_shift_distance, peak_probability

    # oracle by hand: rounding each coordinate; (2.6, -0.2) is 0.4 · √(1 + 0.25) from (3, 0)
    d = integer_shift_distance(torch.tensor([[3.0, -2.0], [2.6, -0.2], [0.5, 0.5]]))
    assert torch.allclose(
        d, torch.tensor([0.0, (0.4**2 + 0.2**2) ** 0.5, 0.5**0.5], dtype=torch.float64)
    )
    # two sharp heads at (0, 1) and (3, -2) (outside the 3×3 window), one wide head
    centers = torch.tensor([[0.0, 1.0], [3.0, -2.0], [0.0, 0.0]], dtype=torch.float64)
    enc = QuadraticEncoding(
        3, centers=centers, alpha=torch.tensor([20.0, 20.0, 0.01])
    ).double()
    maps = head_attention_maps(enc, (9, 9), (4, 4))
    peak = peak_probability(maps)
    assert peak[0] > 0.99 and peak[1] > 0.99 and peak[2] < 0.05
    m = layer_measures(centers, maps, (4, 4))
    assert (m["one_hot"], m["one_hot_in_window"]) == (2, 1)
    assert m["mean_integer_distance"] == 0.0 and m["mean_distance"] > 0.5
    assert "one_hot" not in layer_measures(centers)


def test_measures_key_words_follow_the_thresholds():
    """Table C.6's key (the pilots appendix, C.5) states the thresholds the measures use, filled from the constants
    that hold them, and every measure's default radius is that constant."""
    import inspect

    from attnconv.chapters.how_convolutional import (
        COVER_RADIUS,
        MEASURES_KEY,
        layer_measures,
        measures_rows,
        reference_measures,
        run_measures,
    )
    from attnconv.experiments.claims import ONE_HOT

    assert f"within {COVER_RADIUS:g} token;" in MEASURES_KEY
    assert f"more than {ONE_HOT:g} on one key;" in MEASURES_KEY
    for f in (layer_measures, run_measures, measures_rows, reference_measures):
        assert inspect.signature(f).parameters["radius"].default == COVER_RADIUS
    assert inspect.signature(layer_measures).parameters[
        "one_hot_threshold"
    ].default == (ONE_HOT)
    # a centre just inside the radius covers its lattice point, one at the radius does not
    inside = layer_measures([(0.0, COVER_RADIUS - 1e-6)])
    at = layer_measures([(0.0, COVER_RADIUS)])
    assert inside["coverage"] == 1 and at["coverage"] == 0
