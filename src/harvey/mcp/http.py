"""The HTTP client for a Streamable HTTP server, every answer bounded.

The SDK bounds each server-sent event it buffers (``max_sse_event_size``, set here to
the stdio transport's ``MAX_MESSAGE_BYTES``) but reads an answer sent as one JSON body
whole, however large. Here such a body is counted as it arrives and refused past the
limit: the SDK reports the request failed (a ``StreamError`` is a parse failure to it)
after at most that many bytes were held.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from harvey.mcp.stdio import MAX_MESSAGE_BYTES

CONNECT_SECONDS = 30.0
READ_SECONDS = 300.0  # a server may hold an event stream open between messages


def bounded_client(headers: dict[str, str], limit: int = MAX_MESSAGE_BYTES) -> Any:
    """An ``httpx2.AsyncClient`` (the SDK's HTTP library) whose every answer that is not
    an event stream stops at ``limit`` bytes."""
    import httpx2

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
            kind = response.headers.get("content-type", "").lower()
            if kind.startswith("text/event-stream"):  # the SDK bounds each event
                return response
            return httpx2.Response(
                response.status_code,
                headers=response.headers,
                stream=Capped(response.stream),
                extensions=response.extensions,
            )

        async def aclose(self) -> None:
            await self.inner.aclose()

    return httpx2.AsyncClient(
        headers=headers,
        timeout=httpx2.Timeout(CONNECT_SECONDS, read=READ_SECONDS),
        transport=Bounded(),
    )
