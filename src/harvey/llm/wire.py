"""What a model server sends, read within bounds: bodies decompressed by Harvey, JSON
nested no deeper than data needs.

A hostile (or broken) server controls every byte of an answer. Two of its cheapest
attacks pass below httpx's own limits:

* **A compression bomb.** httpx inflates a ``Content-Encoding: gzip`` body whole, chunk
  by chunk, before a caller can count it: one megabyte of gzip sent as an error body
  became 5.2 GB in memory. Here the raw bytes are inflated by Harvey with
  ``max_length``, so no piece is larger than ``PIECE_BYTES`` and a caller's limit is
  checked on the inflated size, piece by piece. Harvey asks for ``gzip`` and
  ``deflate`` only; a body in another encoding (one Harvey did not offer) is refused.
* **Deep nesting.** ``json.loads`` on ``[[[[…`` raises ``RecursionError``, which no
  caller catches as bad JSON. ``loads`` turns it, and any value nested deeper than
  ``MAX_DEPTH``, into the ``ValueError`` every caller already handles as "not JSON".
"""

from __future__ import annotations

import codecs
import json
import zlib
from collections.abc import Iterator
from typing import Any

import httpx

#: The encodings Harvey offers; httpx would add ``br``/``zstd`` when their libraries are.
ACCEPT_ENCODING = "gzip, deflate"
#: The most a single inflated piece may be: the memory one raw chunk can cost.
PIECE_BYTES = 1 << 20
#: A server's JSON (model lists, /props, tool arguments) is a few levels deep.
MAX_DEPTH = 64
#: Compressed bytes that may inflate to nothing in a row (real data never does for long).
BARREN_BYTES = 1 << 20
#: An error body is read this far for its message; the rest is never inflated.
ERROR_BODY_BYTES = 64 * 1024
#: A probe's answer (/slots, /models, /api/tags) is small.
PROBE_BYTES = 4 * 1024 * 1024


class EncodingRefused(ValueError):
    """A body in an encoding Harvey did not offer, or that does not inflate."""


class TooLarge(ValueError):
    """A body larger, once inflated, than its reader's limit."""


def _inflater(encoding: str) -> zlib._Decompress | None:
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(zlib.MAX_WBITS | 16)
    if encoding == "deflate":  # zlib-wrapped, as the RFC says; raw deflate handled below
        return zlib.decompressobj()
    raise EncodingRefused(f"a body in the {encoding!r} encoding, which Harvey did not ask for")


def _encoding(response: httpx.Response) -> str:
    named = [
        e.strip().lower()
        for e in response.headers.get("content-encoding", "").split(",")
        if e.strip() and e.strip().lower() != "identity"
    ]
    if len(named) > 1:
        raise EncodingRefused(f"a body encoded {len(named)} times over ({', '.join(named)})")
    return named[0] if named else ""


def decoded_pieces(response: httpx.Response) -> Iterator[bytes]:
    """The body as it arrives, inflated by Harvey: no piece over ``PIECE_BYTES``."""
    try:  # read already (a test's mock transport): httpx has inflated it, nothing to bound
        yield response.content
        return
    except httpx.ResponseNotRead:
        pass
    encoding = _encoding(response)
    inflater = _inflater(encoding)
    first = True
    barren = 0  # compressed bytes read since the last that inflated to anything
    for raw in response.iter_raw():
        if inflater is None:
            yield raw
            continue
        try:
            piece = inflater.decompress(raw, PIECE_BYTES)
        except zlib.error:
            if not (first and encoding == "deflate"):
                raise EncodingRefused(f"a {encoding} body that does not inflate") from None
            inflater = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, as some servers send
            piece = _inflate(inflater, raw, encoding)
        first = False
        # Empty stored blocks inflate to nothing: a stream of them would never reach a
        # limit counted on inflated bytes, nor a line a progress check could see.
        barren = 0 if piece else barren + len(raw)
        if barren > BARREN_BYTES:
            raise EncodingRefused(f"a {encoding} body whose bytes inflate to nothing")
        yield piece
        while inflater.unconsumed_tail:
            yield _inflate(inflater, inflater.unconsumed_tail, encoding)
    if inflater is not None:
        yield inflater.flush()


def _inflate(inflater: zlib._Decompress, data: bytes, encoding: str) -> bytes:
    try:
        return inflater.decompress(data, PIECE_BYTES)
    except zlib.error:
        raise EncodingRefused(f"a {encoding} body that does not inflate") from None


def read_body(response: httpx.Response, limit: int, *, cut: bool = False) -> bytes:
    """The inflated body, at most ``limit`` bytes: beyond it ``TooLarge``, or, with
    ``cut``, the first ``limit`` bytes (an error body is wanted for its first line)."""
    parts: list[bytes] = []
    size = 0
    for piece in decoded_pieces(response):
        parts.append(piece)
        size += len(piece)
        if size > limit:
            if cut:
                return b"".join(parts)[:limit]
            raise TooLarge(f"more than {limit:,} bytes")
    return b"".join(parts)


def decoded_text(response: httpx.Response) -> Iterator[str]:
    """The body as UTF-8 text as it arrives (SSE and NDJSON are UTF-8 by definition)."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    for piece in decoded_pieces(response):
        text = decoder.decode(piece)
        if text:
            yield text
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail


def loads(text: str | bytes, **options: Any) -> Any:
    """``json.loads`` whose only failure is ``ValueError``, nesting at most ``MAX_DEPTH``."""
    try:
        value = json.loads(text, **options)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    _check_depth(value)
    return value


def _check_depth(value: Any) -> None:
    """Walked with a stack, not recursion: the check must not fail the way it guards."""
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth >= MAX_DEPTH:
            raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
        pending.extend((child, depth + 1) for child in children)


def get_json(http: httpx.Client, url: str, limit: int = PROBE_BYTES) -> tuple[int, Any]:
    """A probe's GET: (status, its JSON or None when it is not a success). Raises
    ``httpx.HTTPError`` when the server cannot be reached and ``ValueError`` when its
    answer is too large, badly encoded or not JSON — the two a probe already treats as
    "no answer"."""
    with http.stream("GET", url, headers={"accept-encoding": ACCEPT_ENCODING}) as response:
        if response.status_code != 200:
            return response.status_code, None
        return 200, loads(read_body(response, limit))
