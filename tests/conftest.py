import os
from pathlib import Path

import pytest
import torch

torch.set_num_threads(1)


def synthetic_cifar(n_train: int, n_test: int, seed: int = 0):
    """Random uint8 images and labels in the shape of CIFAR-10, for fast training tests."""
    from attnconv.experiments.data import CifarData

    g = torch.Generator().manual_seed(seed)
    return CifarData(
        torch.randint(0, 256, (n_train, 3, 32, 32), dtype=torch.uint8, generator=g),
        torch.randint(0, 10, (n_train,), generator=g),
        torch.randint(0, 256, (n_test, 3, 32, 32), dtype=torch.uint8, generator=g),
        torch.randint(0, 10, (n_test,), generator=g),
        source="synthetic",
        note="Data: synthetic test images.",
    )


#: The paper's text beside the checkout (``../shared/papers``): the only guard of every quotation.
PAPER = (
    Path(__file__).resolve().parents[2]
    / "shared"
    / "papers"
    / "002_3c48580c3ebf0097.txt"
)


def paper_text(path: Path = PAPER) -> str:
    """The paper's text; a test that needs it skips where it is absent, except under CI (``$CI``
    set), where that fails: there the quotation checks must run."""
    if path.is_file():
        return path.read_text()
    message = f"the paper's text is not at {path}"
    if os.environ.get("CI"):
        pytest.fail(message + " (CI is set: the quotation checks must run)")
    pytest.skip(message)
