"""Exact counting: per message, cached by content; servers probed once; the estimate otherwise."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from harvey.chat.prompt_budget import PromptBudget
from harvey.config.settings import Settings
from harvey.context.budget import budget_report, estimate_tokens
from harvey.context.tokens import TokenCounter
from harvey.errors import BackendError
from harvey.llm.openai import OpenAIClient
from harvey.messages import Message
from tests.fakes.servers import FakeOpenAI


class WordTokenizer:
    """One token per word; two per message of framing; records what it was asked."""

    method = "words"

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.fail = False

    def count(self, text: str) -> int:
        if self.fail:
            raise BackendError("the server went away")
        self.asked.append(text)
        return len(text.split())

    def framing(self, roles: Sequence[str]) -> int:
        return 2 * len(roles)


def test_messages_are_counted_once_per_content() -> None:
    tok = WordTokenizer()
    counter = TokenCounter(tok, estimate_tokens)
    history = [Message(role="user", content="one two three"), Message("assistant", "four five")]
    assert counter.count_messages(history) == 4 + 5
    history.append(Message(role="user", content="six"))
    assert counter.count_messages(history) == 6 + 6
    assert tok.asked == ["one two three", "four five", "six"]  # the old ones from the cache
    assert counter.method == "exact: words"


def test_the_cache_is_bounded() -> None:
    tok = WordTokenizer()
    counter = TokenCounter(tok, estimate_tokens, max_cached=2)
    for text in ("a", "b", "c", "a"):
        counter.count(text)
    assert tok.asked == ["a", "b", "c", "a"]  # "a" was evicted by "c"


def test_a_failed_count_falls_back_to_the_estimate() -> None:
    tok = WordTokenizer()
    tok.fail = True
    counter = TokenCounter(tok, lambda text: 99)
    assert counter.count("whatever it is") == 99


def test_budget_report_uses_the_counter() -> None:
    counter = TokenCounter(WordTokenizer(), estimate_tokens)
    history = [Message(role="user", content="x " * 400)]  # 400 words, 800 bytes
    exact = budget_report(1000, history=history, system_prompt="be brief", counter=counter)
    assert exact.history == 400 + 2 and exact.system_prompt == 2 + 2
    estimated = budget_report(1000, history=history, system_prompt="be brief")
    assert estimated.history == estimate_tokens("x " * 400)  # from character classes


@pytest.mark.parametrize(
    ("api", "method"),
    [
        ("llama.cpp", "exact: llama.cpp /tokenize"),
        ("llama-cpp-python", "exact: llama-cpp-python /extras/tokenize/count"),
        (None, "estimated: 4.00 bytes/token from 0 samples"),
    ],
)
def test_servers_are_probed_once_and_status_names_the_method(
    tmp_path: Path, api: str | None, method: str
) -> None:
    with FakeOpenAI(tokenize_api=api) as srv:
        client = OpenAIClient(srv.url, "fake-model", retries=0)
        budget = PromptBudget(
            settings=Settings(), workspace=tmp_path, main_client=lambda: client, history=[]
        )
        assert budget.counting_method() == method
        budget.remaining(pending=[Message(role="user", content="hello there " * 50)])
        budget.remaining(pending=[Message(role="user", content="hello there " * 50)])
        paths = [r.path for r in srv.requests]
    probes = [p for p in paths if p in ("/tokenize", "/extras/tokenize/count")]
    if api is None:
        assert probes == ["/tokenize", "/extras/tokenize/count"]  # once each, then estimates
    else:
        counted = sum(1 for p in paths if p in ("/tokenize", "/extras/tokenize/count"))
        # one probe, then each distinct text once (system prompt, the message), not per call
        assert counted <= 1 + 2 + 2


def test_llama_cpp_counts_the_template_framing(tmp_path: Path) -> None:
    with FakeOpenAI(tokenize_api="llama.cpp") as srv:
        client = OpenAIClient(srv.url, "fake-model", retries=0)
        budget = PromptBudget(
            settings=Settings(), workspace=tmp_path, main_client=lambda: client, history=[]
        )
        counter = budget.counter()
        assert counter is not None
        framing = counter.framing(["user", "assistant"])
        assert "/apply-template" in [r.path for r in srv.requests]
    rendered = "<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n<|im_end|>\n"
    assert framing == estimate_tokens(rendered + "<|im_start|>assistant\n")


@pytest.mark.usefixtures("embedded_model")
def test_embedded_counts_match_the_rendered_prompt() -> None:
    from harvey.llm.counting import embedded_tokenizer
    from harvey.llm.local import find_model_file

    tok = embedded_tokenizer(find_model_file())
    counter = TokenCounter(tok, estimate_tokens)
    messages = [
        Message(role="system", content="You are terse."),
        Message(role="user", content="Summarise: the quick brown fox jumps over the lazy dog."),
        Message(role="assistant", content="A fox jumps over a dog."),
        Message(role="user", content="def f(x):\n    return x ** 2\n"),
    ]
    wire = [{"role": m.role, "content": m.content} for m in messages]
    prompt = tok._formatter(messages=wire).prompt
    whole = len(tok._llama.tokenize(prompt.encode(), add_bos=False, special=True))
    assert abs(counter.count_messages(messages) - whole) <= len(messages)
