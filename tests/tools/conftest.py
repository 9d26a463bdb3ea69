"""Shared fixtures for the tool tests: a real temporary workspace and a context."""

from __future__ import annotations

from pathlib import Path

import pytest

from harvey.tools.registry import ToolContext


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws.resolve()


@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    return ToolContext(workspace=workspace, session_id="sess-1234abcd")
