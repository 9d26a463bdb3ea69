"""The REPL on a small model, through a pseudo-terminal (issue 39): the banner says what the
model does well and what needs a server model; an edit's reply is the approved diff."""

from __future__ import annotations

from pathlib import Path

import pexpect
import pytest

from harvey.llm.scripted import Reply
from tests.fakes.servers import FakeOpenAI

from .conftest import PROMPT, Spawn, send_line

QUESTION = r"write it\? \[y\]es / \[N\]o / \[a\]ll this session / \[q\]uit the turn:"
PARAPHRASE = "Done, I changed a lot of things in the file."


def said(text: str) -> str:
    """``text`` as a pattern that allows the terminal's line wrapping between its words."""
    import re

    return r"(?:\s|\x1b\[[0-9;]*m)+".join(re.escape(w) for w in text.split())


def test_the_banner_says_what_a_small_model_does_well(spawn: Spawn) -> None:
    with FakeOpenAI([]) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url, "--model", "qwen2.5:0.5b")
        child.expect(said("qwen2.5:0.5b is a model under 1B parameters: good for cited answers"))
        child.expect(said("folder listings"))
        child.expect(said("Free-form work needs a server model: ollama pull"))
        child.expect(said("--backend openai"))
        child.expect(PROMPT)
        send_line(child, "/exit")
        child.expect(pexpect.EOF)


def test_the_banner_of_a_larger_model_says_nothing_of_the_kind(spawn: Spawn) -> None:
    with FakeOpenAI([]) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url, "--model", "llama3:8b")
        child.expect(PROMPT)
        assert "Free-form work" not in (child.before or "")
        send_line(child, "/exit")
        child.expect(pexpect.EOF)


def test_a_small_models_edit_is_answered_by_the_approved_diff(
    spawn: Spawn, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("milk\nbread\n")
    args = {"path": "notes.txt", "old_string": "bread\n", "new_string": "bread\neggs\n"}
    script = [Reply(tool_calls=[("edit_file", args)]), Reply(PARAPHRASE)]
    with FakeOpenAI(script) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url, "--model", "qwen2.5:0.5b")
        child.expect(PROMPT)
        send_line(child, 'Add "eggs" as a new item at the end of notes.txt')
        child.expect(QUESTION)
        send_line(child, "y")
        child.expect(r"edited notes\.txt")
        child.expect(r"\+eggs")
        child.expect(PROMPT)
        assert PARAPHRASE not in (child.before or "")
        send_line(child, "/exit")
        child.expect(pexpect.EOF)
        assert len(srv.chat_requests) == 1, "no model call after the edit"
    assert (workspace / "notes.txt").read_text() == "milk\nbread\neggs\n"


@pytest.mark.slow
def test_the_embedded_models_banner_says_it_is_the_135m_one(spawn: Spawn) -> None:
    child = spawn("--backend", "local")
    child.expect(said("SmolLM2-135M-Instruct is the embedded 135M model"), timeout=120)
    child.expect(said("ollama pull"))
    child.expect(PROMPT, timeout=120)
    send_line(child, "/exit")
    child.expect(pexpect.EOF, timeout=60)


def test_harveys_reply_is_shown_line_by_line_not_as_markdown(spawn: Spawn, workspace: Path) -> None:
    (workspace / "src").mkdir()
    for name in ("dates.py", "money.py"):
        (workspace / "src" / name).write_text("x = 1\n")
    script = [Reply(tool_calls=[("list_files", {"path": "src"})]), Reply(PARAPHRASE)]
    with FakeOpenAI(script) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url, "--model", "qwen2.5:0.5b")
        child.expect(PROMPT)
        send_line(child, "List the files in the src folder.")
        child.expect(r"src/\s*\r\n\s*dates\.py\s*\r\n\s*money\.py")  # not "src/ dates.py money.py"
        child.expect(PROMPT)
        send_line(child, "/exit")
        child.expect(pexpect.EOF)
