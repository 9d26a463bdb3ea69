"""``retrieve_memory`` and ``add_memory``: long-term memory for models with tool support.

Retrieval is read-only and searches the same store and scoring as recall.
Adding is a write to something every later session will read, so it goes
through the same gates as mining: the text is scrubbed (a credential is
refused, not masked), an exact duplicate is not stored twice, and the person
is asked first. The answer is what the tool returns, so the ``[[tool:]]``
note in the scene records it: ``ok`` when stored, ``error: declined …``
when not. Both import the store only when called: every session registers
them, few use them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from harvey.errors import ToolError
from harvey.memory.records import TYPES
from harvey.memory.startup import memory_db
from harvey.tools.registry import ToolContext

if TYPE_CHECKING:
    from harvey.config.settings import Settings

MAX_TEXT = 500


def _text(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ToolError(f"{key} must be a non-empty string")
    return value.strip()


class RetrieveMemoryTool:
    name = "retrieve_memory"
    description = (
        "Search the long-term memories of earlier sessions (tool pitfalls, workflows, "
        "preferences, project facts) for QUERY; returns the best matches with scores."
    )

    parameters: dict[str, Any] = {  # noqa: RUF012 - the Tool protocol reads an attribute
        "type": "object",
        "properties": {"query": {"type": "string", "description": "what to look for"}},
        "required": ["query"],
    }

    def __init__(self, harvey_home: Path, settings: Settings | None = None) -> None:
        self.db = memory_db(harvey_home)
        self.settings = settings  # memory.embedder: vectors as well as words, like recall

    def run(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        from harvey.memory.recall import memory_line, weighted
        from harvey.memory.store import MemoryStore
        from harvey.memory.vectors import hybrid_search, open_vectors

        query = _text(args, "query")
        if not self.db.exists():
            return "no memories yet"
        with MemoryStore(self.db) as store:
            vectors = open_vectors(store, self.settings) if self.settings is not None else None
            hits = hybrid_search(store, vectors, query, workspace=str(ctx.workspace), limit=8)
        if not hits:
            return "no matching memories"
        return "\n".join(f"{weighted(r, m.confidence):.2f} {memory_line(m)}" for m, r in hits)


class AddMemoryTool:
    name = "add_memory"
    description = (
        "Propose a long-term memory for later sessions. The user is asked before it is "
        f"stored. type is one of {', '.join(TYPES)}; text is one short self-contained sentence."
    )

    parameters: dict[str, Any] = {  # noqa: RUF012 - the Tool protocol reads an attribute
        "type": "object",
        "properties": {
            "type": {"type": "string", "enum": list(TYPES)},
            "text": {"type": "string", "description": "the memory, one sentence"},
        },
        "required": ["type", "text"],
    }

    def __init__(self, harvey_home: Path) -> None:
        self.db = memory_db(harvey_home)

    def run(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        from harvey.memory.scrub import scrub
        from harvey.memory.store import Memory, MemoryStore

        mtype = _text(args, "type")
        if mtype not in TYPES:
            raise ToolError(f"type must be one of {', '.join(TYPES)}")
        cleaned = scrub(_text(args, "text")[:MAX_TEXT], workspace=ctx.workspace)
        if cleaned.rejected:
            raise ToolError(f"not stored: the text {cleaned.rejected}")
        workspace = None if mtype == "user_preference" else str(ctx.workspace)
        with MemoryStore(self.db) as store:
            if store.find_exact(cleaned.text, workspace) is not None:
                return "already remembered"
            if not ctx.interactive:  # --yes answers questions about the task, not this one
                raise ToolError(
                    "not stored: a memory lasts beyond this session, so only a person in the "
                    "interactive REPL can approve it"
                )
            if ctx.confirm is None or not ctx.confirm(
                f"The model asks to remember ({mtype}): {cleaned.text}\nStore this memory?"
            ):
                raise ToolError("declined by the user; nothing stored")
            memory = store.add(Memory("", mtype, cleaned.text, workspace=workspace))
        return f"stored as {memory.id}"
