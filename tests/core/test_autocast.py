"""Precision under autocast, tested on the CPU: CPU bf16 autocast runs the code path of CUDA bf16
autocast, and fake CUDA tensors (torch's FakeTensorMode) trace the CUDA dtype rules without a GPU.

* every encoding's position scores stay fp32 under autocast (bf16 would round scores of ~100 to
  the nearest 0.5);
* the custom autograd functions (:func:`merge_heads`, :class:`_SeparableHeads`) give their
  fp32 result, within bf16's rounding, for bf16, mixed-dtype, no-grad and ``inference_mode``
  inputs, and sum the heads in fp32;
* a forward pass of every paper-size model under fake CUDA tensors and CUDA autocast.
"""

from unittest import mock

import pytest
import torch
from cuda_standin import cuda_autocast_rules

from attnconv.core.attention import MultiHeadSelfAttention2d, ScoreTerms, merge_heads
from attnconv.core.encodings import (
    GeneralizedQuadraticEncoding,
    HardShiftEncoding,
    LearnedRelativeEncoding,
    QuadraticEncoding,
    kernel_shifts,
)
from attnconv.core.grid import _relative_shifts_cpu, relative_shifts
from attnconv.core.local import _SeparableHeads, separable_local_factors

BF16 = torch.bfloat16


def cpu_bf16():
    return torch.autocast("cpu", dtype=BF16)


def encodings():
    torch.manual_seed(0)
    return {
        "quadratic": QuadraticEncoding(9, alpha=40.0),
        "generalized": GeneralizedQuadraticEncoding(9, inv_sqrt_sigma=torch.eye(2) * 9),
        "learned": LearnedRelativeEncoding(9, dim=64, max_shift=8),
        "hard": HardShiftEncoding(kernel_shifts(3)),
    }


@pytest.mark.parametrize("name", ["quadratic", "generalized", "learned", "hard"])
def test_position_scores_stay_fp32_under_autocast(name):
    enc = encodings()[name]
    delta = relative_shifts((8, 8), 0)
    ref_grid = enc.grid_position_scores((8, 8), 0)
    ref = enc.position_scores(delta)
    with cpu_bf16():
        grid = enc.grid_position_scores((8, 8), 0)
        scores = enc.position_scores(delta)
    assert grid.dtype == scores.dtype == torch.float32
    torch.testing.assert_close(grid, ref_grid, rtol=0, atol=0)
    torch.testing.assert_close(scores, ref, rtol=0, atol=0)


def test_learned_grid_scores_are_not_rounded_to_bf16():
    """The bug this guards against: under autocast the learned encoding's grid scores came out in
    bf16, 0.02 off at initialisation; they must equal the fp32 scores exactly."""
    enc = encodings()["learned"]
    with torch.no_grad():
        enc.head_keys.mul_(30)  # scores of ~10-100, as after training
    ref = enc.grid_position_scores((8, 8), 1)
    with cpu_bf16():
        got = enc.grid_position_scores((8, 8), 1)
    assert (got - ref).abs().max().item() == 0.0


# ----------------------------------------------------------------- the autograd functions
def merge_inputs(dtype_heads=torch.float32, dtype_weight=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    heads = torch.randn(9, 40, 16, generator=g)
    weight = torch.randn(12, 9 * 16, generator=g) / 12
    bias = torch.randn(12, generator=g)
    return heads.to(dtype_heads), weight.to(dtype_weight), bias


def merge_reference(heads, weight, bias):
    """concat_h(heads) W_outᵀ + b in fp64: the oracle."""
    h = heads.double().permute(1, 0, 2).reshape(heads.shape[1], -1)
    return h @ weight.double().t() + bias.double()


CASES = {
    "bf16": (BF16, BF16),
    "mixed": (BF16, torch.float32),
    "fp32": (torch.float32, torch.float32),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("mode", ["grad", "no_grad", "inference_mode", "autocast"])
def test_merge_heads_against_fp32(case, mode):
    heads, weight, bias = merge_inputs(*CASES[case])
    ref = merge_reference(heads, weight, bias)
    # bf16: one rounding of the sum; under autocast the product runs in bf16 as nn.Linear's
    fp32 = case == "fp32" and mode != "autocast"
    tol = 1e-5 if fp32 else 2**-8
    leaves = [
        t.clone().requires_grad_(mode in ("grad", "autocast"))
        for t in (heads, weight, bias)
    ]
    context = {
        "grad": torch.enable_grad,
        "no_grad": torch.no_grad,
        "inference_mode": torch.inference_mode,
        "autocast": cpu_bf16,
    }[mode]
    with context():
        y = merge_heads(*leaves)
    assert y.dtype == (BF16 if mode == "autocast" else heads.dtype)
    err = ((y.double() - ref).abs().max() / ref.abs().max()).item()
    assert err <= tol, err
    if mode in ("grad", "autocast"):
        y.double().sum().backward()
        exact = [t.double().requires_grad_() for t in (heads, weight, bias)]
        merge_reference(*exact).sum().backward()
        assert_grads_close(leaves, exact, 1e-5 if fp32 else 2**-6)


def assert_grads_close(leaves, exact, tol):
    """Each gradient in its input's dtype, within ``tol`` of the fp64 gradient (relative to
    its largest entry)."""
    for leaf, ref in zip(leaves, exact):
        assert leaf.grad is not None and leaf.grad.dtype == leaf.dtype
        err = (leaf.grad.double() - ref.grad).abs().max() / ref.grad.abs().max()
        assert err.item() <= tol, err.item()


def test_merge_heads_sums_nine_bf16_heads_in_fp32():
    """Heads and weights of small integers: each head's product (≤ 192) is exact in bf16, their
    sum over nine heads (up to ~1,300) is not. Summed in fp32 and rounded once, the result is the
    exact sum rounded to bf16; added one head at a time in bf16 (the bug), every partial sum is
    rounded and the errors add up."""
    g = torch.Generator().manual_seed(3)
    heads = torch.randint(3, 5, (9, 64, 16), generator=g).to(BF16)
    weight = torch.randint(2, 4, (8, 9 * 16), generator=g).to(BF16)
    bias = torch.zeros(8)
    exact = merge_reference(heads, weight, bias)
    assert exact.max() > 1024  # bf16 spacing 8 there
    for mode in (torch.no_grad, cpu_bf16):
        with mode():
            y = merge_heads(heads, weight, bias)
        assert torch.equal(y, exact.to(BF16))


def separable_inputs(dtype=torch.float32):
    g = torch.Generator().manual_seed(1)
    values = torch.randn(6, 6, 2, 8, generator=g)
    enc = QuadraticEncoding(4, centers=torch.randn(4, 2, generator=g), alpha=0.7)
    rows, cols, _ = separable_local_factors(
        enc.centers.detach(), enc.precision().detach(), (4, 4), 1, 1e-6
    )
    weight = torch.randn(5, 4 * 8, generator=g) / 6
    bias = torch.randn(5, generator=g)
    return values.to(dtype), rows, cols, weight, bias


def separable_reference(values, rows, cols, weight, bias):
    v, r, c, w = values.double(), rows.double(), cols.double(), weight.double()
    nh, ch = r.shape[0], v.shape[-1]
    out = 0
    for h in range(nh):
        z = v @ w[:, h * ch : (h + 1) * ch].t()  # (H_k, W_k, B, D)
        out = out + torch.einsum("ik,jl,klbd->ijbd", r[h], c[h], z)
    return out.reshape(-1, w.shape[0]) + bias.double()


@pytest.mark.parametrize("case", ["bf16", "mixed", "fp32"])
@pytest.mark.parametrize("mode", ["grad", "no_grad", "inference_mode", "autocast"])
def test_separable_heads_against_fp32(case, mode):
    """The bug this guards against: with frozen weights or ``inference_mode`` under autocast,
    bf16 products were written into fp32 buffers ("Expected out tensor to have dtype BFloat16")."""
    dtype = torch.float32 if case == "fp32" else BF16
    values, rows, cols, weight, bias = separable_inputs(dtype)
    if case == "bf16":
        rows, cols, weight = rows.to(BF16), cols.to(BF16), weight.to(BF16)
    ref = separable_reference(values, rows, cols, weight, bias)
    needs = mode in ("grad", "autocast")
    leaves = [
        t.clone().requires_grad_(needs) for t in (values, rows, cols, weight, bias)
    ]
    context = {
        "grad": torch.enable_grad,
        "no_grad": torch.no_grad,
        "inference_mode": torch.inference_mode,
        "autocast": cpu_bf16,
    }[mode]
    with context():
        y = _SeparableHeads.apply(*leaves)
    assert y.dtype == values.dtype
    tol = 1e-5 if case == "fp32" else 2**-6
    err = ((y.double() - ref).abs().max() / ref.abs().max()).item()
    assert err <= tol, err
    if needs:
        y.double().sum().backward()
        exact = [
            t.double().requires_grad_() for t in (values, rows, cols, weight, bias)
        ]
        separable_reference(*exact).sum().backward()
        assert_grads_close(leaves, exact, 1e-5 if case == "fp32" else 2**-5)


@pytest.mark.parametrize("frozen", [False, True])
def test_local_attention_layer_under_autocast(frozen):
    """A local-attention layer without value projection (the separable heads) runs forward and,
    when trainable, backward under CPU bf16 autocast, close to its fp32 output."""
    torch.manual_seed(0)
    enc = QuadraticEncoding(4, alpha=0.5)
    layer = MultiHeadSelfAttention2d(
        8,
        4,
        encoding=enc,
        terms=ScoreTerms.position_only_terms(),
        value_projection=False,
        key_padding=1,
        implementation="local",
    )
    layer.requires_grad_(not frozen)
    x = torch.randn(2, 8, 5, 5)
    ref = layer(x)
    with cpu_bf16():
        y = layer(x)
    assert torch.allclose(y.float(), ref, atol=0.05, rtol=0.05)
    if not frozen:
        y.float().sum().backward()
        assert all(p.grad.dtype == torch.float32 for p in layer.parameters())


# ----------------------------------------------------------------- fake CUDA tensors
PAPER_MODELS = ["quadratic", "generalized", "learned", "learned_content", "resnet18"]


@pytest.mark.parametrize("name", PAPER_MODELS + ["quadratic-16heads"])
def test_forward_on_fake_cuda_under_cuda_autocast(name):
    """A paper-size forward pass on fake CUDA tensors under CUDA bf16 autocast: the CUDA dtype
    rules applied to every op, without a GPU. ``torch.autocast("cuda")`` refuses to switch on
    without CUDA, so ``torch.cuda.is_available`` is mocked for it; the pass runs under
    ``no_grad`` (autograd records a CUDA stream per tensor, which needs the CUDA runtime) and in
    eval mode (batch norm's running-stat update copies on the device). Local attention is left
    out: it chooses its windows from the encodings' values, which fake tensors do not have.
    The logits are bf16 and the position scores fp32."""
    from attnconv.experiments.models import build_model, paper_model_config

    model_name, heads = (name.split("-")[0], 16) if "-" in name else (name, None)
    overrides = {} if heads is None else {"num_heads": heads}
    cfg = paper_model_config(model_name, **overrides)
    if model_name != "resnet18":
        cfg = paper_model_config(model_name, num_layers=2, **overrides)
    model = build_model(cfg).requires_grad_(False).eval()
    _relative_shifts_cpu.cache_clear()  # its tables must not be fake ones (made in the mode)
    try:
        _fake_forward(model, cfg)
    finally:
        _relative_shifts_cpu.cache_clear()


def _fake_forward(model, cfg):
    import contextlib

    import torch._subclasses.fake_tensor as fake_tensor
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

    # torch 2.11's fake CUDA tensors make one real CUDA tensor first (init_gpu_context) when
    # torch.cuda.is_available() says True: not here, where that is mocked
    quiet = (
        mock.patch.object(fake_tensor, "init_gpu_context", lambda device: None)
        if hasattr(fake_tensor, "init_gpu_context")
        else contextlib.nullcontext()
    )
    with (
        mock.patch("torch.cuda.is_available", return_value=True),
        mock.patch("torch.cuda.is_bf16_supported", return_value=True),
        quiet,
        FakeTensorMode(),
        torch.no_grad(),
    ):
        model._apply(lambda t: torch.empty(t.shape, dtype=t.dtype, device="cuda"))
        x = torch.empty(4, 3, 32, 32, device="cuda")
        with torch.autocast("cuda", dtype=BF16):
            logits = model(x)
            scores = [
                layer.attention.encoding.grid_position_scores(cfg.grid, 0, "cuda:0")
                for layer in getattr(model, "layers", [])
                if layer.attention is not None
            ]
        assert isinstance(logits, FakeTensor) and logits.device.type == "cuda"
        assert logits.shape == (4, 10) and logits.dtype == BF16
        assert all(s.dtype == torch.float32 and s.device.type == "cuda" for s in scores)


def _layer_norm_dtypes(model, run):
    """The dtypes of every LayerNorm's input and output while ``run()`` runs."""
    seen = []

    def hook(module, args, out):
        seen.append((args[0].dtype, out.dtype))

    norms = [m for m in model.modules() if isinstance(m, torch.nn.LayerNorm)]
    handles = [m.register_forward_hook(hook) for m in norms]
    try:
        run()
    finally:
        for h in handles:
            h.remove()
    return seen


def test_the_cuda_stand_in_runs_layer_norm_as_cuda_autocast_does():
    """CUDA autocast runs ``native_layer_norm`` in fp32 (fp32 out, so the hidden state between
    layers is fp32); CPU autocast runs it in bf16. Fake CUDA tensors under CUDA autocast give the
    rule, and the CPU stand-in (:mod:`cuda_standin`) must give the same dtypes."""
    from attnconv.experiments.models import build_model, paper_model_config

    cfg = paper_model_config("quadratic", num_layers=2, hidden_size=18)
    model = build_model(cfg).requires_grad_(False).eval()
    x = torch.randn(2, 3, 32, 32)
    with cpu_bf16():
        plain = _layer_norm_dtypes(model, lambda: model(x))
    with cpu_bf16(), cuda_autocast_rules():
        stand_in = _layer_norm_dtypes(model, lambda: model(x))
    _relative_shifts_cpu.cache_clear()
    try:
        fake = _layer_norm_dtypes(model, lambda: _fake_forward(model, cfg))
    finally:
        _relative_shifts_cpu.cache_clear()
    assert plain and all(out == BF16 for _, out in plain)  # CPU autocast's own rule
    assert (
        [out for _, out in fake]
        == [torch.float32] * len(fake)
        == [out for _, out in stand_in]
    )


def test_content_plus_learned_position_scores_are_summed_in_fp32():
    """learned + content under bf16 autocast: the content scores come out of a bf16 product, the
    position term is fp32; their sum must be fp32 (the bug: the position term was added in place
    to the bf16 scores, rounding trained-size scores of ~90 to bf16's step of 0.5). With W_qry = 0
    the content scores are exactly 0, so the scores must equal the fp32 position term exactly."""
    torch.manual_seed(0)
    enc = LearnedRelativeEncoding(9, dim=64, max_shift=8)
    layer = MultiHeadSelfAttention2d(
        32, 9, encoding=enc, terms=ScoreTerms(True, False, False, True)
    )
    with torch.no_grad():
        enc.head_keys.mul_(30)  # position scores of ~10-100, as after training
        layer.query.weight.zero_()
    x = torch.randn(2, 32, 8, 8)
    position = enc.grid_position_scores((8, 8), 0)
    assert position.abs().max() > 64  # bf16's step is 0.5 there
    with cpu_bf16():
        scores = layer.attention_scores(x)
    assert scores.dtype == torch.float32
    assert (scores - position).abs().max().item() == 0.0


@pytest.mark.parametrize("name", PAPER_MODELS + ["quadratic-16heads"])
def test_training_forward_and_backward_under_autocast(name):
    """Every registered model at paper width (2 of its layers), in training mode (dropout, batch
    statistics), forward and backward under bf16 autocast, as a CUDA step runs them
    (device-generic autocast: the CPU's bf16 autocast takes the same code path): the loss is
    finite and every parameter's gradient exists, is finite and is fp32, the parameters'
    dtype (autocast casts back in the backward). Then the same model in training mode on fake
    CUDA tensors under CUDA autocast: the CUDA dtype rules of the training-mode forward. (The
    backward cannot be traced on fake CUDA tensors: autograd records a CUDA stream for every
    tensor it saves, which needs the CUDA runtime; nor can batch norm's running-stat update,
    a copy on the device, so batch norm is in eval mode there.)"""
    from attnconv.experiments.models import build_model, paper_model_config
    from attnconv.experiments.train_step import compute_loss

    model_name, heads = (name.split("-")[0], 16) if "-" in name else (name, None)
    overrides = {} if heads is None else {"num_heads": heads}
    if model_name != "resnet18":
        overrides["num_layers"] = 2
    cfg = paper_model_config(model_name, **overrides)
    torch.manual_seed(0)
    model = build_model(cfg).train()
    x = torch.randn(2, 3, 32, 32)
    y = torch.tensor([0, 1])
    with cpu_bf16(), cuda_autocast_rules():  # the backward runs under CUDA's dtypes too
        loss, logits = compute_loss(model, x, y)
        loss.backward()
    assert logits.dtype == BF16 and torch.isfinite(loss)
    for pname, p in model.named_parameters():
        if not p.requires_grad:
            continue
        assert p.grad is not None, pname
        assert p.grad.dtype == p.dtype == torch.float32, (pname, p.grad.dtype)
        assert torch.isfinite(p.grad).all(), pname
    model.requires_grad_(False)
    for m in model.modules():  # batch norm's running-stat update copies on the device
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.eval()
    _relative_shifts_cpu.cache_clear()
    try:
        _fake_forward(model, cfg)  # training mode this time (batch norm aside)
    finally:
        _relative_shifts_cpu.cache_clear()


def test_local_attention_trains_under_cudas_dtype_rules():
    """The deep profile's local quadratic attention at paper width under bf16 autocast with
    CUDA's rules (the CPU stand-in): the layer after a LayerNorm gets fp32 tokens (CUDA's fp32
    LayerNorm), and forward and backward run with finite fp32 gradients — local attention's fp32
    path on CUDA, never run on a card. (Generalized heads' sparse product has no bf16 backward
    on the CPU — MKL's sparse addmm — and no profile trains them local.)"""
    from attnconv.experiments.models import build_model, paper_model_config
    from attnconv.experiments.train_step import compute_loss

    cfg = paper_model_config(
        "quadratic", num_layers=2, attention_implementation="local"
    )
    torch.manual_seed(0)
    model = build_model(cfg).train()
    seen = []
    kind = type(model.layers[0].attention)
    real = kind._forward_local

    def spy(self, tokens, *args):
        seen.append(tokens.dtype)
        return real(self, tokens, *args)

    x, y = torch.randn(2, 3, 32, 32), torch.tensor([0, 1])
    with mock.patch.object(kind, "_forward_local", spy):
        with cpu_bf16(), cuda_autocast_rules():
            loss, _ = compute_loss(model, x, y)
            loss.backward()
    assert len(seen) == 2
    assert torch.isfinite(loss) and seen[-1] == torch.float32
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert all(g is not None and g.dtype == torch.float32 for g in grads)
    assert all(torch.isfinite(g).all() for g in grads)
