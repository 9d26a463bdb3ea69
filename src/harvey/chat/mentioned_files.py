"""The files a prompt names, attached for a model that cannot call ``read_file``.

A turn context provider like plan, retrieval and recall, asked only in turns
whose model has no tools to call (``tools.mode`` off, or constrained, where a
135M model reads a named file far more reliably from its prompt than through a
tool). Each named workspace file passes the same pre-read guard as
``read_file`` (``ChunkedReads.read_for_context``): a file that would not fit
raises the overflow alert and, on acceptance, the synthesized analysis is the
turn's answer (``TurnContext.answer``); no later file is read. A name the
workspace refuses (a secret file, a path leading out) is attached as a one-line
refusal, so the model knows why it has nothing.

The attachments ride after the person's words in the same user message; the
chunked-read flow is imported only when a turn names a file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from harvey.errors import FileRefused, HarveyError
from harvey.protocols import TurnContext, TurnQuery
from harvey.workspace.paths import readable_path

if TYPE_CHECKING:
    from harvey.chat.oversize import ChunkedReads, ReadTurn
    from harvey.chat.prompt_budget import PromptBudget

# a word that looks like a file name (name.ext) or a path (a/b)
_PATH_TOKEN = re.compile(r"[\w./\\~-]+\.[\w]+|[\w./-]*/[\w.-]+")


class MentionedFiles:
    """Attach the workspace files ``query.prompt`` names (one ``TurnContext.after``)."""

    tool_less_only = True

    def __init__(
        self, workspace: Path, budget: PromptBudget, chunks: Callable[[], ChunkedReads]
    ) -> None:
        """``chunks`` gives the agent's chunked-read flow, built on first use."""
        self.workspace = workspace
        self.budget = budget
        self.chunks = chunks

    def for_turn(self, query: TurnQuery) -> TurnContext | None:
        attachments: list[str] = []
        seen: set[Path] = set()
        for token in _PATH_TOKEN.findall(query.prompt):
            candidate = token.strip(".,;:'\"`()")
            try:
                path = readable_path(self.workspace, candidate)
            except FileRefused as exc:  # named, so the model knows why it has nothing
                attachments.append(f"[{candidate}: not attached: {exc}]")
                continue
            except HarveyError:
                continue
            if path in seen or not path.is_file():
                continue
            seen.add(path)
            read = self.chunks().read_for_context(path, self._read_turn(query))
            attachments.append(read.text)
            if read.chunked.answered:
                return TurnContext(
                    after="\n\n".join(attachments),
                    answer=read.chunked.text,
                    answer_by_harvey=read.chunked.by_harvey,
                )
        return TurnContext(after="\n\n".join(attachments)) if attachments else None

    def _read_turn(self, query: TurnQuery) -> ReadTurn:
        from harvey.chat.oversize import ReadTurn

        assert query.client is not None, "a turn is asked with its client"
        budget = self.budget.snapshot(query.client, query.ahead)
        return ReadTurn(query.client, (), query.user_text, query.on_analysis, budget)

    def close(self) -> None:
        """Nothing is held open."""
