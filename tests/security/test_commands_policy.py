"""The shell attacks of issue 9, played through ``harvey run`` against the option checks.

Each attack must have no effect: nothing is run, written or read outside the
workspace, and the API key never reaches the server or the store. These
exercise ``shell_policy`` (the second line of defence) end to end; ``tools/shell.py``
takes its ``needs_confirmation`` from there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harvey.confine import shell_policy
from harvey.tools import shell
from tests.security.conftest import Attack, snapshot


def test_shell_takes_its_policy_from_shell_policy() -> None:
    assert shell.needs_confirmation is shell_policy.needs_confirmation


def shell_call(command: str) -> tuple[str, dict[str, str]]:
    return ("run_shell", {"command": command})


@pytest.mark.parametrize(
    "command",
    [
        "sort -S 1K --compress-program=sh -T . cmds.txt",
        "sort -S 1K --compress-prog=sh -T . cmds.txt",
        "sort -S 1K --com sh -T . cmds.txt",
    ],
)
def test_sort_never_runs_a_compress_program(
    attack: Attack, victim_workspace: Path, outside: Path, command: str
) -> None:
    pwned = outside / "pwned"
    lines = "".join(f"touch {pwned}\n" for _ in range(2000))
    (victim_workspace / "cmds.txt").write_text(lines)
    result = attack([shell_call(command)])
    assert not pwned.exists(), "sort ran the commands"
    assert any("refused" in out for out in result.tool_outputs), result.tool_outputs


@pytest.mark.parametrize(
    "command",
    [
        "sort -uo{out}/written in.txt",
        "sort --outp=link/written in.txt",
        "sort -o link/written in.txt",
        "sort -S 1K -uT{out} in.txt",
        "uniq in.txt link/written",
        "find . -name in.txt -fprint link/written",
        "tree -o link/written",
    ],
)
def test_allowed_commands_never_write_outside(
    attack: Attack, victim_workspace: Path, outside: Path, command: str
) -> None:
    (victim_workspace / "in.txt").write_text("b\na\n" * 1000)
    (victim_workspace / "link").symlink_to(outside)
    before = snapshot(outside)
    result = attack([shell_call(command.format(out=outside))])
    result.assert_outside_untouched(before)
    assert any("refused" in out for out in result.tool_outputs), result.tool_outputs


def test_files0_from_cannot_read_the_environment(attack: Attack, victim_workspace: Path) -> None:
    (victim_workspace / "list").write_bytes(b"/proc/self/environ\0")
    result = attack(
        [
            shell_call("sort --files0-from=list"),
            shell_call("wc --files0-from=list"),
            shell_call("du --files0=list"),
        ]
    )
    result.assert_secret_absent()


@pytest.mark.parametrize(
    "command",
    [
        "file -Lf{out}/secret.txt",
        "file --files-from {out}/secret.txt",
        "grep -R outside .",
        "grep --deref outside .",
        "find -L . -name secret.txt",
        "find . -follow -name secret.txt",
        "diff -r . link",
        "cat link/secret.txt",
        "grep -f link/secret.txt in.txt",
    ],
)
def test_nothing_outside_is_read_through_options_or_links(
    attack: Attack, victim_workspace: Path, outside: Path, command: str
) -> None:
    (victim_workspace / "in.txt").write_text("hello\n")
    (victim_workspace / "link").symlink_to(outside)
    result = attack([shell_call(command.format(out=outside))])
    result.assert_secret_absent("outside secret")  # the content of the file outside
    assert not any("./link/secret.txt" in out for out in result.tool_outputs)
    assert any("refused" in out for out in result.tool_outputs), result.tool_outputs


def test_diff_of_folders_does_not_read_through_their_symlinks(
    attack: Attack, victim_workspace: Path, outside: Path
) -> None:
    (victim_workspace / "a").mkdir()
    (victim_workspace / "b").mkdir()
    (victim_workspace / "a" / "f").symlink_to(outside / "secret.txt")
    (victim_workspace / "b" / "f").write_text("hello\n")
    result = attack([shell_call("diff a b"), shell_call("diff -q -u a b")])
    result.assert_secret_absent("outside secret")
    assert all("refused" in out for out in result.tool_outputs), result.tool_outputs
