"""The done-when scenario in the real REPL: a store over a folder of notes, a question
whose answer sits in one note, the passage in the prompt, the notes in the .spmd."""

from __future__ import annotations

from pathlib import Path

import pexpect
import pytest

from harvey.llm.scripted import Reply
from tests.fakes.openai import FakeOpenAI
from tests.harvey_process import invoke_harvey
from tests.knowledge.conftest import NOTES
from tests.repl.conftest import PROMPT, Spawn, send_line, spawn, workspace

__all__ = ["spawn", "workspace"]  # the REPL fixtures, used here by name

OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_ENDPOINT": "http://127.0.0.1:9", "https_proxy": ""}


def finish(child: pexpect.spawn) -> None:
    send_line(child, "/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def _harvey(ws: Path, *args: str) -> None:
    done = invoke_harvey(*args, cwd=ws)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_rag_in_the_repl(spawn: Spawn, workspace: Path) -> None:
    for rel, text in NOTES.items():
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(text)
    _harvey(workspace, "rag", "new", "notes", "--embedder", "local")
    _harvey(workspace, "rag", "ingest", "notes", "notes")
    script = [Reply("Bleed them every October (notes/boiler.md:L1-L4)."), Reply("Fine.")]
    with FakeOpenAI(script, context_window=8192) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url, env=OFFLINE)
        child.expect(PROMPT)
        send_line(child, "/rag status")
        child.expect("no knowledge store in use")
        child.expect(PROMPT)
        send_line(child, "/rag use nope")
        child.expect("no knowledge store 'nope'")
        child.expect(PROMPT)
        send_line(child, "/rag use notes")
        child.expect("using knowledge store notes \\(3 files, 3 chunks, embedder local\\)")
        child.expect(PROMPT)
        send_line(child, "/rag query tyre pressure")
        child.expect("notes/car.md:L1-L3")
        child.expect(PROMPT)
        send_line(child, "How often should I bleed the radiators?")
        child.expect("every October")
        child.expect(PROMPT)
        send_line(child, "/rag off")
        child.expect("retrieval from notes is off")
        child.expect(PROMPT)
        send_line(child, "And the boiler pressure?")
        child.expect("Fine.")
        child.expect(PROMPT)
        finish(child)
        bodies = srv.chat_requests
    first = bodies[0]["messages"][-1]["content"]
    assert first.startswith("### Context (from knowledge base)")
    assert "#### notes/boiler.md:L1-L4" in first and "brass key" in first
    # the history keeps the message as sent, passages included: the next request
    # extends this one byte for byte (a server's prompt cache reuses all of it)
    assert bodies[1]["messages"][: len(bodies[0]["messages"])] == bodies[0]["messages"]
    second = [m["content"] for m in bodies[1]["messages"] if m["role"] == "user"]
    assert second == [first, "And the boiler pressure?"]
    spmd = next((workspace / ".harvey" / "sessions").glob("*.spmd")).read_text()
    scene = spmd[: spmd.index("And the boiler pressure?")]
    assert scene.index("[[rag: ") < scene.index("[[rag-source: notes/boiler.md:L1-L4")
    assert scene.index("[[rag-source: ") < scene.index("How often should I bleed")
    assert spmd.count("[[rag: ") == 1  # the turn with retrieval off recorded nothing
