"""retain_freed_memory: freed blocks are reused instead of being faulted in again (page-fault
counts of the kernel as the oracle), and nothing the model computes changes."""

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="glibc's mallopt"
)

SCRIPT = textwrap.dedent("""
    import resource, sys, torch
    from attnconv.experiments.allocator import retain_freed_memory
    if sys.argv[1] == "retain":
        assert retain_freed_memory() and retain_freed_memory()  # accepted, and idempotent
    def faults():
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(3):  # warm-up: the heap grows to hold the block (two rounds here)
        x = torch.ones(64 << 18)  # 64 MiB, above glibc's largest mmap threshold (32 MiB)
        del x
    start = faults()
    for _ in range(10):
        x = torch.ones(64 << 18)
        del x
    print(faults() - start)
""")


def _faults(mode: str) -> int:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, check=True
    )
    return int(out.stdout.split()[-1])


def test_freed_blocks_are_reused_instead_of_faulted_in_again():
    pages = 10 * (64 << 20) // 4096  # ten 64 MiB tensors, 4 KiB pages
    assert _faults("default") >= 0.9 * pages  # glibc maps each one afresh
    assert (
        _faults("retain") <= 0.2 * pages
    )  # the same memory, reused (seen: 0, at times one block again)


def test_training_numbers_do_not_depend_on_it():
    script = textwrap.dedent("""
        import sys, torch, torch.nn.functional as F
        from attnconv.experiments.allocator import retain_freed_memory
        from attnconv.experiments.models import build_model
        if sys.argv[1] == "retain":
            retain_freed_memory()
        torch.manual_seed(0)
        net = build_model("quadratic", hidden_size=16, intermediate_size=16, num_layers=1, num_heads=4, downsample=4)
        loss = F.cross_entropy(net(torch.randn(8, 3, 32, 32)), torch.arange(8))
        loss.backward()
        print(repr(float(loss)), repr(float(sum(p.grad.abs().sum() for p in net.parameters()))))
    """)
    outs = [
        subprocess.run(
            [sys.executable, "-c", script, m],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for m in ("default", "retain")
    ]
    assert outs[0] == outs[1]
