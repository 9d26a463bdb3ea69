"""Fit a long conversation into the model's window: the newest whole turns, a note for the rest.

A resumed session (``--continue``, ``--continue-file``) can hold far more history
than the model's context window; sending all of it put a 10 MB request in front
of an 8k model. When the history does not fit in what the budget leaves for it,
the oldest turns are left out of what the model is *sent* — ``sessions.db`` and
the session file keep everything — and a short system note tells the model that
earlier messages exist. Between turns, ``chat/compaction.py`` first tries to
summarise the oldest turns instead (a recorded, stored summary, once, not a
call per turn); this exact leave-out is what is left when the model cannot
summarise, and the safety net inside a turn, whose tool rounds are never
compacted (the prefix of a turn's requests must not move).

Turns are kept whole: a turn starts at a user message and holds the assistant's
tool calls and their results, so a tool call is never sent without its result
(servers reject that) nor a result without its call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harvey.context.budget import BYTES_PER_TOKEN, estimate_tokens, serialize_history
from harvey.messages import Message, split_turns

OMITTED_NOTE = "{n} earlier messages were left out to fit the context window."
# Once history has to be cut, it is cut to this share of what is left for it,
# not to the brim: a prompt packed full would leave the turn itself no room for
# a file or a tool result, and the very next round would have to cut again.
TRIMMED_HISTORY_SHARE = 0.5
# The estimator counts message contents; each message also costs its role and
# framing on the wire. Charged only when cutting, where many small messages
# could otherwise add up past the window unnoticed.
MESSAGE_OVERHEAD_TOKENS = 8


@dataclass(frozen=True)
class FittedHistory:
    """What of the history goes into the prompt, and what was left out."""

    messages: list[Message]
    omitted_messages: int = 0
    omitted_turns: int = 0
    # the system note that stands in for the left-out messages (None if none were)
    note: Message | None = None


def omitted_notice(fitted: FittedHistory, model: str, window: int) -> str:
    """The one line the person sees when history was left out of the prompt."""
    return (
        f"{fitted.omitted_messages} earlier messages ({fitted.omitted_turns} turns) were left "
        f"out of the prompt: the conversation does not fit {model}'s {window:,}-token context "
        "window (sessions.db keeps them all)"
    )


def turn_tokens(turn: Sequence[Message], bytes_per_token: float = BYTES_PER_TOKEN) -> int:
    """A turn's estimated cost in a cut prompt: contents plus per-message framing."""
    content = estimate_tokens(serialize_history(turn), bytes_per_token)
    return content + MESSAGE_OVERHEAD_TOKENS * len(turn)


def fit_history(
    history: Sequence[Message], budget: int, bytes_per_token: float = BYTES_PER_TOKEN
) -> FittedHistory:
    """The newest whole turns of ``history`` that fit in ``budget`` tokens.

    ``budget`` is what the prompt has left for history once the system prompt,
    injected text, the turn in progress and the reply margin are counted (see
    ``PromptBudget.fitted_history``). A history that fits is returned whole; otherwise
    the oldest turns are dropped until the rest, with the note, fits in
    ``TRIMMED_HISTORY_SHARE`` of the budget.
    """
    if estimate_tokens(serialize_history(history), bytes_per_token) <= budget:
        return FittedHistory(list(history))
    note = estimate_tokens(OMITTED_NOTE.format(n=len(history)), bytes_per_token)
    allowance = int(max(0, budget) * TRIMMED_HISTORY_SHARE) - note - MESSAGE_OVERHEAD_TOKENS
    turns = split_turns(history)
    kept = 0
    used = 0
    for turn in reversed(turns):
        cost = turn_tokens(turn, bytes_per_token)
        if used + cost > allowance:
            break
        used += cost
        kept += 1
    kept_turns = turns[len(turns) - kept :]
    messages = [m for turn in kept_turns for m in turn]
    omitted = len(history) - len(messages)
    note_message = Message("system", OMITTED_NOTE.format(n=omitted)) if omitted else None
    return FittedHistory(messages, omitted, len(turns) - kept, note_message)
