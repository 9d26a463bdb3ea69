"""Recall: which memories start a session, within how much of the context window.

Once per session, before the first prompt is sent, the workspace's profile and
project facts come first (they describe where the person is working, so they
always apply: score 1.00), then the other memories that match the first
prompt (FTS5 relevance, fused with vector similarity when ``memory.embedder`` is
set, weighted by confidence), until ``memory.budget_pct`` of
the window is used (at least ``MIN_BUDGET`` tokens). The block is injected as
a system message and counted like any injected text.

What does not fit is kept in ``Recall.left_out`` so the session can say how
many were left out and ``/memory status`` can list them: a memory is never
dropped silently.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harvey.context.budget import BYTES_PER_TOKEN, estimate_tokens
from harvey.memory.store import Memory, MemoryStore
from harvey.memory.vectors import MemoryVectors, hybrid_search
from harvey.protocols import RecallItem

MIN_BUDGET = 512
ALWAYS = ("workspace_profile", "project_fact")
HEADER = (
    "Memories from earlier sessions in this workspace (recalled by Harvey; "
    "they may be out of date — prefer what you see now):"
)


@dataclass
class Recall:
    """The memories recalled into a session, with their scores, and what did not fit."""

    items: list[tuple[Memory, float]] = field(default_factory=list)
    left_out: list[tuple[Memory, float]] = field(default_factory=list)
    budget: int = 0

    @property
    def block(self) -> str | None:
        """The injected text, or None when nothing was recalled."""
        if not self.items:
            return None
        return "\n".join([HEADER, *(memory_line(m) for m, _ in self.items)])

    def recall_items(self) -> list[RecallItem]:
        """One ``[[recall:]]`` note per memory, for INT. CONTEXT RECALL."""
        return [RecallItem(m.id, m.type, round(score, 2)) for m, score in self.items]


def memory_line(memory: Memory) -> str:
    kind = f"/{memory.kind}" if memory.kind else ""
    return f"- [{memory.id}] ({memory.type}{kind}) {memory.text}"


def budget_tokens(context_window: int, budget_pct: float) -> int:
    return max(MIN_BUDGET, int(context_window * budget_pct / 100))


def weighted(relevance: float, confidence: float) -> float:
    """A search hit's score: relevance scaled by confidence (0.5, the start, leaves it as is)."""
    return max(0.01, min(0.99, relevance * (0.5 + confidence)))


def recall(
    store: MemoryStore,
    workspace: Path,
    first_prompt: str,
    *,
    context_window: int,
    budget_pct: float = 5.0,
    bytes_per_token: float = BYTES_PER_TOKEN,
    vectors: MemoryVectors | None = None,
    warn: Callable[[str], None] | None = None,
) -> Recall:
    """The memories for a session starting with ``first_prompt`` in ``workspace``
    (ranked by words, and by meaning too when ``vectors`` are given)."""
    ws = str(workspace)
    result = Recall(budget=budget_tokens(context_window, budget_pct))
    fixed = sorted(store.pinned(ws, ALWAYS), key=lambda m: (ALWAYS.index(m.type), m.created_at))
    candidates: list[tuple[Memory, float]] = [(m, 1.0) for m in fixed]
    seen = {m.id for m in fixed}
    hits = [
        (m, weighted(rel, m.confidence))
        for m, rel in hybrid_search(store, vectors, first_prompt, workspace=ws, warn=warn)
        if m.id not in seen
    ]
    hits.sort(key=lambda hit: -hit[1])
    candidates.extend(hits)
    used = estimate_tokens(HEADER, bytes_per_token)
    for memory, score in candidates:
        cost = estimate_tokens(memory_line(memory) + "\n", bytes_per_token)
        if used + cost <= result.budget:
            result.items.append((memory, score))
            used += cost
        else:
            result.left_out.append((memory, score))
    return result
