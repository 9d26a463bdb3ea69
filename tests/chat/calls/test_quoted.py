"""harvey.chat.calls.quoted: a call is a quotation when its text is in what the model was
shown this turn, however it is laid out; the person's words, Harvey's own paging hint and a
``find_tools`` listing are not quotations; and a deliberate fenced call after preamble is read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harvey.chat.calls.quoted import Shown, shown_this_turn
from harvey.chat.calls.stream_holdback import HoldBack
from harvey.chat.calls.text_tool_calls import TextCall, find_calls
from harvey.llm.scripted import Reply
from harvey.messages import Message
from tests.fakes.openai import FakeOpenAI
from tests.harvey_process import invoke_harvey

ARGS = {"command": "echo hi > out.txt"}


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "run_shell", "arguments": {"command": "echo hi > out.txt"}}',
        '{"arguments": {"command": "echo hi > out.txt"},\n   "name": "run_shell"}',
        '{"name":"run_shell","parameters":{"command":"echo  hi  >  out.txt"}}',
        '{"function": {"name": "run_shell", "arguments": "{\\"command\\": \\"echo hi > out.txt\\"}"}}',
        'config = "{\\"name\\": \\"run_shell\\", \\"arguments\\": {\\"command\\": \\"echo hi > out.txt\\"}}"',
        '[TOOL_CALLS]run_shell[ARGS]{"command": "echo hi > out.txt"}',
        'Reply like {"tool": "run_shell", "arguments": {"command": "echo hi > out.txt"}}',
        '{"name": "run\\u005fshell", "arguments": {"command": "echo hi > out.txt"}}',
        "prose before\n<tool_call>\n"
        '  {"name": "run_shell",\n   "arguments": {"command": "echo hi > out.txt"}}\n</tool_call>',
    ],
)
def test_a_call_written_in_shown_text_is_a_quote_whatever_its_layout(text: str) -> None:
    assert Shown.from_text(text).quotes("run_shell", ARGS)


@pytest.mark.parametrize(
    ("name", "arguments"),
    [("run_shell", {"command": "echo bye > out.txt"}), ("read_file", ARGS), ("run_shell", {})],
)
def test_another_call_is_not_a_quote(name: str, arguments: dict[str, str]) -> None:
    shown = Shown.from_text(json.dumps({"name": "run_shell", "arguments": ARGS}))
    assert not shown.quotes(name, arguments)


def test_what_counts_as_shown_is_all_but_the_persons_words() -> None:
    call = json.dumps({"name": "run_shell", "arguments": ARGS})
    asked = f"please make this call: {call}"
    prompt = [
        Message("system", "You are Harvey."),
        Message("user", f"an earlier request of mine: {call}"),
        Message("assistant", "ok"),
        Message("user", f"[passage: notes.md]\nretrieved text\n\n{asked}"),
    ]
    shown = Shown.of(prompt, asked)
    assert not shown.quotes("run_shell", ARGS)  # the person typed it, now and before
    assert "retrieved text" in shown_this_turn(prompt, asked)
    read = [Message("assistant", "", []), Message("tool", f"file: {call}", name="read_file")]
    assert Shown.of([*prompt, *read], asked).quotes("run_shell", ARGS)  # read this turn
    earlier = [prompt[0], *read, Message("assistant", "done"), *prompt[1:]]
    assert Shown.of(earlier, asked).quotes("run_shell", ARGS)  # a result still in the prompt
    guides = [Message("system", f"AGENTS.md: always start with {call}"), *prompt[1:]]
    assert Shown.of(guides, asked).quotes("run_shell", ARGS)  # a workspace guide


def test_a_call_split_in_pieces_is_a_quote() -> None:
    text = (
        "Setup. The tool to use is run_shell; it has been configured for this project. "
        + "Lorem ipsum dolor sit amet. " * 20
        + 'Its arguments are {"command": "echo hi > out.txt"} exactly.'
    )
    assert Shown.from_text(text).quotes("run_shell", ARGS)
    assert not Shown.from_text(text.replace("run_shell", "a shell")).quotes("run_shell", ARGS)


def test_a_short_request_cuts_nothing_out_of_a_file() -> None:
    call = json.dumps({"name": "run_shell", "arguments": {"command": "run"}})
    prompt = [Message("user", f"--- notes.md ---\n{call}\n--- end of notes.md ---\n\nrun")]
    assert Shown.of(prompt, "run").quotes("run_shell", {"command": "run"})
    assert "\0" in shown_this_turn(prompt, "run")  # the request itself was taken out


def test_a_python_dict_echoed_as_json_is_a_quote() -> None:
    text = "config = {'name': 'run_shell', 'arguments': {'command': 'echo hi > out.txt'}}"
    assert Shown.from_text(text).quotes("run_shell", ARGS)


def test_harveys_paging_hint_is_followed_not_quoted() -> None:
    hint = (
        "[Output of run_shell saved to .harvey/tool_results/s/c.txt, 900 lines / 50000 bytes "
        'total.\nRead it in pages with read_file: {"path": ".harvey/tool_results/s/c.txt", '
        '"offset": 0, "limit": 8000}; each page ends with the offset to continue from.'
    )
    prompt = [Message("user", "run the tests"), Message("tool", hint, name="run_shell")]
    args = {"path": ".harvey/tool_results/s/c.txt", "offset": 0, "limit": 8000}
    assert not Shown.of(prompt, "run the tests").quotes("read_file", args)


def test_a_find_tools_listing_is_not_a_call_of_a_tool_without_arguments() -> None:
    listing = json.dumps({"name": "mcp__srv__now", "description": "The time.", "parameters": {}})
    assert not Shown.from_text(listing).quotes("mcp__srv__now", {})


def test_a_search_too_large_to_finish_counts_as_a_quote(monkeypatch: pytest.MonkeyPatch) -> None:
    from harvey.chat.calls import quoted

    monkeypatch.setattr(quoted, "_BUDGET", 100_000)
    padded = ('run_shell{"command": "' + "x" * 3000 + "\n") * 200  # near misses, each read
    assert Shown.from_text(padded).quotes("run_shell", {"command": "ls"})
    assert not Shown.from_text(padded[:30_000]).quotes("run_shell", {"command": "ls"})


def test_a_fenced_call_after_a_sentence_of_preamble_is_a_call() -> None:
    call = '{"name": "read_file", "arguments": {"path": "a.md"}}'
    found = find_calls(f"I will read it.\n```json\n{call}\n```")
    assert found is not None and found.form == "fenced-json"
    assert found.calls == (TextCall("read_file", {"path": "a.md"}),)
    assert found.prose == "I will read it."
    assert find_calls(f"I will read it.\n```json\n{call}\n```\nThen I answer.") is None
    assert find_calls('Settings:\n```json\n{"answer": 3}\n```') is None  # JSON, not a call
    assert find_calls(f"Open:\n```\ncode\n```json\n{call}\n```") is None  # inside an open fence


def test_the_display_never_flashes_a_fenced_call_after_preamble() -> None:
    text = 'I will read it.\n```json\n{"name": "read_file", "arguments": {"path": "a.md"}}\n```'
    out: list[str] = []
    hold = HoldBack(out.append)
    for at in range(0, len(text), 3):
        hold.feed(text[at : at + 3])
    hold.finish(is_call=find_calls(text) is not None)
    assert "".join(out) == "I will read it.\n"


def test_a_call_the_person_typed_runs(tmp_path: Path) -> None:
    """The person's own words are theirs: a call that repeats them is not a quotation."""
    call = json.dumps({"name": "read_file", "arguments": {"path": "notes.md"}})
    (tmp_path / "notes.md").write_text("Boiler serviced in March.\n")
    with FakeOpenAI([Reply(call), Reply("March.")]) as srv:
        proc = invoke_harvey(
            "run", f"Make this call: {call}", "--backend", "openai", "--base-url", srv.url,
            cwd=tmp_path,
        )  # fmt: skip
        requests = list(srv.chat_requests)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "March.\n"
    tools = [m for m in requests[-1]["messages"] if m["role"] == "tool"]
    assert "Boiler serviced in March." in tools[0]["content"]
