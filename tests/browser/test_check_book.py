"""The reading checks of tests/browser/check_book.py, on small pages made for each case.

The text checks run everywhere; the checks measured in a browser run when Chromium and
playwright are installed (as for ``make check-book``) and are skipped otherwise."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("check_book", HERE / "check_book.py")
check_book = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_book)


@pytest.mark.parametrize(
    "text",
    [
        "Against the code before issue 20",
        "the 75 % that Issue 20 asks for",
        "the attnconv of commit 30b81eb, the code before",
        "git worktree add ../attnconv-before 30b81eb",
        "the minor page faults per step",
        "goal (at least 2x in every case) met: False",
        "a full id 9ceb90b1c3a4e5f60718293a4b5c6d7e8f901234 here",
    ],
)
def test_workshop_text_found(text):
    assert check_book.workshop_mentions(text), text


@pytest.mark.parametrize(
    "text",
    [
        "CIFAR-10 at 16×16 tokens, 3600 → 400, 1e-06 and 0.000123",
        "the issues this raises are two",
        "a commitment to reproduce; decade 1990s",
        "deadbeef has no digit; 1234567 has no letter",
        "sha256 " + "0123456789abcdef" * 4,  # a checksum, not a commit id
        "the goal of this chapter is a figure.",
        "file attention_cnn/a1b2c3d4e5.py",
    ],
)
def test_reader_text_passes(text):
    assert not check_book.workshop_mentions(text), check_book.workshop_mentions(text)


def _page(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<html><body><main><article>{body}</article></main></body></html>")
    return name


def test_structural_check_flags_reader_pages_only(tmp_path):
    body = (
        "<p>Against the code before issue 20 (commit 30b81eb).</p><script>x=1</script>"
    )
    pages = [
        _page(tmp_path, "book/13_performance.html", body),
        _page(tmp_path, "book/appendix_benchmarks.html", body),
        _page(tmp_path, "book/01_self_attention.html", "<p>Attention, 9 heads.</p>"),
    ]
    rep = check_book.Report()
    check_book.structural_checks(tmp_path, pages, rep, 89)
    hits = rep.failures["workshop-text"]
    assert [p for p, _ in hits] == ["book/13_performance.html"] * 2


def test_experiment_chapter_list():
    assert check_book.is_experiment_chapter("book/13_performance.html")
    assert check_book.is_experiment_chapter("book/18_beyond_the_paper.html")
    assert check_book.is_experiment_chapter("book/12_six_layers.html")
    assert not check_book.is_experiment_chapter("book/06_head_explorer.html")


# ------------------------------------------------------------------ in a browser --


def _measure(browser, html: str, width: int = 1400) -> dict:
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.set_content(
        "<html><body style='margin:0;font:16px sans-serif'><main><article class='bd-article'>"
        + html
        + "</article></main></body></html>"
    )
    out = {
        "words": page.evaluate(check_book.TABLE_WORDS_JS),
        "code": page.evaluate(check_book.CODE_SCROLL_JS),
        "box": page.evaluate(check_book.RESULT_BOX_JS, check_book.RESULT_BOX_SELECTOR),
    }
    context.close()
    return out


def test_word_broken_in_a_narrow_cell(browser):
    squeezed = (
        "<table style='width:80px;table-layout:fixed'><tr>"
        "<td style='width:40px;overflow-wrap:anywhere'>quadratic</td>"
        "<td style='width:40px;overflow-wrap:anywhere'>176,402</td></tr></table>"
    )
    words = _measure(browser, squeezed)["words"]
    assert {w["word"] for w in words} == {"quadratic", "176,402"}
    assert all(" / " in w["parts"] for w in words)


def test_words_that_wrap_between_them_pass(browser):
    table = (
        "<table style='width:200px'><tr><td>the quadratic encoding, six layers, "
        "176,402 parameters, one-hot</td><td>1.00</td></tr></table>"
    )
    assert _measure(browser, table)["words"] == []


def test_compound_broken_at_its_hyphen_passes_a_number_range_fails(browser):
    cell = "<table><tr><td style='width:{}px;display:block'>{}</td></tr></table>"
    assert _measure(browser, cell.format(40, "one-hot"))["words"] == []
    words = _measure(
        browser, cell.format(20, "<span style='word-break:break-all'>1–4</span>")
    )["words"]
    assert [w["word"] for w in words] == ["1–4"]


def test_code_block_that_scrolls(browser):
    """A cell's input and a source listing (code a cell displays) that scroll sideways fail; a
    printed output does not (it wraps, and its own checks are overflow-output)."""
    long = "x = " + "1 + " * 60 + "1"
    pre = "<pre style='width:300px;overflow:auto'>{}</pre>"
    html = (
        "<div class='cell'><div class='cell_input'><div class='highlight'>"
        f"{pre.format(long)}</div></div></div>"
        "<div class='highlight'><pre style='width:300px;overflow:auto'>y = 1</pre></div>"
        "<div class='cell'><div class='cell_output'><div class='highlight-python'>"
        f"<div class='highlight'>{pre.format(long)}</div></div>"
        "<div class='output stream highlight-myst-ansi'><div class='highlight'>"
        f"{pre.format(long)}</div></div></div></div>"
    )
    code = _measure(browser, html)["code"]
    assert [c["cell"] for c in code] == [0, 1]
    assert all(c["chars"] == len(long) for c in code)


def test_code_that_fits_at_1400_but_scrolls_at_1280_fails(browser):
    """reading_checks measures code at the 1400 px viewport and again at NARROW_WIDTH: a block
    that only scrolls at 1280 px is an overflow-code failure there."""
    line = "x" * 80  # 674 px at 14 px: fits half of a 1400 px window, not of 1280 px
    context = browser.new_context(viewport=check_book.VIEWPORT)
    page = context.new_page()
    page.set_content(
        "<html><body style='margin:0'><main><article class='bd-article'>"
        "<div class='cell'><div class='cell_input'><div class='highlight'>"
        "<pre style='width:50vw;overflow:auto;white-space:pre;padding:0;margin:0;"
        f"font:14px/1 monospace'>{line}</pre></div></div></div></article></main></body></html>"
    )
    rep = check_book.Report()
    info: dict = {}
    check_book.reading_checks(page, rep, "book/appendix_x.html", info, None)
    context.close()
    assert info["overflow_code"] == 0 and info["overflow_code_1280"] == 1, info
    [(where, text)] = rep.failures["overflow-code"]
    assert where == "book/appendix_x.html" and "at 1280 px" in text, text


def test_code_scrolls_in_its_box_at_the_narrow_width_an_output_does_not(browser):
    """At NARROW_WIDTH a long line of code scrolls inside its own box (reader.css) and passes;
    a printed output that scrolls sideways, or a code block wider than the column, fails."""
    long = "x = " + "1 + " * 60 + "1"
    pre = "<pre style='overflow:auto;white-space:pre;{}'>{}</pre>"
    html = (
        "<div class='cell'><div class='cell_input'><div class='highlight-ipython3'>"
        f"<div class='highlight'>{pre.format('', long)}</div></div></div>"
        "<div class='cell_output'><div class='highlight-python'><div class='highlight'>"
        f"{pre.format('', long)}</div></div>"  # a source listing: code
        "<div class='output stream highlight-myst-ansi'><div class='highlight'>"
        f"{pre.format('', long)}</div></div></div></div>"  # printed: an output
        "<div class='cell'><div class='cell_input'><div class='highlight-ipython3'>"
        f"<div class='highlight'>{pre.format('width:2000px', 'y = 1')}</div></div></div></div>"
    )
    context = browser.new_context(viewport={"width": 600, "height": 900})
    page = context.new_page()
    page.set_content(
        "<html><body style='margin:0;font:16px sans-serif'><main>"
        "<article class='bd-article' style='width:500px'>"
        + html
        + "</article></main></body></html>"
    )
    out = page.evaluate(check_book.NARROW_OVERFLOW_JS, check_book.OUTPUT_PRE_SELECTOR)
    context.close()
    assert sorted((o["cell"], o["what"]) for o in out) == [(0, "output"), (1, "code")]


def test_result_box_position(browser):
    box = "<div class='admonition tip result-box'>In short</div>"
    assert _measure(browser, box)["box"] == 0
    low = f"<div style='height:{check_book.FIRST_SCREEN_PX + 100}px'></div>{box}"
    assert _measure(browser, low)["box"] >= check_book.FIRST_SCREEN_PX
    assert _measure(browser, "<p>no box</p>")["box"] is None


# ------------------------------------------------------------ the reader's rules (no browser) --


def _soup(html: str):
    return check_book.BeautifulSoup(
        f"<html><body><article>{html}</article></body></html>", "html.parser"
    )


def test_chapter_numbers_and_sidebar_order():
    assert check_book.chapter_number("book/07b_explore_trained_heads.html") == "7b"
    assert check_book.chapter_number("book/13_performance.html") == "13"
    assert check_book.chapter_number("book/appendix_benchmarks.html") is None
    nav = "".join(
        f"<a>{t}</a>" for t in ("A map", "7. Seven", "7b. Seven b", "12b. X", "18. Y")
    )
    soup = check_book.BeautifulSoup(
        f"<nav class='bd-docs-nav'>{nav}</nav>", "html.parser"
    )
    numbers = check_book.sidebar_numbers(soup)
    assert numbers == ["7", "7b", "12b", "18"]
    assert numbers == sorted(numbers, key=check_book.number_key)
    assert ["12b", "18", "13"] != sorted(["12b", "18", "13"], key=check_book.number_key)


def _rules(tmp_path, page: str, body: str) -> dict:
    _page(tmp_path, page, body)
    rep = check_book.Report()
    check_book.structural_checks(tmp_path, [page], rep, 89)
    return {k: [t for p, t in v if p == page] for k, v in rep.failures.items()}


def test_code_lines_and_true_false_outside_collapsed_blocks(tmp_path):
    code = "<div class='cell'><div class='cell_input'><pre>{}</pre></div>{}</div>"
    out = "<div class='cell_output'><pre>{}</pre></div>"
    visible = code.format("\n".join(["x = 1"] * 81), out.format("equal: True\n0.5"))
    hidden = (
        "<details class='hide above-input'><summary>s</summary>"
        + code.format("\n".join(["y = 2"] * 200), out.format("ok: False"))
        + "</details>"
    )
    got = _rules(tmp_path, "book/04_x.html", visible + hidden)
    assert len(got["code-lines"]) == 1 and "81 lines" in got["code-lines"][0]
    assert got["true-false-output"] == ["equal: True"]
    got = _rules(tmp_path, "book/05_x.html", hidden)
    assert "code-lines" not in got and "true-false-output" not in got


def test_images_need_a_numbered_caption_of_their_chapter(tmp_path):
    good = "<figure><img src='a.png'><figcaption>Figure 4.1 — a</figcaption></figure>"
    wrong = "<figure><img src='b.png'><figcaption>Figure 3.1 — b</figcaption></figure>"
    bare = "<img src='c.png'>"
    got = _rules(tmp_path, "book/04_x.html", good + wrong + bare)
    assert len(got["unnumbered-figure"]) == 2
    assert "not in a <figure>" in got["unnumbered-figure"][1]
    assert "unnumbered-figure" not in _rules(tmp_path, "book/04_y.html", good)


def test_allow_listed_failures_are_expected_not_counted(monkeypatch):
    page, kind = "book/07_quadratic_training.html", "late-figure"
    monkeypatch.setattr(
        check_book.common, "EXPECTED_READER_FAILURES", {page: frozenset({kind})}
    )
    rep = check_book.Report()
    rep.fail(page, kind, "x")
    rep.fail(page, "console-error", "y")
    assert rep.expected[kind] == [(page, "x")] and kind not in rep.failures
    assert rep.failures["console-error"] == [(page, "y")]


def test_sphinx_running_number_is_not_the_caption(tmp_path):
    sphinx = (
        "<figure><img src='a.png'><figcaption><p><span class='caption-number'>Fig. 12 "
        "</span><span class='caption-text'>Figure 4.1 — a</span></p></figcaption></figure>"
    )
    assert "unnumbered-figure" not in _rules(tmp_path, "book/04_z.html", sphinx)


# ---- how the book teaches (book_checks/teaching.py)


def test_sentence_length_per_chapter(tmp_path):
    short = "<p>" + "A short sentence of eight words here. " * 5 + "</p>"
    long_one = "<p>" + " ".join(["word"] * 45) + ". Then eq. 9 and Fig. 2 stay one.</p>"
    got = _rules(tmp_path, "book/04_x.html", short)
    assert "sentence-length" not in got
    got = _rules(tmp_path, "book/04_y.html", long_one)
    assert any("45 words" in t for t in got["sentence-length"])
    assert any("on average" in t for t in got["sentence-length"])
    assert check_book.words("Then eq. 9 and Fig. 2 stay one.") == 8
    sentences = check_book.prose_sentences(
        check_book.BeautifulSoup(long_one, "html.parser")
    )
    assert len(sentences) == 2  # "eq." and "Fig." do not end a sentence


def test_tables_need_a_numbered_caption_of_their_chapter(tmp_path):
    good = (
        "<table><caption><span class='caption-number'>Table 3 </span>"
        "<span class='caption-text'>Table 4.1 — checks</span></caption>"
        "<tr><td>a</td></tr></table>"
    )
    bare = "<table><tr><td>b</td></tr></table>"
    bold = good.replace("Table 4.1 —", "<strong>Table 4.1 —</strong>")
    assert "unnumbered-table" not in _rules(tmp_path, "book/04_t.html", good)
    assert "unnumbered-table" not in _rules(tmp_path, "book/04_b.html", bold)
    got = _rules(tmp_path, "book/04_u.html", good + bare)
    assert got["unnumbered-table"] == ["table starting 'b': no caption"]


def test_badges_dollars_alt_text_and_printing_code(tmp_path):
    body = (
        "<span class='sd-badge sd-bg-success'>2 reproduced</span>"
        "<span class='sd-badge sd-bg-muted'>inconclusive</span>"
        "<span class='sd-badge sd-bg-warning'>inconclusive</span>"
        "<span class='sd-badge sd-bg-warning'>faster only where $T^2$ dominates</span>"
        "<p>costs $5 here; <span class='math'>\\(x\\)</span> is fine</p>"
        "<img src='a.png' alt='Attention of four heads'><img src='b.png' alt='../_images/b.png'>"
        "<div class='cell'><div class='cell_input'><pre>x = 1\nprint(x)\ny = f'{x}'</pre></div></div>"
    )
    got = _rules(tmp_path, "book/04_b.html", body)
    assert (
        len(got["badge-word"]) == 2
    )  # an orange inconclusive, and a word not in the set
    assert len(got["raw-dollar"]) == 3  # the badge's two in $T^2$, and "$5"
    assert got["alt-text"] == ["b.png: alt '../_images/b.png'"]
    assert got["printing-code"] == [
        "2 of 3 visible code lines print or format (at most 30%)"
    ]


def test_sidebar_parts_and_titles(tmp_path):
    nav = "".join(
        f"<p class='caption'>Part {i}</p><ul><li><a class='reference internal' "
        f"href='0{i}_x.html'>{i}. Title {i}</a></li></ul>"
        for i in range(1, 8)
    )
    home = _page(
        tmp_path,
        "book/intro.html",
        f"<nav class='bd-docs-nav'>{nav}</nav><h1>Intro</h1>",
    )
    for i in range(1, 8):
        title = f"{i}. Title {i}" if i != 3 else "3. Another title"
        _page(tmp_path, f"book/0{i}_x.html", f"<h1>{title}</h1>")
    pages = [home] + [f"book/0{i}_x.html" for i in range(1, 8)]
    rep = check_book.Report()
    check_book.structural_checks(tmp_path, pages, rep, 89)
    assert len(rep.failures["sidebar-parts"]) == 1
    assert rep.failures["sidebar-title"] == [
        (home, "'3. Title 3' opens '3. Another title' (book/03_x.html)")
    ]


def _sidebar_book(tmp_path, parts, titles, body=""):
    """A home page whose sidebar has ``parts`` [(caption, [page, ...])], and one page per entry
    titled ``titles[page]``; the structural checks' failures, by kind."""
    nav = "".join(
        f"<p class='caption'>{caption}</p><ul>"
        + "".join(
            f"<li class='toctree-l1'><a class='reference internal' href='{page}.html'>"
            f"{titles[page]}</a></li>"
            for page in pages
        )
        + "</ul>"
        for caption, pages in parts
    )
    home = _page(
        tmp_path,
        "book/intro.html",
        f"<nav class='bd-docs-nav'>{nav}</nav><h1>Intro</h1>{body}",
    )
    pages = [home]
    for page, title in titles.items():
        pages.append(_page(tmp_path, f"book/{page}.html", f"<h1>{title}</h1>"))
    rep = check_book.Report()
    check_book.structural_checks(tmp_path, pages, rep, 89)
    return {k: [t for _, t in v] for k, v in rep.failures.items()}


APPENDIX_TITLES = {
    "01_x": "1. One",
    "glossary": "Glossary",
    "appendix_weightless": "Appendix A. Two claims",
    "appendix_protocol": "Appendix B. The protocol",
    "appendix_how_made": "Appendix C. How it is made",
}


def test_appendices_lettered_in_order_in_the_last_part(tmp_path):
    good = [
        ("Theory", ["01_x"]),
        ("Reading guide", ["glossary"]),
        (
            "Appendices",
            ["appendix_weightless", "appendix_protocol", "appendix_how_made"],
        ),
    ]
    links = (
        "<p><a class='reference internal' href='appendix_protocol.html'>appendix B</a>, "
        "<a class='reference internal' href='appendix_weightless.html'>App. A</a>, "
        "<a class='reference internal' href='appendix_protocol.html'>"
        "Appendix B. The protocol</a></p>"
    )
    got = _sidebar_book(tmp_path, good, APPENDIX_TITLES, links)
    assert "appendix-letters" not in got and "appendix-link" not in got, got


def test_appendix_out_of_order_or_outside_its_part_fails(tmp_path):
    titles = dict(APPENDIX_TITLES, appendix_how_made="Appendix D. How it is made")
    parts = [
        ("Theory", ["01_x", "appendix_weightless"]),
        ("Appendices", ["appendix_protocol", "appendix_how_made"]),
        ("Reading guide", ["glossary"]),
    ]
    got = _sidebar_book(tmp_path, parts, titles)["appendix-letters"]
    assert got == [
        "last sidebar part is 'Reading guide', not 'Appendices'",
        "'Appendix A. Two claims' in part 'Theory', not in 'Appendices'",
        "book/appendix_weightless.html in part 'Theory', not in 'Appendices'",
        "entry 1 of 'Appendices' is 'Appendix B. The protocol', not 'Appendix A. ...'",
        "entry 2 of 'Appendices' is 'Appendix D. How it is made', not 'Appendix B. ...'",
    ], got


def test_appendix_part_holds_only_lettered_appendix_pages(tmp_path):
    titles = dict(APPENDIX_TITLES, glossary="Appendix D. Glossary")
    titles["appendix_how_made"] = "How it is made"
    parts = [
        ("Theory", ["01_x"]),
        (
            "Appendices",
            [
                "appendix_weightless",
                "appendix_protocol",
                "appendix_how_made",
                "glossary",
            ],
        ),
    ]
    got = _sidebar_book(tmp_path, parts, titles)["appendix-letters"]
    assert got == [
        "entry 3 of 'Appendices' is 'How it is made', not 'Appendix C. ...'",
        "book/glossary.html in 'Appendices'",
    ], got


def test_a_link_naming_the_wrong_appendix_letter_fails(tmp_path):
    parts = [
        ("Theory", ["01_x"]),
        (
            "Appendices",
            ["appendix_weightless", "appendix_protocol", "appendix_how_made"],
        ),
    ]
    links = (
        "<p><a class='reference internal' href='appendix_protocol.html'>appendix A</a>"
        " and <a class='reference internal' href='01_x.html'>App. C</a></p>"
    )
    got = _sidebar_book(tmp_path, parts, APPENDIX_TITLES, links)["appendix-link"]
    assert got == [
        "'appendix A' opens book/appendix_protocol.html (appendix B)",
        "'App. C' opens book/01_x.html (no lettered appendix)",
    ], got


def test_pending_pages_are_expected_not_counted(monkeypatch):
    page = "book/13_performance.html"
    monkeypatch.setattr(
        check_book.teaching, "PENDING_TEACHING_PAGES", {page: frozenset({"badge-word"})}
    )
    rep = check_book.Report()
    rep.fail(page, "badge-word", "x")
    assert rep.expected["badge-word"] == [(page, "x")] and not rep.failures


def test_pending_pages_name_only_known_rules():
    """The exemption list of the teaching checks names rules that exist (a typo would exempt
    nothing and hide it)."""
    from book_checks.teaching import PENDING_TEACHING_PAGES, TEACHING_RULES

    for page, rules in PENDING_TEACHING_PAGES.items():
        assert set(rules) <= set(TEACHING_RULES), page


def test_an_outlined_badge_is_checked_by_its_outline_class():
    """``bdg-x-line`` renders outlined (sd-outline-x): the colour check reads that class, and a
    filled badge of the same word fails it."""
    from bs4 import BeautifulSoup

    teaching = check_book.teaching
    assert teaching.badge_class("bdg-dark-line") == "sd-outline-dark"
    assert teaching.badge_class("bdg-primary") == "sd-bg-primary"
    lines = [
        (w, r) for w, r in teaching._CATEGORY_BADGES.items() if r.endswith("-line")
    ]
    assert {w for w, _ in lines} >= {"exact", "exploratory"}
    for word, role in lines:
        colour = role.removeprefix("bdg-").removesuffix("-line")
        outlined = f'<article><span class="sd-badge sd-outline-{colour}">{word}</span></article>'
        filled = (
            f'<article><span class="sd-badge sd-bg-{colour}">{word}</span></article>'
        )
        assert (
            teaching.badge_problems(BeautifulSoup(outlined, "html.parser").article)
            == []
        )
        assert teaching.badge_problems(BeautifulSoup(filled, "html.parser").article)
    # "exact" in the reproduced badge's filled green, as the book drew it before
    assert teaching.badge_problems(
        BeautifulSoup(
            '<article><span class="sd-badge sd-bg-success">exact</span></article>',
            "html.parser",
        ).article
    ) == ["badge 'exact': not coloured sd-outline-success"]
