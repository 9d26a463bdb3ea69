"""Turn context providers: text retrieved for one chat turn and sent with it alone.

A provider (knowledge-store retrieval today; long-term memory recall can be
another) is asked once per turn with the user's prompt and the room it may
use. What it returns is sent ahead of the prompt in *that* turn's user
message, counted as injected text in remaining-context, and recorded in the
turn's scene; history keeps the user's own words, so later turns do not
carry (or pay for) passages retrieved for earlier ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from harvey.session.records import RagInfo, RagSource


@dataclass(frozen=True)
class TurnContext:
    """What one provider adds to one turn: the text sent, and its provenance notes."""

    text: str
    rag: RagInfo | None = None
    rag_sources: tuple[RagSource, ...] = field(default_factory=tuple)


class TurnContextProvider(Protocol):
    def for_turn(
        self, prompt: str, window_tokens: int, bytes_per_token: float
    ) -> TurnContext | None:
        """Context for ``prompt`` within the provider's share of ``window_tokens``, or None."""
        ...

    def close(self) -> None: ...
