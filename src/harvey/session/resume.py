"""Rebuild a conversation from a recorded session, for ``harvey --continue-file``.

Only TALKING and EXT. scenes carry the conversation: the person's words become
``user`` messages and the model's replies ``assistant`` messages. A chunked
analysis writes its synthesized answer as the reply of the turn that follows
its INT. CHUNK ANALYSIS scene, so it comes back as an ordinary assistant
message. Tool output was never recorded, so tool rounds are not replayed; the
conversation continues from what the person and the model said. A scene with
a ``[[compaction:]]`` note and its summary replaces what came before with that
summary, exactly as the live session sent it from then on.
"""

from __future__ import annotations

from pathlib import Path

from harvey.messages import Message
from harvey.session.compactions import summary_messages
from harvey.session.fountain import ParsedSession, parse_session


def conversation_from_session(parsed: ParsedSession) -> list[Message]:
    """The user/assistant messages of the session's TALKING and EXT. scenes, in order."""
    messages: list[Message] = []
    for scene in parsed.turns:
        compaction = scene.compaction
        if compaction is not None and compaction.summary is not None:
            # everything before is sent as the summary from here on, as it was live
            first, last = compaction.first_turn, compaction.last_turn
            messages = summary_messages(first, last, compaction.summary)
        user = scene.user_text
        if user is not None:
            messages.append(Message(role="user", content=user))
        reply = scene.reply
        if reply is not None:
            messages.append(Message(role="assistant", content=reply))
    return messages


def load_conversation(
    path: str | Path, strict: bool = False
) -> tuple[list[Message], ParsedSession]:
    """Parse ``path`` and rebuild its conversation; the parsed session carries the warnings.

    Raises :class:`harvey.errors.SessionFileError` (naming the line) when the file
    cannot be read, or in strict mode when it is damaged.
    """
    parsed = parse_session(path, strict=strict)
    return conversation_from_session(parsed), parsed
