"""``search_knowledge``: the model searches the active knowledge store itself.

Per-turn retrieval answers the user's prompt as written; a model with tools
may need other words (a follow-up, a name it learnt from a passage). This
tool runs the same search and returns passages with their provenance
(``path:Lstart-Lend — score S.SS``) so the answer can cite them. It reads
the store in use *now* through a callable, so ``/rag use`` and ``/rag off``
apply to it too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from harvey.documents.model import page_label
from harvey.errors import KnowledgeError, ToolError
from harvey.tools.registry import ToolContext

if TYPE_CHECKING:
    from harvey.knowledge.retrieval import Retrieval

MAX_K = 10
MAX_OUTPUT_CHARS = 12_000


class SearchKnowledgeTool:
    name = "search_knowledge"
    description = (
        "Search the workspace's knowledge store (ingested documents and code) and return "
        "the best passages, each headed path:Lstart-Lend with a 0-1 score. Cite the "
        "path and lines you use."
    )

    parameters: dict[str, Any] = {  # noqa: RUF012 - the Tool protocol reads an attribute
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for, in words."},
            "k": {
                "type": "integer",
                "description": f"How many passages (1-{MAX_K}).",
                "default": 5,
            },
        },
        "required": ["query"],
    }

    def __init__(self, active: Callable[[], Retrieval | None]) -> None:
        self._active = active

    def run(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ToolError("query must be a non-empty string")
        k = args.get("k", 5)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise ToolError(f"k must be a whole number from 1 to {MAX_K}")
        retrieval = self._active()
        if retrieval is None or not retrieval.enabled:
            raise ToolError("no knowledge store is in use")
        try:
            ranked = retrieval.knowledge.searcher.ranked(query, k)
        except KnowledgeError as exc:
            raise ToolError(str(exc)) from exc
        hits = ranked.hits
        if not hits and ranked.below_floor:
            return f"no passage in {retrieval.name} above the floor for {query!r}"
        if not hits:
            return f"no passages in {retrieval.name} match {query!r}"
        parts: list[str] = []
        used = 0
        for h in hits:
            c = h.chunk
            where = page_label((c.page_start, c.page_end)) or f"L{c.start_line}-L{c.end_line}"
            head = f"{c.path}:{where} — score {h.score:.2f}"  # report.pdf:p3-p4 for a PDF
            block = f"{head}\n{h.chunk.text.strip()}\n"
            if used + len(block) > MAX_OUTPUT_CHARS and parts:
                break
            parts.append(block)
            used += len(block)
        return "\n".join(parts)
