#!/usr/bin/env python3
"""Check the built book (_build/html) as its readers see it.

    .venv/bin/python tests/browser/check_book.py            # or: make check-book

Part A, structural, always runs (no browser): every HTML page is parsed and
  - nothing is loaded from another host: <script src>, <link href>, <img>/<iframe>/<source>/
    <video>/<audio>/<embed>/<object>, inline styles and every CSS file's @import / url() / fonts
    must be local (links <a href> to other sites are fine);
  - no line of text output (div.cell_output pre, div.output pre, ...) is wider than
    MAX_OUTPUT_CHARS characters, the width of the content column (see below);
  - every <img> file referenced exists;
  - reader pages keep the workshop out (workshop-text): no page outside the appendix
    (WORKSHOP_PAGES) names an issue ("issue 20"), a commit ("commit 30b81eb", or a bare 7-40
    digit hex id), page faults or a pass/fail goal ("goal ... met").
Part B, in a browser, runs when Chromium is found (/usr/bin/chromium, or $CHROMIUM); it opens every
page from file:// in headless Chromium with every other request blocked (and recorded as a
failure), waits for MathJax, and checks: math typeset (no raw \\( \\[ $$ left in the visible text,
every .math element holds a MathJax container, no MathJax error), no horizontal overflow of output
blocks and display math (scrollWidth > clientWidth + 1), every image loaded, every notebook figure
shown at its own width (not shrunk to the column, so its text stays the size it was drawn: at least
12 px at a 1280 px window, which attnconv.chapters.shared.plotting checks when the figure is made) and as a 2x PNG, no console errors,
interactive elements respond (every slider, the play button and, where the figure says it is
clickable, a click on its image change each Plotly figure; each Plotly slider and button has a
native twin beneath the figure that takes the focus, is labelled and moves the figure from the
keyboard, and follows the mouse (book_checks/plotly_keys.py); ipywidgets embedded from widget state
render and respond; every live widget's controls take the focus and a key changes its readout,
the head explorer prints the target weight Python computes, and a sortable table sorts on a click
or Enter on its headers: book_checks/live.py), and the reading checks: no word or number in a table cell broken across
lines, at 1400 px and at 1280 px (broken-table-word: every word of every visible td/th is a
DOM Range, and its rects must lie on one line, except after a compound's own hyphen); no code block (notebook input, Markdown
code or source listing) that scrolls sideways at 1400 px or at 1280 px (overflow-code); every experiment chapter
(EXPERIMENT_CHAPTERS) has a result box (an admonition with class result-box) starting in the
first FIRST_SCREEN_PX px of its content (no-result-box). The reader's rules (READER_RULES and
sidebar-order, see the constants below): a figure within the first FIRST_SCREEN_PX px of the
intro and of every chapter (late-figure), no visible output line ending in True/False outside a
collapsed block (true-false-output), nothing scrolling sideways at NARROW_WIDTH px (outputs,
tables, Plotly, a code block's box; overflow-1280), every chapter image in a
<figure> captioned "Figure <chapter>.k" (unnumbered-figure), the sidebar in chapter-number
order (sidebar-order), at most MAX_CODE_LINES visible code lines per chapter (code-lines); pages being reworked elsewhere list
their failures as EXPECTED (EXPECTED_READER_FAILURES) until the entry is removed. Each page's
height at 1400 px, its visible code lines and its first figure's position are recorded and
printed (page_height, visible_code_lines, first_figure_top in --json). A full-page screenshot of every page at 1400 px width goes to
_build/screenshots/.

Exit status 0 when everything passes, 1 on any failure, 2 when the book is not built.
Only the Python standard library, beautifulsoup4 (installed with jupyter-book) and, for part B,
playwright (requirements.txt) driving the system Chromium are used; `playwright install` is never
needed.  `--json FILE` writes every measurement (widest lines, figure sizes, ...) for reports.

The checks live in tests/browser/book_checks, one module per job: common (constants, the
report, page helpers), structural (part A), live (the live widgets and sortable
tables), plotly_keys (the Plotly figures from the keyboard), teaching (how the book teaches: sentence length per
chapter, at most 6 sidebar parts whose entries are the pages' titles, the last part
"Appendices" holding every appendix page titled "Appendix A.", "Appendix B.", ... in order
(appendix-letters), links naming an appendix's letter opening it (appendix-link), every table
and figure numbered and captioned, badge words from the fixed set, no raw $ in rendered text, alt text not a
file path, at most 30 % of visible code lines printing or formatting; pages not reworked yet are
listed in book_checks/teaching.py, PENDING_TEACHING_PAGES) and browser (part B).
"""

# ruff: noqa: F403, F405  (the shared constants and helpers come from book_checks)

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

# the checks live in tests/browser/book_checks, one module per job; this file is the entry point
sys.path.insert(0, str(Path(__file__).resolve().parent))

from book_checks import common, teaching  # noqa: E402
from book_checks.browser import *  # noqa: E402,F403
from book_checks.common import *  # noqa: E402,F403
from book_checks.structural import *  # noqa: E402,F403
from book_checks.teaching import *  # noqa: E402,F403

# ---------------------------------------------------------------- summary --


def summarize(rep: Report, pages: list[str], max_listed: int) -> None:
    per_page = rep.per_page()
    print()
    print("Failures per page:")
    for page in pages + sorted(set(per_page) - set(pages)):
        counts = per_page.get(page)
        if counts:
            print(
                f"  {page}: " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items()))
            )
        elif page in pages:
            print(f"  {page}: ok")
    for kind in KIND_TEXT:
        items = rep.failures.get(kind)
        if not items:
            continue
        print(f"\n{kind} ({KIND_TEXT[kind]}): {len(items)}")
        for page, text in items[:max_listed]:
            print(f"  {page}: {text}")
        if len(items) > max_listed:
            print(f"  ... and {len(items) - max_listed} more")
    print(
        "\nReader's measures per page (visible code lines, first figure at, page height):"
    )
    for page in pages:
        info = rep.pages.get(page, {})
        if "visible_code_lines" in info:
            print(
                f"  {page}: {info['visible_code_lines']} code lines, first figure at "
                f"{info.get('first_figure_top', '-')} px, height {info.get('page_height', '-')} px, "
                f"{info.get('true_false_lines', 0)} True/False lines"
            )
    expected = Counter()
    for kind, items in rep.expected.items():
        for page, _ in items:
            expected[page, kind] += 1
    if expected:
        print(
            "\nEXPECTED failures (allow-listed in EXPECTED_READER_FAILURES, or pending in "
            "PENDING_TEACHING_PAGES, while those "
            "chapters are reworked; not counted):"
        )
        for (page, kind), n in sorted(expected.items()):
            print(f"  {page}: {kind} {n}")


def allow_list_passes(rep: Report, pages: list[str], browser: bool) -> list[str]:
    """Allow-listed (page, kind) pairs that no longer fail: the entry can go."""
    browser_kinds = {"late-figure", "overflow-1280"}
    failed = {(p, k) for k, items in rep.expected.items() for p, _ in items}
    allowed = {
        page: set(common.EXPECTED_READER_FAILURES.get(page, ()))
        | set(teaching.PENDING_TEACHING_PAGES.get(page, ()))
        for page in pages
    }
    return [
        f"{page}: {kind}"
        for page in pages
        for kind in sorted(allowed[page])
        if (page, kind) not in failed and (browser or kind not in browser_kinds)
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--html",
        type=Path,
        default=ROOT / "_build" / "html",
        help="built book (default _build/html)",
    )
    ap.add_argument("--screenshots", type=Path, default=ROOT / "_build" / "screenshots")
    ap.add_argument(
        "--max-chars",
        type=int,
        default=MAX_OUTPUT_CHARS,
        help=f"widest allowed output line (default {MAX_OUTPUT_CHARS}, measured)",
    )
    ap.add_argument("--no-browser", action="store_true", help="structural checks only")
    ap.add_argument(
        "--pages",
        nargs="*",
        default=[],
        metavar="SUBSTRING",
        help="check only the pages whose path contains one of these",
    )
    ap.add_argument("--json", type=Path, help="write all measurements to this file")
    ap.add_argument(
        "--max-listed", type=int, default=MAX_LISTED, help="offenders listed per kind"
    )
    ap.add_argument(
        "--report-only",
        nargs="*",
        default=[],
        choices=sorted(KIND_TEXT),
        metavar="KIND",
        help="failure kinds listed but not counted as failures (known, tracked open work)",
    )
    args = ap.parse_args(argv)
    KIND_TEXT["wide-output-line"] = f"output line wider than {args.max_chars} chars"

    html_dir = args.html.resolve()
    if not (html_dir / "index.html").is_file():
        print(f"no built book at {html_dir} (run: make book)")
        return 2
    pages = sorted(
        p.relative_to(html_dir).as_posix()
        for p in html_dir.rglob("*.html")
        if p.relative_to(html_dir).parts[0] not in ("_static", "_sources", "_images")
    )
    if args.pages:
        pages = [p for p in pages if any(k in p for k in args.pages)]
    rep = Report()
    t0 = time.monotonic()
    structural_checks(html_dir, pages, rep, args.max_chars)
    t_struct = time.monotonic() - t0
    print(f"structural checks: {len(pages)} pages in {t_struct:.1f} s")

    meta: dict = {"max_chars": args.max_chars, "pages": len(pages)}
    chromium = find_chromium()
    if args.no_browser:
        print("browser checks SKIPPED: --no-browser")
        meta["browser"] = "skipped (--no-browser)"
    elif chromium is None:
        print("browser checks SKIPPED: chromium not found (apt-get install chromium)")
        meta["browser"] = "skipped (chromium not found)"
    else:
        t1 = time.monotonic()
        res = browser_checks(html_dir, pages, rep, chromium, args.screenshots)
        meta.update(res)
        if "skipped" not in res:
            col = res.get("column")
            print(
                f"browser checks: {len(pages)} pages in {time.monotonic() - t1:.1f} s "
                f"(Chromium {res['chromium']}, viewport {VIEWPORT['width']} px, file://, network blocked); "
                f"screenshots in {args.screenshots}"
            )
            if col:
                print(
                    f"  measured output column: {col['chars']} chars ({col['textWidth']:.0f} px of text, "
                    f"{col['charWidth']:.2f} px per char, {col['font'].split(',')[0]}); limit used: {args.max_chars}"
                )
    summarize(rep, pages, args.max_listed)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "meta": meta,
                    "pages": rep.pages,
                    "failures": {k: v for k, v in rep.failures.items()},
                },
                indent=1,
            )
        )
    stale = allow_list_passes(rep, pages, browser="chromium" in meta)
    if stale:
        print(
            "\nallow-listed but passing (remove from EXPECTED_READER_FAILURES or "
            "PENDING_TEACHING_PAGES): " + "; ".join(stale)
        )
    n = sum(len(v) for k, v in rep.failures.items() if k not in args.report_only)
    known = sum(len(v) for k, v in rep.failures.items() if k in args.report_only)
    if known:
        print(f"\nreported, not counted ({', '.join(args.report_only)}): {known}")
    print(
        f"\n{'FAILED' if n else 'PASSED'}: {n} failure(s) of {len(pages)} pages; {time.monotonic() - t0:.1f} s"
    )
    return 1 if n else 0


if __name__ == "__main__":
    sys.exit(main())
