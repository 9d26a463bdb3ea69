"""What a turn is doing, in the words a status line shows (``harvey.llm.activity``).

The agent says each step as it starts it: "preparing the prompt", "asking MODEL",
then per tool call what the call does ("reading sockets.md", "searching for
'accept'", "running pytest -q"). Arguments come from the model: the front end
sanitises the line before it reaches a terminal, and it is cut to ``MAX_CHARS``.
"""

from __future__ import annotations

from harvey.messages import ToolCall

MAX_CHARS = 80

_VERBS = {
    "read_file": "reading",
    "list_files": "listing",
    "write_file": "writing",
    "append_file": "writing",
    "edit_file": "editing",
    "patch_file": "editing",
}


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_CHARS else line[: MAX_CHARS - 1] + "…"


def tool_doing(call: ToolCall) -> str:
    """One call as an activity: "reading notes.md", "searching for 'x'", "calling T"."""
    args = call.arguments
    path = args.get("path")
    if call.name in _VERBS:
        where = path if isinstance(path, str) and path else "the workspace"
        return _short(f"{_VERBS[call.name]} {where}")
    if call.name == "search_files" and isinstance(args.get("pattern"), str):
        return _short(f"searching for {args['pattern']!r}")
    if call.name == "run_shell" and isinstance(args.get("command"), str):
        return _short(f"running {args['command']}")
    return _short(f"calling {call.name}")
