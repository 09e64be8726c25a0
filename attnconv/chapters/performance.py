"""Ch. 13's tables of the saved attention benchmark: the machine and settings it ran on, said in
the captions of the tables they belong to (not printed apart). Everything is read from the saved
result, so the captions are the same on every machine that builds the book."""

from __future__ import annotations

from typing import Mapping

__all__ = ["machine_words", "speed_caption", "efficiency_caption"]


def machine_words(result: Mapping) -> str:
    """``x86_64 (cpu, 2 threads, torch 2.15.0)``: the machine the saved benchmark ran on."""
    m = result["machine"]
    return f"{m['device']} ({m['device_type']}, {m['threads']} threads, torch {m['torch']})"


def _settings_words(result: Mapping) -> str:
    s = result["settings"]
    overrides = s["model_overrides"]
    changed = (
        ", ".join(f"{k} {v}" for k, v in overrides.items())
        if isinstance(overrides, Mapping)
        else str(overrides)
    )
    return f"batch {s['batch_size']}, " + (
        f"model overrides: {changed}" if overrides else "no model overrides"
    )


def speed_caption(result: Mapping, number: str = "13.1") -> str:
    """Table ``number``'s caption: the speeds at the paper's settings, with the batch, any
    override of the models and the machine they were measured on."""
    return (
        f"Table {number} — Training and inference speed at the paper's settings "
        f"({_settings_words(result)}), measured on {machine_words(result)}."
    )


def efficiency_caption(result: Mapping, number: str = "13.2") -> str:
    """Table ``number``'s caption: the achieved rate, with the matrix-product rate measured in
    the same run that ``% matmul`` divides by."""
    rate = result["machine"]["matmul_gflop_per_s"]
    return (
        f"Table {number} — Achieved rate, memory and backward cost at the paper's settings; "
        f"% matmul is against the sustained float32 matrix-product rate measured in the "
        f"same run, {rate:.0f} GFLOP/s."
    )
