"""Workspace file tools: every path goes through ``workspace.paths.safe_path`` first.

The workspace is the only part of the disk a model may touch, so one small
function decides what "inside" means (symlinks resolved, ``..`` normalised,
NUL bytes refused, ``/ws-evil`` is not ``/ws``) and every tool calls it.

Some files inside are still never read for the model (redaction cannot hide a
key read six bytes at a time): secret files by name and hard links. A tool reads a
file only as a ``Source`` from ``ToolContext.source`` (``workspace/source.py``), which
applies the rule to the name asked for and the real path, and once more to what it
opens (the name, and ``st_nlink`` on the descriptor), so no reader can forget it.

``read_file`` is byte-paginated so a model can page through a file of any size
(including offloaded tool output) without blowing up its context: pages never
split a UTF-8 character and tell the model the exact offset to continue from.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harvey.errors import FileRefused, NotAFile, ToolError
from harvey.session.checkpoints import write_checkpointed
from harvey.tools.approval import describe_write
from harvey.tools.document_read import read_document
from harvey.tools.registry import ToolContext
from harvey.workspace import secret_files
from harvey.workspace.files import (
    HARD_LINK,
    SECRET_FILE,
)
from harvey.workspace.paths import BINARY_SNIFF_BYTES, display_path, looks_binary, safe_path
from harvey.workspace.skipped import skipped_dir
from harvey.workspace.source import Source, binary_refusal

# A page of 4 KB is ~1,000 tokens: a plain read_file(path) of any file is cheap.
# Pass limit=0 to ask for the whole file (the pre-read guard then applies).
DEFAULT_READ_LIMIT = 4096
# One call never returns more than this, whatever the limit and with the guard off
# (chunking disabled): memory for a read must not grow with the file.
MAX_READ_BYTES = 1024 * 1024
MAX_LIST_ENTRIES = 1000


def _is_continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def _sequence_length(lead: int) -> int:
    if lead < 0x80:
        return 1
    if lead >> 5 == 0b110:
        return 2
    if lead >> 4 == 0b1110:
        return 3
    if lead >> 3 == 0b11110:
        return 4
    return 1  # an invalid lead byte stands alone (decoded as U+FFFD)


def complete_prefix_length(data: bytes) -> int:
    """Length of the longest prefix of ``data`` that does not end inside a UTF-8 character."""
    n = len(data)
    # Look back at most 3 bytes for the lead byte of the last character.
    for back in range(1, min(4, n) + 1):
        byte = data[n - back]
        if not _is_continuation(byte):
            return n if _sequence_length(byte) <= back else n - back
    return n  # only continuation bytes: invalid UTF-8, nothing to protect


class ReadFileTool:
    """Byte-paginated reads confined to the workspace, with the pre-read budget guard."""

    name = "read_file"
    description = (
        "Read a UTF-8 text file in the workspace, a page of bytes at a time; a PDF, DOCX, "
        "HTML or EPUB is read as its text (offset/limit in characters; pages='3-5'). "
        f"offset = first byte (default 0), limit = bytes to read (default {DEFAULT_READ_LIMIT}; "
        f"0 = whole file, up to {MAX_READ_BYTES:,} bytes a call). "
        "When more remains the result ends with the offset to continue from."
    )
    parameters: dict[str, Any] = {  # noqa: RUF012 - the Tool protocol reads an attribute
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "file path relative to the workspace"},
            "offset": {"type": "integer", "minimum": 0, "description": "first byte to read"},
            "limit": {"type": "integer", "minimum": 0, "description": "bytes to read; 0 = all"},
            "pages": {"type": "string", "description": "PDF pages to read, e.g. '3' or '3-5'"},
        },
        "required": ["path"],
    }

    def __init__(self, default_limit: int = DEFAULT_READ_LIMIT) -> None:
        # No bytes-per-token here: the ratio comes with ``ctx.read_budget()``, calibrated
        # for the model of the turn, so this tool and ``/read`` never disagree.
        self.default_limit = default_limit

    def run(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        requested = _require_str(args, "path")
        offset = _int_arg(args, "offset", 0)
        limit = _int_arg(args, "limit", self.default_limit)
        try:  # decided once: inside, not secret, not a hard link, a regular file
            source = ctx.source(requested)
        except FileRefused as exc:
            if exc.reason != HARD_LINK:
                raise  # a secret file: one error line from the registry
            return f"error: {exc}"  # before the guard: an oversized one must not reach analysis
        except NotAFile as exc:
            shown = display_path(ctx.workspace, safe_path(ctx.workspace, requested))
            if exc.kind == "missing":
                return f"error: {shown} does not exist"
            if exc.kind == "directory":
                return f"error: {shown} is a directory; use list_files to see what it holds"
            kind = exc.kind
            return f"error: {shown} is {kind}, not a regular file; read_file reads regular files"
        shown, size = source.name, source.size
        if source.is_document:  # PDF, DOCX, HTML, EPUB: pages of their text
            chars = self.default_limit if "limit" not in args else limit
            return read_document(ctx, source, args, chars, MAX_READ_BYTES)
        try:  # refused as analyze refuses it, before any guard offers it for chunking
            binary = source.looks_binary()
        except OSError as exc:
            raise ToolError(f"cannot read {shown}: {exc.strerror or exc}") from exc
        if binary:
            return f"error: {binary_refusal(shown, 'read_file')}"
        if offset >= size:
            return (
                f"[offset={offset} is at or past the end of {shown} ({size} bytes); "
                "nothing to read.]"
            )
        wanted = size - offset if limit == 0 else min(limit, size - offset)
        # Without an explicit limit the model is asking for "the file": guard on
        # everything from offset on, so asking about a huge file raises the
        # overflow alert instead of quietly returning its first page. An
        # explicit page (offset/limit) is guarded on that page alone.
        intent = size - offset if "limit" not in args else wanted
        guarded = self._guard(ctx, source, intent)
        if guarded is not None:
            return guarded
        return _read_page(source, offset, min(wanted, MAX_READ_BYTES))

    def _guard(self, ctx: ToolContext, source: Source, wanted: int) -> str | None:
        """Hand an oversized read to ``ctx.on_oversize`` instead of flooding the context.

        The whole file is checked first from ``os.stat`` alone; only when it is
        over budget does the size of this page matter, so a 4 KB page of a huge
        file still reads while ``limit=0`` (or a large limit) is guarded.
        """
        if ctx.read_budget is None:
            return None
        budget = ctx.read_budget()
        checked = budget.check(source)  # at the ratio of the file's type (prose, source)
        if not checked.exceeds or ctx.on_oversize is None:
            return None
        size = checked.size
        if wanted < size and budget.fits(wanted, source.doc_type.value):
            return None
        return ctx.on_oversize(source, size, checked.tokens, budget.tokens)


def _read_page(source: Source, offset: int, wanted: int) -> str:
    shown, size = source.name, source.size
    try:
        with source.open() as handle:
            if looks_binary(handle.read(BINARY_SNIFF_BYTES)):
                return f"error: {binary_refusal(shown, 'read_file')}"  # changed since
            handle.seek(offset)
            data = handle.read(wanted + 3)  # 3 spare bytes finish a split character
    except OSError as exc:
        raise ToolError(f"cannot read {shown}: {exc.strerror or exc}") from exc
    start = 0
    while start < min(3, len(data)) and _is_continuation(data[start]):
        start += 1  # the requested offset fell inside a character: begin at the next one
    page = data[start:wanted]
    end = offset + start + len(page)
    if end < size:
        cut = complete_prefix_length(page)
        if cut == 0 and page:  # a limit smaller than one character: take the whole character
            cut = _sequence_length(page[0])
            page = data[start : start + cut]
        else:
            page = page[:cut]
        end = offset + start + len(page)
    text = page.decode("utf-8", errors="replace")
    notes = []
    if start:
        notes.append(f"offset {offset} was inside a character; started at {offset + start}")
    if end < size:
        notes.append(
            f"showing bytes {offset + start}-{end} of {size}; to continue reading use offset={end}"
        )
        if wanted >= MAX_READ_BYTES:
            notes.append(f"one read_file call returns at most {MAX_READ_BYTES:,} bytes")
    if not notes:
        return text
    return f"{text}\n\n[{'; '.join(notes)}.]"


class WriteFileTool:
    """Writes ask: the person sees the diff (or the new file's head) and approves first."""

    name = "write_file"
    description = (
        "Create or overwrite a UTF-8 text file in the workspace (makes parent folders). "
        "The user is asked to approve every write and may decline it."
    )
    parameters: dict[str, Any] = {  # noqa: RUF012 - the Tool protocol reads an attribute
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "file path relative to the workspace"},
            "content": {"type": "string", "description": "the complete new content"},
        },
        "required": ["path", "content"],
    }

    def run(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        path = safe_path(ctx.workspace, _require_str(args, "path"))
        content = args.get("content")
        if not isinstance(content, str):
            return "error: write_file needs 'content' as a string"
        shown = display_path(ctx.workspace, path)
        if path.is_dir():
            return f"error: {shown} is a directory"
        try:
            content.encode("utf-8")
        except UnicodeEncodeError:
            return "error: write_file content is not valid text (it holds a lone surrogate)"
        if ctx.approve_write is None:  # nobody can approve: fail closed
            return f"error: write refused: no one can approve writes here; {shown} was not written"
        request = describe_write(path, shown, content)
        return ctx.approve_write(request, lambda: _write_atomically(ctx, path, content))


def _write_atomically(ctx: ToolContext, path: Path, content: str) -> str:
    # Folders made and the file renamed in without following a link (harvey.ownfiles.nofollow);
    # keeps e.g. a script's x bit; readers never see half a file; the previous content
    # is kept for undo (session/checkpoints.py).
    data = content.encode("utf-8")
    recording = ctx.extras.get("recording")  # where `harvey undo` records taking it back
    done = write_checkpointed(
        ctx.harvey_home, ctx.session_id, ctx.workspace, path, [data], recording
    )
    return f"wrote {len(data)} bytes to {display_path(ctx.workspace, path)}{done.note}"


class ListFilesTool:
    name = "list_files"
    description = (
        "List files and folders in the workspace as an indented tree (folders end with '/'). "
        "depth = how many levels to descend (default 2)."
    )
    parameters: dict[str, Any] = {  # noqa: RUF012 - the Tool protocol reads an attribute
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "folder relative to the workspace"},
            "depth": {"type": "integer", "minimum": 1, "maximum": 10},
        },
    }

    def run(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        path = safe_path(ctx.workspace, args.get("path") or ".")
        depth = _int_arg(args, "depth", 2)
        if not 1 <= depth <= 10:
            return "error: depth must be between 1 and 10"
        shown = display_path(ctx.workspace, path)
        if not path.exists():
            return f"error: {shown} does not exist"
        if not path.is_dir():
            return f"error: {shown} is not a folder; use read_file to read it"
        lines: list[str] = []
        truncated = False
        root = Path(ctx.workspace).resolve()
        for line in _tree(root, path, depth, ""):
            if len(lines) >= MAX_LIST_ENTRIES:
                truncated = True
                break
            lines.append(line)
        if not lines:
            return f"{shown}/ is empty"
        if truncated:
            lines.append(f"[listing stopped after {MAX_LIST_ENTRIES} entries; list a subfolder]")
        return f"{shown}/\n" + "\n".join(lines)


def _not_read_mark(root: Path, entry: Path) -> str:
    """`` [secret file: not read]`` / `` [hard link: not read]`` after a name the file
    tools refuse, so the model sees the file exists and does not try (``""`` otherwise).
    A link is judged by its own name and by what it leads to."""
    rule = secret_files.active()
    names = {display_path(root, entry)}
    try:
        names.add(display_path(root, entry.resolve()))
    except (OSError, RuntimeError):  # a link loop: judged by its own name
        pass
    if any(rule.matches(name) for name in names):
        return f"  [{SECRET_FILE}: not read]"
    try:
        info = entry.stat()
    except OSError:
        return ""
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        return f"  [{HARD_LINK}: not read]"
    return ""


def _tree(root: Path, folder: Path, depth: int, indent: str) -> Iterator[str]:
    """The listing, ``depth`` (at most 10) levels down: recursion is bounded by it."""
    try:
        entries = sorted(folder.iterdir(), key=lambda p: (not p.is_dir(), p.name.lower()))
    except OSError as exc:
        yield f"{indent}  [cannot list: {exc.strerror or exc}]"
        return
    for entry in entries:
        if entry.is_symlink():
            target = os.readlink(entry)
            yield f"{indent}  {entry.name} -> {target}{_not_read_mark(root, entry)}"
        elif entry.is_dir():
            yield f"{indent}  {entry.name}/"
            if depth > 1 and not skipped_dir(entry.name, entry):
                yield from _tree(root, entry, depth - 1, indent + "  ")
        else:
            yield f"{indent}  {entry.name}{_not_read_mark(root, entry)}"


def _require_str(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value:
        raise ToolError(f"missing or empty argument {key!r}")
    return value


def _int_arg(args: dict[str, Any], key: str, default: int) -> int:
    value = args.get(key, default)
    if value is None:
        return default
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)  # models sometimes quote numbers
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"argument {key!r} must be an integer, got {value!r}")
    if value < 0:
        raise ToolError(f"argument {key!r} must not be negative")
    return value
