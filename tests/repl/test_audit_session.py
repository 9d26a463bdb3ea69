"""The audit trail's "done when": a real REPL session with a tool call, a shell
command and an @route turn, parsed by us and by a third-party Fountain parser,
rendered to HTML, and resumed with --continue-file."""

from __future__ import annotations

from pathlib import Path

import pytest
from screenplay_tools.fountain.parser import Parser
from screenplay_tools.screenplay import ElementType

from harvey.llm.scripted import Reply
from harvey.session.fountain import parse_session
from harvey.session.render import render_html
from tests.fakes.servers import FakeOpenAI

from .conftest import PROMPT, Spawn, send_line
from .test_repl import finish


@pytest.mark.slow
def test_recorded_repl_session_round_trips(
    spawn: Spawn, workspace: Path, isolated_env: Path
) -> None:
    (workspace / "notes.md").write_text("# Notes\n\nThe pump was installed in 1863.\n")
    main_script = [
        Reply(tool_calls=[("read_file", {"path": "notes.md"})]),
        Reply("The pump dates from 1863.\n\nINT. THIS IS NOT A SCENE"),
        Reply("Resumed fine."),
    ]
    with (
        FakeOpenAI(main_script, models=["mainmodel"]) as main,
        FakeOpenAI([Reply(tool_calls=[("list_files", {})]), Reply("Two files here.")]) as other,
    ):
        # A route's server is the user's own setting (a workspace file's would ask first).
        (isolated_env / "harvey.yaml").write_text(
            "routes:\n  - name: scout\n    backend: openai\n"
            f"    base_url: {other.url}\n    model: scout-model\n"
        )
        child = spawn("--backend", "openai", "--base-url", main.url, "--model", "mainmodel")
        child.expect(PROMPT)
        send_line(child, "When was the pump installed?")
        child.expect("1863")
        child.expect(PROMPT)
        send_line(child, "!ls")
        child.expect("notes.md")
        child.expect(PROMPT)
        send_line(child, "@scout what files are there?")
        child.expect("Two files here")
        child.expect(PROMPT)
        finish(child)

        spmd = next((workspace / ".harvey" / "sessions").glob("*.spmd"))
        parsed = parse_session(spmd, strict=True)
        assert parsed.complete
        kinds = [s.kind for s in parsed.scenes]
        assert kinds == ["talking", "shell", "talking"]
        first, shell, routed = parsed.scenes
        assert first.user_text == "When was the pump installed?"
        assert first.reply == "The pump dates from 1863.\n\nINT. THIS IS NOT A SCENE"
        assert [(n.name, n.status) for n in first.tool_notes] == [("read_file", "ok")]
        assert shell.shell is not None
        assert [(n.name, n.character) for n in routed.tool_notes] == [("list_files", "SCOUT")]

        # a third-party Fountain parser sees the same scenes and speakers
        parser = Parser()
        parser.add_text(spmd.read_text(encoding="utf-8"))
        elements = parser.script.elements
        headings = [
            e.text for e in elements if e.type == ElementType.HEADING and e.text != "FADE IN:"
        ]
        assert headings == [s.heading for s in parsed.scenes]
        speakers = [e.name for e in elements if e.type == ElementType.CHARACTER]
        assert speakers == [who for s in parsed.scenes for who, _ in s.dialogue]

        html = render_html(parsed)
        assert html.count("1863") >= 1 and "SCOUT" in html

        child = spawn(
            "--continue-file",
            str(spmd),
            "--backend",
            "openai",
            "--base-url",
            main.url,
            "--model",
            "mainmodel",
        )
        child.expect(PROMPT)
        send_line(child, "and now?")
        child.expect("Resumed fine")
        child.expect(PROMPT)
        finish(child)
        history = main.chat_requests[-1]["messages"]
    texts = [m.get("content") for m in history]
    assert "When was the pump installed?" in texts
    assert "The pump dates from 1863.\n\nINT. THIS IS NOT A SCENE" in texts
