"""The import graph of ``src/agent_benchmarks`` has the shape the project's layout draws.

Every module is parsed with :mod:`ast` (nothing is imported) and each ``import`` and
``from ... import`` of ``agent_benchmarks``, anywhere in it (inside functions too: an import
made late is a dependency all the same), is an arrow to the module it names. Then:

- no circle: no module reaches itself through its imports;
- no arrow up: the layers, from the top, are the commands (imported by nothing else), the
  reports, the suites, the runner, the backends, scoring and isolation, with the modules
  every layer shares (records, storage, the run spec, datasets, ...) beneath them; a module
  imports only from its own layer or a lower one;
- each suite stands alone: no module of one suite's package imports another suite's.

Imports by name at run time (``importlib``, the entry points that register suites) are not
arrows here, as they are not in the drawing of the layout.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from tests.layout import LAYERS as LAYOUT_LAYERS
from tests.layout import ROOT, SRC

# The layers, from the top down, are stated once, in tests/layout.py, which also draws
# docs/layout.md from them.
LAYERS: list[tuple[str, frozenset[str]]] = [(title, names) for title, names, _ in LAYOUT_LAYERS]
SUITES = dict(LAYERS)["suites"]


def modules(src: Path, root: str) -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name)."""
    found = {}
    for path in sorted((src / root).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imported(node: ast.AST, module: str, is_package: bool) -> Iterable[str]:
    """The dotted names an import statement names: ``from a import b`` names ``a.b`` (a
    module, if there is one) and ``a``."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            package = package[: len(package) - (node.level - 1)]
            base = ".".join(package + ([node.module] if node.module else []))
        for alias in node.names:
            yield f"{base}.{alias.name}"
        yield base


def import_graph(src: Path, root: str) -> dict[str, set[str]]:
    """Each module of the package and the modules of the package it imports."""
    found = modules(src, root)
    graph: dict[str, set[str]] = {name: set() for name in found}
    for name, path in found.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            targets = list(_imported(node, name, is_package))
            if isinstance(node, ast.ImportFrom):
                # ``from a import b``: the module a.b when b is one, else the module a.
                modules_named = [t for t in targets[:-1] if t in found] or targets[-1:]
            else:
                modules_named = targets
            for target in modules_named:
                # ``import a.b.c`` where c is a name in a.b: the longest module prefix.
                while target and target not in found:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def find_cycle(graph: Mapping[str, set[str]]) -> list[str] | None:
    """A circle of imports, as the modules along it (the first again at the end)."""
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def top_name(module: str) -> str:
    """The name directly under the package root (``__init__`` for the root itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_rank(layers: list[tuple[str, frozenset[str]]]) -> dict[str, int]:
    """Each top name's height: the top layer highest."""
    return {name: len(layers) - i for i, (_, names) in enumerate(layers) for name in names}


def upward_arrows(graph: Mapping[str, set[str]], layers) -> list[str]:
    rank = layer_rank(layers)
    layer_of = {name: layer for layer, names in layers for name in names}
    return sorted(
        f"{source} ({layer_of[top_name(source)]}) imports {target} ({layer_of[top_name(target)]})"
        for source, targets in graph.items()
        for target in targets
        if rank[top_name(target)] > rank[top_name(source)]
    )


def cross_suite_arrows(graph: Mapping[str, set[str]], suites: frozenset[str]) -> list[str]:
    return sorted(
        f"{source} imports {target}"
        for source, targets in graph.items()
        for target in targets
        if top_name(source) in suites
        and top_name(target) in suites
        and top_name(source) != top_name(target)
    )


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(SRC, ROOT)


def test_the_graph_is_read(graph):
    # Arrows known to be there: if the reading broke, these would go first.
    assert "agent_benchmarks.records.schema" in graph["agent_benchmarks.scoring.scorecard"]
    assert "agent_benchmarks.gaia.official_scorer" in graph["agent_benchmarks.gaia.grade"]
    assert "agent_benchmarks.runner.session" in graph["agent_benchmarks.localweb.session"]
    assert sum(len(targets) for targets in graph.values()) > 300


def test_every_package_and_root_module_has_a_layer(graph):
    placed = layer_rank(LAYERS)
    assert sorted({top_name(m) for m in graph} - set(placed)) == []
    assert sorted(set(placed) - {top_name(m) for m in graph}) == []


def test_no_import_circle(graph):
    cycle = find_cycle(graph)
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_no_import_from_a_lower_layer_to_a_higher_one(graph):
    assert upward_arrows(graph, LAYERS) == []


def test_the_commands_are_imported_by_nothing_else(graph):
    commands = dict(LAYERS)["commands"]
    assert [
        f"{source} imports {target}"
        for source, targets in graph.items()
        for target in targets
        if top_name(target) in commands and top_name(source) not in commands
    ] == []


def test_no_suite_imports_another(graph):
    assert cross_suite_arrows(graph, SUITES) == []


def test_the_checks_find_what_they_look_for(tmp_path: Path):
    """On a small package made to break each rule: the circle, the arrow up, the suite
    that imports another, each found and named."""
    package = tmp_path / "pkg"
    files = {
        "__init__.py": "",
        "low.py": "from pkg import high\n",  # up, and a circle with high
        "high.py": "import pkg.low\n",
        "one/__init__.py": "",
        "one/grade.py": "def f():\n    from ..two import grade\n",  # late, relative
        "two/__init__.py": "",
        "two/grade.py": "from pkg.low import something\n",
    }
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text, encoding="utf-8")
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.one.grade"] == {"pkg.two.grade"}
    assert find_cycle(graph) == ["pkg.high", "pkg.low", "pkg.high"]
    layers = [
        ("top", frozenset({"high"})),
        ("suites", frozenset({"one", "two"})),
        ("bottom", frozenset({"low", "__init__"})),
    ]
    assert upward_arrows(graph, layers) == ["pkg.low (bottom) imports pkg.high (top)"]
    assert cross_suite_arrows(graph, frozenset({"one", "two"})) == [
        "pkg.one.grade imports pkg.two.grade"
    ]
