"""``python -m attnconv.doctor``: is this machine ready to run the book's GPU profiles?

One line per item, each ``ok``, ``--`` (not applicable here) or ``!!`` (wrong), and under a wrong
one what to do::

    python            3.11.7
    torch             2.15.0+cu132, built for CUDA 13.2
    CUDA              no GPU: torch.cuda.is_available() is False and nvidia-smi finds none
    ...

The items: the Python version; the torch build and its CUDA version; the torch version against
the tested range (:data:`LOWEST_TORCH` to :data:`PINNED_TORCH`); whether CUDA works; the NVIDIA
driver against the one the build needs; the card's compute capability against the architectures
the build has kernels for (``torch.cuda.get_arch_list()``); native bf16 support (emulation
does not count: without it training falls back to fp16 with a gradient scaler); the data root and whether
the full CIFAR-10 is there; the profile the chapters will use and whether its runs are saved.
``--download`` fetches CIFAR-10 into the data root. :func:`probe` reads the machine into a
:class:`Machine` and :func:`diagnose` judges it, so both are tested with made-up machines.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
from dataclasses import dataclass, field
from typing import List, Mapping, Optional, Sequence, Tuple

__all__ = [
    "Machine",
    "Check",
    "MIN_DRIVER",
    "TORCH_INDEX_HINT",
    "LOWEST_TORCH",
    "PINNED_TORCH",
    "probe",
    "diagnose",
    "verdict",
    "report",
    "main",
]

#: The oldest Linux NVIDIA driver each CUDA major version runs with (NVIDIA's CUDA toolkit release
#: notes, "minor version compatibility").
MIN_DRIVER = {11: "450.80.02", 12: "525.60.13", 13: "580.65.06"}
#: The lowest torch the project is tested with (pyproject.toml's ``torch>=``; ``make
#: test-lower-torch`` runs the unit tests and ``gpu_smoke --dry-run`` under it) and the pinned one
#: (requirements.txt): any torch from the one to the other is supported.
LOWEST_TORCH = "2.11"
PINNED_TORCH = "2.15.0"
#: How to install the pinned torch for another CUDA version (README, "Running the notebooks on a
#: GPU box").
TORCH_INDEX_HINT = (
    "make setup TORCH_INDEX=https://download.pytorch.org/whl/cuXYZ (a CUDA build PyTorch "
    "publishes for the pinned torch, e.g. cu126 for CUDA 12.6)"
)


@dataclass
class Machine:
    """What :func:`diagnose` needs to know, as :func:`probe` reads it."""

    python: Tuple[int, int, int]
    torch_version: str
    torch_cuda: Optional[str]  # torch.version.cuda: None for a CPU-only build
    cuda_available: bool
    arch_list: List[str] = field(default_factory=list)
    device_name: Optional[str] = None
    capability: Optional[Tuple[int, int]] = None
    bf16: Optional[bool] = (
        None  # native bf16 (what training uses; device.bf16_supported)
    )
    bf16_emulated: Optional[bool] = (
        None  # torch.cuda.is_bf16_supported() counting emulation
    )
    driver: Optional[str] = None  # from nvidia-smi
    smi_gpus: List[Tuple[str, str, Optional[Tuple[int, int]]]] = field(
        default_factory=list
    )  # (name, driver, capability) of every card nvidia-smi lists
    data_root: str = ""
    cifar10_present: bool = False
    profile: str = "cpu"
    profile_from_env: bool = False
    profile_runs: Tuple[int, int] = (0, 0)  # (saved, registered)


@dataclass
class Check:
    """One item of the report: its ``name``, what was found, ``ok`` (True, False, or None: does
    not apply here) and what to do when it is wrong."""

    name: str
    found: str
    ok: Optional[bool]
    advice: str = ""


def _nvidia_smi() -> List[Tuple[str, str, Optional[Tuple[int, int]]]]:
    """(name, driver version, compute capability) of every card ``nvidia-smi`` lists; empty when
    there is no ``nvidia-smi`` or it fails (no driver)."""
    try:
        out = subprocess.run(
            [
                "nvidia-smi",
                "--query-gpu=name,driver_version,compute_cap",
                "--format=csv,noheader",
            ],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    if out.returncode != 0:
        return []
    cards = []
    for line in out.stdout.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 2:
            continue
        cap = None
        if len(parts) > 2 and "." in parts[2]:
            major, minor = parts[2].split(".", 1)
            if major.isdigit() and minor.isdigit():
                cap = (int(major), int(minor))
        cards.append((parts[0], parts[1], cap))
    return cards


def probe(env: Optional[Mapping[str, str]] = None) -> Machine:
    """Read this machine: torch and CUDA, ``nvidia-smi``, the data root and the chapters' profile."""
    import torch

    from .experiments.data import cifar10_present, default_data_root
    from .experiments.registry import active_profile, book_runs, run_state

    env = os.environ if env is None else env
    available = bool(torch.cuda.is_available())
    cards = _nvidia_smi()
    m = Machine(
        python=tuple(sys.version_info[:3]),
        torch_version=torch.__version__,
        torch_cuda=torch.version.cuda,
        cuda_available=available,
        arch_list=list(torch.cuda.get_arch_list()) if torch.version.cuda else [],
        driver=cards[0][1] if cards else None,
        smi_gpus=cards,
    )
    if available:
        m.device_name = torch.cuda.get_device_name(0)
        m.capability = tuple(torch.cuda.get_device_capability(0))
        m.bf16 = bool(torch.cuda.is_bf16_supported(including_emulation=False))
        m.bf16_emulated = bool(torch.cuda.is_bf16_supported(including_emulation=True))
    elif cards:
        m.device_name, m.capability = cards[0][0], cards[0][2]
    root = default_data_root()
    m.data_root, m.cifar10_present = str(root), cifar10_present(root)
    m.profile = active_profile()
    m.profile_from_env = bool(env.get("ATTNCONV_PROFILE"))
    runs = book_runs(m.profile)
    m.profile_runs = (sum(run_state(e) == "present" for e in runs), len(runs))
    return m


def _torch_range_check(version: str) -> "Check":
    """The installed torch against the tested range (:data:`LOWEST_TORCH` to :data:`PINNED_TORCH`)."""
    have = _version_tuple(version.split("+")[0])[:3]
    lowest = _version_tuple(LOWEST_TORCH)
    pinned = _version_tuple(PINNED_TORCH)
    base = version.split("+")[0]
    if have[: len(lowest)] < lowest:
        found, ok = f"{base}: older than the lowest tested torch {LOWEST_TORCH}", False
    elif have == pinned:
        found, ok = f"{base}: the pinned torch", True
    else:
        found = (
            f"{base}: not the pinned {PINNED_TORCH}; torch {LOWEST_TORCH} to "
            f"{PINNED_TORCH} are tested"
            + ("" if have[:2] <= pinned[:2] else " (this one is newer: untested)")
        )
        ok = True if have[:2] <= pinned[:2] else None
    return Check(
        "torch range",
        found,
        ok,
        f"install torch >= {LOWEST_TORCH} (make setup installs the pinned {PINNED_TORCH})",
    )


def _version_tuple(v: str) -> Tuple[int, ...]:
    return tuple(int(x) for x in v.split(".") if x.isdigit())


def _arch_supported(capability: Tuple[int, int], arch_list: Sequence[str]) -> bool:
    """Whether a build with kernels for ``arch_list`` (``sm_XY`` binaries, ``compute_XY`` PTX)
    runs on a card of ``capability``: a binary of the same major version and a minor version at
    most the card's, or PTX of a capability at most the card's (compiled when first used)."""
    major, minor = capability
    for arch in arch_list:
        kind, _, num = arch.partition("_")
        if not num.isdigit() or len(num) < 2:
            continue
        a_major, a_minor = int(num[:-1]), int(num[-1])
        if kind == "sm" and a_major == major and a_minor <= minor:
            return True
        if kind == "compute" and (a_major, a_minor) <= (major, minor):
            return True
    return False


def _python_check(m: Machine) -> Check:
    """The Python version (3.11 or newer)."""
    return Check(
        "python",
        ".".join(map(str, m.python)),
        m.python[:2] >= (3, 11),
        "attnconv needs Python 3.11 or newer (torch 2.15 has no wheel for older ones): "
        "make setup PYTHON=python3.11",
    )


def _torch_build_check(m: Machine) -> Check:
    """The torch build and the CUDA version it was built for."""
    return Check(
        "torch",
        f"{m.torch_version}, "
        + (
            f"built for CUDA {m.torch_cuda}"
            if m.torch_cuda
            else "a CPU-only build (no CUDA)"
        ),
        None if not m.smi_gpus and not m.torch_cuda else bool(m.torch_cuda),
        f"this build cannot use the GPU: {TORCH_INDEX_HINT}",
    )


def _cuda_check(m: Machine) -> Check:
    """Whether CUDA works (not applicable without any card)."""
    gpu = m.smi_gpus or m.cuda_available
    if m.cuda_available:
        found = f"works: {m.device_name}"
    elif not gpu:
        found = "no GPU: torch.cuda.is_available() is False and nvidia-smi finds none"
    else:
        found = (
            f"does not work: nvidia-smi lists {m.smi_gpus[0][0]}, torch cannot use it"
        )
    return Check(
        "CUDA",
        found,
        True if m.cuda_available else (None if not gpu else False),
        "see the driver and architecture lines below",
    )


def _driver_check(m: Machine, cuda_major: Optional[int]) -> Check:
    """The NVIDIA driver against the oldest one the build's CUDA major version runs with."""
    if m.driver is None:
        return Check(
            "driver",
            "none (nvidia-smi absent or failing)",
            None if not m.cuda_available else True,
            "install the NVIDIA driver",
        )
    need = MIN_DRIVER.get(cuda_major) if cuda_major else None
    ok = need is None or _version_tuple(m.driver) >= _version_tuple(need)
    return Check(
        "driver",
        m.driver + (f" (CUDA {m.torch_cuda} needs {need} or newer)" if need else ""),
        ok,
        f"update the NVIDIA driver to {need} or newer, or install a torch build for "
        f"an older CUDA that this driver runs: {TORCH_INDEX_HINT}",
    )


def _architecture_check(m: Machine) -> Check:
    """The card's compute capability against the architectures the build has kernels for."""
    if m.capability is None:
        return Check("architecture", "no card", None)
    cap = f"{m.capability[0]}.{m.capability[1]}"
    ok = _arch_supported(m.capability, m.arch_list) if m.torch_cuda else False
    return Check(
        "architecture",
        f"compute capability {cap}; the build has kernels for "
        f"{' '.join(m.arch_list) or 'none'}",
        ok,
        f"this torch build has no kernels for sm_{cap.replace('.', '')}: install a "
        f"build that has them: {TORCH_INDEX_HINT}",
    )


def _bf16_check(m: Machine) -> Check:
    """Native bf16 support (emulation does not count)."""
    if m.bf16 is None:
        return Check("bf16", "no CUDA card to ask", None)
    found = "supported natively: training uses bf16 autocast"
    if not m.bf16:
        found = (
            "emulated only" if m.bf16_emulated else "not supported by this card"
        ) + ": training uses fp16 autocast with a gradient scaler instead"
    return Check(
        "bf16",
        found,
        m.bf16,
        "the gpu and paper profiles are meant for bf16 autocast, which needs compute "
        "capability 8.0 or newer (A100, RTX 30xx, H100 and later); on this card "
        "they run in fp16 with loss scaling (attnconv.experiments.device)",
    )


def _data_check(m: Machine) -> Check:
    """The data root and whether the full CIFAR-10 is there."""
    return Check(
        "data",
        f"{m.data_root}: "
        + (
            "the full CIFAR-10 is there"
            if m.cifar10_present
            else "no full CIFAR-10 (runs of the gpu and paper profiles would "
            "download it, or fall back to the 5,085-image sample)"
        ),
        True if m.cifar10_present else (None if m.profile == "cpu" else False),
        "python -m attnconv.doctor --download fetches it (170 MB), or copy the folder "
        "cifar-10-batches-py there, or set ATTNCONV_DATA_ROOT to where it is",
    )


def _profile_check(m: Machine) -> Check:
    """The profile the chapters will use and how many of its runs are saved."""
    saved, registered = m.profile_runs
    why = (
        "ATTNCONV_PROFILE"
        if m.profile_from_env
        else "the default: " + ("CUDA works" if m.cuda_available else "no CUDA")
    )
    command = f"python -m attnconv.regenerate --only '{m.profile}/*'"
    # runs not trained yet are work to do, not a fault of the machine
    return Check(
        "profile",
        f"the chapters use {m.profile} ({why}); {saved} of its {registered} runs saved"
        + ("" if saved == registered else f" (to make them: {command})"),
        True if saved == registered else None,
        f"make them with: {command} (or read the book's committed runs: "
        "ATTNCONV_PROFILE=cpu)",
    )


def diagnose(m: Machine) -> List[Check]:
    """The report's items for the machine ``m``."""
    cuda_major = int(m.torch_cuda.split(".")[0]) if m.torch_cuda else None
    return [
        _python_check(m),
        _torch_build_check(m),
        _torch_range_check(m.torch_version),
        _cuda_check(m),
        _driver_check(m, cuda_major),
        _architecture_check(m),
        _bf16_check(m),
        _data_check(m),
        _profile_check(m),
    ]


def verdict(m: Machine, checks: Sequence[Check]) -> str:
    """One closing line: what is wrong, or what this machine is ready for."""
    wrong = [c.name for c in checks if c.ok is False]
    if wrong:
        return f"to fix: {', '.join(wrong)} (what to do is under each)"
    if not m.cuda_available:
        return (
            "no GPU: the chapters read the committed cpu runs; the gpu and paper profiles "
            "need a CUDA machine"
        )
    return (
        "ready: python -m attnconv.regenerate --only 'paper/*' trains the paper's runs, then "
        "ATTNCONV_PROFILE=paper for the chapters"
    )


def report(checks: Sequence[Check], m: Optional[Machine] = None) -> str:
    """The report as text: one line per item, the advice under each wrong one, and the
    :func:`verdict` when the machine ``m`` is given."""
    mark = {True: "ok", False: "!!", None: "--"}
    lines = []
    for c in checks:
        lines.append(f"{mark[c.ok]} {c.name:<13}{c.found}")
        if c.ok is False and c.advice:
            lines.append(f"   {'':<13}-> {c.advice}")
    if m is not None:
        lines.append(verdict(m, checks))
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnconv.doctor", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--download",
        action="store_true",
        help="download the full CIFAR-10 into the data root if it is not there",
    )
    args = parser.parse_args(argv)
    if args.download:
        from .experiments.data import fetch_cifar10

        try:
            print(f"CIFAR-10 is in {fetch_cifar10()}")
        except RuntimeError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    print(f"attnconv doctor ({platform.platform()})")
    machine = probe()
    print(report(diagnose(machine), machine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
