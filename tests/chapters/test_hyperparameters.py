"""Tests of attnconv.chapters.hyperparameters: Table 2 of the paper against the profiles. Oracles:
the numbers of Table 2 typed from arXiv v1 App. A.4 here, and the profiles' own configs."""

import re

import pytest
import torch

from attnconv.chapters import hyperparameters as hp
from attnconv.chapters.hyperparameters import (
    NOTE_GROUPS,
    SAME_AS_PAPER,
    profile_values,
    table2_markdown,
    table2_notes,
    table2_rows,
)
from attnconv.experiments.models import SelfAttentionConfig, build_model
from attnconv.experiments.paper_numbers import PAPER_TABLE2
from attnconv.experiments.profiles import get_profile
from attnconv.experiments.train_config import TrainConfig


def test_table2_is_what_the_defaults_build():
    """Table 2 read off the paper-size model and the training defaults themselves (not through
    :func:`profile_values`): a change to either, or to the typed table, fails here."""
    mc, tc = SelfAttentionConfig(), TrainConfig()
    with torch.device("meta"):
        model = build_model(mc)
    layers = model.layers
    built = {
        "number of layers": len(layers),
        "number of heads": layers[0].attention.num_heads,
        "hidden dimension": mc.hidden_size,
        "intermediate dimension": mc.intermediate_size,
        "invertible pooling width": mc.downsample,
        "dropout probability": mc.hidden_dropout,
        "layer normalization epsilon": mc.layer_norm_eps,
        "number of epochs": tc.epochs,
        "batch size": tc.batch_size,
        "learning rate": tc.lr,
        "weight decay": tc.weight_decay,
        "momentum": tc.momentum,
        "cosine decay": "yes" if tc.schedule == "warmup_cosine" else "no",
        "linear warm up ratio": tc.warmup_fraction,
    }
    assert built == PAPER_TABLE2


def test_a_profile_off_table2_is_marked(monkeypatch):
    """A setting a profile does not share with Table 2 is marked ✗ with its reason."""
    table = {**PAPER_TABLE2, "momentum": 0.5}
    monkeypatch.setattr(hp, "PAPER_TABLE2", table)
    rows = {r["name"]: r for r in table2_rows(("paper",))}
    assert rows["momentum"]["profiles"]["paper"]["matches"] is False
    assert rows["batch size"]["profiles"]["paper"]["matches"] is True
    line = next(
        x for x in table2_markdown(list(rows.values())).splitlines() if "momentum" in x
    )
    assert "✗" in line


def test_paper_profile_matches_table2_and_cpu_deviations_are_marked():
    rows = {r["name"]: r for r in table2_rows()}
    for name in PAPER_TABLE2:
        assert rows[name]["profiles"]["paper"]["matches"], name
    cpu = {n: r["profiles"]["cpu"] for n, r in rows.items()}
    deviating = {n for n, c in cpu.items() if c["matches"] is False}
    assert {
        "number of layers",
        "hidden dimension",
        "intermediate dimension",
        "invertible pooling width",
        "number of epochs",
        "positional learning rate",
        "training images",
    } <= deviating
    assert all(cpu[n]["reason"] for n in deviating)  # every deviation says why
    assert (
        cpu["positional learning rate"]["value"]
        == 0.1 * get_profile("cpu").attention_lr_multiplier
    )
    assert (
        profile_values("gpu")["number of epochs"]
        == get_profile("gpu").epochs["quadratic"]
    )
    paper = profile_values("paper")
    assert (paper["learned dims per axis"], paper["learned tables"]) == (400, 6)
    assert profile_values("cpu")["training images"] == "5,085"
    text = table2_markdown(table2_rows())
    assert text.count("\n") == len(rows) + 1 and "| 6 | 6 | 6 | 2\u00a0✗ |" in text


def test_the_table_is_compact_and_its_notes_say_why():
    """Every cell of the table is a few words; each reason is in a numbered note, and the row
    carries the note's number as a footnote mark."""
    rows = table2_rows()
    table, notes = table2_markdown(rows), table2_notes(rows)
    lines = table.splitlines()
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    assert head[:2] == ["setting", "paper (v1)"] and head[2] == "`paper`<br>profile"
    assert len(set(head)) == len(head)  # no two columns share a header
    # the cells as the reader sees them: a no-wrap span's tags are not text
    shown = re.sub(r"</?span[^>]*>", "", "\n".join(lines[2:])).splitlines()
    body = [[c.strip() for c in line.strip("|").split("|")] for line in shown]
    assert all(len(r[0].strip("*⁰¹²³⁴⁵⁶⁷⁸⁹")) <= 28 for r in body)  # short settings
    assert all(len(c) <= 11 for r in body for c in r[1:])  # values: a word or two
    # the notes come in groups, each a bold heading and its reason, then its numbered items
    assert [g for g in NOTE_GROUPS if f"**{g}**" in notes] == list(NOTE_GROUPS)
    items = [x for x in notes.splitlines() if re.match(r"\d+\. ", x)]
    noted = [
        r for r in rows if any(c["matches"] is False for c in r["profiles"].values())
    ]
    assert len(items) >= len(noted)
    for i, item in enumerate(items, start=1):
        assert item.startswith(f"{i}. **")
        name = item.split("**")[1].rstrip(".")
        mark = str(i).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))
        assert [r[0] for r in body if r[0].strip("*⁰¹²³⁴⁵⁶⁷⁸⁹") == name] in (
            [name + mark],
            [f"*{name}*{mark}"],
        )
    # every deviation's reason is in its row's note
    for r in noted:
        item = next(x for x in items if f"**{r['name']}.**" in x)
        for p, c in r["profiles"].items():
            if c["matches"] is False:
                assert c["reason"] and f"`{p}`" in item
                # a profile that only follows the paper profile is listed with it
                assert c["reason"] in item or (
                    c["reason"] == SAME_AS_PAPER and "`paper`" in item
                )
    assert f": {SAME_AS_PAPER}." not in notes


def test_profile_scale_reads_the_configs():
    from attnconv.chapters.hyperparameters import profile_scale

    paper = profile_scale(
        "paper"
    )  # the paper's Table 2: 300 epochs, 6 layers, hidden 400
    assert (paper["epochs"], paper["layers"], paper["hidden size"]) == (300, 6, 400)
    assert (
        paper["tokens per image"] == (32 // 2) ** 2
        and paper["training images"] == 50_000
    )
    cpu = profile_scale("cpu")
    cfg = get_profile("cpu").config("quadratic")
    assert cpu["epochs"] == cfg.epochs and cpu["training images"] == 5085


def test_full_scale_hours_from_a_benchmark():
    from attnconv.chapters.hyperparameters import full_scale_hours
    from attnconv.experiments.profiles import gpu_seconds_per_epoch

    bench = {
        "settings": {"batch_size": 100},
        "models": {"quadratic": [{"implementation": "dense", "train_step_s": 3.6}]},
    }
    hours = full_scale_hours(bench, epochs=300)
    assert hours["quadratic"]["cpu"] == pytest.approx(3.6 * 500 * 300 / 3600)
    gpu, _ = gpu_seconds_per_epoch()
    assert hours["resnet18"]["gpu"] == pytest.approx(gpu["resnet18"] * 300 / 3600)
    assert "cpu" not in hours["resnet18"]
