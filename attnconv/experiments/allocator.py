"""Training keeps the memory it frees: glibc's ``malloc`` set so that a step's large temporaries
are reused by the next step instead of being handed back to the kernel.

By default glibc serves a block larger than its mmap threshold (128 KiB at start, rising with use
to at most 32 MiB) with a fresh ``mmap`` and returns it with ``munmap`` when it is freed, and it
trims the top of its heap back to the kernel. A training step of the book's models allocates and
frees the same tensors of 3–50 MB every step, so every step may fault their pages in again: the
kernel zeroes each 4 KiB page on first touch. How many depends on the model and on the heap's
history: in the saved before/after benchmark (chapter 13, 1 thread, batch 100) from none to
18,001 page faults per step for most of the book's models and 221,586 for the ``deep`` 16-head
one, whose 52 MB intermediates are above the 32 MiB ceiling; with the setting below, at most a
handful in all but one of them (``python -m attnconv.bench --compare-with`` counts them for
each side).

:func:`retain_freed_memory` turns ``mmap`` off for ``malloc`` and raises the trim threshold, so
freed blocks stay in the heap and are reused. It changes no number the model computes, only where
its memory comes from; the process's resident memory stays near its peak instead of falling
between steps. It is called by :func:`attnconv.experiments.train.train` (and so by
``python -m attnconv.train`` and ``python -m attnconv.regenerate``). Elsewhere than Linux with
glibc it does nothing.
"""

from __future__ import annotations

import ctypes
import sys

__all__ = ["retain_freed_memory"]

# mallopt(3) parameters of glibc's malloc.h
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4

_applied = False


def retain_freed_memory(trim_threshold: int = 1 << 30) -> bool:
    """Keep freed memory in this process (module docstring): ``mallopt(M_MMAP_MAX, 0)`` and
    ``mallopt(M_TRIM_THRESHOLD, trim_threshold)``. Returns whether glibc accepted both (``False``
    where there is no glibc ``mallopt``, e.g. macOS, Windows, musl). Idempotent."""
    global _applied
    if _applied:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    _applied = (
        mallopt(_M_MMAP_MAX, 0) == 1
        and mallopt(_M_TRIM_THRESHOLD, int(trim_threshold)) == 1
    )
    return _applied
