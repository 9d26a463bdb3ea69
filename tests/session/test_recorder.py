"""The recorder writes the scenes the format document describes, and never breaks a session."""

from __future__ import annotations

import tempfile
from datetime import datetime, timedelta
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from harvey.messages import ToolCall
from harvey.protocols import RecallItem
from harvey.session.fountain import parse_session
from harvey.session.recorder import Recorder, recording_order
from harvey.session.records import ToolNote, TurnRecord

from .test_fountain import clock_from

FIXED = datetime(2026, 6, 27, 10, 4, 8)


def make(tmp_path: Path, **kw: object) -> Recorder:
    return Recorder(
        tmp_path / "s.spmd",
        user="rsdoiel",
        model="llama3",
        backend="ollama",
        clock=lambda: FIXED,
        **kw,
    )  # type: ignore[arg-type]


def test_title_page_and_fade_in_are_written_immediately(tmp_path: Path) -> None:
    rec = make(tmp_path)
    text = rec.path.read_text()
    assert text.startswith("Title: Harvey Session\nCredit: Recorded by Harvey\nAuthor: RSDOIEL\n")
    assert (
        "Date: 2026-06-27 10:04:08\nDraft date: 2026-06-27\nModel: llama3\nBackend: ollama\n"
        in text
    )
    assert text.endswith("\nFADE IN:\n")


def test_turn_scene_matches_the_seed_layout(tmp_path: Path) -> None:
    rec = make(tmp_path)
    calls = [
        ToolNote.from_result(ToolCall("1", "read_file", {"path": "harvey.go"}), "package x"),
        ToolNote.from_result(
            ToolCall("2", "run_shell", {"cmd": "go build ./..."}), "error: exit 1\nmore detail"
        ),
    ]
    rec.record_turn(
        TurnRecord(
            "rsdoiel",
            "llama3",
            "/ws",
            "Does harvey.go compile cleanly?",
            "There is a compilation error.",
            tool_notes=calls,
        )
    )
    scene = rec.path.read_text().split("FADE IN:\n", 1)[1]
    assert scene == (
        "\n\nINT. HARVEY AND RSDOIEL TALKING 2026-06-27 10:04:08\n\n"
        "Harvey and RSDOIEL are in chat mode. Model: LLAMA3. Workspace: /ws.\n\n"
        "RSDOIEL\nDoes harvey.go compile cleanly?\n\n"
        "HARVEY\nForwarding to LLAMA3.\n\n"
        '[[tool: read_file({"path":"harvey.go"}) — ok]]\n'
        '[[tool: run_shell({"cmd":"go build ./..."}) — error: exit 1]]\n\n'
        "LLAMA3\nThere is a compilation error.\n"
    )


def test_remote_route_is_an_ext_scene_with_attributed_tools(tmp_path: Path) -> None:
    rec = make(tmp_path)
    rec.record_turn(
        TurnRecord(
            "rsdoiel",
            "llama3",
            "/ws",
            "@mistral review this fix",
            "Fine.",
            remote=True,
            route="@mistral",
            tool_notes=[ToolNote("read_file", {"path": "a"}, "ok")],
        )
    )
    text = rec.path.read_text()
    assert "\nEXT. MISTRAL AND RSDOIEL 2026-06-27 10:04:08\n" in text
    assert "Harvey routing to MISTRAL (remote API). Workspace: /ws." in text
    assert '[[MISTRAL.tool: read_file({"path":"a"}) — ok]]' in text
    assert "\nMISTRAL\nFine.\n" in text


def test_local_route_keeps_int_but_attributes_tools(tmp_path: Path) -> None:
    rec = make(tmp_path)
    rec.record_turn(
        TurnRecord(
            "rsdoiel",
            "llama3",
            "/ws",
            "@phi hi",
            "yo",
            route="@phi",
            tool_notes=[ToolNote("ls", {}, "ok")],
        )
    )
    scene = parse_session(rec.path).scenes[0]
    assert scene.kind == "talking"
    assert [t.character for t in scene.tool_notes] == ["PHI"]


def test_rag_note_follows_the_action_line_and_only_when_fired(tmp_path: Path) -> None:
    from harvey.protocols import RagInfo

    rec = make(tmp_path)
    rec.record_turn(
        TurnRecord("rsdoiel", "llama3", "/ws", "q", "a", rag=RagInfo(3, "rag.db", 0.871))
    )
    rec.record_turn(TurnRecord("rsdoiel", "llama3", "/ws", "q", "a"))
    text = rec.path.read_text()
    assert "Workspace: /ws.\n\n[[rag: 3 chunks from rag.db, top score 0.87]]\n\nRSDOIEL\n" in text
    assert text.count("[[rag:") == 1


def test_context_recall_once_and_never_empty(tmp_path: Path) -> None:
    rec = make(tmp_path)
    rec.record_context_recall([])
    assert "CONTEXT RECALL" not in rec.path.read_text()
    rec.record_context_recall(
        [
            RecallItem("workspace_profile_250928", "workspace_profile", 1.0),
            RecallItem("tool_use_d55f70", "tool_use", 0.75),
        ]
    )
    rec.record_context_recall([RecallItem("again", "x", 0.1)])
    text = rec.path.read_text()
    assert text.count("INT. CONTEXT RECALL 2026-06-27 10:04:08") == 1
    assert (
        "[[recall: workspace_profile_250928 (workspace_profile) — score 1.00]]\n"
        "[[recall: tool_use_d55f70 (tool_use) — score 0.75]]\n"
    ) in text
    assert "again" not in text


def test_chunk_analysis_scene_matches_seed_w3(tmp_path: Path) -> None:
    rec = make(tmp_path)
    rec.record_chunk_analysis_start(
        "doc.md", 2, "LLAMA3", "paragraph", 6000, "Summarize each section."
    )
    rec.record_chunk_result(1, 2, "ok")
    rec.record_chunk_result(2, 2, "ok")
    rec.record_chunk_synthesis("LLAMA3", "ok")
    assert rec.path.read_text().split("FADE IN:\n", 1)[1] == (
        "\n\nINT. CHUNK ANALYSIS — doc.md 2026-06-27 10:04:08\n\n"
        "[[chunk: file=doc.md, chunks=2, model=LLAMA3, boundary=paragraph, chunk-size=6000]]\n\n"
        "RSDOIEL\nSummarize each section.\n\n"
        "[[chunk-result: 1/2 — ok]]\n[[chunk-result: 2/2 — ok]]\n"
        "[[synthesis: model=LLAMA3 — ok]]\n\n"
        "HARVEY\nChunk analysis complete. Synthesized result injected into conversation.\n"
    )


def test_chunk_errors_out_of_range_index_and_levels(tmp_path: Path) -> None:
    rec = make(tmp_path)
    rec.record_chunk_analysis_start("doc.md", 12, "LLAMA3", "source", 6000, "x")
    rec.record_chunk_result(2, 12, "error: context exceeded\ntraceback...")
    rec.record_chunk_result(13, 12, "ok")  # i > n must not raise
    rec.record_chunk_synthesis("LLAMA3", "error: timed out", levels=2)
    text = rec.path.read_text()
    assert "[[chunk-result: 2/12 — error: context exceeded]]" in text
    assert "[[chunk-result: 13/12 — ok]]" in text
    assert "[[synthesis: model=LLAMA3, levels=2 — error: timed out]]" in text
    assert "HARVEY\nChunk analysis failed" in text
    scene = parse_session(rec.path).scenes[0]
    assert scene.synthesis is not None and scene.synthesis.levels == 2


def test_long_shell_output_is_shortened_with_a_note(tmp_path: Path) -> None:
    rec = make(tmp_path)
    rec.record_shell("seq 100", "\n".join(str(i) for i in range(1, 101)) + "\n", 0)
    text = rec.path.read_text()
    assert "RSDOIEL\n\\! seq 100\n" in text
    assert "[[output: 60 lines omitted]]" in text
    assert "[[shell: seq 100 — exit 0]]" in text
    scene = parse_session(rec.path).scenes[0]
    output = scene.shell_output or ""
    assert output.split("\n") == [str(i) for i in [*range(1, 21), *range(81, 101)]]
    assert scene.omitted == 60


def test_long_tool_arguments_are_shortened(tmp_path: Path) -> None:
    rec = make(tmp_path)
    rec.record_turn(
        TurnRecord(
            "u",
            "m",
            "/w",
            "q",
            "a",
            tool_notes=[ToolNote("write_file", {"content": "x" * 5000}, "ok")],
        )
    )
    note = parse_session(rec.path).scenes[0].tool_notes[0]
    assert len(note.args_text) == 200 and note.args_text.endswith("…")
    assert "x" * 300 not in rec.path.read_text()


def test_close_writes_the_end_once(tmp_path: Path) -> None:
    rec = make(tmp_path)
    rec.close()
    rec.close()
    assert rec.path.read_text().endswith("FADE IN:\n\n\nTHE END.\n")
    assert parse_session(rec.path).complete


def test_each_scene_is_on_disk_before_close(tmp_path: Path) -> None:
    rec = make(tmp_path)
    rec.record_turn(TurnRecord("u", "m", "/w", "first", "reply"))
    parsed = parse_session(rec.path)  # as if the process had crashed here
    assert not parsed.complete and parsed.turns[0].reply == "reply"


def test_open_in_names_files_and_avoids_collisions(tmp_path: Path) -> None:
    kw = dict(user="u", model="m", backend="b", clock=lambda: FIXED)
    first = Recorder.open_in(tmp_path / "a" / "sessions", **kw)
    second = Recorder.open_in(tmp_path / "a" / "sessions", **kw)
    assert first.path.name == "harvey-session-20260627-100408.spmd"
    assert second.path.name == "harvey-session-20260627-100408-2.spmd"
    assert first.enabled and second.enabled


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 2), min_size=1, max_size=14))
def test_recordings_sort_in_the_order_they_were_started(steps: list[int]) -> None:
    """Twelve sessions in one second sort ``…``, ``-2`` … ``-12``, not by plain name."""
    started: list[str] = []
    now = FIXED
    with tempfile.TemporaryDirectory() as folder:
        for step in steps:
            now += timedelta(seconds=step)
            rec = Recorder.open_in(
                Path(folder), user="u", model="m", backend="b", clock=lambda at=now: at
            )
            started.append(rec.path.name)
        on_disk = sorted((p.name for p in Path(folder).glob("*.spmd")), key=recording_order)
    assert on_disk == started
    assert recording_order("notes.spmd") > recording_order(started[-1])


def test_uncreatable_directory_fails_open_with_one_warning(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    warnings: list[str] = []
    rec = Recorder.open_in(
        blocker / "sessions",
        user="u",
        model="m",
        backend="b",
        clock=clock_from(),
        warn=warnings.append,
    )
    assert not rec.enabled
    rec.record_turn(TurnRecord("u", "m", "/w", "q", "a"))
    rec.record_shell("ls", "", 0)
    rec.close()
    assert len(warnings) == 1 and "session recording is off" in warnings[0]


def test_write_failure_mid_session_fails_open(tmp_path: Path) -> None:
    warnings: list[str] = []
    directory = tmp_path / "sessions"
    rec = Recorder.open_in(
        directory, user="u", model="m", backend="b", clock=clock_from(), warn=warnings.append
    )
    rec.path.unlink()
    directory.rmdir()  # the directory vanishes (unmounted, deleted) mid-session
    rec.record_turn(TurnRecord("u", "m", "/w", "q", "a"))
    rec.record_turn(TurnRecord("u", "m", "/w", "q", "a"))
    assert not rec.enabled and len(warnings) == 1


def test_two_sessions_in_the_same_second_get_distinct_files(tmp_path: Path) -> None:
    from datetime import datetime

    fixed = datetime(2026, 11, 30, 10, 0, 0)
    kw = {"user": "u", "model": "m", "backend": "b", "clock": lambda: fixed}
    first = Recorder.open_in(tmp_path, **kw)
    second = Recorder.open_in(tmp_path, **kw)
    assert first.enabled and second.enabled
    assert first.path != second.path
    assert second.path.name == "harvey-session-20261130-100000-2.spmd"
    assert "FADE IN:" in second.path.read_text()


def test_a_route_named_like_a_forced_user_cue_stays_a_different_character(tmp_path: Path) -> None:
    # user "0" is written "@0"; a route "@0" must not take the same cue.
    rec = Recorder(tmp_path / "s.spmd", user="0", model="m", backend="openai")
    rec.record_turn(
        TurnRecord("0", "m", "/ws", "hi", "yo", route="@0", tool_notes=[ToolNote("ls", {}, "ok")])
    )
    scene = parse_session(rec.path, strict=True).scenes[0]
    assert [t.character for t in scene.tool_notes] == ["0 MODEL"]
