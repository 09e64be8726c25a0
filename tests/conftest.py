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


# ---- the browser the page tests share (tests/browser): headless Chromium with check_book's
# launch arguments, skipped where Chromium or Playwright is missing
def load_check_book():
    """tests/browser/check_book.py as a module (it is a script, not a package)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "check_book", Path(__file__).resolve().parent / "browser" / "check_book.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def browser():
    check_book = load_check_book()
    chromium = check_book.find_chromium()
    if chromium is None:
        pytest.skip("chromium not installed")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=chromium, args=check_book.LAUNCH_ARGS, headless=True
        )
        yield b
        b.close()


def slide_and_read(page, widget_id: str, role: str, position: int, key: str):
    """Set a live widget's range input ``role`` to ``position``, as a reader's drag does (an
    ``input`` event), and return the JSON its readout keeps in ``data-{key}``."""
    return page.evaluate(
        """([id, role, i, key]) => { const r = document.getElementById(id);
             const input = r.querySelector(`input[data-role=${role}]`);
             input.value = String(i); input.dispatchEvent(new Event('input'));
             return JSON.parse(r.querySelector('[data-role=readout]').dataset[key]); }""",
        [widget_id, role, position, key],
    )
