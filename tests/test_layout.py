"""The package's layers: core (the paper's mathematics) <- experiments (CIFAR-10: the training
engine) <- evidence (the frozen protocol and the rule that judges it) <- chapters.shared (the floor
the chapters share) <- chapters (one module per chapter, none importing another).

Every import inside ``attnconv`` (module level or inside a function) is read with ``ast`` and
checked: imports point down the layers, there is no import loop, and no private name
(``_name``) is imported from another module.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "attnconv"
LAYERS = {"core": 0, "experiments": 1, "evidence": 2, "chapters": 3}
FLOOR = "attnconv.chapters.shared"


def module_name(path: Path, root: Path = PACKAGE.parent) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, root: Path = PACKAGE.parent):
    """(imported module, imported names) for every ``from … import`` / ``import`` in a file."""
    pkg = module_name(path, root).split(".")
    if path.name != "__init__.py":
        pkg = pkg[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = pkg[: len(pkg) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            names = [a.name for a in node.names]
            if node.module is None:  # from . import x
                for n in names:
                    yield f"{target}.{n}", []
            else:
                yield target, names
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, []


def graph():
    mods = {module_name(p, PACKAGE.parent): p for p in PACKAGE.rglob("*.py")}
    edges = {}
    for name, path in mods.items():
        edges[name] = [
            (t, n)
            for t, n in imports(path, PACKAGE.parent)
            if t.split(".")[0] == "attnconv"
        ]
    return mods, edges


def layer(module: str):
    """0 core, 1 experiments, 2 evidence, 3 the chapters' shared floor, 4 the chapter modules;
    None for the top."""
    parts = module.split(".")
    if len(parts) <= 2:
        return None
    if module == FLOOR or module.startswith(FLOOR + "."):
        return 3
    return {0: 0, 1: 1, 2: 2, 3: 4}[LAYERS[parts[1]]] if parts[1] in LAYERS else None


def is_chapter_module(module: str) -> bool:
    return layer(module) == 4 and module != "attnconv.chapters"


def test_layers_exist_and_hold_the_modules():
    mods, _ = graph()
    for name in ("core", "experiments", "evidence", "chapters"):
        assert f"attnconv.{name}" in mods
    flat = [m for m in mods if m.count(".") == 1 and m.split(".")[1] not in LAYERS]
    # only the facade and the command-line entry points sit at the top (regenerate: the book's runs
    # and results; gpu_smoke: make gpu-smoke; gpu_window: make gpu-window, which runs regenerate
    # and gpu_smoke as child processes; doctor: is this machine ready for the GPU profiles)
    assert sorted(flat) == [
        "attnconv.bench",
        "attnconv.doctor",
        "attnconv.gpu_smoke",
        "attnconv.gpu_window",
        "attnconv.regenerate",
        "attnconv.train",
    ]


def test_imports_point_down():
    _, edges = graph()
    bad = [
        (src, dst)
        for src, targets in edges.items()
        for dst, _ in targets
        if layer(src) is not None and layer(dst) is not None and layer(dst) > layer(src)
    ]
    assert bad == []


def test_no_private_names_across_modules():
    _, edges = graph()
    bad = [
        (src, dst, n)
        for src, targets in edges.items()
        for dst, names in targets
        for n in names
        if n.startswith("_") and dst != src
    ]
    assert bad == []


def test_no_import_loops():
    mods, edges = graph()
    adj = {
        m: {
            d for d, _ in edges[m] if d in mods and d != m and not m.startswith(d + ".")
        }
        for m in mods
    }
    # a package imports its own submodules (facade); that is not a loop through the package
    for m in mods:
        adj[m] = {
            d
            for d in adj[m]
            if not (mods[m].name == "__init__.py" and d.startswith(m + "."))
        }
    state, stack, loops = {}, [], []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for d in sorted(adj[m]):
            if state.get(d) == 1:
                loops.append(stack[stack.index(d) :] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(mods):
        if m not in state:
            visit(m)
    assert loops == []


@pytest.mark.parametrize(
    "name",
    [
        "conv_to_mhsa",
        "MultiHeadSelfAttention2d",
        "QuadraticEncoding",
        "one_hot_alpha",
        "softmax_without_denormals",
        "relative_shifts",
    ],
)
def test_public_surface(name):
    import attnconv

    assert hasattr(attnconv, name)


def test_chapter_modules_never_import_one_another():
    """The chapter layer is flat: a chapter module imports from the shared floor and the layers
    below, never from another chapter module (the floor never imports a chapter module: see
    test_imports_point_down)."""
    mods, edges = graph()
    chapters = sorted(m for m in mods if is_chapter_module(m))
    assert (
        "attnconv.chapters.hyperparameters" in chapters
        and "attnconv.chapters.shared.tables" not in chapters
    )
    bad = [
        (src, dst)
        for src in chapters
        for dst, _ in edges[src]
        if is_chapter_module(dst) and dst != src
    ]
    assert bad == []


def test_chapter_layer_check_catches_a_cross_import(tmp_path):
    """The flat-layer check itself: a chapter module importing another one (here inside a
    function) is found; an import from the shared floor is not."""
    fake = tmp_path / "attnconv" / "chapters" / "a.py"
    fake.parent.mkdir(parents=True)
    fake.write_text(
        "from .shared.tables import fit_column\n\n\ndef f():\n    from .b import g\n"
    )
    targets = [t for t, _ in imports(fake, tmp_path)]
    assert targets == ["attnconv.chapters.shared.tables", "attnconv.chapters.b"]
    assert [t for t in targets if is_chapter_module(t)] == ["attnconv.chapters.b"]


def test_module_map_lists_every_module():
    """attnconv/README.md's table names every module of the three layers, and no module that is gone."""
    import re

    listed = set(
        re.findall(r"^\| `([a-z0-9_.]+)` \|", (PACKAGE / "README.md").read_text(), re.M)
    )
    all_mods = graph()[0]
    mods = {
        m.split(".", 1)[1]
        for m, path in all_mods.items()
        if layer(m) is not None and path.name != "__init__.py"
    }
    assert mods - listed == set(), "modules missing from attnconv/README.md"
    assert listed - mods == set(), "attnconv/README.md lists modules that do not exist"


def resolves(dotted: str) -> bool:
    """Whether ``attnconv.a.b.name`` names a module of the package or a name defined in one."""
    import importlib

    parts = dotted.split(".")
    n = len(parts)  # the longest prefix that is a module, then attributes
    while n > 1:
        path = PACKAGE.parent / "/".join(parts[:n])
        if path.with_suffix(".py").is_file() or (path / "__init__.py").is_file():
            break
        n -= 1
    obj = importlib.import_module(".".join(parts[:n]))
    for attr in parts[n:]:
        if not hasattr(obj, attr):
            return False
        obj = getattr(obj, attr)
    return True


def test_the_top_readme_points_to_the_module_map():
    """The top-level README lists no modules of its own (they went stale): it points to the
    checked map in attnconv/README.md."""
    assert "(attnconv/README.md)" in (PACKAGE.parent / "README.md").read_text()


def test_every_package_path_the_book_names_resolves():
    """Every ``attnconv.…`` path named in the READMEs and the book's pages and notebooks is a
    module or a name of the package (a moved name leaves no stale path behind)."""
    import re

    root = PACKAGE.parent
    files = [root / "README.md", PACKAGE / "README.md"]
    files += sorted((root / "book").glob("*.md")) + sorted(
        (root / "book").glob("*.ipynb")
    )
    stale = sorted(
        f"{path.name}: {dotted}"
        for path in files
        for dotted in set(re.findall(r"attnconv(?:\.[A-Za-z0-9_]+)+", path.read_text()))
        if not resolves(dotted)
    )
    assert stale == []


def test_repository_paths_come_from_the_store():
    """Only attnconv.experiments.store finds the repository from ``__file__`` (the book's folders
    then follow ``$ATTNCONV_BOOK_DIR``); data.py finds the sample bundled inside the package."""
    allowed = {"experiments/store.py", "experiments/data.py"}
    using = {
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if "__file__" in p.read_text() and "evidence" not in p.parts
    }
    assert using <= allowed, using - allowed


def test_import_attnconv_does_not_load_the_book_layer():
    import subprocess
    import sys

    code = (
        "import sys, attnconv; loaded = sorted(m for m in sys.modules if m.startswith('attnconv.chapters'));"
        "print(loaded); assert not loaded and callable(attnconv.plot_attention_heads)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent
    )
    assert out.returncode == 0, out.stdout + out.stderr
