"""Print a digest of every file under book/ (paths and contents; _build and notebook checkpoints aside).

``make test`` / ``make nbval`` print it before and after executing the notebooks and fail when it
changed: executing a chapter must never write, overwrite or delete a file of the book (chapters
only read; ``python -m attnconv.regenerate`` makes the runs and results). Works without git.
"""

import hashlib
import sys
from pathlib import Path

SKIP = {"_build", ".ipynb_checkpoints", "__pycache__", ".jupyter_cache"}


def book_state(book: Path) -> dict:
    """``{relative path: sha256 of the content}`` of every file under ``book``."""
    out = {}
    for p in sorted(book.rglob("*")):
        if p.is_file() and not SKIP.intersection(p.relative_to(book).parts):
            out[p.relative_to(book).as_posix()] = hashlib.sha256(
                p.read_bytes()
            ).hexdigest()
    return out


def main(argv):
    book = (
        Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1] / "book"
    )
    for path, digest in book_state(book).items():
        print(digest, path)


if __name__ == "__main__":
    main(sys.argv)
