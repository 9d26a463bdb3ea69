"""``recall_turns``: read back, a page at a time, the original turns a summary stands for.

A compaction sends older turns as a summary, which may leave out the detail a
later question needs. ``sessions.db`` keeps every original message, so the
model can ask for turns ``from``–``to`` as they were: the person's words, its
own replies, each tool call and the tool's result. A span longer than the room
left in the prompt comes a page at a time, each page at most what the read
budget allows (the same budget ``read_file`` uses), continued with ``offset``.
Turns are numbered from 1 over the whole session, as in the
``[[compaction: turns A–B …]]`` note.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from harvey.context.budget import estimate_tokens
from harvey.errors import ToolError
from harvey.messages import Message, split_turns
from harvey.tools.registry import ToolContext

# A page when no read budget is known (chunking off), and the bounds of any page, in tokens.
DEFAULT_PAGE_TOKENS = 2_000
MIN_PAGE_TOKENS = 64


def render_turns(turns: Sequence[Sequence[Message]], first: int, limit: int | None = None) -> str:
    """Turns as plain text, numbered from ``first``; each tool result cut to ``limit``
    characters when given (a summary's input), whole otherwise (``recall_turns``)."""
    lines: list[str] = []
    for number, turn in enumerate(turns, start=first):
        lines.append(f"--- turn {number} ---")
        for message in turn:
            text = message.content
            if message.role == "tool":
                if limit is not None and len(text) > limit:
                    text = f"{text[:limit]}… ({len(text) - limit:,} more characters)"
                lines.append(f"tool result ({message.name or 'tool'}): {text}")
                continue
            who = {"user": "user", "assistant": "assistant"}.get(message.role, message.role)
            if text:
                lines.append(f"{who}: {text}")
            for call in message.tool_calls:
                lines.append(f"{who} called {call.name}({call.arguments_json()})")
    return "\n".join(lines)


def _integer(args: dict[str, Any], key: str, default: int | None = None) -> int:
    value = args.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ToolError(f"{key!r} must be a whole number")
    return int(value)


class RecallTurnsTool:
    """The original messages of a span of turns, from ``sessions.db``."""

    name = "recall_turns"
    description = (
        "Read back the original messages of earlier turns of this conversation that were "
        "compacted into a summary (turns are numbered from 1). A long span comes a page "
        "at a time: call again with the offset the result names."
    )
    parameters: dict[str, Any] = {  # noqa: RUF012 (the Tool protocol's instance attribute)
        "type": "object",
        "properties": {
            "from": {"type": "integer", "minimum": 1, "description": "first turn"},
            "to": {"type": "integer", "minimum": 1, "description": "last turn"},
            "offset": {"type": "integer", "minimum": 0, "description": "where the page starts"},
        },
        "required": ["from", "to"],
    }

    def __init__(self, messages: Callable[[str], list[Message]]) -> None:
        """``messages(session_id)`` is every stored message of the session, in order."""
        self._messages = messages

    def run(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        first, last = _integer(args, "from"), _integer(args, "to")
        offset = _integer(args, "offset", 0)
        turns = split_turns(self._messages(ctx.session_id))
        if not turns:
            raise ToolError("this session has no stored turns yet")
        if not 1 <= first <= last <= len(turns):
            raise ToolError(f"turns must satisfy 1 <= from <= to <= {len(turns)}")
        text = render_turns(turns[first - 1 : last], first)
        if not 0 <= offset < len(text):
            raise ToolError(f"offset must be between 0 and {len(text) - 1}")
        budget = ctx.read_budget() if ctx.read_budget is not None else None
        tokens = budget.tokens if budget is not None else DEFAULT_PAGE_TOKENS
        ratio = budget.bytes_per_token if budget is not None else 4
        if tokens < MIN_PAGE_TOKENS:
            raise ToolError("no room left in the context for a page of turns")
        size = max(1, int(tokens * ratio * 0.9))  # characters: a first guess from the ratio
        while True:
            end = min(len(text), offset + size)
            if end < len(text):  # end the page at a line when there is one in its second half
                cut = text.rfind("\n", offset + size // 2, end)
                end = cut + 1 if cut > 0 else end
            page = text[offset:end]
            if size == 1 or estimate_tokens(page, ratio) <= tokens:
                break
            size = max(1, size * 3 // 4)  # wide characters cost more than the guess
        head = f"turns {first}–{last}, characters {offset}–{end} of {len(text)}"
        if end < len(text):
            more = f"recall_turns(from={first}, to={last}, offset={end})"
            return f"{head}; the rest: {more}\n{page}"
        return f"{head} (the end)\n{page}"
