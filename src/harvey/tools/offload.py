"""Offload: move an oversized tool output out of the context, leave a pointer.

A single ``grep -r`` can return more text than the model's whole context.
``OffloadHook`` writes any output longer than ``offload.threshold`` characters
to ``<workspace>/.harvey/tool_results/<session_id>/<tool_call_id>.txt``
(folders 0700, file 0600) and gives the model a short reference instead: the
workspace-relative path (so ``read_file`` can open it inside the sandbox), the
size, a preview, and how to page through it. Tools that read or write files
are excluded, otherwise reading an offloaded file would offload it again.

Fail-open: if anything about writing fails, the original output goes through.
Session and call IDs are sanitised so that no ID can name a path outside the
session's folder.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import uuid
from pathlib import Path

from harvey.errors import WorkspaceError
from harvey.fsutil import atomic_write
from harvey.messages import ToolCall, ToolResult
from harvey.private import PRIVATE_FILE
from harvey.tools.files import DEFAULT_READ_LIMIT, safe_path
from harvey.tools.registry import ToolContext

log = logging.getLogger(__name__)

DEFAULT_THRESHOLD = 10_000
DEFAULT_PREVIEW_LINES = 20
MAX_PREVIEW_LINE = 500
TOOL_RESULTS_DIR = Path(".harvey") / "tool_results"
EXCLUDED_TOOLS = frozenset({"read_file", "write_file", "edit_file", "append_file", "patch_file"})
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")

OFFLOAD_SYSTEM_PROMPT = f"""\
## Large tool output

When a tool's output is too long, the full output is saved to a file in the
workspace and you see only its path, its size and a preview. To read the rest,
call read_file with that path and byte offsets, a page at a time:
- offset: first byte to read (default 0)
- limit: bytes to read (default {DEFAULT_READ_LIMIT})
Each page ends with the offset to continue from. Example:
read_file({{"path": ".harvey/tool_results/SESSION/CALL.txt", "offset": {DEFAULT_READ_LIMIT}, \
"limit": {DEFAULT_READ_LIMIT}}})
Read only the pages you need.
"""


def sanitize_id(raw: str) -> str:
    """A file-name-safe, deterministic spelling of an ID that cannot traverse.

    Safe IDs (letters, digits, ``-``, ``_``) are kept as they are; anything
    else is replaced and a short hash of the original is appended, so two
    hostile IDs that differ only in unsafe characters do not collide.
    """
    if raw and len(raw) <= 100 and not _UNSAFE.search(raw):
        return raw
    cleaned = _UNSAFE.sub("_", raw)[:64].strip("_") or "id"
    digest = hashlib.sha256(raw.encode("utf-8", errors="surrogatepass")).hexdigest()[:12]
    return f"{cleaned}-{digest}"


def offload_dir(workspace: Path | str, session_id: str) -> Path:
    """The folder holding a session's offloaded outputs (not created here)."""
    return Path(workspace) / TOOL_RESULTS_DIR / sanitize_id(session_id)


def remove_offload_dir(workspace: Path | str, session_id: str) -> bool:
    """Delete a session's offload folder; True if it is gone. Never raises.

    The session store calls this after deleting the session's rows: a file
    system problem must not undo or block the database deletion.
    """
    try:
        folder = offload_dir(workspace, session_id)
        if not folder.exists() and not folder.is_symlink():
            return True
        parent = safe_path(workspace, TOOL_RESULTS_DIR)
        if folder.is_symlink() or folder.resolve().parent != parent:
            log.warning("not removing %s: it is not a plain folder under %s", folder, parent)
            return False
        shutil.rmtree(folder)
        return True
    except (OSError, WorkspaceError) as exc:
        log.warning("could not remove offloaded tool output for session %s: %s", session_id, exc)
        return False


def _make_private_dirs(workspace: Path, relative: Path) -> Path:
    """Create each missing level with mode 0700, checking each level is inside the
    workspace *before* creating or chmod-ing it (``.harvey`` may be a symlink)."""
    current = Path()
    for part in relative.parts:
        current = current / part
        level = safe_path(workspace, current)
        try:
            level.mkdir(mode=0o700)
        except FileExistsError:
            pass
    resolved = safe_path(workspace, relative)
    os.chmod(resolved, 0o700)
    if not resolved.is_dir():
        raise WorkspaceError(f"{relative} is not a folder")
    return resolved


def write_private_file(folder: Path, name: str, text: str) -> Path:
    """Write atomically with mode 0600; a temp name keeps concurrent writers apart."""
    target = folder / name
    atomic_write(target, text.encode("utf-8", errors="replace"), mode=PRIVATE_FILE)
    return target


def count_lines(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _first_lines(text: str, count: int) -> list[str]:
    """The first ``count`` lines without splitting a multi-megabyte output entirely."""
    lines: list[str] = []
    start = 0
    while len(lines) < count and start < len(text):
        end = text.find("\n", start)
        if end < 0:
            end = len(text)
        lines.append(text[start:end].rstrip("\r"))
        start = end + 1
    return lines


class OffloadHook:
    """After-hook that swaps an oversized output for a reference to a file."""

    def __init__(
        self,
        workspace: Path | str,
        session_id: str,
        threshold: int = DEFAULT_THRESHOLD,
        preview_lines: int = DEFAULT_PREVIEW_LINES,
        excluded_tools: frozenset[str] = EXCLUDED_TOOLS,
    ) -> None:
        self.workspace = Path(workspace)
        self.session_id = session_id
        self.threshold = threshold
        self.preview_lines = preview_lines
        self.excluded_tools = excluded_tools

    def before_execute(self, ctx: ToolContext, call: ToolCall) -> ToolContext | None:
        return None

    def after_execute(self, ctx: ToolContext, call: ToolCall, result: ToolResult) -> ToolResult:
        if len(result.content) <= self.threshold or call.name in self.excluded_tools:
            return result
        try:
            reference = self._offload(call, result.content)
        except (OSError, WorkspaceError, ValueError) as exc:
            log.warning("offload of %s output failed, passing it through: %s", call.name, exc)
            return result
        return ToolResult(result.call_id, result.name, reference)

    def _offload(self, call: ToolCall, content: str) -> str:
        root = Path(self.workspace).resolve()
        rel_dir = TOOL_RESULTS_DIR / sanitize_id(self.session_id)
        folder = _make_private_dirs(root, rel_dir)
        # read_file refuses files with NUL bytes as binary; `find -print0` output
        # must still page back, so NULs are written as the two characters \0.
        content = content.replace("\x00", "\\0")
        name = sanitize_id(call.id or f"call-{uuid.uuid4().hex}") + ".txt"
        path = write_private_file(folder, name, content)
        rel = (rel_dir / path.name).as_posix()
        size = len(content.encode("utf-8", errors="replace"))
        lines = count_lines(content)
        head = f"error: {call.name} failed; " if content.startswith("error:") else ""
        return (
            f"{head}[Output of {call.name} saved to {rel}, {lines} lines / {size} bytes total.\n"
            f"Read it in pages with read_file: "
            f'{{"path": "{rel}", "offset": 0, "limit": {DEFAULT_READ_LIMIT}}}; '
            f"each page ends with the offset to continue from.\n\n"
            f"{self._preview(content)}\n...(truncated)]"
        )

    def _preview(self, content: str) -> str:
        budget = max(self.threshold // 2, 0)  # the reference must stay well under the threshold
        out: list[str] = []
        used = 0
        for line in _first_lines(content, self.preview_lines):
            if len(line) > MAX_PREVIEW_LINE:
                line = line[:MAX_PREVIEW_LINE] + "…"
            if used + len(line) + 1 > budget:
                break
            out.append(line)
            used += len(line) + 1
        return f"Preview (first {len(out)} lines):\n" + "\n".join(out)
