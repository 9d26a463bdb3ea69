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

The packages stand on one ladder (``LAYERS``, drawn in ``docs/ARCHITECTURE.md``): a
module imports only from its own rung or a lower one, type-only imports included, and
no two packages import each other, even on one rung.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

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

#: The ladder, from the ground up: each rung's packages (a top-level module is its own
#: name) import only from their rung or below. The vocabulary the others meet at; what of
#: the workspace the model may read and Harvey's own files; settings, documents, the
#: store layer; tokens and the confinement of commands; the model backends and the
#: session record; then the features, each standing on the one before; the front ends;
#: the package's public face and the program entries.
LAYERS: list[tuple[str, ...]] = [
    (
        "errors",
        "messages",
        "protocols",
        "redact",
        "terminal_text",
        "llama_native",
        "inputs",
        "ui",
        "version",
    ),
    ("workspace", "ownfiles", "retrieval"),
    ("config", "documents", "store", "chunks"),
    ("context", "confine"),
    ("llm", "session", "mcp"),
    ("analysis",),
    ("knowledge",),
    ("memory",),
    ("tools",),
    ("chat",),
    ("repl",),
    ("cli",),
    ("harvey", "__main__", "demo"),
]


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


# -- the ladder -------------------------------------------------------------------------

RUNG = {part: i for i, rung in enumerate(LAYERS) for part in rung}


def part_of(module: str) -> str:
    """The package (or top-level module) a module belongs to: ``harvey.chat.agent`` →
    ``chat``; the package root ``harvey`` is its own part."""
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 else pieces[0]


def climbing(graph: Graph, part: str) -> list[str]:
    """``module → module`` for each import of ``part``'s modules that reaches a higher rung."""
    return sorted(
        f"{module} → {target}"
        for module, targets in graph.items()
        if part_of(module) == part
        for target in targets
        if RUNG[part_of(target)] > RUNG[part]
    )


def part_graph(graph: Graph) -> Graph:
    parts: Graph = {}
    for module, targets in graph.items():
        mine = parts.setdefault(part_of(module), set())
        mine.update(part_of(t) for t in targets if part_of(t) != part_of(module))
    return parts


@functools.cache
def src_graph() -> Graph:
    """src/harvey's graph, read once for the ladder's cases."""
    return import_graph(SRC)


def _parts() -> list[str]:
    return sorted({part_of(m) for m in src_graph()})


def test_every_package_stands_on_a_rung() -> None:
    unplaced = [p for p in _parts() if p not in RUNG]
    assert not unplaced, f"packages or modules not on the ladder (LAYERS): {unplaced}"
    gone = [p for p in RUNG if p not in _parts()]
    assert not gone, f"LAYERS names what src/harvey no longer has: {gone}"


@pytest.mark.parametrize("part", sorted(RUNG, key=lambda p: (RUNG[p], p)))
def test_nothing_imports_up_the_ladder(part: str) -> None:
    found = climbing(src_graph(), part)
    assert not found, f"{part} (rung {RUNG[part]}) imports from above it:\n" + "\n".join(found)


def test_no_two_packages_import_each_other() -> None:
    found = cycles(part_graph(src_graph()))
    assert not found, "package cycles:\n" + "\n".join(" → ".join(c) for c in found)


def test_a_type_only_import_up_the_ladder_is_found(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "harvey/__init__.py": "",
            "harvey/session/__init__.py": "",
            "harvey/session/recorder.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from harvey.analysis.answer import Answer\n"
            ),
            "harvey/analysis/__init__.py": "",
            "harvey/analysis/answer.py": "from harvey.session import recorder\n",
        },
    )
    graph = import_graph(tmp_path)
    assert climbing(graph, "session") == ["harvey.session.recorder → harvey.analysis.answer"]
    assert climbing(graph, "analysis") == []
    assert cycles(part_graph(graph)) == [["analysis", "session", "analysis"]]
