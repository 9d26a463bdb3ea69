"""The test tree keeps mirroring the package (the rule is in ``tests/README.md``)."""

from __future__ import annotations

from pathlib import Path

import harvey

TESTS = Path(__file__).parent
PACKAGE = Path(harvey.__file__).parent

#: Folders that are not named after a part of the package, and why.
NOT_A_MODULE = {
    "security": "attacks through the real `harvey run`, grouped by threat",
    "fakes": "the loopback model servers, not tests",
    "repl": "the REPL front end (terminal.py and slash.py, the harvey/repl/ package)",
}


def _folders() -> list[Path]:
    return sorted(p for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def test_every_test_folder_is_a_part_of_the_package_or_a_documented_exception() -> None:
    parts = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    parts |= {p.stem for p in PACKAGE.glob("*.py")}
    stray = [f.name for f in _folders() if f.name not in parts and f.name not in NOT_A_MODULE]
    assert not stray, f"test folders that mirror no module (see tests/README.md): {stray}"


def test_every_test_folder_is_a_package() -> None:
    """Without ``__init__.py`` two ``test_x.py`` in different folders would collide."""
    missing = [f.name for f in _folders() if not (f / "__init__.py").exists()]
    assert not missing, f"test folders without __init__.py: {missing}"


#: tests/security/'s module prefixes → the boundary of docs/SECURITY.md each attacks.
SECURITY_BOUNDARIES = {
    "test_tools_": "model → tools",
    "test_commands_": "model → commands",
    "test_repository_": "repository → Harvey",
    "test_context_": "anything → model context",
    "test_terminal": "anything → terminal",
    "test_memory": "anything → memory",
    "test_network_": "Harvey → network",
    "test_server_": "model server → Harvey",
    "test_mcp_": "MCP server → Harvey and the model",
    "test_harness": "the attacker's harness itself",
}


def test_security_modules_are_named_after_a_boundary_that_security_md_lists() -> None:
    """Each attack module sits under one trust boundary, and SECURITY.md names it there."""
    table = (TESTS.parent / "docs" / "SECURITY.md").read_text(encoding="utf-8")
    modules = sorted(p.name for p in (TESTS / "security").glob("test_*.py"))
    stray = [m for m in modules if not m.startswith(tuple(SECURITY_BOUNDARIES))]
    assert not stray, f"tests/security modules named after no boundary: {stray}"
    unlisted = [m for m in modules if m != "test_harness.py" and f"`{m}`" not in table]
    assert not unlisted, f"tests/security modules docs/SECURITY.md does not name: {unlisted}"
    for prefix, boundary in SECURITY_BOUNDARIES.items():
        if prefix != "test_harness":
            assert f"| {boundary} |" in table, f"docs/SECURITY.md has no row for {boundary}"
