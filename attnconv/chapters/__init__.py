"""Layer 3 — one module per chapter of the book (uses the layers below). Each module names the
chapter it serves in its docstring; ``attnconv/README.md`` has the map. The layer is flat: a
chapter module never imports another one; what chapters share is in :mod:`attnconv.chapters.shared`.
"""
