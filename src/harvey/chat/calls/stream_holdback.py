"""The streamed display holds back text that may be a tool call written as text.

A model that writes its call as text (``<tool_call>{…}``) streams the markup
like any answer; shown as it comes, the person would see it flash before
Harvey decides it is a call. :class:`HoldBack` sits between the stream and the
display: text passes through at once, except from a line that begins like a
call's markup (or a reply that begins like a bare or fenced JSON object),
which is held until it is decided. When the reply ends, ``finish`` shows the
held text only if it was not a call after all.

Its own module, so other wrappers of the streamed display (a loop guard, an
empty-reply check) compose with it instead of editing the same function.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from harvey.chat.calls.text_tool_calls import MARKERS


@functools.cache
def _patterns() -> tuple[Any, Any, Any]:
    """The line-call, reply-call and think patterns, compiled on first use: ``regex`` (for
    partial matches) costs 10-20 ms to import, which a ``harvey run`` start never pays."""
    import regex

    # where a call may begin: a marker at a line start, after blanks and any complete
    # <think> blocks (the parser drops thinking wherever it sits, so must the display)
    markers = "|".join(regex.escape(m) for m in MARKERS)
    # (or a fenced JSON block after preamble: it may be a call, held until decided)
    fence = r"```[ \t]*(?i:json)?[ \t]*\n\s*[\{\[]"
    line_call = regex.compile(
        r"[ \t]*(?:<think>.*?</think>[ \t]*)*(?:" + markers + "|" + fence + r")", regex.S
    )
    # a reply that begins (after blanks and thinking) like a whole-reply JSON call
    reply_call = regex.compile(r"\s*(?:\{|\[\s*\{|```[ \t]*(?:json)?[ \t]*\n\s*\{)", regex.I)
    think = regex.compile(r"\s*<think>.*?</think>", regex.S)
    return line_call, reply_call, think


class HoldBack:
    """Wraps ``on_text``; ``feed`` each delta, then ``finish(shown_rest)``."""

    def __init__(self, on_text: Callable[[str], None] | None) -> None:
        self.on_text = on_text
        self.text = ""
        self.shown = 0  # characters of ``text`` already passed on

    def feed(self, delta: str) -> None:
        self.text += delta
        safe = self._safe_end()
        if safe > self.shown:
            self._show(self.text[self.shown : safe])
            self.shown = safe

    def finish(self, is_call: bool) -> None:
        """The reply is complete: show what was held unless it was a call."""
        if not is_call and self.shown < len(self.text):
            self._show(self.text[self.shown :])
        self.shown = len(self.text)

    def _show(self, text: str) -> None:
        if self.on_text is not None and text:
            self.on_text(text)

    def _safe_end(self) -> int:
        """How much of the text so far can no longer turn out to be call markup."""
        text = self.text
        start = self._reply_start()
        if start is None:  # still inside a leading <think> block: thinking is shown
            return len(text)
        if _patterns()[1].match(text, pos=start, partial=True):
            return min(start, len(text))
        at = max(self.shown, start)
        if at > start and text[at - 1] != "\n":  # only line starts can open a call
            at = text.find("\n", at)
            at = len(text) if at < 0 else at + 1
        while at < len(text):
            if _patterns()[0].match(text, pos=at, partial=True):
                return at
            newline = text.find("\n", at)
            if newline < 0:
                return len(text)
            at = newline + 1
        return at

    def _reply_start(self) -> int | None:
        """Where the reply proper begins, past blanks and complete ``<think>`` blocks;
        None while an opening ``<think>`` is still unclosed (or only partly written)."""
        at = 0
        while True:
            match = _patterns()[2].match(self.text, pos=at)
            if match is None:
                break
            at = match.end()
        rest = self.text[at:].lstrip()
        if rest.startswith("<think>"):
            return None
        return at
