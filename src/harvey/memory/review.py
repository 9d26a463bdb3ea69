"""From proposals to stored memories: scrub, deduplicate, review, store, mark mined.

The order is what keeps junk and secrets out. Scrubbing comes first, so a
credential is never shown, compared or stored (it is only counted). Exact
duplicates (normalised text) are dropped without asking. A proposal whose
words largely overlap existing memories (found by FTS, compared by word
overlap), or whose vector is close to one (``memory.embedder`` set), goes
back to the model as ADD / UPDATE / NOOP, with small numbers in
the prompt rather than real ids, which a small model garbles; an unreadable
answer means ADD, because the person still reviews it. UPDATE supersedes, it
never deletes. Then the person decides each one: accept, edit, skip or quit.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harvey.errors import HarveyError, KnowledgeError, SessionFileError
from harvey.memory.mining import Proposal, ask_json, extract_json, mine_session
from harvey.memory.scrub import scrub
from harvey.memory.store import Memory, MemoryStore, normalise
from harvey.memory.vectors import NEAR_COSINE, MemoryVectors
from harvey.messages import Message
from harvey.protocols import LLMClient
from harvey.session.fountain import parse_session

log = logging.getLogger(__name__)

NEAR = 0.5  # word overlap (Jaccard) from which a memory is a near-duplicate
Ask = Callable[[str], str]
Echo = Callable[[str], None]

DEDUP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {"type": "string", "enum": ["ADD", "UPDATE", "NOOP"]},
        "id": {"type": "integer"},
    },
    "required": ["decision", "id"],
}


@dataclass
class Candidate:
    """A scrubbed proposal ready for review; ``replaces`` is set for an UPDATE."""

    proposal: Proposal
    text: str
    workspace: str | None
    replaces: str | None = None


@dataclass
class MineReport:
    proposed: int = 0
    rejected: int = 0  # contained a credential
    duplicates: int = 0  # exact, or NOOP from the model
    accepted: int = 0
    skipped_files: int = 0


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9_]{3,}", text.lower()))


def overlap(a: str, b: str) -> float:
    wa, wb = _words(a), _words(b)
    return len(wa & wb) / len(wa | wb) if wa | wb else 0.0


def decide(client: LLMClient, text: str, near: Sequence[Memory]) -> tuple[str, str | None]:
    """ADD / UPDATE (of which memory) / NOOP for ``text`` against its near-duplicates."""
    listing = "\n".join(f"{i}: {m.text}" for i, m in enumerate(near, 1))
    prompt = (
        f"Existing memories:\n{listing}\n\nNew memory: {text}\n\n"
        'Answer JSON {"decision": "ADD" | "UPDATE" | "NOOP", "id": N}: ADD if the new '
        "memory says something the others do not, UPDATE N if it corrects or improves memory "
        "N, NOOP if it says nothing new (id 0 for ADD and NOOP)."
    )
    try:
        data = extract_json(ask_json(client, [Message("user", prompt)], DEDUP_SCHEMA))
        decision = str(data.get("decision", "ADD")).upper()
        index = int(data.get("id", 0))
    except (ValueError, TypeError, AttributeError, HarveyError):
        return "ADD", None
    if decision == "NOOP":
        return "NOOP", None
    if decision == "UPDATE" and 1 <= index <= len(near):
        return "UPDATE", near[index - 1].id
    return "ADD", None


def near_duplicates(
    store: MemoryStore, vectors: MemoryVectors | None, text: str, workspace: str
) -> list[Memory]:
    """At most three memories ``text`` may repeat: FTS hits sharing half their words, and
    with vectors, the memories whose cosine says the same thing in other words."""
    near = [
        m
        for m, _ in store.search(text, workspace=workspace, limit=5)
        if overlap(m.text, text) >= NEAR
    ]
    if vectors is not None:
        try:
            close = vectors.nearest(text, workspace=workspace, limit=3)
        except KnowledgeError as exc:
            log.warning("memory vectors skipped for deduplication: %s", exc)
            close = []
        seen = {m.id for m in near}
        near += [m for m, cos in close if cos >= NEAR_COSINE and m.id not in seen]
    return near[:3]


def prepare(
    store: MemoryStore,
    client: LLMClient,
    proposals: Sequence[Proposal],
    workspace: Path,
    report: MineReport,
    vectors: MemoryVectors | None = None,
) -> list[Candidate]:
    """Scrubbed, deduplicated candidates; the counts go into ``report``."""
    out: list[Candidate] = []
    batch: set[str] = set()
    for proposal in proposals:
        report.proposed += 1
        cleaned = scrub(proposal.text, workspace=workspace)
        if cleaned.rejected:
            report.rejected += 1
            continue
        ws = None if proposal.type == "user_preference" else str(workspace)
        if normalise(cleaned.text) in batch or store.find_exact(cleaned.text, ws) is not None:
            report.duplicates += 1
            continue
        batch.add(normalise(cleaned.text))
        near = near_duplicates(store, vectors, cleaned.text, str(workspace))
        replaces = None
        if near:
            decision, replaces = decide(client, cleaned.text, near)
            if decision == "NOOP":
                report.duplicates += 1
                continue
        out.append(Candidate(proposal, cleaned.text, ws, replaces))
    return out


def review(
    candidates: Sequence[Candidate], ask: Ask | None, echo: Echo, workspace: Path
) -> tuple[list[Candidate], bool]:
    """The accepted candidates and whether the person quit. ``ask`` None accepts all."""
    if ask is None:
        return list(candidates), False
    accepted: list[Candidate] = []
    for i, cand in enumerate(candidates, 1):
        kind = f"/{cand.proposal.kind}" if cand.proposal.kind else ""
        action = f" (updates {cand.replaces})" if cand.replaces else ""
        echo(f"[{i}/{len(candidates)}] {cand.proposal.type}{kind}{action}: {cand.text}")
        while True:
            answer = ask("accept, edit, skip or quit? [a/e/s/q] ").strip().lower()[:1]
            if answer in ("a", "e", "s", "q"):
                break
            echo("answer a, e, s or q")
        if answer == "q":
            return accepted, True
        if answer == "e":
            edited = scrub(ask("text: ").strip(), workspace=workspace)
            if edited.rejected or not edited.text:
                echo(f"skipped: the text {edited.rejected or 'is empty'}")
                continue
            cand.text = edited.text
        if answer in ("a", "e"):
            accepted.append(cand)
    return accepted, False


def store_accepted(
    store: MemoryStore, accepted: Sequence[Candidate], recording: Path | None
) -> list[Memory]:
    stored = []
    for cand in accepted:
        memory = Memory(
            "",
            cand.proposal.type,
            cand.text,
            kind=cand.proposal.kind,
            workspace=cand.workspace,
            recording=str(recording) if recording else None,
            scenes=cand.proposal.evidence,
        )
        if cand.replaces:
            stored.append(store.supersede(cand.replaces, memory))
        else:
            stored.append(store.add(memory))
    return stored


def mine_files(
    files: Sequence[Path],
    *,
    store: MemoryStore,
    client: LLMClient,
    workspace: Path,
    context_window: int,
    ask: Ask | None,
    echo: Echo,
    force: bool = False,
    vectors: MemoryVectors | None = None,
    concurrency: int = 1,
) -> MineReport:
    """Mine, review and store each recording in turn; a quit stops after the current one."""
    report = MineReport()
    for path in files:
        if store.is_mined(path) and not force:
            echo(f"{path.name}: already mined (--force mines it again)")
            report.skipped_files += 1
            continue
        parsed = parse_session(path)
        if not parsed.scenes:
            raise SessionFileError(f"{path.name}: no scenes to mine (is it a Harvey recording?)")
        proposals = mine_session(
            client, parsed, context_window=context_window, concurrency=concurrency
        )
        before = (report.proposed, report.rejected, report.duplicates)
        candidates = prepare(store, client, proposals, workspace, report, vectors)
        echo(
            f"{path.name}: {report.proposed - before[0]} proposed, "
            f"{report.rejected - before[1]} rejected (credentials), "
            f"{report.duplicates - before[2]} duplicates"
        )
        accepted, quit_ = review(candidates, ask, echo, workspace)
        store_accepted(store, accepted, path)
        report.accepted += len(accepted)
        store.mark_mined(path, len(accepted))
        if quit_:
            break
    return report
