"""HARVEY.md and AGENTS.md come from a workspace that may be hostile: bounded, regular, inside;
the root's in the system prompt, a subfolder's with the first read under it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harvey.chat.prompts import (
    HARVEY_MD_LIMIT,
    NESTED_GUIDE_BUDGET,
    ROOT_GUIDE_BUDGET,
    GuideHook,
    build_system_prompt,
    root_guidance,
)
from harvey.llm.scripted import Reply
from harvey.messages import ToolCall, ToolResult
from harvey.tools.registry import ToolContext
from tests.fakes.servers import FakeOpenAI
from tests.harvey_process import invoke_harvey


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


def test_both_root_guides_harvey_md_first(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("Run the tests with make test.\n")
    (tmp_path / "HARVEY.md").write_text("Answer in French.\n")
    prompt = build_system_prompt(tmp_path, tools=True)
    harvey = prompt.index("Project instructions from HARVEY.md:\nAnswer in French.")
    agents = prompt.index("Project instructions from AGENTS.md:\nRun the tests with make test.")
    assert harvey < agents


def test_agents_md_alone_is_read(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("Use tabs.\n")
    assert "Project instructions from AGENTS.md:\nUse tabs." in build_system_prompt(
        tmp_path, tools=False
    )


def test_a_cut_guide_says_what_was_left_out(tmp_path: Path) -> None:
    lines = "".join(f"rule {i}: keep it short\n" for i in range(2000))  # ~44 KB
    (tmp_path / "HARVEY.md").write_text(lines)
    (tmp_path / "AGENTS.md").write_text("Agents rule.\n")
    text = root_guidance(tmp_path)
    size = len(lines.encode())
    harvey, agents = text.split("Project instructions from AGENTS.md:\n")
    shown = int(harvey.rsplit("offset=", 1)[1].split(" ")[0])
    assert shown <= ROOT_GUIDE_BUDGET and harvey.count("rule ") < 2000
    assert f"[HARVEY.md goes on: {size - shown:,} more bytes were left out" in harvey
    assert harvey.rstrip().endswith("for the rest]") and "keep it short\n[HARVEY.md" in harvey
    # what is left of the budget is too little for AGENTS.md: it says so instead of vanishing
    rest = int(agents.rsplit("offset=", 1)[1].split(" ")[0])
    assert shown + rest <= ROOT_GUIDE_BUDGET
    assert f"[AGENTS.md goes on: {13 - rest} more bytes were left out" in agents


def test_guides_are_sanitised_and_redacted(tmp_path: Path) -> None:
    token = "ghp_" + "a1B2" * 9
    (tmp_path / "AGENTS.md").write_text(f"Be nice.\u202e evil \x1b[2J {token}\n")
    text = root_guidance(tmp_path)
    assert "\u202e" not in text and "\x1b" not in text and "<U+202E>" in text
    assert token not in text and "[REDACTED" in text


def test_a_guide_that_links_to_a_secret_or_is_hard_linked_is_left_out(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / ".env").write_text("TOKEN=hunter2\n")
    (ws / "AGENTS.md").symlink_to(ws / ".env")
    (tmp_path / "outside.txt").write_text("outside words\n")
    os.link(tmp_path / "outside.txt", ws / "sub" / "AGENTS.md")
    (ws / "sub" / "a.txt").write_text("a\n")
    assert root_guidance(ws) == ""
    hook = GuideHook(ws)
    call = ToolCall("c1", "read_file", {"path": "sub/a.txt"})
    result = ToolResult("c1", "read_file", "a\n")
    assert hook.after_execute(ToolContext(ws), call, result) == result


def _read(hook: GuideHook, ws: Path, path: str) -> str:
    call = ToolCall("c", "read_file", {"path": path})
    return hook.after_execute(ToolContext(ws), call, ToolResult("c", "read_file", "body")).content


def test_nested_guides_come_once_per_folder_within_their_budget(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("root rule\n")
    (tmp_path / "lib" / "core").mkdir(parents=True)
    (tmp_path / "lib" / "AGENTS.md").write_text("lib rule\n")
    (tmp_path / "lib" / "core" / "HARVEY.md").write_text("core rule\n" * 2000)
    for name in ("a.py", "b.py", "core/c.py"):
        (tmp_path / "lib" / name).write_text("x\n")
    hook = GuideHook(tmp_path)
    first = _read(hook, tmp_path, "lib/a.py")
    assert first.startswith("body\n\n[Instructions from lib/AGENTS.md, for the files under lib/]")
    assert "lib rule" in first and "root rule" not in first  # the root's is in the prompt
    assert _read(hook, tmp_path, "lib/b.py") == "body"  # once per session
    deep = _read(hook, tmp_path, "lib/core/c.py")
    assert "lib rule" not in deep and "core rule" in deep
    assert len(deep.encode()) < NESTED_GUIDE_BUDGET + 400
    assert "[lib/core/HARVEY.md goes on: " in deep
    failed = hook.after_execute(
        ToolContext(tmp_path),
        ToolCall("e", "read_file", {"path": "lib/zz.py"}),
        ToolResult("e", "read_file", "error: lib/zz.py does not exist"),
    )
    assert failed.content == "error: lib/zz.py does not exist"


def test_agents_md_reaches_the_model_through_harvey_run(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "docs").mkdir(parents=True)
    (ws / "AGENTS.md").write_text("Always cite the file.\n")
    (ws / "docs" / "AGENTS.md").write_text("Docs are in British English.\n")
    (ws / "docs" / "a.md").write_text("colour\n")
    (ws / "docs" / "b.md").write_text("flavour\n")
    script = [
        Reply(
            tool_calls=[("read_file", {"path": "docs/a.md"}), ("read_file", {"path": "docs/b.md"})]
        ),
        Reply("Both are British."),
    ]
    with FakeOpenAI(script) as srv:
        proc = invoke_harvey(
            "run", "check docs", "--backend", "openai", "--base-url", srv.url, cwd=ws
        )
        messages = srv.chat_requests[1]["messages"]
    assert proc.returncode == 0, proc.stderr
    assert "Always cite the file." in messages[0]["content"]
    tools = [m["content"] for m in messages if m["role"] == "tool"]
    assert "Docs are in British English." in tools[0] and "British" not in tools[1]
