"""``python -m attnconv.bench``: the attention benchmark.

The command line lives in :mod:`attnconv.experiments.bench_cli`, the benchmark in
:mod:`attnconv.experiments.bench`; this module is only the entry point.
"""

import sys

from .experiments.bench_cli import main

if __name__ == "__main__":
    sys.exit(main())
