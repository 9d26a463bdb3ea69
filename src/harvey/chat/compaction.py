"""Compaction: the oldest turns summarised by the model, recorded, and reversible.

When a conversation will not fit the model's window (a long REPL session, a
resumed one, ``harvey run --continue``), the oldest whole turns are summarised
by the model and the summary replaces them in what is sent; the newest turns
are kept as they were. ``/compact [INSTRUCTION]`` does it on demand.

Why it is safe to do:

* nothing is lost: ``sessions.db`` keeps every original message and a row
  saying which turns the summary stands for (``session/compactions.py``), so a
  resumed session sends the summary and ``recall_turns`` reads the originals;
* it is audited: the turn it happened in gets a ``[[compaction: turns A–B, N
  tokens → M tokens, model=MODEL — ok|error: …]]`` note and the summary as
  HARVEY's line (``docs/FOUNTAIN_FORMAT.md``);
* it never overflows: the summary request is built to fit the window, and
  turns larger than the window are summarised group by group, then joined by one
  call sized to the window;
* it keeps the model's cache: it runs only between turns, and the summary goes
  at the head of the history, so every later request extends the first one
  after it byte for byte (a compaction is the one place the prefix breaks);
* it fails exactly: when the model cannot summarise, nothing changes and the
  history is cut to its newest turns with today's notice (``history_fit``).
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harvey.chat.clients import split_mention
from harvey.chat.history_fit import turn_tokens
from harvey.context.budget import budget_report, estimate_tokens, serialize_history
from harvey.errors import BackendError, Cancelled, HarveyError, StoreError, UsageError
from harvey.llm.base import chat
from harvey.messages import Message, split_turns
from harvey.protocols import LLMClient
from harvey.session.compactions import (
    StoredCompaction,
    compacted,
    summarised_span,
    summary_messages,
)
from harvey.session.records import CompactionNote, shorten
from harvey.tools.recall_turns import render_turns

if TYPE_CHECKING:
    from harvey.chat.agent import Agent
    from harvey.session.store import SessionStore

log = logging.getLogger(__name__)

KEEP_SHARE = 0.5  # of the room left for history: the newest turns, kept as they were
SUMMARY_SHARE = 0.25  # of that room: the most the summary may take
ON_DEMAND_KEEP_TURNS = 2  # /compact keeps at most this many newest turns
# After a failed summary, the next automatic try waits this many turns: a model that
# cannot summarise (or times out) must not cost a failing call before every turn.
RETRY_AFTER_TURNS = 3
_failed_at: weakref.WeakKeyDictionary[Agent, int] = weakref.WeakKeyDictionary()
TOOL_RESULT_CHARS = 1_500  # a tool result's share of the summary's input
SUMMARISER = (
    "You summarise the earlier part of a conversation between a user and an assistant "
    "working in the user's workspace, so the conversation can go on without it. Keep "
    "what later turns may need: the user's goals and decisions, facts and names found, "
    "files read or changed, commands run and their outcomes, open questions. Write "
    "plain prose or short bullet points, no preamble."
)


@dataclass(frozen=True)
class _Plan:
    """Which turns to summarise and how much room the summary has."""

    summarised: list[list[Message]]
    kept: list[Message]
    first: int  # original turn numbers the summary will stand for
    last: int
    covered: int  # original messages the summary will stand for, from the start
    summary_tokens: int
    on_demand: bool = False  # /compact: a person asked, so a long run may be asked about


def resumed_history(store: SessionStore, session_id: str) -> list[Message]:
    """A stored session as it is sent: its newest summary, then the turns after it."""
    found = store.compactions(session_id)
    return compacted(store.messages(session_id), found[-1] if found else None)


def compact_if_needed(
    agent: Agent, user_text: str = "", cancel: threading.Event | None = None
) -> CompactionNote | None:
    """Before a turn: compact when the history and ``user_text`` will not fit.

    The one call a front end makes before ``Agent.turn`` (the REPL, ``harvey run
    --continue``). The note goes into the next turn's scene. Returns None when
    everything fits or nothing can be summarised (the turn then cuts as it always did).
    """
    route, text = split_mention(user_text)
    client = agent.clients.resolve(route) if route else agent.client
    pending = [Message("user", text)] if text else []
    if not agent.budget.snapshot(client).fitted_history(pending).omitted_messages:
        return None
    turns = len(split_turns(agent.history))
    failed = _failed_at.get(agent)
    if failed is not None and turns < failed + RETRY_AFTER_TURNS:
        return None  # the leave-out goes on meanwhile
    plan = _plan(agent, client, pending, on_demand=False)
    if plan is None:
        return None
    note = _run(agent, client, plan, "", cancel)
    if note.ok:
        _failed_at.pop(agent, None)
        agent.ui.warn(_told(note, client))
    else:
        _failed_at[agent] = turns
        agent.ui.warn(
            f"could not summarise turns {note.first_turn}–{note.last_turn} ({note.status}); "
            "the oldest turns are left out of the prompt instead"
        )
    agent.turns.pending_compaction = note
    return note


def compact(agent: Agent, instruction: str = "", cancel: threading.Event | None = None) -> str:
    """``/compact [INSTRUCTION]``: summarise all but the newest turns now; one line to show.

    Recorded as a scene of its own. Raises ``UsageError`` when there is nothing to
    summarise; a model that fails leaves the history as it was (and says so).
    """
    client = agent.client
    plan = _plan(agent, client, [], on_demand=True)
    if plan is None:
        raise UsageError("nothing to compact: the conversation has no older turns to summarise")
    note = _run(agent, client, plan, instruction, cancel)
    agent.turns.compaction(client, note)
    if not note.ok:
        raise UsageError(
            f"could not compact turns {note.first_turn}–{note.last_turn}: "
            f"{note.status.removeprefix('error: ')}"
        )
    return _told(note, client)


def _plan(
    agent: Agent, client: LLMClient, pending: Sequence[Message], *, on_demand: bool
) -> _Plan | None:
    history = agent.history
    turns = split_turns(history)
    snap = agent.budget.snapshot(client)
    room = budget_report(
        snap.window,
        history=list(pending),
        system_prompt=snap.system_prompt,
        injected=snap.injected + snap.turn_texts,
        bytes_per_token=snap.bytes_per_token,
    ).remaining
    kept = 0
    used = 0
    for turn in reversed(turns[1:]):  # the oldest turn is always summarised
        cost = turn_tokens(turn, snap.bytes_per_token)
        if used + cost > room * KEEP_SHARE or (on_demand and kept >= ON_DEMAND_KEEP_TURNS):
            break
        used += cost
        kept += 1
    summarised = turns[: len(turns) - kept]
    span = summarised_span(history)
    done = span[1] if span is not None else 0  # original turns the head summary covers
    fresh = len(summarised) - (1 if span is not None else 0)
    if fresh < 1:
        return None  # only the summary itself is old: nothing new to summarise
    kept_messages = [m for turn in turns[len(turns) - kept :] for m in turn]
    covered, last = _covered(agent, kept_messages, done + fresh)
    allowance = int(room * SUMMARY_SHARE)
    if allowance < 32:
        return None
    return _Plan(summarised, kept_messages, 1, last, covered, allowance, on_demand)


def _covered(agent: Agent, kept: list[Message], fallback_last: int) -> tuple[int, int]:
    """How many original messages (and turns) lie before ``kept``, counted in sessions.db:
    the truth a resumed session and ``recall_turns`` go by."""
    store = agent.store
    if store is None:
        return 0, fallback_last
    try:
        originals = store.messages(agent.session_id) + list(agent._unstored)
    except StoreError:
        return 0, fallback_last
    covered = max(0, len(originals) - len(kept))
    return covered, len(split_turns(originals[:covered])) or fallback_last


def _run(
    agent: Agent,
    client: LLMClient,
    plan: _Plan,
    instruction: str,
    cancel: threading.Event | None,
) -> CompactionNote:
    before = sum(turn_tokens(t, agent.budget.bytes_per_token(client)) for t in plan.summarised)
    try:
        summary, by = _checked(agent, client, plan, instruction, cancel)
    except Cancelled:
        raise
    except HarveyError as exc:
        status = shorten(f"error: {' '.join(str(exc).split())}", 200)
        return CompactionNote(plan.first, plan.last, before, 0, client.model, status)
    head = summary_messages(plan.first, plan.last, summary)
    after = turn_tokens(head, agent.budget.bytes_per_token(client))
    agent.history[:] = head + plan.kept  # in place: the budget reads this list
    row = StoredCompaction(
        plan.first, plan.last, plan.covered, summary, by, before, after, instruction
    )
    if agent.store is not None and plan.covered:
        try:
            agent.store.add_compaction(agent.session_id, row)
        except StoreError as exc:
            agent.ui.warn(f"the summary was not saved (a resumed session sends the turns): {exc}")
    return CompactionNote(plan.first, plan.last, before, after, by, "ok", summary)


def _told(note: CompactionNote, client: LLMClient) -> str:
    by = client.model if note.model == client.model else "quoted from the conversation"
    return (
        f"compacted turns {note.first_turn}–{note.last_turn} into a summary "
        f"({note.tokens_before:,} → {note.tokens_after:,} tokens, {by}); "
        "sessions.db keeps the originals and recall_turns reads them back"
    )


def _checked(
    agent: Agent,
    client: LLMClient,
    plan: _Plan,
    instruction: str,
    cancel: threading.Event | None,
) -> tuple[str, str]:
    """The summary and who made it. A small model's is built from the conversation, no
    model asked; a larger model's must be in the conversation (``grounded_summary``), else
    the built one stands in for it, and the person is told."""
    from harvey.analysis.sizes import is_small
    from harvey.chat.grounded_summary import (
        BUILT_BY,
        built_summary,
        conversation_text,
        grounded,
    )

    chars = int(plan.summary_tokens * agent.budget.bytes_per_token(client) * 0.8)
    if is_small(client.model):
        return built_summary(plan.summarised, chars, plan.first), BUILT_BY
    summary = _summarise(agent, client, plan, instruction, cancel)
    check = grounded(summary, conversation_text([*plan.summarised, plan.kept]))
    if check.ok:
        return summary, client.model
    agent.ui.warn(
        f"{client.model}'s summary is not in the conversation ({check.said()}); "
        "the summary quotes the conversation instead"
    )
    return built_summary(plan.summarised, chars, plan.first), BUILT_BY


def _summarise(
    agent: Agent,
    client: LLMClient,
    plan: _Plan,
    instruction: str,
    cancel: threading.Event | None,
) -> str:
    """One request when the turns fit the window, the analysis engine when they do not."""
    ratio = agent.budget.bytes_per_token(client)
    window = agent.budget.capabilities(client).context_window
    ask = _ask(plan, instruction)
    text = render_turns(plan.summarised, 1, TOOL_RESULT_CHARS)
    prompt = [Message("system", SUMMARISER), Message("user", f"{text}\n\n{ask}")]
    room = budget_report(window, bytes_per_token=ratio).remaining - plan.summary_tokens
    if estimate_tokens(serialize_history(prompt), ratio) <= room:
        result = chat(client, prompt, None, None, cancel)
        if cancel is not None and cancel.is_set():
            raise Cancelled("cancelled")
        summary = result.text.strip()
    else:
        summary = _analysed(agent, client, plan, ask, cancel)
    if not summary:
        raise BackendError("the model returned an empty summary")
    return _fitted(summary, plan.summary_tokens, ratio)


def _ask(plan: _Plan, instruction: str) -> str:
    words = max(20, int(plan.summary_tokens * 0.6))
    extra = f" {instruction.strip()}" if instruction.strip() else ""
    return f"Summarise the conversation above in at most {words} words.{extra}"


def _fitted(summary: str, tokens: int, ratio: float) -> str:
    """The summary within its room: cut at its last whole sentence when the model ran long
    (the originals stay one ``recall_turns`` away)."""
    if estimate_tokens(summary, ratio) <= tokens:
        return summary
    cut = summary[: max(1, int(tokens * ratio * 0.8))]
    end = max(cut.rfind(". "), cut.rfind(".\n"), cut.rfind("\n"))
    return (cut[: end + 1] if end > len(cut) // 2 else cut).rstrip() + " (summary cut to fit)"


def _groups(plan: _Plan, size: int) -> list[str]:
    """The turns as transcript pieces of at most ``size`` bytes, whole turns kept together
    where they fit."""
    chunks: list[str] = []
    current = ""
    for number, turn in enumerate(plan.summarised, start=1):
        text = render_turns([turn], number, TOOL_RESULT_CHARS)
        pieces = [text[i : i + size] for i in range(0, len(text), size)] or [""]
        for piece in pieces:
            if current and len(current) + len(piece) > size:
                chunks.append(current)
                current = ""
            current = f"{current}\n{piece}" if current else piece
    if current:
        chunks.append(current)
    return chunks


def _analysed(
    agent: Agent,
    client: LLMClient,
    plan: _Plan,
    ask: str,
    cancel: threading.Event | None,
) -> str:
    """Turns larger than the window: a summary of each group of whole turns (each group
    well inside the window, through ``analysis.map_calls``), then one call that joins
    them, sized to the window (when even the parts do not fit, they are joined as they
    are and cut to the summary's room). A conversation is the model's own words, not a
    document to quote: this is a summary, not an analysis with evidence. More groups
    than ``chunking.max_chunks`` are asked about first on ``/compact``, as ``harvey
    analyze`` asks; before a turn they are not made (the leave-out takes over, with its
    notice)."""
    from harvey.analysis.map_calls import map_calls

    window = agent.budget.capabilities(client).context_window
    ratio = agent.budget.bytes_per_token(client)
    size = max(500, int(window * 0.4 * ratio))  # bytes of transcript per map call
    chunks = _groups(plan, size)
    limit = agent.settings.chunking.max_chunks
    if len(chunks) > limit and not plan.on_demand:  # never a question in the way of a prompt
        raise UsageError(
            f"{len(chunks)} summary calls are more than max_chunks ({limit}); /compact asks"
        )
    if len(chunks) > limit and not agent.ui.confirm(
        f"Summarising turns {plan.first}–{plan.last} takes {len(chunks)} model calls, "
        f"more than max_chunks ({limit}). Make them?"
    ):
        raise UsageError(f"{len(chunks)} summary calls were declined")

    def summarise(text: str) -> str:
        prompt = [Message("system", SUMMARISER), Message("user", f"{text}\n\n{ask}")]
        return chat(client, prompt, None, None, cancel).answer

    parts: list[str] = []
    for text, err in map_calls(client, chunks, summarise, cancel=cancel):
        if err is not None:
            raise err
        parts.append((text or "").strip())
    joined = "\n\n".join(p for p in parts if p)
    join = [
        Message("system", SUMMARISER),
        Message(
            "user", f"Summaries of consecutive parts of the conversation:\n\n{joined}\n\n{ask}"
        ),
    ]
    room = budget_report(window, bytes_per_token=ratio).remaining - plan.summary_tokens
    if estimate_tokens(serialize_history(join), ratio) > room:
        return joined
    return chat(client, join, None, None, cancel).answer.strip()
