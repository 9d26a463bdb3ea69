"""Loopback fake Ollama and OpenAI-compatible servers driven by a script.

They are real HTTP servers on 127.0.0.1 (a free port, one thread per request)
that speak the real wire formats — Ollama's NDJSON ``/api/chat`` and OpenAI's
SSE ``/v1/chat/completions``, tool calls included — so the code under test goes
through httpx, framing, parsing and error handling exactly as in production.

Usage::

    with FakeOpenAI([Reply("hello"), Reply(tool_calls=[("read_file", {"path": "a"})])]) as srv:
        client = OpenAIClient(srv.url, "fake-model")
        ...
        assert srv.chat_requests[0]["messages"][-1]["content"] == "hi"

A script is a list of steps consumed one per chat request, in order:

* ``Reply(text=..., tool_calls=[(name, args), ...])`` or a plain string;
* ``HTTPFailure(status, message, retry_after=None)`` — answer with an error status;
* ``Malformed(text)`` — stream ``text``, then a line that is not JSON;
* ``Truncated(text, abrupt=False)`` — stream ``text`` and stop before the end
  marker (``abrupt=True`` also breaks the HTTP framing);
* ``Slow(seconds, then)`` — wait before answering with ``then`` (timeout tests);
* ``KeepAlive(interval, text)`` — stream ``text``, then only keep-alives (``: ping``
  SSE comments, blank NDJSON lines) every ``interval`` seconds, never the end;
* ``Capped(text, tokens)`` — stream ``text`` and end at the token cap (finish reason
  ``length``);
* ``Interrupted(text)`` — stream ``text`` and close with ``[DONE]`` but no finish
  reason, as llama-cpp-python's server ends a stream the next request interrupts;
* ``Looping(text)`` — stream ``text`` again and again until the client hangs up
  (``disconnects`` counts answers the client closed; ``loops_given_up`` the loops
  that ran out of time instead).

When the script runs out, ``default_reply`` answers if given, else HTTP 400
saying so. ``delay_per_call`` waits before every chat answer; ``chunk_delay``
waits between streamed chunks (for Ctrl-C-while-streaming tests); ``keep_bodies=False``
records requests without their bodies (tests that send hundreds of megabytes).
``max_prompt_tokens`` enforces a window: a chat request whose prompt counts more
(``count_tokens(body)``, default the bytes/4 estimate) gets the real server's
"too long" error body (``FakeOpenAI(too_long_style="llama.cpp" | "openai" |
"llama-cpp-python")``; Ollama's own words) and is counted in ``rejected``. Requests for
a model not in ``models`` get the server's real 404 when ``strict_models`` is on
(default for Ollama, which really does that; off for OpenAI, because llama.cpp
and LM Studio answer with whatever model is loaded).
"""

from __future__ import annotations

from harvey.llm.scripted import Reply
from tests.fakes.base import (
    Capped,
    HTTPFailure,
    Interrupted,
    KeepAlive,
    Looping,
    Malformed,
    Received,
    Slow,
    Step,
    Truncated,
)
from tests.fakes.ollama import FakeOllama
from tests.fakes.openai import FakeOpenAI

__all__ = [
    "Capped",
    "FakeOllama",
    "FakeOpenAI",
    "HTTPFailure",
    "Interrupted",
    "KeepAlive",
    "Looping",
    "Malformed",
    "Received",
    "Reply",
    "Slow",
    "Step",
    "Truncated",
]
