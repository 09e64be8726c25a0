"""CPU bf16 autocast with CUDA's autocast rules where the two differ in this project's models: the
CPU stand-in of a CUDA bf16 step (the CPU runs the same code path; these rules give it CUDA's
dtypes).

* ``layer_norm``: CUDA's autocast lists it among the ops that run in fp32 — its inputs are cast
  to fp32 and its output is fp32 — where CPU autocast runs it in bf16. So on CUDA the hidden
  state between layers is fp32, and the attention of layers 2-6 gets fp32 values.
  (``tests/core/test_autocast.py`` checks this rule against fake CUDA tensors under CUDA
  autocast.)
"""

import contextlib
from unittest import mock

import torch

_LAYER_NORM = torch.nn.functional.layer_norm


def _fp32_layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """``F.layer_norm`` as CUDA autocast runs it: fp32 in, fp32 out (as is without autocast)."""
    if not torch.is_autocast_enabled(input.device.type):
        return _LAYER_NORM(input, normalized_shape, weight, bias, eps)
    wide = [None if t is None else t.float() for t in (weight, bias)]
    with torch.autocast(input.device.type, enabled=False):
        return _LAYER_NORM(input.float(), normalized_shape, *wide, eps)


@contextlib.contextmanager
def cuda_autocast_rules():
    """Inside, CPU autocast follows CUDA's rules listed in the module docstring (autocast itself
    is switched on by the caller: ``torch.autocast("cpu", dtype=torch.bfloat16)`` or a config
    with ``precision="bf16"``)."""
    with mock.patch("torch.nn.functional.layer_norm", _fp32_layer_norm):
        yield
