"""One session's token accounting: what the prompt costs, what is left, what a read may use.

The agent asks this object every budget question; nothing else computes them:

* the model's capabilities (context window, tool support), asked of the
  backend once per client and cached — ``context_window:`` in harvey.yaml
  overrides the window of the session's main client;
* the system prompt (built once per session: it reads HARVEY.md) and the
  injected text (the memories recalled on the first turn), both fixed for the
  session so each request extends the one before it;
* the bytes-per-token ratio: the one calibrated against the model's real
  usage reports (``sessions.db``), else the 4-bytes heuristic — and the
  calibration samples that keep it honest;
* the history that fits (``history_fit``), what remains, the ``/status``
  report, and the ``ReadBudget`` every file-fits check uses.

It holds no conversation: the agent hands it the history to account for
as the list it keeps (and changes in place), so there is one history and one
place that owns it.

A turn asks ``snapshot`` once per round: a ``BudgetSnapshot`` is a value with
the window, ratio, system prompt, injected texts (the turn's retrieved text
given to it, not kept here) and history of that round, and answers every
question of the round (fitted history, remaining, read budget) from them
without reading the store or HARVEY.md again.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harvey.chat.history_fit import FittedHistory, fit_history
from harvey.chat.prompts import build_system_prompt
from harvey.chat.turn_room import Room, fit_prompt, tools_text
from harvey.config.settings import Settings
from harvey.context.budget import (
    DEFAULT_MARGIN,
    BudgetReport,
    ReadBudget,
    budget_report,
    estimate_tokens,
)
from harvey.context.tokens import TokenCounter, message_text
from harvey.errors import HarveyError
from harvey.llm.base import token_counter_of
from harvey.messages import Message
from harvey.protocols import LLMClient, ModelCapabilities, Usage
from harvey.session.calibration import CalibratedSizing
from harvey.session.store import SessionStore

log = logging.getLogger(__name__)

# Exact counting costs a probe and a request per new message on a remote server, and the
# embedded vocabulary's load; it is only worth it near the limit. While the estimate of
# what is committed stays under this share of the window the estimate decides (it would
# have to be off by half to overflow); above it, every figure is counted.
COUNT_ABOVE_SHARE = 0.5


class PromptBudget:
    """Capabilities, system prompt, injected text, ratio, fitting and remaining room."""

    def __init__(
        self,
        *,
        settings: Settings,
        workspace: Path,
        main_client: Callable[[], LLMClient],
        history: Sequence[Message],
        store: SessionStore | None = None,
        system_extra: tuple[str, ...] = (),
        guidance: str | None = None,
    ) -> None:
        """``guidance`` is the workspace's root guides as the session read them when it
        started (None: read them with the first system prompt)."""
        self.settings = settings
        self.workspace = workspace
        self._main = main_client
        self._history = history
        self.store = store
        self.system_extra = system_extra
        self.guidance = guidance
        self._session_text: str | None = None  # recalled long-term memory, for the session
        self.sizing = CalibratedSizing(
            store, context_window=settings.context_window, main_client=main_client
        )
        self._counters: dict[str, TokenCounter | None] = {}
        # the schemas a request offers (the agent sets it): what it says about them is sent
        self.tool_schemas: Callable[[], Sequence[dict[str, Any]]] | None = None
        self._system_prompts: dict[bool, str] = {}

    def _client(self, client: LLMClient | None) -> LLMClient:
        return client if client is not None else self._main()

    def keep_for_session(self, text: str) -> None:
        """Inject ``text`` (recalled memories) into every prompt from now on."""
        self._session_text = text

    def capabilities(self, client: LLMClient | None = None) -> ModelCapabilities:
        return self.sizing.capabilities(self._client(client))

    def counter(self, client: LLMClient | None = None) -> TokenCounter | None:
        """The exact counter for this client when its backend can count (probed once)."""
        client = self._client(client)
        key = f"{client.backend}:{client.endpoint}:{client.model}"
        if key not in self._counters:
            try:
                tokenizer = token_counter_of(client)
            except HarveyError as exc:  # counting is an improvement, never a requirement
                log.warning("exact token counting unavailable: %s", exc)
                tokenizer = None
            if tokenizer is None:
                self._counters[key] = None
            else:
                ratio = self.bytes_per_token(client)
                fallback = lambda text: estimate_tokens(text, ratio)  # noqa: E731
                self._counters[key] = TokenCounter(tokenizer, fallback)
        return self._counters[key]

    def counting_method(self, client: LLMClient | None = None) -> str:
        """For ``/status``: "exact: llama.cpp /tokenize" or "estimated: R bytes/token from N
        samples"."""
        client = self._client(client)
        counter = self.counter(client)
        if counter is not None:
            return counter.method
        samples = self.sizing.samples(client)
        ratio = self.bytes_per_token(client)
        return f"estimated: {ratio:.2f} bytes/token from {samples} samples"

    def tools_enabled(self, client: LLMClient | None = None) -> bool:
        return self.tool_mode(client) != "off"

    def tool_mode(self, client: LLMClient | None = None) -> str:
        """``native``, ``text``, ``constrained`` or ``off``: ``tools.mode``, else what the
        server says or one probe found (``harvey.chat.calls.tool_choice.resolve_tool_mode``)."""
        from harvey.chat.calls.tool_choice import resolve_tool_mode

        client = self._client(client)
        chosen = client
        return resolve_tool_mode(
            self.settings.tools, client, lambda: self.capabilities(chosen)
        ).mode

    def system_prompt(self, client: LLMClient | None = None) -> str:
        """Built once per session (it reads HARVEY.md): every request of the session starts
        with the same system message, so a server's prompt cache keeps serving it."""
        tools = self.tools_enabled(client)
        if tools not in self._system_prompts:
            self._system_prompts[tools] = build_system_prompt(
                self.workspace, tools=tools, extra=self.system_extra, guidance=self.guidance
            )
        return self._system_prompts[tools]

    def bytes_per_token(self, client: LLMClient | None = None, doc_type: str = "prose") -> float:
        return self.sizing.bytes_per_token(self._client(client), doc_type)

    def size_ratio(self, client: LLMClient | None = None, doc_type: str = "prose") -> float:
        return self.sizing.size_ratio(self._client(client), doc_type)

    def calibrate(
        self, client: LLMClient, prompt: list[Message], usage: Usage, doc_type: str = "prose"
    ) -> None:
        self.sizing.calibrate(client, prompt, usage, doc_type)

    def injected_texts(self) -> list[str]:
        """What every prompt carries as system messages after the system prompt: the
        memories recalled on the first turn, fixed from then on (the plan, handover and
        retrieved passages ride in their turn's user message: ``chat/plan_context.py``)."""
        return [self._session_text] if self._session_text else []

    def tools_text(self, client: LLMClient | None = None) -> str:
        """What a request to ``client`` says about the tools besides its messages (their
        description in the system prompt, ``turn_room.tools_text``); ``""`` without."""
        if self.tool_schemas is None:
            return ""
        mode = self.tool_mode(client)
        return "" if mode == "off" else tools_text(mode, self.tool_schemas())

    def snapshot(
        self, client: LLMClient | None = None, turn_texts: Sequence[str] = (), offer: bool = True
    ) -> BudgetSnapshot:
        """This moment's budget for ``client``, with the turn's own texts (sent ahead of
        its prompt) and what the request says about the tools (``offer=False``: a round
        that offers none) counted as injected: what one round asks, read once."""
        client = self._client(client)
        injected = tuple(self.injected_texts())
        ratio = self.bytes_per_token(client)
        return BudgetSnapshot(
            owner=self,
            client=client,
            window=self.capabilities(client).context_window,
            bytes_per_token=ratio,
            system_prompt=self.system_prompt(client),
            injected=injected,
            turn_texts=tuple(turn_texts),
            history=tuple(self._history),
            tools=self.tools_text(client) if offer else "",
            _ratios={("prose", "units"): ratio},
        )

    def fitted_history(
        self, client: LLMClient | None = None, pending: Sequence[Message] = ()
    ) -> FittedHistory:
        """The history the next prompt carries (``BudgetSnapshot.fitted_history``)."""
        return self.snapshot(client).fitted_history(pending)

    def remaining(self, client: LLMClient | None = None, pending: Sequence[Message] = ()) -> int:
        """Tokens left for new content once the prompt so far and ``pending`` are counted."""
        return self.snapshot(client).remaining(pending)

    def read_budget(
        self, client: LLMClient | None = None, pending: Sequence[Message] = ()
    ) -> ReadBudget:
        """What one file read may use (``BudgetSnapshot.read_budget``)."""
        return self.snapshot(client).read_budget(pending)

    def report(self, client: LLMClient | None = None) -> BudgetReport:
        """Everything already in the prompt, in tokens; ``/status`` shows it."""
        return self.snapshot(client).report()


@dataclass(frozen=True)
class BudgetSnapshot:
    """One round's budget: every figure that round needs, computed from fixed inputs.

    ``injected`` goes out as system messages; ``turn_texts`` ahead of the
    turn's prompt; both are counted. Only the exact counter and the size
    ratios of a read are asked of ``owner`` (cached there), when needed.
    """

    owner: PromptBudget
    client: LLMClient
    window: int
    bytes_per_token: float
    system_prompt: str
    injected: tuple[str, ...]
    turn_texts: tuple[str, ...]
    history: tuple[Message, ...]
    tools: str = ""  # what the round's request says about the tools, sent with it
    _ratios: dict[tuple[str, str], float] = field(default_factory=dict, compare=False)

    def ratio(self, doc_type: str, measure: str = "units") -> float:
        """A calibrated ratio of this round's model, looked up once per snapshot:
        ``"units"`` for texts, ``"bytes"`` for sizes (see ``PromptBudget.size_ratio``)."""
        key = (doc_type, measure)
        if key not in self._ratios:
            owner = self.owner
            lookup = owner.bytes_per_token if measure == "units" else owner.size_ratio
            self._ratios[key] = lookup(self.client, doc_type)
        return self._ratios[key]

    def _counted(self, history: Sequence[Message], also: Sequence[Message] = ()) -> BudgetReport:
        """The budget of a prompt: estimated, and counted exactly once the estimate
        (with ``also``, messages not in this report that the prompt will carry) comes
        near the window (``COUNT_ABOVE_SHARE``) — the only time the counter is asked for."""
        window, ratio = self.window, self.bytes_per_token

        def report(counter: TokenCounter | None) -> BudgetReport:
            return budget_report(
                window,
                history=history,
                system_prompt=self.system_prompt,
                injected=(*self.injected, *self.turn_texts, self.tools),
                bytes_per_token=ratio,
                counter=counter,
            )

        estimated = report(None)
        more = sum(estimate_tokens(message_text(m), ratio) for m in also)
        if estimated.used + more <= window * COUNT_ABOVE_SHARE:
            return estimated
        counter = self.owner.counter(self.client)
        return estimated if counter is None else report(counter)

    def fitted_history(self, pending: Sequence[Message] = ()) -> FittedHistory:
        """The history the next prompt carries: all of it, or the newest turns that fit.

        The history gets what the window leaves once the system prompt, the
        injected text, the turn in progress (``pending``) and the reply margin
        are counted, so the turn in progress always has priority over the past.
        """
        if not self.history:  # a first turn: nothing to fit
            return FittedHistory([])
        room = self._counted(list(pending), also=self.history)
        return fit_history(list(self.history), room.remaining, room.bytes_per_token)

    def _sent_history(self, pending: Sequence[Message]) -> list[Message]:
        """What of the history a prompt now costs: the kept messages and the note."""
        fitted = self.fitted_history(pending)
        note = fitted.note
        return ([note] if note else []) + fitted.messages

    def remaining(self, pending: Sequence[Message] = ()) -> int:
        """Tokens left for new content once the prompt so far and ``pending`` are counted."""
        return self._counted(self._sent_history(pending) + list(pending)).remaining

    def room(self, pending: Sequence[Message] = ()) -> Room:
        """What the turn in progress (``pending``) may still send, older history giving way
        to it (``fitted_history``), and the count to measure a text with: the backend's own
        tokenizer where it can count, else the estimate."""
        owner, client, ratio = self.owner, self.client, self.bytes_per_token

        def estimate(text: str) -> int:
            return estimate_tokens(text, ratio)

        def count(text: str) -> int:  # the counter is asked for (probed) only when needed
            counter = owner.counter(client)
            return estimate(text) if counter is None else counter.count(text)

        def exact() -> bool:
            return owner.counter(client) is not None

        return Room(self._counted(list(pending)).remaining, count, exact, estimate)

    def fit_prompt(self, prompt: list[Message], pending: int) -> list[Message]:
        """The round's request, counted whole (with what it says about the tools) and
        fitted to the window less the reply's margin: the turn's own tool results (the
        last ``pending`` messages) are cut if it would not fit."""
        room = self.room()
        limit = self.window - math.ceil(self.window * DEFAULT_MARGIN)
        return fit_prompt(
            prompt,
            extra=self.tools,
            limit=limit,
            count=room.count,
            first_cut=len(prompt) - pending,
            where=self.client.model,
            exact=lambda: room.exact,
            estimate=room.estimate,
        )

    def read_budget(self, pending: Sequence[Message] = ()) -> ReadBudget:
        """What one file read may use: the remaining room times ``chunking.threshold``,
        with the ratios of every document type (``ReadBudget.check`` picks the file's)
        and the exact counter, asked for only if a check needs it."""
        owner, client = self.owner, self.client
        tokens = int(self.remaining(pending) * owner.settings.chunking.threshold)
        types = ("prose", "source")

        def count(text: str) -> int | None:
            counter = owner.counter(client)
            return None if counter is None else counter.count(text)

        return ReadBudget(
            tokens,
            self.ratio("prose", "bytes"),
            sizes={t: self.ratio(t, "bytes") for t in types},
            texts={t: self.ratio(t) for t in types},
            count=count,
        )

    def report(self) -> BudgetReport:
        """Everything already in the prompt, in tokens; ``/status`` shows it."""
        return self._counted(self._sent_history([]))
