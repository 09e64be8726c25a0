"""The generalized quadratic model after training, and pruning its degenerate heads (App. A.1).

The generalized quadratic encoding (eq. 16) gives each head a centre Δ and a matrix M with
Σ⁻¹ = M Mᵀ, so a head can become elongated or wide. The paper (App. A.1) prunes the *degenerate*
heads of its trained model — largest eigenvalue of Σ⁻¹ below 1e-5 (non-localised) or condition
number above 1e5 (elongated; the authors' code used 1e3) — then retrains with the learning rate
divided by 10 (App. A.1: 15 heads pruned, 12.1M → 9.7M parameters in Fig. 9, accuracy back to its
unpruned value). This module holds what the chapter needs:

* :func:`generalized_run_changes`, :func:`retrain_epochs` — the chapter's settings per profile;
* :func:`attention_only_model` — a model whose encodings are those saved in a history (no weights
  needed), for head statistics and attention maps;
* :func:`head_table`, :func:`degeneracy_order` — the spectrum of every head and the order in
  which the pruning curve removes them (from :mod:`attnconv.experiments.studies_pruning`);
* :func:`per_head_outputs`, :func:`pruning_check` — pruning removes exactly the chosen heads and
  leaves the others' outputs unchanged;
* the pruning study — accuracies (and per-image predictions) of pruned models with and without
  retraining — is computed from the trained weights by
  :func:`attnconv.experiments.studies_pruning.pruning_study` (retraining through the one training
  loop) and saved next to the run by ``python -m attnconv.regenerate``; the chapter reads it
  (:func:`load_pruning_study`, :func:`load_pruned_run`, :func:`study_predictions`) and needs no
  weights;
* :func:`initial_drop` — what pruning costs before retraining, from a saved pruning study (the
  verdict on "this ablation initially hurts a bit": :mod:`attnconv.chapters.paper_verdicts`);
* :func:`plot_heads_by_layer` (Fig. 7), :func:`plot_eigenvalues`, :func:`plot_pruning` (Fig. 8),
  :func:`pruning_table` (Fig. 9's table),
  :func:`reduction_table` and the chapter's other tables, as Markdown.
"""

from __future__ import annotations

import copy
import math
from typing import Dict, List, Optional, Sequence, Tuple

import torch

from ..experiments.flops import analytic_macs
from ..experiments.models import (
    build_model,
    paper_model_config,
    parameter_count_table,
)
from ..experiments.paper_numbers import (
    PAPER_CONDITION_THRESHOLD,
    PAPER_FIG9,
    PAPER_MAX_EIGENVALUE_THRESHOLD,
    PAPER_PRUNED_HEADS,
    PAPER_TOTAL_HEADS,
)
from ..experiments.pruning import (
    prune_heads,
)
from ..experiments.studies_pruning import (
    count_selected,
)
from ..experiments.verdicts import (
    Interval,
    paired_seed_interval,
    same_model_difference,
)
from .shared.badges import verdict_badge
from .shared.depth_measures import pruning_accuracies
from .shared.gaussian_maps import draw_mass_contours, head_attention_maps
from .shared.plotting import COLUMN_INCHES, model_colour
from .shared.tables import markdown_table, signed_number

__all__ = [
    "pruned_per_layer",
    "generalized_run_changes",
    "attention_only_model",
    "per_head_outputs",
    "pruning_check",
    "plot_heads_by_layer",
    "plot_eigenvalues",
    "plot_pruning",
    "PRUNING_COLOURS",
    "RETRAINED_CMAP",
    "retrained_colours",
    "NOISE_STANDARD_ERRORS",
    "initial_drop",
    "pruning_table",
    "reduction_table",
    "pruned_counts_table",
    "pilot_heads_table",
    "by_layer",
    "pilot_rule_table",
    "pilot_pruning_table",
    "verdicts_table",
    "followup_intervals",
    "seed_intervals",
    "pruning_verdict_rows",
    "fresh_verdict_rows",
    "second_test_rows",
    "seed_verdict_rows",
    "paper_pruning_reduction",
]


def paper_pruning_reduction() -> Dict[str, float]:
    """The reductions implied by the paper's own numbers (v1 Fig. 9), as fractions: parameters
    12.1M → 9.7M, FLOPS 6.2B → 4.9B, and heads 15 of 54. App. A.1 calls it "a fourth"."""

    def value(text: str) -> float:
        return float(text[:-1])

    params = PAPER_FIG9["parameters"]
    flops = PAPER_FIG9["flops"]
    return {
        "parameters": 1 - value(params[1]) / value(params[0]),
        "flops": 1 - value(flops[1]) / value(flops[0]),
        "heads": PAPER_PRUNED_HEADS / PAPER_TOTAL_HEADS,
    }


#: The chapter's changes to each profile's generalized run. The cpu profile trains 40 epochs
#: instead of 16, so that the heads have time to change shape (the paper trains 300).
def generalized_run_changes(profile: str) -> dict:
    """What the book's generalized run under ``profile`` changes in the profile's settings."""
    from .shared.saved_runs import book_run_changes

    return book_run_changes("generalized", profile)


# --------------------------------------------------------------------------- heads from a history
def attention_only_model(history: dict, epoch: int = -1):
    """The generalized model of ``history`` whose encodings hold the centres Δ and matrices M saved
    at ``epoch`` (default: the last; ``None``: before training). Every other weight is freshly
    initialised: use it for head statistics and position-only attention maps, never for accuracy."""
    from ..experiments.models import model_config_from_dict

    cfg = model_config_from_dict(history["model_config"])
    if getattr(cfg, "encoding", None) != "generalized":
        raise ValueError("attention_only_model needs a run of the generalized model")
    record = (
        history["initial_attention"]
        if epoch is None
        else history["epochs"][epoch]["attention"]
    )
    with torch.random.fork_rng(devices=[]):
        model = build_model(cfg).eval()
    if len(record) != len(model.layers):
        raise ValueError(
            f"the record has {len(record)} layers, the model {len(model.layers)}"
        )
    with torch.no_grad():
        for layer, rec in zip(model.layers, record):
            enc = layer.attention.encoding
            c = torch.tensor(rec["centers"], dtype=enc.centers.dtype)
            m = torch.tensor(rec["inv_sqrt_sigma"], dtype=enc.inv_sqrt_sigma.dtype)
            if c.shape != enc.centers.shape or m.shape != enc.inv_sqrt_sigma.shape:
                raise ValueError(
                    "the record's heads do not match the model's (pruned run?)"
                )
            enc.centers.copy_(c)
            enc.inv_sqrt_sigma.copy_(m)
    return model


def pruned_per_layer(selection: Dict[int, Sequence[int]], num_layers: int) -> List[int]:
    """The number of heads a selection ``{layer: [heads]}`` prunes in each of ``num_layers`` layers
    (the paper's way of reporting it, :data:`PAPER_PRUNED_PER_LAYER`)."""
    return [len(selection.get(i, selection.get(str(i), []))) for i in range(num_layers)]


# --------------------------------------------------------------------------- pruning, checked
@torch.no_grad()
def per_head_outputs(model, images: torch.Tensor) -> List[Optional[torch.Tensor]]:
    """softmax(A_h) X of every head of every layer (eq. 4 before W_out; these models have no value
    projection), run layer by layer in eval mode: per layer ``(N_h, T, B, D)`` (``None`` without
    heads)."""
    was = model.training
    model.eval()
    try:
        x = model.tokens(images)
        grid = model.config.grid
        outs = []
        for layer in model.layers:
            if layer.attention is None:
                outs.append(None)
            else:
                _, probs = layer.attention.forward_tokens(
                    x, grid, return_attention=True
                )  # (1|B, N_h, T, T)
                p = (
                    probs.expand(x.shape[1], *probs.shape[1:])
                    if probs.shape[0] == 1
                    else probs
                )
                outs.append(torch.einsum("bhqk,kbd->hqbd", p.to(x.dtype), x))
            x = layer(x, grid)
    finally:
        model.train(was)
    return outs


@torch.no_grad()
def pruning_check(
    model, selection: Dict[int, Sequence[int]], images: torch.Tensor, atol: float = 1e-6
) -> Dict[str, bool]:
    """Prune ``selection`` from a copy of ``model`` and check, on ``images``:

    * ``heads_removed`` — every layer lost exactly the chosen heads;
    * ``kept_parameters_equal`` — the kept heads' centres and matrices M are unchanged;
    * ``kept_head_outputs_equal`` — in the first pruned layer (whose input is unchanged) the kept
      heads' outputs softmax(A_h)X equal those of the same heads before pruning (within ``atol``);
    * ``matches_zeroed_model`` — the pruned model's logits equal those of the unpruned model with
      the pruned heads' columns of W_out set to zero (an oracle that removes nothing).
    """
    model = copy.deepcopy(model).eval()
    sel = {int(k): sorted(int(h) for h in v) for k, v in selection.items() if len(v)}
    before_heads = model.heads_per_layer
    before_params = [
        {n: p.detach().clone() for n, p in layer.attention.encoding.named_parameters()}
        for layer in model.layers
    ]
    zeroed = copy.deepcopy(model)
    for li, heads in sel.items():
        att = zeroed.layers[li].attention
        d = att.head_dim
        for h in heads:
            att.out.weight[:, h * d : (h + 1) * d] = 0
    before_outputs = per_head_outputs(model, images)
    pruned = prune_heads(copy.deepcopy(model), sel)
    keep = {
        li: [h for h in range(n) if h not in sel.get(li, [])]
        for li, n in enumerate(before_heads)
    }
    heads_ok = pruned.heads_per_layer == [
        len(keep[li]) for li in range(len(before_heads))
    ]
    params_ok = True
    for li, layer in enumerate(pruned.layers):
        if layer.attention is None:
            params_ok &= not keep[li]
            continue
        for n, p in layer.attention.encoding.named_parameters():
            params_ok &= torch.equal(p, before_params[li][n][keep[li]])
    after_outputs = per_head_outputs(pruned, images)
    first = min(sel) if sel else 0
    if keep[first]:
        a, b = after_outputs[first], before_outputs[first][keep[first]]
        outputs_ok = bool((a - b).abs().max() <= atol * max(1.0, float(b.abs().max())))
    else:
        outputs_ok = after_outputs[first] is None
    logits_ok = bool(
        torch.allclose(pruned(images), zeroed(images), atol=1e-5, rtol=1e-4)
    )
    return {
        "heads_removed": bool(heads_ok),
        "kept_parameters_equal": bool(params_ok),
        "kept_head_outputs_equal": outputs_ok,
        "matches_zeroed_model": logits_ok,
    }


# --------------------------------------------------------------------------- figures and table
def plot_heads_by_layer(
    model,
    query: Optional[Tuple[int, int]] = None,
    degenerate: Optional[Dict[int, Sequence[int]]] = None,
    masses: Sequence[float] = (0.5, 0.9),
    panel_size: float = 3.2,
):
    """Fig. 7: per layer one panel with every head's attention around ``query`` (default: the centre
    token) drawn as its 50 % (solid) and 90 % (dashed) probability-mass outline, one colour per
    head, its centre q + Δ_h as a dot; heads in ``degenerate`` ({layer: [heads]}) are drawn in
    grey with a dotted outline. Returns the figure."""
    import matplotlib.pyplot as plt

    g = model.config.tokens_per_side
    q = (g // 2, g // 2) if query is None else tuple(query)
    degenerate = degenerate or {}
    layers = [i for i, layer in enumerate(model.layers) if layer.attention is not None]
    ncols = min(len(layers), 3)
    nrows = math.ceil(len(layers) / ncols)
    panel = min(panel_size, (COLUMN_INCHES - 0.4) / ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(panel * ncols + 0.4, panel * nrows + 0.4), squeeze=False
    )
    for ax in axes.flat:
        ax.axis("off")
    for ax, li in zip(axes.flat, layers):
        ax.axis("on")
        enc = model.layers[li].attention.encoding
        maps = head_attention_maps(enc, (g, g), q)
        ax.imshow(torch.zeros(g, g).numpy(), cmap="Greys", vmin=0, vmax=1)
        colors = [plt.cm.tab10(h % 10) for h in range(enc.num_heads)]
        for h in range(enc.num_heads):
            bad = h in degenerate.get(li, [])
            color = "0.55" if bad else colors[h]
            styles = ("dotted", "dotted") if bad else ("solid", "dashed")
            draw_mass_contours(
                ax, maps[h], masses, color=color, linestyles=styles, linewidth=1.3
            )
            c = enc.centers[h].detach()
            ax.plot(q[1] + float(c[1]), q[0] + float(c[0]), "o", color=color, ms=4)
        ax.add_patch(
            plt.Rectangle(
                (q[1] - 0.5, q[0] - 0.5), 1, 1, fill=False, ec="red", lw=1.5, zorder=10
            )
        )
        ax.set_xlim(-0.5, g - 0.5), ax.set_ylim(g - 0.5, -0.5)
        ax.set_xticks([]), ax.set_yticks([])
        ax.set_title(f"layer {li + 1}", fontsize=9)
    fig.tight_layout()
    return fig


def _power(value: float) -> str:
    return f"$10^{{{round(math.log10(value))}}}$"


def plot_eigenvalues(
    rows: Sequence[dict],
    max_eigenvalue_threshold: float = PAPER_MAX_EIGENVALUE_THRESHOLD,
    condition_threshold: float = PAPER_CONDITION_THRESHOLD,
    code_condition_threshold: Optional[float] = None,
):
    """The pruning rule as a picture: every head of :func:`head_table`'s ``rows`` at (largest
    eigenvalue of Σ⁻¹, condition number), log–log, one marker shape and colour per layer (layers
    numbered from 1), degenerate heads circled; the rule's thresholds as lines (the paper's solid,
    the authors' code's ``code_condition_threshold`` dotted). A head is pruned left of the
    vertical line or above the horizontal one. Every text is at least 9 pt in a figure 6.4 in wide:
    12.5 px on the page. Returns the figure."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    layers = sorted({r["layer"] for r in rows})
    markers = "osD^vP*X"
    for i, li in enumerate(layers):
        mine = [r for r in rows if r["layer"] == li]
        ax.scatter(
            [r["lambda_max"] for r in mine],
            [r["condition"] for r in mine],
            marker=markers[i % len(markers)],
            color=f"C{i}",
            s=30,
            label=f"layer {li + 1}",
            zorder=3,
        )
    bad = [r for r in rows if r["degenerate"]]
    if bad:
        ax.scatter(
            [r["lambda_max"] for r in bad],
            [r["condition"] for r in bad],
            s=160,
            facecolors="none",
            edgecolors="black",
            lw=1.2,
            label="degenerate (pruned)",
            zorder=4,
        )
    ax.set_xscale("log"), ax.set_yscale("log")
    ax.axvline(max_eigenvalue_threshold, color="0.3", lw=1)
    ax.axhline(condition_threshold, color="0.3", lw=1)
    if code_condition_threshold is not None:
        ax.axhline(code_condition_threshold, color="0.3", lw=1, ls=":")
    x = [r["lambda_max"] for r in rows] + [max_eigenvalue_threshold]
    y = [r["condition"] for r in rows] + [condition_threshold]
    ax.set_xlim(min(x) / 10, max(x) * 10)
    ax.set_ylim(0.5, max(y) * 10)
    ax.text(
        max_eigenvalue_threshold,
        0.6,
        f" λ_max = {_power(max_eigenvalue_threshold)}",
        fontsize=9,
        va="bottom",
    )
    ax.text(
        min(x) / 8,
        condition_threshold,
        f"condition = {_power(condition_threshold)}",
        fontsize=9,
        va="bottom",
    )
    if code_condition_threshold is not None:
        ax.text(
            min(x) / 8,
            code_condition_threshold,
            f"authors' code: {_power(code_condition_threshold)}",
            fontsize=9,
            va="bottom",
        )
    ax.set_xlabel("largest eigenvalue of Σ⁻¹")
    ax.set_ylabel("condition number of Σ⁻¹")
    ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(0.28, 1.0))
    ax.tick_params(labelsize=9)
    fig.tight_layout()
    return fig


#: Fig. 8's colours. The one model drawn is the generalized one, in its book colour; what is not
#: a model is drawn in neutral greys, outside the models' palette.
PRUNING_COLOURS = {
    "degenerate first": model_colour("generalized"),
    "random": "#a6a6a6",  # light grey: heads pruned in a random order
    "reference": "#404040",  # dark grey: the unpruned accuracy, the rule's count
}
#: The colour map of the retrained models, light to dark as they prune more heads (sequential,
#: none of its colours a model's).
RETRAINED_CMAP = "Purples"


def retrained_colours(counts: Sequence[int]) -> Dict[int, str]:
    """A sequential colour for each retrained model, keyed by the number of heads it prunes: the
    fewest lightest, the most darkest (:data:`RETRAINED_CMAP`, between 60 % and 95 % of its
    range)."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    cmap = colormaps[RETRAINED_CMAP]
    order = sorted(set(counts))
    n = max(len(order) - 1, 1)
    return {k: to_hex(cmap(0.6 + 0.35 * i / n)) for i, k in enumerate(order)}


#: The half-width of the band around a test accuracy in standard errors: a 95 % normal interval.
BAND_STANDARD_ERRORS = 1.96
#: The band's opacity: light, so that the curves stay in front of it.
BAND_ALPHA = 0.15


def binomial_band(accuracy, test_size: int, z: float = BAND_STANDARD_ERRORS):
    """The band ``accuracy ± z · SE`` around test accuracies (fractions), with the binomial
    standard error SE = sqrt(p (1 − p) / n) of each accuracy p over ``test_size`` images: returns
    ``(low, high)``, two lists."""
    if test_size <= 0:
        raise ValueError(f"test_size must be positive, not {test_size}")
    p = [float(a) for a in accuracy]
    half = [z * math.sqrt(a * (1 - a) / test_size) for a in p]
    return [a - h for a, h in zip(p, half)], [a + h for a, h in zip(p, half)]


def plot_pruning(study: dict, title: str = "", test_size: Optional[int] = None):
    """Fig. 8: (left) test accuracy against the number of heads pruned — most degenerate first
    without retraining, random heads without retraining (one draw, or the mean and range of several) and after retraining;
    (right) test accuracy during the retraining of each pruned model (epoch 0: before), with
    ``test_size`` (the run's number of test images) a light band of ±1.96 binomial standard
    errors around the first retraining's curve (:func:`binomial_band`): the epoch-to-epoch noise
    of the test set. The rule's count of degenerate heads is a mark under the left axis. Returns
    the figure. Accuracies in percent (0-100)."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    def pct(values):
        return [100 * v for v in values]

    curve = study["curve"]
    k = curve["k"]
    # one sequential colour per retrained model, by the number of heads it prunes
    shades = retrained_colours([r["k"] for r in study["retrained"]])
    # the column's width and 9-pt text: 13.5 px on the page
    fig, (a, b) = plt.subplots(1, 2, figsize=(COLUMN_INCHES, 4.0))
    a.plot(
        k,
        pct(curve["degenerate_first"]),
        "o-",
        color=PRUNING_COLOURS["degenerate first"],
        ms=4,
        label="most degenerate first, no retraining",
    )
    rnd = torch.tensor(curve["random"], dtype=torch.float64)
    if len(rnd):
        a.plot(
            k,
            pct(rnd.mean(0).tolist()),
            "s-",
            color=PRUNING_COLOURS["random"],
            ms=3,
            label="random heads, no retraining "
            + ("(one draw)" if len(rnd) == 1 else f"(mean of {len(rnd)} draws)"),
        )
        a.fill_between(
            k,
            pct(rnd.min(0).values.tolist()),
            pct(rnd.max(0).values.tolist()),
            color=PRUNING_COLOURS["random"],
            alpha=0.25,
        )
    for i, r in enumerate(study["retrained"]):
        a.plot(
            [r["k"]],
            [100 * r["test_acc"][-1]],
            "*",
            color=shades[r["k"]],
            mec=PRUNING_COLOURS["reference"],
            mew=0.5,
            ms=13,
            label=f"after {study['retrain_epochs']} epochs of retraining"
            if i == 0
            else None,
        )
    k_sel = count_selected(study["selected"])
    grey = PRUNING_COLOURS["reference"]
    a.axhline(
        100 * curve["degenerate_first"][0],
        color=grey,
        lw=0.8,
        ls=":",
        label="unpruned",
        zorder=0,
    )
    if k_sel:  # a mark under the axis, clear of the stars and the curves
        a.plot(
            [k_sel],
            [0.025],  # resting on the axis, in axes coordinates
            "^",
            color=grey,
            ms=7,
            clip_on=False,
            transform=a.get_xaxis_transform(),
            label=f"the rule's degenerate heads ({k_sel})",
        )
    a.set_xlabel("number of heads pruned"), a.set_ylabel("test accuracy (%)")
    handles, labels = a.get_legend_handles_labels()
    for i, r in enumerate(study["retrained"]):
        raw = [r["test_acc_before"]] + r["test_acc"]
        acc = pct(raw)
        b.plot(
            range(len(acc)),
            acc,
            "o-",
            ms=3,
            color=shades[r["k"]],
            label=f"{r['k']} heads pruned",
        )
        if test_size and i == 0:  # one band, around the fewest heads' retraining
            low, high = binomial_band(raw, test_size)
            b.fill_between(
                range(len(acc)),
                pct(low),
                pct(high),
                color=shades[r["k"]],
                alpha=BAND_ALPHA,
                lw=0,
            )
    b.axhline(
        100 * curve["degenerate_first"][0], color=grey, lw=0.8, ls=":", label="unpruned"
    )
    b.set_xlabel("retraining epoch (learning rate ÷ 10)")
    b.set_ylabel("test accuracy (%)")
    for ax in (a, b):
        ax.tick_params(labelsize=9)
        ax.xaxis.set_major_locator(
            MaxNLocator(integer=True)
        )  # heads and epochs: whole numbers
    for handle, label in zip(*b.get_legend_handles_labels()):
        if label not in labels:  # one legend for the figure, below both panels
            handles.append(handle)
            labels.append(label)
    if test_size and study["retrained"]:
        from matplotlib.patches import Patch

        first = study["retrained"][0]["k"]
        handles.append(Patch(color=shades[first], alpha=BAND_ALPHA, lw=0))
        labels.append(f"±1.96 SE ({test_size:,} test images)")
    fig.legend(
        handles, labels, fontsize=9, loc="outside lower center", ncol=2, frameon=False
    )
    if title:
        fig.suptitle(title, fontsize=9)
    fig.set_layout_engine("constrained")
    return fig


def seed_pruning_rows(studies: Sequence[dict], seeds: Sequence[int]) -> List[dict]:
    """One row per seed's saved pruning study: ``seed``; ``k``, the heads the paper's rule prunes;
    and the test accuracies (fractions) ``unpruned``, ``pruned`` (those ``k`` heads pruned, no
    retraining) and ``retrained`` (after the study's retraining of those ``k`` heads)."""
    rows = []
    for seed, study in zip(seeds, studies):
        k = count_selected(study["selected"])
        curve = study["curve"]["degenerate_first"]
        after = {r["k"]: _last(r["test_acc"]) for r in study["retrained"]}
        rows.append(
            {
                "seed": int(seed),
                "k": k,
                "unpruned": float(curve[0]),
                "pruned": float(curve[k]),
                "retrained": float(after[k]),
            }
        )
    return rows


def plot_seed_pruning(studies: Sequence[dict], seeds: Sequence[int]):
    """Fig. 8 over several seeds, each accuracy as its change from the seed's unpruned model
    (points). Left: heads pruned one at a time without retraining, most degenerate first or in
    the study's random order: the mean over the seeds (line) and their range (shaded). Right:
    one row per seed (:func:`seed_pruning_rows`): its degenerate heads pruned (circle) and the
    same model after retraining (star), joined by an arrow; dotted: unpruned. Returns the
    figure."""
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    grey = PRUNING_COLOURS["reference"]
    fig, (a, b) = plt.subplots(
        1, 2, figsize=(COLUMN_INCHES, 3.6), gridspec_kw={"width_ratios": [1.25, 1]}
    )
    k = list(studies[0]["curve"]["k"])
    for key, colour, marker, label in (
        (
            "degenerate_first",
            PRUNING_COLOURS["degenerate first"],
            "o",
            "most degenerate first",
        ),
        ("random", PRUNING_COLOURS["random"], "s", "random heads (one order a seed)"),
    ):
        curves = []
        for study in studies:
            c = study["curve"][key]
            c = c[0] if key == "random" else c
            curves.append([100 * (v - c[0]) for v in c])
        arr = np.array(curves)
        a.fill_between(k, arr.min(0), arr.max(0), color=colour, alpha=0.18, lw=0)
        a.plot(k, arr.mean(0), marker + "-", color=colour, ms=2.5, lw=1.2, label=label)
    a.axhline(0, color=grey, lw=0.8, ls=":", zorder=0, label="unpruned")
    a.set_xlabel("number of heads pruned, no retraining")
    a.set_ylabel("change in test accuracy (points)")
    a.set_xlim(0, k[-1])
    a.xaxis.set_major_locator(MaxNLocator(integer=True))
    rows = seed_pruning_rows(studies, seeds)
    epochs = studies[0]["retrain_epochs"]
    for y, r in enumerate(rows):
        x0 = 100 * (r["pruned"] - r["unpruned"])
        x1 = 100 * (r["retrained"] - r["unpruned"])
        b.annotate(
            "",
            xy=(x1, y),
            xytext=(x0, y),
            arrowprops=dict(arrowstyle="->", color=grey, lw=0.8, shrinkA=4, shrinkB=6),
        )
        b.plot(
            [x0],
            [y],
            "o",
            color=PRUNING_COLOURS["degenerate first"],
            ms=5,
            label="degenerate heads pruned" if y == 0 else None,
        )
        b.plot(
            [x1],
            [y],
            "*",
            color=retrained_colours([r["k"]])[r["k"]],
            mec=grey,
            mew=0.5,
            ms=10,
            label=f"then retrained {epochs} epochs" if y == 0 else None,
        )
    b.axvline(0, color=grey, lw=0.8, ls=":", zorder=0)
    b.set_yticks(range(len(rows)))
    b.set_yticklabels(
        [f"{r['seed']}: {r['k']} head" + ("s" if r["k"] != 1 else "") for r in rows]
    )
    b.set_ylim(len(rows) - 0.5, -0.5)  # the first seed on top
    b.set_xlabel("change in test accuracy (points)")
    b.set_ylabel("seed: degenerate heads")
    for ax in (a, b):
        ax.tick_params(labelsize=9)
    handles, labels = a.get_legend_handles_labels()
    for handle, label in zip(*b.get_legend_handles_labels()):
        handles.append(handle)
        labels.append(label)
    fig.legend(
        handles, labels, fontsize=9, loc="outside lower center", ncol=2, frameon=False
    )
    fig.set_layout_engine("constrained")
    return fig


def _paper_size_pruned_macs(pruned_heads: int = 15) -> Tuple[int, int]:
    cfg = paper_model_config("generalized")
    heads = [cfg.num_heads] * cfg.num_layers
    for i in range(pruned_heads):
        heads[i % cfg.num_layers] -= 1
    return analytic_macs(cfg).dense, analytic_macs(cfg, heads).dense


def _table(
    columns: Sequence[str], rows: Sequence[Sequence[object]], align: str = ""
) -> str:
    """A Markdown table's text (:func:`~attnconv.chapters.shared.tables.markdown_table`)."""
    return markdown_table(columns, rows, align).data


def _percent(fraction) -> str:
    """A test accuracy (a fraction, or the paper's "0.934") in percent: ``93.4 %``."""
    return f"{100 * float(fraction):.1f} %"


def _paper_count(text: str) -> str:
    """The paper's "12.1M" or "6.2B" with a space before its unit."""
    return f"{text[:-1]} {text[-1]}"


def pruning_table(study: dict) -> str:
    """Fig. 9's table as Markdown: test accuracy, parameters and FLOPs (2 × Linear MACs, the
    paper's way, :func:`attnconv.experiments.flops.analytic_macs`) of our run before pruning,
    after pruning its degenerate heads, and after retraining; then the paper-size model with 15
    heads pruned (our exact counts, :func:`attnconv.experiments.models.parameter_count_table`)
    and the paper's numbers."""
    k_sel = count_selected(study["selected"])
    acc0 = study["curve"]["degenerate_first"][0]
    acc1 = study["curve"]["degenerate_first"][k_sel]
    ret = next((r for r in study["retrained"] if r["k"] == k_sel), None)
    p0, p1 = study["parameters"]["before"], study["parameters"]["after"]
    f0, f1 = 2 * study["macs"]["before"]["dense"], 2 * study["macs"]["after"]["dense"]
    rows = [
        ["ours, before pruning", _percent(acc0), f"{p0:,}", f"{f0 / 1e6:.1f} M"],
        [f"ours, {k_sel} heads pruned", _percent(acc1), f"{p1:,}", f"{f1 / 1e6:.1f} M"],
    ]
    if ret is not None:
        rows.append(
            [
                f"ours, pruned, then retrained {study['retrain_epochs']} epochs",
                _percent(ret["test_acc"][-1]),
                f"{p1:,}",
                f"{f1 / 1e6:.1f} M",
            ]
        )
    counts = {r["model"]: r for r in parameter_count_table(15)}
    d0, d1 = _paper_size_pruned_macs(15)
    n0, n1 = counts["generalized"]["ours"], counts["generalized_pruned"]["ours"]
    acc, params, flops = (PAPER_FIG9[k] for k in ("accuracy", "parameters", "flops"))
    rows += [
        ["paper size, our exact count", "—", f"{n0:,}", f"{2 * d0 / 1e9:.2f} B"],
        ["paper size, 15 heads pruned", "—", f"{n1:,}", f"{2 * d1 / 1e9:.2f} B"],
        ["the paper's Fig. 9", _percent(acc[0])]
        + [_paper_count(params[0]), _paper_count(flops[0])],
        ["the paper's Fig. 9, 15 heads pruned", _percent(acc[1])]
        + [_paper_count(params[1]), _paper_count(flops[1])],
    ]
    return _table(["model", "test accuracy", "parameters", "FLOPs"], rows)


def reduction_table() -> str:
    """What pruning 15 of 54 heads removes, in percent: by the paper's own Fig. 9 numbers
    (:func:`paper_pruning_reduction`) and by our exact counts of the paper-size model."""
    red = paper_pruning_reduction()
    counts = {r["model"]: r for r in parameter_count_table(15)}
    n0, n1 = counts["generalized"]["ours"], counts["generalized_pruned"]["ours"]
    d0, d1 = _paper_size_pruned_macs(15)
    heads = f"{100 * red['heads']:.1f} %"
    rows = [
        ["the paper's Fig. 9"]
        + [f"{100 * red[k]:.1f} %" for k in ("parameters", "flops")]
        + [heads],
        ["our exact counts"]
        + [f"{100 * (1 - n1 / n0):.1f} %", f"{100 * (1 - d1 / d0):.1f} %", heads],
    ]
    return _table(["removed, by", "parameters", "FLOPs", "heads"], rows)


def pruned_counts_table(counts: Dict[str, Sequence[int]]) -> str:
    """Heads pruned per layer, one row per rule (``{name: [count per layer]}``), and the total."""
    n = max(len(c) for c in counts.values())
    rows = [[name, *c, sum(c)] for name, c in counts.items()]
    return _table(
        ["heads pruned", *(f"layer {i + 1}" for i in range(n)), "total"], rows
    )


def pilot_heads_table(rows: Sequence[dict], num_layers: int) -> str:
    """The pilot's heads per layer from :func:`head_table` rows: how many have a condition
    number above 2 (not isotropic), and the median largest eigenvalue of Σ⁻¹ (sharpness)."""
    out = []
    for layer in range(num_layers):
        mine = [r for r in rows if r["layer"] == layer]
        median = sorted(r["lambda_max"] for r in mine)[len(mine) // 2]
        stretched = sum(r["condition"] > 2 for r in mine)
        out.append([layer + 1, f"{stretched} of {len(mine)}", f"{median:.2f}"])
    columns = ["layer", "heads with condition number > 2"]
    return _table([*columns, "median largest eigenvalue of Σ⁻¹"], out)


def by_layer(selection: Dict[int, Sequence[int]]) -> str:
    """Pruned heads numbered from 1: ``"layer 1: heads 2, 3; layer 2: heads 1, 9"``."""
    text = "; ".join(
        f"layer {layer + 1}: heads {', '.join(str(h + 1) for h in hs)}"
        for layer, hs in sorted(selection.items())
        if hs
    )
    return text or "none"


def pilot_rule_table(
    rows: Sequence[dict], rules: Dict[str, Dict[int, Sequence[int]]]
) -> str:
    """One row per condition threshold (``{threshold text: selection}``): the heads the rule
    prunes and the largest condition number among the heads it keeps (:func:`head_table` rows)."""
    out = []
    for name, selection in rules.items():
        pruned = {(layer, h) for layer, hs in selection.items() for h in hs}
        kept = max(
            r["condition"] for r in rows if (r["layer"], r["head"]) not in pruned
        )
        out.append([name, by_layer(selection), f"{kept:.0f}"])
    columns = ["condition threshold", "heads pruned", "largest condition number kept"]
    return _table(columns, out, "llr")


def pilot_pruning_table(study: dict) -> str:
    """The pilot's pruning study: test accuracy unpruned, with its degenerate heads pruned
    before and after retraining, and with as many random heads pruned (the range of the
    orders)."""
    acc = study["curve"]["degenerate_first"]
    k = count_selected(study["selected"])
    after = next(r for r in study["retrained"] if r["k"] == k)["test_acc"][-1]
    random_k = [order[k] for order in study["curve"]["random"]]
    rows = [
        ["unpruned", _percent(acc[0])],
        [f"{k} degenerate heads pruned", _percent(acc[k])],
        [f"the same, retrained {study['retrain_epochs']} epochs", _percent(after)],
        [
            f"{k} random heads pruned",
            f"{_percent(min(random_k))} to {_percent(max(random_k))}",
        ],
    ]
    return _table(["model", "test accuracy"], rows)


#: The pruning questions of the verdicts table, each with the sides of its difference.
HURTS = "cost at first: unpruned − pruned, above 0"
BACK = "after retraining: retrained − unpruned, within ±1"
CONTROL = "after retraining: pruned − retrained control, above −1"
CONTROL_15 = "the same, 15 heads pruned"
#: How the table names the runs of each row.
FRESH_RUNS = "8 fresh seeds"
SECOND_RUNS = "second test: 8 new seeds"
SEED0_RUNS = "seed 0"


def followup_intervals() -> Optional[Dict[str, Interval]]:
    """The second test's pruning differences with their 95 % intervals over its seeds, as
    :func:`attnconv.evidence.judge.followup_verdicts` computes them from each seed's saved
    pruning study (the judge keeps only their words): ``pruning_hurts_fresh`` (unpruned −
    pruned, at the rule's heads), ``pruning_recovers_controlled`` and ``pruning_recovers_15``
    (retrained − the unpruned control retrained the same way, at the rule's heads and at the
    paper's 15); ``None`` while a run is missing."""
    from ..evidence.followup import PAPER_PRUNED, SEEDS
    from ..evidence.followup_runs import followup_run_name
    from ..experiments.registry import RUNS, load_run, run_state
    from ..experiments.studies_pruning import load_pruning_study

    names = [followup_run_name("generalized", s) for s in SEEDS]
    if any(n not in RUNS or run_state(RUNS[n]) != "present" for n in names):
        return None
    rows = []
    for name in names:
        study = load_pruning_study(load_run(name), verbose=False)
        k = count_selected(study["selected_paper_thresholds"])
        curve = study["curve"]["degenerate_first"]
        after = {r["k"]: _last(r["test_acc"]) for r in study["retrained"]}
        rows.append(
            {
                "unpruned": curve[0],
                "pruned": curve[k],
                "retrained": after[k],
                "control": after[0],
                "retrained15": after[PAPER_PRUNED],
            }
        )

    def pair(a: str, b: str) -> Interval:
        return paired_seed_interval([r[a] for r in rows], [r[b] for r in rows])

    return {
        "pruning_hurts_fresh": pair("unpruned", "pruned"),
        "pruning_recovers_controlled": pair("retrained", "control"),
        "pruning_recovers_15": pair("retrained15", "control"),
    }


def _last(values):
    """The last value of a per-epoch series (or the value itself)."""
    return values[-1] if isinstance(values, list) else values


def seed_intervals(study: dict) -> Dict[str, Interval]:
    """One run's pruning differences on its own test images, as the exploratory rule computes
    them (:func:`attnconv.chapters.shared.paper_claims.pruning_claims`: the exact McNemar
    interval where the study kept predictions): ``pruning_hurts`` (unpruned − pruned) and
    ``pruning_recovers`` (retrained − unpruned), at the heads the study pruned."""
    acc = pruning_accuracies(study, count_selected(study["selected"]))
    labels = acc.get("labels") or 1017

    def diff(a: str, b: str) -> Interval:
        return same_model_difference(
            acc.get(f"{a}_predictions"),
            acc.get(f"{b}_predictions"),
            labels,
            (acc[a], acc[b]),
        )

    return {
        "pruning_hurts": diff("full", "pruned"),
        "pruning_recovers": diff("retrained", "full"),
    }


def fresh_verdict_rows(fresh) -> List[tuple]:
    """Table 8.2's rows, (question, runs, interval, verdict): the fresh seeds' verdicts on the
    two pruning claims (``fresh``, the judge's), the ones the chapter's box counts."""
    return [
        (HURTS, FRESH_RUNS, fresh["pruning_hurts"].interval, fresh["pruning_hurts"]),
        (
            BACK,
            FRESH_RUNS,
            fresh["pruning_recovers"].interval,
            fresh["pruning_recovers"],
        ),
    ]


def second_test_rows(follow, intervals) -> List[tuple]:
    """The second test's rows, (question, runs, interval, verdict): its verdicts (``follow``,
    the judge's) with their ``intervals`` from :func:`followup_intervals`."""
    return [
        (
            HURTS,
            SECOND_RUNS,
            intervals["pruning_hurts_fresh"],
            follow["pruning_hurts_fresh"],
        ),
        (
            CONTROL,
            SECOND_RUNS,
            intervals["pruning_recovers_controlled"],
            follow["pruning_recovers_controlled"],
        ),
        (
            CONTROL_15,
            SECOND_RUNS,
            intervals["pruning_recovers_15"],
            follow["pruning_recovers_15"],
        ),
    ]


def pruning_verdict_rows(fresh, follow, intervals) -> List[tuple]:
    """Every pruning verdict on new seeds, question by question: :func:`fresh_verdict_rows`
    and :func:`second_test_rows` interleaved (the cost at first, then retraining)."""
    (hurts, back), (hurts2, control, control15) = (
        fresh_verdict_rows(fresh),
        second_test_rows(follow, intervals),
    )
    return [hurts, hurts2, back, control, control15]


def seed_verdict_rows(claims, intervals) -> List[tuple]:
    """Seed 0's rows, (question, runs, interval, verdict): its claims' verdicts (``claims``,
    key → claim) with their ``intervals`` from :func:`seed_intervals`."""
    return [
        (HURTS, SEED0_RUNS, intervals["pruning_hurts"], claims["pruning_hurts"]),
        (BACK, SEED0_RUNS, intervals["pruning_recovers"], claims["pruning_recovers"]),
    ]


def _verdict_cells(row: tuple, runs: bool = True) -> List[str]:
    """One row of :func:`verdicts_table`: question, runs (unless not ``runs``), the difference
    in points, its 95 % interval (as the verdicts print them) and the verdict's badge."""
    question, who, iv, verdict = row
    lo, hi = iv.ends(100.0, 1)
    diff = signed_number(100 * iv.estimate)
    return (
        [question]
        + ([who] if runs else [])
        + [
            diff,
            f"[{lo}, {hi}]",
            verdict_badge(getattr(verdict, "verdict", verdict)),
        ]
    )


def verdicts_table(rows: Sequence[tuple], runs: bool = True) -> str:
    """The pruning claims' differences side by side: ``rows`` of (question, runs, the
    difference's :class:`~attnconv.experiments.verdicts.Interval`, the verdict: a word or an
    object with a ``verdict``); the difference in points and its 95 % interval, as the verdicts
    print them, and the verdict as a badge. Without ``runs`` the runs column is left out (a
    table whose rows share their runs, named in its caption)."""
    columns = ["question", "runs", "difference (points)", "95 % interval", "verdict"]
    if not runs:
        columns.remove("runs")
    cells = [_verdict_cells(r, runs) for r in rows]
    return _table(columns, cells, "llrrl" if runs else "lrrl")


def verdicts_list(rows: Sequence[tuple]) -> str:
    """The same rows as :func:`verdicts_table`, one Markdown item each (for an aside, where a
    numbered table would be too much): question, difference, interval, badge."""
    items = []
    for row in rows:
        question, _, diff, interval, badge = _verdict_cells(row)
        items.append(f"- {question}: {diff} points, 95 % interval {interval}, {badge}")
    return "\n".join(items)


# --------------------------------------------------------------------------- "initially hurts a bit"
#: A drop counts as more than the test set's noise when it exceeds this many binomial standard
#: errors of the unpruned accuracy, sqrt(p (1 − p) / n) over the n test images.
NOISE_STANDARD_ERRORS = 2.0


def initial_drop(study: dict, test_size: int) -> Dict[str, float]:
    """From a saved pruning study: the unpruned test accuracy ``full``, the accuracy with the ``k``
    degenerate heads pruned and no retraining ``pruned``, its ``drop`` (points), the range of drops
    when ``k`` random heads are pruned (``random_lo``, ``random_hi``), the ``noise`` (points,
    :data:`NOISE_STANDARD_ERRORS` binomial standard errors over ``test_size`` images) and the
    retraining's length (``retrain_epochs`` of ``base_epochs``)."""
    k = count_selected(study["selected"])
    curve = study["curve"]["degenerate_first"]
    full, pruned = float(curve[0]), float(curve[k])
    random_drops = [100 * (float(o[0]) - float(o[k])) for o in study["curve"]["random"]]
    se = math.sqrt(full * (1 - full) / test_size)
    return {
        "k": k,
        "full": full,
        "pruned": pruned,
        "drop": 100 * (full - pruned),
        "random_lo": min(random_drops),
        "random_hi": max(random_drops),
        "noise": 100 * NOISE_STANDARD_ERRORS * se,
        "retrain_epochs": int(study["retrain_epochs"]),
        "base_epochs": int(study["base_epochs"]),
    }
