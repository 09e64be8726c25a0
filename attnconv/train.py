"""``python -m attnconv.train``: train one of the paper's CIFAR-10 models into a run folder.

The command line lives in :mod:`attnconv.experiments.train_cli`, the training loop in
:mod:`attnconv.experiments.train`; this module is only the entry point.
"""

import sys

from .experiments.train_cli import main

if __name__ == "__main__":
    sys.exit(main())
