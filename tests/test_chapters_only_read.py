"""Chapters only read: reading any saved run or result as the chapters do never writes, overwrites or
deletes a file of the book, also when it is missing or was made with other settings; the error then
names the command that makes it. A chapter that reads saved results is executed on a copy of the
book to show the same for a whole notebook.

The full check — every notebook executed by nbval, then the book's files compared — is in
``make test`` / ``make nbval`` (``tests/book_state.py`` before and after); this file is its fast
part, run with the unit tests.
"""

import json
import shutil
from pathlib import Path

import pytest
from book_state import book_state

from attnconv.experiments import registry
from attnconv.experiments.store import MissingResultError, StaleResultError, book_dir

BOOK = Path(__file__).resolve().parents[1] / "book"


@pytest.fixture
def book_copy(tmp_path, monkeypatch):
    """A copy of the book's runs and results, which the store then resolves to."""
    copy = tmp_path / "book"
    for part in ("runs", "results"):
        shutil.copytree(BOOK / part, copy / part)
    monkeypatch.setenv("ATTNCONV_BOOK_DIR", str(copy))
    assert book_dir() == copy.resolve()
    return copy


def results():
    """The committed results (the gpu and paper runs' studies are made on a reader's GPU box)."""
    from attnconv.evidence.freeze import BACKGROUND_PATHS
    from attnconv.experiments.studies import STUDIES

    # the protocol's results are made over several sessions: read once they are there
    return [
        r
        for r in STUDIES.values()
        if r.committed and (r.path.is_file() or not r.file.startswith(BACKGROUND_PATHS))
    ]


def test_reading_every_result_leaves_the_book_unchanged(book_copy):
    before = book_state(book_copy)
    for entry in results():
        entry.read()
    for name in registry.RUNS:
        if (
            registry.RUNS[name].committed
            and (registry.RUNS[name].path / "history.json").is_file()
        ):
            registry.load_run(name)
    assert book_state(book_copy) == before


def _spoil(path: Path, how: str) -> None:
    if how == "missing":
        path.unlink()
        return
    d = json.loads(path.read_text())
    for key in (
        "key",
        "base_config",
        "epoch",
    ):  # whatever the file records its settings under
        if key in d:
            d[key] = {"made with": "other settings"}
            break
    else:
        pytest.skip(f"{path.name} records no settings")
    path.write_text(json.dumps(d))


@pytest.mark.parametrize("how", ["missing", "stale"])
@pytest.mark.parametrize("name", [r.name for r in results()])
def test_missing_or_stale_result_is_an_error_not_a_write(book_copy, name, how):
    entry = next(r for r in results() if r.name == name)
    if not entry.path.is_file():
        pytest.skip(f"book/{entry.file} is not committed")
    _spoil(entry.path, how)
    for (
        run
    ) in entry.runs:  # with the weights at hand the old readers re-computed and wrote
        (registry.run_entry(run).path / "checkpoint.pt").write_bytes(
            b"not a checkpoint"
        )
    before = book_state(book_copy)
    with pytest.raises(
        (MissingResultError, StaleResultError), match="python -m attnconv.regenerate"
    ) as e:
        entry.read()
    assert name in str(e.value) or how == "missing"
    assert book_state(book_copy) == before


@pytest.mark.parametrize("name", ["cpu/quadratic", "deep/generalized"])
def test_missing_or_stale_run_is_an_error_not_a_training(book_copy, name):
    path = registry.run_entry(name).path / "history.json"
    d = json.loads(path.read_text())
    d["config"]["lr"] *= 2
    path.write_text(json.dumps(d))
    before = book_state(book_copy)
    with pytest.raises(
        StaleResultError, match=f"python -m attnconv.regenerate --only {name} --force"
    ):
        registry.load_run(name)
    path.unlink()
    with pytest.raises(
        MissingResultError, match=f"python -m attnconv.regenerate --only {name}$"
    ):
        registry.load_run(name)
    with pytest.raises(MissingResultError):
        registry.load_run(name, load_model=True)
    assert set(book_state(book_copy)) == set(before) - {
        path.relative_to(book_copy).as_posix()
    }


def test_a_chapter_executed_on_a_copy_changes_nothing(book_copy, tmp_path):
    """Chapter 14 (it reads the registry) executed from another working directory."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    shutil.copy(
        BOOK / "14_hyperparameters.ipynb", book_copy / "14_hyperparameters.ipynb"
    )
    before = book_state(book_copy)
    nb = nbformat.read(book_copy / "14_hyperparameters.ipynb", as_version=4)
    nbclient.NotebookClient(
        nb, timeout=300, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    printed = "".join(
        o.get("text", "")
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
    )
    assert "cpu profile, saved run quadratic: 40 epochs" in printed
    assert book_state(book_copy) == before
