"""Every request of a turn inside the window: tool results of every size fitted to what is
left, several in one turn, and the request counted whole before it is sent (issue 39)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, ClassVar

import pytest

from harvey.chat.turn_room import Room, cut_text, fit_prompt, fit_result
from harvey.context.budget import DEFAULT_MARGIN, estimate_tokens
from harvey.errors import ContextTooLong
from harvey.llm.scripted import Reply
from harvey.messages import Message, ToolCall, ToolResult
from harvey.tools.registry import ToolContext
from tests.chat.conftest import AgentFactory

WINDOW = 2048


def count(text: str) -> int:
    return estimate_tokens(text)


def words(tokens: int) -> str:
    """About ``tokens`` tokens of text, in lines."""
    line = "socket bind listen accept recv send close\n"  # 42 bytes: about 11 tokens
    return line * max(1, tokens * 4 // len(line))


def test_a_result_that_fits_is_kept_whole() -> None:
    call = ToolCall("c1", "search_files", {"pattern": "accept"})
    result = ToolResult("c1", "search_files", "sockets.md:3: accept()")
    assert fit_result(call, result, Room(1000, count)) is result


def test_a_result_far_over_the_room_is_cut_at_a_line_with_a_note() -> None:
    call = ToolCall("c1", "search_files", {"pattern": "a"})
    result = ToolResult("c1", "search_files", words(20_000))
    fitted = fit_result(call, result, Room(1000, count))
    assert count(fitted.content) <= 1000
    kept, note = fitted.content.rsplit("\n\n", 1)
    assert result.content.startswith(kept) and kept.endswith("close")
    assert note.startswith("[cut to fit the context window:")
    assert f"of its {count(result.content):,} tokens shown" in note


def test_a_result_near_the_room_is_cut_only_as_far_as_it_must_be() -> None:
    call = ToolCall("c1", "run_shell", {"command": "cat notes"})
    result = ToolResult("c1", "run_shell", words(900))
    fitted = fit_result(call, result, Room(1000, count))
    assert 600 <= count(fitted.content) <= 1000


def test_a_read_page_cut_says_the_offset_to_read_on_from() -> None:
    text = words(3000)
    call = ToolCall("c1", "read_file", {"path": "sockets.md", "offset": 100})
    fitted = fit_result(call, ToolResult("c1", "read_file", text), Room(1000, count, True))
    kept = fitted.content.rsplit("\n\n", 1)[0]
    assert f"offset={100 + len(kept.encode())}" in fitted.content


def test_with_no_room_left_a_result_is_left_out_and_the_model_told() -> None:
    call = ToolCall("c1", "list_files", {})
    fitted = fit_result(call, ToolResult("c1", "list_files", words(500)), Room(40, count))
    assert fitted.content.startswith("[the result of list_files was left out:")
    assert "40 tokens left" in fitted.content


def test_an_error_stays_an_error_when_cut_or_left_out() -> None:
    call = ToolCall("c1", "run_shell", {"command": "x"})
    result = ToolResult("c1", "run_shell", "error: " + words(5000))
    assert fit_result(call, result, Room(800, count)).content.startswith("error:")
    assert fit_result(call, result, Room(40, count)).content.startswith("error: [the result")
    prompt = [Message("user", "q"), Message("tool", result.content, tool_call_id="c1")]
    fitted = fit_prompt(prompt, extra="", limit=60, count=count, first_cut=1, where="m")
    assert fitted[1].content.startswith("error: [left out to fit the context window")


def test_cut_text_never_exceeds_its_tokens() -> None:
    text = words(5000)
    for tokens in (1, 50, 999, 4000):
        assert count(cut_text(text, tokens, count)) <= tokens


def test_fit_prompt_cuts_the_turns_largest_result_first() -> None:
    prompt = [
        Message("system", "You are Harvey."),
        Message("user", "what is in it?"),
        Message("assistant", "", [ToolCall("a", "x", {}), ToolCall("b", "y", {})]),
        Message("tool", words(300), tool_call_id="a", name="x"),
        Message("tool", words(3000), tool_call_id="b", name="y"),
    ]
    fitted = fit_prompt(prompt, extra="", limit=1500, count=count, first_cut=1, where="m")
    assert fitted[3] == prompt[3]  # the small one is kept whole
    assert "[cut to fit the context window:" in fitted[4].content
    assert sum(count(m.content) + 8 for m in fitted) <= 1500


def test_a_prompt_no_cut_can_save_is_refused_before_it_is_sent() -> None:
    prompt = [Message("system", "s"), Message("user", words(3000))]
    with pytest.raises(ContextTooLong, match="Harvey did not send it"):
        fit_prompt(prompt, extra="", limit=1500, count=count, first_cut=1, where="m")
    # an estimate may be wrong either way: the server has the last word
    assert fit_prompt(prompt, extra="", limit=1500, count=count, first_cut=1, where="m",
                      exact=False) == prompt  # fmt: skip


class EmitTool:
    """A tool whose output is as long as asked: results of every size."""

    name = "emit"
    description = "Print text."
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"tokens": {"type": "integer"}},
        "required": ["tokens"],
    }

    def run(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        return words(int(args["tokens"]))


def emit(tokens: int) -> tuple[str, dict[str, Any]]:
    return ("emit", {"tokens": tokens})


def test_no_request_of_a_turn_goes_over_the_window_whatever_its_tool_results(
    make_agent: AgentFactory, workspace: Path
) -> None:
    """Tiny, near the room, far over it (offloaded, then cut), several in one round and
    more in the next: every request the model gets fits its window less the margin."""
    agent = make_agent(
        [
            Reply(tool_calls=[emit(20), emit(1200), emit(60_000)]),
            Reply(tool_calls=[emit(1500), emit(5)]),
            "Done.",
        ],
        context_window=WINDOW,
    )
    agent.executor.inner.register(EmitTool())  # type: ignore[attr-defined]
    outcome = agent.turn("emit some text")
    assert outcome.reply == "Done."
    client = agent.client
    limit = WINDOW - math.ceil(WINDOW * DEFAULT_MARGIN)
    ratio = agent.budget.bytes_per_token()
    for seen in client.seen:  # type: ignore[attr-defined]
        sent = sum(estimate_tokens(m.content, ratio) for m in seen.messages)
        assert sent <= limit, (sent, limit)
    results = [r.content for r in outcome.tool_results]
    assert results[0] == words(20)  # a tiny result is never touched
    assert any("[cut to fit the context window:" in r or "left out" in r for r in results)
