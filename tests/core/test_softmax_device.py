"""The denormal flush of :func:`softmax_without_denormals` runs on the CPU only: on CUDA it would
be an extra read and write of the (B, N_h, T, T) probabilities for nothing (GPUs compute on
denormals at full speed). Checked on fake CUDA tensors, with the flush (``F.threshold``) spied."""

import contextlib
from unittest import mock

import torch

from attnconv.core import softmax


def _spied_softmax(device: str):
    import torch._subclasses.fake_tensor as fake_tensor
    from torch._subclasses.fake_tensor import FakeTensorMode

    quiet = (
        mock.patch.object(fake_tensor, "init_gpu_context", lambda device: None)
        if hasattr(fake_tensor, "init_gpu_context")
        else contextlib.nullcontext()
    )
    flush = mock.Mock(wraps=softmax.F.threshold)
    fake = device == "cuda"
    with (
        mock.patch.object(softmax.F, "threshold", flush),
        mock.patch("torch.cuda.is_available", return_value=True)
        if fake
        else contextlib.nullcontext(),
        quiet if fake else contextlib.nullcontext(),
        FakeTensorMode() if fake else contextlib.nullcontext(),
    ):
        scores = torch.zeros(2, 9, 16, 16, device=device)
        p = softmax.softmax_without_denormals(scores)
    return p, flush.call_count


def test_the_denormal_flush_runs_on_the_cpu():
    p, flushes = _spied_softmax("cpu")
    assert flushes == 1 and torch.allclose(p.sum(-1), torch.ones(2, 9, 16))


def test_no_denormal_flush_on_cuda():
    p, flushes = _spied_softmax("cuda")
    assert flushes == 0 and p.device.type == "cuda" and p.shape == (2, 9, 16, 16)
