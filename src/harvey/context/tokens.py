"""Exact token counts, when the backend can count, cached so a long history is cheap.

An estimate from bytes has to be conservative, and conservative means wasted
context. Some backends can say exactly how many tokens a text is — the
embedded model with its own tokenizer, a llama.cpp server with ``/tokenize``,
llama-cpp-python's server with ``/extras/tokenize/count`` (see
``harvey.llm.counting``) — and then the budget can use every token the window
has.

A prompt is counted per message: the template's framing for the roles in
the prompt (``Tokenizer.framing``, the template rendered with empty
contents) plus each message's content, counted once and cached by content.
Special tokens delimit the messages, so the sum equals the count of the
rendered prompt to within a token per message; the next turn re-counts only
what is new. A counting call that fails (the server went away) falls back to
the estimate for that text rather than failing the turn.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

from harvey.errors import HarveyError
from harvey.messages import Message
from harvey.protocols import Tokenizer

log = logging.getLogger(__name__)

MAX_CACHED = 4096  # contents remembered per counter (keys are digests, not the texts)


def message_text(message: Message) -> str:
    """What of a message is counted: its content and its tool calls' arguments."""
    parts = [message.content, *(call.arguments_json() for call in message.tool_calls)]
    return "\n".join(p for p in parts if p)


class TokenCounter:
    """A ``Tokenizer`` behind a bounded cache keyed by content digest; thread-safe."""

    def __init__(
        self,
        tokenizer: Tokenizer,
        fallback: Callable[[str], int],
        max_cached: int = MAX_CACHED,
    ) -> None:
        self.tokenizer = tokenizer
        self.fallback = fallback  # the estimate, for a text the backend failed to count
        self.max_cached = max_cached
        self._texts: OrderedDict[bytes, int] = OrderedDict()
        self._framing: dict[tuple[str, ...], int] = {}
        self._lock = threading.Lock()
        self.calls = 0  # texts actually sent to the tokenizer (the cache's misses)

    @property
    def method(self) -> str:
        return f"exact: {self.tokenizer.method}"

    def count(self, text: str) -> int:
        """Tokens of ``text``; counted once per distinct content."""
        if not text:
            return 0
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._lock:
            if key in self._texts:
                self._texts.move_to_end(key)
                return self._texts[key]
        try:
            tokens = self.tokenizer.count(text)
        except HarveyError as exc:  # advisory: the estimate stands in, the turn goes on
            log.warning("token count failed, estimating instead: %s", exc)
            return self.fallback(text)
        with self._lock:
            self.calls += 1
            self._texts[key] = tokens
            while len(self._texts) > self.max_cached:
                self._texts.popitem(last=False)
        return tokens

    def framing(self, roles: Sequence[str]) -> int:
        key = tuple(roles)
        with self._lock:
            if key in self._framing:
                return self._framing[key]
        try:
            tokens = self.tokenizer.framing(key)
        except HarveyError as exc:
            log.warning("chat template count failed, estimating instead: %s", exc)
            tokens = 8 * len(key)
        with self._lock:
            if len(self._framing) > 256:
                self._framing.clear()
            self._framing[key] = tokens
        return tokens

    def count_messages(self, messages: Sequence[Message]) -> int:
        """The whole prompt: the template's framing plus every message's content."""
        return self.framing([m.role for m in messages]) + sum(
            self.count(message_text(m)) for m in messages
        )
