"""What a model's tokens cost in bytes, learned from its own usage reports.

``CalibratedSizing`` answers the sizing questions both a chat session
(``chat/prompt_budget.py``) and a recorded analysis (``analysis/session.py``)
ask: the model's window (``context_window:`` in harvey.yaml overrides the main
model's), the calibrated units-per-token ratio of a text and bytes-per-token of
a size, and the samples that keep them honest, kept in ``sessions.db``. Without
a store it is the 4-bytes heuristic.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from harvey.context.budget import BYTES_PER_TOKEN, serialize_history
from harvey.context.estimate import text_units
from harvey.errors import StoreError
from harvey.messages import Message
from harvey.protocols import LLMClient, ModelCapabilities, Usage
from harvey.session.store import SessionStore

log = logging.getLogger(__name__)

MAX_SAMPLE_CHARS = 1_000_000  # prompts longer than this are not calibration samples


class CalibratedSizing:
    """Capabilities (asked once per client) and calibrated ratios of a session's models."""

    def __init__(
        self,
        store: SessionStore | None,
        *,
        context_window: int | None = None,
        main_client: Callable[[], LLMClient] | None = None,
    ) -> None:
        """``context_window`` overrides the window of ``main_client()`` (default: every client)."""
        self.store = store
        self.context_window = context_window
        self._main = main_client
        self._caps: dict[str, ModelCapabilities] = {}

    def capabilities(self, client: LLMClient | None = None) -> ModelCapabilities:
        assert client is not None, "CalibratedSizing is asked about a client"
        key = f"{client.backend}:{client.endpoint}:{client.model}"
        if key not in self._caps:
            caps = client.capabilities()
            is_main = self._main is None or client is self._main()
            if self.context_window and is_main:
                caps = ModelCapabilities(
                    self.context_window, caps.supports_tools, "config", caps.tools_source
                )
            self._caps[key] = caps
        return self._caps[key]

    def bytes_per_token(self, client: LLMClient | None = None, doc_type: str = "prose") -> float:
        """The calibrated units-per-token ratio for texts of this model and document type
        (``"prose"`` or ``"source"``) when known, else the 4-bytes heuristic."""
        assert client is not None
        ratio = self.store.calibration_ratio(client.model, doc_type) if self.store else None
        return ratio or BYTES_PER_TOKEN

    def size_ratio(self, client: LLMClient | None = None, doc_type: str = "prose") -> float:
        """The calibrated bytes-per-token ratio for sizes alone (a file not read, a chunk
        size to choose), else the 4-bytes heuristic."""
        assert client is not None
        store = self.store
        ratio = store.calibration_ratio(client.model, doc_type, "bytes") if store else None
        return ratio or BYTES_PER_TOKEN

    def samples(self, client: LLMClient) -> int:
        return len(self.store.calibration_samples(client.model)) if self.store else 0

    def calibrate(
        self, client: LLMClient, prompt: list[Message], usage: Usage, doc_type: str = "prose"
    ) -> None:
        """Keep a real usage report as a calibration sample for ``client``'s model.

        Chat turns are prose samples; the map calls of an analysis of a source
        file are ``"source"`` samples, so code calibration learns from real code.
        """
        if self.store is None or not usage.prompt_tokens:
            return
        if sum(len(m.content) for m in prompt) > MAX_SAMPLE_CHARS:
            return  # a few recent samples make the ratio; a huge one only costs its pass
        # the same text the estimator counts (tool-call arguments included)
        text = serialize_history(prompt)
        prompt_bytes = len(text.encode("utf-8", "surrogatepass"))
        try:
            self.store.record_calibration(
                client.model,
                prompt_bytes,
                usage.prompt_tokens,
                doc_type,
                text_units(text, doc_type),
            )
        except StoreError as exc:  # calibration is advisory; never fail a turn on it
            log.warning("could not record calibration: %s", exc)
