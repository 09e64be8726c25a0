"""A chapter's numeric checks as one visible table: check · measured · tolerance.

Every check asserts when it is recorded (a failed check raises :class:`CheckFailed`, so nbval
fails); the table shows each measured value only as precisely as it holds on every CPU: a
round-off error is shown as a bound (``shown_below``), asserted too, any other value rounded to
``digits`` significant digits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Optional

__all__ = [
    "CheckFailed",
    "Check",
    "Checks",
    "check_table",
    "format_bound",
    "format_measured",
]


class CheckFailed(AssertionError):
    """A chapter's check did not hold."""


def format_bound(x: float) -> str:
    """``1e-12`` style for a power of ten, else the value as written (``1.001``, ``0.5``)."""
    if x == 0:
        return "0"
    exponent = math.floor(math.log10(abs(x)))
    if abs(x) == 10.0**exponent and abs(exponent) >= 3:
        return f"{'-' if x < 0 else ''}1e{exponent}"
    text = f"{x:g}"
    if "e" in text:  # 2e-07 -> 2e-7
        mantissa, power = text.split("e")
        return f"{mantissa}e{int(power)}"
    return text


def format_measured(value: float, digits: int = 2) -> str:
    """``value`` to ``digits`` significant digits (plain notation between 1e-3 and 1e5)."""
    if value == 0 or not math.isfinite(value):
        return str(value if value != 0 else 0)
    text = f"{value:.{digits}g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        return f"{mantissa}e{int(exponent)}"
    return text


@dataclass(frozen=True)
class Check:
    """One row: ``name``, the ``measured`` text, the ``tolerance`` text and whether it holds."""

    name: str
    measured: str
    tolerance: str
    passed: bool

    def require(self) -> "Check":
        if not self.passed:
            raise CheckFailed(
                f"check failed: {self.name}: measured {self.measured}, "
                f"tolerance {self.tolerance}"
            )
        return self


def check_table(rows: Iterable[Check], caption: str = "", name: str = ""):
    """Assert every row, then the rows as a Markdown table (an ``IPython.display.Markdown``).

    With ``caption`` (e.g. ``"Table 1.1 — The checks of chapter 1."``) the table is a MyST
    ``{table}`` directive, so the book renders the caption in the table's ``<caption>``;
    ``name`` is its label for ``{numref}``/``{ref}``. A range in a check's name ("layers 1-2")
    stays on one line."""
    from IPython.display import Markdown

    from .tables import captioned, keep_ranges, markdown_table

    rows = [row.require() for row in rows]
    if not rows:
        raise ValueError("a check table needs at least one check")
    table = markdown_table(
        ["check", "measured", "tolerance"],
        [[keep_ranges(r.name), r.measured, r.tolerance] for r in rows],
        align="lrr",
    ).data
    if not caption:
        return Markdown(table)
    return Markdown(collapsed(captioned(table, caption, name).data, len(rows)))


def collapsed(table: str, n: int) -> str:
    """A captioned check table folded in a dropdown whose bar says how many checks hold ("All
    58 checks hold: measured beside tolerance"), so that a long table does not stand in the
    reading; the table, its caption and its label are inside, as they were. The bar is no
    second title: the table's number and caption are said once, by the caption."""
    holds = "The check holds" if n == 1 else f"All {n} checks hold"
    return f"````{{dropdown}} {holds}: measured beside tolerance\n{table}\n````"


def _number(value) -> float:
    """``value`` as a float; a tensor is detached first (no autograd warning)."""
    detach = getattr(value, "detach", None)
    return float(detach() if detach is not None else value)


class Checks:
    """A chapter's checks, recorded as it runs; each asserts at once. :meth:`table` shows them."""

    def __init__(self) -> None:
        self.rows: list[Check] = []

    def _add(self, row: Check) -> None:
        self.rows.append(row.require())

    def below(
        self,
        name: str,
        measured: float,
        bound: float,
        *,
        shown_below: Optional[float] = None,
        digits: int = 2,
    ) -> None:
        """``measured < bound``. With ``shown_below`` (for round-off, which differs between
        CPUs) the table shows "< shown_below" and that bound is asserted too; it must lie below
        the tolerance, else the row would say nothing beyond "passed"."""
        measured = _number(measured)
        passed = measured < bound
        if shown_below is not None:
            if shown_below >= bound:
                raise ValueError(
                    "shown_below must lie below the tolerance (a bound equal to it says "
                    "nothing beyond 'passed')"
                )
            shown = f"< {format_bound(shown_below)}"
            passed = passed and measured < shown_below
        else:
            shown = format_measured(measured, digits)
        self._add(Check(name, shown, f"< {format_bound(bound)}", passed))

    def above(
        self, name: str, measured: float, bound: float, *, digits: int = 2
    ) -> None:
        """``measured > bound``, the measured value rounded to ``digits`` significant digits."""
        measured = _number(measured)
        self._add(
            Check(
                name,
                format_measured(measured, digits),
                f"> {format_bound(bound)}",
                measured > bound,
            )
        )

    def between(
        self, name: str, measured: float, low: float, high: float, *, digits: int = 2
    ) -> None:
        """``low < measured < high``."""
        measured = _number(measured)
        self._add(
            Check(
                name,
                format_measured(measured, digits),
                f"{format_bound(low)} to {format_bound(high)}",
                low < measured < high,
            )
        )

    def equal(self, name: str, measured, expected, *, shown: str = "") -> None:
        """``measured == expected`` exactly (integers, counts, shapes); ``shown`` replaces both
        values' text in the table."""
        text = shown or str(measured)
        self._add(Check(name, text, f"= {shown or expected}", measured == expected))

    def holds(self, name: str, condition: bool, measured: str, tolerance: str) -> None:
        """A condition that is not a number (e.g. two tensors equal bit for bit): the table
        shows ``measured`` and ``tolerance`` as given."""
        self._add(Check(name, measured, tolerance, bool(condition)))

    def table(self, caption: str = "", name: str = ""):
        """:func:`check_table` of the recorded checks."""
        return check_table(self.rows, caption, name)
