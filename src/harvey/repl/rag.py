"""``/rag``: the REPL's knowledge-store commands.

``/rag list``, ``/rag use NAME`` (this session's turns retrieve from NAME;
``/new`` keeps it), ``/rag off`` and ``/rag on`` (pause and resume retrieval),
``/rag query TEXT`` (what a turn would get, without asking the model),
``/rag ingest PATH...`` (into the active store) and ``/rag status``.
Bad input is a ``UsageError``: one line, and the session goes on.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from harvey.errors import UsageError

if TYPE_CHECKING:
    from harvey.knowledge.retrieval import Retrieval
    from harvey.repl.loop import Repl

RAG_USAGE = "/rag list|use NAME|off|on|query TEXT|ingest PATH...|status"


def _active(repl: Repl) -> Retrieval | None:
    from harvey.knowledge.retrieval import active_retrieval

    return active_retrieval(repl.agent.turn_context)


def _need_active(repl: Repl) -> Retrieval:
    active = _active(repl)
    if active is None:
        raise UsageError("no knowledge store in use (try /rag use NAME)")
    return active


def _use(repl: Repl, name: str) -> None:
    from harvey.knowledge.retrieval import Retrieval
    from harvey.knowledge.store import with_active

    settings = with_active(repl.rt.settings, name)
    opened = Retrieval.open(repl.rt.paths.workspace, name, settings, repl.ui.warn)
    old = _active(repl)
    if old is not None:
        repl.agent.turn_context.remove(old)
        old.close()
    repl.agent.turn_context.append(opened)
    repl.rt.settings = settings  # /new keeps the store
    files, chunks, _size = opened.knowledge.store.counts()
    repl.console.print(
        f"using knowledge store {name} ({files} files, {chunks} chunks, "
        f"embedder {opened.knowledge.store.embedder_spec})",
        highlight=False,
    )


def rag_command(repl: Repl, arg: str) -> None:
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
            say("no knowledge stores (make one with 'harvey rag new NAME')")
    elif sub == "use" and len(rest) == 1:
        _use(repl, rest[0])
    elif sub in ("on", "off") and not rest:
        active = _need_active(repl)
        active.enabled = sub == "on"
        say(f"retrieval from {active.name} is {sub}", highlight=False)
    elif sub == "query" and rest:
        active = _need_active(repl)
        for h in active.knowledge.searcher.search(" ".join(rest), active.settings.top_k):
            say(
                f"{h.chunk.path}:L{h.chunk.start_line}-L{h.chunk.end_line} — score {h.score:.2f}",
                highlight=False,
            )
    elif sub == "ingest" and rest:
        active = _need_active(repl)
        report = active.knowledge.ingester(repl.rt.paths.workspace).ingest(rest)
        active.knowledge.searcher.invalidate()
        for path, why in report.skipped:
            repl.ui.warn(f"skipped {path}: {why}")
        say(f"{active.name}: {report.summary()}", highlight=False)
    elif sub == "status" and not rest:
        active = _active(repl)
        if active is None:
            say("no knowledge store in use (try /rag list, /rag use NAME)")
            return
        files, chunks, size = active.knowledge.store.counts()
        state = "on" if active.enabled else "off"
        say(
            f"{active.name}: {files} files, {chunks} chunks, {size:,} bytes, embedder "
            f"{active.knowledge.store.embedder_spec}, retrieval {state}, top_k "
            f"{active.settings.top_k}, min_score {active.settings.min_score}",
            highlight=False,
        )
    else:
        raise UsageError(f"usage: {RAG_USAGE}")
