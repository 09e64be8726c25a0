"""Serve plotly.js from the built book's ``_static`` folder, for the kernel-free Plotly figures.

The notebooks write their Plotly figures without plotly.js (``include_plotlyjs=False``, see
:func:`attnconv.chapters.interactive.figure_html`). This extension copies ``plotly.min.js`` from
the installed ``plotly`` package (pinned in requirements.txt) into ``_build/html/_static`` and
adds a ``<script>`` for it to the pages that hold a Plotly figure, and only to those, so the
figures work offline and from file:// and no copy of plotly.js is kept in git.
"""

from __future__ import annotations

from pathlib import Path

PLOTLY_JS = "plotly.min.js"


def plotly_js_path() -> Path:
    """The ``plotly.min.js`` shipped inside the installed ``plotly`` package."""
    import plotly

    path = Path(plotly.__file__).resolve().parent / "package_data" / PLOTLY_JS
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: is the plotly package complete?")
    return path


def _add_on_plotly_pages(app, pagename, templatename, context, doctree):
    body = context.get("body") or ""
    if "plotly-graph-div" in body:
        app.add_js_file(PLOTLY_JS, priority=400)  # this page only (Sphinx >= 3.5)


def _copy_plotly_js(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    from sphinx.util.fileutil import copy_asset_file

    static = Path(app.outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    copy_asset_file(str(plotly_js_path()), str(static / PLOTLY_JS))


def setup(app):
    plotly_js_path()  # fail early, with a clear message, when plotly is missing
    app.connect("html-page-context", _add_on_plotly_pages)
    app.connect("build-finished", _copy_plotly_js)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
