"""The HTTP client for a Streamable HTTP server, every answer bounded.

The SDK bounds each server-sent event it buffers (``max_sse_event_size``, set here to
the stdio transport's ``MAX_MESSAGE_BYTES``) but reads an answer sent as one JSON body
whole, however large. Here such a body is counted as it arrives and refused past the
limit: the SDK reports the request failed (a ``StreamError`` is a parse failure to it)
after at most that many bytes were held. The answer to a ``tools/list`` request is read
here whole, within what the listing has left (``listing.py``), and its tools counted
before the SDK parses it; it must come uncompressed (a compressed one is refused: its
size would say nothing of what it inflates to).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from harvey.mcp.stdio import MAX_MESSAGE_BYTES, Ending

if TYPE_CHECKING:
    from harvey.mcp.listing import ListingGuard

CONNECT_SECONDS = 30.0
READ_SECONDS = 300.0  # a server may hold an event stream open between messages


def bounded_client(
    headers: dict[str, str],
    limit: int = MAX_MESSAGE_BYTES,
    guard: ListingGuard | None = None,
    ending: Ending | None = None,
) -> Any:
    """An ``httpx2.AsyncClient`` (the SDK's HTTP library) whose every answer that is not
    an event stream stops at ``limit`` bytes, and whose answers to a listing count
    against ``guard``."""
    import httpx2

    from harvey.mcp.listing import lists_tools

    said = ending or Ending()

    class TooLarge(httpx2.StreamError):
        """An answer over the limit."""

    class Capped(httpx2.AsyncByteStream):
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def __aiter__(self) -> AsyncIterator[bytes]:
            seen = 0
            async for piece in self.inner:
                seen += len(piece)
                if seen > limit:
                    raise TooLarge(f"the server's answer is over {limit >> 20} MB")
                yield piece

        async def aclose(self) -> None:
            await self.inner.aclose()

    class Bounded(httpx2.AsyncBaseTransport):
        def __init__(self) -> None:
            self.inner = httpx2.AsyncHTTPTransport()

        async def handle_async_request(self, request: Any) -> Any:
            response = await self.inner.handle_async_request(request)
            if guard is not None and request.method == "POST" and lists_tools(_body(request)):
                return await self.listed(response)
            kind = response.headers.get("content-type", "").lower()
            if kind.startswith("text/event-stream"):  # the SDK bounds each event
                return response
            return httpx2.Response(
                response.status_code,
                headers=response.headers,
                stream=Capped(response.stream),
                extensions=response.extensions,
            )

        async def listed(self, response: Any) -> Any:
            """The answer to a listing, read whole within the listing's room and counted."""
            assert guard is not None
            encoding = response.headers.get("content-encoding", "identity").lower()
            body = bytearray()
            try:
                if encoding not in ("", "identity"):
                    said.why = guard.why = f"its tool listing came compressed ({encoding})"
                    raise TooLarge(said.why)
                events = response.headers.get("content-type", "").lower()
                answered = Answered() if events.startswith("text/event-stream") else None
                async for piece in response.stream:
                    body += piece
                    if len(body) > guard.room():
                        said.why = guard.over_bytes()
                        raise TooLarge(said.why)
                    if answered is not None and answered.seen(body):
                        break  # the answer came: a stream the server holds open is not waited on
            finally:
                await response.stream.aclose()
            refused = guard.take(bytes(body))
            if refused:
                said.why = refused
                raise TooLarge(refused)
            return httpx2.Response(
                response.status_code,
                headers=response.headers,
                stream=httpx2.ByteStream(bytes(body)),
                extensions=response.extensions,
            )

        async def aclose(self) -> None:
            await self.inner.aclose()

    return httpx2.AsyncClient(
        headers={**headers, "Accept-Encoding": "identity"},
        timeout=httpx2.Timeout(CONNECT_SECONDS, read=READ_SECONDS),
        transport=Bounded(),
    )


def _body(request: Any) -> bytes:
    try:
        return bytes(request.content)
    except Exception:  # a streamed body (the SDK sends none): not a listing to count
        return b""


class Answered:
    """Whether an event stream has carried a JSON-RPC response yet (each complete event
    looked at once)."""

    def __init__(self) -> None:
        self.scanned = 0

    def seen(self, body: bytearray) -> bool:
        import json

        text = bytes(body).replace(b"\r\n", b"\n")
        end = text.rfind(b"\n\n")
        if end < self.scanned:
            return False
        complete, self.scanned = text[self.scanned : end], end
        for event in complete.split(b"\n\n"):
            data = b"\n".join(
                line[5:].strip() for line in event.split(b"\n") if line.startswith(b"data:")
            )
            if b'"result"' not in data and b'"error"' not in data:
                continue
            try:
                message = json.loads(data)
            except (ValueError, RecursionError):
                continue
            if isinstance(message, dict) and "id" in message:
                return True
        return False
