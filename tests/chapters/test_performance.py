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


def test_in_short_box_reads_the_speed_ups_and_the_grid_from_the_result():
    from attnconv.chapters.performance import in_short_box

    row = lambda impl, x: {"implementation": impl, "train_speedup_vs_naive": x}  # noqa: E731
    result = {
        **RESULT,
        "models": {
            "quadratic": [row("naive", 1.0), row("dense", 0.97), row("local", 0.98)],
            "generalized": [row("naive", 1.0), row("local", 0.37)],
            "learned": [row("naive", 1.0), row("dense", 1.25)],
        },
        "grid": [
            {"tokens": 8, "implementation": "dense", "train_step_s": 2.0},
            {"tokens": 8, "implementation": "local", "train_step_s": 1.0},
            {"tokens": 64, "implementation": "dense", "train_step_s": 41.3},
            {"tokens": 64, "implementation": "local", "train_step_s": 2.38},
        ],
    }
    box = in_short_box(result)
    assert box.startswith("```{admonition} In short\n:class: tip result-box\n")
    assert (
        "**At 16×16 tokens** neither layer trains a Gaussian model faster than the naive "
        "one (Figure 13.1). Against the naive speed:\n"
        "  - the slowest is the generalized model's local layer, at 0.37×;\n"
        "  - the learned model, which has no Gaussian heads, gains most, at 1.25× with the "
        "dense layer.\n" in box
    )
    assert "trains 17× faster than dense at 64×64 tokens" in box
    assert "within a small factor" not in box
    # a Gaussian model's layer that gains is named, not hidden under "neither"
    quadratic = [row("naive", 1.0), row("dense", 1.1), row("local", 0.98)]
    faster = {**result["models"], "quadratic": quadratic}
    box = in_short_box({**result, "models": faster})
    assert "neither" not in box
    assert "the quadratic model's dense, trains at 1.10× the naive speed" in box
