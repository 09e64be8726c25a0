import copy

import pytest
import torch
import torch.nn.functional as F

from attnconv.experiments.models import build_model, count_parameters
from attnconv.experiments.paper_numbers import (
    AUTHORS_CODE_CONDITION_THRESHOLD,
    PAPER_CONDITION_THRESHOLD,
    PAPER_MAX_EIGENVALUE_THRESHOLD,
)
from attnconv.experiments.pruning import (
    degenerate_heads,
    head_statistics,
    prune_degenerate_heads,
    prune_heads,
)

TINY = dict(
    hidden_size=8, intermediate_size=12, num_layers=2, num_heads=4, downsample=4
)


def tiny(name="generalized"):
    torch.manual_seed(0)
    return build_model(name, **TINY).eval()


def zeroed_heads(model, selection):
    """Oracle: the unpruned model with the pruned heads' columns of W_out set to zero."""
    m = copy.deepcopy(model)
    d = m.config.hidden_size
    with torch.no_grad():
        for layer, heads in selection.items():
            for h in heads:
                m.layers[layer].attention.out.weight[:, h * d : (h + 1) * d] = 0
    return m


@pytest.mark.parametrize(
    "name", ["generalized", "quadratic", "learned", "learned_content"]
)
def test_pruning_keeps_other_heads_outputs(name):
    model = tiny(name)
    x = torch.randn(3, 3, 32, 32)
    sel = {0: [1, 3], 1: [2]}
    expect = zeroed_heads(model, sel)(x)
    before_maps = model.position_attention()
    prune_heads(model, sel)
    assert model.heads_per_layer == [2, 3]
    assert torch.allclose(model(x), expect, atol=1e-5)
    after_maps = model.position_attention()
    assert torch.allclose(after_maps[0], before_maps[0][[0, 2]], atol=1e-6)
    assert torch.allclose(after_maps[1], before_maps[1][[0, 1, 3]], atol=1e-6)


def test_pruning_removes_exactly_the_chosen_heads():
    model = tiny()
    enc = model.layers[0].attention.encoding
    centers, m = enc.centers.detach().clone(), enc.inv_sqrt_sigma.detach().clone()
    w = model.layers[0].attention.out.weight.detach().clone()
    n0 = count_parameters(model)
    prune_heads(model, [[0, 2], []])
    enc = model.layers[0].attention.encoding
    assert enc.num_heads == 2 and torch.equal(enc.centers, centers[[1, 3]])
    assert torch.equal(enc.inv_sqrt_sigma, m[[1, 3]])
    d = TINY["hidden_size"]
    assert torch.equal(
        model.layers[0].attention.out.weight,
        torch.cat([w[:, d : 2 * d], w[:, 3 * d :]], 1),
    )
    # each head: D·D weights of W_out + 2 centre + 4 entries of M
    assert n0 - count_parameters(model) == 2 * (d * d + 6)
    assert model.layers[1].attention.num_heads == 4


def test_pruning_all_heads_of_a_layer_leaves_the_bias():
    model = tiny()
    x = torch.randn(2, 3, 32, 32)
    expect = zeroed_heads(model, {1: [0, 1, 2, 3]})(x)
    bias = model.layers[1].attention.out.bias.detach().clone()
    prune_heads(model, {1: [0, 1, 2, 3]})
    assert model.layers[1].attention is None and torch.equal(
        model.layers[1].attention_bias, bias
    )
    assert model.heads_per_layer == [4, 0]
    assert torch.allclose(model(x), expect, atol=1e-5)
    assert model.attention_parameters()[1]["num_heads"] == 0
    assert model.position_attention()[1] is None


def test_paper_size_pruned_count():
    with torch.device("meta"):
        model = build_model("generalized")
        prune_heads(model, {0: [0, 1, 2], 2: [4, 5, 6, 7], 3: list(range(8)), 5: []})
    assert count_parameters(model) == 9_686_916


def test_pruned_model_trains():
    model = tiny().train()
    prune_heads(model, {0: [0]})
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = F.cross_entropy(model(torch.randn(4, 3, 32, 32)), torch.arange(4))
    loss.backward()
    opt.step()
    assert all(p.grad is not None for p in model.parameters())


def set_m(model, layer, head, m):
    with torch.no_grad():
        model.layers[layer].attention.encoding.inv_sqrt_sigma[head] = torch.as_tensor(
            m, dtype=torch.float32
        )


def test_degenerate_heads_thresholds():
    model = tiny()
    set_m(model, 0, 1, [[1e-4, 0.0], [0.0, 1e-4]])  # Σ⁻¹ = 1e-8·I: attends everywhere
    set_m(model, 1, 0, [[1.0, 0.0], [0.0, 1e-3]])  # condition 1e6
    set_m(model, 1, 3, [[1.0, 0.0], [0.0, 0.02]])  # condition 2500
    for layer, head in [(0, 0), (0, 2), (0, 3), (1, 1), (1, 2)]:
        set_m(model, layer, head, [[1.0, 0.2], [-0.1, 1.1]])
    stats = head_statistics(model)
    assert torch.allclose(
        stats[1]["eigenvalues"][0],
        torch.tensor([1e-6, 1.0], dtype=torch.float64),
        rtol=1e-4,
    )
    assert stats[1]["condition"][0] == pytest.approx(1e6, rel=1e-3)
    assert degenerate_heads(model) == {0: [1], 1: [0]}
    assert PAPER_MAX_EIGENVALUE_THRESHOLD == 1e-5 and PAPER_CONDITION_THRESHOLD == 1e5
    assert degenerate_heads(
        model, condition_threshold=AUTHORS_CODE_CONDITION_THRESHOLD
    ) == {0: [1], 1: [0, 3]}
    assert (
        degenerate_heads(model, max_eigenvalue_threshold=0.0, condition_threshold=1e7)
        == {}
    )
    removed = prune_degenerate_heads(model)
    assert removed == {0: [1], 1: [0]} and model.heads_per_layer == [3, 3]
    assert degenerate_heads(model) == {}


def test_quadratic_heads_are_never_elongated():
    model = tiny("quadratic")
    stats = head_statistics(model)
    s = model.layers[0].attention.encoding.spread.detach().double()
    assert torch.allclose(stats[0]["eigenvalues"][:, 1], s**2)
    assert torch.allclose(stats[0]["condition"], torch.ones(4, dtype=torch.float64))


def test_selection_errors():
    model = tiny()
    with pytest.raises(ValueError):
        prune_heads(model, {2: [0]})
    with pytest.raises(ValueError):
        prune_heads(model, {0: [4]})
    with pytest.raises(ValueError):
        prune_heads(model, {0: [1, 1]})
    with pytest.raises(ValueError):
        prune_heads(model, [[0]])
    with pytest.raises(ValueError):
        degenerate_heads(model, condition_threshold=0.5)
    with pytest.raises(TypeError):
        head_statistics(tiny("learned"))
    assert model.heads_per_layer == [4, 4]


def test_removal_accuracies_remove_the_right_heads_and_leave_the_model():
    from attnconv.experiments.pruning import (
        head_removal_accuracies,
        layer_removal_accuracies,
    )

    torch.manual_seed(0)
    model = build_model(
        "quadratic",
        hidden_size=8,
        intermediate_size=12,
        num_layers=3,
        num_heads=4,
        downsample=8,
    ).eval()
    before = copy.deepcopy(model.state_dict())
    images = torch.randn(3, 3, 32, 32)
    seen = []

    def heads(
        m,
    ):  # an "accuracy" that reports which heads are left, and the logits of the model it got
        seen.append(m(images).detach())
        return float(sum(m.heads_per_layer))

    layers = layer_removal_accuracies(model, heads)
    assert layers == {"full": 12.0, "without_layer": [8.0, 8.0, 8.0]}
    single = head_removal_accuracies(model, heads)
    assert single["without_head"] == [[11.0] * 4] * 3
    # the model itself is untouched: same parameters, same heads, same output as before
    assert model.heads_per_layer == [4, 4, 4]
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    torch.testing.assert_close(model(images), seen[0])
    # removing heads changes the output (the copies really differ from the full model)
    assert all(not torch.allclose(seen[0], s) for s in seen[1:4])


def test_inverse_covariance_spectrum_matches_an_eigensolver_and_keeps_tiny_eigenvalues():
    """The closed form of App. A.1's spectrum against torch.linalg.eigvalsh (float64 oracle), and on
    a nearly rank-1 Σ⁻¹ where it must stay positive and give det(Σ⁻¹)/λ_max exactly."""
    from attnconv.experiments.pruning import inverse_covariance_spectrum, is_degenerate

    g = torch.Generator().manual_seed(3)
    m = torch.randn(50, 2, 2, generator=g, dtype=torch.float64)
    eig, cond = inverse_covariance_spectrum(m)
    oracle = torch.linalg.eigvalsh(m @ m.transpose(-1, -2))
    assert torch.allclose(eig, oracle, rtol=1e-10, atol=1e-12)
    assert torch.allclose(cond, oracle[:, 1] / oracle[:, 0], rtol=1e-8)
    line = torch.tensor(
        [[[1.0, 2.0], [1.0, 2.0 + 1e-9]]], dtype=torch.float64
    )  # det(M) = 1e-9
    eig, cond = inverse_covariance_spectrum(line)
    det = (
        float(line[0, 0, 0] * line[0, 1, 1] - line[0, 0, 1] * line[0, 1, 0]) ** 2
    )  # ≈ 1e-18, as stored
    assert eig[0, 0] > 0 and abs(float(eig[0, 0] * eig[0, 1]) - det) <= 1e-12 * det
    assert bool(is_degenerate(eig[0, 1], cond[0])) and not bool(
        is_degenerate(torch.tensor(1.0), torch.tensor(2.0))
    )
    singular = torch.zeros(1, 2, 2, dtype=torch.float64)
    eig, cond = inverse_covariance_spectrum(singular)
    assert eig.tolist() == [[0.0, 0.0]] and cond.tolist() == [float("inf")]
