"""The pipelines the analysis-quality benchmark runs side by side, on one model.

* **Harvey** — ``harvey.analyze_file`` as it is, in one of its evidence styles
  (``harvey``: its finder; ``choose``: the model picks among numbered candidates;
  ``model``: the model writes records whose quotes are verified) and answer kinds.
* **previous** — Harvey before evidence: the seed's prompts (the instruction, then
  ``Chunk i of N:`` and the chunk; "Combine the following N section summaries into a
  single coherent response"), chunks sized to the window, replies capped as before.
* **one prompt** — what a chat tool does: the document cut to fit the window, then
  the instruction; cut by the server's own count where the backend can count (an
  over-long prompt makes llama-cpp-python's server drop the connection, not refuse it).
* **textbook** — LangChain's ``map_reduce`` question-answering chain with its own
  prompts written out (``question_prompt``: "Use the following portion of a long
  document to see if any of the text is relevant to answer the question. Return
  any relevant text verbatim."; ``combine_prompt``: "Given the following extracted
  parts of a long document and a question, create a final answer. …"), over
  LangChain's ``RecursiveCharacterTextSplitter`` at 4,000 characters.

Every pipeline returns its answer, its citations (Harvey's only), its model calls
and its wall time; ``Counting`` counts the calls whatever path makes them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harvey.analysis.answer import Citation
from harvey.analysis.api import AnalyzeOptions, analyze_file
from harvey.analysis.file_chunks import chunk_config, chunks_of, source_size
from harvey.analysis.map_calls import run_bounded
from harvey.config.settings import ChunkingSettings
from harvey.errors import ContextTooLong
from harvey.llm.base import chat, map_client_of, token_counter_of
from harvey.messages import Message
from harvey.protocols import LLMClient
from harvey.workspace.source import Source


class Counting:
    """An ``LLMClient`` that counts the chat requests made through it (and its variants)."""

    def __init__(self, inner: LLMClient, counter: list[int] | None = None) -> None:
        self._inner = inner
        self._counter = counter if counter is not None else [0]
        self.backend = inner.backend
        self.model = inner.model
        self.endpoint = inner.endpoint

    @property
    def calls(self) -> int:
        return self._counter[0]

    def stream_chat(
        self, messages: Sequence[Message], tools: Any = None, **kw: Any
    ) -> Iterator[Any]:
        self._counter[0] += 1
        return self._inner.stream_chat(messages, tools, **kw)

    def for_map_calls(self) -> Counting:
        return Counting(map_client_of(self._inner), self._counter)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@dataclass
class Outcome:
    text: str
    seconds: float
    calls: int
    citations: list[Citation] = field(default_factory=list)
    error: str = ""


def _timed(client: LLMClient, run: Any) -> Outcome:
    counting = Counting(client)
    began = time.monotonic()
    try:
        text, citations = run(counting)
        error = ""
    except Exception as exc:  # a failed pipeline is a row that says so, not a dead bench
        text, citations, error = "", [], f"{type(exc).__name__}: {exc}"
    return Outcome(text, time.monotonic() - began, counting.calls, citations, error)


# ----------------------------------------------------------------- Harvey


def harvey(
    client: LLMClient,
    path: Path,
    instruction: str,
    *,
    evidence: str = "auto",
    answer: str = "auto",
    chunk_size: int | str = "auto",
) -> Outcome:
    """Harvey's analysis; ``chunk_size`` a number of bytes, ``auto`` (as a user gets it),
    or ``window``: the window-sized chunk ``auto`` is without the cap it has when the
    model chooses the evidence (``file_chunks.CHOOSING_CHUNK_BYTES``), for the curve."""
    if chunk_size == "window":
        chunk_size = window_chunk_bytes(client, path, instruction)

    def run(counting: Counting) -> tuple[str, list[Citation]]:
        result = analyze_file(
            path,
            instruction,
            settings=ChunkingSettings(chunk_size_bytes=chunk_size, max_chunks=10_000),
            client=counting,  # type: ignore[arg-type]
            options=AnalyzeOptions(evidence=evidence, answer=answer),  # type: ignore[arg-type]
        )
        return result.text, result.citations

    return _timed(client, run)


def window_chunk_bytes(client: LLMClient, path: Path, instruction: str) -> int:
    """``chunk_size_bytes: auto`` for ``client`` when Harvey's finder finds the evidence:
    the share of the window ``auto_chunk_bytes`` gives, with the same sizing."""
    from harvey.analysis.api import Heuristic

    ratio = Heuristic().size_ratio(client, Source.at(path, path.name).doc_type.value)
    cfg = chunk_config(ChunkingSettings(), client, instruction=instruction, bytes_per_token=ratio)
    return cfg.chunk_size_bytes


# ----------------------------------------------------------------- previous Harvey


def seed_map_prompt(instruction: str, index: int, total: int, chunk: str) -> str:
    return f"{instruction}\n\n---\nChunk {index} of {total}:\n{chunk}"


def seed_reduce_prompt(instruction: str, partials: Sequence[str]) -> str:
    return (
        f"{instruction}\n\n---\nCombine the following {len(partials)} section summaries "
        "into a single coherent response:\n\n" + "\n\n---\n".join(partials)
    )


def _map_all(client: LLMClient, prompts: Sequence[str]) -> list[str]:
    out = [""] * len(prompts)

    def done(i: int, text: str | None, err: BaseException | None) -> None:
        out[i] = f"[chunk {i + 1} failed: {err}]" if err is not None else (text or "")

    run_bounded(client, prompts, 1, threading.Event(), lambda _i: None, done)
    return out


def previous(client: LLMClient, path: Path, instruction: str) -> Outcome:
    def run(counting: Counting) -> tuple[str, list[Citation]]:
        cfg = chunk_config(ChunkingSettings(), counting, instruction=instruction)  # type: ignore[arg-type]
        source = Source.at(path, path.name)
        chunks, total = chunks_of(source, source_size(source), cfg)
        texts = [c if isinstance(c, str) else c.text for c in chunks]
        prompts = [seed_map_prompt(instruction, i, total, t) for i, t in enumerate(texts, 1)]
        partials = _map_all(counting.for_map_calls(), prompts)  # type: ignore[arg-type]
        reply = chat(counting, [Message("user", seed_reduce_prompt(instruction, partials))])  # type: ignore[arg-type]
        return reply.answer, []

    return _timed(client, run)


# ----------------------------------------------------------------- one prompt


def one_prompt(client: LLMClient, text: str, instruction: str) -> Outcome:
    tokenizer = token_counter_of(client)

    def fitted(room: int) -> int:
        """The longest cut of ``text`` whose prompt the backend counts within ``room``."""
        cut = len(text)
        while cut > 0:
            tokens = tokenizer.count(f"{text[:cut]}\n\n{instruction}")
            if tokens <= room:
                return cut
            cut = min(int(cut * room / tokens * 0.98), cut - 1)
        return 0

    def run(counting: Counting) -> tuple[str, list[Citation]]:
        window = counting.capabilities().context_window
        room = max(256, int(window * 0.9) - 400 - len(instruction) // 3)
        cut = fitted(room) if tokenizer is not None else int(room * 3.6)
        while True:
            prompt = f"{text[:cut]}\n\n{instruction}"
            try:
                return chat(counting, [Message("user", prompt)]).answer, []  # type: ignore[arg-type]
            except ContextTooLong:
                cut = int(cut * 0.85)

    return _timed(client, run)


# ----------------------------------------------------------------- textbook map-reduce

QUESTION_PROMPT = (
    "Use the following portion of a long document to see if any of the text is relevant "
    "to answer the question. \nReturn any relevant text verbatim.\n{context}\n"
    "Question: {question}\nRelevant text, if any:"
)
COMBINE_PROMPT = (
    "Given the following extracted parts of a long document and a question, create a final "
    "answer. \nIf you don't know the answer, just say that you don't know. Don't try to make "
    "up an answer.\n\nQUESTION: {question}\n=========\n{summaries}\n=========\nFINAL ANSWER:"
)
TEXTBOOK_CHUNK = 4000
TEXTBOOK_COLLAPSE_CHARS = 10_000  # LangChain's token_max of 3,000, at its ~3.3 chars a token


def textbook(client: LLMClient, text: str, instruction: str) -> Outcome:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    def run(counting: Counting) -> tuple[str, list[Citation]]:
        splitter = RecursiveCharacterTextSplitter(chunk_size=TEXTBOOK_CHUNK, chunk_overlap=200)
        pieces = splitter.split_text(text)
        prompts = [QUESTION_PROMPT.format(context=p, question=instruction) for p in pieces]
        partials = _map_all(counting, prompts)  # type: ignore[arg-type]
        while len("\n\n".join(partials)) > TEXTBOOK_COLLAPSE_CHARS and len(partials) > 1:
            groups: list[list[str]] = [[]]
            for partial in partials:  # collapse, as ReduceDocumentsChain does
                if (
                    groups[-1]
                    and len("\n\n".join([*groups[-1], partial])) > TEXTBOOK_COLLAPSE_CHARS
                ):
                    groups.append([])
                groups[-1].append(partial)
            partials = [
                chat(
                    counting,  # type: ignore[arg-type]
                    [
                        Message(
                            "user",
                            COMBINE_PROMPT.format(question=instruction, summaries="\n\n".join(g)),
                        )
                    ],
                ).answer
                for g in groups
            ]
        final = COMBINE_PROMPT.format(question=instruction, summaries="\n\n".join(partials))
        return chat(counting, [Message("user", final)]).answer, []  # type: ignore[arg-type]

    return _timed(client, run)


__all__ = [
    "COMBINE_PROMPT",
    "QUESTION_PROMPT",
    "Counting",
    "Outcome",
    "harvey",
    "one_prompt",
    "previous",
    "seed_map_prompt",
    "seed_reduce_prompt",
    "textbook",
]
