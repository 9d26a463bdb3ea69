"""One model round with tools, whichever way the model calls them.

The agent's loop asks :class:`ToolRounds` for each round's reply and runs what
comes back through the same registry, approval and confinement as always. What
differs by ``tools.mode`` (``harvey.chat.calls.tool_choice.tool_mode``) stays here:

* ``native``: the schemas go to the server; a reply with no native call is read
  for a call written as text (``harvey.chat.calls.text_tool_calls``), "rescued".
* ``text``: no schemas are sent; the system prompt describes the tools and the
  ``<tool_call>`` form, and calls are read from the text.
* ``constrained``: each round is one JSON object valid for
  ``tool_choice.choice_schema`` ("answer" or "call tool X"), which backends that
  can constrain output turn into a grammar.

A rescued or constrained call runs only when it names an offered tool with
arguments valid for its schema; otherwise the model gets the reason as the
call's ``error:`` result (once per turn: a model that repeats the mistake has
its text taken as the answer). Its ``[[tool:]]`` note says how it was made.

Whatever its form, a call written in what the model was shown this turn is a
quotation and never runs (``harvey.chat.calls.quoted``): a reply whose text calls
are quoted stays the reply's text; a quoted native or constrained call gets the
reason as its ``error:`` result.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from harvey.chat.calls.harvey_replies import HarveyReplies
from harvey.chat.calls.quoted import QUOTED, Shown
from harvey.chat.calls.stream_holdback import HoldBack
from harvey.chat.calls.text_tool_calls import find_calls
from harvey.chat.calls.tool_choice import (
    check_call,
    choice_schema,
    describe_tools,
    read_choice,
    unfinished_answer,
)
from harvey.chat.calls.turn_names import turn_paths, turn_words
from harvey.llm.base import chat, new_call_id, session_scope
from harvey.llm.reply_bounds import MAX_TOOL_CALLS
from harvey.mcp import FOUND
from harvey.messages import Message, ToolCall, ToolResult
from harvey.protocols import ChatResult, LLMClient
from harvey.session.records import ToolNote
from harvey.tools.registry import ToolContext, ToolExecutor, TurnAnswered
from harvey.workspace.mentions import named_folders

log = logging.getLogger(__name__)

#: How a call was made, as its ``[[tool:]]`` note says (nothing for a native call).
RESCUED = "rescued from text"
CONSTRAINED = "constrained"
#: The name a call gets when its markup could not be read at all.
UNREADABLE = "tool_call"


class ToolRounds:
    """A turn's rounds for one client: ``ask`` for a reply, ``execute`` its calls,
    ``note`` them; it remembers which calls were rescued and which must not run."""

    def __init__(
        self,
        mode: str,
        schemas: Sequence[dict[str, Any]] | None,
        session: str | None = None,
        workspace: Path | None = None,
        asked: str | None = None,
        replies: HarveyReplies | None = None,
    ) -> None:
        self.mode = mode if schemas else "off"
        # a small model's turn: Harvey writes the reply from what its chosen tool found
        self.replies = replies
        self.by_harvey = False  # the reply returned as the model's was Harvey's
        self.session = session  # the chat session its requests belong to (its llama.cpp slot)
        self.workspace = workspace  # where a constrained listing's folders must exist
        self.asked = asked  # the person's words, without the plan or passages sent with them
        self.schemas = list(schemas or [])
        self.rejected: dict[str, str] = {}  # call id → why it may not run
        self.via: dict[str, str] = {}  # call id → how it was made
        self.told = False  # the model has had its one error for a call it got wrong
        self.made: set[tuple[str, str]] = set()  # constrained calls made this turn
        self.found: list[dict[str, Any]] = []  # schemas find_tools gave in the conversation
        self.shown = Shown(())  # what the model was shown this turn, as of this round

    @property
    def choices(self) -> list[dict[str, Any]]:
        """What a rescued or constrained call may name: the tools offered, and those
        ``find_tools`` found (their schemas sit after the history, not in the prompt's
        tool list, so the prefix stays; a constrained grammar still offers them)."""
        return [*self.schemas, *self.found]

    def ask(
        self,
        client: LLMClient,
        prompt: list[Message],
        offer: bool,
        on_text: Callable[[str], None] | None,
        cancel: threading.Event,
    ) -> ChatResult:
        """The round's reply, with the calls it makes (native, rescued or constrained);
        ``offer=False`` (the last round) asks for an answer without tools. Its requests
        belong to the session, so a llama.cpp server keeps them on the session's slot."""
        self.shown = Shown.of(prompt, self.asked)
        shown_later = on_text if self.replies is not None else None
        if self.replies is not None:
            self.replies.history = _before_turn(prompt)
        with session_scope(self.session):  # a small model's words are not shown as they come
            result = self._ask(client, prompt, offer, None if shown_later else on_text, cancel)
        self._refuse_quoted(result)
        if self.replies is not None and not result.tool_calls:
            # a small model's own answer is not the reply: Harvey's is (harvey_replies.py)
            result.text = self.replies.instead_of_answer(_before_turn(prompt))
            self.by_harvey = True
            if shown_later is not None:
                shown_later(result.text)
        return result

    def _ask(
        self,
        client: LLMClient,
        prompt: list[Message],
        offer: bool,
        on_text: Callable[[str], None] | None,
        cancel: threading.Event,
    ) -> ChatResult:
        self.found = found_schemas(prompt, self.schemas)
        if self.mode == "off" or not offer:
            return chat(client, prompt, None, on_text, cancel)
        if self.mode == "constrained":
            return self._constrained(client, prompt, on_text, cancel)
        native = self.mode == "native"
        if not native:
            prompt = self._described(prompt, constrained=False)
        schemas = self.schemas if native else None
        if on_text is None:  # nothing is displayed, so nothing to hold back
            result = chat(client, prompt, schemas, None, cancel)
            if not result.tool_calls:
                self._rescue(result)
            return result
        hold = HoldBack(on_text)
        result = chat(client, prompt, schemas, hold.feed, cancel)
        hold.finish(is_call=not result.tool_calls and self._rescue(result))
        return result

    def execute(self, executor: ToolExecutor, ctx: ToolContext, call: ToolCall) -> ToolResult:
        why = self.rejected.get(call.id)
        if why == QUOTED:
            return ToolResult(call.id, call.name, f"error: {why}.")
        if why is not None:
            hint = "Call only the tools offered, with arguments their schema allows."
            return ToolResult(call.id, call.name, f"error: {why}. {hint}")
        if self.replies is None:
            return executor.execute(ctx, call)
        result = executor.execute(self.replies.context(ctx), call)
        reply = self.replies.after_tool(call, result.content, ctx)
        if reply is None:
            return result
        raise TurnAnswered(reply, result, by_harvey=True)

    def note(self, call: ToolCall, content: str, character: str | None) -> ToolNote:
        note = ToolNote.from_result(call, content, character=character)
        via = self.via.get(call.id)
        if via is None:
            return note
        how = f"{note.via}; {via}" if note.via else via  # an MCP call rescued from text
        return ToolNote(note.name, note.arguments, note.status, character, how)

    # -- internals ----------------------------------------------------------------------

    def _described(self, prompt: list[Message], *, constrained: bool) -> list[Message]:
        """The prompt with the tools described at the end of the system prompt (the
        same text every round, so the prompt's prefix stays the same)."""
        if not prompt or prompt[0].role != "system":
            return prompt
        text = describe_tools(self.schemas, constrained=constrained)
        return [Message("system", f"{prompt[0].content}\n\n{text}"), *prompt[1:]]

    def _refuse_quoted(self, result: ChatResult) -> None:
        """A native or constrained call written in what the model was shown this turn
        does not run: it gets the reason instead (a call without an id gets one here)."""
        calls = []
        for call in result.tool_calls:
            if not call.id:
                call = ToolCall(new_call_id(), call.name, call.arguments)
            if self.via.get(call.id) != RESCUED and self.shown.quotes(call.name, call.arguments):
                self.rejected[call.id] = QUOTED
            calls.append(call)
        result.tool_calls = calls

    def _rescue(self, result: ChatResult) -> bool:
        """Turn calls written in ``result.text`` into ``result.tool_calls``; False when the
        text makes none, when a call it writes is a quotation of what the model was shown
        this turn (the text is then the reply, and nothing runs), or when it repeats a
        mistake the model was already told about."""
        found = find_calls(result.text)
        if found is None:
            return False
        if any(self.shown.quotes(c.name, c.arguments) for c in found.calls):
            log.info("a tool call in the reply quotes what the model was shown; not run")
            return False
        calls: list[ToolCall] = []
        rejected: dict[str, str] = {}
        if found.error is not None:
            call = ToolCall(new_call_id(), UNREADABLE, {})
            rejected[call.id] = found.error
            calls.append(call)
        if len(found.calls) > MAX_TOOL_CALLS:  # as for native calls: none of them runs
            call = ToolCall(new_call_id(), UNREADABLE, {})
            rejected[call.id] = (
                f"the reply wrote {len(found.calls)} tool calls; at most {MAX_TOOL_CALLS} "
                "run from one reply, so none did"
            )
            calls.append(call)
            found = replace(found, calls=())
        for written in found.calls:
            arguments, why = check_call(self.choices, written.name, written.arguments)
            call = ToolCall(new_call_id(), written.name, arguments)
            if why is not None:
                rejected[call.id] = why
            calls.append(call)
        if rejected and self.told:
            return False
        self.told = self.told or bool(rejected)
        self.rejected.update(rejected)
        self.via.update((call.id, RESCUED) for call in calls)
        result.tool_calls = calls
        result.text = found.prose
        return True

    def _constrained(
        self,
        client: LLMClient,
        prompt: list[Message],
        on_text: Callable[[str], None] | None,
        cancel: threading.Event,
    ) -> ChatResult:
        """A round whose reply must be a choice object; its answer is shown once whole."""
        prompt = self._described(prompt, constrained=True)
        words = turn_words(prompt, self.asked)
        folders = named_folders(words, self.workspace) if self.workspace is not None else []
        schema = choice_schema(self.choices, turn_paths(prompt, self.asked), words, folders)
        if self.replies is not None:
            schema = self.replies.narrowed(schema)
        result = chat(client, prompt, None, None, cancel, response_schema=schema)
        choice = read_choice(result.text)
        cut_short = unfinished_answer(result.text) if choice is None else None
        if cut_short is not None:  # the cap ended the answer's text: its words, not its JSON
            result.text = self._ended_at_cap(cut_short, result)
            if on_text is not None:
                on_text(result.text)
            return result
        if choice is None:  # the server ignored the schema
            if not self._rescue(result) and on_text is not None:
                on_text(result.text)
            return result
        if choice.name is None:
            result.text = choice.text
            if on_text is not None:
                on_text(choice.text)
            return result
        arguments, why = check_call(self.choices, choice.name, choice.arguments)
        key = (choice.name, json.dumps(arguments, sort_keys=True))
        if key in self.made:  # a small model repeats its call: it has the result, answer
            return self._answer_only(client, prompt, on_text, cancel)
        self.made.add(key)
        call = ToolCall(new_call_id(), choice.name, arguments)
        if why is not None:  # a server whose grammar let it through
            self.rejected[call.id] = why
        self.via[call.id] = CONSTRAINED
        result.text = ""
        result.tool_calls = [call]
        return result

    @staticmethod
    def _ended_at_cap(text: str, result: ChatResult) -> str:
        """A cut-short answer as a capped free-text reply ends: at its last whole sentence,
        with the "(cut at N tokens)" note."""
        from harvey.llm.repetition import cap_note, last_whole, note_separator

        kept = last_whole(text)
        note = cap_note(result.usage.completion_tokens)
        result.note = note
        return kept + note_separator(kept) + note

    def _answer_only(
        self,
        client: LLMClient,
        prompt: list[Message],
        on_text: Callable[[str], None] | None,
        cancel: threading.Event,
    ) -> ChatResult:
        """The round again, with "answer" the only choice the grammar allows."""
        result = chat(client, prompt, None, None, cancel, response_schema=choice_schema([]))
        choice = read_choice(result.text)
        cut_short = unfinished_answer(result.text)
        if choice is not None and choice.name is None:
            result.text = choice.text
        elif cut_short is not None:
            result.text = self._ended_at_cap(cut_short, result)
        if on_text is not None:
            on_text(result.text)
        return result


def _before_turn(prompt: Sequence[Message]) -> list[Message]:
    """The conversation before this turn's user message (the system prompt left out)."""
    users = [i for i, m in enumerate(prompt) if m.role == "user"]
    end = users[-1] if users else len(prompt)
    return [m for m in prompt[:end] if m.role != "system"]


def found_schemas(
    prompt: Sequence[Message], offered: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The tools ``find_tools`` answered with in this conversation, as function schemas
    (only where ``find_tools`` itself is offered: a result is never a way to add tools)."""
    if not any(s.get("function", {}).get("name") == "find_tools" for s in offered):
        return []
    found: dict[str, dict[str, Any]] = {}
    for message in prompt:
        answered = message.role == "tool" and message.name == "find_tools"
        if not (answered or message.role == "user") or FOUND not in message.content:
            continue  # find_tools' answers, and what Harvey found for a small model's turn
        listed = message.content.split(FOUND, 1)[1]
        for line in listed.splitlines()[1:]:
            try:
                tool = json.loads(line)
            except ValueError:
                continue
            name = tool.get("name") if isinstance(tool, dict) else None
            # only an MCP tool is ever found, and every one still meets its gate: a listing
            # a hostile file forges in the turn can name no other tool
            if isinstance(name, str) and name.startswith("mcp__"):
                found[name] = {"type": "function", "function": tool}
    return list(found.values())
