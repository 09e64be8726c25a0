"""An interactive explorer of one positional attention head (Lemma 2, App. A.1 eq. 16, Theorem 1).

One head with only the position-only term of eq. (8) attends from a query pixel q to every key k
of a grid with probabilities softmax_k(vᵀ r_{k−q}). With the quadratic encoding (eq. 9) that is
softmax(−α‖δ − Δ‖²); with the generalized one (eq. 16) softmax(−½(δ − Δ)ᵀ M Mᵀ (δ − Δ)),
M = Σ^{-1/2}. Restricted to the K×K window around q, these probabilities are the weights with
which the head mixes the K×K neighbourhood: the *kernel* the head implements. A one-hot head at an
integer Δ (large α) is one tap of a convolution kernel, which is the building block of Theorem 1.

The drawing is pure (:func:`head_state_probabilities`, :func:`head_state_kernel`,
:func:`draw_head_state`, :func:`head_state_figure` take a plain :class:`HeadState`); the widget of
:func:`head_explorer` only maps sliders to a :class:`HeadState` and redraws.
"""

from __future__ import annotations

import math
from typing import Optional

import ipywidgets as widgets
import torch

from .shared.gaussian_maps import draw_mass_contours
from .shared.head_state import HeadState, head_state_kernel, head_state_probabilities
from .shared.plotting import COLUMN_INCHES

__all__ = [
    "draw_head_state",
    "head_state_figure",
    "HeadExplorer",
    "head_explorer",
]


def draw_head_state(ax_attention, ax_kernel, state: HeadState) -> None:
    """Draw ``state`` on two axes: (a) the attention probabilities over the key grid (framed in
    grey), with the query (red square), the head centre q + Δ (orange cross), the K×K window (green
    dashed) and the 50 % and 90 % probability-mass outlines; (b) the K×K kernel with its entries
    written in ("off grid" for taps whose key is outside the grid, which get no mass)."""
    from matplotlib.patches import Rectangle

    probs = head_state_probabilities(state)
    kernel = head_state_kernel(state, probs)
    h, w = state.grid
    q0, q1 = state.query
    k = state.kernel_size
    r = (k - 1) // 2

    ax = ax_attention
    ax.imshow(probs.numpy(), cmap="Blues", vmin=0, vmax=max(float(probs.max()), 0.02))
    draw_mass_contours(ax, probs, (0.5, 0.9), linewidth=0.9)
    ax.add_patch(
        Rectangle(
            (q1 - r - 0.5, q0 - r - 0.5), k, k, fill=False, ec="green", ls="--", lw=1.5
        )
    )
    ax.add_patch(Rectangle((q1 - 0.5, q0 - 0.5), 1, 1, fill=False, ec="red", lw=1.5))
    cy, cx = q0 + state.delta[0], q1 + state.delta[1]
    ax.plot([cx], [cy], marker="x", color="darkorange", markersize=9, mew=2)
    # show the window and the centre even where they leave the grid (framed in grey)
    ax.add_patch(Rectangle((-0.5, -0.5), w, h, fill=False, ec="gray", lw=1.0))
    ax.set_xlim(min(-0.5, q1 - r - 0.5, cx - 0.5), max(w - 0.5, q1 + r + 0.5, cx + 0.5))
    ax.set_ylim(max(h - 0.5, q0 + r + 0.5, cy + 0.5), min(-0.5, q0 - r - 0.5, cy - 0.5))
    ax.set_xticks([]), ax.set_yticks([])
    kind = (
        "generalized (eq. 16)"
        if state.generalized
        else f"quadratic, α = {state.alpha:.3g}"
    )
    ax.set_title(
        f"attention, Δ = ({state.delta[0]:.2g}, {state.delta[1]:.2g}), {kind}",
        fontsize=9,
    )

    ax = ax_kernel
    top = (
        1.0  # a fixed range: a 0.10 tap looks light and a 1.00 tap dark in every figure
    )
    ax.imshow(kernel.numpy(), cmap="Greens", vmin=0, vmax=top)
    for i in range(k):
        for j in range(k):
            v = float(kernel[i, j])
            on_grid = 0 <= q0 + i - r < h and 0 <= q1 + j - r < w
            ax.text(
                j,
                i,
                f"{v:.2f}" if on_grid else ("off grid" if k <= 3 else "off\ngrid"),
                ha="center",
                va="center",
                fontsize=9 if on_grid and k <= 3 else 8.5,
                color="white" if v > 0.6 * top else ("black" if on_grid else "gray"),
            )
    ticks = list(range(k))
    ax.set_xticks(ticks), ax.set_yticks(ticks)
    (
        ax.set_xticklabels([str(t - r) for t in ticks]),
        ax.set_yticklabels([str(t - r) for t in ticks]),
    )
    ax.set_xlabel("δ₂ (column shift)", fontsize=8.5)
    ax.set_ylabel("δ₁ (row shift)", fontsize=8.5)
    ax.set_title(f"{k}×{k} kernel, window mass {float(kernel.sum()):.2f}", fontsize=9)


def head_state_figure(state: HeadState):
    """A two-panel matplotlib figure of :func:`draw_head_state` (what the explorer shows)."""
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(
        1,
        2,
        figsize=(COLUMN_INCHES, 3.6),
        gridspec_kw={"width_ratios": [1.25, 1]},
        layout="constrained",
    )
    draw_head_state(a, b, state)
    return fig


def _float_slider(desc, value, lo, hi, step, style, layout) -> widgets.FloatSlider:
    """A float slider of the explorer, updating when released."""
    return widgets.FloatSlider(
        value=value,
        min=lo,
        max=hi,
        step=step,
        description=desc,
        style=style,
        layout=layout,
        continuous_update=False,
    )


class HeadExplorer(widgets.HBox):
    """The widget of :func:`head_explorer` (an ipywidgets ``HBox``): sliders that define a
    :class:`HeadState` and an output area redrawn with :func:`head_state_figure` on every change.

    ``sliders`` is a dict of the controls, ``output`` the drawing area, ``state`` the current
    :class:`HeadState` and ``redraws`` the number of redraws so far.
    """

    M_RANGE = 5.0

    def __init__(self, state: Optional[HeadState] = None, draw: bool = True):
        state = HeadState() if state is None else state
        if not isinstance(state, HeadState):
            raise ValueError("state must be a HeadState")
        if state.kernel_size not in (3, 5):
            raise ValueError(
                f"the explorer offers kernel sizes 3 and 5, got {state.kernel_size}"
            )
        self._draw, self._suspended, self.redraws = draw, False, 0
        self.sliders = self._make_sliders(state)
        self._grid = state.grid
        self.output = widgets.Output()
        super().__init__([self._controls(), self.output])
        for name, control in self.sliders.items():
            control.observe(self._on_change, names="value")
        self._sync_enabled()
        self.state = self._read_state()
        self.redraw()

    def _make_sliders(self, state: HeadState) -> dict:
        """The controls, by name, set to ``state`` (clamped to their ranges)."""
        h, w = state.grid
        style, layout = {"description_width": "90px"}, widgets.Layout(width="330px")

        def fs(desc, v, lo, hi, step):
            return _float_slider(desc, v, lo, hi, step, style, layout)

        m = state.inv_sqrt_sigma or ((1.0, 0.0), (0.0, 1.0))
        lim = max(h, w)
        return {
            "delta1": fs("Δ₁ (row)", state.delta[0], -lim, lim, 0.1),
            "delta2": fs("Δ₂ (column)", state.delta[1], -lim, lim, 0.1),
            "alpha": widgets.FloatLogSlider(
                value=max(state.alpha, 1e-2),
                base=10,
                min=-2,
                max=1.6,
                step=0.05,
                description="α",
                style=style,
                layout=layout,
                continuous_update=False,
            ),
            "generalized": widgets.Checkbox(
                value=state.generalized,
                description="generalized encoding (M = Σ^-1/2)",
                indent=False,
            ),
            "m11": fs("M₁₁", m[0][0], -self.M_RANGE, self.M_RANGE, 0.05),
            "m12": fs("M₁₂", m[0][1], -self.M_RANGE, self.M_RANGE, 0.05),
            "m21": fs("M₂₁", m[1][0], -self.M_RANGE, self.M_RANGE, 0.05),
            "m22": fs("M₂₂", m[1][1], -self.M_RANGE, self.M_RANGE, 0.05),
            "query_row": widgets.IntSlider(
                value=state.query[0],
                min=0,
                max=h - 1,
                description="query row",
                style=style,
                layout=layout,
                continuous_update=False,
            ),
            "query_col": widgets.IntSlider(
                value=state.query[1],
                min=0,
                max=w - 1,
                description="query column",
                style=style,
                layout=layout,
                continuous_update=False,
            ),
            "kernel_size": widgets.ToggleButtons(
                options=[3, 5],
                value=state.kernel_size,
                description="kernel K",
                style={"button_width": "48px"},
            ),
        }

    def _controls(self) -> widgets.VBox:
        """The column of controls: the head's, then the query's and the window's."""
        s = self.sliders
        return widgets.VBox(
            [
                widgets.HTML("<b>head</b>"),
                s["delta1"],
                s["delta2"],
                s["alpha"],
                s["generalized"],
                s["m11"],
                s["m12"],
                s["m21"],
                s["m22"],
                widgets.HTML("<b>query and window</b>"),
                s["query_row"],
                s["query_col"],
                s["kernel_size"],
            ]
        )

    # -- state ------------------------------------------------------------------------------
    def _read_state(self) -> HeadState:
        s = self.sliders
        m = None
        if s["generalized"].value:
            m = ((s["m11"].value, s["m12"].value), (s["m21"].value, s["m22"].value))
        return HeadState(
            delta=(s["delta1"].value, s["delta2"].value),
            alpha=s["alpha"].value,
            inv_sqrt_sigma=m,
            query=(s["query_row"].value, s["query_col"].value),
            grid=self._grid,
            kernel_size=s["kernel_size"].value,
        )

    def _sync_enabled(self) -> None:
        gen = self.sliders["generalized"].value
        for name in ("m11", "m12", "m21", "m22"):
            self.sliders[name].disabled = not gen
        self.sliders["alpha"].disabled = gen

    def _on_change(self, change) -> None:
        if self._suspended:
            return
        if change["owner"] is self.sliders["generalized"]:
            self._sync_enabled()
            if change["new"]:
                # start from the same head: the isotropic M = √(2α)·I reproduces eq. (9)
                root = min(math.sqrt(2 * self.sliders["alpha"].value), self.M_RANGE)
                self._suspended = True
                try:
                    for name, v in (
                        ("m11", root),
                        ("m12", 0.0),
                        ("m21", 0.0),
                        ("m22", root),
                    ):
                        self.sliders[name].value = v
                finally:
                    self._suspended = False
        self.state = self._read_state()
        self.redraw()

    def redraw(self) -> None:
        """Redraw the figure of the current state into the output area."""
        self.redraws += 1
        if not self._draw:
            return
        import matplotlib.pyplot as plt
        from IPython.display import clear_output, display

        with self.output:
            clear_output(wait=True)
            fig = head_state_figure(self.state)
            display(fig)
            plt.close(fig)

    def probabilities(self) -> torch.Tensor:
        """:func:`head_state_probabilities` of the current state."""
        return head_state_probabilities(self.state)


def head_explorer(state: Optional[HeadState] = None, draw: bool = True) -> HeadExplorer:
    """Build the interactive head explorer (ipywidgets): sliders for Δ₁, Δ₂ and α (eq. 9), a toggle
    to the generalized encoding with sliders for the entries of M = Σ^{-1/2} (eq. 16), the query
    pixel and the kernel size K ∈ {3, 5}. Every change redraws :func:`head_state_figure`.

    Display the returned widget in Jupyter; ``draw=False`` skips drawing, which tests use. Values
    of ``state`` outside the slider ranges (|Δ| ≤ max(H, W), 0.01 ≤ α ≤ 10^1.6, |M_ij| ≤ 5) are
    clamped to them.
    """
    return HeadExplorer(state, draw=draw)
