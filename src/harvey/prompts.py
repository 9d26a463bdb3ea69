"""The system prompt: a short built-in preamble plus the workspace's HARVEY.md."""

from __future__ import annotations

from pathlib import Path

PREAMBLE = """\
You are Harvey, a careful assistant working with the documents and code in the \
user's workspace folder. Use the tools to look at files instead of guessing; \
paths are relative to the workspace. Read large files page by page with \
read_file's offset and limit. Keep answers short and concrete, and say so when \
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
    guide = workspace / HARVEY_MD
    try:
        if guide.is_file():
            raw = guide.read_bytes()[:HARVEY_MD_LIMIT]
            text = raw.decode("utf-8", errors="ignore").strip()
            if text:
                parts.append(f"Project instructions from {HARVEY_MD}:\n{text}")
    except OSError:
        pass
    return "\n\n".join(parts)
