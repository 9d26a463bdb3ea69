"""The reduce of an analysis: verified records in, one cited answer out.

No model rewrites summaries of summaries here. The records of every chunk are
merged without a model (``answer.merge``: numbered, deduplicated, the most
relevant kept, in the source's order, bounded to the synthesis model's window
when one writes the answer), then either shown as they are (``evidence``) or
given to the model with their numbers and places and its answer checked
(``synthesis``). The records given fit the synthesis model's window by estimate;
a server that counts more and refuses the prompt is asked again with fewer.
Which of the two is ``sizes.py``'s choice unless configured.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from harvey.analysis.answer import Answer, Intent, evidence_answer, merge
from harvey.analysis.evidence import Record
from harvey.analysis.params import AnswerKind
from harvey.analysis.synthesis import synthesis_prompt, synthesise
from harvey.context.budget import remaining_context
from harvey.errors import ContextTooLong, HarveyError, SynthesisError
from harvey.protocols import LLMClient, Tokenizer

#: Characters of a synthesis prompt that are not evidence (instruction aside).
_FRAMING_CHARS = 600
#: Times a synthesis the server refuses as too long is asked again with fewer records.
SHRINKS = 4


@dataclass(frozen=True)
class ReduceSpec:
    """How one analysis's answer is made."""

    instruction: str
    kind: AnswerKind
    intent: Intent
    why: str  # the evidence answer's first line: why no model wrote it
    budget_chars: int | None = None  # bounds the evidence shown (an answer for a chat turn)
    order: Sequence[str] = ()  # the files, in the run's order
    dropped: int = 0  # records the map phase dropped (said when no record is left)


def synthesis_budget(
    instruction: str, context_window: int | None, bytes_per_token: float
) -> int | None:
    """Characters of evidence a synthesis prompt may hold in ``context_window``."""
    if context_window is None:
        return None
    tokens = remaining_context(context_window, bytes_per_token=bytes_per_token)
    return max(400, int(tokens * bytes_per_token * 0.75) - len(instruction) - _FRAMING_CHARS)


def reduce_evidence(
    records: Sequence[Record],
    spec: ReduceSpec,
    client: LLMClient,
    *,
    context_window: int | None,
    bytes_per_token: float,
    cancel: threading.Event | None = None,
) -> Answer:
    """The answer over ``records``; raises ``SynthesisError`` when a synthesis call fails."""
    if spec.kind == "evidence":
        merged = merge(
            records,
            exhaustive=spec.intent.exhaustive,
            budget_chars=spec.budget_chars,
            order=spec.order,
            keep=spec.intent.keep,
            relative_floor=spec.intent.relative_floor,
        )
        return evidence_answer(merged, spec.why, spec.dropped)
    budget = synthesis_budget(spec.instruction, context_window, bytes_per_token)
    if spec.budget_chars is not None:
        budget = spec.budget_chars if budget is None else min(budget, spec.budget_chars)
    counter = _counter(client) if context_window is not None else None
    for _ in range(SHRINKS):
        merged = merge(
            records,
            exhaustive=spec.intent.exhaustive,
            budget_chars=budget,
            order=spec.order,
            keep=spec.intent.keep,
            relative_floor=spec.intent.relative_floor,
        )
        if not merged.records:
            return evidence_answer(merged, spec.why, spec.dropped)
        over = _over(counter, spec.instruction, merged.records, context_window)
        if over is not None and len(merged.records) > 1:
            # counted exactly: the estimate was short (version-dense text, numbers); fewer
            # records before the request, not a server that drops an overlong one mid-stream
            budget = int(sum(len(r.quote) for r in merged.records) * over * 0.9)
            continue
        try:
            return synthesise(client, spec.instruction, merged, cancel)
        except SynthesisError as exc:
            too_long = isinstance(exc.__cause__, ContextTooLong)
            if not too_long or len(merged.records) <= 1:
                raise
            # the estimate was short of the server's count: fewer records, asked again
            budget = int(sum(len(r.quote) for r in merged.records) * 0.6)
    raise SynthesisError("synthesis failed: the evidence does not fit the model's context")


def _counter(client: LLMClient) -> Tokenizer | None:
    """The client's exact counter, where its backend can count (probed once a client)."""
    from harvey.llm.base import token_counter_of

    try:
        counter: Tokenizer | None = token_counter_of(client)
    except HarveyError:
        return None
    return counter


def _over(
    counter: Tokenizer | None,
    instruction: str,
    records: Sequence[Record],
    context_window: int | None,
) -> float | None:
    """With an exact counter: the share of the synthesis prompt that fits what the window
    leaves for it (below 1: it does not fit), else None."""
    if counter is None or context_window is None:
        return None
    try:
        tokens = counter.count(synthesis_prompt(instruction, records)) + counter.framing(["user"])
    except HarveyError:
        return None
    room = remaining_context(context_window)
    return room / tokens if tokens > room else None


__all__ = ["ReduceSpec", "reduce_evidence", "synthesis_budget"]
