"""``python -m attnconv.bench``: the attention benchmark (code in :mod:`attnconv.experiments.bench`)."""

import sys

from .experiments.bench import main

if __name__ == "__main__":
    sys.exit(main())
