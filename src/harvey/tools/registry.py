"""The tool registry: the one place every tool call is executed.

``ToolRegistry.execute(ctx, call)`` never raises for a tool's own failure: it
returns a ``ToolResult`` whose content starts with ``error:``. The one thing
it lets through (besides Ctrl-C) is ``TurnAnswered``: a tool whose result is
the turn's answer (a chunked read of a file too big for the context) says so
by raising, with its result made as any other, and the turn loop catches it. Hooks
(``tools/hooks.py``) wrap this same interface, so the agent does not care
whether it holds the bare registry or a wrapped one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from harvey.context.budget import ReadBudget
from harvey.errors import Cancelled, HarveyError
from harvey.messages import ToolCall, ToolResult
from harvey.redact import Redactor, active
from harvey.ui import WriteRequest
from harvey.workspace.source import Source, open_for_model

if TYPE_CHECKING:
    from harvey.config.settings import LimitsSettings

log = logging.getLogger(__name__)

# Called by read_file when a file is too big for the context that remains.
# Gets (the file's Source, size in bytes, estimated tokens, remaining tokens) and
# returns the tool result to give the model instead of the file's content.
OversizeHandler = Callable[[Source, int, int, int], str]

# Called by every tool that changes a workspace file, with the described write
# and a function that performs it; returns the tool result (the write's, or a
# refusal) and raises Cancelled when the person ends the turn. See approval.py.
WriteApprover = Callable[[WriteRequest, Callable[[], str]], str]


class TurnAnswered(Exception):
    """A tool's output answers the whole turn: the loop ends it after this round.

    Raised inside a tool (by its ``on_oversize`` handler) with ``reply``; the
    registry adds the call's ``result`` (redacted, as every result) and the
    hooks replace it as they would any result, so the model's history and the
    session file see the same tool message as for a tool that returned.
    """

    def __init__(
        self, reply: str, result: ToolResult | None = None, *, by_harvey: bool = False
    ) -> None:
        super().__init__(reply)
        self.reply = reply
        self.result = result
        self.by_harvey = by_harvey  # the reply is the evidence itself: no model wrote it

    def with_result(self, result: ToolResult) -> TurnAnswered:
        return TurnAnswered(self.reply, result, by_harvey=self.by_harvey)


@dataclass(frozen=True)
class ToolContext:
    """Everything a tool may need from the session, passed explicitly.

    ``read_budget`` returns the budget a single file read may use (the
    remaining context times the chunking threshold, with the calibrated
    bytes-per-token ratio to estimate with); ``None`` means no guard,
    which is exactly the behaviour with ``chunking.enabled: false``.
    ``approve_write`` is the only way a tool may change a file; ``None`` means
    no one can approve, so such tools refuse (fail closed).
    """

    workspace: Path
    session_id: str = ""
    interactive: bool = False
    confirm: Callable[[str], bool] | None = None
    read_budget: Callable[[], ReadBudget] | None = None
    on_oversize: OversizeHandler | None = None
    approve_write: WriteApprover | None = None
    allowed_commands: tuple[str, ...] = ()
    shell_timeout: float = 30.0
    sandbox: str = "auto"  # security.sandbox: which OS confinement commands run under
    limits: LimitsSettings | None = None  # security.limits; None: the defaults
    unix_sockets: bool = False  # security.unix_sockets: approved commands may use them
    secret_files: tuple[str, ...] = ()  # security.secret_files, beside the defaults
    harvey_home: Path | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    def evolve(self, **changes: Any) -> ToolContext:
        return replace(self, **changes)

    def source(self, path: str | Path) -> Source:
        """The one way a tool reads a workspace file: decided once (inside, not Harvey's
        own state, not a secret file or a hard link by either name, a regular file), read
        and hashed at most once. Raises the workspace's errors (``NotAFile``,
        ``FileRefused``, ``WorkspaceError``)."""
        return open_for_model(self.workspace, path)


@runtime_checkable
class Tool(Protocol):
    name: str
    description: str
    parameters: dict[str, Any]  # JSON schema of the arguments

    def run(self, ctx: ToolContext, args: dict[str, Any]) -> str: ...


class Deferred:
    """A tool known by its class and built on its first call.

    A session offers a dozen tools and a turn calls few of them, often none:
    the name, description and schema are class attributes, so the model can be
    offered the tool while its collaborators (a store, a plan file, a sandbox
    probe) are made only when it runs.
    """

    def __init__(self, kind: type[Tool], build: Callable[[], Tool]) -> None:
        self.name = kind.name
        self.description = kind.description
        self.parameters = kind.parameters
        self._build = build
        self._tool: Tool | None = None

    def run(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        if self._tool is None:
            self._tool = self._build()
        return self._tool.run(ctx, args)


@runtime_checkable
class ToolExecutor(Protocol):
    """The interface shared by ToolRegistry and HookRegistry."""

    def schemas(self) -> list[dict[str, Any]]: ...

    def names(self) -> list[str]: ...

    def execute(self, ctx: ToolContext, call: ToolCall) -> ToolResult: ...


class ToolRegistry:
    """The tools by name. ``redactor`` (default: the process-wide one, looked up
    per call) scrubs every result, so a secret a tool read — ``/proc/self/environ``,
    a ``.env`` file — never reaches the model, the offload file, the store or the
    screen: the hooks and offload wrap this, so they only ever see redacted text."""

    def __init__(self, tools: list[Tool] | None = None, redactor: Redactor | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        self._unlisted: set[str] = set()
        self.redactor = redactor
        for tool in tools or []:
            self.register(tool)

    def register(self, tool: Tool, *, listed: bool = True) -> None:
        """Add ``tool``; ``listed=False`` keeps its schema out of every request (an MCP tool
        over the schema budget: ``find_tools`` gives its schema after the history, so the
        prompt's prefix stays the same), while a call to it still runs."""
        self._tools[tool.name] = tool
        if not listed:
            self._unlisted.add(tool.name)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI-style function schemas (Ollama accepts the same shape), in registration order."""
        return [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in self._tools.values()
            if t.name not in self._unlisted
        ]

    def execute(self, ctx: ToolContext, call: ToolCall) -> ToolResult:
        tool = self._tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(self._tools)) or "none"
            return ToolResult(
                call.id, call.name, f"error: unknown tool {call.name!r} (known: {known})"
            )
        if not isinstance(call.arguments, dict):
            return ToolResult(call.id, call.name, "error: tool arguments must be a JSON object")
        scrub = self.redactor if self.redactor is not None else active()
        try:
            output = tool.run(ctx, call.arguments)
        except Cancelled:
            raise  # Ctrl-C ends the whole turn, not just this tool
        except TurnAnswered as answered:
            raise answered.with_result(
                ToolResult(call.id, call.name, scrub.redact(answered.reply))
            ) from None
        except HarveyError as exc:
            output = f"error: {exc}"
        except Exception as exc:  # a tool bug must not kill the turn
            log.exception("tool %s crashed", call.name)
            output = f"error: {call.name} failed: {type(exc).__name__}: {exc}"
        return ToolResult(call.id, call.name, scrub.redact(output))
