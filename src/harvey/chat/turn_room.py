"""Every request of a turn inside the model's window: tool results fitted, then a last count.

A turn grows between its requests: each tool result goes into the next
request whole. The read guard keeps one ``read_file`` inside what is left,
but a listing, a search, a shell command, a page of a file or a second and
third result in the same round were added at whatever size they came, and
the embedded model refused the next request as too long (issue 39). Two
steps close that, both counting with the backend's own tokenizer where it
can count (``PromptBudget.counter``), else estimating:

* ``fit_result``: a tool result is fitted, as it arrives, to what the turn
  has left before its next request (the window less the margin for the
  reply, the system prompt, what is sent about the tools and the turn so
  far; older history gives way to the turn in progress, ``history_fit``).
  One that does not fit is cut at a line, with a note that says how much was
  shown and how to read the rest; with no room left it is left out, and the
  note says so.
* ``fit_prompt``: the request about to be sent is counted whole; over the
  window less the margin, the turn's largest tool results are cut until it
  fits, so a request the backend refuses as too long cannot be sent. What
  no cut can save (the person's own message is longer than the window) is
  refused here, in one line, before the model is asked.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from harvey.errors import ContextTooLong
from harvey.messages import Message, ToolCall, ToolResult

log = logging.getLogger(__name__)

# A result may take at most this share of what the turn has left: the next round's
# reply and a further call's result still need a little room.
RESULT_SHARE = 0.8
# Below this many tokens of room a result is left out whole: a few words of it help no one.
MIN_SHOWN_TOKENS = 24
# What the note after a cut result costs, at most (it is counted before the cut).
NOTE_TOKENS = 80
# Under this share of the limit by the estimate, a text is not counted: the estimate would
# have to be off by half (the budget's own rule, ``prompt_budget.COUNT_ABOVE_SHARE``).
QUICK_SHARE = 0.5
# Chat templates frame each message: counted here where the estimate has no template.
FRAMING_TOKENS = 8


Count = Callable[[str], int]


class Room:
    """What a turn may still send: ``tokens`` for new content, measured with ``count``.

    ``exact`` says whether ``count`` is the backend's own tokenizer (a function: asked
    only when needed, since finding out may probe a server); ``estimate`` is the cheap
    estimate that decides alone while a text is far from the limit."""

    def __init__(
        self,
        tokens: int,
        count: Count,
        exact: bool | Callable[[], bool] = False,
        estimate: Count | None = None,
    ) -> None:
        self.tokens = tokens
        self.count = count
        self._exact = exact
        self.estimate = estimate or count

    @property
    def exact(self) -> bool:
        return self._exact() if callable(self._exact) else self._exact


def cut_text(text: str, tokens: int, count: Count) -> str:
    """The longest start of ``text`` (ending at a line where one is near) counting at most
    ``tokens``; ``""`` when not even that fits."""
    if tokens <= 0 or not text:
        return ""
    if count(text) <= tokens:
        return text
    low, high = 0, len(text)  # the answer lies in [low, high): text[:low] fits
    # binary search over characters, a dozen counts for 10,000 characters
    while high - low > 16:
        mid = (low + high) // 2
        if count(text[:mid]) <= tokens:
            low = mid
        else:
            high = mid
    kept = text[:low]
    line_end = kept.rfind("\n")
    if line_end >= len(kept) * 3 // 4:  # a whole line, when that loses little
        kept = kept[:line_end]
    return kept


def _note(call: ToolCall, shown: int, total: int, kept: str) -> str:
    """How much of a result was shown, and how the model can get the rest."""
    head = f"[cut to fit the context window: {shown:,} of its {total:,} tokens shown"
    if call.name == "read_file":
        offset = call.arguments.get("offset", 0)
        start = offset if isinstance(offset, int) and offset >= 0 else 0
        resume = start + len(kept.encode("utf-8", errors="replace"))
        return f"{head}; to read on, call read_file with offset={resume} and a smaller limit]"
    return f"{head}; ask for less (a narrower pattern, a smaller limit, one folder)]"


def fit_result(call: ToolCall, result: ToolResult, room: Room) -> ToolResult:
    """``result`` as it fits in ``RESULT_SHARE`` of ``room``: whole, cut with a note,
    or replaced by a note when no useful part fits."""
    allowed = int(room.tokens * RESULT_SHARE) - FRAMING_TOKENS
    content = result.content
    if room.estimate(content) <= allowed * QUICK_SHARE:
        return result  # it would have to be off by half not to fit: nothing to count
    if call.name == "read_file" and not room.exact:
        return result  # the read guard measured it at its file type's ratio: a finer estimate
    total = room.count(content)
    if total <= allowed:
        return result
    if allowed - NOTE_TOKENS < MIN_SHOWN_TOKENS:
        left = max(0, room.tokens)
        text = (
            f"[the result of {call.name} was left out: its {total:,} tokens do not fit "
            f"the {left:,} tokens left in the context window; answer with what you have]"
        )
        if content.startswith("error:"):
            text = f"error: {text}"
        return ToolResult(result.call_id, result.name, text)
    kept = cut_text(content, allowed - NOTE_TOKENS, room.count)
    shown = room.count(kept)
    text = f"{kept}\n\n{_note(call, shown, total, kept)}"
    if content.startswith("error:") and not kept.startswith("error:"):
        text = f"error: {text}"
    return ToolResult(result.call_id, result.name, text)


def prompt_tokens(messages: Sequence[Message], extra: str, room_count: Count) -> int:
    """A request's tokens: every message's text with its framing, and ``extra`` (what is
    sent about the tools)."""
    from harvey.context.tokens import message_text

    texts = [message_text(m) for m in messages]
    return sum(room_count(t) + FRAMING_TOKENS for t in texts) + room_count(extra)


def fit_prompt(
    messages: list[Message],
    *,
    extra: str,
    limit: int,
    count: Count,
    first_cut: int,
    where: str,
    exact: bool | Callable[[], bool] = True,
    estimate: Count | None = None,
) -> list[Message]:
    """``messages`` fitted to ``limit`` tokens (with ``extra``): the tool results from
    index ``first_cut`` on (the turn's own) are cut, largest first, until the request
    fits. When it cannot, raises ``ContextTooLong`` (``where`` names the model) if
    ``count`` is the backend's own (``exact``); an estimate may be wrong either way,
    so the request is then sent as cut and the server has the last word. While the
    ``estimate`` is under ``QUICK_SHARE`` of the limit, nothing is counted."""
    if estimate is not None and prompt_tokens(messages, extra, estimate) <= limit * QUICK_SHARE:
        return messages
    used = prompt_tokens(messages, extra, count)
    if used <= limit:
        return messages
    fitted = list(messages)
    order = sorted(
        (i for i in range(first_cut, len(fitted)) if fitted[i].role == "tool"),
        key=lambda i: -count(fitted[i].content),
    )
    for i in order:
        over = used - limit
        message = fitted[i]
        size = count(message.content)
        keep = max(0, size - over - NOTE_TOKENS)
        kept = cut_text(message.content, keep, count) if keep >= MIN_SHOWN_TOKENS else ""
        note = (
            f"[cut to fit the context window: {count(kept):,} of its {size:,} tokens shown]"
            if kept
            else f"[left out to fit the context window: {size:,} tokens]"
        )
        text = f"{kept}\n\n{note}" if kept else note
        if message.content.startswith("error:") and not text.startswith("error:"):
            text = f"error: {text}"  # a failure cut short is still said to be one
        fitted[i] = replace(message, content=text)
        used = prompt_tokens(fitted, extra, count)
        if used <= limit:
            return fitted
    if not (exact() if callable(exact) else exact):
        log.info("the prompt is estimated at %d tokens, over %d: sent as cut", used, limit)
        return fitted
    raise ContextTooLong(
        f"the prompt is about {used:,} tokens and {where} takes {limit:,} (its window less "
        "room for the reply): Harvey did not send it",
        used,
        limit,
    )


def tools_text(mode: str, schemas: Sequence[dict[str, Any]], offer: bool = True) -> str:
    """What a round's request carries about the tools besides its messages: the
    description ``ToolRounds`` adds to the system prompt (``text``, ``constrained``),
    counted like any text. Native schemas go beside the messages, where each server
    counts them its own way: the reply's margin and ``mcp.schema_budget`` cover them."""
    if mode not in ("text", "constrained") or not offer or not schemas:
        return ""
    from harvey.chat.calls.tool_choice import describe_tools

    return describe_tools(schemas, constrained=mode == "constrained")
