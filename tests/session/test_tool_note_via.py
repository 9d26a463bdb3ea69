"""Format 1.9: ``[[tool: … — STATUS — HOW]]`` says how a call not made natively was made."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harvey.messages import ToolCall
from harvey.session.notes import read_tool, tool_note
from harvey.session.records import ToolNote

from .strategies import adversarial_text


def body(note: str) -> str:
    assert note.startswith("[[") and note.endswith("]]"), note
    return note[2:-2]


def test_a_rescued_call_says_so() -> None:
    note = ToolNote.from_result(ToolCall("c", "read_file", {"path": "notes.md"}), "text")
    rescued = ToolNote(note.name, note.arguments, note.status, None, "rescued from text")
    written = tool_note(rescued)
    assert written == '[[tool: read_file({"path":"notes.md"}) — ok — rescued from text]]'
    parsed = read_tool(body(written))
    assert parsed is not None and parsed.via == "rescued from text" and parsed.status == "ok"


def test_a_native_call_has_no_third_field() -> None:
    written = tool_note(ToolNote("read_file", {}, "ok"))
    parsed = read_tool(body(written))
    assert written == "[[tool: read_file({}) — ok]]"
    assert parsed is not None and parsed.via is None


@given(status=adversarial_text(), via=st.sampled_from(["rescued from text", "constrained"]))
def test_an_error_status_cannot_forge_the_how(status: str, via: str) -> None:
    """A model's text in the status (``error: x — constrained``) stays in the status."""
    note = ToolNote.from_result(ToolCall("c", "read_file", {}), f"error: {status}")
    parsed = read_tool(body(tool_note(note)))
    assert parsed is not None and parsed.via is None
    marked = read_tool(body(tool_note(ToolNote(note.name, {}, note.status, None, via))))
    assert marked is not None and marked.via == via and marked.status == parsed.status
