"""Two touches to the book's HTML for readers, made when the pages are written (no JavaScript).

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

    default_priority = 250  # after myst-nb's HideInputCells (199), which makes the toggles
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


def setup(app):
    app.add_post_transform(GlueInlineMath)
    app.add_post_transform(ReaderCellPrompts)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
