"""``/rag``: the REPL's knowledge-store commands.

``/rag list``, ``/rag use NAME`` (this session's turns retrieve from NAME;
``/new`` keeps it), ``/rag off`` and ``/rag on`` (pause and resume retrieval),
``/rag query TEXT`` (what a turn would get, without asking the model),
``/rag ingest PATH...`` (into the active store) and ``/rag status``.
Bad input is a ``UsageError``: one line, and the session goes on. The doing is
``harvey.knowledge.commands``, shared with ``harvey rag``; this module renders.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from harvey.errors import UsageError
from harvey.knowledge import commands

if TYPE_CHECKING:
    from harvey.knowledge.retrieval import Retrieval
    from harvey.repl.session import ReplSession

RAG_USAGE = "/rag list|use NAME|off|on|query TEXT|ingest PATH...|status"


def _active(repl: ReplSession) -> Retrieval | None:
    from harvey.knowledge.retrieval import active_retrieval

    return active_retrieval(repl.agent.turn_context)


def _need_active(repl: ReplSession) -> Retrieval:
    active = _active(repl)
    if active is None:
        raise UsageError("no knowledge store in use (try /rag use NAME)")
    return active


def _use(repl: ReplSession, name: str) -> None:
    opened, repl.rt.settings = commands.use(  # /new keeps the store
        repl.agent.turn_context, repl.rt.paths.workspace, name, repl.rt.settings, repl.ui.warn
    )
    files, chunks, _size = opened.knowledge.store.counts()
    repl.console.print(
        f"using knowledge store {name} ({files} files, {chunks} chunks, "
        f"embedder {opened.knowledge.store.embedder_spec})",
        highlight=False,
    )


def rag_command(repl: ReplSession, arg: str) -> None:
    try:
        words = shlex.split(arg)
    except ValueError as exc:
        raise UsageError(f"usage: {RAG_USAGE} ({exc})") from exc
    sub, rest = (words[0], words[1:]) if words else ("status", [])
    say = repl.console.print
    if sub == "list":
        from harvey.knowledge.store import store_names

        active = _active(repl)
        names = store_names(repl.rt.paths.workspace)
        for name in names:
            mark = "*" if active is not None and active.name == name else " "
            say(f"{mark} {name}", highlight=False)
        if not names:
            say(commands.NO_STORES)
    elif sub == "use" and len(rest) == 1:
        _use(repl, rest[0])
    elif sub in ("on", "off") and not rest:
        active = _need_active(repl)
        active.enabled = sub == "on"
        say(f"retrieval from {active.name} is {sub}", highlight=False)
    elif sub == "query" and rest:
        active = _need_active(repl)
        ranked = active.knowledge.searcher.ranked(" ".join(rest), active.settings.top_k)
        for h in ranked.hits:
            say(commands.hit_line(h), highlight=False)
        if not ranked.hits:
            say(commands.empty_line(ranked), highlight=False)
    elif sub == "ingest" and rest:
        active = _need_active(repl)
        report = commands.ingest(active.knowledge, repl.rt.paths.workspace, rest)
        for path, why in report.skipped:
            repl.ui.warn(f"skipped {path}: {why}")
        say(f"{active.name}: {report.summary()}", highlight=False)
    elif sub == "status" and not rest:
        active = _active(repl)
        if active is None:
            say("no knowledge store in use (try /rag list, /rag use NAME)")
            return
        say(commands.retrieval_line(active), highlight=False)
    else:
        raise UsageError(f"usage: {RAG_USAGE}")
