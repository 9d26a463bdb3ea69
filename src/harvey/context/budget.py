"""How much context is left, and whether a file would blow it — without reading it.

Harvey's reason to exist is never overflowing a model's context silently. The
accounting here is deliberately simple and conservative:

* ``estimate_tokens`` estimates a text from its character classes
  (``estimate.text_units``: words, digits, indentation, punctuation runs,
  non-ASCII bytes, weighted per document type) divided by a ratio of units
  per token, 4 by default; units read like bytes, so the default is the old
  4-bytes heuristic. ``tokens_for_bytes`` is the estimate for a size alone
  (a file not read), with a bytes-per-token ratio.
* ``remaining_context`` subtracts everything already committed to the prompt
  (history, system prompt, injected memory / retrieval / plan text) and a
  safety margin (10 % of the window, room for the reply and tool calls) from
  the model's window. What is left is what a new file may use.
* ``file_exceeds_budget`` is the pre-read guard: it calls ``os.stat`` only, so
  asking about a 1 GB file costs the same as asking about a 1 KB one.

Calibration: backends report real prompt token counts (Ollama
``prompt_eval_count``, OpenAI ``usage.prompt_tokens``). Each sample keeps
the prompt's bytes, its units and the reported tokens, per model and per
document type (prose and code tokenise very differently — the chunker's
``DocType``); the session store keeps the recent samples in ``sessions.db``.
Two ratios come out: units per token (for texts) and bytes per token (for
sizes). The rule that keeps them safe but tight: the ratio in use is a low
quantile (the 5th percentile) of the recent samples, the smallest one while
there are few, so an estimate is below the real count for about one prompt
in twenty at most. Samples include the chat template's tokens, which only
lowers the ratio further — the safe direction.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from harvey.context.estimate import text_units
from harvey.messages import Message

if TYPE_CHECKING:
    from harvey.context.tokens import TokenCounter
    from harvey.workspace.source import Source

BYTES_PER_TOKEN = 4
DEFAULT_MARGIN = 0.10
# Ratios outside this range come from broken reports (e.g. a server counting
# cached tokens only); clamping keeps one bad sample from disabling the guard.
MIN_RATIO = 1.0
MAX_RATIO = 8.0
# Requests shorter than this are dominated by template overhead and say little.
MIN_SAMPLE_TOKENS = 32
MAX_SAMPLES = 64
# The ratio in use is this low quantile of the recent samples' ratios, once there are enough.
CALIBRATION_QUANTILE = 0.05
MIN_QUANTILE_SAMPLES = 20


def estimate_tokens(
    text: str, bytes_per_token: float = BYTES_PER_TOKEN, doc_type: str = "prose"
) -> int:
    """Token estimate of a text: ``ceil(text_units(text) / ratio)``; ``""`` → 0.

    ``bytes_per_token`` is the calibrated units-per-token ratio (units read
    like bytes, so the name stays); ``doc_type`` picks the class weights.
    """
    if not text:
        return 0
    return tokens_for_bytes(text_units(text, doc_type), bytes_per_token)


def tokens_for_bytes(size: int, bytes_per_token: float = BYTES_PER_TOKEN) -> int:
    """Tokens that ``size`` bytes are estimated to take (rounded up)."""
    if bytes_per_token <= 0:
        raise ValueError(f"bytes_per_token must be positive, not {bytes_per_token}")
    if size <= 0:
        return 0
    return math.ceil(size / bytes_per_token)


def serialize_history(history: Sequence[Message] | str) -> str:
    """The text a history costs: every message's content plus its tool-call arguments."""
    if isinstance(history, str):
        return history
    parts: list[str] = []
    for message in history:
        parts.append(message.content)
        parts.extend(call.arguments_json() for call in message.tool_calls)
    return "\n".join(parts)


@dataclass(frozen=True)
class BudgetReport:
    """The numbers ``/status`` shows: window, used, margin, remaining and the ratio."""

    window: int
    history: int
    system_prompt: int
    injected: int
    margin: int
    bytes_per_token: float

    @property
    def used(self) -> int:
        return self.history + self.system_prompt + self.injected

    @property
    def remaining(self) -> int:
        return max(0, self.window - self.used - self.margin)


def budget_report(
    context_window: int,
    *,
    history: Sequence[Message] | str = (),
    system_prompt: str = "",
    injected: Iterable[str] = (),
    bytes_per_token: float = BYTES_PER_TOKEN,
    margin: float = DEFAULT_MARGIN,
    counter: TokenCounter | None = None,
) -> BudgetReport:
    """Account for everything already in the prompt (see ``remaining_context``).

    With a ``counter`` (the backend counts exactly, ``context/tokens.py``) the
    history is counted per message with the chat template's framing, and the
    system prompt and injected texts exactly; without one, estimated.
    """
    if context_window < 0:
        raise ValueError(f"context_window must not be negative, not {context_window}")
    if not 0 <= margin < 1:
        raise ValueError(f"margin must be in [0, 1), not {margin}")
    if counter is not None:
        messages = [Message(role="user", content=history)] if isinstance(history, str) else history
        return BudgetReport(
            window=context_window,
            history=counter.count_messages(messages) if messages else 0,
            system_prompt=counter.count(system_prompt) + counter.framing(["system"]),
            injected=sum(counter.count(text) for text in injected),
            margin=math.ceil(context_window * margin),
            bytes_per_token=bytes_per_token,
        )
    return BudgetReport(
        window=context_window,
        history=estimate_tokens(serialize_history(history), bytes_per_token),
        system_prompt=estimate_tokens(system_prompt, bytes_per_token),
        injected=sum(estimate_tokens(text, bytes_per_token) for text in injected),
        margin=math.ceil(context_window * margin),
        bytes_per_token=bytes_per_token,
    )


def remaining_context(
    context_window: int,
    *,
    history: Sequence[Message] | str = (),
    system_prompt: str = "",
    injected: Iterable[str] = (),
    bytes_per_token: float = BYTES_PER_TOKEN,
    margin: float = DEFAULT_MARGIN,
    counter: TokenCounter | None = None,
) -> int:
    """Tokens left for new content: window − history − system − injected − margin, ≥ 0.

    ``injected`` is every other text put in front of the model this turn
    (recalled memory, retrieval chunks, the plan summary). The margin
    (default 10 % of the window, rounded up) is room for the reply.
    """
    return budget_report(
        context_window,
        history=history,
        system_prompt=system_prompt,
        injected=injected,
        bytes_per_token=bytes_per_token,
        margin=margin,
        counter=counter,
    ).remaining


# chunking.chunk_size_bytes: auto — each map prompt's chunk gets this share of the map
# model's usable context (window − margin − instruction − framing); the rest is slack
# for an estimate that is a little low and for the map prompt's own lines.
AUTO_CHUNK_SHARE = 0.75
MAP_FRAMING_TOKENS = 64  # "---\nChunk i of N:" and the chat template around one message
FIXED_CHUNK_BYTES = 6000  # what `auto` falls back to when the window is unknown
MAX_AUTO_CHUNK_BYTES = 4 * 1024 * 1024  # the hard bound: no prompt bigger than this


def auto_chunk_bytes(
    context_window: int,
    *,
    instruction: str = "",
    bytes_per_token: float = BYTES_PER_TOKEN,
    margin: float = DEFAULT_MARGIN,
    share: float = AUTO_CHUNK_SHARE,
) -> int:
    """The chunk size in bytes that fills ``share`` of a map call's usable context.

    Usable = window − the reply margin − the instruction − the map prompt's
    framing; the chunk gets ``share`` of it in tokens, turned into bytes with
    the (calibrated, per document type) ratio. Never below 200 bytes (the
    config's floor) nor above ``MAX_AUTO_CHUNK_BYTES``. Why a share and not
    all of it: the ratio is an estimate, and a server that still refuses a
    chunk costs a split and two more calls (``split_retry``).
    """
    usable = (
        context_window
        - math.ceil(context_window * margin)
        - estimate_tokens(instruction, bytes_per_token)
        - MAP_FRAMING_TOKENS
    )
    size = int(max(0, usable) * share * bytes_per_token)
    return max(200, min(MAX_AUTO_CHUNK_BYTES, size))


def file_exceeds_budget(
    path: str | os.PathLike[str], budget: int, bytes_per_token: float = BYTES_PER_TOKEN
) -> tuple[bool, int]:
    """``(exceeds, size_in_bytes)`` for the file at ``path``, from ``os.stat`` alone.

    The file is never opened, so the check costs the same for any size and
    works on files the user cannot read. A missing path raises
    ``FileNotFoundError`` (from ``os.stat``).
    """
    size = os.stat(Path(path)).st_size
    return tokens_for_bytes(size, bytes_per_token) > budget, size


@dataclass(frozen=True)
class FileCheck:
    """The pre-read guard's answer for one file: over budget?, its size, its tokens."""

    exceeds: bool
    size: int
    tokens: int


@dataclass(frozen=True)
class ReadBudget:
    """What one file read may use: a token budget and the ratios to estimate with.

    Built in one place (``PromptBudget.read_budget``) so every path that asks
    "does this file fit?" — ``read_file``, ``/read``, files named to a tool-less
    model — asks ``check`` with the same budget and the same calibrated ratios
    (``harvey analyze`` sizes its synthesis with that ratio too). The ratios are
    per document type (the chunker's ``detect_doc_type`` of the file's name):
    ``bytes_per_token`` for prose sizes, ``sizes`` and ``texts`` for the others
    (bytes per token for a size, units per token for a text); ``count`` is the
    backend's exact counter (``None`` from it: the backend cannot count).
    """

    tokens: int
    bytes_per_token: float = BYTES_PER_TOKEN
    sizes: Mapping[str, float] = field(default_factory=dict)
    texts: Mapping[str, float] = field(default_factory=dict)
    count: Callable[[str], int | None] | None = field(default=None, compare=False)

    def size_ratio(self, doc_type: str = "prose") -> float:
        return self.sizes.get(doc_type, self.bytes_per_token)

    def tokens_for(self, size: int, doc_type: str = "prose") -> int:
        """The estimated tokens of ``size`` bytes, at this budget's ratio for the type."""
        return tokens_for_bytes(size, self.size_ratio(doc_type))

    def fits(self, size: int, doc_type: str = "prose") -> bool:
        """Whether ``size`` bytes fit in this budget."""
        return self.tokens_for(size, doc_type) <= self.tokens

    def check(self, path: str | os.PathLike[str] | Source) -> FileCheck:
        """Whether the file at ``path`` fits, cheaply and tightly.

        From ``os.stat`` first, at the size ratio of the file's type: a file
        that fits by that (conservative) ratio fits, and one too big to fit at
        ``MAX_RATIO`` bytes per token exceeds — a 1 GB file costs one ``stat``.
        Only in between, where a bytes ratio cannot tell (code's spread is
        wide), is the file read — at most ``tokens × MAX_RATIO`` bytes — and its
        text counted exactly (``count``) or estimated from its character
        classes. A file that cannot be read keeps the answer from its size.
        Raises ``FileNotFoundError`` for a missing path (from ``os.stat``). A ``Source``
        (``workspace.open_for_model``) lends a document its one read of the file.
        """
        from harvey.workspace.kinds import detect_doc_type, document_kind
        from harvey.workspace.source import Source

        if isinstance(path, Source):
            if path.is_document:
                return self._check_document(path)
            path = path.path
        if document_kind(Path(path)) is not None:
            return self._check_document(Path(path))
        doc_type = detect_doc_type(Path(path)).value
        size = os.stat(path).st_size
        by_size = self.tokens_for(size, doc_type)
        if by_size <= self.tokens or size > self.tokens * MAX_RATIO:
            return FileCheck(by_size > self.tokens, size, by_size)
        text = _read_small(path, size)
        if text is None:
            return FileCheck(True, size, by_size)
        tokens = self.count(text) if self.count is not None else None
        if tokens is None:
            tokens = estimate_tokens(text, self.texts.get(doc_type, BYTES_PER_TOKEN), doc_type)
        return FileCheck(tokens > self.tokens, size, tokens)

    def _check_document(self, path: Path | Source) -> FileCheck:
        """A PDF/DOCX/HTML/EPUB counts by its text, never its bytes: a PDF's estimated
        from its page count and its first pages (``estimated_source_text_bytes``). One that
        cannot be read fits here, so its reader reports why in one line."""
        from harvey.documents.extraction import estimated_source_text_bytes
        from harvey.errors import HarveyError
        from harvey.workspace.source import Source

        if not isinstance(path, Source):
            os.stat(path)  # FileNotFoundError as for any file
        try:
            source = path if isinstance(path, Source) else Source.at(path)
            size = estimated_source_text_bytes(source)
        except HarveyError:
            return FileCheck(False, 0, 0)
        tokens = self.tokens_for(size, "prose")
        return FileCheck(tokens > self.tokens, size, tokens)


def _read_small(path: str | os.PathLike[str], size: int) -> str | None:
    """A regular file's text (``size`` bytes at most), never blocking on a FIFO; ``None``
    when it cannot be read."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(size)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data.decode("utf-8", "replace")


def calibrated_ratio(
    samples: Sequence[tuple[int, int]], quantile: float = CALIBRATION_QUANTILE
) -> float | None:
    """The safe bytes-per-token ratio implied by ``(prompt_bytes, prompt_tokens)`` samples.

    A low ``quantile`` (default the 5th percentile) of the usable samples'
    ratios (tokens ≥ ``MIN_SAMPLE_TOKENS``), clamped to ``[MIN_RATIO,
    MAX_RATIO]``; ``None`` when no sample is usable. Below
    ``MIN_QUANTILE_SAMPLES`` samples a quantile says nothing, so the smallest
    ratio is used, as before. Why not always the minimum: one odd prompt (a
    table of hex numbers) would then set the ratio for every later one, and
    the benchmark showed the minimum over-counting prose by a quarter and code
    by two thirds; the 5th percentile keeps under-estimates to about one
    document in twenty, which the 10 % reply margin absorbs.
    """
    ratios = sorted(b / t for b, t in samples if t >= MIN_SAMPLE_TOKENS and b > 0)
    if not ratios:
        return None
    if len(ratios) < MIN_QUANTILE_SAMPLES:
        chosen = ratios[0]
    else:
        chosen = ratios[int(quantile * (len(ratios) - 1))]
    return min(MAX_RATIO, max(MIN_RATIO, chosen))


@dataclass
class Calibration:
    """An in-memory calibration: the same rule as the session store applies
    to its ``calibration_samples`` rows, for code without a store (benchmarks).

    ``samples`` are ``(units, tokens)`` pairs (the text ratio), ``sizes``
    ``(bytes, tokens)`` pairs (the size ratio). Only the most recent
    ``MAX_SAMPLES`` are kept, so a changed chat template is forgotten in time.
    """

    model: str
    samples: list[tuple[int, int]] = field(default_factory=list)
    doc_type: str = "prose"  # the chunker's DocType value the samples are of
    sizes: list[tuple[int, int]] = field(default_factory=list)

    def add(self, prompt_bytes: int, prompt_tokens: int | None, units: int | None = None) -> None:
        """Record one request; reports without a token count are ignored. Without
        ``units`` the bytes stand in (as the store does for samples from before units)."""
        if prompt_tokens is None or prompt_tokens <= 0 or prompt_bytes <= 0:
            return
        self.samples.append((int(prompt_bytes if units is None else units), int(prompt_tokens)))
        self.sizes.append((int(prompt_bytes), int(prompt_tokens)))
        del self.samples[:-MAX_SAMPLES]
        del self.sizes[:-MAX_SAMPLES]

    def add_text(self, text: str, prompt_tokens: int | None) -> None:
        """Record one request given its text and the reported prompt tokens."""
        size = len(text.encode("utf-8", "surrogatepass"))
        self.add(size, prompt_tokens, text_units(text, self.doc_type) if text else None)

    def add_messages(self, messages: Sequence[Message], prompt_tokens: int | None) -> None:
        """Record a request given the messages sent and the reported prompt tokens."""
        self.add_text(serialize_history(messages), prompt_tokens)

    @property
    def ratio(self) -> float | None:
        """Units per token for texts (``estimate_tokens``)."""
        return calibrated_ratio(self.samples)

    @property
    def size_ratio(self) -> float | None:
        """Bytes per token for sizes (``tokens_for_bytes``)."""
        return calibrated_ratio(self.sizes)

    def bytes_per_token(self, default: float = BYTES_PER_TOKEN) -> float:
        """The text ratio to estimate with: the calibrated one, else ``default``."""
        ratio = self.ratio
        return default if ratio is None else ratio
