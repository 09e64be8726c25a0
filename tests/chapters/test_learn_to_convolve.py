import math
from dataclasses import replace

import matplotlib

matplotlib.use("Agg")

import pytest
import torch
import torch.nn.functional as F

from attnconv.chapters.learn_to_convolve import plot_convolve_run
from attnconv.core.encodings import kernel_shifts
from attnconv.core.lattice import lattice_coverage
from attnconv.experiments.studies_convolve import (
    ConvolveResult,
    ConvolveSetup,
    convolution_images,
    head_diagnostics,
    lattice_distances,
    learn_to_convolve,
    make_attention_layer,
    output_error,
    relative_error,
    run_summary,
    seed_sweep,
    set_kernel_values,
    stray_heads,
    target_convolution,
)

TINY = ConvolveSetup(num_images=200, image_size=8, steps=30, batch_size=100)
LATTICE = kernel_shifts(3).float()


def test_setup_validation():
    for bad in (
        dict(kernel_size=2),
        dict(steps=0),
        dict(image_size=5),
        dict(lr=0.0),
        dict(head_dim=0),
        dict(alpha_init=-1.0),
        dict(num_images=0),
        dict(heads=0),
        dict(parametrization="x"),
        dict(freeze_width_steps=-1),
    ):
        with pytest.raises(ValueError):
            ConvolveSetup(**bad)
    assert (
        ConvolveSetup().num_heads == 9
        and ConvolveSetup(in_channels=5, out_channels=2).resolved_head_dim == 2
    )
    with pytest.raises(ValueError):
        convolution_images(ConvolveSetup(num_images=10**6))


def test_images_are_pooled_normalised_sample():
    x = convolution_images(TINY)
    assert x.shape == (200, 3, 8, 8) and x.dtype == torch.float32
    assert abs(float(x.mean())) < 0.5  # normalised with the CIFAR-10 statistics
    x5 = convolution_images(replace(TINY, in_channels=5))
    assert x5.shape == (200, 5, 8, 8)


def test_target_is_a_fixed_convolution():
    a, b = target_convolution(TINY), target_convolution(TINY)
    assert torch.equal(a.weight, b.weight) and not torch.equal(
        a.weight, target_convolution(replace(TINY, kernel_seed=1)).weight
    )
    x = torch.randn(2, 3, 6, 6)
    # oracle: explicit sum over the 3×3 taps of the zero-padded input
    xp = F.pad(x, (1, 1, 1, 1))
    out = torch.zeros(2, 3, 6, 6) + a.bias.view(1, 3, 1, 1)
    for i in range(3):
        for j in range(3):
            out += torch.einsum(
                "oc,bchw->bohw", a.weight[:, :, i, j], xp[:, :, i : i + 6, j : j + 6]
            )
    assert torch.allclose(a(x), out, atol=1e-5)


def test_lemma1_values_on_the_lattice_reproduce_the_convolution():
    """Head on lattice point Δ with W_out W_val = W[:, :, Δ] and a sharp Gaussian = the convolution:
    the lattice orientation (row, column) = kernel tap (i − 1, j − 1) of F.conv2d."""
    s = replace(TINY, alpha_init=40.0)
    layer = set_kernel_values(
        make_attention_layer(s, LATTICE.flip(0)), target_convolution(s)
    )
    assert (
        relative_error(layer, target_convolution(s), convolution_images(s)[:50]) < 1e-8
    )
    # a head that is off by one lattice point breaks it
    wrong = LATTICE.clone()
    wrong[0] = torch.tensor([1.0, 1.0])
    bad = set_kernel_values(make_attention_layer(s, wrong), target_convolution(s))
    assert relative_error(bad, target_convolution(s), convolution_images(s)[:50]) > 1e-2
    with pytest.raises(ValueError):
        make_attention_layer(s, torch.zeros(4, 2))


def test_training_decreases_the_loss_and_is_deterministic():
    r = learn_to_convolve(TINY)
    assert (
        r.centers.shape == (31, 9, 2)
        and r.alphas.shape == (31, 9)
        and r.losses.shape == (30,)
    )
    assert float(r.losses[-5:].mean()) < 0.5 * float(r.losses[:2].mean())
    assert r.final_error < 0.5 * r.initial_error
    again = learn_to_convolve(TINY)
    assert torch.equal(r.centers, again.centers) and torch.equal(r.losses, again.losses)
    other = learn_to_convolve(replace(TINY, seed=1))
    assert not torch.equal(r.centers[0], other.centers[0])


def test_heads_started_on_the_theorem1_solution_stay_there():
    """Centres on the lattice with Lemma 1's value weights: the loss stays small and no centre
    leaves its lattice point."""
    s = replace(TINY, alpha_init=3.0, lr=0.01)
    r = learn_to_convolve(s, centers=LATTICE, kernel_values=True)
    assert float((r.centers[-1] - LATTICE).norm(dim=1).max()) < 0.25
    assert lattice_coverage(r.centers[-1], radius=0.25) == 9
    assert r.final_error <= r.initial_error < 0.02


def test_lattice_distances_against_loops():
    torch.manual_seed(0)
    c = torch.randn(7, 2) * 2
    d = lattice_distances(c, 3)
    pts = [(i, j) for i in (-1, 0, 1) for j in (-1, 0, 1)]
    for h in range(7):
        dists = [math.dist(c[h].tolist(), p) for p in pts]
        assert d["head_to_lattice"][h].item() == pytest.approx(min(dists), abs=1e-6)
        assert pts[int(d["nearest_point"][h])] == pts[dists.index(min(dists))]
    for p in range(9):
        assert d["lattice_to_head"][p].item() == pytest.approx(
            min(math.dist(c[h].tolist(), pts[p]) for h in range(7)), abs=1e-6
        )


def test_coverage_and_stray_heads():
    c = LATTICE.clone()
    assert lattice_coverage(c) == 9 and stray_heads(c) == []
    c[4] = torch.tensor(
        [1.1, 1.0]
    )  # the centre head joins the corner (1, 1): (0, 0) uncovered
    c[2] = torch.tensor([8.9, 1.4])  # a stray head
    assert lattice_coverage(c) == 7
    assert stray_heads(c) == [2]
    assert lattice_coverage(c, radius=2.0) == 9
    assert lattice_coverage(kernel_shifts(5).float(), kernel_size=5) == 25
    with pytest.raises(ValueError):
        lattice_coverage(c, radius=0)
    with pytest.raises(ValueError):
        stray_heads(c, radius=-1)
    with pytest.raises(ValueError):
        lattice_distances(torch.zeros(3))


def test_run_summary_on_hand_placed_heads():
    c = LATTICE.clone()
    c[4] = torch.tensor(
        [1.1, 1.0]
    )  # joins (1, 1), farther than head 8 (on it): head 4 shares
    c[2] = torch.tensor([8.9, 1.4])  # stray
    steps = 2
    alphas = torch.full((steps + 1, 9), 3.0)
    alphas[-1, 2] = 0.1
    fake = ConvolveResult(
        TINY,
        c.expand(steps + 1, 9, 2).clone(),
        alphas,
        torch.ones(steps),
        0.01,
        None,
        None,
    )
    s = run_summary(fake)
    assert s["covered"] == 7 and s["on_lattice"] == 8 and s["shared"] == [4]
    assert s["dead"] == [2] and s["stray"] == [2] and s["final_error"] == 0.01
    assert s["output_error"] == pytest.approx(0.1)  # the root of the squared-norm ratio


def test_head_diagnostics_against_finite_differences():
    r = learn_to_convolve(replace(TINY, steps=5))
    diag = head_diagnostics(r, num_images=100)
    k = r.conv.weight
    for p, (i, j) in enumerate((i, j) for i in range(3) for j in range(3)):
        assert diag["kernel_norms"][p].item() == pytest.approx(
            k[:, :, i, j].norm().item(), rel=1e-5
        )
    layer = r.layer
    d = layer.head_dim
    for h in (0, 4):
        slice_h = (
            layer.out.weight[:, h * d : (h + 1) * d]
            @ layer.value.weight[h * d : (h + 1) * d]
        )
        assert diag["value_norm"][h].item() == pytest.approx(
            slice_h.norm().item(), rel=1e-5
        )
    # ∂loss/∂Δ_h against central differences in float64
    x = convolution_images(r.setup)[:100].double()
    conv = r.conv.double()
    layer = layer.double()
    y = conv(x)
    scale = (y**2).mean()

    def loss():
        return float(((layer(x) - y) ** 2).mean() / scale)

    h, eps = 3, 1e-5
    fd = []
    with torch.no_grad():
        for a in range(2):
            layer.encoding.centers[h, a] += eps
            up = loss()
            layer.encoding.centers[h, a] -= 2 * eps
            down = loss()
            layer.encoding.centers[h, a] += eps
            fd.append((up - down) / (2 * eps))
    assert diag["center_grad"][h].item() == pytest.approx(math.hypot(*fd), rel=1e-3)


def test_seed_sweep_and_plot():
    rows, results = seed_sweep(
        replace(TINY, steps=3, num_images=100), [0, 1], keep_results=True
    )
    assert [r["seed"] for r in rows] == [0, 1] and len(results) == 2
    assert all(
        0 <= r["covered"] <= 9 and isinstance(r["stray"], list) and r["final_error"] > 0
        for r in rows
    )
    assert rows[1]["covered"] == lattice_coverage(results[1].centers[-1])
    assert seed_sweep(replace(TINY, steps=3, num_images=100), [1]) == rows[1:]
    import matplotlib.pyplot as plt

    run = learn_to_convolve(replace(TINY, steps=3, num_images=100))
    far = replace(run, centers=run.centers.clone())
    far.centers[-1, 0] = torch.tensor([-6.0, 2.0])  # a head that travels far
    for r in (run, far):
        fig = plot_convolve_run(r, title="t")
        assert len(fig.axes) == 3
        ax = fig.axes[0]
        left, right = ax.get_xlim()
        bottom, top = ax.get_ylim()
        reach = float(
            r.centers.abs().max()
        )  # every centre, start to end, inside the panel
        assert min(-left, right, bottom, -top) >= max(reach + 0.5, 4.5)
        plt.close(fig)
    assert ax.get_ylim()[0] > 6.0  # widened for the far head


def test_more_heads_and_frozen_widths():
    s = replace(TINY, steps=4, num_images=100, heads=16, freeze_width_steps=4)
    r = learn_to_convolve(s)
    assert r.centers.shape == (5, 16, 2) and torch.equal(r.alphas[0], r.alphas[-1])
    assert not torch.equal(r.centers[0], r.centers[-1])
    thawed = learn_to_convolve(replace(s, freeze_width_steps=2))
    assert torch.equal(thawed.alphas[2], thawed.alphas[0]) and not torch.equal(
        thawed.alphas[-1], thawed.alphas[0]
    )
    with pytest.raises(ValueError):
        set_kernel_values(
            make_attention_layer(s), target_convolution(s)
        )  # 16 heads for 9 taps
    alpha_param = learn_to_convolve(
        replace(TINY, steps=2, num_images=100, parametrization="alpha")
    )
    assert alpha_param.alphas.shape == (3, 9)


def test_output_error_is_the_norm_ratio_against_a_direct_computation():
    s = TINY
    conv = target_convolution(s)
    images = convolution_images(s)[:20]
    bad = make_attention_layer(s)
    with torch.no_grad():
        y, ref = bad(images), conv(images)
    direct = float((y - ref).norm() / ref.norm())
    assert output_error(relative_error(bad, conv, images)) == pytest.approx(
        direct, rel=1e-5
    )


def test_saved_examples_are_the_runs_that_made_them(tmp_path):
    """A sweep saved with its examples reads back the very runs (the oracle: the same runs
    trained again here): rows equal, centres and α at the saved steps within the 4 decimals
    kept, diagnostics equal; the chapter's figure draws a saved run; a file without examples
    is a one-line error naming the command."""
    import json

    from attnconv.experiments.studies_convolve import (
        EXAMPLE_SEEDS,
        saved_examples,
        saved_seed_sweep,
        seed_sweep_with_examples,
        sweep_key,
    )

    setup, seeds = replace(TINY, steps=12, num_images=100), [1, 2, 3]
    made = seed_sweep_with_examples(setup, seeds)
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps({"key": sweep_key(setup, seeds), **made}))
    assert saved_seed_sweep(path, setup, seeds) == seed_sweep(setup, seeds)
    got = saved_examples(path, setup, seeds)
    assert [g.setup.seed for g in got] == list(EXAMPLE_SEEDS)
    again = learn_to_convolve(replace(setup, seed=2))
    g = got[1]
    assert g.steps.tolist() == [0, 5, 10, 12]
    assert torch.allclose(g.centers, again.centers[g.steps].double(), atol=6e-5)
    assert torch.allclose(g.alphas, again.alphas[g.steps].double(), atol=6e-5)
    assert g.final_error == pytest.approx(again.final_error, rel=1e-6)
    assert g.row == {"seed": 2, **run_summary(again)}
    diag = head_diagnostics(again)
    assert torch.allclose(g.diagnostics["alpha"], diag["alpha"].double())
    fig = plot_convolve_run(g, title="saved")
    assert len(fig.axes) == 3
    import matplotlib.pyplot as plt

    plt.close(fig)
    path.write_text(json.dumps({"key": sweep_key(setup, seeds), "rows": made["rows"]}))
    with pytest.raises(FileNotFoundError, match="regenerate --force --only"):
        saved_examples(path, setup, seeds)


def test_plot_seed_sweep_draws_one_line_per_layer_size():
    from attnconv.chapters.learn_to_convolve import plot_seed_sweep

    rows9 = [{"seed": s, "covered": c} for s, c in ((1, 6), (2, 7))]
    rows16 = [{"seed": s, "covered": c} for s, c in ((1, 8), (2, 9))]
    fig = plot_seed_sweep({"9 heads": rows9, "16 heads": rows16})
    ax = fig.axes[0]
    covered = [list(line.get_ydata()) for line in ax.get_lines()[1:]]
    assert covered == [[6, 7], [8, 9]]
