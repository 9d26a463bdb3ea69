"""The stdio transport's reader: messages found whatever the pieces, none over the limit."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harvey.mcp.stdio import Lines, Oversized

messages = st.lists(
    st.binary(min_size=1, max_size=40).filter(lambda b: b"\n" not in b and b.strip()), max_size=8
)


@given(messages, st.lists(st.integers(min_value=1, max_value=50), min_size=1, max_size=20))
def test_the_messages_come_back_whatever_the_pieces(found: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(m + b"\n" + b"\n" * (i % 2) for i, m in enumerate(found))
    lines, got, at = Lines(1 << 20), [], 0
    for size in cuts * (len(stream) // sum(cuts) + 1):
        got += lines.feed(stream[at : at + size])
        at += size
    assert got == found


@given(st.integers(min_value=1, max_value=64), st.integers(min_value=1, max_value=200))
def test_no_message_longer_than_the_limit_is_held(limit: int, size: int) -> None:
    lines = Lines(limit)
    data = b"y" * size
    if size > limit:
        with pytest.raises(Oversized):
            for at in range(0, size, 7):
                lines.feed(data[at : at + 7])
                assert len(lines.held) <= limit
    else:
        assert lines.feed(data + b"\n") == [data]
