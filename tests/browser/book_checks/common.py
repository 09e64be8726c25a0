"""Constants, the report and the page helpers shared by every check of check_book."""

from __future__ import annotations

import re
import time
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path

from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parents[3]

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
    "book/12_six_layers",
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
#   overflow-1280       nothing scrolls sideways at NARROW_WIDTH px: text outputs, tables,
#                       Plotly figures (wider than the column), a code block's box; a code block
#                       that scrolls inside its own box there is overflow-code, as at 1400 px
#   unnumbered-figure   every image of a chapter sits in a <figure> whose caption starts with
#                       the chapter's own number: "Figure 4.1 — ..."
#   sidebar-order       the sidebar lists the numbered chapters in number order (7, 7b, 8, ...)
#   code-lines          at most MAX_CODE_LINES lines of code visible outside collapsed cells
NARROW_WIDTH = 1280
#   overflow-phone      at PHONE_WIDTH px (a phone held upright) the page is no wider than the
#                       window: document.documentElement.scrollWidth <= innerWidth + 1 (tables,
#                       code and display maths scroll inside their own boxes; reader.css)
PHONE_WIDTH = 390
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
    "overflow-code": f"code block scrolls sideways (at 1400 or {NARROW_WIDTH} px)",
    "no-result-box": "experiment chapter without a result box on its first screen",
    "late-figure": f"no figure within the first {FIRST_SCREEN_PX} px of the page",
    "true-false-output": "visible output line ending in True/False (not in a collapsed block)",
    "overflow-1280": f"output, table or Plotly figure scrolls sideways (or a code block is wider "
    f"than the column) at {NARROW_WIDTH} px",
    "overflow-phone": f"page wider than a {PHONE_WIDTH} px window (a phone)",
    "toc-overflow": f"an entry of the page's contents column reaches past it at {NARROW_WIDTH} px "
    "(a formula in a heading cannot wrap)",
    "unnumbered-figure": "chapter image not in a numbered figure with a caption",
    "sidebar-order": "sidebar not in chapter-number order",
    "code-lines": f"more than {MAX_CODE_LINES} lines of code visible outside collapsed cells",
    # how the book teaches (book_checks/teaching.py)
    "sentence-length": "chapter prose: more than 20 words a sentence on average, or one over 40",
    "sidebar-parts": "more than 6 parts in the sidebar",
    "sidebar-title": "sidebar entry not the title of its page",
    "appendix-letters": 'appendices not lettered "Appendix A.", "B.", ... in the last sidebar part',
    "appendix-link": "link naming an appendix's letter opens another page",
    "unnumbered-table": 'chapter table without a caption "Table <chapter>.k"',
    "badge-word": "badge word not one of the fixed set, or not its colour",
    "raw-dollar": "raw $ left in the rendered text",
    "alt-text": "image without alt text, or a file path for alt text",
    "printing-code": "more than 30 % of the visible code lines print or format",
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
        from .teaching import PENDING_TEACHING_PAGES

        if kind in EXPECTED_READER_FAILURES.get(
            page, ()
        ) or kind in PENDING_TEACHING_PAGES.get(page, ()):
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


def fail_unreachable(rep, name: str, label: str, controls: list) -> None:
    """A failure for each of a widget's ``controls`` (as the checks' CONTROLS_JS measures
    them: ``i``, ``focused``, ``label``) that takes no keyboard focus or has no label."""
    for c in controls:
        if not c["focused"]:
            rep.fail(
                name, "interactive", f"{label}: control {c['i'] + 1} takes no focus"
            )
        if not c["label"]:
            rep.fail(name, "interactive", f"{label}: control {c['i'] + 1} has no label")


def wait_change(page, sig, before, seconds: float = 3.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if sig() != before:
            return True
        time.sleep(0.15)
    return sig() != before
