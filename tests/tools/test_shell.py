"""run_shell: no shell, allow-list, confirmation, refusals, timeouts."""

from __future__ import annotations

import pytest

from harvey.errors import ToolError
from harvey.messages import ToolCall
from harvey.tools.registry import ToolContext, ToolRegistry
from harvey.tools.shell import RunShellTool, split_command

ALLOWED = ("ls", "cat", "echo", "find", "sort", "grep")


def run(ctx: ToolContext, command: str, tool: RunShellTool | None = None) -> str:
    registry = ToolRegistry([tool or RunShellTool(ALLOWED, timeout=10)])
    return registry.execute(ctx, ToolCall("c", "run_shell", {"command": command})).content


@pytest.mark.parametrize(
    "command",
    [
        "ls | wc",
        "ls; rm -rf x",
        "ls && rm x",
        "cat a > b",
        "cat < a",
        "echo $(id)",
        "echo `id`",
        "sleep 1 &",
        "(ls)",
    ],
)
def test_shell_syntax_is_refused(command: str) -> None:
    with pytest.raises(ToolError):
        split_command(command)


def test_quoted_metacharacters_are_plain_arguments() -> None:
    assert split_command("grep -E 'a|b' f.txt") == ["grep", "-E", "a|b", "f.txt"]
    assert split_command('echo "x; y"') == ["echo", "x; y"]


def test_allowed_command_runs_in_the_workspace(ctx: ToolContext) -> None:
    (ctx.workspace / "hello.txt").write_text("hi there\n")
    assert run(ctx, "cat hello.txt") == "hi there\n"
    assert "hello.txt" in run(ctx, "ls")


def test_no_glob_or_variable_expansion(ctx: ToolContext) -> None:
    assert run(ctx, "echo '$HOME' *") == "$HOME *\n"


def test_nonzero_exit_is_an_error_with_output(ctx: ToolContext) -> None:
    result = run(ctx, "cat missing.txt")
    assert result.startswith("error: exit status 1")
    assert "missing.txt" in result


def test_unknown_program_non_interactive_is_refused(ctx: ToolContext) -> None:
    (ctx.workspace / "keep.txt").write_text("x")
    result = run(ctx, "rm keep.txt")
    assert result.startswith("error: refused") and "allowed_commands" in result
    assert (ctx.workspace / "keep.txt").exists()


def test_interactive_asks_and_respects_no(ctx: ToolContext) -> None:
    asked: list[str] = []

    def no(question: str) -> bool:
        asked.append(question)
        return False

    (ctx.workspace / "keep.txt").write_text("x")
    result = run(ctx.evolve(interactive=True, confirm=no), "rm keep.txt")
    assert result.startswith("error:") and "declined" in result
    assert asked and "rm keep.txt" in asked[0]
    assert (ctx.workspace / "keep.txt").exists()


def test_interactive_yes_runs_it(ctx: ToolContext) -> None:
    (ctx.workspace / "gone.txt").write_text("x")
    result = run(ctx.evolve(interactive=True, confirm=lambda q: True), "rm gone.txt")
    assert not result.startswith("error:")
    assert not (ctx.workspace / "gone.txt").exists()


def test_allowed_command_does_not_ask(ctx: ToolContext) -> None:
    def fail(question: str) -> bool:
        raise AssertionError("must not ask")

    assert run(ctx.evolve(interactive=True, confirm=fail), "echo ok") == "ok\n"


def test_allow_list_comes_from_context_when_tool_has_none(ctx: ToolContext) -> None:
    tool = RunShellTool(timeout=10)
    assert run(ctx.evolve(allowed_commands=("echo",)), "echo hi", tool) == "hi\n"
    assert run(ctx, "echo hi", tool).startswith("error: refused")


def test_command_not_found(ctx: ToolContext) -> None:
    tool = RunShellTool(("no-such-program-xyz",), timeout=10)
    assert run(ctx, "no-such-program-xyz", tool).startswith("error: command not found")


@pytest.mark.slow
def test_timeout_stops_the_command(ctx: ToolContext) -> None:
    # A system program: the confinement runs only what lives in the system folders.
    tool = RunShellTool(("sh",), timeout=2)
    result = run(ctx, "sh -c 'echo started; sleep 30'", tool)
    assert result.startswith("error: timed out after 2s")
    assert "started" in result


def test_seed_spelling_cmd_is_accepted(ctx: ToolContext) -> None:
    registry = ToolRegistry([RunShellTool(ALLOWED)])
    assert registry.execute(ctx, ToolCall("c", "run_shell", {"cmd": "echo x"})).content == "x\n"


def test_empty_command_is_an_error(ctx: ToolContext) -> None:
    assert run(ctx, "   ").startswith("error:")
