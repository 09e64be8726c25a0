"""Part B of check_book: the checks made in headless Chromium."""

# ruff: noqa: F403, F405  (the shared constants and helpers come from book_checks.common)

from __future__ import annotations

import os
import time
from pathlib import Path
from urllib.parse import urlsplit

from .common import *  # noqa: F403
from .live import check_live_widgets
from .plotly_keys import check_plotly_keys
from .structural import cell_label, code_cell_numbers

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

# Code blocks that scroll sideways: notebook inputs, Markdown code and the source listings that
# cells display (inspect.getsource, in a cell's output but no printed output: div.output).
CODE_SCROLL_JS = r"""
() => {
  const visible = el => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
  const cells = [...document.querySelectorAll('div.cell')];
  return [...document.querySelectorAll('div.cell_input pre, article div.highlight pre, main div.highlight pre')]
    .filter((p, i, all) => all.indexOf(p) === i)
    .filter(p => visible(p) && !p.closest('div.output'))
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
# <figure>, a Plotly figure or a live widget at least 100 px wide and 50 px high, visible without
# opening anything.
FIGURE_TOP_JS = r"""
() => {
  const content = document.querySelector('article.bd-article, article, main');
  if (!content) return null;
  const top0 = content.getBoundingClientRect().top;
  const tops = [...content.querySelectorAll('img, figure, div.plotly-graph-div, .live-widget')]
    .map(e => e.getBoundingClientRect())
    .filter(r => r.width >= 100 && r.height >= 50)
    .map(r => Math.round(r.top - top0));
  return tops.length ? Math.min(...tops) : null;
}
"""

# At the narrow width: entries of the page's contents column (the right-hand sidebar) holding a
# formula that cannot fit: text wraps, but a typeset formula (an inline block) cannot, and a desktop
# browser whose scrollbar takes SCROLLBAR_PX from the window cuts it off (headless Chromium's
# scrollbar takes none). An entry fails when, put at the start of its own line, its widest
# formula would still reach past the column's content box less SCROLLBAR_PX.
SCROLLBAR_PX = 15
TOC_OVERFLOW_JS = (
    r"""
() => {
  const col = document.querySelector('.bd-sidebar-secondary');
  if (!col || !col.offsetWidth) return [];
  const right = col.getBoundingClientRect().right
    - parseFloat(getComputedStyle(col).paddingRight) - %d;
  const unbreakable = 'mjx-container, span[style*="nowrap"], img';
  return [...col.querySelectorAll('nav a')]
    .filter(a => [...a.querySelectorAll(unbreakable)].some(
      e => a.getBoundingClientRect().left + parseFloat(getComputedStyle(a).paddingLeft)
        + e.getBoundingClientRect().width > right + 1))
    .map(a => a.textContent.trim().slice(0, 60));
}
"""
    % SCROLLBAR_PX
)

# At the narrow width: text outputs and table wrappers that scroll sideways, code blocks whose own
# box reaches past the content column (a code block that scrolls inside its box is overflow-code,
# measured at this width too by CODE_SCROLL_JS), and output elements (Plotly figures, images,
# widgets, iframes) that reach past it.
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
  // code: a cell's input, a source listing, a Markdown code block (not a printed output)
  const isCode = p => p.matches('pre') && !p.closest('div.output')
    && !!p.closest('div.cell_input, div[class*="highlight-"]');
  for (const p of scrolling) {
    if (isCode(p)) {
      const r = p.getBoundingClientRect();
      if (r.right > right + 1)
        out.push({cell: cellOf(p), what: 'code', scrollWidth: Math.round(r.right - content.getBoundingClientRect().left),
                  clientWidth: Math.round(content.getBoundingClientRect().width), text: longest(p)});
      continue;
    }
    const els = [p, ...[p.parentElement].filter(e => e && e.matches('div.highlight'))];
    const w = els.find(e => e.scrollWidth > e.clientWidth + 1);
    if (w) out.push({cell: cellOf(p), what: 'output',
                     scrollWidth: w.scrollWidth, clientWidth: w.clientWidth, text: longest(p)});
  }
  const wide = [...content.querySelectorAll(
      'div.plotly-graph-div, div.cell_output img, div.cell_output iframe, .jupyter-widgets, div.cell_output svg.main-svg, .live-widget')]
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


# The page's width at the current viewport and, when it is wider than the window, what reaches
# past the window's right edge: the outermost such elements of the article that no box of theirs
# scrolls or clips (a table in a scrolling wrapper reaches past the window but widens nothing).
PHONE_OVERFLOW_JS = r"""
() => {
  const W = window.innerWidth, scrollWidth = document.documentElement.scrollWidth;
  const out = {scrollWidth, innerWidth: W, culprits: []};
  if (scrollWidth <= W + 1) return out;
  const clipped = e => {
    for (let a = e.parentElement; a && a !== document.documentElement; a = a.parentElement)
      if (getComputedStyle(a).overflowX !== 'visible') return true;
    return false;
  };
  const past = e => { const r = e.getBoundingClientRect();
                      return r.width > 0 && r.right > W + 1 && !clipped(e); };
  for (const e of document.querySelectorAll('article *, main *')) {
    if (!past(e) || (e.parentElement && e.parentElement.closest('article, main')
                     && past(e.parentElement))) continue;
    const cls = typeof e.className === 'string' && e.className.trim()
      ? '.' + e.className.trim().split(/\s+/).slice(0, 2).join('.') : '';
    out.culprits.push({what: e.tagName.toLowerCase() + cls,
                       right: Math.round(e.getBoundingClientRect().right),
                       text: (e.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 60)});
    if (out.culprits.length >= 5) break;
  }
  return out;
}
"""


def phone_checks(page, rep: Report, name: str, info: dict) -> None:
    """The page at PHONE_WIDTH px: an overflow-phone failure when the document is wider than the
    window, naming what reaches past it. Leaves the viewport at PHONE_WIDTH."""
    page.set_viewport_size({"width": PHONE_WIDTH, "height": VIEWPORT["height"]})
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => r()))")
    time.sleep(0.3)  # Plotly's responsive figures resize on the window's resize event
    o = page.evaluate(PHONE_OVERFLOW_JS)
    info["phone_scroll_width"] = o["scrollWidth"]
    if o["scrollWidth"] > o["innerWidth"] + 1:
        what = "; ".join(
            f"{c['what']} to {c['right']} px" + (f" ({c['text']})" if c["text"] else "")
            for c in o["culprits"]
        )
        rep.fail(
            name,
            "overflow-phone",
            f"{o['scrollWidth']} px in a {o['innerWidth']} px window"
            + (f": {what}" if what else ""),
        )


def is_reader_figure_page(page: str) -> bool:
    """The intro and every chapter open with a figure."""
    return page == INTRO_PAGE or chapter_number(page) is not None


def is_experiment_chapter(page: str) -> bool:
    return page[: -len(".html")] in EXPERIMENT_CHAPTERS


def code_scroll_checks(page, rep: Report, name: str, numbers, width: int) -> int:
    """Code blocks that scroll sideways at the page's current viewport (``width`` px): each is an
    overflow-code failure. Returns how many."""
    scrolling = page.evaluate(CODE_SCROLL_JS)
    for o in scrolling:
        label = cell_label(numbers, o["cell"])
        rep.fail(
            name,
            "overflow-code",
            f"{label}, at {width} px: {o['scrollWidth']} px in {o['clientWidth']} px "
            f"({o['chars']} chars): {o['text']}",
        )
    return len(scrolling)


def reading_checks(page, rep: Report, name: str, info: dict, numbers) -> None:
    """Broken words in tables (at each of TABLE_WIDTHS), code that scrolls sideways (at the
    1400 px viewport and at NARROW_WIDTH), a page wider than a phone's window (at PHONE_WIDTH),
    the result box of an experiment chapter, and the page
    height, at the 1400 px viewport. Leaves the viewport as it found it."""
    info["page_height"] = page.evaluate("() => document.documentElement.scrollHeight")
    info["overflow_code"] = code_scroll_checks(
        page, rep, name, numbers, VIEWPORT["width"]
    )
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
            info["overflow_code_1280"] = code_scroll_checks(
                page, rep, name, numbers, width
            )
            for entry in page.evaluate(TOC_OVERFLOW_JS):
                rep.fail(
                    name,
                    "toc-overflow",
                    f"{width} px: the contents column cuts its entry {entry!r}",
                )
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
    phone_checks(page, rep, name, info)
    page.set_viewport_size(VIEWPORT)


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
                check_plotly_keys(page, rep, name, info)
                check_plotly(page, rep, name, info)
                check_widgets(page, rep, name, info)
                check_live_widgets(page, rep, name, info)
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
