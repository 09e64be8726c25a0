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
9 px, which attnconv.chapters.shared.plotting checks when the figure is made) and as a 2x PNG, no console errors,
interactive elements respond (every slider, the play button and, where the figure says it is
clickable, a click on its image change each Plotly figure; ipywidgets embedded from widget state
render and respond), and the reading checks: no word or number in a table cell broken across
lines, at 1400 px and at 1280 px (broken-table-word: every word of every visible td/th is a
DOM Range, and its rects must lie on one line, except after a compound's own hyphen); no code block (notebook input or Markdown
code) that scrolls sideways at 1400 px (overflow-code); every experiment chapter
(EXPERIMENT_CHAPTERS) has a result box (an admonition with class result-box) starting in the
first FIRST_SCREEN_PX px of its content (no-result-box). The reader's rules (READER_RULES and
sidebar-order, see the constants below): a figure within the first FIRST_SCREEN_PX px of the
intro and of every chapter (late-figure), no visible output line ending in True/False outside a
collapsed block (true-false-output), nothing scrolling sideways at NARROW_WIDTH px (code,
outputs, tables, Plotly; overflow-1280), every chapter image in a <figure> captioned "Figure
<chapter>.k" (unnumbered-figure), the sidebar in chapter-number order (sidebar-order), at most
MAX_CODE_LINES visible code lines per chapter (code-lines); pages being reworked elsewhere list
their failures as EXPECTED (EXPECTED_READER_FAILURES) until the entry is removed. Each page's
height at 1400 px, its visible code lines and its first figure's position are recorded and
printed (page_height, visible_code_lines, first_figure_top in --json). A full-page screenshot of every page at 1400 px width goes to
_build/screenshots/.

Exit status 0 when everything passes, 1 on any failure, 2 when the book is not built.
Only the Python standard library, beautifulsoup4 (installed with jupyter-book) and, for part B,
playwright (requirements.txt) driving the system Chromium are used; `playwright install` is never
needed.  `--json FILE` writes every measurement (widest lines, figure sizes, ...) for reports.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path
from urllib.parse import unquote, urlsplit

from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parents[2]

# Characters of monospace output that fit on one line of the content column, measured in
# Chromium 156 (Debian) on the built book: at a viewport of 1400 px and wider the article column
# of sphinx-book-theme is 848-854 px, an output <pre> is 784-790 px wide with 16 px padding on
# each side, so 752-758 px of text; the output font is 14 px (0.875em) "DejaVu Sans Mono" (the
# first available of ui-monospace, Cascadia Code, Source Code Pro, Menlo, Consolas, DejaVu Sans
# Mono), 8.43 px per character (Menlo and SF Mono have the same 0.602 em advance), so
# 752 / 8.43 = 89 characters.  95 characters need 801 px and scroll.  Narrower windows give
# fewer: 1280 px -> 77, 1200 px -> 70 (the page's table of contents takes a column), 800-1199 px
# -> 83.  The browser part measures this again and prints it.
MAX_OUTPUT_CHARS = 89
VIEWPORT = {"width": 1400, "height": 900}
TAB = 8
MAX_LISTED = 20  # offenders listed per kind; the rest are counted
# Widths at which table cells must not break a word: the reference width, and a common laptop
# width at which the page's own table of contents narrows the column (see MAX_OUTPUT_CHARS).
TABLE_WIDTHS = (1400, 1280)

# The experiment chapters (GUIDE.md, "Result box markup"): each opens with a result box, an
# admonition with class result-box, starting within the first screen of its content.
EXPERIMENT_CHAPTERS = (
    "book/07_quadratic_training",
    "book/08_generalized_pruning",
    "book/09_learned_encoding",
    "book/10_sixteen_heads",
    "book/11_learning_to_convolve",
    "book/12_how_convolutional",
    "book/12b_six_layers",
    "book/13_performance",
    "book/18_beyond_the_paper",
)
RESULT_BOX_SELECTOR = ".admonition.result-box"
FIRST_SCREEN_PX = 1400

# The reader's rules (the book's guide, "Book"), each measured on every page it applies to:
#   late-figure         the intro and every chapter show a figure (an image, a Plotly figure or
#                       a <figure>) starting within the first FIRST_SCREEN_PX px of the content
#   true-false-output   no visible output line ends in True / False (checks belong in a
#                       collapsed Checks block that prints numbers with their tolerance)
#   overflow-1280       nothing scrolls sideways at NARROW_WIDTH px: code, text outputs, tables,
#                       Plotly figures (wider than the column)
#   unnumbered-figure   every image of a chapter sits in a <figure> whose caption starts with
#                       the chapter's own number: "Figure 4.1 — ..."
#   sidebar-order       the sidebar lists the numbered chapters in number order (7, 7b, 8, ...)
#   code-lines          at most MAX_CODE_LINES lines of code visible outside collapsed cells
NARROW_WIDTH = 1280
MAX_CODE_LINES = 80
# A chapter page: book/NN_... or book/NNb_...; its number is NN (no leading zero) plus the letter.
CHAPTER_RE = re.compile(r"^book/(\d\d)([a-z]?)_[^/]*\.html$")
INTRO_PAGE = "book/intro.html"
FIGURE_CAPTION_RE = re.compile(r"^\s*Figure\s+(\d+[a-z]?)\.\d+\b")
TRUE_FALSE_RE = re.compile(r"\b(?:True|False)\s*$")
# Pages whose chapters are being reworked elsewhere: their failures of the reader's rules above
# are listed as EXPECTED, not counted, until that work lands (then the entry goes; an entry that
# passes is reported so that it can be removed). Keys: page; values: the kinds allowed to fail.
READER_RULES = (
    "late-figure",
    "true-false-output",
    "overflow-1280",
    "unnumbered-figure",
    "code-lines",
)
# Every rule but overflow-1280, which reader.css settles for the whole book.
_ALL_FOUR = frozenset(READER_RULES) - {"overflow-1280"}
# What failed on these pages when the rules came in (measured on the built book); the integrator
# removes an entry when its chapter lands.
EXPECTED_READER_FAILURES: dict[str, frozenset[str]] = {}

# Workshop pages, where build details, CI, benchmark history and corrections live (the
# appendix); every other page is a reader page and must not name issues, commits, page faults or
# pass/fail goals.
WORKSHOP_PAGES = re.compile(r"^book/appendix_")
WORKSHOP_TEXT_RE = re.compile(
    r"\bissues?\s+#?\d+"  # "issue 20", "issues 12"
    r"|#\d+\b(?=[^.\n]{0,40}\b(?:issue|pull request|PR)\b)"
    r"|\bcommits?\s+[0-9a-f]{7,40}\b"  # "commit 30b81eb"
    # a bare commit id: 7-40 hex digits with at least one letter and one digit
    r"|(?<![\w./-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}(?![\w-])"
    r"|\bpage[- ]faults?\b"
    r"|\bgoal\b[^.\n]{0,80}?\bmet\b",
    re.IGNORECASE,
)

# Text output blocks rendered by myst-nb (and nbsphinx/nbconvert style, should they appear).
OUTPUT_PRE_SELECTOR = (
    "div.cell_output pre, div.output pre, div.output_area pre, div.output_subarea pre"
)
LOADING_TAGS = {  # tag -> attributes that make the browser fetch something
    "script": ["src"],
    "link": ["href"],
    "img": ["src", "srcset"],
    "iframe": ["src"],
    "source": ["src", "srcset"],
    "video": ["src", "poster"],
    "audio": ["src"],
    "embed": ["src"],
    "object": ["data"],
    "track": ["src"],
    "input": ["src"],
}
CSS_URL_RE = re.compile(
    r"""@import\s+(?:url\()?\s*['"]?([^'")\s;]+)|url\(\s*['"]?([^'")]+)['"]?\s*\)"""
)
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

KIND_TEXT = {
    "external-resource": "loads from another host",
    "wide-output-line": f"output line wider than {MAX_OUTPUT_CHARS} chars",
    "missing-image": "image file missing",
    "blocked-request": "request to another host (blocked)",
    "failed-request": "local request failed",
    "raw-tex": "raw TeX left in the text",
    "math-untypeset": "math element not typeset",
    "math-error": "MathJax error",
    "no-mathjax": "math on the page but MathJax did not run",
    "overflow-output": "output block or table scrolls horizontally",
    "overflow-math": "equation wider than the column",
    "overflow-page": "page scrolls horizontally",
    "image-not-loaded": "image not loaded",
    "shrunk-figure": "figure wider than the column, shown shrunk (its text smaller than drawn)",
    "low-resolution-figure": "figure output not a 2x (high-resolution) image",
    "console-error": "console error",
    "interactive": "interactive element does not respond",
    "page-load": "page did not load",
    "missing-page": "redirect to a missing page",
    "workshop-text": "reader page names an issue, a commit, page faults or a goal",
    "broken-table-word": "word or number broken across lines in a table cell",
    "overflow-code": "code block scrolls sideways",
    "no-result-box": "experiment chapter without a result box on its first screen",
    "late-figure": f"no figure within the first {FIRST_SCREEN_PX} px of the page",
    "true-false-output": "visible output line ending in True/False (not in a collapsed block)",
    "overflow-1280": f"code, output, table or Plotly figure scrolls sideways at {NARROW_WIDTH} px",
    "unnumbered-figure": "chapter image not in a numbered figure with a caption",
    "sidebar-order": "sidebar not in chapter-number order",
    "code-lines": f"more than {MAX_CODE_LINES} lines of code visible outside collapsed cells",
}


def is_external(url: str) -> bool:
    url = url.strip()
    if url.startswith("//"):
        return True
    return bool(
        re.match(r"(?i)^[a-z][a-z0-9+.-]*://", url)
    ) and not url.lower().startswith("file:")


def display_width(line: str) -> int:
    """Columns a line takes in a monospace font: tabs expanded, East Asian wide chars count 2,
    combining marks 0."""
    col = 0
    for ch in line:
        if ch == "\t":
            col += TAB - col % TAB
        elif unicodedata.combining(ch):
            continue
        elif unicodedata.east_asian_width(ch) in "WF":
            col += 2
        else:
            col += 1
    return col


class Report:
    def __init__(self) -> None:
        self.failures: dict[str, list[tuple[str, str]]] = defaultdict(
            list
        )  # kind -> (page, text)
        self.pages: dict[str, dict] = {}

        # failures of the reader's rules on allow-listed pages (EXPECTED_READER_FAILURES)
        self.expected: dict[str, list[tuple[str, str]]] = defaultdict(list)

    def fail(self, page: str, kind: str, text: str) -> None:
        if kind in EXPECTED_READER_FAILURES.get(page, ()):
            self.expected[kind].append((page, text))
        else:
            self.failures[kind].append((page, text))

    def page(self, page: str) -> dict:
        return self.pages.setdefault(page, {})

    def per_page(self) -> dict[str, Counter]:
        out: dict[str, Counter] = defaultdict(Counter)
        for kind, items in self.failures.items():
            for page, _ in items:
                out[page][kind] += 1
        return out


# ---------------------------------------------------------------- part A: structural checks --


def chapter_number(page: str) -> str | None:
    """The chapter number of a chapter page ("book/07b_x.html" -> "7b"), else None."""
    m = CHAPTER_RE.match(page)
    return f"{int(m.group(1))}{m.group(2)}" if m else None


def number_key(number: str) -> tuple[int, str]:
    m = re.match(r"(\d+)([a-z]?)", number)
    return (int(m.group(1)), m.group(2))


def is_collapsed(el) -> bool:
    """Inside a block the reader has to open: a closed <details> (hide-input, hide-output,
    hide-cell, dropdowns) or a sphinx-togglebutton dropdown / toggle."""
    for a in el.parents:
        if a.name == "details" and not a.has_attr("open"):
            return True
        classes = a.get("class") or []
        if "dropdown" in classes or "toggle" in classes:
            return True
    return False


def visible_code_lines(article) -> int:
    """Lines of notebook code a reader sees without opening anything."""
    n = 0
    for pre in article.select("div.cell_input pre"):
        if not is_collapsed(pre):
            n += len(pre.get_text().rstrip("\n").split("\n"))
    return n


def figure_problems(article, number: str) -> list[str]:
    """Images of chapter `number` that are not in a <figure> captioned "Figure <number>.k"."""
    out = []
    for img in article.find_all("img"):
        fig = img.find_parent("figure")
        cap = fig.find("figcaption") if fig is not None else None
        if cap is not None and cap.select_one(".caption-text") is not None:
            cap = cap.select_one(
                ".caption-text"
            )  # Sphinx's "Fig. N" is not shown (reader.css)
        text = cap.get_text(" ", strip=True) if cap is not None else ""
        m = FIGURE_CAPTION_RE.match(text)
        if m is None or m.group(1) != number:
            where = f"caption {text[:50]!r}" if cap is not None else "no caption"
            if fig is None:
                where = "not in a <figure>"
            out.append(f"{img.get('src', '')[-50:]}: {where}")
    return out


def sidebar_numbers(soup: BeautifulSoup) -> list[str]:
    """Chapter numbers in the order the sidebar lists them ("7. Title" -> "7")."""
    nav = soup.select_one("nav.bd-docs-nav") or soup.select_one(".bd-sidebar-primary")
    if nav is None:
        return []
    out = []
    for a in nav.select("a"):
        m = re.match(r"\s*(\d+[a-z]?)\.\s", a.get_text(" "))
        if m:
            out.append(m.group(1))
    return out


def reader_rule_checks(soup: BeautifulSoup, page: str, rep: Report) -> None:
    """The reader's rules that the HTML alone settles: visible code lines, True/False output
    lines outside collapsed blocks, numbered figures with captions, the sidebar's order."""
    info = rep.page(page)
    article = soup.select_one("article") or soup.select_one("main") or soup.body
    if article is None:
        return
    number = chapter_number(page)
    lines = visible_code_lines(article)
    info["visible_code_lines"] = lines
    if number is not None and lines > MAX_CODE_LINES:
        rep.fail(
            page, "code-lines", f"{lines} lines visible (at most {MAX_CODE_LINES})"
        )
    tf = []
    for pre in article.select(OUTPUT_PRE_SELECTOR):
        if is_collapsed(pre):
            continue
        tf += [
            ln.strip() for ln in pre.get_text().split("\n") if TRUE_FALSE_RE.search(ln)
        ]
    info["true_false_lines"] = len(tf)
    for line in tf:
        rep.fail(page, "true-false-output", line[-80:])
    if number is not None:
        for text in figure_problems(article, number):
            rep.fail(page, "unnumbered-figure", text)
    if page == INTRO_PAGE:
        numbers = sidebar_numbers(soup)
        info["sidebar_numbers"] = numbers
        if numbers != sorted(numbers, key=number_key):
            rep.fail(page, "sidebar-order", " -> ".join(numbers))


def code_cell_numbers(
    html_dir: Path, page: str, n_cells_on_page: int
) -> list[int] | None:
    """nbval's cell numbers (0-based index among the notebook's code cells) of the div.cell
    blocks of a page, from the notebook copy in _sources; None when they cannot be matched."""
    src = html_dir / "_sources" / (page[: -len(".html")] + ".ipynb")
    if not src.exists():
        return None
    try:
        nb = json.loads(src.read_text(encoding="utf8"))
    except (OSError, ValueError):
        return None
    numbers, k = [], 0
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        tags = cell.get("metadata", {}).get("tags", [])
        if "remove-cell" not in tags:
            numbers.append(k)
        k += 1
    return numbers if len(numbers) == n_cells_on_page else None


def is_workshop_page(page: str) -> bool:
    return bool(WORKSHOP_PAGES.match(page))


def reader_text(soup: BeautifulSoup) -> str:
    """The text a reader sees in a page's article (prose, code and outputs), without scripts,
    styles and the navigation around it."""
    article = soup.select_one("article") or soup.select_one("main") or soup.body
    if article is None:
        return ""
    article = BeautifulSoup(str(article), "html.parser")
    for el in article.find_all(["script", "style", "noscript"]):
        el.decompose()
    return article.get_text(" ")


def workshop_mentions(text: str) -> list[str]:
    """Each mention of an issue, a commit, page faults or a pass/fail goal, with its context."""
    out = []
    for m in WORKSHOP_TEXT_RE.finditer(text):
        before = text[max(0, m.start() - 30) : m.start()]
        after = text[m.end() : m.end() + 30]
        out.append(re.sub(r"\s+", " ", f"{before}[{m.group(0)}]{after}").strip())
    return out


def redirect_target(soup: BeautifulSoup) -> str | None:
    meta = soup.find("meta", attrs={"http-equiv": re.compile("(?i)refresh")})
    if meta is None:
        return None
    m = re.search(r"(?i)url\s*=\s*['\"]?([^'\";]+)", meta.get("content", ""))
    return m.group(1).strip() if m else ""


def cell_label(numbers: list[int] | None, index: int | None) -> str:
    if index is None:
        return "outside cells"
    if numbers is None:
        return f"cell #{index + 1} on page"
    return f"cell {numbers[index]}"


def structural_checks(
    html_dir: Path, pages: list[str], rep: Report, max_chars: int
) -> None:
    css_seen: set[Path] = set()
    for page in pages:
        path = html_dir / page
        soup = BeautifulSoup(path.read_text(encoding="utf8"), "html.parser")
        info = rep.page(page)
        target = redirect_target(soup)
        if (
            target is not None
        ):  # index.html only redirects to the title page, checked on its own
            info["redirect"] = target
            if (
                not is_external(target)
                and not (path.parent / unquote(urlsplit(target).path)).is_file()
            ):
                rep.fail(
                    page, "missing-page", f"redirects to {target}, which does not exist"
                )

        for tag, attrs in LOADING_TAGS.items():
            for el in soup.find_all(tag):
                for attr in attrs:
                    val = el.get(attr)
                    if not val:
                        continue
                    urls = (
                        [u.strip().split()[0] for u in val.split(",")]
                        if attr == "srcset"
                        else [val]
                    )
                    for url in urls:
                        if is_external(url):
                            rel = " ".join(el.get("rel", [])) if tag == "link" else ""
                            rep.fail(
                                page,
                                "external-resource",
                                f"<{tag}{' rel=' + rel if rel else ''} {attr}={url}>",
                            )
        for el in soup.find_all(style=True):
            for m in CSS_URL_RE.finditer(el["style"]):
                url = m.group(1) or m.group(2)
                if is_external(url):
                    rep.fail(page, "external-resource", f"inline style url({url})")
        for el in soup.find_all("style"):
            for m in CSS_URL_RE.finditer(el.get_text()):
                url = m.group(1) or m.group(2)
                if is_external(url):
                    rep.fail(page, "external-resource", f"<style> @import/url({url})")
        for el in soup.find_all("link", href=True):
            if "stylesheet" in el.get("rel", []) and not is_external(el["href"]):
                css = (path.parent / unquote(urlsplit(el["href"]).path)).resolve()
                if css.is_file():
                    css_seen.add(css)

        # text output lines
        cells = soup.select("div.cell")
        numbers = code_cell_numbers(html_dir, page, len(cells)) if cells else None
        cell_index = {id(c): i for i, c in enumerate(cells)}
        widest, widest_where, lines_over = 0, "", []
        for pre in soup.select(OUTPUT_PRE_SELECTOR):
            cell = pre.find_parent("div", class_="cell")
            label = cell_label(
                numbers, cell_index.get(id(cell)) if cell is not None else None
            )
            for line in pre.get_text().split("\n"):
                w = display_width(line.rstrip())
                if w > widest:
                    widest, widest_where = w, f"{label}: {line.strip()[:60]}"
                if w > max_chars:
                    text = f"{label}: line of {w} chars: {line.strip()[:60]}"
                    rep.fail(page, "wide-output-line", text)
                    lines_over.append(
                        {"cell": label, "chars": w, "text": line.rstrip()}
                    )
        widest_in = 0
        for pre in soup.select("div.cell_input pre"):
            for line in pre.get_text().split("\n"):
                widest_in = max(widest_in, display_width(line.rstrip()))
        info.update(
            widest_output_line=widest,
            widest_output_where=widest_where,
            wide_output_lines=lines_over,
            widest_code_line=widest_in,
            code_cells=len(cells),
            math_elements=len(soup.select(".math")),
            widget_state=bool(
                soup.find("script", type="application/vnd.jupyter.widget-state+json")
            ),
            plotly_divs=len(soup.select("div.plotly-graph-div")),
        )

        reader_rule_checks(soup, page, rep)

        if not is_workshop_page(page):
            for hit in workshop_mentions(reader_text(soup)):
                rep.fail(page, "workshop-text", hit)

        # images exist
        for img in soup.find_all("img", src=True):
            src = img["src"]
            if is_external(src) or src.startswith("data:"):
                continue
            target = (path.parent / unquote(urlsplit(src).path)).resolve()
            if not target.is_file():
                rep.fail(page, "missing-image", f"{src}")

    # every stylesheet the pages use, and what those import
    todo = list(css_seen)
    done: set[Path] = set()
    while todo:
        css = todo.pop()
        if css in done:
            continue
        done.add(css)
        text = css.read_text(encoding="utf8", errors="replace")
        text = re.sub(
            r"/\*.*?\*/", "", text, flags=re.S
        )  # comments name URLs that are not loaded
        for m in CSS_URL_RE.finditer(text):
            url = (m.group(1) or m.group(2)).strip()
            if is_external(url):
                rep.fail(
                    str(css.relative_to(html_dir)),
                    "external-resource",
                    f"CSS url({url})",
                )
            elif m.group(1) and not url.startswith("data:"):
                imported = (css.parent / unquote(urlsplit(url).path)).resolve()
                if imported.is_file():
                    todo.append(imported)


# ---------------------------------------------------------------- part B: in the browser --

PAGE_JS = r"""
async (sel) => {
  const out = {};
  const cells = [...document.querySelectorAll('div.cell')];
  const cellOf = el => { const c = el.closest('div.cell'); return c ? cells.indexOf(c) : null; };
  const visible = el => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
  const texOf = el => {  // the TeX source of the (first) equation inside el
    try {
      const items = MathJax.startup.document.getMathItemsWithin(el);
      if (items.length) return items[0].math.replace(/\s+/g, ' ').trim().slice(0, 60);
    } catch (e) {}
    return el.querySelector('mjx-container') ? '' : el.textContent.replace(/\s+/g, ' ').trim().slice(0, 60);
  };

  // math
  const maths = [...document.querySelectorAll('.math')];
  out.mathTotal = maths.length;
  out.mathUntypeset = maths.filter(m => !m.querySelector('mjx-container')).map(m => m.textContent.trim().slice(0, 80));
  out.mathErrors = [...document.querySelectorAll('mjx-merror')].map(e => (e.getAttribute('data-mjx-error') || e.textContent).slice(0, 120));
  out.mjxContainers = document.querySelectorAll('mjx-container').length;
  const raw = [];
  const skip = 'script, style, pre, code, textarea, mjx-container, mjx-assistive-mml, .highlight, .bd-search, form';
  const walker = document.createTreeWalker(document.querySelector('main') || document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const p = n.parentElement;
    if (!p || p.closest(skip) || !visible(p)) continue;
    const t = n.textContent;
    const m = t.match(/\\\(|\\\)|\\\[|\\\]|\$\$|\\begin\{/);
    if (m) raw.push(t.slice(Math.max(0, m.index - 30), m.index + 50).replace(/\s+/g, ' ').trim());
  }
  out.rawTex = raw;

  // horizontal overflow
  // text outputs, and tables (output or Markdown): a table scrolls inside its wrapper
  const tables = [...document.querySelectorAll('article table, main table')].filter(visible)
    .map(t => t.parentElement).filter(p => p && !p.matches('body, article, main'));
  out.overflowOutput = [...document.querySelectorAll(sel), ...tables].filter(visible)
    .filter(p => p.scrollWidth > p.clientWidth + 1)
    .map(p => ({cell: cellOf(p), scrollWidth: p.scrollWidth, clientWidth: p.clientWidth,
                text: (p.textContent.split('\n').reduce((a, b) => b.length > a.length ? b : a, '')).trim().slice(0, 60)}));
  const mathBlocks = [...document.querySelectorAll('div.math, mjx-container[display="true"]')].filter(visible)
    .filter(m => !(m.tagName === 'MJX-CONTAINER' && m.closest('div.math')));
  // the theme clips div.math (overflow hidden) and lets its mjx-container scroll: check both
  const widest = m => [m, ...m.querySelectorAll('mjx-container')]
    .reduce((a, e) => (e.scrollWidth - e.clientWidth > a.scrollWidth - a.clientWidth) ? e : a, m);
  out.overflowMath = mathBlocks.map(widest).filter(w => w.scrollWidth > w.clientWidth + 1)
    .map(m => ({scrollWidth: m.scrollWidth, clientWidth: m.clientWidth,
                tex: texOf(m),
                id: (m.closest('[id]') || {}).id || ''}));
  out.pageScrollWidth = document.documentElement.scrollWidth;
  out.pageClientWidth = document.documentElement.clientWidth;

  // images
  out.images = [...document.images].map(i => ({
    src: i.getAttribute('src'), complete: i.complete, naturalWidth: i.naturalWidth, naturalHeight: i.naturalHeight,
    attrWidth: parseFloat(i.style.width) || parseFloat(i.getAttribute('width')) || 0,
    width: Math.round(i.getBoundingClientRect().width), height: Math.round(i.getBoundingClientRect().height),
    visible: visible(i), inOutput: !!i.closest('div.cell_output, div.output'), cell: cellOf(i)}));

  // column width in characters of monospace output
  const pre = document.querySelector(sel);
  if (pre) {
    const s = document.createElement('span'); s.textContent = 'M'.repeat(200); pre.appendChild(s);
    const cw = s.getBoundingClientRect().width / 200; s.remove();
    const cs = getComputedStyle(pre);
    const avail = pre.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    out.column = {preWidth: pre.clientWidth, textWidth: avail, charWidth: cw, chars: Math.floor(avail / cw + 0.01),
                  font: cs.fontSize + ' ' + cs.fontFamily};
  }
  return out;
}
"""

# Words and numbers broken across lines inside table cells: each whitespace-separated token of
# each text node of a visible td/th is a DOM Range; its rects lie on more than one line when the
# browser broke it (the part on each line is reported). A compound's own break after a hyphen or
# slash between two letters ("one-/hot") is a line break, not a broken word; any other break
# ("quadrati/c", "176,40/2", "CIFAR/-10", "1–/4") fails.
TABLE_WORDS_JS = r"""
() => {
  const visible = el => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
  const lines = rects => {
    const tops = rects.filter(r => r.width > 0.5).map(r => r.top).sort((a, b) => a - b);
    let n = 0, last = -1e9;
    for (const t of tops) { if (t - last > 3) { n++; last = t; } }
    return n;
  };
  const tables = [...document.querySelectorAll('article table, main table')].filter(visible);
  const out = [];
  tables.forEach((table, ti) => {
    [...table.querySelectorAll('td, th')].filter(visible).forEach(cell => {
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        if (!n.parentElement || n.parentElement.closest('mjx-container, script, style')) continue;
        const re = /\S+/g; let m;
        while ((m = re.exec(n.textContent))) {
          const r = document.createRange();
          r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
          if (lines([...r.getClientRects()]) < 2) continue;
          const parts = []; let part = '', lastTop = null;  // the piece on each line
          let inside = false;  // a break inside a word, not after a compound's own hyphen
          for (let i = 0; i < m[0].length; i++) {
            const c = document.createRange();
            c.setStart(n, m.index + i); c.setEnd(n, m.index + i + 1);
            const rc = [...c.getClientRects()].filter(x => x.width > 0.5);
            const top = rc.length ? rc[0].top : lastTop;
            if (lastTop !== null && top - lastTop > 3) {
              const w = m[0];
              if (!(/[-\u2010\/]/.test(w[i - 1]) && /\p{L}/u.test(w[i - 2] || '')
                    && /\p{L}/u.test(w[i]))) inside = true;
              parts.push(part); part = '';
            }
            part += m[0][i]; lastTop = top;
          }
          parts.push(part);
          if (!inside) continue;
          out.push({table: ti + 1, word: m[0], parts: parts.join(' / '),
                    cellWidth: Math.round(cell.getBoundingClientRect().width)});
        }
      }
    });
  });
  return out;
}
"""

# Code blocks (notebook inputs and Markdown code) that scroll sideways.
CODE_SCROLL_JS = r"""
() => {
  const visible = el => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
  const cells = [...document.querySelectorAll('div.cell')];
  return [...document.querySelectorAll('div.cell_input pre, article div.highlight pre, main div.highlight pre')]
    .filter((p, i, all) => all.indexOf(p) === i)
    .filter(p => visible(p) && !p.closest('div.cell_output, div.output'))
    .map(p => [p, ...[p.parentElement].filter(e => e && e.matches('div.highlight'))])
    .filter(els => els.some(e => e.scrollWidth > e.clientWidth + 1))
    .map(([p]) => {
      const c = p.closest('div.cell');
      const longest = p.textContent.split('\n').reduce((a, b) => b.length > a.length ? b : a, '');
      return {cell: c ? cells.indexOf(c) : null, scrollWidth: p.scrollWidth,
              clientWidth: p.clientWidth, chars: longest.length, text: longest.trim().slice(0, 60)};
    });
}
"""

# Where the result box starts, in px below the top of the page's content (null: none).
RESULT_BOX_JS = r"""
(sel) => {
  const content = document.querySelector('article.bd-article, article, main');
  const box = document.querySelector(sel);
  if (!content || !box) return null;
  return Math.round(box.getBoundingClientRect().top - content.getBoundingClientRect().top);
}
"""


# Where the first figure starts, in px below the top of the content (null: none): an image, a
# <figure> or a Plotly figure at least 100 px wide and 50 px high, visible without opening anything.
FIGURE_TOP_JS = r"""
() => {
  const content = document.querySelector('article.bd-article, article, main');
  if (!content) return null;
  const top0 = content.getBoundingClientRect().top;
  const tops = [...content.querySelectorAll('img, figure, div.plotly-graph-div')]
    .map(e => e.getBoundingClientRect())
    .filter(r => r.width >= 100 && r.height >= 50)
    .map(r => Math.round(r.top - top0));
  return tops.length ? Math.min(...tops) : null;
}
"""

# At the narrow width: code, text outputs and table wrappers that scroll sideways, and output
# elements (Plotly figures, images, widgets, iframes) that reach past the content column.
NARROW_OVERFLOW_JS = r"""
(sel) => {
  const visible = el => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
  const content = document.querySelector('article.bd-article, article, main');
  if (!content) return [];
  const right = content.getBoundingClientRect().right;
  const cells = [...document.querySelectorAll('div.cell')];
  const cellOf = el => { const c = el.closest('div.cell'); return c ? cells.indexOf(c) : null; };
  const longest = el => el.textContent.split('\n')
    .reduce((a, b) => b.length > a.length ? b : a, '').trim().slice(0, 60);
  const out = [];
  const tables = [...content.querySelectorAll('table')].filter(visible)
    .map(t => t.parentElement).filter(p => p && !p.matches('body, article, main'));
  const scrolling = [...content.querySelectorAll(
      'div.cell_input pre, div.highlight pre, ' + sel), ...tables]
    .filter((p, i, all) => all.indexOf(p) === i).filter(visible);
  for (const p of scrolling) {
    const els = [p, ...[p.parentElement].filter(e => e && e.matches('div.highlight'))];
    const w = els.find(e => e.scrollWidth > e.clientWidth + 1);
    if (w) out.push({cell: cellOf(p), what: p.closest('div.cell_output, div.output') ? 'output' : 'code',
                     scrollWidth: w.scrollWidth, clientWidth: w.clientWidth, text: longest(p)});
  }
  const wide = [...content.querySelectorAll(
      'div.plotly-graph-div, div.cell_output img, div.cell_output iframe, .jupyter-widgets, div.cell_output svg.main-svg')]
    .filter(visible).filter(e => !e.parentElement.closest('.jupyter-widgets'))
    .filter(e => e.getBoundingClientRect().right > right + 1);
  for (const e of wide) {
    const r = e.getBoundingClientRect();
    out.push({cell: cellOf(e), what: e.matches('div.plotly-graph-div, svg') ? 'plotly' : e.tagName.toLowerCase(),
              scrollWidth: Math.round(r.right - content.getBoundingClientRect().left),
              clientWidth: Math.round(content.getBoundingClientRect().width), text: ''});
  }
  return out;
}
"""


def is_reader_figure_page(page: str) -> bool:
    """The intro and every chapter open with a figure."""
    return page == INTRO_PAGE or chapter_number(page) is not None


def is_experiment_chapter(page: str) -> bool:
    return page[: -len(".html")] in EXPERIMENT_CHAPTERS


def reading_checks(page, rep: Report, name: str, info: dict, numbers) -> None:
    """Broken words in tables (at each of TABLE_WIDTHS), code that scrolls sideways, the result
    box of an experiment chapter, and the page height, at the 1400 px viewport. Leaves the
    viewport as it found it."""
    info["page_height"] = page.evaluate("() => document.documentElement.scrollHeight")
    scrolling = page.evaluate(CODE_SCROLL_JS)
    for o in scrolling:
        label = cell_label(numbers, o["cell"])
        rep.fail(
            name,
            "overflow-code",
            f"{label}: {o['scrollWidth']} px in {o['clientWidth']} px "
            f"({o['chars']} chars): {o['text']}",
        )
    info["overflow_code"] = len(scrolling)
    if is_experiment_chapter(name):
        top = page.evaluate(RESULT_BOX_JS, RESULT_BOX_SELECTOR)
        info["result_box_top"] = top
        if top is None:
            rep.fail(name, "no-result-box", "no result box on the page")
        elif top >= FIRST_SCREEN_PX:
            rep.fail(
                name,
                "no-result-box",
                f"result box starts {top} px into the content "
                f"(first screen: {FIRST_SCREEN_PX} px)",
            )
    top = page.evaluate(FIGURE_TOP_JS)
    info["first_figure_top"] = top
    if is_reader_figure_page(name) and (top is None or top >= FIRST_SCREEN_PX):
        rep.fail(
            name,
            "late-figure",
            "no figure on the page"
            if top is None
            else f"first figure starts {top} px into the content",
        )
    broken = {}
    for width in sorted(set(TABLE_WIDTHS) | {NARROW_WIDTH}, reverse=True):
        page.set_viewport_size({"width": width, "height": VIEWPORT["height"]})
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => r()))")
        if width == NARROW_WIDTH:
            time.sleep(
                0.3
            )  # Plotly's responsive figures resize on the window's resize event
            narrow = page.evaluate(NARROW_OVERFLOW_JS, OUTPUT_PRE_SELECTOR)
            info["overflow_1280"] = len(narrow)
            for o in narrow:
                rep.fail(
                    name,
                    "overflow-1280",
                    f"{cell_label(numbers, o['cell'])}: {o['what']} {o['scrollWidth']} px "
                    f"in {o['clientWidth']} px: {o['text']}",
                )
        if width not in TABLE_WIDTHS:
            continue
        words = page.evaluate(TABLE_WORDS_JS)
        broken[width] = len(words)
        for w in words:
            rep.fail(
                name,
                "broken-table-word",
                f"{width} px, table {w['table']}: {w['parts']} "
                f"(cell {w['cellWidth']} px)",
            )
    info["broken_table_words"] = broken
    page.set_viewport_size(VIEWPORT)


# A signature of what a Plotly figure shows: its data and layout, minus the widgets' own state.
PLOTLY_SIG_JS = r"""
(gd) => {
  const lay = Object.assign({}, gd.layout || {});
  delete lay.sliders; delete lay.updatemenus;
  let s = JSON.stringify(gd.data || []) + JSON.stringify(lay);
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
  return s.length + ':' + h;
}
"""


def find_chromium() -> str | None:
    for cand in (os.environ.get("CHROMIUM"), "/usr/bin/chromium"):
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return cand
    return None


# Page coordinates of a point 10 % into the first image trace of a Plotly figure (from its axes).
IMAGE_SPOT_JS = r"""
(gd) => {
  const i = gd._fullData.findIndex(t => t.type === 'image');
  if (i < 0) return null;
  const t = gd._fullData[i], fl = gd._fullLayout;
  const xa = fl[t.xaxis.replace('x', 'xaxis')], ya = fl[t.yaxis.replace('y', 'yaxis')];
  const r = gd.getBoundingClientRect();
  const px = (a, f) => a._offset + a.l2p(a.range[0] + f * (a.range[1] - a.range[0]));
  return {x: r.left + px(xa, 0.1), y: r.top + px(ya, 0.1), width: 0, height: 0};
}
"""


def check_plotly(page, rep: Report, name: str, info: dict) -> None:
    """Every Plotly figure is drawn and responds: each of its sliders, moved with a click on its
    rail, changes the figure's data or layout (so several sliders combined by a script are all
    checked); the first button of its first update menu (play) changes it; and a figure whose
    ``layout.meta.clickable`` is true changes when its image is clicked (a query picked by click)."""
    graphs = page.query_selector_all("div.plotly-graph-div")
    results = []
    for gi, gd in enumerate(graphs):
        label = f"plotly figure {gi + 1}"
        gd.scroll_into_view_if_needed()
        ready = page.evaluate("(gd) => !!(gd._fullLayout && gd.data)", gd)
        if not ready:
            rep.fail(name, "interactive", f"{label}: not drawn (Plotly did not run)")
            results.append({"figure": gi + 1, "drawn": False})
            continue
        sig = lambda: page.evaluate(PLOTLY_SIG_JS, gd)  # noqa: E731
        n_sliders = page.evaluate(
            "(gd) => ((gd.layout || {}).sliders || []).length", gd
        )
        n_menus = page.evaluate(
            "(gd) => ((gd.layout || {}).updatemenus || []).length", gd
        )
        res = {
            "figure": gi + 1,
            "drawn": True,
            "sliders": n_sliders,
            "updatemenus": n_menus,
            "frames": page.evaluate(
                "(gd) => (gd._transitionData && gd._transitionData._frames || []).length",
                gd,
            ),
            "slider_changes_data": [],
        }
        rails = gd.query_selector_all(
            "rect.slider-rail-touch-rect"
        ) or gd.query_selector_all("rect.slider-rail-rect")
        if n_sliders and len(rails) != n_sliders:
            rep.fail(
                name,
                "interactive",
                f"{label}: {n_sliders} sliders declared, {len(rails)} drawn",
            )
        for si, rail in enumerate(rails[:n_sliders]):
            rail.scroll_into_view_if_needed()
            box = rail.bounding_box()
            if box is None:
                rep.fail(name, "interactive", f"{label}: slider {si + 1} not visible")
                res["slider_changes_data"].append(False)
                continue
            before = sig()
            n_steps, active = page.evaluate(
                "([gd, i]) => [gd.layout.sliders[i].steps.length, gd.layout.sliders[i].active || 0]",
                [gd, si],
            )
            frac = 0.1 if active > n_steps / 2 else 0.9
            page.mouse.click(
                box["x"] + box["width"] * frac, box["y"] + box["height"] / 2
            )
            changed = wait_change(page, sig, before)
            res["slider_changes_data"].append(changed)
            if not changed:
                rep.fail(
                    name,
                    "interactive",
                    f"{label}: moving slider {si + 1} of {n_sliders} does not change the figure",
                )
        if n_menus:
            before = sig()
            button = gd.query_selector("g.updatemenu-button")
            if button is None:
                rep.fail(
                    name,
                    "interactive",
                    f"{label}: update menu / play button declared but not drawn",
                )
                res["button_changes_data"] = False
            else:
                button.click()
                changed = wait_change(page, sig, before, seconds=4)
                res["button_changes_data"] = changed
                if not changed:
                    rep.fail(
                        name,
                        "interactive",
                        f"{label}: pressing the first button (play) does not change the figure",
                    )
                time.sleep(0.3)
        if page.evaluate("(gd) => !!((gd.layout.meta || {}).clickable)", gd):
            gd.scroll_into_view_if_needed()
            box = page.evaluate(IMAGE_SPOT_JS, gd)
            if box is None:
                rep.fail(
                    name,
                    "interactive",
                    f"{label}: clickable, but it has no image drawn",
                )
                res["click_changes_data"] = False
            else:
                before = sig()
                page.mouse.click(
                    box["x"] + box["width"] * 0.1, box["y"] + box["height"] * 0.1
                )
                changed = wait_change(page, sig, before)
                res["click_changes_data"] = changed
                if not changed:
                    rep.fail(
                        name,
                        "interactive",
                        f"{label}: clicking its image does not change the figure",
                    )
        results.append(res)
    info["plotly"] = results


WIDGET_SNAPSHOT_JS = r"""
(handle) => [...document.querySelectorAll('.jupyter-widgets, .widget-output, .jp-OutputArea')]
  .filter(e => !e.contains(handle) && !handle.contains(e))
  .map(e => e.innerHTML + [...e.querySelectorAll('input, textarea, select')].map(i => i.value).join(','))
  .join('\u0001')
"""


def check_widgets(page, rep: Report, name: str, info: dict) -> None:
    has_state = page.evaluate(
        "() => !!document.querySelector('script[type=\"application/vnd.jupyter.widget-state+json\"]')"
    )
    if not has_state:
        return
    rendered = page.evaluate(
        "() => document.querySelectorAll('.jupyter-widgets').length"
    )
    info["widgets_rendered"] = rendered
    if not rendered:
        rep.fail(
            name,
            "interactive",
            "widget state saved but no ipywidget rendered (embed script not loaded?)",
        )
        return
    handle = page.query_selector(
        ".widget-slider .noUi-handle, .widget-slider .ui-slider-handle, .jupyter-widgets input[type=range]"
    )
    if handle is None:
        return
    slider = page.evaluate_handle(
        "(h) => h.closest('.widget-slider, .jupyter-widgets')", handle
    )
    readout = lambda: page.evaluate(
        "(s) => s.textContent + '|' + [...s.querySelectorAll('input')].map(i => i.value).join(',')",
        slider,
    )  # noqa: E731,E501
    others = lambda: page.evaluate(WIDGET_SNAPSHOT_JS, slider)  # noqa: E731
    r0, o0 = readout(), others()
    handle.scroll_into_view_if_needed()
    handle.focus()
    for key in ("ArrowRight", "ArrowRight", "PageUp"):
        page.keyboard.press(key)
    time.sleep(0.5)
    moved = readout() != r0
    changed = wait_change(page, others, o0, seconds=2)
    info["widget_slider_moves"], info["widget_slider_changes_output"] = moved, changed
    if not moved:
        rep.fail(name, "interactive", "first ipywidgets slider does not move")
    elif not changed:
        rep.fail(
            name,
            "interactive",
            "moving the first ipywidgets slider changes nothing else on the page",
        )


def wait_change(page, sig, before, seconds: float = 3.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if sig() != before:
            return True
        time.sleep(0.15)
    return sig() != before


def _router(blocked: list[str]):
    """Let file:// (and data:/blob:) through; abort and record everything else."""

    def route(r):
        u = r.request.url
        if u.startswith(("file://", "data:", "blob:", "about:")):
            r.continue_()
        else:
            blocked.append(u)
            r.abort("blockedbyclient")

    return route


def _console_listener(errors: list[str], blocked: list[str]):
    def on_console(msg):
        if msg.type != "error":
            return
        loc = (msg.location or {}).get("url", "")
        if msg.text.startswith("Failed to load resource") and (
            loc in blocked or "ERR_BLOCKED_BY_CLIENT" in msg.text
        ):
            return  # counted as a blocked request
        where = (
            f" ({Path(urlsplit(loc).path).name}:{(msg.location or {}).get('lineNumber')})"
            if loc
            else ""
        )
        errors.append(msg.text[:200] + where)

    return on_console


def _append_to(items: list[str], fmt):
    return lambda x: items.append(fmt(x))


def _failed_request_listener(rep: Report, name: str, blocked: list[str]):
    def on_failed(req):
        if req.url not in blocked:
            rep.fail(name, "failed-request", f"{req.url} ({req.failure})")

    return on_failed


def browser_checks(
    html_dir: Path, pages: list[str], rep: Report, chromium: str, shots: Path
) -> dict:
    try:
        from playwright.sync_api import Error as PWError
        from playwright.sync_api import sync_playwright
    except ImportError:
        print(
            "browser checks SKIPPED: the Python package playwright is not installed "
            "(.venv/bin/pip install -r requirements.txt)"
        )
        return {"skipped": "playwright not installed"}

    shots.mkdir(parents=True, exist_ok=True)
    column = None
    with sync_playwright() as pw:
        try:
            browser = pw.chromium.launch(
                executable_path=chromium, args=LAUNCH_ARGS, headless=True
            )
        except (
            PWError
        ) as exc:  # e.g. a snap stub without snapd: no usable browser, as if absent
            first = next((ln for ln in str(exc).splitlines() if ln.strip()), "")
            print(
                f"browser checks SKIPPED: chromium at {chromium} did not start: {first[:200]}"
            )
            return {"skipped": f"chromium did not start: {first[:200]}"}
        version = browser.version
        for name in pages:
            info = rep.page(name)
            if "redirect" in info:
                continue
            url = (html_dir / name).resolve().as_uri()
            # a fresh profile per page: a reader may arrive at any page first (no localStorage)
            context = browser.new_context(viewport=VIEWPORT, service_workers="block")
            page = context.new_page()
            blocked: list[str] = []
            errors: list[str] = []

            page.route("**/*", _router(blocked))
            page.on("console", _console_listener(errors, blocked))
            page.on(
                "pageerror",
                _append_to(errors, lambda exc: f"uncaught: {str(exc)[:200]}"),
            )
            page.on("requestfailed", _failed_request_listener(rep, name, blocked))
            t0 = time.monotonic()
            try:
                page.goto(url, wait_until="load", timeout=30_000)
                page.wait_for_function(
                    "() => !window.MathJax || !window.MathJax.version || (window.MathJax.startup && window.MathJax.startup.promise)",
                    timeout=15_000,
                )
                mathjax = page.evaluate(
                    "async () => { if (!(window.MathJax && MathJax.startup && MathJax.startup.promise)) return null;"
                    " await MathJax.startup.promise; await document.fonts.ready; return MathJax.version; }"
                )
                page.evaluate(
                    "() => document.querySelectorAll('img[loading=lazy]').forEach(i => i.loading = 'eager')"
                )
                page.wait_for_function(
                    "() => [...document.images].every(i => i.complete)", timeout=15_000
                )
                data = page.evaluate(PAGE_JS, OUTPUT_PRE_SELECTOR)
                check_plotly(page, rep, name, info)
                check_widgets(page, rep, name, info)
                page.evaluate("() => window.scrollTo(0, 0)")
                shot = shots / (name[: -len(".html")].replace("/", "__") + ".png")
                page.screenshot(path=str(shot), full_page=True)
                info["screenshot"] = (
                    str(shot.relative_to(ROOT))
                    if shot.is_relative_to(ROOT)
                    else str(shot)
                )
                n_cells = info.get("code_cells", 0)
                reading_checks(
                    page,
                    rep,
                    name,
                    info,
                    code_cell_numbers(html_dir, name, n_cells) if n_cells else None,
                )
            except PWError as exc:
                rep.fail(name, "page-load", str(exc).splitlines()[0][:200])
                context.close()
                continue
            info["browser_seconds"] = round(time.monotonic() - t0, 2)
            info["mathjax"] = mathjax
            if column is None and data.get("column"):
                column = data["column"]

            for u in blocked:
                rep.fail(name, "blocked-request", u)
            for e in errors:
                rep.fail(name, "console-error", e)
            if data["mathTotal"] and not mathjax:
                rep.fail(
                    name,
                    "no-mathjax",
                    f"{data['mathTotal']} math elements, MathJax not loaded",
                )
            else:
                for t in data["mathUntypeset"]:
                    rep.fail(name, "math-untypeset", t)
            for t in data["mathErrors"]:
                rep.fail(name, "math-error", t)
            for t in data["rawTex"]:
                rep.fail(name, "raw-tex", t)
            cells = info.get("code_cells", 0)
            numbers = code_cell_numbers(html_dir, name, cells) if cells else None
            for o in data["overflowOutput"]:
                o["cell"] = cell_label(numbers, o["cell"])
                rep.fail(
                    name,
                    "overflow-output",
                    f"{o['cell']}: {o['scrollWidth']} px in {o['clientWidth']} px: {o['text']}",
                )
            for m in data["overflowMath"]:
                rep.fail(
                    name,
                    "overflow-math",
                    f"{m['scrollWidth']} px in {m['clientWidth']} px"
                    + (f" (#{m['id']})" if m["id"] else "")
                    + (f": {m['tex']}" if m["tex"] else ""),
                )
            if data["pageScrollWidth"] > data["pageClientWidth"] + 1:
                rep.fail(
                    name,
                    "overflow-page",
                    f"{data['pageScrollWidth']} px in {data['pageClientWidth']} px",
                )
            for img in data["images"]:
                img["cell"] = (
                    cell_label(numbers, img["cell"])
                    if img["cell"] is not None
                    else None
                )
                if img["visible"] and not img["naturalWidth"]:
                    rep.fail(name, "image-not-loaded", img["src"])
                elif img["visible"] and img["inOutput"] and img["width"]:
                    # a notebook figure: shown at its own size (the column is wide enough) and as a 2x PNG
                    intrinsic = img["attrWidth"] or img["naturalWidth"]
                    if img["width"] < 0.97 * intrinsic:
                        rep.fail(
                            name,
                            "shrunk-figure",
                            f"{img['cell']}: {intrinsic:.0f} px shown at {img['width']} px",
                        )
                    if img["naturalWidth"] < 1.9 * img["width"]:
                        rep.fail(
                            name,
                            "low-resolution-figure",
                            f"{img['cell']}: {img['naturalWidth']} px image shown {img['width']} px wide",
                        )
            info.update(
                math_total=data["mathTotal"],
                math_untypeset=len(data["mathUntypeset"]),
                math_errors=data["mathErrors"],
                raw_tex=data["rawTex"],
                overflow_output=data["overflowOutput"],
                overflow_math=data["overflowMath"],
                images=data["images"],
                console_errors=errors,
                blocked_requests=blocked,
                page_overflow=data["pageScrollWidth"] > data["pageClientWidth"] + 1,
            )
            context.close()
        browser.close()
    return {"chromium": version, "column": column}


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
            "\nEXPECTED failures (allow-listed in EXPECTED_READER_FAILURES while those "
            "chapters are reworked; not counted):"
        )
        for (page, kind), n in sorted(expected.items()):
            print(f"  {page}: {kind} {n}")


def allow_list_passes(rep: Report, pages: list[str], browser: bool) -> list[str]:
    """Allow-listed (page, kind) pairs that no longer fail: the entry can go."""
    browser_kinds = {"late-figure", "overflow-1280"}
    failed = {(p, k) for k, items in rep.expected.items() for p, _ in items}
    return [
        f"{page}: {kind}"
        for page in pages
        for kind in sorted(EXPECTED_READER_FAILURES.get(page, ()))
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
            "\nallow-listed but passing (remove from EXPECTED_READER_FAILURES): "
            + "; ".join(stale)
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
