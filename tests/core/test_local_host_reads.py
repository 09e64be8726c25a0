"""Local attention reads the device at most once per layer and training step (issue 41: the
radii were two ``float()`` per head and the axis check a ``bool`` per layer, 132 host syncs a step
of the deep quadratic model). Host reads are counted with a dispatch mode: every op that copies a
device scalar to the host (``.item()``, ``float()``, ``bool()``, ``tolist()``) goes through
``aten._local_scalar_dense`` or ``aten.is_nonzero`` (seen by a dispatch mode), except
``tolist()`` and ``numpy()``, which read the storage directly (counted by wrapping them); on the
CPU they cost nothing, on CUDA each is a synchronisation."""

from unittest import mock

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from attnconv.experiments.models import build_model, paper_model_config
from attnconv.experiments.train_step import compute_loss

HOST_READS = {"_local_scalar_dense", "is_nonzero", "item"}


class HostReads(TorchDispatchMode):
    """Counts the ops that read a tensor's value on the host (and ``nonzero``, which sizes its
    output by the data)."""

    def __init__(self):
        super().__init__()
        self.reads, self.nonzero = 0, 0
        self.patches = [
            mock.patch.object(
                torch.Tensor, name, self._counted(getattr(torch.Tensor, name))
            )
            for name in ("tolist", "numpy")
        ]

    def _counted(self, method):
        def read(tensor, *args, **kwargs):
            self.reads += 1
            return method(tensor, *args, **kwargs)

        return read

    def __enter__(self):
        for p in self.patches:
            p.start()
        return super().__enter__()

    def __exit__(self, *exc):
        for p in self.patches:
            p.stop()
        return super().__exit__(*exc)

    def __torch_dispatch__(self, func, _types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        self.reads += name in HOST_READS
        self.nonzero += name == "nonzero"
        return func(*args, **(kwargs or {}))


def training_step_reads(model_name: str, layers: int = 6) -> HostReads:
    torch.manual_seed(0)
    cfg = paper_model_config(
        model_name,
        num_layers=layers,
        hidden_size=18,
        intermediate_size=8,
        attention_implementation="local",
    )
    model = build_model(cfg).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = torch.randn(2, 3, 32, 32), torch.tensor([0, 1])
    with HostReads() as counter:
        loss, _ = compute_loss(model, x, y)
        loss.backward()
        optimizer.step()
    return counter


def test_local_quadratic_reads_the_host_once_per_layer_per_step():
    counter = training_step_reads("quadratic")
    assert counter.reads <= 6, counter.reads
    assert counter.nonzero == 0


def test_local_generalized_reads_radii_and_the_axis_check_once_per_layer():
    """Rotated heads take the sparse path; the axis check and every head's radius are one read
    per layer (the sparse matrix's boolean masks still size its rows on the host)."""
    counter = training_step_reads("generalized", layers=2)
    assert counter.reads <= 2, counter.reads


def test_the_reads_counter_sees_a_float_and_a_bool():
    with HostReads() as counter:
        t = torch.ones(3)
        float(t.sum()), bool(t.all()), t.tolist()
    assert counter.reads == 3
