"""``python -m attnconv.doctor``: judged on made-up machines (a good GPU box, an old driver, an
old card, no GPU), its probe with torch's CUDA calls mocked, and run here, where it says "no GPU"."""

import subprocess
import sys

import pytest
import torch

from attnconv import doctor
from attnconv.doctor import Machine, diagnose, report

ARCHS = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]


def machine(**changes) -> Machine:
    """A good box: an H100 with a recent driver, the pinned torch's CUDA 13.2 build, CIFAR-10
    downloaded, the paper profile chosen and trained."""
    base = dict(
        python=(3, 11, 7),
        torch_version="2.15.0+cu132",
        torch_cuda="13.2",
        cuda_available=True,
        arch_list=ARCHS,
        device_name="NVIDIA H100 80GB HBM3",
        capability=(9, 0),
        bf16=True,
        driver="580.95.05",
        smi_gpus=[("NVIDIA H100 80GB HBM3", "580.95.05", (9, 0))],
        data_root="/data/cifar10",
        cifar10_present=True,
        profile="paper",
        profile_from_env=True,
        profile_runs=(6, 6),
    )
    return Machine(**{**base, **changes})


def by_name(m):
    return {c.name: c for c in diagnose(m)}


def test_a_good_box_is_ready():
    m = machine()
    checks = by_name(m)
    assert all(c.ok for c in checks.values()), report(diagnose(m))
    text = report(diagnose(m), m)
    assert "13.2" in checks["torch"].found and "H100" in checks["CUDA"].found
    assert "compute capability 9.0" in checks["architecture"].found
    assert "->" not in text and text.splitlines()[-1].startswith("ready:")


def test_an_old_driver_is_named_with_the_fix():
    # the driver cannot run CUDA 13: torch sees no GPU although nvidia-smi lists the card
    m = machine(
        cuda_available=False,
        driver="535.104.05",
        smi_gpus=[("NVIDIA A100-SXM4-40GB", "535.104.05", (8, 0))],
        device_name="NVIDIA A100-SXM4-40GB",
        capability=(8, 0),
        bf16=None,
        profile="gpu",
        profile_from_env=False,
        profile_runs=(0, 6),
    )
    checks = by_name(m)
    assert checks["CUDA"].ok is False and "torch cannot use it" in checks["CUDA"].found
    assert checks["driver"].ok is False
    assert "needs 580.65.06 or newer" in checks["driver"].found
    assert "TORCH_INDEX=" in checks["driver"].advice
    text = report(diagnose(m), m)
    assert "-> update the NVIDIA driver to 580.65.06" in text
    assert text.splitlines()[-1].startswith("to fix: CUDA, driver")
    # the same card with a driver for CUDA 12 and a cu126 build is fine
    ok = machine(torch_cuda="12.6", driver="535.104.05", capability=(8, 0))
    assert by_name(ok)["driver"].ok


def test_an_old_card_is_not_in_the_wheel():
    m = machine(
        device_name="Tesla V100-SXM2-16GB", capability=(7, 0), bf16=False
    )  # sm_70: no kernels in a build for sm_75 and newer
    checks = by_name(m)
    assert (
        checks["architecture"].ok is False and "sm_70" in checks["architecture"].advice
    )
    assert checks["bf16"].ok is False and "8.0" in checks["bf16"].advice
    # same major, higher minor: sm_86 binaries run on 8.9; PTX runs on newer cards
    assert by_name(machine(capability=(8, 9)))["architecture"].ok
    assert by_name(machine(capability=(12, 1)))["architecture"].ok
    assert not by_name(machine(capability=(7, 0), arch_list=["sm_80"]))[
        "architecture"
    ].ok


def test_no_gpu_and_a_cpu_build():
    m = machine(
        torch_version="2.15.0+cpu",
        torch_cuda=None,
        cuda_available=False,
        arch_list=[],
        device_name=None,
        capability=None,
        bf16=None,
        driver=None,
        smi_gpus=[],
        cifar10_present=False,
        profile="cpu",
        profile_from_env=False,
    )
    checks = by_name(m)
    assert checks["CUDA"].found.startswith("no GPU")
    assert all(c.ok is not False for c in checks.values())
    assert report(diagnose(m), m).splitlines()[-1].startswith("no GPU:")
    # asking for the paper profile on it: the data and the runs are missing, each with a fix
    paper = by_name(
        machine(**{**m.__dict__, "profile": "paper", "profile_runs": (0, 6)})
    )
    assert paper["data"].ok is False and "--download" in paper["data"].advice
    # runs not trained yet are work to do, not a fault: '--', with the command on the line
    assert paper["profile"].ok is None
    assert "regenerate --only 'paper/*'" in paper["profile"].found
    assert by_name(machine(python=(3, 10, 12)))["python"].ok is False


def test_probe_reads_torch_and_nvidia_smi(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: "NVIDIA L4")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i=0: (8, 9))
    monkeypatch.setattr(
        torch.cuda, "is_bf16_supported", lambda including_emulation=True: True
    )
    monkeypatch.setattr(torch.cuda, "get_arch_list", lambda: ARCHS)
    monkeypatch.setattr(
        doctor, "_nvidia_smi", lambda: [("NVIDIA L4", "580.82.07", (8, 9))]
    )
    monkeypatch.delenv("ATTNCONV_PROFILE", raising=False)
    m = doctor.probe()
    assert (m.device_name, m.capability, m.bf16, m.driver) == (
        "NVIDIA L4",
        (8, 9),
        True,
        "580.82.07",
    )
    assert m.profile == "gpu" and not m.profile_from_env  # CUDA works: the default
    assert by_name(m)["architecture"].ok


def test_nvidia_smi_output_is_parsed(monkeypatch):
    class Done:
        returncode = 0
        stdout = "NVIDIA H100 80GB HBM3, 580.95.05, 9.0\nTesla V100-SXM2-16GB, 580.95.05, 7.0\n"

    monkeypatch.setattr(doctor.subprocess, "run", lambda *a, **k: Done())
    assert doctor._nvidia_smi() == [
        ("NVIDIA H100 80GB HBM3", "580.95.05", (9, 0)),
        ("Tesla V100-SXM2-16GB", "580.95.05", (7, 0)),
    ]

    def missing(*a, **k):
        raise FileNotFoundError("nvidia-smi")

    monkeypatch.setattr(doctor.subprocess, "run", missing)
    assert doctor._nvidia_smi() == []


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_doctor_runs_here_and_says_no_gpu():
    out = subprocess.run(
        [sys.executable, "-m", "attnconv.doctor"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "no GPU" in out.stdout and "torch" in out.stdout and "data" in out.stdout


def test_emulated_bf16_is_reported_as_the_fp16_that_training_uses(monkeypatch):
    """A T4 (compute capability 7.5): ``torch.cuda.is_bf16_supported()`` counts emulation and
    says True, but training falls back to fp16 with a gradient scaler (device.bf16_supported
    asks without emulation). The doctor must say fp16 (the bug: it said "supported")."""
    from attnconv.experiments.device import bf16_supported, resolve_precision

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: "Tesla T4")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i=0: (7, 5))
    monkeypatch.setattr(
        torch.cuda,
        "is_bf16_supported",
        lambda including_emulation=True: including_emulation,
    )
    monkeypatch.setattr(torch.cuda, "get_arch_list", lambda: ARCHS)
    monkeypatch.setattr(
        doctor, "_nvidia_smi", lambda: [("Tesla T4", "580.82.07", (7, 5))]
    )
    monkeypatch.setenv("ATTNCONV_PROFILE", "cpu")
    m = doctor.probe()
    cuda = torch.device("cuda")
    assert not bf16_supported(cuda) and resolve_precision(cuda, True).name == "fp16"
    assert m.bf16 is False and m.bf16_emulated is True
    check = by_name(m)["bf16"]
    assert check.ok is False and "emulated only" in check.found
    assert "fp16" in check.found


def test_the_torch_range_is_the_tested_one():
    """The doctor's range, pyproject.toml's lowest torch, the Makefile's lower-torch venv and
    requirements.txt's pin say the same versions; a torch in the range is fine, an older one is
    named with the fix."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    pyproject = (root / "pyproject.toml").read_text()
    assert f'"torch>={doctor.LOWEST_TORCH}"' in pyproject
    assert f"torch=={doctor.PINNED_TORCH}" in (root / "requirements.txt").read_text()
    assert f"LOWER_TORCH := {doctor.LOWEST_TORCH}." in (root / "Makefile").read_text()
    for version, ok in [
        ("2.15.0+cu132", True),
        ("2.11.0+cu130", True),
        ("2.13.1", True),
        ("2.10.0", False),
        ("2.1.2+cu121", False),
        ("2.16.0", None),
    ]:
        check = by_name(machine(torch_version=version))["torch range"]
        assert check.ok is ok, (version, check)
    assert "2.11" in by_name(machine(torch_version="2.11.0"))["torch range"].found
