"""Layer 3 — studies and figures that serve one or a few chapters of the book (uses the layers
below). Each module names the chapter it serves in its docstring; ``attnconv/README.md`` has the map.
"""
