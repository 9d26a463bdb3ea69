"""The synthesis fits the window by count where the backend can count: text the estimate
reads as fewer tokens than it is (versions, numbers) is cut before the request, not sent
to a server that drops an overlong request mid-stream (llama-cpp-python does)."""

from __future__ import annotations

from harvey.analysis.answer import Intent
from harvey.analysis.evidence import Record
from harvey.analysis.quotes import Location
from harvey.analysis.reduce import ReduceSpec, reduce_evidence
from harvey.context.budget import remaining_context
from harvey.llm.scripted import Reply, ScriptedClient

WINDOW = 2048


class Dense:
    """A counter that sees a token in every two characters (the estimate says four)."""

    method = "test"

    def count(self, text: str) -> int:
        return len(text) // 2

    def framing(self, roles: list[str]) -> int:
        return 4 * len(roles)


class Counting(ScriptedClient):
    def token_counter(self) -> Dense:
        return Dense()


def records() -> list[Record]:
    return [
        Record(
            f"Version 1.{i}.{i * 7} was released on 2024-0{1 + i % 9}-1{i % 9}.",
            Location("changelog", i + 1, i + 1),
            offset=i * 80,
        )
        for i in range(200)
    ]


def test_a_counted_synthesis_prompt_fits_before_it_is_sent() -> None:
    client = Counting([Reply("Versions were released [1].")], context_window=WINDOW)
    spec = ReduceSpec("List every version", "synthesis", intent=Intent(exhaustive=True), why="")
    reduce_evidence(records(), spec, client, context_window=WINDOW, bytes_per_token=4.0)
    (sent,) = client.seen
    assert Dense().count(sent.messages[0].content) + 4 <= remaining_context(WINDOW)


def test_without_a_counter_the_estimate_decides() -> None:
    client = ScriptedClient([Reply("Versions were released [1].")], context_window=WINDOW)
    spec = ReduceSpec("List every version", "synthesis", intent=Intent(exhaustive=True), why="")
    reduce_evidence(records(), spec, client, context_window=WINDOW, bytes_per_token=4.0)
    (sent,) = client.seen
    assert Dense().count(sent.messages[0].content) > remaining_context(WINDOW)  # what it overran
