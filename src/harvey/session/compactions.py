"""Stored compactions: which turns a summary stands for, so a resumed session sends it.

A compaction never deletes a message: ``messages`` keeps every original, and a
row here says "the first ``messages`` messages of this session (turns
``first_turn``–``last_turn``) are sent as this summary". The newest row wins,
and each covers the conversation from its first turn (a later compaction
summarises the earlier summary with the turns after it), so resuming is: the
originals, with the newest row's span replaced by its summary. ``recall_turns``
reads the originals back. Rows go with their session (``ON DELETE CASCADE``).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from harvey.messages import Message
from harvey.redact import redact

# What the summary is sent as: a request and its answer, so roles still alternate
# (templates that insist on user/assistant turns accept it) and it reads as what
# happened. Fixed text: the next requests begin with these bytes.
SUMMARY_REQUEST = (
    "[Harvey compacted turns {first}–{last} of this conversation to fit the context "
    "window; the original turns are kept, and recall_turns(from={first}, to={last}) "
    "reads them back.] Summarise them."
)
_REQUEST = re.compile(r"^\[Harvey compacted turns (\d+)–(\d+) of this conversation ")


def migration(db: sqlite3.Connection) -> None:
    """The ``m009_compactions`` migration (listed in ``session/migrations.py``)."""
    db.execute(
        "CREATE TABLE compactions ("
        " id INTEGER PRIMARY KEY AUTOINCREMENT,"
        " session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
        " first_turn INTEGER NOT NULL,"
        " last_turn INTEGER NOT NULL,"
        " messages INTEGER NOT NULL,"
        " summary TEXT NOT NULL,"
        " model TEXT NOT NULL,"
        " tokens_before INTEGER NOT NULL,"
        " tokens_after INTEGER NOT NULL,"
        " instruction TEXT NOT NULL DEFAULT '',"
        " created_at TEXT NOT NULL)"
    )
    db.execute("CREATE INDEX compactions_session ON compactions(session_id, id)")


@dataclass(frozen=True)
class StoredCompaction:
    """One summary and the span of original messages it replaces in what is sent."""

    first_turn: int
    last_turn: int
    messages: int  # the session's first ``messages`` stored messages
    summary: str
    model: str
    tokens_before: int
    tokens_after: int
    instruction: str = ""


def summary_messages(first: int, last: int, summary: str) -> list[Message]:
    """The two messages that stand for turns ``first``–``last`` in what is sent."""
    request = SUMMARY_REQUEST.format(first=first, last=last)
    return [Message("user", request), Message("assistant", summary)]


def summarised_span(history: Sequence[Message]) -> tuple[int, int] | None:
    """The turns the summary at the head of ``history`` stands for, or None."""
    if len(history) < 2 or history[0].role != "user" or history[1].role != "assistant":
        return None
    m = _REQUEST.match(history[0].content)
    return (int(m.group(1)), int(m.group(2))) if m else None


def compacted(originals: list[Message], newest: StoredCompaction | None) -> list[Message]:
    """What a resumed session sends: ``originals`` with the newest compaction applied."""
    if newest is None or newest.messages > len(originals):
        return originals
    head = summary_messages(newest.first_turn, newest.last_turn, newest.summary)
    return head + originals[newest.messages :]


class _Store(Protocol):
    def _query(self, sql: str, params: Sequence[object] = ()) -> list[sqlite3.Row]: ...

    def _session_tx(self, session_id: str) -> AbstractContextManager[sqlite3.Connection]: ...


class CompactionsMixin:
    """The compaction methods of ``SessionStore`` (kept here to keep store.py short)."""

    def add_compaction(self: _Store, session_id: str, row: StoredCompaction) -> None:
        """Keep one compaction; the session's row is written first if it is reserved."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        with self._session_tx(session_id) as db:
            db.execute(
                "INSERT INTO compactions (session_id, first_turn, last_turn, messages, summary,"
                " model, tokens_before, tokens_after, instruction, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    row.first_turn,
                    row.last_turn,
                    row.messages,
                    redact(row.summary),
                    row.model,
                    row.tokens_before,
                    row.tokens_after,
                    redact(row.instruction),
                    now,
                ),
            )

    def compactions(self: _Store, session_id: str) -> list[StoredCompaction]:
        """The session's compactions, oldest first."""
        rows = self._query(
            "SELECT first_turn, last_turn, messages, summary, model, tokens_before,"
            " tokens_after, instruction FROM compactions WHERE session_id = ? ORDER BY id",
            (session_id,),
        )
        return [StoredCompaction(*tuple(r)) for r in rows]
