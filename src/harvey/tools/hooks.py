"""Tool hooks: behaviour wrapped around every tool call (the onion model).

A ``HookRegistry`` has the same interface as ``ToolRegistry`` (``ToolExecutor``),
so the agent always executes through it and never knows whether hooks exist.

    execute(call)
      before_execute  hook[0] → hook[1] → …      (may change the context or deny)
      inner.execute(call)
      after_execute   … → hook[1] → hook[0]      (may replace the result)

A before-hook that raises (``harvey.errors.HookDenied`` to refuse) short-circuits:
the tool does not run, no after-hook runs, and the model gets an ``error:``
result carrying the hook's message. An after-hook that crashes is logged and
skipped (fail-open): a bug in auditing or offloading must not lose the tool's
real output.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

from harvey.errors import Cancelled, HarveyError
from harvey.messages import ToolCall, ToolResult
from harvey.tools.registry import ToolContext, ToolExecutor, TurnAnswered

log = logging.getLogger(__name__)


@runtime_checkable
class ToolHook(Protocol):
    def before_execute(self, ctx: ToolContext, call: ToolCall) -> ToolContext | None:
        """Return a changed context, None to keep it, or raise to deny the call."""
        ...

    def after_execute(self, ctx: ToolContext, call: ToolCall, result: ToolResult) -> ToolResult:
        """Return the result to pass outwards (the same one when there is nothing to do)."""
        ...


class HookRegistry:
    """Wraps a ``ToolExecutor`` with hooks; with zero hooks it behaves exactly like it."""

    def __init__(self, inner: ToolExecutor, hooks: Iterable[ToolHook] = ()) -> None:
        self.inner = inner
        self._hooks: list[ToolHook] = list(hooks)

    @property
    def hooks(self) -> tuple[ToolHook, ...]:
        return tuple(self._hooks)

    def add(self, hook: ToolHook, *, outermost: bool = False) -> None:
        """Append a hook: it runs its before-step last and its after-step first
        (``outermost``: first and last, around every other hook)."""
        self._hooks.insert(0 if outermost else len(self._hooks), hook)

    def schemas(self) -> list[dict[str, Any]]:
        return self.inner.schemas()

    def names(self) -> list[str]:
        return self.inner.names()

    def execute(self, ctx: ToolContext, call: ToolCall) -> ToolResult:
        for hook in self._hooks:
            try:
                changed = hook.before_execute(ctx, call)
            except Cancelled:
                raise  # Ctrl-C ends the turn, as it does inside ToolRegistry
            except Exception as exc:  # a denial (HarveyError) or a hook bug, which _denial logs
                return ToolResult(call.id, call.name, _denial(hook, exc))
            if changed is not None:
                ctx = changed
        try:
            result = self.inner.execute(ctx, call)
        except TurnAnswered as answered:  # the answer's tool message is hooked like any other
            if answered.result is None:
                raise
            raise answered.with_result(self._after(ctx, call, answered.result)) from None
        return self._after(ctx, call, result)

    def _after(self, ctx: ToolContext, call: ToolCall, result: ToolResult) -> ToolResult:
        for hook in reversed(self._hooks):
            try:
                result = hook.after_execute(ctx, call, result)
            except Cancelled:
                raise
            except Exception:  # fail-open: a crashed after-hook is logged, the result kept
                log.exception("after-hook %s failed on %s; result kept", _name(hook), call.name)
        return result


def _name(hook: object) -> str:
    return type(hook).__name__


def _denial(hook: object, exc: Exception) -> str:
    if isinstance(exc, HarveyError):
        message = str(exc) or f"denied by {_name(hook)}"
        return message if message.startswith("error:") else f"error: {message}"
    log.exception("before-hook %s crashed", _name(hook))
    return f"error: {_name(hook)} refused the call: {type(exc).__name__}: {exc}"
