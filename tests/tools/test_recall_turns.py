"""``recall_turns`` gives back the original turns, a page at a time within the read budget."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvey.context.budget import ReadBudget, estimate_tokens
from harvey.errors import ToolError
from harvey.messages import Message, ToolCall
from harvey.tools.recall_turns import RecallTurnsTool, render_turns
from harvey.tools.registry import ToolContext


def conversation(turns: int, width: int = 300) -> list[Message]:
    messages: list[Message] = []
    for n in range(1, turns + 1):
        messages.append(Message("user", f"question {n} " + "é word " * (width // 7)))
        call = ToolCall(f"c{n}", "read_file", {"path": f"f{n}.md"})
        messages.append(Message("assistant", "", [call]))
        messages.append(
            Message("tool", f"content of f{n} " * 20, tool_call_id=f"c{n}", name="read_file")
        )
        messages.append(Message("assistant", f"answer {n}"))
    return messages


def context(tokens: int | None) -> ToolContext:
    budget = None if tokens is None else (lambda: ReadBudget(tokens))
    return ToolContext(workspace=Path("/nonexistent"), session_id="s1", read_budget=budget)


def read_all(tool: RecallTurnsTool, ctx: ToolContext, first: int, last: int) -> list[str]:
    pages: list[str] = []
    offset = 0
    while True:
        result = tool.run(ctx, {"from": first, "to": last, "offset": offset})
        head, _, page = result.partition("\n")
        pages.append(page)
        if "(the end)" in head:
            return pages
        offset = int(head.rsplit("offset=", 1)[1].rstrip(")"))


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.integers(0, 5), st.integers(64, 600))
def test_pages_join_into_the_originals_and_each_fits_the_budget(
    first: int, more: int, tokens: int
) -> None:
    messages = conversation(8)
    last = min(8, first + more)
    tool = RecallTurnsTool(lambda session: messages if session == "s1" else [])
    pages = read_all(tool, context(tokens), first, last)
    from harvey.messages import split_turns

    assert "".join(pages) == render_turns(split_turns(messages)[first - 1 : last], first)
    assert all(estimate_tokens(page) <= tokens for page in pages)
    assert len(pages) > 1 or estimate_tokens("".join(pages)) <= tokens


def test_the_originals_come_back_with_calls_and_results() -> None:
    tool = RecallTurnsTool(lambda _session: conversation(3))
    result = tool.run(context(None), {"from": 2, "to": 2})
    assert result.startswith("turns 2–2, characters 0–")
    assert "--- turn 2 ---" in result and "question 2 " in result
    assert 'assistant called read_file({"path":"f2.md"})' in result
    assert "tool result (read_file): content of f2" in result and "answer 2" in result
    assert "question 1 " not in result and "question 3 " not in result


@pytest.mark.parametrize(
    "args",
    [{"from": 0, "to": 1}, {"from": 3, "to": 2}, {"from": 1, "to": 9}, {"from": "1", "to": 2},
     {"from": 1, "to": 2, "offset": 10**7}, {"from": True, "to": 2}],
)  # fmt: skip
def test_bad_spans_are_tool_errors(args: dict[str, object]) -> None:
    tool = RecallTurnsTool(lambda _session: conversation(3))
    with pytest.raises(ToolError):
        tool.run(context(None), args)


def test_no_room_left_is_a_tool_error_not_an_overflow() -> None:
    tool = RecallTurnsTool(lambda _session: conversation(3))
    with pytest.raises(ToolError, match="no room"):
        tool.run(context(10), {"from": 1, "to": 3})
