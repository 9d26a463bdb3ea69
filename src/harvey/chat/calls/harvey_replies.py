"""For a small model, the model chooses and Harvey answers.

A model under a billion parameters (``analysis.sizes.is_small``: the embedded
SmolLM2-135M, ``qwen2.5:0.5b``) picks a tool and its arguments well under a grammar
(``tool_choice.choice_schema``) and writes a faithful answer badly: asked what
``decoder.py`` does it quoted a docstring's first line, asked to list a folder it
answered with the plan. So for such a model the turn's reply is built here, from
what the chosen tool found, and no model paraphrases it:

* ``read_file`` — the evidence finder over that file (``analysis.api.analyze_file``,
  the code ``harvey analyze`` runs): quotes, cited to their lines;
* ``search_files`` for "where is X defined" — the workspace's definitions
  (``analysis.definitions``), ``path:Lnn  def name(...)``; any other search — its hits;
* ``list_files`` — the listing; ``edit_file``/``write_file`` — what was written, with
  the diff the person approved (or the refusal);
* any other tool — its result as it came.

When the small model chooses to answer without a tool, its words are not the reply
either: a file the request names is answered by the evidence finder, a definition
question by the definitions, a request to list a folder by the listing, a question
the conversation answers by the conversation's own lines, quoted; anything else is
acknowledged in one line (``SMALL_MODEL_NOTE`` says what this model cannot do).

A server model of a billion parameters or more writes its own replies: nothing here
is asked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harvey.errors import HarveyError
from harvey.messages import Message, ToolCall
from harvey.ui import WriteRequest

if TYPE_CHECKING:
    from harvey.config.settings import Settings
    from harvey.protocols import LLMClient
    from harvey.tools.registry import ToolContext

#: The most of a reply's evidence or tool output shown (the reply goes into the history).
ANSWER_CHARS = 1_600
SMALL_MODEL_NOTE = (
    "{model} is too small to answer freely; it chooses a file to read, a folder to list, "
    "a search or an edit, and Harvey answers from what that finds. For free-form work "
    "use a server model (ollama pull qwen2.5:7b, or --backend openai)."
)
MAX_OUTLINE = 12
WHOLE_FILE_CHARS = 800  # a file this short is shown whole when the finder cites nothing
_ABOUT_FILE = re.compile(
    r"\bwhat\b.*\b(do|does|did|define|defines|contain|contains|implement|implements)\b"
    r"|\b(summari[sz]e|overview|outline|explain|describe)\b",
    re.I,
)
_LISTING = re.compile(r"^\s*(list|show)\b.*\b(files?|folders?|directory|contents)\b", re.I)
_QUESTION = re.compile(
    r"\?\s*$|^\s*(what|which|who|whom|when|where|why|how|is|are|does|do|did|can)\b", re.I
)


def model_notice(backend: str, model: str) -> str | None:
    """What the REPL's banner and ``harvey doctor`` say of a small model: what it does well
    and what needs a server model; None for a model that writes its own replies."""
    from harvey.analysis.sizes import is_small

    if not is_small(model):
        return None
    what = "the embedded 135M model" if backend == "local" else "a model under 1B parameters"
    return (
        f"{model} is {what}: good for cited answers from your files, folder listings, "
        "finding definitions and edits you approve (Harvey writes those replies from what "
        "the tools find). Free-form work needs a server model: ollama pull qwen2.5:7b "
        "(then --backend ollama --model qwen2.5:7b), or --backend openai."
    )


def for_client(
    client: LLMClient, settings: Settings, workspace: Path | None, asked: str | None
) -> HarveyReplies | None:
    """The replies for ``client``'s turn, or None when the model writes its own."""
    from harvey.analysis.sizes import is_small

    if workspace is None or not is_small(client.model):
        return None
    return HarveyReplies(client, settings, workspace, asked or "")


@dataclass
class HarveyReplies:
    """One turn's replies built by Harvey for a small model (module docstring)."""

    client: LLMClient
    settings: Settings
    workspace: Path
    asked: str  # the person's words, without the plan or passages sent with them
    writes: list[WriteRequest] = field(default_factory=list)
    history: list[Message] = field(default_factory=list)  # the conversation before the turn

    # -- after a tool ran --------------------------------------------------------------

    def context(self, ctx: ToolContext) -> ToolContext:
        """``ctx`` with its write approval watched: the diff a person approves is kept."""
        approve = ctx.approve_write
        if approve is None:
            return ctx

        def watched(request: WriteRequest, write: Callable[[], str]) -> str:
            self.writes.append(request)
            return approve(request, write)

        return replace(ctx, approve_write=watched)

    def after_tool(self, call: ToolCall, content: str, ctx: ToolContext) -> str | None:
        """The turn's reply from what ``call`` found; None lets the model go on (a call
        that failed: the model gets its error and chooses again)."""
        name, args = call.name, call.arguments if isinstance(call.arguments, dict) else {}
        if name in ("edit_file", "write_file") and (self.writes or "refused" in content):
            return self.write_answer(content)  # asked of the person: the answer is theirs
        if content.startswith("error:"):
            return None
        if name in ("search_files", "list_files"):  # what to look for is the request's
            from harvey.analysis.definitions import definitions_answer, is_definition_question

            if is_definition_question(self.asked):
                found = definitions_answer(self.workspace, self.asked)
                if found is not None:
                    return found
            listing = self.listing()
            if listing is not None:
                return listing
            if content.startswith("no matches for"):  # the words are not in the files
                return self.instead_of_answer(self.history)
        if name == "read_file" and isinstance(args.get("path"), str):
            return self.file_answer(args["path"], ctx) or _cut(content)
        if name in ("edit_file", "write_file"):
            return self.write_answer(content)
        return _cut(content)

    def write_answer(self, content: str) -> str:
        """What was written, and the diff the person approved."""
        if not self.writes:
            return content
        request = self.writes[-1]
        if request.diff:
            return "\n".join([content, "", *request.diff])
        if request.old is not None:
            import difflib

            diff = difflib.unified_diff(
                request.old.splitlines(), request.content.splitlines(), lineterm="", n=1
            )
            return "\n".join([content, "", *list(diff)[2:]])
        return content

    def file_answer(self, path: str, ctx: ToolContext | None = None) -> str | None:
        """The evidence finder's answer over ``path`` for the person's words; None when the
        file cannot be analysed (empty, refused, not a file)."""
        from harvey.analysis.api import AnalyzeOptions, analyze_file
        from harvey.errors import HarveyError
        from harvey.workspace.source import open_for_model

        try:
            source = ctx.source(path) if ctx is not None else open_for_model(self.workspace, path)
            result = analyze_file(
                source,
                self.asked or f"What does {path} say?",
                settings=self.settings,
                client=self.client,
                options=AnalyzeOptions(answer_chars=ANSWER_CHARS),
            )
        except (HarveyError, OSError):
            return None
        text = result.text.strip() if result.answered else ""
        if not result.citations:  # nothing cited: a short file is its own best evidence
            small = not source.is_document and source.size <= WHOLE_FILE_CHARS
            whole = source.data(WHOLE_FILE_CHARS).decode("utf-8", "replace") if small else None
            text = _whole(source.name, whole) or text
        outline = self.outline(path) if _ABOUT_FILE.search(self.asked) else None
        joined = "\n\n".join(p for p in (text, outline) if p)
        return joined or None

    def with_outline(self, answer: str) -> str:
        """``answer`` (a named file's chunk analysis, made before the model was asked) with
        the definitions of the source files the request asks what they do."""
        from harvey.workspace.mentions import named_paths

        if not _ABOUT_FILE.search(self.asked):
            return answer
        outlines = [self.outline(p) for p in named_paths(self.asked)]
        return "\n\n".join([answer, *(o for o in outlines if o)])

    def outline(self, path: str) -> str | None:
        """A source file's definitions, cited, for "what does it do / define"."""
        from harvey.analysis.definitions import workspace_definitions

        try:
            target = (self.workspace / path).resolve()
            found = [
                d
                for d in workspace_definitions(self.workspace, target.parent)
                if (self.workspace / d.path).resolve() == target
            ]
        except OSError:
            return None
        found = [d for d in found if not d.name.startswith("__")]  # not __init__, __repr__
        if not found:
            return None
        lines = [f"{path} defines:"]
        said = _module_doc(target)
        if said:
            lines.insert(0, f"{found[0].path}:L1  {_sentence(said)}")
        for d in found[:MAX_OUTLINE]:
            doc = _sentence(d.doc)
            lines.append(d.cited() + (f"  — {doc}" if doc else ""))
        if len(found) > MAX_OUTLINE:
            lines.append(f"[… {len(found) - MAX_OUTLINE} more definitions]")
        return "\n".join(lines)

    # -- what the grammar offers -------------------------------------------------------

    def narrowed(self, schema: dict[str, Any]) -> dict[str, Any]:
        """``schema`` (a constrained turn's choices) with ``edit_file``'s arguments fixed to
        the edit the request spells out ("Add "eggs" at the end of notes.txt"), the one
        choice left: SmolLM2 answered such a request in words rather than edit, and writes
        an ``old_string`` badly. The person still approves the diff. Unchanged otherwise."""
        edit = append_edit(self.asked, self.workspace)
        if edit is None:
            return schema
        path, old, new = edit
        fixed = {"path": path, "old_string": old, "new_string": new}
        choices = []
        for choice in schema.get("oneOf", []):
            tool = choice.get("properties", {}).get("tool", {}).get("const")
            if tool == "edit_file":
                arguments = {
                    "type": "object",
                    "properties": {k: {"type": "string", "const": v} for k, v in fixed.items()},
                    "required": list(fixed),
                    "additionalProperties": False,
                }
                choice = {**choice, "properties": {**choice["properties"], "arguments": arguments}}
            if tool == "edit_file":  # the request spells the edit out; the person approves it
                choices.append(choice)
        return {**schema, "oneOf": choices} if choices else schema

    # -- instead of the model's own answer ---------------------------------------------

    def instead_of_answer(self, history: Sequence[Message]) -> str:
        """The reply when the small model chose to answer without a tool (module docstring)."""
        from harvey.analysis.definitions import definitions_answer, is_definition_question
        from harvey.workspace.mentions import named_paths

        for path in named_paths(self.asked):
            if (self.workspace / path).is_file():
                found = self.file_answer(path)
                if found is not None:
                    return found
        if is_definition_question(self.asked):
            found = definitions_answer(self.workspace, self.asked)
            if found is not None:
                return found
        listing = self.listing()
        if listing is not None:
            return listing
        recalled = conversation_answer(self.asked, history)
        if recalled is not None:
            return recalled
        note = SMALL_MODEL_NOTE.format(model=self.client.model)
        if _QUESTION.search(self.asked):
            return (
                f"Nothing in the workspace files named or in this conversation answers that. {note}"
            )
        return f"Noted: this conversation keeps your words, {_quoted(self.asked)}. {note}"

    def listing(self) -> str | None:
        """ "List the files in src": the listing of the folder the request names."""
        if not _LISTING.search(self.asked):
            return None
        from harvey.chat.calls.turn_names import turn_words
        from harvey.tools.files import ListFilesTool
        from harvey.tools.registry import ToolContext
        from harvey.workspace.mentions import named_folders

        folders = named_folders(turn_words([Message("user", self.asked)]), self.workspace)
        ctx = ToolContext(workspace=self.workspace)
        content = ListFilesTool().run(ctx, {"path": folders[0] if folders else "."})
        return None if content.startswith("error:") else _cut(content)


_APPEND = re.compile(
    r"\b(?:add|append)\s+[\"\u201c'](?P<item>[^\"\u201d'\n]{1,200})[\"\u201d']"
    r".*?\b(?:end of|to|in|into)\s+(?P<path>[\w./-]+\.\w+)",
    re.I,
)


def append_edit(asked: str, workspace: Path) -> tuple[str, str, str] | None:
    """``(path, old_string, new_string)`` of "Add "X" (as a new item) at the end of FILE":
    the file's last line, then that line and X; None for any other request, a file that
    is missing, large, or whose last line is not unique in it."""
    match = _APPEND.search(asked)
    if match is None:
        return None
    path = match.group("path").rstrip(".")
    try:
        from harvey.workspace.source import open_for_model

        source = open_for_model(workspace, path)
        if source.is_document or source.size > 200_000:
            return None
        text = source.data(200_000).decode("utf-8")
    except (OSError, UnicodeDecodeError, HarveyError):
        return None
    lines = text.splitlines(keepends=True)
    if not lines:
        return None
    last = lines[-1]
    if text.count(last) != 1:
        return None
    ending = "\n" if last.endswith("\n") else ""
    return source.name, last, f"{last.rstrip(chr(10))}\n{match.group('item')}{ending}"


def conversation_answer(question: str, history: Sequence[Message]) -> str | None:
    """The earlier lines of this conversation that share the most of ``question``'s words,
    quoted and cited by turn ("turn 1, you: …"); None when none shares one."""
    from harvey.retrieval.lexical import LexicalIndex, terms_of

    if not terms_of(question):
        return None
    lines: list[tuple[int, str, str]] = []
    turn = 0
    for message in history:
        if message.role == "user":
            turn += 1
        if message.role not in ("user", "assistant") or not message.content.strip():
            continue
        who = "you" if message.role == "user" else "Harvey"
        for line in message.content.splitlines():
            if line.strip():
                lines.append((turn, who, line.strip()))
    if not lines:
        return None
    scores = LexicalIndex([text for _, _, text in lines]).scores(question)
    best = max(range(len(lines)), key=lambda i: (float(scores[i]), i))
    if float(scores[best]) <= 0:
        return None
    turn, who, text = lines[best]
    return f"From this conversation (turn {turn}, {who}): {_quoted(text)}"


def _module_doc(path: Path) -> str:
    """The module docstring of a source file, on one line ("" for none)."""
    from harvey.analysis.definitions import module_doc
    from harvey.workspace.kinds import language_for_path

    language = language_for_path(path)
    try:
        return module_doc(path.read_bytes(), language) if language else ""
    except OSError:
        return ""


def _sentence(text: str, limit: int = 120) -> str:
    """The first sentence of ``text``, cut at a word's end with "…" past ``limit``."""
    first = text.split(". ")[0].strip()
    if len(first) <= limit:
        return first
    return first[:limit].rsplit(" ", 1)[0] + "…"


def _whole(name: str, text: str | None) -> str | None:
    """A file of a few lines, each cited (``trip.md:L1  Train to Leeds …``); None when longer."""
    if text is None or len(text) > WHOLE_FILE_CHARS:
        return None
    lines = [f"{name}:L{n}  {line}" for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    return f"{name} is short; here it is whole:\n" + "\n".join(lines) if lines else None


def _quoted(text: str) -> str:
    line = " ".join(text.split())
    return f'"{line[:300]}{"…" if len(line) > 300 else ""}"'


def _cut(content: str) -> str:
    if len(content) <= ANSWER_CHARS:
        return content
    kept = content[:ANSWER_CHARS]
    kept = kept[: kept.rfind("\n")] if "\n" in kept else kept
    return f"{kept}\n[… {len(content) - len(kept):,} more characters not shown]"


__all__ = [
    "SMALL_MODEL_NOTE",
    "HarveyReplies",
    "conversation_answer",
    "for_client",
    "model_notice",
]
