"""A third-party Fountain parser (screenplay-tools) reads our files as we do."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from screenplay_tools.fountain.parser import Parser
from screenplay_tools.screenplay import ElementType

from harvey.messages import ToolCall
from harvey.protocols import RagInfo, RecallItem
from harvey.session.fountain import parse_session
from harvey.session.recorder import Recorder
from harvey.session.records import ToolNote, TurnRecord

from .strategies import adversarial_text, names
from .test_fountain import clock_from


def third_party_view(path: Path) -> tuple[list[str], list[str]]:
    parser = Parser()
    parser.add_text(path.read_text(encoding="utf-8"))
    elements = parser.script.elements
    headings = [e.text for e in elements if e.type == ElementType.HEADING and e.text != "FADE IN:"]
    characters = [e.name for e in elements if e.type == ElementType.CHARACTER]
    return headings, characters


def our_view(path: Path) -> tuple[list[str], list[str]]:
    parsed = parse_session(path, strict=True)
    return [s.heading for s in parsed.scenes], [who for s in parsed.scenes for who, _ in s.dialogue]


def record_realistic(path: Path) -> None:
    rec = Recorder(path, user="rsdoiel", model="llama3", backend="ollama", clock=clock_from())
    rec.record_context_recall([RecallItem("profile_1", "workspace_profile", 1.0)])
    rec.record_turn(
        TurnRecord(
            "rsdoiel", "llama3", "/ws", "What is 2+2?", "4", rag=RagInfo(3, "rag_store.db", 0.87)
        )
    )
    rec.record_turn(
        TurnRecord(
            "rsdoiel",
            "llama3",
            "/ws",
            "Does it build?",
            "No.\n\nINT. NOT A SCENE\nCUT TO:",
            tool_notes=[
                ToolNote.from_result(ToolCall("1", "run_shell", {"cmd": "make"}), "error: 2")
            ],
        )
    )
    rec.record_shell("make", "\n".join(f"line {i}" for i in range(100)), 2)
    rec.record_turn(
        TurnRecord(
            "rsdoiel",
            "mistral",
            "/ws",
            "@mistral review",
            "Looks fine.",
            remote=True,
            route="@mistral",
        )
    )
    rec.record_chunk_analysis_start("doc.md", 2, "LLAMA3", "paragraph", 6000, "Summarize.")
    rec.record_chunk_result(1, 2, "ok")
    rec.record_chunk_result(2, 2, "error: context exceeded")
    rec.record_chunk_synthesis("LLAMA3", "ok")
    rec.record_turn(TurnRecord("rsdoiel", "llama3", "/ws", None, "The synthesis."))
    rec.close()


def test_realistic_session_seen_the_same_by_screenplay_tools(tmp_path: Path) -> None:
    path = tmp_path / "s.spmd"
    record_realistic(path)
    theirs, ours = third_party_view(path), our_view(path)
    assert theirs == ours
    assert len(ours[0]) == 7
    assert ours[1].count("HARVEY") == 4


@given(user=names(), model=names(), texts=st.lists(adversarial_text(), min_size=1, max_size=6))
@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_adversarial_text_never_becomes_structure(
    tmp_path: Path, user: str, model: str, texts: list[str]
) -> None:
    path = tmp_path / "adv.spmd"
    if path.exists():
        path.unlink()
    rec = Recorder(path, user=user, model=model, backend="b", clock=clock_from())
    for i, text in enumerate(texts):
        if i % 3 == 2:
            rec.record_shell(text, text, 1)
        else:
            rec.record_turn(
                TurnRecord(
                    user,
                    model,
                    text,
                    text,
                    text,
                    remote=bool(i % 2),
                    tool_notes=[ToolNote(text, {text: text}, "error: " + text)],
                )
            )
    rec.close()
    assert third_party_view(path) == our_view(path)
