"""Four touches to the book's HTML for readers, made when the pages are written (no JavaScript).

- Inline maths keeps its punctuation: a formula and the text touching it with no space between
  ("(", "),", "-head") go into one ``<span class="math-nowrap">``, which book/_static/reader.css
  keeps on one line. A browser may otherwise break a line between a typeset formula (an
  inline-block) and the bracket before it, leaving "(" alone at a line's end.
- The toggles of hidden cells say what they show: "Show code" / "Hide code" for a hidden input,
  "Show output" for a hidden output, "Show code and output" for a hidden cell with both, instead
  of myst-nb's "Show code cell source", "... content", "... output". _config.yml sets myst-nb's
  prompts to "Show {type}" / "Hide {type}"; this extension puts the reader's word for the
  ``{type}`` myst-nb filled in. A cell's own prompt (cell metadata, e.g. "Show the check") is
  left as it is.
- A range is set with an en dash, as in the prose: "layers 4-6" in a claim's title, "share
  0.69-1.00" in a verdict, and a range
  of numbers a table keeps on one line (``<span class="nowrap">4-6</span>``, from
  ``attnconv.chapters.shared.tables.keep_ranges``), read "4–6". Code, literal output and maths
  keep their hyphens, and so does a quotation of the paper (“... layers 3-6 ...”).
- A link to a glossary entry carries the entry's first sentence as its ``title``, so a reader who
  hovers over "fresh seeds" or "on one key" reads the definition without leaving the page
  (:func:`glossary_definitions` reads book/glossary.md; the link gets the class
  ``glossary-link``, which book/_static/reader.css underlines with dots).
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

NOWRAP_CLASS = "math-nowrap"
# the text touching a formula: up to the nearest space, tab or line break (a no-break space
# does not end it: it joins too)
_HEAD = re.compile(r"[^ \t\r\n]+\Z")
_TAIL = re.compile(r"\A[^ \t\r\n]+")


def glue_inline_math(document: nodes.Node) -> int:
    """Wrap each inline formula of ``document`` with the text that touches it, before and after,
    in an inline node of class :data:`NOWRAP_CLASS`. Returns how many formulas were wrapped."""
    wrapped = 0
    for math in list(document.findall(nodes.math)):
        parent = math.parent
        if parent is None or NOWRAP_CLASS in parent.get("classes", []):
            continue
        at = parent.index(math)
        prev = parent[at - 1] if at > 0 else None
        nxt = parent[at + 1] if at + 1 < len(parent) else None
        head = _HEAD.search(str(prev)) if isinstance(prev, nodes.Text) else None
        tail = _TAIL.search(str(nxt)) if isinstance(nxt, nodes.Text) else None
        if head is None and tail is None:
            continue
        wrap = nodes.inline(classes=[NOWRAP_CLASS])
        parent.replace(math, wrap)
        if head is not None:
            rest = str(prev)[: head.start()]
            if rest:
                parent.replace(prev, nodes.Text(rest))
            else:
                parent.remove(prev)
            wrap += nodes.Text(head.group())
        wrap += math
        if tail is not None:
            rest = str(nxt)[tail.end() :]
            if rest:
                parent.replace(nxt, nodes.Text(rest))
            else:
                parent.remove(nxt)
            wrap += nodes.Text(tail.group())
        wrapped += 1
    return wrapped


class GlueInlineMath(SphinxPostTransform):
    """:func:`glue_inline_math` on every page written as HTML."""

    default_priority = 400
    formats = ("html",)

    def run(self, **kwargs) -> None:
        glue_inline_math(self.document)


#: "layers 4-6", "Layer 1-2", "layers 1-2 minus 3-6": a range of layers written with an ASCII
#: hyphen.
_LAYER_RANGE = re.compile(r"\b([Ll]ayers?|minus)(\s+)(\d+)-(\d+)\b")
#: A range of decimals in running text, "share 0.69-1.00" (a judge's words): an en dash too.
_DECIMAL_RANGE = re.compile(r"(?<![\w.])(\d+\.\d+)-(\d+\.\d+)(?![\w.])")
#: A range of small numbers alone in a text node: "4-6", as a nowrap span holds it (a date,
#: "2026-11-21", is not a range).
_BARE_RANGE = re.compile(r"\d{1,3}-\d{1,3}")
#: Nodes whose text is code or maths, where a hyphen is a character, not typography.
_VERBATIM = (
    nodes.literal,
    nodes.literal_block,
    nodes.math,
    nodes.math_block,
    nodes.raw,
)


def en_dash_layer_ranges(document: nodes.Node) -> int:
    """Set every range of layers in ``document``'s running text (:data:`_LAYER_RANGE`), and every
    range of numbers a nowrap span holds (:data:`_BARE_RANGE`), with an en dash, leaving code,
    literal output and maths alone. Returns how many text nodes changed."""
    changed = 0
    for text in list(document.findall(nodes.Text)):
        if text.parent is None or any(
            isinstance(a, _VERBATIM) for a in _ancestors(text)
        ):
            continue
        new = _LAYER_RANGE.sub(_dash_unless_quoted, str(text))
        new = _DECIMAL_RANGE.sub("\\1\u2013\\2", new)
        if _BARE_RANGE.fullmatch(new) and _after_nowrap_span(text):
            new = new.replace("-", "\u2013")
        if new != str(text):
            text.parent.replace(text, nodes.Text(new))
            changed += 1
    return changed


def _dash_unless_quoted(m: re.Match) -> str:
    """A layer range with an en dash, unless it stands inside a quotation (“...” open before it
    in the same text): the paper's words are quoted as it prints them."""
    before = m.string[: m.start()]
    if before.count("\u201c") > before.count("\u201d"):
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}{m.group(3)}\u2013{m.group(4)}"


def _after_nowrap_span(text: nodes.Text) -> bool:
    """Whether ``text`` opens a ``<span class="nowrap">`` (the raw HTML node just before it)."""
    at = text.parent.index(text)
    before = text.parent[at - 1] if at > 0 else None
    return isinstance(before, nodes.raw) and 'class="nowrap"' in before.astext()


def _ancestors(node: nodes.Node):
    """``node``'s parents, nearest first."""
    while node.parent is not None:
        node = node.parent
        yield node


class EnDashLayerRanges(SphinxPostTransform):
    """:func:`en_dash_layer_ranges` on every page written as HTML."""

    default_priority = 410
    formats = ("html",)

    def run(self, **kwargs) -> None:
        en_dash_layer_ranges(self.document)


def prompt_word(myst_type: str, has_input: bool, has_output: bool) -> str:
    """The reader's word for what a hidden part of a cell holds, from myst-nb's ``{type}``
    (source, output, outputs, content)."""
    if myst_type == "source":
        return "code"
    if myst_type in ("output", "outputs"):
        return "output"
    if has_input and has_output:
        return "code and output"
    return "code" if has_input else "output"


class ReaderCellPrompts(SphinxPostTransform):
    """The toggles myst-nb puts on hidden cells, in the reader's words (:func:`prompt_word`)."""

    default_priority = (
        250  # after myst-nb's HideInputCells (199), which makes the toggles
    )
    formats = ("html",)

    def run(self, **kwargs) -> None:
        from myst_nb.sphinx_ import HideCodeCellNode

        templates = {
            "prompt_show": self.config.nb_code_prompt_show,
            "prompt_hide": self.config.nb_code_prompt_hide,
        }
        for node in self.document.findall(HideCodeCellNode):
            parts = {c.get("nb_element") for c in node.findall(nodes.container)}
            for key, template in templates.items():
                for myst_type in ("source", "outputs", "output", "content"):
                    if node[key] == template.replace("{type}", myst_type):
                        word = prompt_word(
                            myst_type,
                            "cell_code_source" in parts,
                            "cell_code_output" in parts,
                        )
                        node[key] = template.replace("{type}", word)
                        break


#: An entry of book/glossary.md: its label, its term line, the definition's first paragraph.
_ENTRY = re.compile(r"^\((glossary-[\w-]+)\)=\n([^\n]+)\n: (.+?)(?=\n\s*\n|\Z)", re.M | re.S)
#: MyST markup a tooltip shows as plain text: {ref}`text <label>` and {ref}`label`, **bold**,
#: *italic*, `code`, $maths$.
_ROLE = re.compile(r"\{[\w:-]+\}`([^`<]*?)\s*(?:<[^`]*>)?`")
_MARKS = re.compile(r"\*\*|(?<![\w*])\*(?=\S)|(?<=\S)\*(?![\w*])|`|\$|\\")
#: The longest tooltip, in characters: the first sentences up to it.
TOOLTIP_CHARS = 240


#: The TeX a definition uses, as a tooltip (plain text) writes it.
_TEX = {
    r"\alpha": "α", r"\infty": "∞", r"\to": "→", r"\lVert": "‖", r"\rVert": "‖",
    r"\lfloor": "⌊", r"\rfloor": "⌋", r"\dots": "…", r"\times": "×", r"\Sigma": "Σ",
    r"\Delta": "Δ", r"\delta": "δ", r"\sum": "Σ", r"\min": "min", r"\,": " ",
    "^{-1}": "⁻¹", "^{-5}": "⁻⁵", "^{5}": "⁵", "^2": "²", r"\{": "{", r"\}": "}",
}  # fmt: skip
_TEX_FONT = re.compile(r"\\math(?:bf|rm|bb)\{(\w+)\}")


def _plain(text: str) -> str:
    text = re.sub(r"\s*\(\{ref\}`[^`<]*`\)", "", text)  # "(appendix x)": a bare label
    text = _ROLE.sub(lambda m: m.group(1), text)
    text = _TEX_FONT.sub(lambda m: m.group(1), text)
    for tex in sorted(_TEX, key=len, reverse=True):
        text = text.replace(tex, _TEX[tex])
    return re.sub(r"\s+", " ", _MARKS.sub("", text)).strip()


def glossary_definitions(markdown: str) -> dict:
    """``{label: "Term: first sentences of its definition."}`` for every entry of the glossary's
    Markdown (``(glossary-x)=``, the term line, ``: definition``): plain text, whole sentences up
    to :data:`TOOLTIP_CHARS` characters (at least the first)."""
    out = {}
    for label, term, body in _ENTRY.findall(markdown):
        sentences = re.split(r"(?<=[.;])\s+(?=[A-Z(\"“])", _plain(body))
        said = sentences[0]
        for s in sentences[1:]:
            if len(said) + 1 + len(s) > TOOLTIP_CHARS:
                break
            said += " " + s
        out[label] = f"{_plain(term)}: {said}"
    return out


class GlossaryTooltips(SphinxPostTransform):
    """Every link to a glossary entry gets that entry's definition as its title
    (:func:`glossary_definitions`) and the class ``glossary-link``."""

    default_priority = 420
    formats = ("html",)

    def run(self, **kwargs) -> None:
        from pathlib import Path

        env = self.env
        if not hasattr(env, "_glossary_tooltips"):
            page = Path(env.srcdir) / "book" / "glossary.md"
            env._glossary_tooltips = (
                glossary_definitions(page.read_text()) if page.exists() else {}
            )
        tips = env._glossary_tooltips
        for ref in self.document.findall(nodes.reference):
            anchor = ref.get("refuri", "").rpartition("#")[2] or ref.get("refid", "")
            if anchor in tips and "reftitle" not in ref:
                ref["reftitle"] = tips[anchor]
                ref["classes"].append("glossary-link")


def setup(app):
    app.add_post_transform(GlossaryTooltips)
    app.add_post_transform(GlueInlineMath)
    app.add_post_transform(ReaderCellPrompts)
    app.add_post_transform(EnDashLayerRanges)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
