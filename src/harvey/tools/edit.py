"""``edit_file``: change a few lines of a file the model has not read whole.

``write_file`` needs the complete new content, so changing one line of a 30 KB
file means reading and resending all of it, which an 8k window cannot do. This
tool takes the exact text to replace and its replacement; the file is streamed
(``edit_stream``), twice: once to find the text and show the person the change,
once, after their yes, to write it. Both passes read the same bytes or nothing
is written: the second checks the file's SHA-256 against the first.

It is refused where ``read_file`` is (a secret file, a hard link, a link out of
the workspace: the file is a ``Source``, ``ToolContext.source``), asks exactly as
``write_file`` asks (``ToolContext.approve_write``: the diff, yes/no/all/quit,
``--allow-writes``, protected files), and writes through the same atomic,
link-refusing replace, keeping a checkpoint of the previous content for undo
(``session/checkpoints.py``). The file's encoding (UTF-8, with or without a BOM,
else Latin-1 byte for byte) and line endings are kept.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from harvey.errors import NotAFile, ToolError
from harvey.redact import redact
from harvey.session.checkpoints import write_checkpointed
from harvey.tools import edit_stream as es
from harvey.tools.registry import ToolContext
from harvey.ui import WriteRequest
from harvey.workspace.paths import display_path, looks_binary, safe_path
from harvey.workspace.source import Source

_HEAD = 65536


@dataclass
class _Plan:
    """What pass one found: the exact text to replace, its replacement and where."""

    encoding: str
    needle: str
    replacement: str
    found: es.Replacer
    sha: str
    size: int
    note: str = ""


def _open_text(source: Source, encoding: str, digest: es.Hashed | None) -> Iterator[str]:
    try:
        with source.open() as handle:
            yield from es.text_blocks(handle, encoding, digest=digest)
    except OSError as exc:
        raise ToolError(f"cannot read {source.name}: {exc.strerror or exc}") from exc


def _lines(numbers: list[int], count: int) -> str:
    listed = ", ".join(str(n) for n in numbers)
    return listed + (f", … ({count - len(numbers)} more)" if count > len(numbers) else "")


class EditFileTool:
    """Exact search and replace in one workspace file, streamed, asked like a write."""

    name = "edit_file"
    description = (
        "Replace text in an existing workspace file without reading it whole: old_string "
        "must match the file exactly (include enough surrounding lines to make it unique); "
        "new_string replaces it. replace_all=true replaces every occurrence. Use write_file "
        "to create a file. The user is asked to approve every edit and may decline it."
    )
    parameters: dict[str, Any] = {  # noqa: RUF012 - the Tool protocol reads an attribute
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "file path relative to the workspace"},
            "old_string": {"type": "string", "description": "the exact text to replace"},
            "new_string": {"type": "string", "description": "the text to put in its place"},
            "replace_all": {
                "type": "boolean",
                "description": "replace every occurrence (default false: it must be unique)",
            },
        },
        "required": ["path", "old_string", "new_string"],
    }

    def run(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        requested = args.get("path")
        old, new = args.get("old_string"), args.get("new_string")
        if not isinstance(requested, str) or not requested:
            raise ToolError("missing or empty argument 'path'")
        if not isinstance(old, str) or not isinstance(new, str):
            return "error: edit_file needs 'old_string' and 'new_string' as strings"
        if not old:
            return "error: old_string is empty; to create a file use write_file"
        if old == new:
            return "error: old_string and new_string are the same; nothing to change"
        replace_all = args.get("replace_all", False) in (True, "true", "True")
        try:  # secret files, hard links: FileRefused, one error line from the registry
            source = ctx.source(requested)
        except NotAFile as exc:
            shown = display_path(ctx.workspace, safe_path(ctx.workspace, requested))
            if exc.kind == "missing":
                return f"error: {shown} does not exist; to create it use write_file"
            return f"error: {shown} is {'a directory' if exc.kind == 'directory' else exc.kind}"
        shown = source.name
        if ctx.approve_write is None:  # nobody can approve: fail closed
            return f"error: write refused: no one can approve writes here; {shown} was not edited"
        plan = self._plan(source, old, new, replace_all)
        if isinstance(plan, str):
            return plan
        try:
            new_bytes = len(plan.replacement.encode(plan.encoding))
            old_bytes = len(plan.needle.encode(plan.encoding))
        except UnicodeEncodeError:
            return f"error: new_string cannot be written in {shown}'s encoding ({plan.encoding})"
        changes = plan.found.count
        diff = es.hunk_diff(plan.found.hunks, redact)
        if changes > len(plan.found.hunks):
            diff.append(f"[… {changes - len(plan.found.hunks)} more changes not shown]")
        request = WriteRequest(
            shown,
            "",
            old_size=plan.size,
            new_size=plan.size + changes * (new_bytes - old_bytes),
            diff=tuple(diff),
            changes=changes,
        )
        return ctx.approve_write(request, lambda: self._write(ctx, source, plan))

    def _plan(self, source: Source, old: str, new: str, replace_all: bool) -> _Plan | str:
        shown = source.name
        try:
            head = source.head(_HEAD)
        except OSError as exc:
            raise ToolError(f"cannot read {shown}: {exc.strerror or exc}") from exc
        if looks_binary(head):
            return f"error: {shown} looks like a binary file (it contains NUL bytes)"
        note = ""
        first_end = head.find(b"\n")
        if first_end > 0 and head[first_end - 1 : first_end] == b"\r" and "\r\n" not in old:
            old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
            note = " (matched with the file's CRLF line endings)" if "\n" in old else ""
        encoding = es.detect_encoding(head)
        try:
            plan = self._scan(source, encoding, old, new)
        except UnicodeDecodeError:
            encoding = "latin-1"  # not UTF-8: every byte is kept as it is
            plan = self._scan(source, encoding, old, new)
        plan.note = note
        if plan.found.count == 0:
            return self._loose(source, plan, old, new, replace_all)
        if plan.found.count > 1 and not replace_all:
            return (
                f"error: old_string occurs {plan.found.count} times in {shown} (lines "
                f"{_lines(plan.found.lines, plan.found.count)}); include more surrounding text "
                "to make it unique, or pass replace_all=true to replace every one"
            )
        return plan

    def _scan(self, source: Source, encoding: str, needle: str, new: str) -> _Plan:
        digest = es.Hashed()
        found = es.Replacer(needle, new)
        for block in _open_text(source, encoding, digest):
            found.feed(block)
        found.finish()
        return _Plan(encoding, needle, new, found, digest.hexdigest(), digest.size)

    def _loose(
        self, source: Source, plan: _Plan, old: str, new: str, replace_all: bool
    ) -> _Plan | str:
        """No exact match: a unique whitespace-only match is applied, else the closest text."""
        shown = source.name
        scan = es.LineScan(old).run(_open_text(source, plan.encoding, None))
        if scan.count == 1:
            eol = "\r\n" if scan.region.count("\r\n") or "\r\n" in old else "\n"
            replacement = es.reindent(new, old, scan.region, eol)
            exact = self._scan(source, plan.encoding, scan.region, replacement)
            if exact.found.count == 1:
                exact.note = (
                    " (old_string matched at line "
                    f"{scan.matches[0]} ignoring indentation, trailing spaces and line endings; "
                    "new_string was given the file's indentation)"
                )
                return exact
        if scan.count > 1:
            return (
                f"error: old_string is not in {shown} exactly; ignoring whitespace it matches "
                f"{scan.count} places (lines {_lines(scan.matches, scan.count)}), so nothing was "
                "changed: give the exact text, with enough surrounding lines to be unique"
            )
        message = f"error: old_string was not found in {shown}; nothing was changed."
        if not scan.closest:
            return message + " No similar text either: read the file to see what it holds."
        k = max(1, old.strip("\r\n").count("\n") + 1)
        quoted = es.excerpt(_open_text(source, plan.encoding, None), scan.closest, k)
        end = scan.closest + len(quoted) - 1
        where = f"line {scan.closest}" if end == scan.closest else f"lines {scan.closest}-{end}"
        return "\n".join(
            [
                f"{message} The closest text is at {where} (as it is now):",
                *quoted,
                "Copy old_string exactly from there (without the line numbers) and try again.",
            ]
        )

    def _write(self, ctx: ToolContext, source: Source, plan: _Plan) -> str:
        path, shown = source.path, source.name
        digest = es.Hashed()
        blocks, replacer = es.replace_stream(
            _open_text(source, plan.encoding, digest), plan.needle, plan.replacement
        )

        def encoded() -> Iterator[bytes]:
            encoder = codecs.getincrementalencoder(plan.encoding)()
            for text in blocks:
                yield encoder.encode(text)
            yield encoder.encode("", final=True)
            if digest.hexdigest() != plan.sha or replacer.count != plan.found.count:
                raise ToolError(
                    f"{shown} changed while the edit waited for approval; nothing was written "
                    "(read it again and retry)"
                )

        home, session, recording = ctx.harvey_home, ctx.session_id, ctx.extras.get("recording")
        written = write_checkpointed(home, session, ctx.workspace, path, encoded(), recording)
        lines = _lines(plan.found.lines, plan.found.count)
        count = plan.found.count
        what = "1 occurrence" if count == 1 else f"{count} occurrences"
        return f"edited {shown}: replaced {what} (line{'s' * (count != 1)} {lines}), " + (
            f"now {written.size:,} bytes{plan.note}{written.note}"
        )
