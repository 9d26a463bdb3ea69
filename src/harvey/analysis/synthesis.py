"""A synthesis written from verified evidence, and checked before anyone reads it.

The model is given the merged records with their numbers and places — the
source's own words, never summaries of summaries — and asked to end every
sentence with the numbers of the records it rests on. Then Harvey checks the
answer sentence by sentence (``check``):

* a citation must name a record the model was given;
* every date, number, version, name and quoted phrase of a sentence must be in
  the records it cites (``atoms.py``); a sentence that cites nothing may hold no
  such fact at all.

A sentence that fails is removed, and the answer says how many were and why
(the recording lists each one). When more than half of the sentences fail, or
none cites anything, the synthesis is not used: the answer is the evidence
itself with a line that says the synthesis failed the check. Harvey then lists
the sources of the sentences that remain.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from harvey.analysis.answer import (
    FRAMING,
    Answer,
    Merged,
    citations_of,
    cited_ids,
    evidence_answer,
    one_line,
    sources_block,
    without_markers,
)
from harvey.analysis.atoms import Source, atoms
from harvey.analysis.evidence import Record
from harvey.chunks.units import split_units
from harvey.errors import Cancelled, HarveyError, SynthesisError
from harvey.llm.base import chat
from harvey.messages import Message
from harvey.protocols import LLMClient


def synthesis_prompt(instruction: str, records: Sequence[Record]) -> str:
    listed = "\n".join(f"[{r.id}] ({r.location.cite()}) {one_line(r.quote)}" for r in records)
    return (
        f"Instruction: {instruction}\n\n"
        f"Evidence quoted word for word from the source, numbered:\n{listed}\n\n"
        "Answer the instruction using only the evidence above. End every sentence with the "
        "numbers of the evidence it rests on, like [2] or [1][3]. Say nothing the evidence "
        "does not say."
    )


@dataclass(frozen=True)
class Checked:
    """A synthesis after the check: the sentences kept, and each removed one with why."""

    kept: list[str]
    removed: list[tuple[str, str]]
    cited: list[int]


def _sentences(text: str) -> list[str]:
    return [u.text for u in split_units(text) if without_markers(u.text).strip()]


def _problem(sentence: str, given: dict[int, Record]) -> str:
    """Why ``sentence`` cannot stand ("" when it can)."""
    ids = cited_ids(sentence)
    unknown = [i for i in ids if i not in given]
    if unknown:
        return f"cites [{unknown[0]}], which it was not given"
    facts = atoms(without_markers(sentence))
    if not ids:
        return f"cites nothing, yet states {facts[0].text!r}" if facts else ""
    where = Source("\n".join(given[i].quote for i in ids))
    missing = [a for a in facts if not where.holds(a)]
    if missing:
        return f"{missing[0].text!r} is in none of the records it cites"
    return ""


def check(text: str, records: Sequence[Record]) -> Checked:
    """Each sentence of a synthesis against the records it was given (module docstring)."""
    given = {r.id: r for r in records}
    kept: list[str] = []
    removed: list[tuple[str, str]] = []
    cited: list[int] = []
    for sentence in _sentences(text):
        problem = _problem(sentence, given)
        if problem:
            removed.append((one_line(sentence), problem))
            continue
        kept.append(sentence)
        cited.extend(i for i in cited_ids(sentence) if i not in cited)
    return Checked(kept, removed, cited)


def synthesise(
    client: LLMClient,
    instruction: str,
    merged: Merged,
    cancel: threading.Event | None = None,
) -> Answer:
    """The checked synthesis over ``merged``, or the evidence when it fails the check.
    Raises ``SynthesisError`` when the call itself fails."""
    if not merged.records:
        return evidence_answer(merged, "")
    prompt = synthesis_prompt(instruction, merged.records)
    try:
        reply = chat(client, [Message("user", prompt)], cancel=cancel)
    except Cancelled:
        raise
    except HarveyError as exc:
        reason = (str(exc).strip() or type(exc).__name__).splitlines()[0]
        raise SynthesisError(f"synthesis failed: {reason}") from exc
    return judged(reply.answer, merged, client.model)


def judged(text: str, merged: Merged, model: str) -> Answer:
    """A synthesis ``text`` checked against ``merged``: kept, cut, or replaced by the
    evidence when most of it fails."""
    checked = check(text, merged.records)
    total = len(checked.kept) + len(checked.removed)
    if not checked.cited or len(checked.removed) * 2 > total:
        failed = (
            f"{len(checked.removed)} of {total} sentences state what their cited evidence does not"
            if checked.cited
            else "it cites none of the evidence"
        )
        why = (
            f"{model}'s synthesis failed Harvey's check ({failed}), so here is the evidence "
            "itself, quoted word for word."
        )
        answer = evidence_answer(merged, why)
        answer.unsupported = [f"{s} — {why_not}" for s, why_not in checked.removed]
        return answer
    by_id = {r.id: r for r in merged.records}
    citations = citations_of([by_id[i] for i in sorted(checked.cited)])
    body = " ".join(one_line(s) for s in checked.kept)
    note = ""
    if checked.removed:
        note = (
            f"{FRAMING}{len(checked.removed)} sentence{'s' if len(checked.removed) > 1 else ''} "
            "stating what the evidence they cite does not say were removed "
            "(the session's recording lists them)."
        )
    text_out = "\n\n".join(p for p in (note, body, sources_block(citations)) if p)
    return Answer(
        text_out,
        citations,
        "synthesis",
        note,
        [f"{s} — {why_not}" for s, why_not in checked.removed],
    )


__all__ = ["Checked", "check", "judged", "synthesis_prompt", "synthesise"]
