"""What the model is told besides the conversation: the system prompt and the project guides.

The system prompt is a short built-in preamble, the workspace, and the root's
guides. ``AGENTS.md`` is the instructions file Codex, Goose, opencode and gemini-cli
read; ``HARVEY.md`` is Harvey's own. At the workspace root both go into the
system prompt, ``HARVEY.md`` first. A subfolder may hold its own: when the
model reads a file under it (``read_file``), that folder's guidance comes with
the tool result, once per session (``GuideHook``), as Codex applies a nested
``AGENTS.md`` to the files below it.

Guides are workspace content, and the workspace may be hostile: each is read
through the same checks as any read for the model (inside the workspace, not a
secret file, not a hard link, a regular file that cannot block), its control
and invisible characters are made visible (``terminal_text.for_terminal``: a
bidi override or a tag character cannot hide an instruction from the person
who reviews the file) and secrets are redacted. A guide that is refused is
left out without a word, as before. Each read keeps to a byte budget; a guide
cut to fit says so, how much was left out and how to read the rest — never a
silent truncation (Codex cuts at 32 KiB without a word).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from harvey.errors import HarveyError
from harvey.messages import ToolCall, ToolResult
from harvey.redact import redact
from harvey.terminal_text import for_terminal
from harvey.tools.files import complete_prefix_length
from harvey.tools.registry import ToolContext
from harvey.workspace.files import open_regular
from harvey.workspace.paths import readable_path

PREAMBLE = """\
You are Harvey, a careful assistant working with the documents and code in the \
user's workspace folder. Use the tools to look at files instead of guessing; \
paths are relative to the workspace. Read large files page by page with \
read_file's offset and limit. To change part of an existing file use edit_file \
with old_string copied exactly from the file (enough lines to be unique); \
write_file is for new files. Keep answers short and concrete, and say so when \
you are not sure."""

NO_TOOLS_NOTE = """\
You cannot call tools in this session. When the user mentions a workspace file, \
its content (or an analysis of it) is attached to their message."""

log = logging.getLogger(__name__)

GUIDE_NAMES = ("HARVEY.md", "AGENTS.md")
HARVEY_MD = "HARVEY.md"
#: Bytes of root guides in the system prompt, both files together (HARVEY.md first).
ROOT_GUIDE_BUDGET = 16_000
HARVEY_MD_LIMIT = ROOT_GUIDE_BUDGET
#: Bytes of one subfolder's guides added to a read_file result.
NESTED_GUIDE_BUDGET = 8_000


@dataclass(frozen=True)
class Guide:
    """One guide file as the model gets it: its workspace-relative name and text."""

    name: str
    text: str  # sanitised, redacted, with the cut notice when it was cut
    size: int  # bytes on disk
    shown: int  # bytes of it included


def _read(workspace: Path, relative: str, budget: int) -> Guide | None:
    """Up to ``budget`` bytes of the guide ``relative``, or None when there is none to read."""
    budget = max(0, budget)
    try:
        with open_regular(readable_path(workspace, relative)) as handle:
            size = os.fstat(handle.fileno()).st_size
            raw = handle.read(budget + 1)
    except (OSError, HarveyError):  # absent, refused, not a regular file: left out
        return None
    cut = len(raw) > budget
    if cut:
        raw = raw[: complete_prefix_length(raw[:budget])]
        line_end = raw.rfind(b"\n")
        if line_end > len(raw) // 2:  # end at a line when one is near
            raw = raw[: line_end + 1]
    text = redact(for_terminal(raw.decode("utf-8", errors="replace").strip()))
    if not text and not cut:
        return None
    shown = len(raw)
    if cut:
        size = max(size, shown + 1)
        notice = (
            f"[{relative} goes on: {size - shown:,} more bytes were left out to keep the guides "
            f"within {budget:,} bytes; read_file {relative} with offset={shown} for the rest]"
        )
        text = f"{text}\n{notice}" if text else notice
        log.info("%s cut to %d of %d bytes (guide budget)", relative, shown, size)
    return Guide(relative, text, size, shown)


def read_guides(workspace: Path, folder: str = "", budget: int = ROOT_GUIDE_BUDGET) -> list[Guide]:
    """The guides of ``folder`` (workspace-relative, "" for the root), sharing ``budget``."""
    guides: list[Guide] = []
    for name in GUIDE_NAMES:
        relative = f"{folder}/{name}" if folder else name
        guide = _read(workspace, relative, budget - sum(g.shown for g in guides))
        if guide is not None:
            guides.append(guide)
    return guides


def root_guidance(workspace: Path) -> str:
    """What the system prompt carries of the root's guides ("" when there are none)."""
    return "\n\n".join(
        f"Project instructions from {g.name}:\n{g.text}" for g in read_guides(workspace)
    )


class GuideHook:
    """Adds a subfolder's guides to the first ``read_file`` result under it, once per session.

    Every folder between the file and the workspace root counts, shallowest
    first; the root's own guides are in the system prompt already. A failed
    read gets nothing.
    """

    def __init__(self, workspace: Path, budget: int = NESTED_GUIDE_BUDGET) -> None:
        self.workspace = workspace
        self.budget = budget
        self.delivered: set[str] = set()

    def before_execute(self, ctx: ToolContext, call: ToolCall) -> ToolContext | None:
        return None

    def after_execute(self, ctx: ToolContext, call: ToolCall, result: ToolResult) -> ToolResult:
        if call.name != "read_file" or result.content.startswith("error:"):
            return result
        added = [self._folder_text(folder) for folder in self._folders(call)]
        texts = [t for t in added if t]
        if not texts:
            return result
        return ToolResult(result.call_id, result.name, "\n\n".join([result.content, *texts]))

    def _folders(self, call: ToolCall) -> list[str]:
        """The workspace-relative folders above the file read, not yet given, shallowest first."""
        raw = call.arguments.get("path")
        if not isinstance(raw, str):
            return []
        try:
            root = self.workspace.resolve()
            parent = readable_path(self.workspace, raw).parent.relative_to(root)
        except (OSError, ValueError, HarveyError):
            return []
        parts = parent.parts
        folders = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        return [f for f in folders if f not in self.delivered]

    def _folder_text(self, folder: str) -> str:
        self.delivered.add(folder)
        guides = read_guides(self.workspace, folder, self.budget)
        return "\n\n".join(
            f"[Instructions from {g.name}, for the files under {folder}/]\n{g.text}" for g in guides
        )


def build_system_prompt(
    workspace: Path, *, tools: bool, extra: tuple[str, ...] = (), guidance: str | None = None
) -> str:
    """The preamble, the workspace, and its root guides (HARVEY.md, then AGENTS.md, within
    their budget and saying what was cut); ``guidance`` is them as read already (a
    session reads them once, when it starts)."""
    parts = [PREAMBLE, f"Workspace: {workspace}"]
    if not tools:
        parts.append(NO_TOOLS_NOTE)
    parts.extend(e for e in extra if e)
    if guidance is None:
        guidance = root_guidance(workspace)
    if guidance:
        parts.append(guidance)
    return "\n\n".join(parts)
