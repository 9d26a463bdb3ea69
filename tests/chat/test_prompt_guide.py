"""HARVEY.md comes from a workspace that may be hostile: bounded, regular, inside."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harvey.chat.prompts import HARVEY_MD_LIMIT, build_system_prompt


def test_guide_is_included_up_to_its_limit(tmp_path: Path) -> None:
    (tmp_path / "HARVEY.md").write_text("Be brief.\n" + "x" * (HARVEY_MD_LIMIT * 4))
    prompt = build_system_prompt(tmp_path, tools=True)
    assert "Project instructions from HARVEY.md:\nBe brief." in prompt
    assert prompt.count("x") <= HARVEY_MD_LIMIT


def test_a_guide_linked_to_a_file_outside_is_not_read(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "credentials").write_text("aws_secret_access_key = SECRET123\n")
    (ws / "HARVEY.md").symlink_to(tmp_path / "credentials")
    assert "SECRET123" not in build_system_prompt(ws, tools=True)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_guide_that_is_a_fifo_is_skipped_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "HARVEY.md")
    assert "Project instructions" not in build_system_prompt(tmp_path, tools=True)
