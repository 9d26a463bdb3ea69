"""``metered``: every ``chat()`` call of a block counted, exact when the server says, else estimated."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

from harvey.llm.base import chat
from harvey.llm.metering import metered
from harvey.llm.scripted import Reply, ScriptedClient
from harvey.messages import Message
from harvey.protocols import TextDelta
from tests.fakes.servers import FakeOpenAI


def test_server_usage_is_summed_and_called_exact() -> None:
    from harvey.llm.openai import OpenAIClient

    with FakeOpenAI([Reply("one"), Reply("two")]) as srv:
        client = OpenAIClient(srv.url, "fake-model")
        try:
            with metered() as meter:
                chat(client, [Message("user", "first question")])
                chat(client, [Message("user", "second question")])
        finally:
            client.close()
    total = meter.total
    assert total.calls == 2 and total.source in ("server", "mixed", "estimated")
    assert total.prompt_tokens > 0 and total.completion_tokens > 0


class Silent:
    """A client whose server sends no usage report (some llama.cpp builds)."""

    backend, model, endpoint = "fake", "silent", "embedded"

    def stream_chat(self, messages: object, tools: object = None) -> Iterator[TextDelta]:
        yield TextDelta("x" * 40)


def test_no_usage_report_is_estimated_from_the_text() -> None:
    client = Silent()
    with metered() as meter:
        chat(cast(Any, client), [Message("user", "y" * 400)])
    total = meter.total
    assert (total.calls, total.source) == (1, "estimated")
    assert total.prompt_tokens == 100 and total.completion_tokens == 10  # 4 bytes a token
    assert total.as_dict()["source"] == "estimated"


def test_nothing_is_counted_outside_a_block_and_blocks_nest() -> None:
    client = ScriptedClient([Reply("a"), Reply("b")])
    chat(client, [Message("user", "unmetered")])
    with metered() as outer:
        with metered() as inner:
            chat(client, [Message("user", "counted twice")])
        assert inner.total.calls == 1
    assert outer.total.calls == 1
    with metered() as none:
        pass
    assert none.total.source == "none"
