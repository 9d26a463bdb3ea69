"""A model server that answers with exactly the bytes a test hands it.

The format fakes (``openai.py``, ``ollama.py``) speak the wire formats correctly;
an attack needs a server that does not: a gzip bomb as an error body, JSON nested a
hundred thousand deep, a stream that never ends. Each route is a path and what to
send for it, raw; a streamed body is written chunk by chunk (HTTP chunked encoding)
for as long as the client keeps reading.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Canned:
    """One answer: a whole body, or a function making the chunks of a streamed one."""

    body: bytes | Callable[[], Iterator[bytes]] = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "application/json"})


def gzip_bomb(inflated_mb: int) -> bytes:
    """Zeros that inflate to ``inflated_mb`` MB from about a thousandth of that."""
    out = gzip.compress(b"\0" * (inflated_mb << 20), compresslevel=9)
    return out


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        path = self.path.split("?")[0]
        self.server.seen.append(path)
        canned = self.server.routes.get(path, Canned(b'{"error": "no such route"}', 404))
        self.send_response(canned.status)
        for name, value in canned.headers.items():
            self.send_header(name, value)
        if isinstance(canned.body, bytes):
            self.send_header("content-length", str(len(canned.body)))
            self.end_headers()
            self.wfile.write(canned.body)
            return
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            for chunk in canned.body():
                if chunk:
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client stopped reading: the attack is over

    do_GET = _answer
    do_POST = _answer


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, routes: dict[str, Canned]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.routes = routes
        self.seen: list[str] = []

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that hangs up mid-attack is the point, not an error


class HostileServer:
    """``with HostileServer({"/v1/models": Canned(...)}) as srv: srv.url``."""

    def __init__(self, routes: dict[str, Canned]) -> None:
        self._server = _Server(routes)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def seen(self) -> list[str]:
        return self._server.seen

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
