"""The browser the page tests share: headless Chromium with check_book's launch arguments
(skipped where Chromium or Playwright is missing)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


def load_check_book():
    """tests/browser/check_book.py as a module (it is a script, not a package)."""
    spec = importlib.util.spec_from_file_location(
        "check_book", Path(__file__).resolve().parent / "check_book.py"
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
