"""Mining: a recording becomes proposed memories, through the model's structured output.

The model sees what happened, not what was remembered: the person's words,
each tool call with its status, the replies, and every CHUNK ANALYSIS scene's
instruction and outcome (a good chunk instruction persists this way as a
``workflow`` memory). INT. CONTEXT RECALL scenes and ``[[rag:]]`` retrievals
are never shown — mining recalled text back in is how memory stores fill
with copies of themselves.

The answer is requested as JSON through the backend's structured output
(``response_schema``: a grammar for the embedded model), and still parsed
tolerantly — code fences and prose around the object are cut away — because
a server may ignore the schema. One retry, then ``MiningError``.

A transcript larger than a share of the window (``TRANSCRIPT_SHARE``) is cut
by Harvey's chunker and mined through the map-reduce engine's map phase
(``map_calls``: calls in parallel, an endpoint pool's slots used); the reduce
is ``merge``, in code — the same text from two parts becomes one proposal —
and deduplication against the store follows in ``review``.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harvey.analysis.map_calls import map_calls
from harvey.chunks.chunking import MIN_CHUNK_SIZE, ChunkConfig, chunk_document
from harvey.context.budget import BYTES_PER_TOKEN, estimate_tokens
from harvey.errors import BackendError
from harvey.llm.base import chat
from harvey.memory.store import KINDS, TYPES
from harvey.messages import Message
from harvey.protocols import LLMClient
from harvey.session.fountain import ParsedSession, Scene
from harvey.workspace.kinds import DocType

MAX_PROPOSALS = 3
TRANSCRIPT_SHARE = 0.5  # of the context window one mining call's transcript may use

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "memories": {
            "type": "array",
            "maxItems": MAX_PROPOSALS,
            "items": {
                "type": "object",
                "properties": {
                    "type": {"type": "string", "enum": list(TYPES)},
                    "kind": {"type": "string", "enum": list(KINDS)},
                    "text": {"type": "string", "minLength": 8, "maxLength": 200},
                    "evidence": {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
                    "confidence": {"type": "number"},
                },
                "required": ["type", "kind", "text", "evidence", "confidence"],
            },
        }
    },
    "required": ["memories"],
}

INSTRUCTIONS = f"""You extract durable memories from a recorded work session.
A memory is something worth knowing in a later session: a tool_use pitfall or workaround, a
workflow that worked (for example a good chunk-analysis instruction), a user_preference, or a
project_fact about this workspace. Skip greetings, one-off answers and anything uncertain.
Never include passwords, keys or tokens. Each text is one short self-contained sentence.
Answer with JSON only: {{"memories": [{{"type": one of {list(TYPES)}, "kind": one of
{list(KINDS)}, "text": "...", "evidence": [scene numbers], "confidence": 0.0-1.0}}]}}.
Answer {{"memories": []}} when nothing is worth keeping."""


class MiningError(BackendError):
    """The model's answer was not the JSON asked for, twice."""


@dataclass
class Proposal:
    """One memory the model proposes, before scrubbing, deduplication and review."""

    type: str
    kind: str
    text: str
    evidence: list[int] = field(default_factory=list)
    confidence: float = 0.5


def _scene_lines(number: int, scene: Scene) -> list[str]:
    """What the miner may see of one scene; recall and retrieval never."""
    if scene.kind in ("talking", "ext"):
        out = [f"Scene {number}:"]
        if scene.user_text is not None:
            out.append(f"USER: {scene.user_text}")
        out += [f"TOOL {t.name}({t.args_text}) -> {t.status}" for t in scene.tool_notes]
        if scene.reply is not None:
            out.append(f"ASSISTANT: {scene.reply}")
        return out
    if scene.kind == "chunk_analysis":
        info = scene.chunk
        failed = [r for r in scene.chunk_results if r.status != "ok"]
        synthesis = scene.synthesis
        return [
            f"Scene {number} (chunk analysis of {info.file if info else 'a file'}):",
            f"CHUNK INSTRUCTION: {scene.user_text or ''}",
            f"OUTCOME: {len(scene.chunk_results) - len(failed)} chunks ok, {len(failed)} failed, "
            f"synthesis {synthesis.status if synthesis else 'not run'}",
        ]
    if scene.kind == "shell" and scene.shell is not None:
        return [f"Scene {number}: SHELL {scene.shell.command} -> exit {scene.shell.exit_code}"]
    return []


def transcript(parsed: ParsedSession) -> str:
    """The whole minable text: one paragraph per scene, numbered as in the recording."""
    blocks = ("\n".join(_scene_lines(n, scene)) for n, scene in enumerate(parsed.scenes, 1))
    return "\n\n".join(block for block in blocks if block)


def transcript_parts(
    parsed: ParsedSession, *, context_window: int, bytes_per_token: float = BYTES_PER_TOKEN
) -> list[str]:
    """The minable text in parts that each fit ``TRANSCRIPT_SHARE`` of the window.

    Harvey's own chunker cuts it, so a part ends at a scene (a paragraph)
    where it can, and a scene too long for one part is cut at its lines —
    every word is in some part, none is dropped.
    """
    text = transcript(parsed)
    if not text:
        return []
    limit = max(256, int(context_window * TRANSCRIPT_SHARE) - estimate_tokens(INSTRUCTIONS))
    size = max(MIN_CHUNK_SIZE, int(limit * bytes_per_token))
    config = ChunkConfig(chunk_size_bytes=size, max_chunks=1_000_000, overlap="none")
    return [c.text.strip("\n") for c in chunk_document(text, config, DocType.PROSE)]


def extract_json(text: str) -> Any:
    """The JSON object in ``text``: whole, inside a code fence, or between prose."""
    text = text.strip()
    fence = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    candidates = [text] + ([fence.group(1)] if fence else [])
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:  # strict=False: a raw newline inside a string (small models write them) is kept
            return json.loads(candidate, strict=False)
        except ValueError:
            continue
    raise ValueError("no JSON object in the answer")


def parse_proposals(text: str) -> list[Proposal]:
    """Proposals from an answer; ``ValueError`` when it is not ``{"memories": [...]}``.

    Single items that are malformed (an unknown type, no text) are dropped, not fatal.
    """
    data = extract_json(text)
    if not isinstance(data, dict) or not isinstance(data.get("memories"), list):
        raise ValueError('the answer is not {"memories": [...]}')
    out = []
    for item in data["memories"]:
        if not isinstance(item, dict) or item.get("type") not in TYPES:
            continue
        body = item.get("text")
        if not isinstance(body, str) or len(body.strip()) < 8:
            continue
        kind = item.get("kind") if item.get("kind") in KINDS else ""
        evidence = [int(n) for n in item.get("evidence") or [] if isinstance(n, int | float)]
        try:
            confidence = min(1.0, max(0.0, float(item.get("confidence", 0.5))))
        except (TypeError, ValueError):
            confidence = 0.5
        text = " ".join(body.split())  # one line: a memory is one line of the recall block
        out.append(Proposal(item["type"], str(kind), text, evidence, confidence))
    return out


def ask_json(client: LLMClient, messages: Sequence[Message], schema: dict[str, Any] | None) -> str:
    """One structured call's text (mining, deduplication); ``schema`` None: a plain call."""
    return chat(client, messages, response_schema=schema).text


def answer_part(client: LLMClient, part: str, *, structured: bool = True) -> str:
    """One part's answer, checked to parse: one call, one retry, then ``MiningError``."""
    messages = [Message("system", INSTRUCTIONS), Message("user", f"Session:\n\n{part}")]
    problem = ""
    for _attempt in range(2):
        answer = ask_json(client, messages, SCHEMA if structured else None)
        try:
            parse_proposals(answer)
            return answer
        except ValueError as exc:
            problem = str(exc)
            messages = [*messages, Message("assistant", answer[:2000]), Message(
                "user", f"That was not valid: {problem}. Answer with the JSON object only."
            )]  # fmt: skip
    raise MiningError(f"the model did not answer with the memory JSON twice ({problem})")


def mine_part(client: LLMClient, part: str, *, structured: bool = True) -> list[Proposal]:
    """Proposals for one transcript part (``answer_part``, parsed)."""
    return parse_proposals(answer_part(client, part, structured=structured))


def concurrency_for(chunking: Any, client: LLMClient) -> int:
    """Mining calls in flight: ``chunking.concurrency``, else what the server is known to
    take (``harvey.llm.capacity``: its slots, one for llama-cpp-python's server and the
    embedded model), else one (an endpoint pool's capacity when larger, in ``map_calls``)."""
    if chunking.concurrency:
        return int(chunking.concurrency)
    from harvey.llm.capacity import discover

    found = discover(client)
    return found.limit if found.fixed else 1


def merge(answers: Sequence[list[Proposal]]) -> list[Proposal]:
    """The reduce: every part's proposals as one list, a text proposed twice kept once
    (first wording and type, evidence joined, the higher confidence)."""
    merged: dict[str, Proposal] = {}
    for proposals in answers:
        for p in proposals:
            key = " ".join(p.text.lower().split()).strip(".!")
            first = merged.get(key)
            if first is None:
                merged[key] = Proposal(p.type, p.kind, p.text, list(p.evidence), p.confidence)
                continue
            first.evidence = sorted(set(first.evidence) | set(p.evidence))
            first.confidence = max(first.confidence, p.confidence)
    return list(merged.values())


def mine_session(
    client: LLMClient,
    parsed: ParsedSession,
    *,
    context_window: int,
    bytes_per_token: float = BYTES_PER_TOKEN,
    concurrency: int = 1,
    cancel: threading.Event | None = None,
) -> list[Proposal]:
    """Every proposal for one recording: its parts mapped through the map-reduce engine
    (one structured call each, ``concurrency`` at once), then merged.

    A part the model fails twice fails the whole recording (``MiningError``
    naming the part): mining what remains would mark the recording mined with
    that part never looked at.
    """
    parts = transcript_parts(parsed, context_window=context_window, bytes_per_token=bytes_per_token)
    if not parts:
        return []
    results = map_calls(
        client, parts, lambda part: answer_part(client, part), concurrency=concurrency,
        cancel=cancel,
    )  # fmt: skip
    answers: list[list[Proposal]] = []
    for i, (text, err) in enumerate(results, 1):
        if err is not None:
            where = f"part {i} of {len(parts)}: " if len(parts) > 1 else ""
            if isinstance(err, MiningError):
                raise MiningError(f"{where}{err}") from err
            raise err
        answers.append(parse_proposals(text or ""))
    return merge(answers)
