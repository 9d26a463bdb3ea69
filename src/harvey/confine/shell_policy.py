"""Which commands may run unasked: the second line of defence behind the OS sandbox.

The first line is the operating system (``confine/sandbox.py``): an allow-listed
command runs confined by the kernel, so it cannot write, reach the network or
read outside what the sandbox grants, whatever options it was given. Only the
kernel can promise that. Checking arguments cannot: GNU tools accept abbreviated
long options (``--compress-prog=sh``), values stuck behind other flags
(``sort -uo/outside``), options that read lists of file names
(``--files0-from``) and options that follow symlinks out of the folder, and the
allow-list grows with every user's configuration. A missed spelling in a
checker would be a hole; under the sandbox it is only a missed warning.

This module is still worth having. It refuses to run unasked what the sandbox
would only contain: a command that asks ``sort`` to run a program, ``find`` to
delete, or ``cat`` to read ``~/.ssh``, is a command the person should see. It
also keeps the promise where the sandbox is weaker than hoped (an older
kernel, a missing Landlock ABI feature). So it errs on the side of asking.

It parses argv the way the programs do, from the tables in ``shell_options``:
getopt_long for the GNU tools (``--`` ends options, options may follow
operands, ``--name=value`` and ``--name value``, every prefix of a long option
is that option, short clusters ``-abc`` where a value-taking letter takes the
rest of the cluster or the next argument), tree's own parser, and find's
expression language. Every operand and every option value that can name a
file must resolve inside the workspace (``safe_path``: absolute paths, ``~``,
``..`` and symlinks). An option that is not in the program's table asks. For a
program without a table everything that could be a path is checked and an
option whose name suggests output, execution or other files asks.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harvey.confine.git_policy import check_git
from harvey.confine.shell_options import (
    FIND_FILE_ARG,
    FIND_LEADING,
    FIND_NEWER_XY,
    FIND_NO_ARG,
    FIND_OPERATORS,
    FIND_PLAIN_ARG,
    FIND_RISKY,
    PROGRAMS,
    RISKY_WORDS,
    RUNS_PROGRAMS,
    WRAPPERS,
    Operands,
    Program,
    Role,
)
from harvey.errors import ToolError, WorkspaceError
from harvey.workspace.paths import safe_path
from harvey.workspace.secret_files import SecretFiles

# Longer single-dash arguments of a program without a table are not scanned
# position by position (each position could start a value); they ask instead.
MAX_SCANNED_CLUSTER = 256


class _Refuse(ToolError):
    """Raised inside the checkers with the reason; needs_confirmation returns it."""


def needs_confirmation(
    argv: Sequence[str],
    allowed: Sequence[str],
    workspace: Path,
    secrets: SecretFiles | None = None,
) -> str | None:
    """Why this argv may not run unasked, or None when it is on the allow-list and harmless;
    ``secrets``: the workspace's secret-file rule (the installed one when not given)."""
    if not argv:
        return "the command is empty"
    program = argv[0]
    if "/" in program or program not in allowed:
        return f"{program!r} is not on security.allowed_commands"
    args = list(argv[1:])
    if program == "git":
        return check_git(args, workspace, secrets)
    if program in WRAPPERS:
        return f"{program!r} runs another program, which the allow-list would not check"
    runs = RUNS_PROGRAMS.get(program, ())
    try:
        if runs:
            _check_runs(program, args, runs)
        if program == "find":
            _check_find(args, workspace)
        elif program in PROGRAMS and PROGRAMS[program].operands is Operands.PRINTED:
            pass  # echo: nothing it is given is opened, run or written
        elif program in PROGRAMS:
            _GetoptChecker(program, PROGRAMS[program], workspace).check(args)
        else:
            _check_without_table(program, args, workspace)
    except _Refuse as refusal:
        return str(refusal)
    return None


def _check_runs(program: str, args: list[str], options: tuple[str, ...]) -> None:
    """Options of a program without a full table that make it run another program:
    ``tar -I``/``--use-compress-program``/``--to-command``, ``rsync -e``, ``zip -TT``.
    A short one counts anywhere in a cluster, a long one by any abbreviation."""
    if program == "tar" and args and not args[0].startswith("-"):
        args = ["-" + args[0], *args[1:]]  # tar's old style: "tar xIf prog a.tar"
    for arg in args:
        if arg == "--":
            return
        name = arg.partition("=")[0]
        for option in options:
            if option.startswith("--"):
                hit = len(name) > 3 and name.startswith("--") and option.startswith(name)
            else:
                hit = not arg.startswith("--") and arg.startswith("-") and option[1] in arg[1:]
            if hit:
                raise _Refuse(f"option {arg!r} lets {program} run other programs")


def _check_path(workspace: Path, arg: str, value: str) -> None:
    """Refuse when ``value`` (found in ``arg``) names something outside the workspace."""
    try:
        safe_path(workspace, value)
    except WorkspaceError:
        raise _Refuse(f"argument {arg!r} points outside the workspace") from None


def _refuse_role(program: str, arg: str, role: Role) -> _Refuse:
    return _Refuse(f"option {arg!r} {role.value.format(program=program)}")


class _GetoptChecker:
    """One pass over argv as getopt_long (or tree's parser) would see it."""

    def __init__(self, program: str, spec: Program, workspace: Path) -> None:
        self.program = program
        self.spec = spec
        self.workspace = workspace
        self.shorts = spec.short_options()
        self.longs = spec.long_options()
        self.operands: list[str] = []
        self.follows: list[str] = []  # deferred: diff's --no-dereference may cancel them
        self.maybe_seen: set[str] = set()  # every option an argument could be
        self.surely_seen: set[str] = set()  # options an argument certainly is
        self.separate_short_value = False  # "-C 2": is "2" a value everywhere?

    def check(self, args: list[str]) -> None:
        i = 0
        while i < len(args):
            arg = args[i]
            i += 1
            if arg == "--":
                self.operands.extend(args[i:])
                break
            if arg.startswith("--"):
                i += self._long(arg, args[i:])
            elif arg.startswith("-") and arg != "-":
                i += self._cluster(arg, args[i:])
            else:
                self.operands.append(arg)
        self._check_operands()
        cancel = self.spec.follow_cancelled_by
        if self.follows and not (cancel and f"--{cancel}" in self.surely_seen):
            raise _Refuse(self.follows[0])

    def _unknown(self, option: str, arg: str) -> _Refuse:
        """An option missing from the table asks: elsewhere it may do anything."""
        where = "" if option == arg else f" (in {arg!r})"
        return _Refuse(f"option {option!r}{where} is not one Harvey knows {self.program} to have")

    def _role(self, arg: str, role: Role | None) -> None:
        if role is None or not role.risky:
            return
        if role is Role.FOLLOWS:
            self.follows.append(str(_refuse_role(self.program, arg, role)))
            return
        raise _refuse_role(self.program, arg, role)

    def _value(self, arg: str, value: str, roles: set[Role | None], unsure: bool) -> None:
        """Check an option's value when it may name a file (or when the parse is unsure)."""
        if Role.PATH_LIST in roles:
            for part in value.split(":"):
                _check_path(self.workspace, arg, part)
        if Role.PATH in roles or unsure or self.spec.values_from_next_args:
            _check_path(self.workspace, arg, value)
        if Role.PATH in roles:
            self._folder(arg, value)

    def _long(self, arg: str, following: list[str]) -> int:
        """Handle ``--name[=value]``; returns how many following arguments it used."""
        name, has_value, value = arg[2:].partition("=")
        if name in self.longs:
            candidates = [name]
        else:  # getopt_long takes any unambiguous prefix; an ambiguous one counts as all
            candidates = [option for option in self.longs if name and option.startswith(name)]
        if not candidates:
            raise self._unknown(arg.partition("=")[0], arg)
        roles = {self.spec.roles.get(f"--{option}") for option in candidates}
        for option in candidates:
            self.maybe_seen.add(f"--{option}")
            self._role(arg, self.spec.roles.get(f"--{option}"))
        if len(candidates) == 1:
            self.surely_seen.add(f"--{candidates[0]}")
        used = 0
        if not has_value and following and any(self.longs[c] == "=" for c in candidates):
            value, has_value, used = following[0], "=", 1
            arg = f"{arg} {value}"
        if has_value:  # a value given to an option that takes none is checked too
            unsure = len(candidates) > 1 or self.longs[candidates[0]] == ""
            self._value(arg, value, roles, unsure=unsure)
        return used

    def _cluster(self, arg: str, following: list[str]) -> int:
        """Handle ``-abc``, char by char; returns how many following arguments it used."""
        used = 0
        j = 1
        while j < len(arg):
            letter = arg[j]
            j += 1
            rest = arg[j:]
            takes_value = self.shorts.get(letter)
            if takes_value is None:
                raise self._unknown(f"-{letter}", arg)
            self.maybe_seen.add(f"-{letter}")
            self.surely_seen.add(f"-{letter}")
            role = self.spec.roles.get(f"-{letter}")
            self._role(arg, role)
            if not takes_value:
                continue
            if self.spec.values_from_next_args:  # tree: value from the next argument
                if rest:
                    _check_path(self.workspace, arg, rest)
                if used < len(following):
                    value = following[used]
                    self._value(f"{arg} {value}", value, {role}, unsure=True)
                    used += 1
                continue
            shown = arg
            if not rest and used < len(following):
                rest = following[used]
                shown = f"{arg} {rest}"
                used += 1
                if f"-{letter}" not in self.spec.pattern_options:
                    self.separate_short_value = True
            # Another implementation may not give this letter a value (BSD ls -T, -w;
            # grep -C), so the value is checked as the operand it would then be.
            self._value(shown, rest, {role}, unsure=f"-{letter}" not in self.spec.free)
            break
        return used

    def _check_operands(self) -> None:
        files = self.operands
        if self.spec.operands is Operands.COMMANDS:
            files = [name for name in files if "/" in name]
        pattern_given = self.maybe_seen & set(self.spec.pattern_options)
        if self.spec.pattern_operand and not pattern_given and not self.separate_short_value:
            files = files[1:]  # grep PATTERN FILE...: the pattern is not opened
        limit = self.spec.max_operands
        extra = [name for name in files[limit:] if name != "-"] if limit is not None else []
        if extra:  # uniq IN OUT writes OUT ("-" is standard output)
            raise _Refuse(f"{self.program} writes to its operand {extra[0]!r}")
        for name in files:
            if name != "-":
                _check_path(self.workspace, name, name)
                self._folder(name, name)

    def _folder(self, arg: str, name: str) -> None:
        """diff reads through the symlinks in a folder it is given (checked inside already)."""
        if self.spec.follows_into_folders and safe_path(self.workspace, name).is_dir():
            self.follows.append(
                f"{self.program} reads through symbolic links in the folder {arg!r}, "
                "which may lead out of the workspace"
            )


def _check_find(args: list[str], workspace: Path) -> None:
    """find [-H|-L|-P|-D opts|-Olevel]... [starting point]... [expression]."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in FIND_LEADING:
            role = FIND_LEADING[arg]
            if role is not None:
                raise _refuse_role("find", arg, role)
            i += 1
        elif arg == "-D":
            i += 2
        elif arg.startswith("-O"):
            i += 1
        else:
            if arg == "--":
                i += 1
            break
    while i < len(args) and not (
        (args[i].startswith("-") and len(args[i]) > 1) or args[i] in FIND_OPERATORS
    ):
        _check_path(workspace, args[i], args[i])
        i += 1
    while i < len(args):
        arg = args[i]
        i += 1
        if arg in FIND_OPERATORS or arg in FIND_NO_ARG:
            continue
        if arg in FIND_RISKY:
            raise _refuse_role("find", arg, FIND_RISKY[arg])
        if arg in FIND_FILE_ARG or FIND_NEWER_XY.fullmatch(arg):
            if i < len(args):
                _check_path(workspace, f"{arg} {args[i]}", args[i])
            i += 1
        elif arg in FIND_PLAIN_ARG:
            i += 1
        elif arg.startswith("-"):
            raise _Refuse(f"find expression {arg!r} is not one Harvey knows to be harmless")
        else:  # a stray word; find would refuse it, but it is checked all the same
            _check_path(workspace, arg, arg)


def _check_without_table(program: str, args: list[str], workspace: Path) -> None:
    """A program the user allowed that has no table: check everything that could be a path."""
    options_done = False
    for arg in args:
        if options_done or not arg.startswith("-") or arg == "-":
            if arg != "-":
                _check_path(workspace, arg, arg)
        elif arg == "--":
            options_done = True
        else:
            _check_unknown_option(program, workspace, arg)


def _check_unknown_option(program: str, workspace: Path, arg: str) -> None:
    """An option nobody described: its name must not sound risky, and any value,
    attached or after ``=`` (each ``:`` or ``,`` separated part), must stay inside."""
    name, has_value, value = arg.lstrip("-").partition("=")
    lowered = name.lower()
    if len(lowered) > 1 and any(word in lowered for word in RISKY_WORDS):
        raise _Refuse(
            f"option {arg!r} of {program} is not known to be harmless "
            "(it may write, run programs or read other files)"
        )
    if has_value:
        for part in [value, *value.replace(",", ":").split(":")]:
            _check_path(workspace, arg, part)
    if not arg.startswith("--"):  # -abcVALUE: a value may start after any letter
        if len(arg) > MAX_SCANNED_CLUSTER:
            raise _Refuse(f"option {arg[:40]!r}... is too long to check")
        for start in range(1, len(arg)):
            _check_path(workspace, arg, arg[start:])
