"""Recognising "the prompt is too long" in every server's own words.

Each server says it differently, and the difference matters: a too-long
prompt is not a transient failure (retrying sends the same prompt) and not a
configuration error — the chunked analysis recovers by splitting the chunk,
and a chat turn shows the sizes in one line. So the words are recognised in
one place and turned into ``ContextTooLong``:

* llama.cpp's server: HTTP 400, ``"the request exceeds the available context
  size..."``, type ``exceed_context_size_error`` with ``n_prompt_tokens`` and
  ``n_ctx`` in the error object;
* OpenAI: HTTP 400, code ``context_length_exceeded``, "This model's maximum
  context length is N tokens. However, your messages resulted in M tokens";
* llama-cpp-python's server: the same code, "... However, you requested M
  tokens (P in the messages, C in the completion)";
* Ollama (when it does not truncate): ``{"error": "... input length exceeds
  the context length ..."}``;
* the embedded model (llama-cpp-python): ``ValueError("Requested tokens (M)
  exceed context window of N")``.
"""

from __future__ import annotations

import re
from typing import Any

from harvey.errors import ContextTooLong
from harvey.llm import wire
from harvey.protocols import token_count

_PHRASES = re.compile(
    r"exceeds? the available context size|context_length_exceeded|exceed_context_size"
    r"|maximum context length is|exceeds? (?:the |its )?context (?:length|window|size)"
    r"|input length exceeds|requested tokens \(\d+\) exceed context window",
    re.I,
)
_WINDOW = (
    re.compile(r"maximum context length is (\d+)", re.I),
    re.compile(r"exceed context window of (\d+)", re.I),
    re.compile(r"context (?:length|size|window) (?:of |is )?\(?(\d+)\)?", re.I),
)
_PROMPT = (
    re.compile(r"\((\d+) in the messages", re.I),
    re.compile(r"resulted in (\d+) tokens", re.I),
    re.compile(r"requested tokens \((\d+)\)", re.I),
    re.compile(r"you requested (\d+) tokens", re.I),
)


def _first_int(patterns: tuple[re.Pattern[str], ...], text: str) -> int | None:
    for pattern in patterns:
        found = pattern.search(text)
        if found:
            return int(found.group(1))
    return None


def _error_object(body: bytes | str) -> dict[str, Any]:
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    try:
        data = wire.loads(text)
    except ValueError:
        return {}
    err = data.get("error") if isinstance(data, dict) else None
    return err if isinstance(err, dict) else {}


def too_long_error(where: str, detail: str, body: bytes | str = b"") -> ContextTooLong | None:
    """``ContextTooLong`` when ``detail`` (or the raw ``body``) says the prompt is too long.

    ``where`` names the server ("llama.cpp at http://..."); ``None`` when the
    error is something else.
    """
    err = _error_object(body)
    code = f"{err.get('code', '')} {err.get('type', '')}"
    if not (_PHRASES.search(detail) or _PHRASES.search(code)):
        return None
    prompt = err.get("n_prompt_tokens")
    window = err.get("n_ctx")
    # a server's numbers, kept only when a request could have them (``token_count``)
    prompt = token_count(prompt) or token_count(_first_int(_PROMPT, detail))
    window = token_count(window) or token_count(_first_int(_WINDOW, detail))
    return ContextTooLong(describe(where, prompt, window), prompt, window)


def describe(where: str, prompt: int | None, window: int | None) -> str:
    """The one line a person sees: both sizes when known, and what to do."""
    if prompt is not None and window is not None:
        sizes = f"{prompt:,} tokens for a {window:,}-token context"
    elif window is not None:
        sizes = f"more than its {window:,}-token context"
    elif prompt is not None:
        sizes = f"{prompt:,} tokens, more than its context"
    else:
        sizes = "longer than its context"
    return (
        f"{where} rejected the prompt as too long ({sizes}) — send less, or use a model "
        "with a larger context window"
    )


def with_advice(exc: ContextTooLong, advice: str) -> ContextTooLong:
    """``exc`` with what to do in the command the person is in (the REPL's ``/clear``
    means nothing in ``harvey run``): each front end adds its own words."""
    return ContextTooLong(f"{exc}; {advice}", exc.prompt_tokens, exc.window)
