"""Part A of check_book: the structural checks of every built page (no browser)."""

# ruff: noqa: F403, F405  (the shared constants and helpers come from book_checks.common)

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from bs4 import BeautifulSoup

from .common import *  # noqa: F403
from .common import _ALL_FOUR  # noqa: F401
from .teaching import sidebar_title_checks, teaching_checks


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
    soups: dict[str, BeautifulSoup] = {}
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
        teaching_checks(soup, page, rep)
        soups[page] = soup

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

    sidebar_title_checks(soups, INTRO_PAGE, rep)

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
