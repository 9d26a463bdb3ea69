"""``harvey mcp add`` and ``remove``: a server entry in the user's own ``harvey.yaml``.

The file is the user's, with their comments and their order, so it is edited as text,
never loaded and dumped again: a new ``mcp:`` stanza is appended, or the entry goes right
under an existing ``mcp:`` / ``  servers:`` written in block style (as this command writes
it); any other shape is left alone and the person is shown the lines to add. The result
must load as settings before it replaces the file (whole, 0600), so a mistake here never
leaves a file Harvey then refuses to start with.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from harvey.config.mcp_settings import SERVER_NAME, McpServerSettings
from harvey.config.trust_store import read_bounded
from harvey.errors import UsageError


def entry_lines(name: str, server: McpServerSettings) -> list[str]:
    """The entry as block-style YAML at the depth of ``mcp.servers`` (values as JSON,
    which YAML reads as they are: no quoting surprises)."""
    lines = [f"    {name}:"]
    for key, value in server.model_dump(exclude_defaults=True).items():
        lines.append(f"      {key}: {json.dumps(value, ensure_ascii=False)}")
    return lines


def add_server(
    path: Path, name: str, server: McpServerSettings, check: Callable[[str], None]
) -> None:
    """Add ``name`` to the file at ``path``; ``check`` raises on text that does not load."""
    if not re.fullmatch(SERVER_NAME, name) or "__" in name:
        raise UsageError(f"{name!r} is not a server name (letters, digits, - and a single _)")
    text = _text(path)
    lines = text.splitlines()
    entry = entry_lines(name, server)
    if not any(re.match(r"mcp\s*:", line) for line in lines):  # no mcp: at all
        new = text + ("" if not text or text.endswith("\n") else "\n")
        new += "\n".join(["mcp:", "  servers:", *entry]) + "\n"
    else:
        at = _servers_line(lines)
        if at is None:
            raise UsageError(
                f"{path}'s mcp: stanza is not one this command edits; add under mcp.servers:\n"
                + "\n".join(entry)
            )
        if any(_is_key(line, name, 4) for line in _block(lines, at)):
            raise UsageError(f"{path} already has a server {name!r} (harvey mcp remove {name})")
        new = "\n".join([*lines[: at + 1], *entry, *lines[at + 1 :]]) + "\n"
    check(new)
    _write(path, new)


def remove_server(path: Path, name: str, check: Callable[[str], None]) -> None:
    lines = _text(path).splitlines()
    at = _servers_line(lines)
    block = _block(lines, at) if at is not None else []
    start = next((i for i, line in enumerate(block) if _is_key(line, name, 4)), None)
    if at is None or start is None:
        raise UsageError(f"{path} has no server {name!r} under mcp.servers to remove")
    first = at + 1 + start
    end = first + 1
    while end < len(lines) and (_indent(lines[end]) > 4 or not lines[end].strip()):
        end += 1
    new = "\n".join([*lines[:first], *lines[end:]]) + "\n"
    check(new)
    _write(path, new)


def _text(path: Path) -> str:
    raw = read_bounded(path)
    return "" if raw is None else raw.decode("utf-8")


def _is_key(line: str, key: str, indent: int) -> bool:
    return re.fullmatch(rf" {{{indent}}}{re.escape(key)}:\s*(#.*)?", line) is not None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _servers_line(lines: list[str]) -> int | None:
    """The index of ``  servers:`` inside a block-style ``mcp:``, or None."""
    for i, line in enumerate(lines):
        if _is_key(line, "mcp", 0):
            for j in range(i + 1, len(lines)):
                if lines[j].strip() and _indent(lines[j]) == 0:
                    return None
                if _is_key(lines[j], "servers", 2):
                    return j
    return None


def _block(lines: list[str], at: int) -> list[str]:
    """The lines under ``lines[at]`` that are indented deeper than it."""
    out = []
    for line in lines[at + 1 :]:
        if line.strip() and _indent(line) <= _indent(lines[at]):
            break
        out.append(line)
    return out


def _write(path: Path, text: str) -> None:
    from harvey.ownfiles.atomic import atomic_write
    from harvey.ownfiles.private import make_private_dirs

    make_private_dirs(path.parent)
    atomic_write(path, text.encode("utf-8"), mode=0o600)
