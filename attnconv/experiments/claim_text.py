"""The book's claims as text: a table of claims and their evidence, a claim's block, its short
quote and its two-line summary (the presentation of :class:`~attnconv.experiments.verdicts.Claim`;
the verdicts themselves come from :mod:`attnconv.experiments.verdicts`)."""

from __future__ import annotations

import re
from typing import Optional, Sequence

from .verdicts import Claim

__all__ = [
    "squash",
    "cell",
    "verdict_table",
    "claim_block",
    "short_quote",
    "claim_summary",
]


def squash(text: str) -> str:
    """``text`` on one line, runs of white space as one space."""
    return re.sub(r"\s+", " ", text).strip()


def cell(text: str) -> str:
    """``text`` as a Markdown table cell."""
    return squash(text).replace("|", "\\|")


def verdict_table(claims: Sequence[Claim]) -> str:
    """The claims as one Markdown table (the book renders it as an HTML table that wraps to the
    column): one row per piece of evidence; the claim (quote, source, test as written) and the
    verdict with its reason stand in the first row of each claim."""
    lines = [
        "| the paper (arXiv v1) and the test as written | run | what it shows | verdict |",
        "| :--- | :--- | :--- | :--- |",
    ]
    for c in claims:
        for i, e in enumerate(c.evidence):
            claim = f"“{c.quote}” ({c.source}). Test: {c.test}" if i == 0 else ""
            verdict = f"**{c.verdict}**: {c.reason}" if i == 0 else ""
            lines.append(
                f"| {cell(claim)} | {cell(e.run)} | {cell(e.measured)} | {cell(verdict)} |"
            )
    return "\n".join(lines)


def claim_block(claim: Claim, heading: Optional[str] = None, link: str = "") -> str:
    """One claim as a short Markdown block that fits the column: the quote (with its source), the
    test as written, the evidence (one bullet per run or series), the verdict with its reason, the
    confounds; ``heading``: an optional bold title; ``link``: where in the book (Markdown)."""
    lines = []
    if heading:
        lines.append(f"**{heading}**\n")
    lines.append(f"> “{squash(claim.quote)}” ({claim.source})\n")
    if claim.kind:
        margin = f", margin {claim.margin}" if claim.margin not in ("", "—") else ""
        lines.append(
            f"*Kind.* {claim.kind}{margin} (exploratory rule, written after some of these runs existed)\n"
        )
    lines.append(f"*Test.* {squash(claim.test)}\n")
    lines.append("*Evidence.*\n")
    lines += [f"- {squash(e.run)}: {squash(e.measured)}" for e in claim.evidence]
    lines.append("")
    lines.append(f"*Verdict.* **{claim.verdict}** — {squash(claim.reason)}.")
    if claim.confounds:
        lines.append("")
        lines.append("*Confounds.* " + " ".join(squash(c) for c in claim.confounds))
    if link:
        lines.append("")
        lines.append(f"*Where.* {link}")
    return "\n".join(lines)


def short_quote(quote: str, limit: int = 140) -> str:
    """The quote as it is, or, when longer than ``limit`` characters, its first words up to the
    limit followed by "[...]" (still verbatim by :func:`paper_text_contains`)."""
    q = squash(quote)
    if len(q) <= limit:
        return q
    cut = q[:limit].rsplit(" ", 1)[0].rstrip(",;:")
    return f"{cut} [...]"


def claim_summary(claim: Claim, title: str = "", link: str = "") -> str:
    """One claim in two short lines for a summary page: the title, the short quote and its source;
    the verdict with the first part of its reason (what decided it, without the noise
    statement) and where in the book the evidence is."""
    reason = squash(claim.reason).split(" (noise:")[0]
    head = f"**{title}.** " if title else ""
    where = f" Evidence: {link}." if link else ""
    return (
        f"{head}“{short_quote(claim.quote)}” ({claim.source})\n\n"
        f"*{claim.verdict}* — {reason}.{where}"
    )
