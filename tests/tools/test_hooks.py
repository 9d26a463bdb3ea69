"""HookRegistry: onion order, short-circuit, context changes, zero-hook identity."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from harvey.errors import HookDenied, ToolError
from harvey.messages import ToolCall, ToolResult
from harvey.tools.hooks import HookRegistry, ToolHook
from harvey.tools.registry import ToolContext, ToolExecutor, ToolRegistry


class EchoTool:
    name = "echo"
    description = "echo back"
    parameters: dict[str, Any] = {"type": "object"}  # noqa: RUF012

    def __init__(self) -> None:
        self.contexts: list[ToolContext] = []

    def run(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        self.contexts.append(ctx)
        if args.get("fail"):
            raise ToolError("asked to fail")
        return f"echo:{args.get('text', '')}"


@dataclass
class Recorder:
    label: str
    log: list[str]
    deny: bool = False
    crash_after: bool = False
    seen: list[str] = field(default_factory=list)

    def before_execute(self, ctx: ToolContext, call: ToolCall) -> ToolContext | None:
        self.log.append(f"before:{self.label}")
        if self.deny:
            raise HookDenied(f"{self.label} says no")
        return None

    def after_execute(self, ctx: ToolContext, call: ToolCall, result: ToolResult) -> ToolResult:
        self.log.append(f"after:{self.label}")
        if self.crash_after:
            raise RuntimeError("hook bug")
        return ToolResult(result.call_id, result.name, f"{result.content}+{self.label}")


def test_hooks_implement_the_protocol() -> None:
    assert isinstance(Recorder("a", []), ToolHook)
    assert isinstance(HookRegistry(ToolRegistry()), ToolExecutor)


def test_onion_order(tmp_path: Any) -> None:
    log: list[str] = []
    registry = HookRegistry(ToolRegistry([EchoTool()]), [Recorder("a", log), Recorder("b", log)])
    ctx = ToolContext(workspace=tmp_path)
    result = registry.execute(ctx, ToolCall("1", "echo", {"text": "hi"}))
    assert log == ["before:a", "before:b", "after:b", "after:a"]
    assert result.content == "echo:hi+b+a"


def test_before_failure_short_circuits(tmp_path: Any) -> None:
    log: list[str] = []
    tool = EchoTool()
    registry = HookRegistry(
        ToolRegistry([tool]),
        [Recorder("a", log), Recorder("b", log, deny=True), Recorder("c", log)],
    )
    result = registry.execute(ToolContext(workspace=tmp_path), ToolCall("1", "echo", {}))
    assert result == ToolResult("1", "echo", "error: b says no")
    assert tool.contexts == []  # the tool never ran
    assert log == ["before:a", "before:b"]  # no after-hooks, nothing after the denial


def test_before_crash_also_short_circuits(tmp_path: Any) -> None:
    class Crash:
        def before_execute(self, ctx: ToolContext, call: ToolCall) -> ToolContext | None:
            raise ValueError("boom")

        def after_execute(self, ctx: ToolContext, call: ToolCall, r: ToolResult) -> ToolResult:
            raise AssertionError("must not run")

    tool = EchoTool()
    result = HookRegistry(ToolRegistry([tool]), [Crash()]).execute(
        ToolContext(workspace=tmp_path), ToolCall("1", "echo", {})
    )
    assert result.is_error and "boom" in result.content
    assert tool.contexts == []


def test_before_hook_can_change_the_context(tmp_path: Any) -> None:
    class Tagger:
        def before_execute(self, ctx: ToolContext, call: ToolCall) -> ToolContext | None:
            return ctx.evolve(extras={"tag": "set"})

        def after_execute(self, ctx: ToolContext, call: ToolCall, r: ToolResult) -> ToolResult:
            assert ctx.extras["tag"] == "set"
            return r

    tool = EchoTool()
    HookRegistry(ToolRegistry([tool]), [Tagger()]).execute(
        ToolContext(workspace=tmp_path), ToolCall("1", "echo", {})
    )
    assert tool.contexts[0].extras == {"tag": "set"}


def test_after_hook_crash_keeps_the_result(tmp_path: Any) -> None:
    log: list[str] = []
    registry = HookRegistry(
        ToolRegistry([EchoTool()]), [Recorder("a", log), Recorder("b", log, crash_after=True)]
    )
    result = registry.execute(ToolContext(workspace=tmp_path), ToolCall("1", "echo", {"text": "x"}))
    assert result.content == "echo:x+a"
    assert log == ["before:a", "before:b", "after:b", "after:a"]


@given(
    name=st.sampled_from(["echo", "missing"]),
    text=st.text(max_size=20),
    fail=st.booleans(),
    call_id=st.text(max_size=5),
)
def test_zero_hooks_is_identical_to_the_bare_registry(
    name: str, text: str, fail: bool, call_id: str
) -> None:
    from pathlib import Path

    bare = ToolRegistry([EchoTool()])
    wrapped = HookRegistry(ToolRegistry([EchoTool()]))
    ctx = ToolContext(workspace=Path("."))
    call = ToolCall(call_id, name, {"text": text, "fail": fail})
    assert wrapped.execute(ctx, call) == bare.execute(ctx, call)
    assert wrapped.schemas() == bare.schemas()
    assert wrapped.names() == bare.names()


def test_add_appends_innermost(tmp_path: Any) -> None:
    log: list[str] = []
    registry = HookRegistry(ToolRegistry([EchoTool()]), [Recorder("a", log)])
    registry.add(Recorder("b", log))
    registry.execute(ToolContext(workspace=tmp_path), ToolCall("1", "echo", {}))
    assert log == ["before:a", "before:b", "after:b", "after:a"]
    assert len(registry.hooks) == 2


def test_cancelled_in_a_hook_ends_the_turn(tmp_path: Any) -> None:
    import pytest

    from harvey.errors import Cancelled

    class Interrupt:
        def before_execute(self, ctx: ToolContext, call: ToolCall) -> ToolContext | None:
            raise Cancelled("interrupted")

        def after_execute(self, ctx: ToolContext, call: ToolCall, r: ToolResult) -> ToolResult:
            return r

    registry = HookRegistry(ToolRegistry([EchoTool()]), [Interrupt()])
    with pytest.raises(Cancelled):
        registry.execute(ToolContext(workspace=tmp_path), ToolCall("1", "echo", {}))
