"""No import cycles in ``src/harvey``, and front ends only at the top; read from the
source rather than from a running process.

Every ``import`` counts, at module level or inside a function (a function-level
import is still a dependency, only a later one), and so does one under
``if TYPE_CHECKING:``: a module that names another's type depends on it, even if
the import never runs. An edge goes to the module named, not to the packages
above it: ``from harvey.cli.errors import fail`` depends on ``harvey.cli.errors``,
and ``from harvey.cli import errors`` on the submodule too.

``cli/`` and ``repl/`` are the front ends: the only packages that know click,
prompt_toolkit or rich's live display, and no library module imports them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

Graph = dict[str, set[str]]


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


#: Import cycles known to remain, each as the sorted modules of its strongly connected
#: component. Empty is the goal: an entry is a debt with a named owner, not a licence.
KNOWN_CYCLES: list[list[str]] = []

#: The front ends, and what only they may import.
FRONT_ENDS = ("harvey.cli", "harvey.repl")
FRONT_END_LIBRARIES = ("click", "prompt_toolkit", "rich.live")
#: Program entries that start the command line; nothing imports them (checked below).
ENTRY_POINTS = {"harvey.__main__", "harvey.demo"}


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, wherever it is (``if TYPE_CHECKING:`` too)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _named(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> set[str]:
    """The dotted names an import statement names: modules, and ``source.name`` for each
    name taken from a module (which may itself be a submodule)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    source = _absolute(node, module, is_package)
    return {source} | {f"{source}.{alias.name}" for alias in node.names}


def _sources(root: Path, package: str) -> Iterator[tuple[str, Path, ast.AST]]:
    for path in sorted((root / package).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        yield module_name(root, path), path, tree


def front_end_leaks(root: Path, package: str = "harvey") -> list[str]:
    """``module → name``, sorted, for each import by a library module of a front end or of
    what only front ends may use, and each import of a program entry."""
    front_ends = tuple(f"{package}.{p.split('.', 1)[1]}" for p in FRONT_ENDS)
    entries = {f"{package}.{e.split('.', 1)[1]}" for e in ENTRY_POINTS}
    leaks = []
    for module, path, tree in _sources(root, package):
        library = not _within(module, front_ends) and module not in entries
        for node in _imports(tree):
            named = _named(node, module, path.name == "__init__.py")
            forbidden = [
                name
                for name in named
                if (library and _within(name, FRONT_END_LIBRARIES + front_ends))
                or (name in entries and name != module)
            ]
            if forbidden:
                leaks.append(f"{module} → {min(forbidden, key=len)}")
    return sorted(leaks)


def import_graph(root: Path, package: str = "harvey") -> Graph:
    """Module → the modules of ``package`` it imports, for every ``.py`` under root/package."""
    paths = sorted((root / package).rglob("*.py"))
    modules = {module_name(root, p) for p in paths}
    graph: Graph = {}
    for path in paths:
        name = module_name(root, path)
        edges: set[str] = set()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                source = _absolute(node, name, path.name == "__init__.py")
                targets = [
                    f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                    for alias in node.names
                ]
            edges.update(t for t in targets if t in modules and t != name)
        graph[name] = edges
    return graph


def cycles(graph: Graph) -> list[list[str]]:
    """Each strongly connected component of more than one module, as one cycle through it.

    Tarjan's algorithm finds the components; a path is then walked inside each
    so the failure can name the imports in order (a → b → a).
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_cycle_in(graph, component) for component in components]


def _cycle_in(graph: Graph, component: set[str]) -> list[str]:
    """A cycle through the component's first module, by breadth-first search back to it."""
    start = min(component)
    paths: dict[str, list[str]] = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(graph[node] & component):
            if nxt == start:
                return [*paths[node], start]
            if nxt not in paths:
                paths[nxt] = [*paths[node], nxt]
                queue.append(nxt)
    raise AssertionError(f"no cycle in strongly connected {component}")  # pragma: no cover


def test_src_has_no_import_cycles() -> None:
    found = [c for c in cycles(import_graph(SRC)) if sorted(set(c)) not in KNOWN_CYCLES]
    assert not found, "import cycles in src/harvey:\n" + "\n".join(" → ".join(c) for c in found)


def test_known_cycles_are_still_there() -> None:
    """An entry of KNOWN_CYCLES that no longer exists is removed, not kept as a licence."""
    found = [sorted(set(c)) for c in cycles(import_graph(SRC))]
    assert [c for c in KNOWN_CYCLES if c not in found] == []


def test_front_ends_only_at_the_top() -> None:
    leaks = front_end_leaks(SRC)
    assert not leaks, "library modules that import a front end:\n" + "\n".join(leaks)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_a_function_level_import_closes_a_cycle_and_is_named(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.b import thing\n",
            "pkg/b.py": "def thing():\n    from pkg import c\n    return c\n",
            "pkg/c.py": "import pkg.a\n",
        },
    )
    assert cycles(import_graph(tmp_path, "pkg")) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]


def test_type_checking_imports_are_edges_and_parent_packages_are_not(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.sub import run\n",
            "pkg/sub/__init__.py": "from .impl import run\n",
            "pkg/sub/impl.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from pkg.other import Thing\n"
                "def run(): ...\n"
            ),
            "pkg/other.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.sub\n",
        },
    )
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.sub"] == {"pkg.sub.impl"}  # the relative import resolved
    assert graph["pkg.sub.impl"] == {"pkg.other"}  # a type-only import is a dependency
    assert graph["pkg"] == {"pkg.sub"}  # not pkg.sub.impl's parents
    assert cycles(graph) == [["pkg.other", "pkg.sub", "pkg.sub.impl", "pkg.other"]]


def test_a_library_module_naming_a_front_end_is_a_leak(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/__main__.py": "from pkg.cli import main\n",  # the entry may
            "pkg/cli/__init__.py": "import click\nfrom rich.live import Live\n",
            "pkg/repl/loop.py": "from prompt_toolkit import prompt\nfrom pkg import store\n",
            "pkg/store.py": (
                "from typing import TYPE_CHECKING\n"
                "import rich.console\n"  # rich itself is fine: only its live display is not
                "if TYPE_CHECKING:\n    from pkg.repl.loop import Repl\n"
                "def f():\n    from rich import live\n    import click.testing\n"
            ),
            "pkg/clients.py": "from pkg import store\n",  # pkg.cli's prefix, not pkg.cli
            "pkg/tool.py": "from prompt_toolkit.shortcuts import prompt\nimport pkg.__main__\n",
        },
    )
    assert front_end_leaks(tmp_path, "pkg") == [
        "pkg.store → click.testing",
        "pkg.store → pkg.repl.loop",
        "pkg.store → rich.live",
        "pkg.tool → pkg.__main__",
        "pkg.tool → prompt_toolkit.shortcuts",
    ]
