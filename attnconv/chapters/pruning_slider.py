"""Kernel-free interactive figure of chapter 8 (Plotly): which heads the pruning rule of App. A.1
would prune as its condition-number threshold moves along a slider.

Every frame applies the rule itself (:func:`attnconv.experiments.pruning.is_degenerate`) to the
rows of :func:`attnconv.experiments.studies_pruning.head_table`, computed from a saved history:
nothing is trained and no weights are read. The page needs neither a kernel nor a network
(:func:`attnconv.chapters.shared.plotly_style.figure_html`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

from ..experiments.paper_numbers import PAPER_MAX_EIGENVALUE_THRESHOLD
from ..experiments.pruning import is_degenerate
from .shared.plotly_style import add_slider_frames, plotly_go
from .shared.plotting import model_colour

__all__ = [
    "SLIDER_EXPONENTS",
    "ThresholdFrame",
    "threshold_frames",
    "pruning_slider_figure",
]

#: The slider's condition-number thresholds, as powers of ten: 10¹ to 10¹⁴, one a decade. The
#: paper's 10⁵ and the authors' code's 10³ are among them.
SLIDER_EXPONENTS = tuple(range(1, 15))
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
_KEPT, _PRUNED = 1, 0


def _power(exponent: int) -> str:
    return "10" + str(exponent).translate(_SUPERSCRIPT)


def _short(condition: float) -> str:
    """A condition number in at most six characters: 1.6, 53, 533, 2.4e12."""
    if condition < 9.95:
        return f"{condition:.1f}"
    if condition < 999.5:
        return f"{condition:.0f}"
    mantissa, exponent = f"{condition:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


@dataclass(frozen=True)
class ThresholdFrame:
    """One slider position: the condition-number ``threshold`` (10^``exponent``), the heads the
    rule prunes (``{layer: [heads]}``, 0-based, only layers with some) and the heads each layer
    keeps (``kept[layer]``)."""

    exponent: int
    threshold: float
    pruned: Dict[int, List[int]]
    kept: Tuple[int, ...]


def threshold_frames(
    rows: Sequence[dict],
    exponents: Sequence[int] = SLIDER_EXPONENTS,
    max_eigenvalue_threshold: float = PAPER_MAX_EIGENVALUE_THRESHOLD,
) -> List[ThresholdFrame]:
    """The rule at each condition threshold 10^e of ``exponents``, with the largest-eigenvalue
    threshold held at ``max_eigenvalue_threshold``, on ``rows`` (one per head: ``layer``,
    ``head``, ``lambda_max``, ``condition``)."""
    layers = sorted({r["layer"] for r in rows})
    frames = []
    for e in exponents:
        t = 10.0 ** int(e)
        pruned: Dict[int, List[int]] = {}
        for r in rows:
            if is_degenerate(
                r["lambda_max"], r["condition"], max_eigenvalue_threshold, t
            ):
                pruned.setdefault(r["layer"], []).append(r["head"])
        pruned = {k: sorted(v) for k, v in sorted(pruned.items())}
        kept = tuple(
            sum(r["layer"] == li for r in rows) - len(pruned.get(li, []))
            for li in layers
        )
        frames.append(ThresholdFrame(int(e), t, pruned, kept))
    return frames


def _grid(rows, frame: ThresholdFrame, n_layers: int, n_heads: int) -> list:
    z = [[None] * n_heads for _ in range(n_layers)]
    for r in rows:
        gone = r["head"] in frame.pruned.get(r["layer"], [])
        z[r["layer"]][r["head"]] = _PRUNED if gone else _KEPT
    return z


def _title(frame: ThresholdFrame) -> str:
    total = sum(len(v) for v in frame.pruned.values())
    return (
        f"condition threshold {_power(frame.exponent)}: {total} "
        f"head{'' if total == 1 else 's'} pruned, "
        f"{sum(frame.kept)} kept"
    )


def _dynamic(rows, frame: ThresholdFrame, n_layers: int, n_heads: int) -> list:
    go = plotly_go()
    return [
        go.Heatmap(z=_grid(rows, frame, n_layers, n_heads)),
        go.Bar(
            x=list(frame.kept),
            text=[f"{k} of {n_heads}" for k in frame.kept],
        ),
    ]


def pruning_slider_figure(
    rows: Sequence[dict], frames: Sequence[ThresholdFrame], model: str, initial: int
):
    """A Plotly figure with one frame per :class:`ThresholdFrame` and a slider over the condition
    threshold. Left: every head (columns) of every layer (rows), in ``model``'s colour where the
    rule keeps it and grey where it prunes it; its condition number is written in it and its
    eigenvalues are in the hover text. Right: the heads each layer keeps. ``initial``: the frame
    shown first."""
    from plotly.subplots import make_subplots

    n_layers = 1 + max(r["layer"] for r in rows)
    n_heads = 1 + max(r["head"] for r in rows)
    colour = model_colour(model)
    label = [[""] * n_heads for _ in range(n_layers)]
    hover = [[""] * n_heads for _ in range(n_layers)]
    for r in rows:
        label[r["layer"]][r["head"]] = _short(r["condition"])
        hover[r["layer"]][r["head"]] = (
            f"layer {r['layer'] + 1}, head {r['head'] + 1}: condition number "
            f"{r['condition']:.2e}, largest eigenvalue {r['lambda_max']:.2g}"
        )
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.74, 0.26],
        horizontal_spacing=0.06,
        subplot_titles=("heads (grey: pruned)", "heads kept"),
    )
    start = frames[initial]
    heat, bar = _dynamic(rows, start, n_layers, n_heads)
    heat.update(
        x=list(range(1, n_heads + 1)),
        y=list(range(1, n_layers + 1)),
        zmin=0,
        zmax=1,
        colorscale=[[0, "#d9d9d9"], [0.5, "#d9d9d9"], [0.5, colour], [1, colour]],
        showscale=False,
        xgap=2,
        ygap=2,
        text=label,
        texttemplate="%{text}",
        textfont={"size": 12},
        customdata=hover,
        hovertemplate="%{customdata}<extra></extra>",
    )
    bar.update(
        y=list(range(1, n_layers + 1)),
        orientation="h",
        marker={"color": colour},
        textposition="outside",
        cliponaxis=False,
        hovertemplate="layer %{y}: %{x} heads kept<extra></extra>",
        showlegend=False,
    )
    fig.add_trace(heat, 1, 1)
    fig.add_trace(bar, 1, 2)
    add_slider_frames(
        fig,
        frames,
        lambda f: _dynamic(rows, f, n_layers, n_heads),
        _title,
        [_power(f.exponent) for f in frames],
        initial,
        "prune above condition number ",
        height=460,
        margin={"l": 60, "r": 20, "t": 80, "b": 130},
    )
    fig.update_xaxes(title_text="head", dtick=1, showgrid=False, row=1, col=1)
    fig.update_yaxes(
        title_text="layer", dtick=1, autorange="reversed", showgrid=False, row=1, col=1
    )
    fig.update_xaxes(range=[0, n_heads + 3], showticklabels=False, row=1, col=2)
    fig.update_yaxes(dtick=1, autorange="reversed", showticklabels=False, row=1, col=2)
    return fig
