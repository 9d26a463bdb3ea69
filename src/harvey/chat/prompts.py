"""The system prompt: a short built-in preamble plus the workspace's HARVEY.md."""

from __future__ import annotations

from pathlib import Path

from harvey.errors import HarveyError
from harvey.tools.files import open_regular, readable_path

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

HARVEY_MD = "HARVEY.md"
HARVEY_MD_LIMIT = 16_000  # bytes; a runaway HARVEY.md must not eat the context


def build_system_prompt(workspace: Path, *, tools: bool, extra: tuple[str, ...] = ()) -> str:
    parts = [PREAMBLE, f"Workspace: {workspace}"]
    if not tools:
        parts.append(NO_TOOLS_NOTE)
    parts.extend(e for e in extra if e)
    text = _read_guide(workspace)
    if text:
        parts.append(f"Project instructions from {HARVEY_MD}:\n{text}")
    return "\n\n".join(parts)


def _read_guide(workspace: Path) -> str:
    """HARVEY.md's first ``HARVEY_MD_LIMIT`` bytes, or "" when there is none to read.

    The file comes from the workspace, which may be hostile: it is read only if
    it is a regular file that stays inside the workspace (a link to a key file
    elsewhere is not followed), not a secret file (a link to ``.ssh/config``) nor
    a hard link, and only up to the limit (a FIFO would block, a huge file would
    be read whole).
    """
    try:
        with open_regular(readable_path(workspace, HARVEY_MD)) as handle:
            raw = handle.read(HARVEY_MD_LIMIT)
    except (OSError, HarveyError):
        return ""
    return raw.decode("utf-8", errors="ignore").strip()
