"""Ch. 13's captions name the machine and settings of the saved benchmark (read from the result,
never from the machine that builds the book)."""

from attnconv.chapters.performance import (
    efficiency_caption,
    machine_words,
    speed_caption,
)

RESULT = {
    "machine": {
        "device": "x86_64",
        "device_type": "cpu",
        "threads": 2,
        "torch": "2.15.0",
        "matmul_gflop_per_s": 181.4,
    },
    "settings": {"batch_size": 100, "model_overrides": {}},
}


def test_machine_words():
    assert machine_words(RESULT) == "x86_64 (cpu, 2 threads, torch 2.15.0)"


def test_speed_caption_names_batch_overrides_and_machine():
    assert speed_caption(RESULT) == (
        "Table 13.1 — Training and inference speed at the paper's settings (batch 100, no "
        "model overrides), measured on x86_64 (cpu, 2 threads, torch 2.15.0)."
    )
    changed = {
        **RESULT,
        "settings": {"batch_size": 8, "model_overrides": {"hidden_size": 64}},
    }
    assert "(batch 8, model overrides: hidden_size 64)" in speed_caption(
        changed, "13.4"
    )
    assert speed_caption(changed, "13.4").startswith("Table 13.4 — ")


def test_efficiency_caption_gives_the_matmul_rate():
    got = efficiency_caption(RESULT)
    assert got.startswith("Table 13.2 — Achieved rate")
    assert got.endswith("measured in the same run, 181 GFLOP/s.")
