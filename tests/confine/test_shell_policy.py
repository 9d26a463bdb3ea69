"""shell_policy.needs_confirmation: the option checks behind the OS sandbox.

Three kinds of test: the attacks from issue 9 and variants of them must each
ask (a reason, not None); everyday read-only commands must not; and properties
over generated argv (outside paths in any position or spelling, every prefix
of every risky long option, risky letters anywhere in a short cluster, ``--``)
must hold for every program with a table.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harvey.config.settings import DEFAULT_ALLOWED_COMMANDS
from harvey.confine.shell_options import PROGRAMS, Operands, Role
from harvey.confine.shell_policy import needs_confirmation

ALLOWED = (*DEFAULT_ALLOWED_COMMANDS, "rg", "mytool")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """A workspace with files and a symlink ``link`` to a folder outside it."""
    root = tmp_path_factory.mktemp("policy").resolve()
    ws, outside = root / "ws", root / "outside"
    (ws / "src").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    for name in ("a.txt", "b.txt", "in.txt", "cmds.txt", "list", "src/x.py"):
        (ws / name).write_text("x\n")
    (ws / "link").symlink_to(outside)
    (ws / "filelink").symlink_to(outside / "secret.txt")
    yield ws, outside


@pytest.fixture(scope="module")
def ws(tree: tuple[Path, Path]) -> Path:
    return tree[0]


def check(ws: Path, command: str | list[str]) -> str | None:
    argv = command.split() if isinstance(command, str) else command
    return needs_confirmation(argv, ALLOWED, ws)


ATTACKS = [
    # from the issue
    "sort -S 1K --compress-program=sh -T . cmds.txt",
    "sort --compress-prog=sh cmds.txt",
    "sort -uo{out}/path in.txt",
    "sort --outp=link in.txt",
    "sort -S 1K -uT{out} in.txt",
    "sort --files0-from=list",
    "file -Lf/etc/passwd",
    "grep -R secret .",
    "find -L . -name secret.txt",
    # sort: every spelling of output, temp dir, program, file list
    "sort --compress-program sh cmds.txt",
    "sort --com=sh cmds.txt",
    "sort -o out.txt in.txt",
    "sort -oout.txt in.txt",
    "sort in.txt -o out.txt",
    "sort -nro x in.txt",
    "sort --output out.txt in.txt",
    "sort --o=out.txt in.txt",
    "sort -T . in.txt",
    "sort -ruT. in.txt",
    "sort --temporary-directory=. in.txt",
    "sort --tem . in.txt",
    "sort --files0=list",
    "sort --f=list",
    "sort --random-source=/dev/urandom in.txt",
    "sort --ra=../outside/secret.txt in.txt",
    # wc, du
    "wc --files0-from=list",
    "wc --files0 list",
    "du --files0-from=list",
    "du -L .",
    "du -shL .",
    "du --deref .",
    "du -D .",
    "du -H .",
    "du --exclude-from=/etc/passwd .",
    "du -X/etc/passwd .",
    # grep
    "grep --dereference-recursive secret .",
    "grep --deref secret .",
    "grep -rR secret .",
    "grep -nRi secret .",
    "grep -f/etc/passwd .",
    "grep -f /etc/passwd .",
    "grep -if/etc/passwd .",
    "grep --file=/etc/passwd .",
    "grep --fil /etc/passwd .",
    "grep --exclude-from=/etc/passwd x .",
    "grep -e x /etc/passwd",
    "grep x link/secret.txt",
    "grep x filelink",
    "grep -r x ../outside",
    # find
    "find . -exec cat {} ;",
    "find . -execdir sh -c id ;",
    "find . -ok rm {} ;",
    "find . -okdir rm {} ;",
    "find . -delete",
    "find . -name x -o -delete",
    "find . ( -name x -delete )",
    "find . -fprint out",
    "find . -fprint0 out",
    "find . -fprintf out %p",
    "find . -fls out",
    "find -files0-from list",
    "find . -follow",
    "find -H .",
    "find -L .",
    "find . -L",
    "find / -name secret.txt",
    "find link",
    "find . -newer /etc/passwd",
    "find . -samefile ../outside/secret.txt",
    "find . -newermm /etc/passwd",
    "find . -no-such-primary",
    "find -D exec -L .",
    # ls, stat
    "ls -L",
    "ls -lL src",
    "ls --deref",
    "ls -H link",
    "ls --dereference-command-line-symlink-to-dir",
    "ls ~",
    "ls ..",
    "ls link",
    "stat -L a.txt",
    "stat --der a.txt",
    "stat /etc/passwd",
    # file
    "file -f list",
    "file --files-from=list",
    "file --files=list",
    "file -m /etc/passwd a.txt",
    "file -m ok.mgc:/etc/passwd a.txt",
    "file -C -m magic",
    "file --compile -m magic",
    "file -z a.txt",
    "file -bZ a.txt",
    "file --uncompress a.txt",
    "file -S a.txt",
    "file --no-sandbox a.txt",
    "file --no-s a.txt",
    "file -p a.txt",
    "file filelink",
    # tree
    "tree -o out",
    "tree -aoout",
    "tree -Lo 2 out",
    "tree -R -H . -L 1",
    "tree -l",
    "tree -al src",
    "tree --gitfile=/etc/passwd",
    "tree --hintro /etc/passwd -H .",
    "tree --fromfile /etc/passwd",
    "tree -L 2 ../outside",
    "tree -L ../outside",  # tree's own parser: every value is checked
    "tree -dP ../outside",
    # the parse is unsure (an ambiguous prefix, a value for an option without one)
    "ls --ti=/etc/passwd",
    "cat --number=/etc/passwd",
    "head --verbose=../outside/secret.txt",
    # uniq writes its second operand
    "uniq a.txt out.txt",
    "uniq -c a.txt out.txt",
    "uniq -- a.txt out.txt",
    # diff
    "diff -l a.txt b.txt",
    "diff --paginate a.txt b.txt",
    "diff --pag a.txt b.txt",
    "diff -r src link",
    "diff -ru src src",
    "diff --recursive src src",
    "diff a.txt /etc/passwd",
    "diff src link",  # link is outside anyway
    "diff src src",  # a folder's symlinked entries are read even without -r
    "diff -q . src",
    "diff --from-file=src a.txt",
    "diff --from-file=/etc/passwd a.txt",
    "diff --to-file /etc/passwd a.txt",
    "diff -X /etc/passwd src src",
    "diff --exclude-from=/etc/passwd src src",
    # plain reads outside
    "cat /proc/self/environ",
    "cat ~/.ssh/id_rsa",
    "cat ../secret",
    "cat link/secret.txt",
    "cat -- /etc/passwd",
    "cat -n -- ../x",
    "head -n 5 /etc/passwd",
    "tail -c 10 ../outside/secret.txt",
    "head -c 2G /dev/zero",
    "which ../outside/secret.txt",
    # not on the allow-list at all
    "rm a.txt",
    "/bin/ls",
    "./ls",
    "python -c 1",
    # a short option's value is checked: another implementation may take none
    "ls -I /etc",
    "ls -T ../outside",
    "ls -w link",
    "grep -C 2 x /etc/passwd",
    "grep -m 1 /etc/passwd a.txt",
    # options missing from the table ask (BSD grep -S follows symlinks under -r)
    "grep -rS x .",
    "grep -S -r x .",
    "ls --no-such-option",
    "sort --zzz=1 a.txt",
    "head -Q a.txt",
    # programs without a table
    "mytool --output=x",
    "mytool --exec sh",
    "mytool --pager=less",
    "mytool -x/etc/passwd",
    "mytool -abc../../x",
    "mytool --opt=/etc/passwd",
    "mytool --path=a:/etc",
    "mytool --list=a,../x",
    "mytool /etc/passwd",
    "mytool -- ../x",
    "mytool -o=link/x",
    "mytool -xlink",
    "rg --files-from list",
    "rg --config x",
]


@pytest.mark.parametrize("command", ATTACKS)
def test_attacks_need_confirmation(ws: Path, command: str) -> None:
    reason = check(ws, command.replace("{out}", str(ws.parent / "outside")))
    assert reason, f"{command!r} would run unasked"


HARMLESS = [
    "grep -rn TODO src",
    "grep -rn /api/ src",
    "grep -n -e TODO -e FIXME a.txt",
    "grep -c x a.txt b.txt",
    "grep -ri --include=*.py def src",
    "grep -A2 -B 1 x a.txt",
    "grep -5 x a.txt",
    "grep -- -x a.txt",
    "grep --context 2 /api/ src",
    "grep -C2 /api/ src",
    "grep -e /api/ -e /v1/ src",
    "diff -I /* a.txt b.txt",
    "echo -x --y /etc/passwd",
    "ls",
    "ls -la",
    "ls -lR src",
    "ls --color=auto -1 src",
    "find . -name *.py",
    "find src -type f -mtime -1 -print",
    "find . ( -name a -o -name b ) -print",
    "find . -maxdepth 2 -newer a.txt",
    "find -P . -name x",
    "find",
    "sort -u a.txt",
    "sort -t / -k2 a.txt",
    "sort -n -r -k 2,2 a.txt",
    "sort --check a.txt",
    "sort -S 1K a.txt",
    "sort -ko a.txt",
    "head -n 5 a.txt",
    "head -5 a.txt",
    "tail -n +2 a.txt",
    "wc -l a.txt b.txt in.txt",
    "wc -c a.txt",
    "du -sh .",
    "du -h --max-depth=1 src",
    "tree -L 2",
    "tree -a -I node_modules src",
    "tree -d src",
    "diff a.txt b.txt",
    "diff -u a.txt b.txt",
    "diff -r --no-dereference src src",
    "diff --no-dereference src src",
    "diff -U 3 a.txt b.txt",
    "stat a.txt",
    "stat -c %s a.txt",
    "file a.txt",
    "file -b --mime-type a.txt",
    "uniq a.txt",
    "uniq -c a.txt",
    "uniq a.txt -",
    "cat a.txt",
    "cat -n a.txt",
    "cat -",
    "echo /etc/passwd ../x",
    "pwd",
    "which ls",
    "which -a grep",
    "mytool -n --count=3 a.txt",
    "diff -I ^# a.txt b.txt",
    "tail -5 a.txt",
]


@pytest.mark.parametrize("command", HARMLESS)
def test_everyday_commands_run_unasked(ws: Path, command: str) -> None:
    assert check(ws, command) is None


def test_reasons_name_the_argument_and_what_it_does(ws: Path) -> None:
    assert check(ws, "sort --compress-prog=sh x") == (
        "option '--compress-prog=sh' lets sort run other programs"
    )
    assert check(ws, "file -m /etc/magic a.txt") == (
        "argument '-m /etc/magic' points outside the workspace"
    )
    assert check(ws, "rm a.txt") == "'rm' is not on security.allowed_commands"
    assert check(ws, "uniq a.txt out.txt") == "uniq writes to its operand 'out.txt'"
    assert check(ws, []) == "the command is empty"
    assert (
        check(ws, "grep -rS x .") == "option '-S' (in '-rS') is not one Harvey knows grep to have"
    )
    assert (
        check(ws, "ls --zzz=1")
        == "option '--zzz' (in '--zzz=1') is not one Harvey knows ls to have"
    )


def test_every_default_allowed_command_has_a_table() -> None:
    missing = [name for name in DEFAULT_ALLOWED_COMMANDS if name not in PROGRAMS and name != "find"]
    assert not missing, f"no option table for {missing}: they would be checked only generically"


def test_every_role_names_an_option_of_its_program() -> None:
    for name, spec in PROGRAMS.items():
        shorts, longs = spec.short_options(), spec.long_options()
        for option in (*spec.roles, *spec.free, *spec.pattern_options):
            known = option[2:] in longs if option.startswith("--") else option[1:] in shorts
            assert known, f"{name}: {option} is not in the table"
        for option in spec.free:
            assert shorts[option[1:]], f"{name}: {option} is free text but takes no value"
        for option, role in spec.roles.items():
            if role in (Role.PATH, Role.PATH_LIST):
                takes = longs.get(option[2:]) == "=" or shorts.get(option[1:], False)
                assert takes, f"{name}: {option} names a file but takes no value"


# --- ported from tests/tools/test_shell.py (the cases for needs_confirmation) ---

PORTED_ALLOWED = ("ls", "cat", "echo", "find", "sort", "grep")


def test_ported_risky_options_and_outside_paths(ws: Path) -> None:
    n = needs_confirmation
    assert n(["find", ".", "-delete"], PORTED_ALLOWED, ws)
    assert n(["find", ".", "-exec", "rm", "{}", ";"], PORTED_ALLOWED, ws)
    assert n(["sort", "-o", "x", "y"], PORTED_ALLOWED, ws)
    assert n(["sort", "-ox", "y"], PORTED_ALLOWED, ws)
    assert n(["cat", "/etc/passwd"], PORTED_ALLOWED, ws)
    assert n(["cat", "../secret"], PORTED_ALLOWED, ws)
    assert n(["/bin/ls"], PORTED_ALLOWED, ws)
    assert n(["rm", "x"], PORTED_ALLOWED, ws)
    assert n(["cat", "a.txt"], PORTED_ALLOWED, ws) is None
    assert n(["find", ".", "-name", "*.py"], PORTED_ALLOWED, ws) is None


def test_ported_symlinks_and_option_values(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "h").symlink_to("/etc/hostname")
    (ws / "ok.txt").write_text("x")
    allowed = ["cat", "grep"]
    assert needs_confirmation(["cat", "ok.txt"], allowed, ws) is None
    assert needs_confirmation(["grep", "-n", "TODO", "."], allowed, ws) is None
    assert needs_confirmation(["cat", "h"], allowed, ws) is not None
    assert needs_confirmation(["grep", "--file=/etc/hostname", "."], allowed, ws) is not None
    assert needs_confirmation(["grep", "-f/etc/hostname", "."], allowed, ws) is not None
    assert needs_confirmation(["cat", "~/.ssh/id_rsa"], allowed, ws) is not None


# --- properties --------------------------------------------------------------

# Complete, harmless option units per program (a value-taking option with its value).
HARMLESS_UNITS: dict[str, list[list[str]]] = {
    "ls": [["-l"], ["-a"], ["-la"], ["-R"], ["-1"], ["--color=never"], ["-w", "80"], ["-I", "x"]],
    "cat": [["-n"], ["-A"], ["-nE"], ["--show-ends"], ["-s"]],
    "head": [["-n", "5"], ["-n5"], ["-c", "10"], ["--lines=3"], ["-q"], ["-v"]],
    "tail": [["-n", "5"], ["-n+2"], ["-c", "10"], ["--lines", "3"], ["-q"]],
    "wc": [["-l"], ["-c"], ["-lw"], ["--words"], ["-L"]],
    "stat": [["-c", "%s"], ["--format=%n"], ["-t"], ["--printf", "%s"]],
    "du": [["-s"], ["-h"], ["-sh"], ["-d", "1"], ["--max-depth=2"], ["-a"], ["--exclude=*.o"]],
    "sort": [
        ["-u"],
        ["-n"],
        ["-r"],
        ["-k", "2"],
        ["-k2,2"],
        ["-t", ","],
        ["-S", "1K"],
        ["--unique"],
        ["--key=1"],
        ["-un"],
        ["--numeric-sort"],
        ["-z"],
        ["--check"],
    ],
    "uniq": [["-c"], ["-d"], ["-u"], ["-f", "1"], ["-s2"], ["--count"], ["-w", "3"]],
    "grep": [
        ["-e", "x"],
        ["-n"],
        ["-i"],
        ["-r"],
        ["-rn"],
        ["-A", "2"],
        ["-C2"],
        ["-3"],
        ["--include=*.py"],
        ["--max-count", "4"],
        ["-l"],
        ["-E"],
        ["--color=never"],
    ],
    "diff": [["-u"], ["-q"], ["-U", "3"], ["-w"], ["--brief"], ["-W80"], ["--label", "x"]],
    "file": [["-b"], ["-i"], ["--mime-type"], ["-F", ":"], ["-k"], ["-h"]],
    "tree": [["-a"], ["-d"], ["-L", "2"], ["-I", "node_modules"], ["-f"], ["--noreport"]],
    "pwd": [["-P"], ["-L"]],
    "which": [["-a"]],
}
OUTSIDE_FORMS = ["{out}/secret.txt", "../outside/secret.txt", "link/secret.txt", "link", "~/x"]
PROGRAMS_WITH_FILES = sorted(
    name for name, spec in PROGRAMS.items() if spec.operands is not Operands.PRINTED
)


def harmless_letters(program: str) -> list[str]:
    """The short options of ``program`` that take no value and have no risky role."""
    spec = PROGRAMS[program]
    return sorted(
        letter
        for letter, takes in spec.short_options().items()
        if not takes and not (spec.roles.get(f"-{letter}") or Role.PATH).risky
    )


def carriers(program: str, path: str) -> list[list[str]]:
    """Every way ``path`` can reach ``program`` as something it opens."""
    spec = PROGRAMS[program]
    if spec.operands is Operands.COMMANDS and "/" not in path:
        return []  # "which link" looks up a program called link
    forms: list[list[str]] = [[path], ["--", path]]
    flags = "".join(harmless_letters(program))[:3]
    for option, role in spec.roles.items():
        if role not in (Role.PATH, Role.PATH_LIST):
            continue
        if option.startswith("--"):
            forms += [[f"{option}={path}"], [option, path], [f"{option[:5]}={path}"]]
        elif not spec.values_from_next_args:
            forms += [[f"{option}{path}"], [option, path], [f"-{flags}{option[1]}{path}"]]
    # Any other short option's value is checked too (it may be an operand elsewhere).
    for letter, takes in spec.short_options().items():
        role = spec.roles.get(f"-{letter}")
        if not takes or f"-{letter}" in spec.free or (role is not None and role.risky):
            continue
        forms.append([f"-{letter}", path])
        if not spec.values_from_next_args:
            forms += [[f"-{letter}{path}"], [f"-{flags}{letter}{path}"]]
    return forms


@st.composite
def argv_with_outside_path(draw: st.DrawFn, out: str) -> list[str]:
    program = draw(st.sampled_from(sorted(HARMLESS_UNITS)))
    path = draw(st.sampled_from(OUTSIDE_FORMS)).format(out=out)
    options = carriers(program, path)
    if not options:  # which without a slash
        path = f"{out}/secret.txt"
        options = carriers(program, path)
    carrier = draw(st.sampled_from(options))
    units = draw(st.lists(st.sampled_from(HARMLESS_UNITS[program]), max_size=5))
    at = draw(st.integers(0, len(units)))
    return [
        program,
        *(["-e", "x"] if program == "grep" else []),  # so every operand is a file, not the pattern
        *(t for u in units[:at] for t in u),
        *carrier,
        *(t for u in units[at:] for t in u),
    ]


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_an_outside_path_in_any_position_asks(ws: Path, data: st.DataObject) -> None:
    argv = data.draw(argv_with_outside_path(str(ws.parent / "outside")))
    assert check(ws, argv) is not None, argv


@st.composite
def find_with_outside_path(draw: st.DrawFn, out: str) -> list[str]:
    path = draw(st.sampled_from(OUTSIDE_FORMS[:4])).format(out=out)
    units = draw(
        st.lists(
            st.sampled_from(
                [["-name", "*.py"], ["-type", "f"], ["-print"], ["-maxdepth", "2"], ["!", "-empty"]]
            ),
            max_size=4,
        )
    )
    where = draw(st.sampled_from(["start", "newer", "samefile", "stray"]))
    if where == "start":
        return ["find", ".", path, *(t for u in units for t in u)]
    units.insert(
        draw(st.integers(0, len(units))), [path] if where == "stray" else [f"-{where}", path]
    )
    return ["find", *(t for u in units for t in u)]


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_find_with_an_outside_path_asks(ws: Path, data: st.DataObject) -> None:
    argv = data.draw(find_with_outside_path(str(ws.parent / "outside")))
    assert check(ws, argv) is not None, argv


@st.composite
def harmless_argv(draw: st.DrawFn) -> list[str]:
    program = draw(st.sampled_from(sorted(HARMLESS_UNITS)))
    units = draw(st.lists(st.sampled_from(HARMLESS_UNITS[program]), max_size=5))
    operands: list[str] = []
    if program not in ("pwd", "which"):
        count = 1 if program == "uniq" else draw(st.integers(0, 3))
        names = ["a.txt", "b.txt", "src/x.py", "-"] + ([] if program == "diff" else ["src"])
        operands = draw(
            st.lists(
                st.sampled_from(names),
                min_size=count,
                max_size=count,
            )
        )
    if program == "grep":
        operands = ["TODO", *operands]
    if program == "which":
        operands = ["ls"]
    for operand in operands:  # getopt permutes: operands may sit between options
        units.insert(draw(st.integers(0, len(units))), [operand])
    return [program, *(t for u in units for t in u)]


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(argv=harmless_argv())
def test_harmless_options_and_inside_operands_run_unasked(ws: Path, argv: list[str]) -> None:
    assert check(ws, argv) is None, argv


def risky_long_options() -> list[tuple[str, str]]:
    return sorted(
        (name, option[2:])
        for name, spec in PROGRAMS.items()
        for option, role in spec.roles.items()
        if option.startswith("--") and role.risky
    )


@pytest.mark.parametrize(("program", "option"), risky_long_options())
def test_every_prefix_of_a_risky_long_option_asks(ws: Path, program: str, option: str) -> None:
    longs = PROGRAMS[program].long_options()
    for end in range(3, len(option) + 1):
        prefix = option[:end]
        if prefix != option and prefix in longs:
            continue  # getopt_long takes the exact match, another (harmless) option
        for argv in ([program, f"--{prefix}=x", "a.txt"], [program, f"--{prefix}", "x", "a.txt"]):
            assert check(ws, argv) is not None, argv


def risky_short_letters() -> list[tuple[str, str]]:
    return sorted(
        (name, option[1])
        for name, spec in PROGRAMS.items()
        for option, role in spec.roles.items()
        if not option.startswith("--") and role.risky
    )


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
@pytest.mark.parametrize(("program", "letter"), risky_short_letters())
def test_a_risky_letter_anywhere_in_a_cluster_asks(
    ws: Path, program: str, letter: str, data: st.DataObject
) -> None:
    flags = harmless_letters(program)
    before = data.draw(st.lists(st.sampled_from(flags), max_size=4))
    after = data.draw(st.lists(st.sampled_from(flags), max_size=4))
    cluster = "-" + "".join(before) + letter + "".join(after)
    argv = [program, cluster, "out", "a.txt"]
    assert check(ws, argv) is not None, argv


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    program=st.sampled_from([p for p in PROGRAMS_WITH_FILES if p not in ("pwd", "which")]),
    form=st.sampled_from(OUTSIDE_FORMS),
    inside=st.lists(st.sampled_from(["a.txt", "-n", "--output=x", "-f"]), max_size=3),
)
def test_double_dash_still_checks_the_operands(
    ws: Path, program: str, form: str, inside: list[str]
) -> None:
    path = form.format(out=str(ws.parent / "outside"))
    head = ["-e", "x"] if program == "grep" else []
    argv = [program, *head, "--", *inside, path] if program != "uniq" else [program, "--", path]
    assert check(ws, argv) is not None, argv
