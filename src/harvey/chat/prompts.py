"""The system prompt: a short built-in preamble plus the workspace's HARVEY.md and AGENTS.md."""

from __future__ import annotations

from pathlib import Path

from harvey.chat.guides import ROOT_GUIDE_BUDGET, root_guidance

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
HARVEY_MD_LIMIT = ROOT_GUIDE_BUDGET  # bytes of HARVEY.md and AGENTS.md together


def build_system_prompt(workspace: Path, *, tools: bool, extra: tuple[str, ...] = ()) -> str:
    """The preamble, the workspace, and its root guides (``chat/guides.py``: HARVEY.md, then
    AGENTS.md, within their budget and saying what was cut)."""
    parts = [PREAMBLE, f"Workspace: {workspace}"]
    if not tools:
        parts.append(NO_TOOLS_NOTE)
    parts.extend(e for e in extra if e)
    guidance = root_guidance(workspace)
    if guidance:
        parts.append(guidance)
    return "\n\n".join(parts)
