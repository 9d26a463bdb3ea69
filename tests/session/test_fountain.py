"""Escaping and the parser: any text goes in, the same text comes back out."""

from __future__ import annotations

import unicodedata
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from harvey.errors import SessionFileError
from harvey.messages import ToolCall
from harvey.protocols import RagInfo, RecallItem
from harvey.session.escape import (
    character_cue,
    cue_name,
    decode_block,
    decode_inline,
    encode_block,
    encode_field,
    encode_inline,
    looks_like_structure,
)
from harvey.session.fountain import parse_session, parse_session_text
from harvey.session.recorder import Recorder
from harvey.session.records import ToolNote, TurnRecord, WriteNote, first_line_status, write_status

from .strategies import DANGEROUS, adversarial_text, names


def clock_from(start: datetime = datetime(2026, 6, 24, 10, 0, 0)):  # type: ignore[no-untyped-def]
    now = [start]

    def tick() -> datetime:
        now[0] += timedelta(seconds=1)
        return now[0]

    return tick


@pytest.mark.parametrize("text", DANGEROUS)
def test_each_dangerous_fragment_round_trips(text: str) -> None:
    assert decode_block(encode_block(text)) == text


@pytest.mark.parametrize(
    "line",
    [
        "INT. X",
        "EXT. Y",
        "I/E Z",
        ".KITCHEN",
        "!a",
        "@NAME",
        "# s",
        "= syn",
        "~la",
        ">x<",
        ">CUT",
        "===",
        "CUT TO:",
        "ALL CAPS",
        "(aside)",
        " lead",
        "\tlead",
        "int. lower",
    ],
)
def test_structural_line_starts_are_escaped(line: str) -> None:
    (encoded,) = encode_block(line)
    assert encoded.startswith("\\")
    assert looks_like_structure(line)


def test_plain_prose_is_written_as_is() -> None:
    assert encode_block("Hello there, how are you?") == ["Hello there, how are you?"]


def test_blank_lines_inside_dialogue_are_two_spaces() -> None:
    assert encode_block("a\n\nb") == ["a", "  ", "b"]
    assert encode_block("") == ["\\"]
    assert encode_block("\nb") == ["\\", "b"]


def test_notes_boneyard_and_trailing_whitespace_are_broken_up() -> None:
    (encoded,) = encode_block("x [[y]] /* z */ end  ")
    assert "[[" not in encoded and "]]" not in encoded
    assert "/*" not in encoded and "*/" not in encoded
    assert not encoded[-1].isspace()


@given(adversarial_text())
@settings(max_examples=200)
def test_block_round_trip_and_no_structure(text: str) -> None:
    lines = encode_block(text)
    assert decode_block(lines) == text
    for i, line in enumerate(lines):
        assert line != ""  # a dialogue block never breaks
        assert len(line.splitlines()) == 1
        for pair in ("[[", "]]", "/*", "*/"):
            assert pair not in line
        if line.strip():
            assert not line[-1].isspace()
            assert not looks_like_structure(line) or line.startswith("\\")
        else:
            assert i > 0 and line == "  "


@given(st.text(max_size=30))
def test_field_has_no_unescaped_separator(text: str) -> None:
    encoded = encode_field(text, "—,")
    stripped = encoded.replace("\\\\", "").replace("\\—", "").replace("\\,", "")
    assert "—" not in stripped and "," not in stripped


def _one_character_at_a_time(text: str, extra: str) -> str:
    """The escaping rule applied character by character, as the docstring states it."""
    out, prev = [], ""
    for c in text:
        if c == "\\":
            out.append("\\\\")
        elif c != "\t" and unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp"):
            out.append(f"\\u{ord(c):04X}")
        elif prev + c in ("[[", "]]", "/*", "*/") or c in extra:
            out.append("\\u0075" if c == "u" else "\\" + c)
        else:
            out.append(c)
        prev = c
    return "".join(out)


@given(adversarial_text(), st.sampled_from(["", "—", "—,()", "u"]))
@example("a [[ b", "")
@example("c */ d", "")
@example("e — f", "—")
@example("g\u2028h", "")
@example("lone \udcff", "")
@example("tab\tand plain prose", "")
@example("a\\[b", "")
def test_inline_escaping_takes_no_shortcut_the_rule_does_not(text: str, extra: str) -> None:
    """Text with nothing to escape is returned whole, and a backslash-free line decoded
    whole: those shortcuts must give what the character-by-character rule gives."""
    encoded = encode_inline(text, extra)
    assert encoded == _one_character_at_a_time(text, extra)
    assert decode_inline(encoded) == text


@given(names())
def test_character_cues_are_valid_and_never_reserved(name: str) -> None:
    cue = character_cue(name, "MODEL", frozenset({"HARVEY", "SHELL"}))
    assert cue_name(cue) not in ("HARVEY", "SHELL")
    assert cue_name(cue) and not any(c.islower() for c in cue)
    assert cue.startswith("@") or (cue[0].isascii() and cue[0].isupper())


# ---------------------------------------------------------------- session round trip

turn_strategy = st.fixed_dictionaries(
    {
        "user_text": st.one_of(st.none(), adversarial_text()),
        "reply": st.one_of(st.none(), adversarial_text()),
        "model": names(),
        "route": st.one_of(st.none(), names().map(lambda n: "@" + n)),
        "remote": st.booleans(),
        "tools": st.lists(
            st.tuples(
                adversarial_text(),
                st.dictionaries(adversarial_text(), adversarial_text(), max_size=3),
                adversarial_text(),
            ),
            max_size=3,
        ),
        "writes": st.lists(
            st.tuples(
                adversarial_text(),
                st.one_of(
                    st.sampled_from(["ok", "skipped"]), adversarial_text().map("error: ".__add__)
                ),
                st.integers(0, 3),
            ),
            max_size=3,
        ),
        "rag": st.one_of(st.none(), st.tuples(st.integers(0, 50), adversarial_text())),
        "notice": st.one_of(st.none(), adversarial_text()),
    }
)
event_strategy = st.one_of(
    st.tuples(st.just("turn"), turn_strategy),
    st.tuples(
        st.just("shell"), st.tuples(adversarial_text(), adversarial_text(), st.integers(-9, 300))
    ),
    st.tuples(
        st.just("chunk"),
        st.tuples(
            adversarial_text(),
            st.integers(0, 30),
            names(),
            adversarial_text(),
            st.lists(adversarial_text(), max_size=4),
            adversarial_text(),
        ),
    ),
)


def _write_session(path: Path, user: str, events: list, recall: list[RecallItem]) -> None:  # type: ignore[type-arg]
    rec = Recorder(path, user=user, model="m", backend="ollama", clock=clock_from())
    rec.record_context_recall(recall)
    for kind, data in events:
        if kind == "turn":
            tools = [
                ToolNote.from_result(ToolCall("i", name, args), result)
                for name, args, result in data["tools"]
            ]
            rag = RagInfo(data["rag"][0], data["rag"][1], 0.5) if data["rag"] else None
            rec.record_turn(
                TurnRecord(
                    user,
                    data["model"],
                    "/ws",
                    data["user_text"],
                    data["reply"],
                    tool_notes=tools,
                    write_notes=[WriteNote(p, status, call) for p, status, call in data["writes"]],
                    remote=data["remote"],
                    route=data["route"],
                    rag=rag,
                    harvey_notice=data["notice"],
                )
            )
        elif kind == "shell":
            rec.record_shell(*data)
        else:
            filename, n, model, instruction, statuses, synth = data
            rec.record_chunk_analysis_start(filename, n, model, "paragraph", 6000, instruction)
            for i, status in enumerate(statuses, start=1):
                rec.record_chunk_result(i, n, "ok" if i % 2 else f"error: {status}")
            rec.record_chunk_synthesis(model, "ok" if n % 2 else f"error: {synth}")
    rec.close()


@given(
    user=names(),
    events=st.lists(event_strategy, max_size=6),
    recall=st.lists(
        st.builds(RecallItem, adversarial_text(), adversarial_text(), st.floats(0, 1)), max_size=3
    ),
)
@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@pytest.mark.slow
def test_session_round_trip(
    tmp_path: Path, user: str, events: list, recall: list[RecallItem]
) -> None:  # type: ignore[type-arg]
    path = tmp_path / "s.spmd"
    if path.exists():
        path.unlink()
    _write_session(path, user, events, recall)
    parsed = parse_session(path, strict=True)
    assert parsed.complete and parsed.warnings == []
    scenes = list(parsed.scenes)
    if recall:
        scene = scenes.pop(0)
        assert scene.kind == "recall"
        assert [(r.id, r.source) for r in scene.recall] == [(r.id, r.source) for r in recall]
    assert len(scenes) == len(events)
    for (kind, data), scene in zip(events, scenes, strict=True):
        if kind == "turn":
            assert scene.kind == ("ext" if data["remote"] else "talking")
            assert scene.user_text == data["user_text"]
            assert scene.reply == data["reply"]
            expected = [ToolNote.from_result(ToolCall("i", n, a), r) for n, a, r in data["tools"]]
            got = scene.tool_notes
            assert [t.name for t in got] == [t.name for t in expected]
            assert [t.args_text for t in got] == [t.args_text() for t in expected]
            assert [t.status for t in got] == [t.status for t in expected]
            writes = sorted(data["writes"], key=lambda w: w[2])  # each after its call's note
            assert [(w.path, w.status) for w in scene.write_notes] == [
                (p, write_status(status)) for p, status, _call in writes
            ]
            route_cue = (
                None
                if data["route"] is None
                else cue_name(
                    character_cue(
                        data["route"].lstrip("@"),  # as the recorder reads a route
                        "MODEL",
                        frozenset(
                            {
                                "HARVEY",
                                "SHELL",
                                cue_name(
                                    character_cue(user, "USER", frozenset({"HARVEY", "SHELL"}))
                                ),
                            }
                        ),
                    )
                )
            )
            assert all(
                t.character == (cue_name(character_cue(route_cue, "MODEL")) if route_cue else None)
                for t in got
            )
            if data["rag"]:
                assert scene.rag is not None and scene.rag.chunks == data["rag"][0]
                assert scene.rag.store == data["rag"][1]
            else:
                assert scene.rag is None
        elif kind == "shell":
            command, _output, code = data
            assert scene.kind == "shell"
            assert scene.user_text == f"! {command}"
            assert scene.shell is not None and scene.shell.command == command
            assert scene.shell.exit_code == code
        else:
            filename, n, model, instruction, statuses, synth = data
            assert scene.kind == "chunk_analysis"
            assert scene.chunk is not None
            assert (scene.chunk.file, scene.chunk.chunks, scene.chunk.model) == (filename, n, model)
            assert scene.user_text == instruction
            want = [(i, n) for i in range(1, len(statuses) + 1)]
            assert [(r.index, r.total) for r in scene.chunk_results] == want
            assert [r.status for r in scene.chunk_results] == [
                "ok" if i % 2 else first_line_status(f"error: {s}")
                for i, s in enumerate(statuses, start=1)
            ]
            assert scene.synthesis is not None and scene.synthesis.model == model
            assert scene.synthesis.status == (
                "ok" if n % 2 else first_line_status(f"error: {synth}")
            )


def test_shell_output_round_trips_when_short(tmp_path: Path) -> None:
    rec = Recorder(tmp_path / "s.spmd", user="u", model="m", backend="b", clock=clock_from())
    rec.record_shell("ls", "INT. a\n\n[[b]]\n", 0)
    (scene,) = parse_session(rec.path).scenes
    assert scene.shell_output == "INT. a\n\n[[b]]"


# ---------------------------------------------------------------- damaged files


def test_truncated_file_resumes_with_warning(tmp_path: Path) -> None:
    rec = Recorder(tmp_path / "s.spmd", user="u", model="m", backend="b", clock=clock_from())
    rec.record_turn(TurnRecord("u", "m", "/w", "hi", "hello"))
    text = rec.path.read_text()
    parsed = parse_session_text(text)
    assert not parsed.complete
    assert any("THE END" in w for w in parsed.warnings)
    assert parsed.turns[0].reply == "hello"


def test_damaged_note_names_the_line_in_strict_mode(tmp_path: Path) -> None:
    rec = Recorder(tmp_path / "s.spmd", user="u", model="m", backend="b", clock=clock_from())
    rec.record_turn(
        TurnRecord("u", "m", "/w", "hi", "hello", tool_notes=[ToolNote("read_file", {}, "ok")])
    )
    lines = rec.path.read_text().split("\n")
    bad = next(i for i, line in enumerate(lines) if line.startswith("[[tool"))
    lines[bad] = lines[bad][:-2]  # cut the closing ]]
    path = tmp_path / "bad.spmd"
    path.write_text("\n".join(lines))
    with pytest.raises(SessionFileError) as info:
        parse_session(path, strict=True)
    assert info.value.line == bad + 1
    lenient = parse_session(path)
    assert any(f"line {bad + 1}" in w for w in lenient.warnings)
    assert lenient.turns[0].reply == "hello"


def test_missing_file_is_a_session_file_error(tmp_path: Path) -> None:
    with pytest.raises(SessionFileError):
        parse_session(tmp_path / "nope.spmd")


def test_invalid_utf8_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "x.spmd"
    path.write_bytes(b"Title: x\n\nFADE IN:\n\n\nINT. SHELL 2026-01-01 00:00:00\n\n\xff\xfe\n")
    assert any("UTF-8" in w for w in parse_session(path).warnings)
    with pytest.raises(SessionFileError) as info:
        parse_session(path, strict=True)
    assert info.value.line == 8


@given(st.text(max_size=300) | adversarial_text())
@settings(max_examples=200)
def test_any_text_parses_without_crashing(text: str) -> None:
    parsed = parse_session_text(text)
    for scene in parsed.scenes:  # the typed readers never raise either
        _ = (
            scene.tool_notes,
            scene.rag,
            scene.recall,
            scene.chunk,
            scene.chunk_results,
            scene.synthesis,
            scene.shell,
            scene.user_text,
            scene.reply,
        )
    try:
        parse_session_text(text, strict=True)
    except SessionFileError as exc:
        assert exc.line is not None
