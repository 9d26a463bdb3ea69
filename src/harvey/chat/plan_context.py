"""The plan and the resume handover as turn context: sent with a turn's prompt when new.

A plan used to go out as a system message right after the system prompt, in
every request; when ``todo_write`` changed it, every later request differed
from the one before it in its second message, and llama.cpp, Ollama and the
embedded model — which reuse the longest common prefix of the previous
request — evaluated the whole history again (16.8 s instead of 0.32 s for a
3,578-token history on the embedded model, issue 21). Here the plan is one
more ``TurnContextProvider``: its summary rides in the user message of the
first turn after it changed, which the history keeps as sent, so each request
extends the previous one byte for byte. Within a turn the model sees its own
``todo_write`` results; ``get_plan`` returns the whole plan at any time.

The handover of a resumed session (its plan and where it stood) goes the same
way, once, with the first turn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from harvey.chat.plan_injection import dynamic_plan_text
from harvey.errors import HarveyError
from harvey.protocols import TurnContext, TurnQuery


class PlanSource(Protocol):
    """What the provider asks of the plan writer (``tools.plan.FilePlanWriter``)."""

    @property
    def path(self) -> Path: ...

    def read(self) -> str: ...


class PlanContext:
    """Send the plan's summary when it changed since it was last sent, and the handover once."""

    tool_less_only = False

    def __init__(
        self, plan: PlanSource | None, *, session_id: str = "", handover: str | None = None
    ) -> None:
        self.plan = plan
        self.path = plan.path if plan is not None else None  # fixed for the session
        self.session_id = session_id
        self.handover = handover
        self._sent: tuple[int, int] | None = None  # (mtime_ns, size) of the plan last sent

    def _version(self) -> tuple[int, int] | None:
        if self.path is None:
            return None
        try:
            info = self.path.stat()
        except OSError:  # no plan yet, or its folder is gone
            return None
        return info.st_mtime_ns, info.st_size

    def for_turn(self, query: TurnQuery) -> TurnContext | None:
        version = self._version()
        if self.handover is not None:  # it carries the plan as it is now
            text, self.handover, self._sent = self.handover, None, version
            return TurnContext(text=text)
        if version is None or version == self._sent or self.plan is None:
            return None
        try:
            content = self.plan.read()
        except (OSError, HarveyError):  # unreadable, or its folder became a link
            return None
        self._sent = version
        summary = dynamic_plan_text("", content, session_id=self.session_id)
        return TurnContext(text=summary) if summary else None

    def close(self) -> None:
        """Nothing is held open."""
