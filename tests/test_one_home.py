"""Every public name of ``attnconv`` has one home: the module that defines it. No module re-exports
a name defined in another one (in its ``__all__``, by ``import *``, by an import it never uses, or
by an alias ``OLD = NEW``), and every caller in the package and the tests imports a name from its
home.

The one facade is ``attnconv/__init__.py`` (the paper's mathematics under short names, documented
in ``attnconv/README.md``). The subpackages' ``__init__.py`` are documentation only (no names), so
they are held to the same rule as every other module.
"""

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "attnconv"
FACADES = {"attnconv"}
#: Files edited in parallel on another branch that still import a name from the module that uses
#: it rather than from its home; to be moved to the home when that work lands.
PENDING: dict = {}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def resolve(path: Path, node: ast.ImportFrom) -> str:
    """The absolute module a ``from … import`` names."""
    if node.level == 0:
        return node.module or ""
    pkg = module_name(path).split(".")
    if path.name != "__init__.py":
        pkg = pkg[:-1]
    base = pkg[: len(pkg) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def package_imports(path: Path, tree: ast.AST):
    """(node, source module, alias) for every ``from attnconv… import name`` in a file."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = resolve(path, node)
            if source.split(".")[0] == "attnconv":
                for alias in node.names:
                    yield node, source, alias


def dunder_all(tree: ast.Module) -> set:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return set(ast.literal_eval(node.value))
    return set()


def reexports(path: Path, source_text: str) -> list:
    """What a module offers that another module defines."""
    tree = ast.parse(source_text)
    exported = dunder_all(tree)
    loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    imported, found = {}, []
    for _, source, alias in package_imports(path, tree):
        name = alias.asname or alias.name
        if alias.name == "*":
            found.append(f"import * from {source}")
        elif name in exported:
            found.append(f"{name} (from {source}) in __all__")
        elif name not in loaded and not name.startswith("_"):
            found.append(f"{name} (from {source}) imported, never used")
        imported[name] = source
    for node in tree.body:  # OLD = NEW, NEW imported from another module
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            if node.value.id in imported:
                found.append(
                    f"alias of {node.value.id} (from {imported[node.value.id]})"
                )
    return found


def modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if module_name(p) not in FACADES)


@pytest.mark.parametrize("path", modules(), ids=lambda p: module_name(p))
def test_no_module_reexports_a_name(path):
    assert reexports(path, path.read_text()) == []


def home_of(module: str, name: str):
    """Where ``module.name`` is defined: its own module for a class or function; the module
    itself for anything else it assigns."""
    obj = getattr(importlib.import_module(module), name, None)
    home = getattr(obj, "__module__", None) if callable(obj) else None
    return home if home and home.startswith("attnconv") else module


def test_every_caller_imports_from_the_home():
    """A class, function or constant is imported from the module that defines it (the facade
    aside)."""
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")) + sorted((ROOT / "tests").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        tree = ast.parse(path.read_text())
        for node, source, alias in package_imports(path, tree):
            if source in FACADES or alias.name in PENDING.get(rel, ()):
                continue
            mod = importlib.import_module(source)
            if not hasattr(mod, alias.name) or isinstance(
                getattr(mod, alias.name), type(importlib)
            ):
                continue  # a submodule
            text = (PACKAGE.parent / (source.replace(".", "/") + ".py")).read_text()
            defined_here = _assigns(ast.parse(text), alias.name)
            home = home_of(source, alias.name)
            if home != source or not defined_here:
                wrong.append(f"{rel}:{node.lineno} imports {alias.name} from {source}")
    assert wrong == []


def _assigns(tree: ast.Module, name: str) -> bool:
    """Whether a module's top level defines ``name`` (def, class or assignment)."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                return True
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                elts = t.elts if isinstance(t, ast.Tuple) else [t]
                if any(isinstance(e, ast.Name) and e.id == name for e in elts):
                    return True
        elif isinstance(node, (ast.If, ast.Try)):
            if any(
                _assigns(ast.Module(body=[b], type_ignores=[]), name) for b in node.body
            ):
                return True
    return False


def test_the_check_sees_every_kind_of_reexport(tmp_path):
    """The rule catches each way of offering another module's name."""
    fake = (
        PACKAGE / "experiments" / "fake.py"
    )  # only its path is used: nothing is written
    cases = {
        "from .store import HISTORY\n__all__ = ['HISTORY']\n": "in __all__",
        "from .store import *\n": "import *",
        "from .store import HISTORY\n": "never used",
        "from .store import HISTORY\nOLD = HISTORY\nprint(OLD)\n": "alias",
    }
    for text, kind in cases.items():
        (found,) = reexports(fake, text)
        assert kind in found
    assert reexports(fake, "from .store import HISTORY\nprint(HISTORY)\n") == []
