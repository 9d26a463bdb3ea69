"""``llm/wire.py``: what Harvey inflates and parses of a server's answer."""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvey.llm import wire


class _Chunks(httpx.SyncByteStream):
    """The body as a server's socket gives it: in pieces, one read each."""

    def __init__(self, body: bytes, size: int = 4096) -> None:
        self.body, self.size = body, size

    def __iter__(self) -> Iterator[bytes]:
        for start in range(0, len(self.body), self.size):
            yield self.body[start : start + self.size]


def _response(body: bytes, encoding: str = "") -> httpx.Response:
    headers = {"content-encoding": encoding} if encoding else {}
    return httpx.Response(200, headers=headers, stream=_Chunks(body))


def _pack(data: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        return gzip.compress(data)
    if encoding == "deflate":
        return zlib.compress(data)
    return data


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=5000), st.sampled_from(["", "identity", "gzip", "deflate"]))
def test_a_body_reads_back_as_sent_in_every_encoding_offered(data: bytes, encoding: str) -> None:
    response = _response(_pack(data, encoding.replace("identity", "")), encoding)
    assert wire.read_body(response, len(data) + 1) == data


def test_no_piece_is_larger_than_a_piece() -> None:
    response = _response(gzip.compress(b"\0" * (9 * wire.PIECE_BYTES)), "gzip")
    sizes = [len(p) for p in wire.decoded_pieces(response)]
    assert max(sizes) <= wire.PIECE_BYTES and sum(sizes) == 9 * wire.PIECE_BYTES


def test_a_limit_counts_inflated_bytes() -> None:
    with pytest.raises(wire.TooLarge):
        wire.read_body(_response(gzip.compress(b"x" * 5000), "gzip"), 4999)
    cut = wire.read_body(_response(gzip.compress(b"x" * 5000), "gzip"), 100, cut=True)
    assert cut == b"x" * 100


def test_text_split_inside_a_character_is_decoded_whole() -> None:
    body = "é€😀".encode() * 1000
    assert "".join(wire.decoded_text(_response(body))) == "é€😀" * 1000


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=20,
)


@given(json_values)
def test_loads_reads_what_json_writes(value: object) -> None:
    assert wire.loads(json.dumps(value)) == value


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=1, max_value=200_000), st.sampled_from(["[", '{"a":']))
def test_loads_fails_only_with_value_error_however_deep(depth: int, opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    text = opener * depth + "1" * (opener != "[") + closer * depth
    if depth <= wire.MAX_DEPTH:
        wire.loads(text)
    else:
        with pytest.raises(ValueError, match="nested deeper"):
            wire.loads(text)
