"""The floor under the chapter modules: what more than one chapter uses.

Chapter modules (``attnconv.chapters.<name>``) never import one another; what two of them share
lives here (checked by ``tests/test_layout.py``). Modules here import only one another and the
layers below (:mod:`attnconv.experiments`, :mod:`attnconv.core`).
"""
