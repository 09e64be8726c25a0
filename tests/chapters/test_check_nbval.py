"""A failed check fails the notebook under nbval, as CI runs it (pytest --nbval in a
subprocess): a small notebook of checks passes as saved, and fails once one check is planted
to fail, even though its saved outputs are unchanged."""

import os
import subprocess
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]

SETUP = """from attnconv.chapters.shared.checks import Checks

checks = Checks()"""
CHECK = 'checks.below("max error", {measured}, 1e-6, shown_below=1e-9)'
TABLE = 'checks.table("Table 1.1 — Checks.")'


def _notebook(measured: str):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(SETUP),
        nbformat.v4.new_code_cell(CHECK.format(measured=measured)),
        nbformat.v4.new_code_cell(TABLE),
    ]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return nb


def _nbval(path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval"]
        + ["--nbval-current-env", str(path)],
        cwd=path.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_planted_failing_check_fails_nbval(tmp_path):
    nb = _notebook("1e-12")
    NotebookClient(
        nb, timeout=120, resources={"metadata": {"path": str(ROOT)}}
    ).execute()
    assert (
        "| max error | < 1e-9 | < 1e-6 |"
        in nb.cells[2].outputs[0]["data"]["text/markdown"]
    )
    good = tmp_path / "checks.ipynb"
    nbformat.write(nb, good)
    run = _nbval(good)
    assert run.returncode == 0, run.stdout + run.stderr

    nb.cells[1].source = CHECK.format(measured="1e-3")  # planted: above the tolerance
    planted = tmp_path / "planted.ipynb"
    nbformat.write(nb, planted)
    run = _nbval(planted)
    assert run.returncode != 0
    assert "CheckFailed" in run.stdout


def test_a_planted_failing_check_in_chapter_1_fails_nbval(tmp_path):
    """The same on a copy of chapter 1: its float64 check planted with a tolerance of 0, which
    no difference meets (on some CPUs the two float64 results agree exactly, so a tiny positive
    tolerance can pass)."""
    nb = nbformat.read(ROOT / "book" / "01_self_attention.ipynb", as_version=4)
    planted = [c for c in nb.cells if "compare_with_torch(torch.float64)" in c.source]
    assert len(planted) == 1
    cell = planted[0]
    assert "    1e-12,\n    shown_below=1e-14," in cell.source
    cell.source = cell.source.replace(  # the first: the float64 comparison
        "    1e-12,\n    shown_below=1e-14,", "    0.0,", 1
    )
    copy = tmp_path / "01_planted.ipynb"
    nbformat.write(nb, copy)
    run = _nbval(copy)
    assert run.returncode != 0
    assert "CheckFailed" in run.stdout and "float64" in run.stdout
