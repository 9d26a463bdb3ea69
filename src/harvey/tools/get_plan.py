"""``get_plan``: the full plan, so the reducer's notice is actionable.

The injected plan may be reduced to fit a budget, and the notice tells the
model to call ``get_plan`` for the rest. This tool returns the whole stored
plan, untouched and unbounded by the injection budgets (output offload hooks
may still page a very large result, exactly as for any other tool).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harvey.errors import HarveyError, ToolError
from harvey.tools.registry import ToolContext

NO_PLAN = "No plan exists for this session yet."


class GetPlanTool:
    """Return the session's full plan document via an injected reader.

    The reader is a callable rather than a path so the tool does not know where
    or how plans are stored (the plan writer owns that).
    """

    name = "get_plan"
    description = (
        "Return the full implementation plan of this session. Use it when the plan "
        "in your prompt says it was reduced to fit the injection budget."
    )

    parameters: dict[str, Any] = {"type": "object", "properties": {}, "required": []}  # noqa: RUF012

    def __init__(self, read_plan: Callable[[], str]) -> None:
        self._read_plan = read_plan

    def run(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        try:
            plan = self._read_plan()
        except HarveyError:
            raise
        except (OSError, UnicodeDecodeError) as exc:
            raise ToolError(f"cannot read the plan: {exc}") from exc
        if not plan or not plan.strip():
            return NO_PLAN
        return plan
