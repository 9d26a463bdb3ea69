"""Docs stay true: every command, option, slash command and configuration key is documented.

The lists come from the code itself (click's command tree, the REPL's command
table, the settings model), so a new option without docs fails here. The README is
a short tour and docs/USAGE.md the reference: a command, option or slash command
must be in one of them (the README must still show every top-level command), and
every example command line in either must be one the CLI accepts.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
import yaml
from pydantic import BaseModel

from harvey.cli import main
from harvey.config.settings import RouteSettings, Settings
from harvey.repl.commands import SLASH_COMMANDS

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
USAGE = (ROOT / "docs" / "USAGE.md").read_text(encoding="utf-8")
GUIDES = {"README.md": README, "docs/USAGE.md": USAGE}  # where commands are documented
CONFIGURATION = (ROOT / "docs" / "CONFIGURATION.md").read_text(encoding="utf-8")
FOUNTAIN = (ROOT / "docs" / "FOUNTAIN_FORMAT.md").read_text(encoding="utf-8")


def walk(
    command: click.Command, path: tuple[str, ...] = ("harvey",)
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """(path, command) for the group and every command below it, as click has them."""
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from walk(sub, (*path, name))


def long_names(option: click.Option) -> list[str]:
    return [o for o in option.opts + option.secondary_opts if o.startswith("--")]


COMMANDS = [(" ".join(path), cmd) for path, cmd in walk(main)]
OPTIONS = [
    (name, option)
    for name, cmd in COMMANDS
    for option in cmd.params
    if isinstance(option, click.Option) and not option.hidden
]


def test_the_walk_sees_the_commands_and_their_options() -> None:
    """Guards the walk itself: a walk that found nothing would pass every test below."""
    names = {name for name, _ in COMMANDS}
    assert {"harvey", "harvey run", "harvey analyze", "harvey sessions list"} <= names
    assert ("harvey analyze", "--overlap") in {(n, o.opts[-1]) for n, o in OPTIONS}


def mentions(text: str, command: str) -> bool:
    """``harvey NAME`` literally, or a subcommand on a line that shows its group
    (``harvey sessions list | show ID | ...``)."""
    *group, name = command.split()
    lines = [line for line in text.splitlines() if " ".join(group) in line]
    return any(re.search(rf"(^|[\s|]){re.escape(name)}\b", line) for line in lines)


@pytest.mark.parametrize("command", [name for name, _ in COMMANDS if name != "harvey"])
def test_every_command_is_documented(command: str) -> None:
    assert any(mentions(text, command) for text in GUIDES.values()), (
        f"{command} is mentioned in neither README.md nor docs/USAGE.md"
    )


@pytest.mark.parametrize("command", [name for name, _ in COMMANDS if name.count(" ") == 1])
def test_the_readme_tour_shows_every_top_level_command(command: str) -> None:
    """The README is a tour, not the reference, but a newcomer meets every command in it."""
    assert re.search(rf"(?<![\w-]){re.escape(command)}(?![\w-])", README), (
        f"`{command}` is not in README.md's tour"
    )


@pytest.mark.parametrize(
    ("command", "option"), OPTIONS, ids=[f"{n}:{(long_names(o) or o.opts)[0]}" for n, o in OPTIONS]
)
def test_every_option_is_documented_and_in_help(command: str, option: click.Option) -> None:
    """Each option (as click declares it) has help text, shows in its command's --help,
    and is named in README.md, docs/USAGE.md or docs/CONFIGURATION.md."""
    assert option.help, f"{command} {option.opts} has no help text"
    cmd = dict(COMMANDS)[command]
    with click.Context(cmd, info_name=command) as ctx:
        help_text = cmd.get_help(ctx)
    for name in long_names(option) or option.opts:
        assert name in help_text, f"{name} is missing from `{command} --help`"
    for name in long_names(option):
        word = re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")  # not --continue-file
        assert any(word.search(text) for text in (*GUIDES.values(), CONFIGURATION)), (
            f"{command} {name} is in none of README.md, docs/USAGE.md, docs/CONFIGURATION.md"
        )


@pytest.mark.parametrize("name", [c.name for c in SLASH_COMMANDS])
def test_every_slash_command_is_documented(name: str) -> None:
    assert any(f"`{name}" in text for text in GUIDES.values()), (
        f"the REPL's {name} is mentioned in neither README.md nor docs/USAGE.md"
    )


def example_command_lines() -> list[tuple[str, str]]:
    """(file, line) for every ``harvey ...`` line of the ```sh blocks, as a shell would
    split it: the comment, a pipe into it and a redirection or pipe of its output left out."""
    examples = []
    for doc, text in GUIDES.items():
        for block in re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M):
            for line in block.splitlines():
                words = shlex.split(line, comments=True)
                if "harvey" in words:
                    words = words[words.index("harvey") :]
                    for end in (">", "|"):  # its output redirected or piped on
                        words = words[: words.index(end)] if end in words else words
                    examples.append((doc, shlex.join(words)))
    return examples


EXAMPLES = example_command_lines()


def test_the_examples_are_found() -> None:
    """Guards the parse above: the tour and the reference both show commands."""
    assert {doc for doc, _ in EXAMPLES} == set(GUIDES)
    assert len(EXAMPLES) >= 30


@pytest.mark.parametrize(("doc", "line"), EXAMPLES, ids=[line for _, line in EXAMPLES])
def test_every_example_command_line_is_accepted(doc: str, line: str) -> None:
    """click parses the line down to its last subcommand (options, choices, arguments
    and their count), exactly as it would before running it; nothing is run."""
    args = shlex.split(line)[1:]
    command: click.Command = main
    ctx = main.make_context("harvey", args)
    while isinstance(command, click.Group):
        # the subcommand's name is kept apart: `_protected_args` since click 8.2, before
        # that `protected_args` (pyproject allows click 8.1)
        protected = getattr(ctx, "_protected_args", None)
        rest = [*(ctx.protected_args if protected is None else protected), *ctx.args]
        if not rest:
            break
        name, sub, rest = command.resolve_command(ctx, rest)
        assert sub is not None and name is not None, f"{doc}: {line}"
        command, ctx = sub, sub.make_context(name, rest, parent=ctx)
    assert not isinstance(command, click.Group) or command is main, f"{doc}: {line}: no command"


def config_keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    keys = []
    for name, field in model.model_fields.items():
        inner = getattr(field.annotation, "__args__", (field.annotation,))
        nested = next((a for a in inner if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if nested is not None and name != "routes":
            keys.extend(config_keys(nested, f"{prefix}{name}."))
        elif name == "routes":
            keys.extend(f"routes[].{k}" for k in config_keys(nested or BaseModel))
        else:
            keys.append(prefix + name)
    return keys


@pytest.mark.parametrize("key", config_keys(Settings))
def test_every_config_key_is_documented(key: str) -> None:
    assert f"`{key}`" in CONFIGURATION, f"{key} is missing from docs/CONFIGURATION.md"


def test_fountain_doc_has_version_and_all_notes() -> None:
    from harvey.session.recorder import FORMAT_VERSION

    assert f"version {FORMAT_VERSION}" in FOUNTAIN and f"| {FORMAT_VERSION} |" in FOUNTAIN
    for note in (
        "[[tool:",
        ".tool:",
        "[[rag:",
        "[[recall:",
        "[[shell:",
        "[[chunk:",
        "[[chunk-result:",
        "[[chunk-served:",
        "[[chunk-file:",
        "[[synthesis:",
        "[[write:",
        "[[compaction:",
        "[[evidence:",
        "[[evidence-dropped:",
        "[[citation:",
        "[[unsupported:",
    ):
        assert note in FOUNTAIN, note
    for scene in ("TALKING", "SHELL", "CONTEXT RECALL", "CHUNK ANALYSIS", "UNDO", "EXT."):
        assert scene in FOUNTAIN, scene


def test_every_note_the_reader_knows_is_documented() -> None:
    """Each ``read_X`` of session/notes.py is a note form (``[[X:``; ``read_omitted`` is
    ``[[output:``), so a note added to the format without a line in the doc fails here."""
    from harvey.session import notes

    names = [n.removeprefix("read_") for n in dir(notes) if n.startswith("read_")]
    assert len(names) >= 10
    for name in names:
        note = "[[output:" if name == "omitted" else f"[[{name.replace('_', '-')}:"
        assert note in FOUNTAIN, note


def test_the_title_page_example_names_the_current_version() -> None:
    """The example title page's ``Format:`` line was left at an older version once."""
    from harvey.session.recorder import FORMAT_VERSION

    versions = set(re.findall(r"Harvey Fountain (\d+\.\d+)", FOUNTAIN))
    assert versions == {FORMAT_VERSION}


def test_architecture_has_a_row_for_every_module() -> None:
    """docs/ARCHITECTURE.md names every module of src/harvey in its table."""
    root = Path(__file__).resolve().parents[1]
    package = root / "src" / "harvey"
    text = (root / "docs" / "ARCHITECTURE.md").read_text()
    rows = {line.split("`")[1] for line in text.splitlines() if line.startswith("| `")}
    modules = {
        p.relative_to(package).as_posix()
        for p in package.rglob("*.py")
        if p.read_text().strip()  # an empty package marker needs no row
    }
    missing = sorted(modules - rows)
    assert not missing, f"modules without a row in docs/ARCHITECTURE.md: {missing}"
    module_rows = [
        r
        for r in (line.split("`")[1] for line in text.splitlines() if line.startswith("| `"))
        if r.endswith(".py")
    ]
    gone = sorted(
        set(module_rows) - {p.relative_to(package).as_posix() for p in package.rglob("*.py")}
    )
    assert not gone, f"rows in docs/ARCHITECTURE.md for modules that do not exist: {gone}"
    twice = sorted({r for r in module_rows if module_rows.count(r) > 1})
    assert not twice, f"modules with two rows in docs/ARCHITECTURE.md: {twice}"


def documented_config_keys() -> set[str]:
    """The keys in the first column of CONFIGURATION.md's ``| key |`` tables."""
    keys: set[str] = set()
    in_key_table = False
    for line in CONFIGURATION.splitlines():
        if not line.startswith("|"):
            in_key_table = False
        elif line.startswith("| key |"):
            in_key_table = True
        elif in_key_table and line.startswith("| `"):
            keys.update(re.findall(r"`([^`]+)`", line.split("|")[1]))
    return keys


def test_no_documented_config_key_is_missing_from_the_code() -> None:
    """The other direction: a key the docs name but the settings model refuses (renamed or
    removed) would send a user to an ``unknown key`` error."""
    documented = documented_config_keys()
    assert {"backend", "chunking.chunk_size_bytes", "memory.embedder"} <= documented
    code = set(config_keys(Settings))
    containers = {key.rsplit(".", 1)[0] for key in code if "." in key}  # endpoints, routes[]...
    unknown = sorted(documented - code - containers)
    assert not unknown, f"docs/CONFIGURATION.md documents keys the code lacks: {unknown}"


def documented_defaults() -> list[tuple[str, str]]:
    """(key, literal) for every key whose documented default is one `literal` (not prose
    such as "backend's choice", nor an environment variable such as `$USER`)."""
    rows = []
    in_key_table = False
    for line in CONFIGURATION.splitlines():
        if not line.startswith("|"):
            in_key_table = False
        elif line.startswith("| key |"):
            in_key_table = True
        elif in_key_table and line.startswith("| `"):
            key_cell, default_cell = (cell.strip() for cell in line.split("|")[1:3])
            literal = re.fullmatch(r"`([^`$A-Z][^`]*)`", default_cell)
            if re.fullmatch(r"`[^`]+`", key_cell) and literal:
                rows.append((key_cell.strip("`"), literal.group(1)))
    return rows


@pytest.mark.parametrize(("key", "literal"), documented_defaults())
def test_documented_default_is_the_real_one(key: str, literal: str) -> None:
    from harvey.config.mcp_settings import McpServerSettings

    value: object = RouteSettings(name="r") if key.startswith("routes[].") else Settings()
    if key.startswith("mcp.servers."):  # a named stanza: one server's defaults
        value = McpServerSettings(command="x")
    for part in key.removeprefix("routes[].").removeprefix("mcp.servers.").split("."):
        value = getattr(value, part)
    documented = yaml.safe_load(literal)
    if isinstance(value, list) and not isinstance(documented, list):
        value = " ".join(value)  # security.allowed_commands, written as words
    assert documented == value, f"{key}: documented {literal}, the code has {value!r}"


def test_defaults_are_checked_for_most_keys() -> None:
    """Guards the parse above: a table format change must not leave nothing compared."""
    assert {"timeout", "chunking.chunk_size_bytes", "routes[].backend", "memory.embedder"} <= {
        key for key, _ in documented_defaults()
    }


NOTE_VIEWS = {  # the scene attribute the parser fills for each note documented
    "tool": "tool_notes",
    "write": "write_notes",
    "undo": "undo_notes",
    "rag": "rag",
    "rag-source": "rag_sources",
    "recall": "recall",
    "shell": "shell",
    "chunk": "chunk",
    "chunk-served": "chunk_served",
    "chunk-file": "chunk_files",
    "chunk-result": "chunk_results",
    "synthesis": "synthesis",
    "compaction": "compaction",
    "evidence": "evidence",
    "evidence-dropped": "evidence_dropped",
    "citation": "citations",
    "unsupported": "unsupported",
}
NOTE_EXAMPLES = re.findall(r"^\| `\[\[.*\| `(\[\[.*\]\])` \|$", FOUNTAIN, re.M)


def test_the_note_examples_are_found() -> None:
    assert len(NOTE_EXAMPLES) >= len(NOTE_VIEWS)


@pytest.mark.parametrize("example", NOTE_EXAMPLES)
def test_every_documented_note_example_parses(example: str) -> None:
    """The parser reads each example of the Notes table as the note it documents (strict,
    so a documented syntax the parser does not know fails here)."""
    from harvey.session.fountain import parse_session_text

    kind = re.match(r"\[\[(?:[A-Z0-9 ]+\.)?([a-z-]+):", example)
    assert kind is not None, example
    if kind.group(1) == "output":  # it belongs inside SHELL dialogue, not among the notes
        scene = f"INT. SHELL 2026-06-24 10:03:15\n\nRSDOIEL\n\\! ls\n\nSHELL\na\n{example}\nb\n"
    else:
        scene = f"INT. HARVEY AND RSDOIEL TALKING 2026-06-24 10:02:30\n\n{example}\n"
    text = (
        f"Title: Harvey Session\nFormat: Harvey Fountain 1.6\n\nFADE IN:\n\n{scene}\n\nTHE END.\n"
    )
    (parsed,) = parse_session_text(text, strict=True).scenes
    if kind.group(1) == "output":
        assert parsed.omitted > 0 and parsed.shell_output == "a\nb", f"{example} was not read"
    else:
        assert getattr(parsed, NOTE_VIEWS[kind.group(1)]), f"{example} was not read as a note"


def test_the_documented_examples_parse_strictly() -> None:
    """The complete examples of FOUNTAIN_FORMAT.md are valid session files."""
    from harvey.session.fountain import parse_session_text

    blocks = re.findall(r"```\n(.*?)```", FOUNTAIN, re.S)
    scenes = [b.replace("THE END.", "") for b in blocks if "INT." in b and "Title:" not in b]
    text = "Title: Harvey Session\n\nFADE IN:\n\n" + "\n\n".join(scenes) + "\n\nTHE END.\n"
    parsed = parse_session_text(text, strict=True)
    assert {"recall", "talking", "shell", "ext", "chunk_analysis"} <= {
        s.kind for s in parsed.scenes
    }


def anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives the headings: lower case, punctuation dropped, spaces
    to hyphens (``## `memory:` `` is ``#memory``)."""
    headings = re.findall(
        r"^#+ (.+)$", re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M), re.M
    )
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def anchored_links() -> list[tuple[str, str, str]]:
    """(file, target file, anchor) for every relative Markdown link with an anchor."""
    links = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target, anchor in re.findall(r"\]\(([^)#:\s]*)#([^)\s]+)\)", path.read_text()):
            resolved = (path.parent / target).resolve() if target else path
            links.append(
                (path.relative_to(ROOT).as_posix(), resolved.relative_to(ROOT).as_posix(), anchor)
            )
    return links


def test_the_anchored_links_are_found() -> None:
    assert {"README.md", "docs/USAGE.md"} <= {doc for doc, _, _ in anchored_links()}


@pytest.mark.parametrize(("doc", "target", "anchor"), anchored_links())
def test_every_anchored_link_leads_to_a_heading(doc: str, target: str, anchor: str) -> None:
    """A section moved to docs/USAGE.md (or renamed) must not leave links pointing nowhere."""
    assert anchor in anchors((ROOT / target).read_text()), (
        f"{doc}: {target}#{anchor} has no heading"
    )


def test_every_environment_variable_is_documented() -> None:
    """Each ``HARVEY_*`` name the code spells as a string (what it reads from the
    environment) has a row in CONFIGURATION.md's Environment table."""
    package = ROOT / "src" / "harvey"
    names = {
        name
        for path in package.rglob("*.py")
        for name in re.findall(r"[\"'](HARVEY_[A-Z_]+)[\"']", path.read_text(encoding="utf-8"))
    }
    assert {"HARVEY_HOME", "HARVEY_PDF_PASSWORD"} <= names
    environment = CONFIGURATION.partition("## Environment")[2]
    missing = sorted(n for n in names if f"`{n}" not in environment)
    assert not missing, f"environment variables not in CONFIGURATION.md: {missing}"


def test_every_narrowing_key_is_in_the_trust_table() -> None:
    """The settings' workspace declarations (what an untrusted workspace may set) against
    CONFIGURATION.md's trust table (a key whose value decides, such as ``memory.embedder``, may sit in the
    right column with its narrowing values); ``max_in_flight`` was once missing."""
    from harvey.config.settings import WORKSPACE_RULES

    section = CONFIGURATION.partition("## Workspace trust")[2].partition("\n## ")[0]
    table = " ".join(line for line in section.splitlines() if line.startswith("| "))
    named = set(re.findall(r"`([^`]+)`", table))
    missing = [
        key
        for key in WORKSPACE_RULES.narrowing
        if not any(n == key or n.startswith(f"{key}:") for n in named)
        and f"{key.split('.')[0]}.*" not in named
    ]
    assert not missing, f"narrowing keys not in the trust table: {missing}"


@pytest.mark.parametrize(
    "doc", ["README.md", "BENCHMARKS.md", *sorted(p.name for p in (ROOT / "docs").glob("*.md"))]
)
def test_every_table_row_has_its_header_s_cells(doc: str) -> None:
    """A ``|`` inside a code span still splits a Markdown table cell unless escaped
    (``list\\|show``); three rows of ARCHITECTURE.md once rendered as broken tables."""
    path = ROOT / doc if (ROOT / doc).exists() else ROOT / "docs" / doc
    cells = None
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fenced ^= line.startswith("```")
        if fenced or not line.startswith("|"):
            cells = None
            continue
        count = len(re.split(r"(?<!\\)\|", line.strip().strip("|")))
        if cells is None:
            cells = count
        assert count == cells, f"{doc}:{number}: {count} cells, the header has {cells}"


def test_every_named_test_file_and_module_exists() -> None:
    """The docs cite test files (SECURITY.md's "attacked by") and modules by name; a
    file renamed or removed leaves a citation that points nowhere."""
    docs = [ROOT / "README.md", ROOT / "tests" / "README.md", *(ROOT / "docs").glob("*.md")]
    text = "\n".join(p.read_text(encoding="utf-8") for p in docs)
    tests = {p.name for p in (ROOT / "tests").rglob("test_*.py")}
    cited = set(re.findall(r"\b(test_[a-z0-9_]+\.py)\b", text))
    assert len(cited) > 10
    assert not sorted(cited - tests), f"test files cited but missing: {sorted(cited - tests)}"
    modules = set(re.findall(r"`((?:[a-z_]+/)+[a-z_]+\.py)`", text))
    gone = sorted(
        m for m in modules if not (ROOT / "src" / "harvey" / m).exists() and not (ROOT / m).exists()
    )
    assert not gone, f"modules cited but missing: {gone}"


def test_every_tool_is_in_the_usage_table() -> None:
    """Each tool class's ``name`` under src/harvey/tools/ has a row in USAGE.md's table of
    the model's tools (there was no such list before)."""
    tools = {
        name
        for path in (ROOT / "src" / "harvey" / "tools").glob("*.py")
        for name in re.findall(r'^    name = "([a-z_]+)"$', path.read_text(encoding="utf-8"), re.M)
    }
    assert {"read_file", "edit_file", "run_shell"} <= tools
    rows = "\n".join(line for line in USAGE.splitlines() if line.startswith("| `"))
    missing = sorted(t for t in tools if f"`{t}`" not in rows)
    assert not missing, f"tools without a row in docs/USAGE.md: {missing}"


def test_the_full_configuration_example_is_valid() -> None:
    """CONFIGURATION.md's "A full example" is a harvey.yaml the settings model accepts
    (unknown keys are refused, so a renamed key in the example fails here)."""
    section = CONFIGURATION.partition("## A full example")[2]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block is not None
    settings = Settings.model_validate(yaml.safe_load(block.group(1)))
    assert settings.tools.models
