"""What the loop guard costs on a hostile stream: the same per character, however long.

A server can stream a reply of any length in one-character deltas; a guard that
searched the whole reply on every delta took 30 s over 750 KB without a break and
had read 4.5 MB of a 10 MB reply after nine minutes. These tests count the guard's
work instead of timing it, so they fail the same way on any machine: ``_searched``
adds up the characters its searches, comparisons and copies read, and ``_window``
(what it searches, copied once per delta) must stay within twice ``WINDOW``. A
guard that searched the whole reply would read about n²/2 characters here, several
hundred times the bound.

The window also changes what is caught far into a long reply: a loop without
breaks whose period is past a third of the window is left to the line and sentence
rules. The last tests pin both sides of that.
"""

from __future__ import annotations

import random

import pytest

from harvey.llm.repetition import LOOP_NOTICE, MIN_UNIT, WINDOW, ReplyGuard

MB = 1 << 20
LETTERS = "abcdefghijklmnopqrstuvwxyz"
# While no repeat is in sight the window (up to 2·WINDOW characters, counted twice: the
# haystack and the needle) is searched once every MIN_UNIT + 1 characters: 400 a character
# at most, about 300 on average. The rest (scanning, units, releases) stays under as much.
PER_CHARACTER = 2 * (2 * 2 * WINDOW // (MIN_UNIT + 1))


def random_text(size: int, alphabet: str, seed: int = 0) -> str:
    """``size`` characters drawn from ``alphabet`` (through a byte table: megabytes fast)."""
    table = bytes(ord(alphabet[byte % len(alphabet)]) for byte in range(256))
    return random.Random(seed).randbytes(size).translate(table).decode("ascii")


def feed_in(guard: ReplyGuard, text: str, size: int) -> tuple[str, int, int]:
    """``text`` fed ``size`` characters at a time until the guard trips: what was shown,
    the longest the searched window grew, and how much was fed."""
    shown, longest, at = [], 0, 0
    while at < len(text) and not guard.looping:
        shown.append(guard.feed(text[at : at + size]))
        longest = max(longest, len(guard._window))
        at += size
    return "".join(shown), longest, min(at, len(text))


@pytest.mark.slow
@pytest.mark.parametrize("size", [1, 3, 64])
def test_half_a_megabyte_without_a_break_is_read_at_a_bounded_cost_per_character(
    size: int,
) -> None:
    text = random_text(MB // 2, LETTERS + " ,")  # no line, no sentence, no loop
    guard = ReplyGuard()
    shown, longest, _fed = feed_in(guard, text, size)
    assert not guard.looping  # no unit ended, yet the line streams a window behind
    assert text.startswith(shown) and len(shown) >= len(text) - WINDOW - size
    assert longest <= 2 * WINDOW + size
    assert guard._searched <= PER_CHARACTER * len(text)
    assert guard.close() == (text[len(shown) :], "")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("text", "size"),
    [
        (". ".join(random_text(MB // 12, LETTERS, seed=1)), 1),  # "q. x. e. ": all held soon
        (random_text(MB // 4, LETTERS[:8] + "    .\n", seed=2), 1),  # random words and sentences
        (random_text(MB // 4, LETTERS[:8] + "    .\n", seed=3), 5),
    ],
    ids=["letter-sentences", "words-1", "words-5"],
)
def test_text_broken_every_few_characters_is_read_at_a_bounded_cost(text: str, size: int) -> None:
    guard = ReplyGuard()
    shown, longest, _fed = feed_in(guard, text, size)
    assert not guard.looping
    assert longest <= 2 * WINDOW + size
    assert guard._searched <= PER_CHARACTER * len(text)
    rest, note = guard.close()
    assert shown + rest == text and note == ""


def test_a_loop_deep_in_a_long_reply_is_cut_after_its_first_copy() -> None:
    filler = random_text(5 * WINDOW, LETTERS + " ")  # past the window, which has moved on
    piece = random_text(WINDOW // 4, LETTERS + " ", seed=7)
    text = filler + piece * 6
    guard = ReplyGuard()
    shown, _longest, _fed = feed_in(guard, text, 16)
    assert guard.looping and guard.close() == ("", LOOP_NOTICE)
    assert text.startswith(shown)
    assert len(filler) <= len(shown) <= len(filler) + len(piece)


def test_a_loop_longer_than_a_third_of_the_window_is_left_to_the_sentence_rules() -> None:
    # Without breaks: three copies of 250 characters never fit a 300-character window
    # (which holds up to 600), so the periodic rule cannot see the loop...
    piece = random_text(250, LETTERS + " ", seed=8)
    guard = ReplyGuard(window=300)
    shown, _longest, _fed = feed_in(guard, piece * 8, 7)
    assert not guard.looping and shown + guard.close()[0] == piece * 8
    # ...but written in sentences, its third copy trips the sentence rule all the same
    # (the block rule, which needs the first copy in the window, tripped on the second).
    sentences = "".join(
        f"Sentence {n} is about the {word} and long enough to count. "
        for n, word in enumerate(["pump", "valve", "boiler", "pipe"])
    )
    for window, copies in [(100, 2), (WINDOW, 1)]:
        guard = ReplyGuard(window=window)
        shown, _longest, fed = feed_in(guard, sentences * 3, 7)
        assert guard.looping and shown == sentences
        assert copies * len(sentences) < fed <= (copies + 1) * len(sentences)


def test_a_line_that_never_ends_is_shown_as_it_comes_a_window_behind() -> None:
    """stream-json and the REPL see a 100 KB line while it streams, not at its end."""
    rng = random.Random(5)
    line = "".join(rng.choice("abcdefgh ,") for _ in range(100_000))
    guard = ReplyGuard()
    shown = ""
    for start in range(0, len(line), 1000):
        shown += guard.feed(line[start : start + 1000])
    assert len(shown) >= len(line) - 2 * WINDOW and line.startswith(shown)
    rest, note = guard.close()
    assert shown + rest == line and note == ""


def test_a_loop_at_the_end_of_a_line_that_never_ends_shows_one_copy_at_most() -> None:
    rng = random.Random(6)
    prefix = "".join(rng.choice("abcdefgh ,") for _ in range(50_000))
    period = "".join(rng.choice("ijklmnop ") for _ in range(900))
    text = prefix + period * 6
    guard = ReplyGuard()
    shown = "".join(guard.feed(text[i : i + 500]) for i in range(0, len(text), 500))
    assert guard.looping
    assert shown.count(period) <= 1
