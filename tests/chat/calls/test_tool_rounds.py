"""Tool calls written as text, through ``harvey run`` against loopback servers that
answer as real models do: each family's form runs like a native call, near misses
stay prose, and a rescued call meets the same approval and confinement."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from harvey.llm.scripted import Reply
from tests.fakes.base import Capped
from tests.fakes.llamacpp import FakeLlamaCpp
from tests.fakes.servers import FakeOllama, FakeOpenAI
from tests.harvey_process import invoke_harvey

CALL = '{"name": "read_file", "arguments": {"path": "notes.md"}}'
LLAMA_CALL = '{"name": "read_file", "parameters": {"path": "notes.md"}}'
FORMS = {
    "hermes": f"<tool_call>\n{CALL}\n</tool_call>",
    "hermes-after-think": f"<think>\nThe user wants notes.md.\n</think>\n\n<tool_call>\n{CALL}\n</tool_call>",
    "hermes-after-prose": f"Let me read the file.\n<tool_call>\n{CALL}\n</tool_call>",
    "mistral": f"[TOOL_CALLS] [{CALL}]",
    "mistral-v11": '[TOOL_CALLS]read_file[ARGS]{"path": "notes.md"}',
    "llama3": f"<|python_tag|>{LLAMA_CALL}<|eom_id|>",
    "phi": f"<|tool_call|>[{CALL}]<|/tool_call|>",
    "json": LLAMA_CALL,
    "fenced-json": f"```json\n{CALL}\n```",
}
ANSWER = "The boiler was serviced on 3 March."


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.md").write_text("Boiler serviced on 3 March 2026 by Ray.\n")
    return ws


def run(ws: Path, srv: FakeOpenAI | FakeOllama, *extra: str, backend: str = "openai"):
    return invoke_harvey(
        "run",
        "When was the boiler serviced?",
        "--backend",
        backend,
        "--base-url",
        srv.url,
        *extra,
        cwd=ws,
    )


def tool_results(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def recording(ws: Path) -> str:
    (found,) = (ws / ".harvey" / "sessions").glob("*.spmd")
    return found.read_text()


@pytest.mark.parametrize("form", sorted(FORMS))
def test_each_text_form_runs_like_a_native_call(workspace: Path, form: str) -> None:
    with FakeOpenAI([Reply(FORMS[form]), Reply(ANSWER)]) as srv:
        proc = run(workspace, srv)
        second = srv.chat_requests[1]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ANSWER + "\n"  # the markup is not the answer
    assert any("Boiler serviced on 3 March" in t for t in tool_results(second))
    note = '[[tool: read_file({"path":"notes.md"}) — ok — rescued from text]]'
    assert note in recording(workspace)


def test_ollama_reply_written_as_text_is_rescued(workspace: Path) -> None:
    with FakeOllama([Reply(FORMS["hermes"]), Reply(ANSWER)]) as srv:
        proc = run(workspace, srv, backend="ollama")
        second = srv.chat_requests[1]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ANSWER + "\n"
    assert any("3 March 2026" in t for t in tool_results(second))


NEAR_MISSES = {
    "inline quote": 'You would write `<tool_call>{"name": "read_file", "arguments": {}}</tool_call>` to read.',
    "example with explanation": f"For example:\n<tool_call>\n{CALL}\n</tool_call>\nwould read the notes.",
    "in a code fence": f"Like this:\n```\n<tool_call>\n{CALL}\n</tool_call>\n```",
    "only inside thinking": f"<think>I could do <tool_call>{CALL}</tool_call></think>\nI do not know.",
    "json that is not a call": '{"answer": "3 March", "confidence": 0.9}',
    "broken bare json": '{"name": "read_file", "arguments": {"path": ',
}


@pytest.mark.parametrize("case", sorted(NEAR_MISSES))
def test_near_misses_are_answers(workspace: Path, case: str) -> None:
    with FakeOpenAI([Reply(NEAR_MISSES[case])]) as srv:
        proc = run(workspace, srv)
        calls = len(srv.chat_requests)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == NEAR_MISSES[case] + "\n"
    assert calls == 1  # nothing ran, nothing went back to the model
    assert "[[tool:" not in recording(workspace)


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (
            '<tool_call>{"name": "open_file", "arguments": {"path": "notes.md"}}</tool_call>',
            "error: unknown tool 'open_file'",
        ),
        (
            '<tool_call>{"name": "read_file", "arguments": {"file": "notes.md"}}</tool_call>',
            "error: invalid arguments for read_file: missing path",
        ),
        (
            '<tool_call>{"name": "read_file", "arguments": {"path": </tool_call>',
            "error: the hermes tool call could not be read: broken JSON",
        ),
    ],
)
def test_a_wrong_call_goes_back_to_the_model_once(workspace: Path, reply: str, error: str) -> None:
    with FakeOpenAI([Reply(reply), Reply(reply)]) as srv:
        proc = run(workspace, srv)
        requests = srv.chat_requests
    assert proc.returncode == 0, proc.stderr
    assert len(requests) == 2  # told once; the repeated mistake ends the turn
    (result,) = tool_results(requests[1])
    assert result.startswith(error), result
    assert proc.stdout == reply + "\n"


def test_a_rescued_write_without_allow_writes_is_refused(workspace: Path) -> None:
    call = '{"name": "write_file", "arguments": {"path": "out.txt", "content": "pwned"}}'
    with FakeOpenAI([Reply(f"<tool_call>{call}</tool_call>"), Reply("Done.")]) as srv:
        proc = run(workspace, srv)
        (result,) = tool_results(srv.chat_requests[1])
    assert proc.returncode == 0, proc.stderr
    assert not (workspace / "out.txt").exists()
    assert result.startswith("error:")
    assert "[[write: out.txt — skipped]]" in recording(workspace)


def test_a_rescued_write_with_allow_writes_is_written(workspace: Path) -> None:
    call = '{"name": "write_file", "arguments": {"path": "out.txt", "content": "hello"}}'
    with FakeOpenAI([Reply(f"<tool_call>{call}</tool_call>"), Reply("Done.")]) as srv:
        proc = run(workspace, srv, "--allow-writes")
    assert proc.returncode == 0, proc.stderr
    assert (workspace / "out.txt").read_text() == "hello"


def test_a_rescued_command_goes_through_the_shell_policy(workspace: Path, tmp_path: Path) -> None:
    """The rescued call meets the same allow-list, path checks and sandbox: an allowed
    command inside the workspace runs, one that writes outside it is refused unasked."""
    outside = tmp_path / "outside.txt"
    calls = [
        {"name": "run_shell", "arguments": {"command": "cat notes.md"}},
        {"name": "run_shell", "arguments": {"command": f"cp notes.md {outside}"}},
    ]
    script = [Reply(f"[TOOL_CALLS] {json.dumps(calls)}"), Reply("Ran it.")]
    with FakeOpenAI(script) as srv:
        proc = run(workspace, srv)
        inside, escape = tool_results(srv.chat_requests[1])
    assert proc.returncode == 0, proc.stderr
    assert "Boiler serviced" in inside
    assert not outside.exists()
    assert escape.startswith("error:"), escape


def test_text_mode_describes_the_tools_and_sends_no_schemas(workspace: Path) -> None:
    (workspace / "harvey.yaml").write_text("tools:\n  models:\n    fake-model: text\n")
    with FakeOpenAI([Reply(FORMS["hermes"]), Reply(ANSWER)]) as srv:
        proc = run(workspace, srv, "--model", "fake-model")
        first = srv.chat_requests[0]
    assert proc.returncode == 0, proc.stderr
    assert "tools" not in first
    assert "<tool_call>" in first["messages"][0]["content"]
    assert proc.stdout == ANSWER + "\n"


def test_mode_off_offers_no_tools_and_rescues_nothing(workspace: Path, isolated_env: Path) -> None:
    (workspace / "harvey.yaml").write_text("tools:\n  mode: 'off'\n")
    with FakeOpenAI([Reply(FORMS["hermes"])]) as srv:
        proc = run(workspace, srv)
        first = srv.chat_requests[0]
    assert proc.returncode == 0, proc.stderr
    assert "tools" not in first
    assert proc.stdout == FORMS["hermes"] + "\n"
    rows = (
        sqlite3.connect(isolated_env / "sessions.db")
        .execute("SELECT role FROM messages ORDER BY id")
        .fetchall()
    )
    assert rows == [("user",), ("assistant",)]


def test_constrained_mode_sends_the_choice_schema_and_runs_the_choice(workspace: Path) -> None:
    """A llama.cpp-style server gets ``response_format`` with the "answer or call" schema,
    the named file narrows ``path``, and the choice runs like a call (noted ``constrained``)."""
    (workspace / "harvey.yaml").write_text("tools:\n  mode: constrained\n")
    script = [
        Reply('{"tool": "read_file", "arguments": {"path": "notes.md"}}'),
        Reply('{"tool": "read_file", "arguments": {"path": "notes.md"}}'),  # repeated
        Reply('{"tool": "answer", "text": "On 3 March."}'),
    ]
    with FakeOpenAI(script) as srv:
        proc = invoke_harvey(
            "run", "When was the boiler serviced? See notes.md.", "--backend", "openai",
            "--base-url", srv.url, cwd=workspace,
        )  # fmt: skip
        requests = srv.chat_requests
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "On 3 March.\n"
    first = requests[0]
    assert "tools" not in first
    choices = first["response_format"]["json_schema"]["schema"]["oneOf"]
    read = next(c for c in choices if c["properties"]["tool"]["const"] == "read_file")
    assert read["properties"]["arguments"]["properties"]["path"]["enum"] == ["notes.md"]
    assert any("3 March 2026" in t for t in tool_results(requests[1]))
    # the repeat was not run again: the last request allowed only an answer
    assert len(requests[2]["response_format"]["json_schema"]["schema"]["oneOf"]) == 1
    assert tool_results(requests[2]) == tool_results(requests[1])
    note = '[[tool: read_file({"path":"notes.md"}) — ok — constrained]]'
    assert recording(workspace).count(note) == 1


def test_constrained_mode_reads_only_a_file_the_turn_has_named(workspace: Path) -> None:
    """Nothing named: no ``read_file`` choice (a small model invents paths); the search
    hit's path then becomes the one file it may read."""
    (workspace / "harvey.yaml").write_text("tools:\n  mode: constrained\n")
    (workspace / "src").mkdir()
    (workspace / "src" / "dates.py").write_text("def parse_date(text):\n    return text\n")
    script = [
        Reply('{"tool": "search_files", "arguments": {"pattern": "parse_date"}}'),
        Reply('{"tool": "read_file", "arguments": {"path": "src/dates.py"}}'),
        Reply('{"tool": "answer", "text": "In src/dates.py."}'),
    ]
    with FakeOpenAI(script) as srv:
        proc = invoke_harvey(
            "run", "Find where parse_date is defined.", "--backend", "openai",
            "--base-url", srv.url, cwd=workspace,
        )  # fmt: skip
        requests = srv.chat_requests
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "In src/dates.py.\n"

    def offered(request: dict) -> dict:  # type: ignore[type-arg]
        choices = request["response_format"]["json_schema"]["schema"]["oneOf"]
        return {c["properties"]["tool"]["const"]: c["properties"] for c in choices}

    assert "read_file" not in offered(requests[0]) and "search_files" in offered(requests[0])
    # the pattern is one of the prompt's own words ("find", "defined" left out)
    pattern = offered(requests[0])["search_files"]["arguments"]["properties"]["pattern"]
    assert pattern["enum"] == ["parse_date"]
    read = offered(requests[1])["read_file"]["arguments"]["properties"]["path"]
    assert read["enum"] == ["src/dates.py"]
    assert any("return text" in t for t in tool_results(requests[2]))


@pytest.mark.parametrize(
    ("template", "mode"),
    [("{{ messages }}", "off"), ("{% if tools %}{{ tools }}{% endif %}{{ messages }}", "native")],
)
def test_tool_support_is_read_from_the_servers_chat_template(
    workspace: Path, template: str, mode: str
) -> None:
    """llama.cpp's ``/props`` shows the chat template: one that renders no tools means the
    model gets none, and the file its prompt names is attached instead."""
    with FakeLlamaCpp(replies=[Reply(ANSWER)]) as srv:
        srv.chat_template = template
        models = invoke_harvey(
            "models", "--backend", "openai", "--base-url", srv.url, cwd=workspace
        )
        proc = invoke_harvey(
            "run", "When was the boiler serviced? See notes.md.", "--backend", "openai",
            "--base-url", srv.url, cwd=workspace,
        )  # fmt: skip
        sent = srv.chat_requests[-1]
    assert f"tools: {mode}" in models.stderr, models.stderr
    assert proc.returncode == 0, proc.stderr
    assert ("tools" in sent) == (mode == "native")
    attached = "Boiler serviced on 3 March 2026" in sent["messages"][-1]["content"]
    assert attached == (mode == "off")


def test_constrained_mode_on_ollama_sends_the_schema_as_format(workspace: Path) -> None:
    (workspace / "harvey.yaml").write_text("tools:\n  mode: constrained\n")
    script = [
        Reply('{"tool": "read_file", "arguments": {"path": "notes.md"}}'),
        Reply('{"tool": "answer", "text": "On 3 March."}'),
    ]
    with FakeOllama(script) as srv:
        proc = run(workspace, srv, backend="ollama")
        first, second = srv.chat_requests
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "On 3 March.\n"
    assert "oneOf" in first["format"] and "tools" not in first
    assert any("3 March 2026" in t for t in tool_results(second))


def test_a_constrained_answer_cut_at_the_cap_shows_its_words_not_its_json(workspace: Path) -> None:
    """The token cap ends the answer's JSON mid-string: the person reads the answer up to its
    last whole sentence and the cap note, never ``{"tool": "answer", ...``."""
    (workspace / "harvey.yaml").write_text("tools:\n  mode: constrained\n")
    cut = Capped('{"tool": "answer", "text": "On 3 March 2026. The key is under the bl', 64)
    with FakeOpenAI([cut]) as srv:
        proc = invoke_harvey(
            "run", "When was the boiler serviced?", "--backend", "openai",
            "--base-url", srv.url, cwd=workspace,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "On 3 March 2026.\n\n(cut at 64 tokens)\n"
    assert '"tool"' not in recording(workspace)
