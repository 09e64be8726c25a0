"""Every device decision of training in one place: which device, which precision, RNG state,
constants kept on the device, and the line that says so.

* :func:`select_device` — ``cuda`` when available, else ``cpu`` (or the name asked for).
* :class:`Precision` / :func:`resolve_precision` — fp32, bf16 autocast, or fp16 autocast with a
  gradient scaler where the card has no bf16. Autocast is device-generic: bf16 on the CPU runs the
  same code path as bf16 on CUDA (``torch.autocast(device.type, …)``), which is how the CUDA path
  is tested without a GPU.
* :func:`rng_state` / :func:`set_rng_state` — the CPU, Python and NumPy generators and the
  *current* CUDA device's generator only: a checkpoint of a 4-GPU job resumes with fewer GPUs.
* :func:`on_device` — a constant (CIFAR-10 mean and std, index tables) made once per device, so
  that a training step never copies it from the host again.
* :func:`start_line` — "device cuda:0 (NVIDIA H100 80GB HBM3), bf16 autocast" / "device cpu, fp32".
* :func:`check_profile_device` — ``--profile paper|gpu`` without CUDA is refused unless the CPU is
  asked for explicitly.
* :class:`HostValue` — a device scalar read on the host later, without stalling the device queue.
"""

from __future__ import annotations

import random
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple

import numpy as np
import torch

__all__ = [
    "PRECISIONS",
    "GPU_PROFILES",
    "select_device",
    "cuda_available",
    "gpu_count",
    "use_device",
    "synchronize",
    "sync_warnings",
    "bf16_supported",
    "Precision",
    "fp32_everywhere",
    "resolve_precision",
    "rng_state",
    "set_rng_state",
    "on_device",
    "device_name",
    "start_line",
    "check_profile_device",
    "HostValue",
    "PEAK_BF16_FLOPS",
    "peak_bf16_flops",
]

#: Precisions a run can ask for (``TrainConfig.precision``); ``None`` means the default: bf16
#: autocast on CUDA (``TrainConfig.bf16``), fp32 on the CPU.
PRECISIONS = ("fp32", "bf16", "fp16")
#: Profiles sized for a GPU: refused on a machine without CUDA unless ``--device cpu`` is given.
GPU_PROFILES = ("paper", "gpu", "gpu-sample")

_AUTOCAST_DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


def cuda_available() -> bool:
    """Whether CUDA works here (the one place the package asks)."""
    return torch.cuda.is_available()


def gpu_count() -> int:
    """CUDA devices visible to this process (0 without CUDA)."""
    return torch.cuda.device_count() if cuda_available() else 0


def use_device(device: torch.device) -> None:
    """Make ``device`` the current CUDA device (a no-op on the CPU)."""
    if device.type == "cuda":
        torch.cuda.set_device(device)


def synchronize(device: torch.device) -> None:
    """Wait for ``device``'s queued work (for timing only; a no-op on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@contextmanager
def sync_warnings(device: torch.device):
    """CUDA's sync debug mode at "warn" inside (every host synchronisation warns); nothing on
    the CPU."""
    if device.type != "cuda":
        yield
        return
    torch.cuda.set_sync_debug_mode("warn")
    try:
        yield
    finally:
        torch.cuda.set_sync_debug_mode("default")


def select_device(name: Optional[str] = None) -> torch.device:
    """``name`` if given, else CUDA (the current CUDA device) when available, else the CPU."""
    if name:
        return torch.device(name)
    return torch.device("cuda" if cuda_available() else "cpu")


def bf16_supported(device: torch.device) -> bool:
    """bf16 autocast works on ``device``: always on the CPU; on CUDA from compute capability 8.0."""
    if device.type != "cuda":
        return True
    return bool(torch.cuda.is_bf16_supported(including_emulation=False))


@dataclass(frozen=True)
class Precision:
    """How a step computes: ``name`` is ``fp32``, ``bf16`` or ``fp16`` (autocast dtype), on
    ``device``; ``fallback`` says why it is not what was asked for (empty when it is)."""

    device: torch.device
    name: str = "fp32"
    fallback: str = ""

    @property
    def dtype(self) -> Optional[torch.dtype]:
        """The autocast dtype (``None`` for fp32)."""
        return _AUTOCAST_DTYPES[self.name]

    @property
    def uses_scaler(self) -> bool:
        """fp16 needs loss scaling (its exponent range underflows gradients); bf16 does not."""
        return self.name == "fp16"

    def autocast(self):
        """The autocast context of this precision (a no-op context for fp32)."""
        if self.dtype is None:
            return nullcontext()
        return torch.autocast(self.device.type, dtype=self.dtype)

    def grad_scaler(self) -> Optional[torch.amp.GradScaler]:
        """A :class:`torch.amp.GradScaler` for fp16, else ``None``. Its ``step`` synchronises
        the host with the device once per training step (it reads whether the gradients hold an
        inf/NaN before it lets the optimizer step): the fp16 path has one host sync per step
        that the bf16 and fp32 paths do not."""
        return torch.amp.GradScaler(self.device.type) if self.uses_scaler else None

    def describe(self) -> str:
        """``fp32`` or ``bf16 autocast`` (with the fallback's reason)."""
        text = "fp32" if self.dtype is None else f"{self.name} autocast"
        return f"{text} ({self.fallback})" if self.fallback else text


#: Set by :func:`fp32_everywhere`: runs whose config leaves the precision to the device compute in
#: fp32 on CUDA too (TF32 off), the CPU's arithmetic, so a GPU can make a CPU-profile run of the
#: same settings (``python -m attnconv.regenerate --fp32``).
_FP32_EVERYWHERE = False
#: The TF32 flags (matmul, cuDNN) before :func:`fp32_everywhere` switched them off, restored by
#: ``fp32_everywhere(False)``; None while fp32 is not forced.
_TF32_BEFORE: Optional[Tuple[bool, bool]] = None


def fp32_everywhere(on: bool = True) -> None:
    """Make the device's default precision fp32 on every device (TF32 matmuls and convolutions
    off) for the rest of the process, or restore bf16 autocast as CUDA's default and the TF32
    flags as they were before the first ``fp32_everywhere(True)``."""
    global _FP32_EVERYWHERE, _TF32_BEFORE
    flags = torch.backends.cuda.matmul, torch.backends.cudnn
    if on and _TF32_BEFORE is None:
        _TF32_BEFORE = (flags[0].allow_tf32, flags[1].allow_tf32)
    if on:
        flags[0].allow_tf32 = flags[1].allow_tf32 = False
    elif _TF32_BEFORE is not None:
        flags[0].allow_tf32, flags[1].allow_tf32 = _TF32_BEFORE
        _TF32_BEFORE = None
    _FP32_EVERYWHERE = bool(on)


def resolve_precision(
    device: torch.device, bf16: bool = True, precision: Optional[str] = None
) -> Precision:
    """The precision a run computes in on ``device``.

    ``precision`` ``None`` (every saved run): bf16 autocast on CUDA when ``bf16`` (fp32 after
    :func:`fp32_everywhere`), fp32 elsewhere — the CPU's numbers never change. ``"bf16"`` asks for
    bf16 autocast on any device (the CPU runs the CUDA code path); on a card without bf16 it falls
    back to fp16 with a gradient scaler.
    """
    if precision is None:
        cuda_bf16 = device.type == "cuda" and bf16 and not _FP32_EVERYWHERE
        precision = "bf16" if cuda_bf16 else "fp32"
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision == "bf16" and not bf16_supported(device):
        return Precision(device, "fp16", "no bf16 on this card: fp16 with loss scaling")
    return Precision(device, precision)


def _cuda_index(device: torch.device) -> int:
    return device.index if device.index is not None else torch.cuda.current_device()


def rng_state(device: torch.device) -> dict:
    """The random generators' states: CPU torch, Python, NumPy, and on CUDA the generator of
    ``device`` alone (``cuda_device``), so that the state fits a job with any number of GPUs."""
    state = {
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "numpy": np.random.get_state(),
    }
    if device.type == "cuda":
        state["cuda_device"] = torch.cuda.get_rng_state(_cuda_index(device))
    return state


def set_rng_state(state: dict, device: torch.device) -> None:
    """Restore :func:`rng_state`'s states; only ``device``'s CUDA generator is set. A checkpoint
    of the older format (``cuda``: one state per GPU visible then) gives ``device`` the state of
    the GPU of the same index, or of the last one when this machine has more GPUs than it had."""
    torch.set_rng_state(state["torch"].cpu())
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    if device.type != "cuda":
        return
    own = state.get("cuda_device")
    if own is None and state.get("cuda"):
        saved = state["cuda"]
        own = saved[min(_cuda_index(device), len(saved) - 1)]
    if own is not None:
        torch.cuda.set_rng_state(own.cpu(), _cuda_index(device))


_CONSTANTS: Dict[Tuple[str, str], torch.Tensor] = {}


def on_device(
    key: str, device: torch.device, make: Callable[[], torch.Tensor]
) -> torch.Tensor:
    """The constant ``key`` on ``device``: ``make()`` (a CPU tensor) copied there the first time,
    the same tensor afterwards. Never modify the result in place."""
    slot = (key, str(torch.device(device)))
    if slot not in _CONSTANTS:
        _CONSTANTS[slot] = make().to(device)
    return _CONSTANTS[slot]


def device_name(device: torch.device) -> str:
    """``cuda:0 (NVIDIA H100 80GB HBM3)`` or ``cpu``."""
    if device.type != "cuda":
        return str(device)
    index = _cuda_index(device)
    return f"cuda:{index} ({torch.cuda.get_device_name(index)})"


#: Dense bf16 peak FLOP/s by exact card name (``torch.cuda.get_device_name``; NVIDIA's data
#: sheets), for the MFU. An H100 PCIe or NVL is not an SXM card, and an L40 is not an L4: a name
#: not in the table has no MFU.
PEAK_BF16_FLOPS = {
    "NVIDIA H100 80GB HBM3": 989e12,  # SXM
    "NVIDIA H100 PCIe": 756e12,
    "NVIDIA H100 NVL": 835e12,
    "NVIDIA H200": 989e12,  # SXM
    "NVIDIA H200 NVL": 835e12,
    "NVIDIA A100-SXM4-80GB": 312e12,
    "NVIDIA A100-SXM4-40GB": 312e12,
    "NVIDIA A100-PCIE-40GB": 312e12,
    "NVIDIA A100 80GB PCIe": 312e12,
    "NVIDIA L40S": 362e12,
    "NVIDIA L40": 181e12,
    "NVIDIA L4": 121e12,
}


def peak_bf16_flops(name: str) -> Optional[float]:
    """The dense bf16 peak of the card called ``name`` (a card's name, or :func:`device_name`'s
    ``cuda:0 (<card>)``), matched exactly; None for a card not in :data:`PEAK_BF16_FLOPS`."""
    if name.endswith(")") and " (" in name:
        name = name[name.index(" (") + 2 : -1]
    return PEAK_BF16_FLOPS.get(name.strip())


def start_line(precision: Precision) -> str:
    """The line a run starts with: "device cuda:0 (NVIDIA …), bf16 autocast" / "device cpu, fp32"."""
    return f"device {device_name(precision.device)}, {precision.describe()}"


def check_profile_device(profile: str, device: Optional[str]) -> Optional[str]:
    """Why ``profile`` cannot run here (one line), or ``None``: the GPU profiles (paper, gpu)
    need CUDA unless the CPU is asked for (``--device cpu``)."""
    if profile not in GPU_PROFILES or cuda_available():
        return None
    if device is not None and torch.device(device).type == "cpu":
        return None
    return (
        f"the {profile} profile is sized for a GPU and torch sees no CUDA device here "
        f"(torch {torch.__version__}, CUDA build {torch.version.cuda or 'none'}); "
        "check the driver with `python -m attnconv.doctor`, or add --device cpu to train it "
        "on the CPU anyway (days)."
    )


class HostValue:
    """A scalar of the device, read on the host later without a device-wide wait: on CUDA it is
    copied to pinned memory behind an event (:meth:`ready` asks the event, :meth:`get` waits for
    that event only); on the CPU it is the value itself.

    The copy is queued on the value's own device's current stream, and the event recorded on
    that same stream, whichever CUDA device is current in the process (``--device cuda:1`` in a
    single process leaves ``cuda:0`` current): an event on another device's stream would say
    "ready" before the copy has landed."""

    def __init__(self, value: torch.Tensor):
        value = value.detach()
        if value.device.type == "cuda":
            self._host = torch.empty(
                value.shape, dtype=value.dtype, device="cpu", pin_memory=True
            )
            stream = torch.cuda.current_stream(value.device)
            with torch.cuda.stream(stream):
                self._host.copy_(value, non_blocking=True)
            self._event = torch.cuda.Event()
            self._event.record(stream)
        else:
            self._host, self._event = value, None

    def ready(self) -> bool:
        """The value has arrived (always on the CPU)."""
        return self._event is None or self._event.query()

    def get(self) -> torch.Tensor:
        """The value on the host (waits for its own copy only)."""
        if self._event is not None:
            self._event.synchronize()
        return self._host
