"""The per-turn retrieval step: the active store's best passages for the user's prompt.

For each chat turn it retrieves the ``rag.top_k`` best chunks the relevance floor
admits (``harvey.knowledge.floor``: a prompt nothing in the store is relevant to gets
none, and its turn has no context and no note), drops those under ``floor.MIN_SCORE``,
merges overlapping or adjacent chunks of one file into
one passage, and keeps the best passages that fit ``rag.budget_pct`` of the
context window. They are sent ahead of the prompt as::

    ### Context (from knowledge base)

    #### notes/boiler.md:L1-L4
    ...passage...

with one ``[[rag:]]`` note and a ``[[rag-source:]]`` note per passage in the
turn's scene. A turn where nothing survives records nothing. A store that
fails mid-session (deleted, damaged, its embedder server down) is a warning
and a turn without context, never a lost turn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harvey.config.settings import Settings
from harvey.documents.model import page_label
from harvey.errors import KnowledgeError
from harvey.knowledge.floor import MIN_SCORE
from harvey.knowledge.search import Hit
from harvey.knowledge.service import Knowledge, open_knowledge
from harvey.protocols import RagInfo, RagSource, TurnContext, TurnQuery

HEADING = "### Context (from knowledge base)"
BELOW_FLOOR = "no passage above the floor"
_END = "### Question"


@dataclass
class Passage:
    path: str
    start: int
    end: int
    start_line: int
    end_line: int
    text: str
    score: float
    chunks: int = 1
    page_start: int = 0  # pages of a PDF passage (0: not paged)
    page_end: int = 0

    @property
    def label(self) -> str:
        if self.page_start:
            return f"{self.path}:{page_label((self.page_start, self.page_end))}"
        return f"{self.path}:L{self.start_line}-L{self.end_line}"


def merge(hits: list[Hit]) -> list[Passage]:
    """Overlapping or adjacent chunks of one file become one passage (its best score);
    passages come back best first."""
    ordered = sorted(hits, key=lambda h: (h.chunk.path, h.chunk.start))
    out: list[Passage] = []
    for hit in ordered:
        c = hit.chunk
        last = out[-1] if out else None
        if last is not None and last.path == c.path and c.start_line <= last.end_line + 1:
            if c.end > last.end:
                if c.start <= last.end:
                    last.text += c.text[last.end - c.start :]
                else:  # a whitespace-only chunk between them was never stored
                    last.text += "\n" + c.text
                last.end, last.end_line = c.end, max(last.end_line, c.end_line)
                last.page_end = max(last.page_end, c.page_end)
            last.score = max(last.score, hit.score)
            last.chunks += 1
            continue
        out.append(Passage(c.path, c.start, c.end, c.start_line, c.end_line, c.text, hit.score))
        out[-1].page_start, out[-1].page_end = c.page_start, c.page_end
    return sorted(out, key=lambda p: -p.score)


def render(passages: list[Passage]) -> str:
    blocks = [
        HEADING,
        "",
        "Cite a passage by its path and span (path:Lstart-Lend, path:pN) when you use it.",
        "",
    ]
    for p in passages:
        blocks += [f"#### {p.label}", p.text.strip("\n"), ""]
    return "\n".join([*blocks, _END])


class Retrieval:
    """The ``TurnContextProvider`` for one active store (``/rag off`` pauses it)."""

    tool_less_only = False

    def __init__(
        self, knowledge: Knowledge, settings: Settings, warn: Callable[[str], None]
    ) -> None:
        self.knowledge = knowledge
        self.settings = settings.rag
        self.warn = warn
        self.enabled = True
        self.last_outcome = "none yet"  # for /rag status: what the last turn retrieved

    @classmethod
    def open(
        cls, workspace: Path, name: str, settings: Settings, warn: Callable[[str], None]
    ) -> Retrieval:
        return cls(open_knowledge(workspace, name, settings), settings, warn)

    @property
    def name(self) -> str:
        return self.knowledge.name

    def passages(self, prompt: str, room_bytes: int) -> list[Passage]:
        """The passages for ``prompt`` that score enough and fit ``room_bytes``, best first."""
        ranked = self.knowledge.searcher.ranked(prompt, self.settings.top_k)
        kept = [h for h in ranked.hits if h.score >= MIN_SCORE]
        chosen: list[Passage] = []
        used = len(HEADING) + len(_END) + 4
        for passage in merge(kept):
            size = len(passage.text.encode("utf-8", "surrogatepass")) + len(passage.label) + 8
            if used + size <= room_bytes:
                chosen.append(passage)
                used += size
        if chosen:
            self.last_outcome = f"{len(chosen)} passages sent"
        elif not ranked.hits and ranked.below_floor:
            self.last_outcome = f"{BELOW_FLOOR}, nothing sent"
        else:
            self.last_outcome = "no passage matched or fitted, nothing sent"
        return chosen

    def for_turn(self, query: TurnQuery) -> TurnContext | None:
        if not self.enabled:
            return None
        room = int(query.window_tokens * self.settings.budget_pct / 100 * query.bytes_per_token)
        try:
            chosen = self.passages(query.prompt, room)
        except KnowledgeError as exc:
            self.warn(f"knowledge store {self.name}: {exc}; this turn has no retrieved context")
            return None
        if not chosen:
            return None
        info = RagInfo(sum(p.chunks for p in chosen), self.name, max(p.score for p in chosen))
        sources = tuple(
            RagSource(p.path, p.start_line, p.end_line, p.score, p.page_start, p.page_end)
            for p in chosen
        )
        return TurnContext(render(chosen), info, sources)

    def close(self) -> None:
        self.knowledge.close()


def active_retrieval(providers: Sequence[object]) -> Retrieval | None:
    """The knowledge-store provider among a turn's context providers, if any."""
    return next((p for p in providers if isinstance(p, Retrieval)), None)
