"""A tool that prints 200,000 characters: offloaded, paged back, cleaned up."""

from __future__ import annotations

import re
from pathlib import Path

from harvey.chat.runtime import delete_session
from harvey.config.settings import SecuritySettings, Settings
from harvey.llm.scripted import Reply

from .conftest import AgentFactory


def test_big_tool_output_is_offloaded_paged_back_and_deleted(
    make_agent: AgentFactory, workspace: Path
) -> None:
    lines = [f"line {i:06d} " + "abcdefghij" * 3 for i in range(5000)]
    big = "\n".join(lines) + "\n"
    assert len(big) > 200_000
    (workspace / "big.log").write_text(big)
    settings = Settings(security=SecuritySettings(allowed_commands=["cat"]))
    agent = make_agent(
        [Reply(tool_calls=[("run_shell", {"command": "cat big.log"})]), "It is long."],
        settings=settings,
    )
    outcome = agent.turn("show me big.log")
    reference = outcome.tool_results[0].content
    assert len(reference) < 5000
    assert "line 000000" in reference  # the preview
    match = re.search(r"(\.harvey/tool_results/[^\s`'\"]+\.txt)", reference)
    assert match, reference
    rel = match.group(1)
    assert "read_file" in reference

    # the model pages the full output back with read_file, byte for byte
    pages: list[str] = []
    offset = 0
    ctx = agent.tool_context()
    from harvey.messages import ToolCall

    while True:
        result = agent.executor.execute(
            ctx, ToolCall("p", "read_file", {"path": rel, "offset": offset, "limit": 8000})
        )
        text = result.content
        m = re.search(
            r"\n\n\[showing bytes \d+-(\d+) of \d+; to continue reading use offset=(\d+)\.\]$", text
        )
        if m is None:
            pages.append(text)
            break
        pages.append(text[: m.start()])
        offset = int(m.group(2))
    assert "".join(pages) == big

    # the session file notes the call as ok, never its output
    agent.recorder.close()
    spmd = agent.recorder.path.read_text()
    assert '[[tool: run_shell({"command":"cat big.log"}) — ok]]' in spmd
    assert "line 004999" not in spmd

    folder = workspace / ".harvey" / "tool_results" / agent.session_id
    assert folder.is_dir()
    assert delete_session(agent.store, agent.session_id, workspace)
    assert not folder.exists()
    assert agent.store.get_session(agent.session_id) is None
