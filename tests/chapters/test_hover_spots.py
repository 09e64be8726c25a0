"""attnconv.chapters.shared.hover_spots: each point's place in the inline PNG, checked against
the PNG itself (the pixel at the place has the point's colour), and Figure 17.1's hover texts
against the judge's verdicts."""

from __future__ import annotations

import html
import io
import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.image as mpimg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from IPython.core.pylabtools import print_figure  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402

from attnconv.chapters import paper_verdicts as pv  # noqa: E402
from attnconv.chapters.shared.badges import verdict_word  # noqa: E402
from attnconv.chapters.shared.hover_spots import (  # noqa: E402
    HoverPoint,
    HoverSpots,
    image_places,
)

ROOT = Path(__file__).resolve().parents[2]


def _spots(output) -> list:
    from IPython.core.formatters import DisplayFormatter

    bundle = DisplayFormatter().format(output)[0]  # what a cell's output saves
    assert set(bundle) == {"text/html", "text/plain"}
    assert " at 0x" not in bundle["text/plain"]  # no memory address: the same every run
    found = re.search(r'data-spots="([^"]*)"', bundle["text/html"])
    return json.loads(html.unescape(found.group(1)))


def _pixel(png: bytes, place) -> np.ndarray:
    img = mpimg.imread(io.BytesIO(png))
    return img[int(place[1] * img.shape[0]), int(place[0] * img.shape[1])][:3]


def test_each_place_is_on_its_point_in_the_cropped_retina_png():
    colours = ["#d62728", "#2ca02c", "#1f77b4", "#9467bd"]
    xy = [(0.0, 0.0), (3.0, 1.0), (1.5, -2.0), (-1.0, 2.5)]
    fig, (left, right) = plt.subplots(1, 2, figsize=(6, 3), constrained_layout=True)
    points = []
    for i, ((x, y), c) in enumerate(zip(xy, colours)):
        ax = left if i % 2 else right
        ax.plot(x, y, "o", ms=9, color=c)
        points.append(HoverPoint(ax, x, y, f"point {i}"))
    left.set_title("a long title that widens the tight box", loc="left")
    fig.legend(["a", "b"], loc="outside lower center", ncol=2)
    places = image_places(fig, points)
    png = print_figure(fig, "retina")  # what the inline backend saves
    plt.close(fig)
    for place, c in zip(places, colours):
        assert np.abs(_pixel(png, place) - to_rgb(c)).max() < 0.05, (place, c)


def test_the_claim_board_spots_sit_on_their_dots_and_say_the_judges_verdict():
    claims = pv.book_claims()
    every = pv.counted([c for g in pv.GROUPS for c in claims.get(g, [])])
    fresh = pv.fresh_verdicts()
    fig = pv.plot_claim_board(every, fresh)
    spots = _spots(pv.claim_board_hover(fig, every, fresh))
    png = print_figure(fig, "retina")
    plt.close(fig)
    rows = pv.board_rows(every, fresh)
    assert len(spots) == len(rows)
    for spot, (title, now, before, _) in zip(spots, rows):
        colour = pv.DARK_THEME_EDGES.get(now, pv.VERDICT_COLOURS[now])
        got = _pixel(png, (spot["x"], spot["y"]))
        assert np.abs(got - to_rgb(pv.VERDICT_COLOURS[now])).max() < 0.06 or (
            np.abs(got - to_rgb(colour)).max() < 0.06
        ), (title, got)
        lines = spot["text"].split("\n")
        assert lines[0] == title
        assert lines[1].startswith(f"Fresh seeds: {verdict_word(now)}, ")
        assert (f"Before the freeze: {verdict_word(before)}" in lines) == (
            before is not None
        )
    key = "local_then_far"  # Holm's adjustment changes it: its tooltip says so
    text = next(s["text"] for s in spots if s["text"].startswith(pv.CLAIMS[key].title))
    holm = fresh[key].alternatives["Holm's adjustment over the family"]
    assert f"With Holm's adjustment over the family: {verdict_word(holm)}" in text


def test_the_output_is_html_only_and_escaped():
    fig, ax = plt.subplots()
    ax.plot([0], [0], "o")
    out = HoverSpots(fig, [HoverPoint(ax, 0, 0, 'a "quoted" <tag>\nline 2')], "Fig's x")
    plt.close(fig)
    (spot,) = _spots(out)
    assert spot["text"] == 'a "quoted" <tag>\nline 2'
    assert 'data-label="Fig&#x27;s x"' in out.html and "<tag>" not in out.html


def test_figure_12_1_spots_sit_on_each_mean_and_give_the_seeds_numbers():
    """depth_measures.fresh_profiles_hover, against a plain loop over the judge's profiles and
    the PNG: each spot is on a line's marker (its own, or another model's drawn over it at the
    same layer), and says the mean of the seeds."""
    from attnconv.chapters.shared import depth_measures as depth
    from attnconv.chapters.shared.plotting import model_colour
    from attnconv.evidence import judge

    fresh = {arm: judge.arm_profiles(arm) for arm in depth.FRESH_ARMS}
    fresh = {arm: p for arm, p in fresh.items() if p is not None}
    distances = {"learned": depth.fresh_map_distances("learned")}
    fig = depth.plot_fresh_profiles(fresh, distances=distances)
    spots = _spots(depth.fresh_profiles_hover(fig, fresh, distances=distances))
    png = print_figure(fig, "retina")
    plt.close(fig)
    expected = []
    for arm, seeds in fresh.items():
        for key in ("attention_distance", "one_key"):
            rows = [s[key] for s in seeds if s[key] is not None]
            if not rows and key == "attention_distance":
                rows = [list(r) for r in distances.get(arm, [])]
            if not rows:
                continue
            for layer in range(len(rows[0])):
                column = [r[layer] for r in rows]
                if key == "one_key":
                    column = [c / depth.fresh_heads(arm) for c in column]
                expected.append((arm, key, layer + 1, sum(column) / len(column)))
    assert len(spots) == len(expected)
    for spot, (arm, key, layer, mean) in zip(spots, expected):
        head, numbers = spot["text"].split("\n")
        assert head.endswith(f"layer {layer}")
        if key == "one_key":
            assert numbers.startswith(
                f"heads over 0.5 on one key: mean {100 * mean:.0f} %"
            )
        else:
            assert numbers.startswith(f"attention distance: mean {mean:.1f} tokens")
        got = _pixel(
            png, (spot["x"], spot["y"])
        )  # its line's marker, or one drawn over it
        nearest = min(np.abs(got - to_rgb(model_colour(a))).max() for a in fresh)
        assert nearest < 0.25, (arm, layer, got)


def test_head_panel_spots_sit_on_each_drawn_centre_and_give_its_place():
    """run_plots.layer_heads_hover on a fresh quadratic seed: one spot per head drawn (not
    nearly uniform), on the head's centre dot in the PNG (the head's colour), its text giving
    the saved centre."""
    from attnconv.chapters.shared.run_plots import (
        _head_colors,
        layer_heads_hover,
        plot_layer_heads,
    )
    from attnconv.chapters.shared.trained_heads import layer_records

    path = ROOT / "book/runs/confirm/quadratic/seed1000/history.json"
    history = json.loads(path.read_text())
    fig = plot_layer_heads(history, (16, 16), one_key=0.5)
    spots = _spots(layer_heads_hover(fig, history, (16, 16)))
    png = print_figure(fig, "retina")
    plt.close(fig)
    records = layer_records(history, -1)
    assert 9 <= len(spots) <= 9 * len(records)
    for spot in spots:
        first, where = spot["text"].split("\n")[:2]
        layer, head = (int(t) for t in re.findall(r"\d+", first))
        row, col = records[layer - 1]["centers"][head - 1]
        up, left = "up" if row < 0 else "down", "left" if col < 0 else "right"
        assert (
            where == f"centre {abs(row):.1f} {up}, {abs(col):.1f} {left} of the query"
        )
        colour = _head_colors(len(records[layer - 1]["centers"]))[head - 1]
        # the dot's colour within 3 px of the place (a ring or the query's square, drawn
        # over the dot, may cover its middle)
        img = mpimg.imread(io.BytesIO(png))[..., :3]
        r, c = int(spot["y"] * img.shape[0]), int(spot["x"] * img.shape[1])
        near = img[r - 3 : r + 4, c - 3 : c + 4].reshape(-1, 3)
        assert np.abs(near - to_rgb(colour)).max(axis=1).min() < 0.1, (layer, head)
