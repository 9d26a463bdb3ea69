"""safe_path is the one gate to the disk: check it against every escape we know."""

from __future__ import annotations

import os
import posixpath
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvey.errors import HarveyError, WorkspaceError
from harvey.messages import ToolCall
from harvey.tools.files import ReadFileTool
from harvey.tools.registry import ToolContext, ToolRegistry
from harvey.workspace.paths import safe_path


def test_relative_path_resolves_inside(workspace: Path) -> None:
    assert safe_path(workspace, "a/b.txt") == workspace / "a" / "b.txt"
    assert safe_path(workspace, ".") == workspace
    assert safe_path(workspace, "a/../b") == workspace / "b"


def test_absolute_path_inside_is_accepted(workspace: Path) -> None:
    assert safe_path(workspace, str(workspace / "x")) == workspace / "x"


@pytest.mark.parametrize("bad", ["..", "../x", "a/../../x", "/etc/passwd", "/", "~/x"])
def test_escapes_are_rejected(workspace: Path, bad: str) -> None:
    with pytest.raises(WorkspaceError):
        safe_path(workspace, bad)


def test_error_is_a_harvey_error(workspace: Path) -> None:
    with pytest.raises(HarveyError, match="outside the workspace"):
        safe_path(workspace, "../x")


def test_nul_byte_is_rejected(workspace: Path) -> None:
    with pytest.raises(WorkspaceError, match="NUL"):
        safe_path(workspace, "a\x00b")


def test_sibling_with_common_prefix_is_outside(workspace: Path) -> None:
    evil = workspace.parent / (workspace.name + "-evil")
    evil.mkdir()
    with pytest.raises(WorkspaceError):
        safe_path(workspace, str(evil / "secret"))
    with pytest.raises(WorkspaceError):
        safe_path(workspace, f"../{workspace.name}-evil/secret")


def test_symlink_pointing_outside_is_rejected(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("s")
    (workspace / "link").symlink_to(outside)
    (workspace / "filelink").symlink_to(outside / "secret")
    (workspace / "dangling").symlink_to(outside / "missing")
    for name in ("link", "link/secret", "filelink", "dangling"):
        with pytest.raises(WorkspaceError):
            safe_path(workspace, name)


def test_symlink_inside_is_followed(workspace: Path) -> None:
    (workspace / "real").mkdir()
    (workspace / "alias").symlink_to(workspace / "real")
    assert safe_path(workspace, "alias/f") == workspace / "real" / "f"


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="3.13 leaves a loop unresolved")
def test_symlink_loop_is_a_workspace_error(workspace: Path) -> None:
    """Before 3.13 ``Path.resolve`` raises ``RuntimeError`` on a loop; safe_path translates it."""
    (workspace / "loop").symlink_to(workspace / "loop")
    with pytest.raises(WorkspaceError, match=r"cannot resolve path 'loop/x': .*loop"):
        safe_path(workspace, "loop/x")


@pytest.mark.skipif(sys.version_info < (3, 13), reason="before 3.13 a loop raises")
def test_symlink_loop_stays_unresolved_inside(workspace: Path) -> None:
    """From 3.13 ``Path.resolve(strict=False)`` returns a loop as written: still inside."""
    (workspace / "loop").symlink_to(workspace / "loop")
    assert safe_path(workspace, "loop/x") == workspace / "loop" / "x"


def test_reading_through_a_symlink_loop_is_one_error_line(workspace: Path) -> None:
    """Whichever way safe_path goes, the tool that opens the path says one ``error:`` line."""
    (workspace / "loop").symlink_to(workspace / "loop")
    registry = ToolRegistry([ReadFileTool()])
    ctx = ToolContext(workspace=workspace, session_id="s")
    for path in ("loop", "loop/x"):
        result = registry.execute(ctx, ToolCall("1", "read_file", {"path": path}))
        assert result.content.startswith("error:"), result.content
        assert "\n" not in result.content.strip()
        assert "Traceback" not in result.content


def test_workspace_given_through_a_symlink(tmp_path: Path, workspace: Path) -> None:
    alias = tmp_path / "alias-ws"
    alias.symlink_to(workspace)
    assert safe_path(alias, "f") == workspace / "f"
    with pytest.raises(WorkspaceError):
        safe_path(alias, "../x")


segment = st.sampled_from(["..", ".", "a", "b", "ws", "ws-evil", "", "c d", "é"])


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(segment, min_size=1, max_size=6), absolute=st.booleans())
def test_result_is_always_inside_or_raises(parts: list[str], absolute: bool) -> None:
    """Property: safe_path never returns a path outside, and accepts exactly what stays in."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve() / "ws"
        root.mkdir()
        (root.parent / "ws-evil").mkdir()
        raw = "/".join(parts)
        if absolute:
            raw = str(root.parent) + "/" + raw
        joined = raw if absolute else os.path.join(str(root), raw)
        expected_inside = posixpath.normpath(joined)
        inside = expected_inside == str(root) or expected_inside.startswith(str(root) + "/")
        try:
            result = safe_path(root, raw)
        except WorkspaceError:
            assert not inside
        else:
            assert inside
            assert result == root or result.is_relative_to(root)
