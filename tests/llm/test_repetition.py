"""The loop guard and the cap note: on their own, and on streams from the loopback servers.

A looping server (``Looping``) streams the same paragraph until the client hangs
up: the test sees the reply shown once with the notice, and the server sees the
connection close — the stream was cancelled, not just hidden.
"""

from __future__ import annotations

import re
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvey.errors import StreamError
from harvey.llm.base import chat
from harvey.llm.ollama import OllamaClient
from harvey.llm.openai import OpenAIClient
from harvey.llm.repetition import LOOP_NOTICE, WINDOW, ReplyGuard, last_whole, unit_key
from harvey.messages import Message
from tests.fakes.servers import Capped, FakeOllama, FakeOpenAI, Interrupted, Looping, Reply

HI = [Message("user", "hi")]
PARAGRAPH = (
    "The water company was founded in 1871 by Samuel Harrow. It built the first "
    "reservoir on the hill above the town. The reservoir served four thousand people.\n\n"
)


def guarded(text: str, *, capped: bool = False) -> tuple[str, str, bool]:
    """``text`` fed word by word: (what was shown before the end, the note, looping)."""
    guard = ReplyGuard()
    shown = []
    for piece in re.findall(r"\S+\s*|\s+", text):
        shown.append(guard.feed(piece))
        if guard.looping:
            break
    rest, note = guard.close(capped=capped, tokens=64)
    return "".join(shown) + rest, note, guard.looping


def test_a_paragraph_written_three_times_is_shown_once() -> None:
    shown, note, looping = guarded("Here is the history.\n\n" + PARAGRAPH * 3)
    assert looping and note == LOOP_NOTICE
    assert shown == "Here is the history.\n\n" + PARAGRAPH
    assert shown.count("founded in 1871") == 1


def test_a_block_written_twice_is_cut_and_new_text_after_a_short_repeat_is_kept() -> None:
    shown, _note, looping = guarded(PARAGRAPH * 2 + "Something else entirely follows here.")
    assert looping and shown == PARAGRAPH
    text = "Yes. Yes. The boiler was serviced in May. Yes. Done."
    assert guarded(text) == (text, "", False)  # short repeats are not a loop


def test_numbered_items_that_repeat_under_new_numbers_are_a_loop() -> None:
    item = "The company built the first reservoir on the hill above Harrow Bay."
    text = "Events:\n" + "".join(f"{n}. {item}\n" for n in range(1, 6))
    shown, _note, looping = guarded(text)
    assert looping and shown == f"Events:\n1. {item}\n"


def test_a_loop_without_sentence_breaks_is_cut_after_its_first_copy() -> None:
    shown, _note, looping = guarded("the pump and the valve and the boiler " * 20)
    assert looping and shown == "the pump and the valve and the boiler "


def test_repeated_lines_inside_code_are_code_until_five_in_a_row() -> None:
    line = "    self.assertEqual(response.status_code, 200)\n"
    text = "Tests:\n```python\n" + line * 4 + "```\nAll four check the status."
    assert guarded(text) == (text, "", False)
    shown, _note, looping = guarded("```python\n" + line * 9)
    assert looping and shown == "```python\n" + line * 4  # code is shown as it comes


def test_a_capped_reply_ends_at_its_last_whole_sentence() -> None:
    shown, note, _ = guarded("The boiler was serviced. It was in May. And then the", capped=True)
    assert (shown, note) == ("The boiler was serviced. It was in May.", "(cut at 64 tokens)")
    assert last_whole("- one\n- two\n- thr") == "- one\n- two"
    assert last_whole("```\ncode line\nmore co") == "```\ncode line\n```"  # fence closed


@given(st.lists(st.sampled_from(["alpha", "beta.", "gamma\n", "delta!", " ", "\n\n"]), max_size=60))
def test_what_is_shown_is_always_how_the_reply_began(words: list[str]) -> None:
    text = "".join(words)
    shown, note, looping = guarded(text)
    assert text.startswith(shown)
    if not looping:
        assert shown == text and note == ""


# Pieces that make loops of every kind: long sentences and lines, a loop without breaks,
# list numbers, code fences, closing quotes, blank runs; and splits of any shape.
PIECES = [
    "The boiler was serviced in May by the plumber from town. ",
    "The valve was replaced the week after, as the plumber said. ",
    "the pump and the valve and the boiler ",
    "- a list item that is long enough to count as a unit\n",
    "    result = compute(value, other)  # long enough to count\n",
    "```\n",
    "1. ",
    "Yes. ",
    'He said "stop." ',
    "\n",
    "\n\n",
    "  ",
    "word",
    ". ",
    "!",
    ")",
]
TEXTS = st.lists(st.sampled_from(PIECES), max_size=60).map("".join)
SPLITS = st.one_of(
    st.integers(1, 9),  # every n characters
    st.lists(st.integers(0, 3000), max_size=80),  # at these places (modulo the length)
)
SENTENCE_END = re.compile(r"(?:\n|[.!?][\"')\]]*)[ \t]*\Z")


def split(text: str, how: int | list[int]) -> list[str]:
    if isinstance(how, int):
        return [text[at : at + how] for at in range(0, len(text), how)]
    cuts = [0, *sorted(cut % (len(text) + 1) for cut in how), len(text)]
    return [text[start:end] for start, end in pairwise(cuts)]


def fed(deltas: list[str], *, window: int = WINDOW) -> tuple[list[str], ReplyGuard]:
    """What each delta showed, until the guard tripped."""
    guard = ReplyGuard(window=window)
    shown = []
    for delta in deltas:
        shown.append(guard.feed(delta))
        if guard.looping:
            break
    return shown, guard


@settings(max_examples=300, deadline=None)
@given(TEXTS, SPLITS, SPLITS, st.sampled_from([41, 100, WINDOW]))
def test_what_is_shown_is_how_the_reply_began_however_it_is_split(
    text: str, how: int | list[int], other: int | list[int], window: int
) -> None:
    for deltas in (split(text, how), split(text, other)):
        shown, guard = fed(deltas, window=window)
        rest, note = guard.close()
        assert text.startswith("".join(shown) + rest)
        if guard.looping:
            assert (rest, note) == ("", LOOP_NOTICE)
        else:  # not cut: all of it, whatever the split
            assert ("".join(shown) + rest, note) == (text, "")


@settings(max_examples=300, deadline=None)
@given(TEXTS, SPLITS, st.sampled_from([41, WINDOW]))
def test_text_is_shown_a_whole_line_or_sentence_at_a_time_however_it_is_split(
    text: str, how: int | list[int], window: int
) -> None:
    shown, guard = fed(split(text, how), window=window)
    so_far = ""
    for piece in shown[:-1] if guard.looping else shown:  # a cut loop ends where its copy did
        so_far += piece
        if piece:
            assert SENTENCE_END.search(so_far), so_far


@settings(max_examples=200, deadline=None)
@given(TEXTS, SPLITS)
def test_a_capped_reply_ends_at_its_last_whole_sentence_however_it_is_split(
    text: str, how: int | list[int]
) -> None:
    shown, guard = fed(split(text, how))
    rest, note = guard.close(capped=True, tokens=64)
    assert text.startswith("".join(shown))
    if not guard.looping:
        assert "".join(shown) + rest in ("".join(shown), last_whole(text))
        assert note == "(cut at 64 tokens)"


@settings(max_examples=100, deadline=None)
@given(SPLITS)
def test_a_paragraph_written_three_times_is_shown_once_however_it_is_split(
    how: int | list[int],
) -> None:
    first = "Here is the history.\n\n" + PARAGRAPH
    shown, guard = fed(split(first + PARAGRAPH * 2, how))
    assert guard.looping and first.startswith("".join(shown))  # one delta may hold it all
    if isinstance(how, int):  # deltas far shorter than a copy: the first is shown whole
        assert "".join(shown) == first


@given(st.text())
def test_a_unit_key_never_holds_a_line_break(unit: str) -> None:
    # The block rule joins keys with "\n" and searches the joined text: a key with one
    # could match across two units.
    assert "\n" not in unit_key(unit)


@pytest.mark.parametrize("fake", [FakeOpenAI, FakeOllama])
def test_a_looping_stream_is_cancelled_and_shown_once(fake: type) -> None:
    with fake([Looping(PARAGRAPH)]) as srv:
        client = (
            OpenAIClient(srv.url, "fake-model")
            if fake is FakeOpenAI
            else OllamaClient(srv.url, "fake-llama:1b")
        )
        seen: list[str] = []
        result = chat(client, HI, on_text=seen.append)
        client.close()
        for _ in range(200):  # the server notices the hang-up on its next write
            if srv.disconnects:
                break
            srv._stop.wait(0.01)
    assert srv.disconnects == 1 and srv.loops_given_up == 0
    assert result.answer == PARAGRAPH.rstrip()
    assert result.text == "".join(seen) == PARAGRAPH + LOOP_NOTICE
    assert result.note == LOOP_NOTICE


@pytest.mark.parametrize("fake", [FakeOpenAI, FakeOllama])
def test_a_reply_cut_by_the_token_cap_says_so(fake: type) -> None:
    with fake(
        [Capped("The boiler was serviced in May. The plumber said the valve was", 42)]
    ) as srv:
        client = (
            OpenAIClient(srv.url, "fake-model")
            if fake is FakeOpenAI
            else OllamaClient(srv.url, "fake-llama:1b")
        )
        seen: list[str] = []
        result = chat(client, HI, on_text=seen.append)
    assert result.text == "".join(seen)
    assert result.text == "The boiler was serviced in May.\n\n(cut at 42 tokens)"
    assert result.answer == "The boiler was serviced in May."


def test_an_empty_reply_is_asked_for_again_then_is_an_error() -> None:
    with FakeOpenAI([Reply(""), Reply("Second time lucky.")]) as srv:
        assert chat(OpenAIClient(srv.url, "m"), HI).text == "Second time lucky."
        assert len(srv.chat_requests) == 2
    with FakeOpenAI([Reply(""), Reply("  ")]) as srv, pytest.raises(StreamError) as info:
        chat(OpenAIClient(srv.url, "m"), HI)
    assert str(info.value).startswith("empty reply from m at ")
    assert len(srv.chat_requests) == 2


def test_a_stream_that_ends_without_a_finish_reason_is_asked_for_again_then_fails() -> None:
    with FakeOpenAI([Interrupted("The main"), Reply("The main events were three.")]) as srv:
        assert chat(OpenAIClient(srv.url, "m"), HI).text == "The main events were three."
    srv = FakeOpenAI([Interrupted(""), Interrupted("The main")])
    with srv, pytest.raises(StreamError) as info:
        chat(OpenAIClient(srv.url, "m"), HI)
    assert str(info.value).startswith("stream ended early from m at ")


def test_an_ollama_stream_without_its_done_line_is_asked_for_again_then_fails() -> None:
    with FakeOllama([Interrupted("The main"), Reply("Three events.")], models=["m"]) as srv:
        assert chat(OllamaClient(srv.url, "m"), HI).text == "Three events."
    srv = FakeOllama([Interrupted(""), Interrupted("The main")], models=["m"])
    with srv, pytest.raises(StreamError, match=r"^stream ended early from m at "):
        chat(OllamaClient(srv.url, "m"), HI)


def test_a_stream_that_ended_early_after_text_was_shown_is_not_asked_again() -> None:
    with FakeOpenAI([Interrupted("A whole line.\nand half"), Reply("unused")]) as srv:
        seen: list[str] = []
        with pytest.raises(StreamError, match=r"^stream ended early"):
            chat(OpenAIClient(srv.url, "m"), HI, on_text=seen.append)
        assert seen == ["A whole line.\n"] and len(srv.chat_requests) == 1
