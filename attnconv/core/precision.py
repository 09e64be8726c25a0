"""Autocast switched off where a computation must keep its own precision (position scores, the
custom autograd functions of attention), for whatever device autocast runs on."""

from __future__ import annotations

from contextlib import nullcontext

import torch

__all__ = ["autocast_off"]

_AUTOCAST_DEVICES = ("cpu", "cuda")


def autocast_off(device_type: str):
    """A context with autocast off for ``device_type`` when it is on there, else a no-op
    (also for devices without autocast, such as ``meta``)."""
    if device_type in _AUTOCAST_DEVICES and torch.is_autocast_enabled(device_type):
        return torch.autocast(device_type, enabled=False)
    return nullcontext()
