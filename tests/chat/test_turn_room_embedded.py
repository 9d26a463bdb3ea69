"""The real embedded model (SmolLM2-135M, llama-cpp-python) gets every request of a turn
whatever its tool results: tiny, near the room left, far over it, several in one round
(issue 39: ``harvey run`` on it ended with "rejected the prompt as too long")."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from harvey.llm.local import LocalClient
from harvey.llm.scripted import Reply, ScriptedClient
from harvey.messages import Message
from harvey.protocols import ModelCapabilities, StreamEvent, Tokenizer, Usage
from tests.chat.conftest import AgentFactory
from tests.chat.test_turn_room import EmitTool, emit

WINDOW = 2048  # small, so each request is evaluated in seconds on two cores


class RealPrompts:
    """Every request goes to the real embedded model, which must accept it (it raises
    ``ContextTooLong`` otherwise); the calls come from a script: what is tested is the
    prompt the turn builds, not what a 135M model chooses."""

    backend = "scripted"  # not "local": a small local model's replies are Harvey's (issue 39.1)
    endpoint = "embedded"

    def __init__(self, replies: list[Reply | str]) -> None:
        self.real = LocalClient(n_ctx=WINDOW, max_tokens=1)
        self.script = ScriptedClient(
            replies, model="prompts-of-the-embedded-model", context_window=WINDOW
        )
        self.model = self.script.model
        self.evaluated: list[int] = []  # the prompt tokens llama.cpp evaluated, per request

    def stream_chat(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None = None,
        *,
        response_schema: dict[str, Any] | None = None,
    ) -> Iterator[StreamEvent]:
        for event in self.real.stream_chat(messages):
            if isinstance(event, Usage) and event.prompt_tokens:
                self.evaluated.append(event.prompt_tokens)
        return self.script.stream_chat(messages, tools, response_schema=response_schema)

    def capabilities(self) -> ModelCapabilities:
        return ModelCapabilities(WINDOW, True, "n_ctx (test)", "embedded model")

    def token_counter(self) -> Tokenizer:
        return self.real.token_counter()

    def list_models(self) -> list[str]:
        return [self.model]

    def with_model(self, model: str) -> RealPrompts:
        return self

    def close(self) -> None:
        pass


@pytest.mark.slow
@pytest.mark.usefixtures("embedded_model")
def test_the_embedded_model_accepts_every_request_whatever_the_results(
    make_agent: AgentFactory, workspace: Path
) -> None:
    client = RealPrompts(
        [
            Reply(tool_calls=[emit(5)]),  # tiny
            Reply(tool_calls=[emit(1300)]),  # near the room left
            Reply(tool_calls=[emit(50_000), emit(400), emit(900)]),  # far over, and several
            "Done.",
        ]
    )
    agent = make_agent([])
    agent.clients.current = client
    agent.executor.inner.register(EmitTool())  # type: ignore[attr-defined]
    agent.settings.tools.max_rounds = 4
    outcome = agent.turn("emit some text")
    assert outcome.reply == "Done."
    assert len(client.evaluated) == 4, client.evaluated  # every request was accepted
    assert all(n < WINDOW for n in client.evaluated), client.evaluated
    assert max(client.evaluated) > WINDOW // 2  # the results did fill the window
