"""A tool reads a workspace file one way: ``ToolContext.source`` (``workspace.source``),
which decides the path, the secret-file and hard-link rules and the file's kind once.
No tool module opens a file itself or reaches for the lower-level readers."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "src" / "harvey" / "tools"
#: The readers below ``Source``: a tool that imports one has found another way in.
LOWER_READERS = {"open_regular", "readable_path", "open_for_model", "check_readable"}
#: Modules that read files which are not the workspace's for the model, and why.
OTHER_FILES = {
    "registry.py": "ToolContext.source itself: open_for_model",
    "approval.py": "shows the person the file's current text beside a write (never the model)",
    "plan.py": "Harvey's own plan file, through ownfiles",
    "offload.py": "Harvey's own offloaded tool results, through ownfiles",
}


def _reads(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("harvey"):
            found += [f"imports {a.name}" for a in node.names if a.name in LOWER_READERS]
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open":
            found.append(f"open() at line {node.lineno}")
        if isinstance(func, ast.Attribute) and func.attr == "at":  # Source.at: a path vouched for
            found.append(f"Source.at() at line {node.lineno}")
        of_source = isinstance(func, ast.Attribute) and getattr(func.value, "id", "") == "source"
        if isinstance(func, ast.Attribute) and func.attr in ("read_bytes", "read_text", "open"):
            found += [] if of_source else [f".{func.attr}() at line {node.lineno}"]
    return found


@pytest.mark.parametrize("module", sorted(p.name for p in TOOLS.glob("*.py")))
def test_a_tool_reads_the_workspace_only_through_its_context(module: str) -> None:
    reads = _reads(ast.parse((TOOLS / module).read_text()))
    if module in OTHER_FILES:
        assert reads, f"{module} no longer reads other files: drop it from OTHER_FILES"
        return
    assert not reads, f"{module} reads files around ToolContext.source: {reads}"


def test_the_check_sees_a_way_around() -> None:
    sneaky = "from harvey.workspace.files import open_regular\nopen('x')\np.read_text()\n"
    assert len(_reads(ast.parse(sneaky + "Source.at(p)\n"))) == 4
