"""Offload: move an oversized tool output out of the context, leave a pointer.

A single ``grep -r`` can return more text than the model's whole context.
``OffloadHook`` writes any output longer than ``offload.threshold`` characters
to ``<workspace>/.harvey/tool_results/<session_id>/<tool_call_id>.txt``
(folders 0700, file 0600) and gives the model a short reference instead: the
workspace-relative path (so ``read_file`` can open it inside the sandbox), the
size, a preview, and how to page through it. Tools that read or write files
are excluded, otherwise reading an offloaded file would offload it again.

The folders and the file are made through ``harvey.ownfiles.nofollow``, from the
workspace down without following a link: a ``.harvey`` or ``tool_results``
that a cloned repository made a link is refused, and offloading is off for
the session after one warning.

Fail-open: if anything about writing fails, the original output goes through.
Session and call IDs are sanitised so that no ID can name a path outside the
session's folder.
"""

from __future__ import annotations

import hashlib
import logging
import re
import uuid
from collections.abc import Callable
from pathlib import Path

from harvey.errors import WorkspaceError
from harvey.messages import ToolCall, ToolResult
from harvey.ownfiles.nofollow import PRIVATE_FILE, Folder, Location, UnsafePath
from harvey.tools.files import DEFAULT_READ_LIMIT
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


def offload_location(workspace: Path | str, session_id: str) -> Location:
    return Location(Path(workspace), (*TOOL_RESULTS_DIR.parts, sanitize_id(session_id)))


def remove_offload_dir(workspace: Path | str, session_id: str) -> bool:
    """Delete a session's offload folder; True if it is gone. Never raises.

    The session store calls this after deleting the session's rows: a file
    system problem must not undo or block the database deletion. The folder
    is reached and removed without following a link.
    """
    try:
        parent = Location(Path(workspace), TOOL_RESULTS_DIR.parts).open(create=False)
    except FileNotFoundError:
        return True
    except (OSError, WorkspaceError) as exc:
        log.warning("not removing offloaded output of session %s: %s", session_id, exc)
        return False
    try:
        with parent:
            parent.remove_tree(sanitize_id(session_id))
        return True
    except (OSError, WorkspaceError) as exc:
        log.warning("could not remove offloaded tool output for session %s: %s", session_id, exc)
        return False


def write_private_file(folder: Folder, name: str, text: str) -> Path:
    """Write atomically with mode 0600; a temp name keeps concurrent writers apart."""
    folder.replace(name, text.encode("utf-8", errors="replace"), mode=PRIVATE_FILE)
    return folder.path / name


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
        on_refused: Callable[[UnsafePath], None] | None = None,
    ) -> None:
        self.workspace = Path(workspace)
        # A link or someone else's folder on the way: offloading is off from then on,
        # reported once (by ``on_refused``, the session's ``Refusals``, else the log).
        self.refused: UnsafePath | None = None
        self.on_refused = on_refused
        self.session_id = session_id
        self.threshold = threshold
        self.preview_lines = preview_lines
        self.excluded_tools = excluded_tools

    def before_execute(self, ctx: ToolContext, call: ToolCall) -> ToolContext | None:
        return None

    def after_execute(self, ctx: ToolContext, call: ToolCall, result: ToolResult) -> ToolResult:
        if len(result.content) <= self.threshold or call.name in self.excluded_tools:
            return result
        if self.refused is not None:
            return result
        try:
            reference = self._offload(call, result.content)
        except UnsafePath as exc:
            self.refused = exc
            if self.on_refused is not None:
                self.on_refused(exc)
            else:
                log.warning("offloading is off: %s; long tool output passes through whole", exc)
            return result
        except (OSError, WorkspaceError, ValueError) as exc:
            log.warning("offload of %s output failed, passing it through: %s", call.name, exc)
            return result
        return ToolResult(result.call_id, result.name, reference)

    def _offload(self, call: ToolCall, content: str) -> str:
        root = Path(self.workspace).resolve()
        rel_dir = TOOL_RESULTS_DIR / sanitize_id(self.session_id)
        # read_file refuses files with NUL bytes as binary; `find -print0` output
        # must still page back, so NULs are written as the two characters \0.
        content = content.replace("\x00", "\\0")
        name = sanitize_id(call.id or f"call-{uuid.uuid4().hex}") + ".txt"
        with offload_location(root, self.session_id).open(create=True) as folder:
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
