"""What the fake servers share: script steps, the threaded HTTP server, and
the request loop that plays a script. The wire formats live in ``ollama.py``
and ``openai.py``; ``servers.py`` is the public face."""

from __future__ import annotations

import json
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harvey.context.budget import estimate_tokens
from harvey.llm.scripted import Reply


@dataclass(frozen=True)
class HTTPFailure:
    status: int = 500
    message: str = "internal server error"
    retry_after: float | None = None


@dataclass(frozen=True)
class Malformed:
    text: str = ""
    line: str = "{this is not json"


@dataclass(frozen=True)
class Truncated:
    text: str = ""
    abrupt: bool = False


@dataclass(frozen=True)
class Slow:
    seconds: float
    then: Reply | str = ""


@dataclass(frozen=True)
class KeepAlive:
    """Stream ``text``, then only keep-alives (an SSE comment, a blank NDJSON line) every
    ``interval`` seconds: bytes that are not progress, until the client gives up (or
    ``give_up_after`` seconds, so a test that forgets cannot hold a thread forever)."""

    interval: float = 0.2
    text: str = ""
    give_up_after: float = 60.0


@dataclass(frozen=True)
class Capped:
    """Stream ``text``, then end as a server does at its token cap: finish reason
    ``length`` (Ollama ``done_reason``), ``tokens`` completion tokens reported."""

    text: str
    tokens: int = 64


@dataclass(frozen=True)
class Interrupted:
    """Stream ``text``, then close the stream properly but with no finish reason, as
    llama-cpp-python's server does to a stream the next request interrupts (SSE only)."""

    text: str = ""


@dataclass(frozen=True)
class Looping:
    """Stream ``text`` over and over, ``interval`` seconds apart, until the client closes
    the connection (counted in ``disconnects``) or ``give_up_after`` seconds pass, then
    end normally — a model stuck in a loop that only a client hanging up stops."""

    text: str
    interval: float = 0.005
    give_up_after: float = 20.0


Step = (
    Reply | str | HTTPFailure | Malformed | Truncated | Slow | KeepAlive | Capped | Interrupted
) | Looping


@dataclass
class Received:
    """One request the fake server got."""

    method: str
    path: str
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class _Abort(Exception):
    """Raised inside a handler to drop the connection without finishing."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet tests
        pass

    def _dispatch(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", errors="replace")
        fake = self.server.fake
        path = self.path.split("?", 1)[0]
        fake._record(Received(method, path, body, dict(self.headers.items())))
        self.close_connection = True
        try:
            fake._handle(self, method, path, body)
        except _Abort:
            pass
        except (BrokenPipeError, ConnectionResetError):
            with fake._lock:  # the client went away (cancelled stream, timeout): fine
                fake.disconnects += 1

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    # --- response helpers used by the fakes ---------------------------------

    def send_json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Connection", "close")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(payload)

    def send_text(self, status: int, text: str) -> None:
        payload = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(payload)

    def start_stream(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()

    def write_chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    # socketserver's default listen backlog is 5: a burst of 16 concurrent calls
    # (chunked analysis at concurrency 16) overflows it and the kernel drops the
    # extra handshakes, which the client retries only after a second. Real
    # servers listen with a deep backlog; so does the fake.
    request_queue_size = 128

    def __init__(self, fake: _FakeServer) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", 0), _Handler)


class _FakeServer(ABC):
    """What both fakes share: lifecycle, script, recording, delays."""

    chat_path = ""

    def __init__(
        self,
        replies: Iterable[Step] = (),
        *,
        models: Iterable[str] = ("fake-model",),
        context_window: int | None = 4096,
        delay_per_call: float = 0.0,
        chunk_delay: float = 0.0,
        default_reply: Reply | str | None = None,
        strict_models: bool = False,
        keep_bodies: bool = True,
        max_prompt_tokens: int | None = None,
        count_tokens: Callable[[dict[str, Any]], int] | None = None,
    ) -> None:
        self.models = list(models)
        self.context_window = context_window
        self.delay_per_call = delay_per_call
        self.chunk_delay = chunk_delay
        self.default_reply = default_reply
        self.strict_models = strict_models
        self.keep_bodies = keep_bodies  # False: record requests without their bodies (big inputs)
        # A window the server enforces: prompts counted above it get the real error body.
        self.max_prompt_tokens = max_prompt_tokens
        self.count_tokens = count_tokens or _estimated_prompt
        self.rejected = 0  # chat requests refused as too long
        self.disconnects = 0  # answers the client hung up on before their end
        self.loops_given_up = 0  # Looping steps that ran to give_up_after (nobody hung up)
        self.requests: list[Received] = []
        self._steps: list[Step] = list(replies)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server: _Server | None = None
        self._port: int | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ------------------------------------------------------------

    def start(self) -> _FakeServer:
        if self._server is None:
            self._stop.clear()
            self._server = _Server(self)
            self._port = int(self._server.server_address[1])
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def root_url(self) -> str:
        if self._port is None:
            raise RuntimeError("the fake server is not started (use `with` or .start())")
        return f"http://127.0.0.1:{self._port}"

    @property
    def url(self) -> str:
        return self.root_url

    # --- script and records ---------------------------------------------------

    def script(self, *steps: Step) -> None:
        """Append steps to the script."""
        with self._lock:
            self._steps.extend(steps)

    @property
    def pending(self) -> int:
        return len(self._steps)

    def _record(self, received: Received) -> None:
        if not self.keep_bodies:
            received = Received(received.method, received.path, None, received.headers)
        with self._lock:
            self.requests.append(received)

    @property
    def chat_requests(self) -> list[Any]:
        """Bodies of the chat requests received, oldest first."""
        with self._lock:
            return [r.body for r in self.requests if r.path.endswith(self.chat_path)]

    def _next_step(self) -> Step | None:
        with self._lock:
            if self._steps:
                return self._steps.pop(0)
        return self.default_reply

    def _pause(self, seconds: float) -> None:
        if seconds > 0:
            self._stop.wait(seconds)

    def _chat(self, h: _Handler, body: Any) -> None:
        """Run one scripted step for a chat request."""
        if not isinstance(body, dict):
            self._error(h, 400, "request body must be a JSON object")
            return
        model = str(body.get("model", ""))
        if self.strict_models and model not in self.models:
            self._unknown_model(h, model)
            return
        self._pause(self.delay_per_call)
        if self.max_prompt_tokens is not None:
            counted = self.count_tokens(body)
            if counted > self.max_prompt_tokens:
                with self._lock:
                    self.rejected += 1
                self._too_long(h, counted, self.max_prompt_tokens)
                return
        step = self._next_step()
        if step is None:
            self._error(h, 400, "fake server: the script has no more replies")
            return
        while isinstance(step, Slow):
            self._pause(step.seconds)
            step = step.then
        if isinstance(step, HTTPFailure):
            headers = {}
            if step.retry_after is not None:
                headers["Retry-After"] = f"{step.retry_after:g}"
            self._error(h, step.status, step.message, headers)
            return
        stream = body.get("stream", self._stream_default)
        if isinstance(step, str | Reply):
            reply = Reply(step) if isinstance(step, str) else step
            if stream:
                h.start_stream(self._content_type)
                self._stream_reply(h, body, reply)
                h.end_stream()
            else:
                h.send_json(200, self._whole_reply(body, reply))
            return
        h.start_stream(self._content_type)
        if isinstance(step, Looping):
            self._loop(h, model, step)
            return
        for chunk in Reply(step.text).chunks():
            self._emit(h, self._text_event(model, chunk))
        if isinstance(step, Capped):
            self._capped_end(h, model, step.tokens)
            h.end_stream()
            return
        if isinstance(step, Interrupted):
            self._interrupted_end(h, model)
            h.end_stream()
            return
        if isinstance(step, KeepAlive):
            waited = 0.0
            while waited < step.give_up_after and not self._stop.wait(step.interval):
                h.write_chunk(self._keepalive)  # BrokenPipe once the client has gone
                waited += step.interval
            raise _Abort
        if isinstance(step, Malformed):
            ndjson = self._content_type == "application/x-ndjson"
            self._emit(h, f"{step.line}\n" if ndjson else f"data: {step.line}\n\n")
            h.end_stream()
        elif step.abrupt:
            h.wfile.write(b"5\r\nabc")  # half a chunk, then the connection closes
            h.wfile.flush()
            raise _Abort
        else:
            h.end_stream()

    def _loop(self, h: _Handler, model: str, step: Looping) -> None:
        waited = 0.0
        while waited < step.give_up_after:
            for chunk in Reply(step.text).chunks():  # BrokenPipe once the client has gone
                h.write_chunk(self._text_event(model, chunk))
            if self._stop.wait(step.interval):
                break
            waited += step.interval
        with self._lock:
            self.loops_given_up += 1
        self._capped_end(h, model, 10_000)
        h.end_stream()

    @abstractmethod
    def _capped_end(self, h: _Handler, model: str, tokens: int) -> None:
        """How the server's stream ends when the reply hit the token cap (``Capped``)."""

    @abstractmethod
    def _interrupted_end(self, h: _Handler, model: str) -> None:
        """How the server's stream ends when it stops without a finish reason (``Interrupted``)."""

    def _emit(self, h: _Handler, text: str) -> None:
        if self.chunk_delay:
            self._pause(self.chunk_delay)
        h.write_chunk(text)

    def _usage(self, body: dict[str, Any], reply: Reply) -> tuple[int, int]:
        prompt = reply.prompt_tokens
        if prompt is None:  # the server's one count: the one its window enforces
            prompt = self.count_tokens(body)
        completion = reply.completion_tokens
        if completion is None:
            completion = estimate_tokens(reply.text) + sum(
                estimate_tokens(c.arguments_json()) for c in reply.calls()
            )
        return prompt, completion

    # --- per-format hooks: abstract, each wire format subclass defines them ----

    _stream_default = True
    _content_type = "application/json"
    _keepalive = "\n"  # what the format sends to keep a connection open without content

    @abstractmethod
    def _handle(self, h: _Handler, method: str, path: str, body: Any) -> None:
        """Route one request (chat, model list, show/props) in this server's format."""

    @abstractmethod
    def _error(
        self, h: _Handler, status: int, message: str, headers: dict[str, str] | None = None
    ) -> None:
        """Answer with an HTTP error status and the format's own error body."""

    @abstractmethod
    def _too_long(self, h: _Handler, prompt_tokens: int, window: int) -> None:
        """Answer the way the real server does for a prompt longer than its window."""

    @abstractmethod
    def _unknown_model(self, h: _Handler, model: str) -> None:
        """Answer the way the real server does for a model it does not have."""

    @abstractmethod
    def _text_event(self, model: str, text: str) -> str:
        """One streamed text piece, framed as the format frames it (NDJSON line or SSE event)."""

    @abstractmethod
    def _stream_reply(self, h: _Handler, body: dict[str, Any], reply: Reply) -> None:
        """Stream a scripted reply: text pieces, tool calls, usage, end marker."""

    @abstractmethod
    def _whole_reply(self, body: dict[str, Any], reply: Reply) -> Any:
        """The non-streaming response body for a scripted reply."""


def _estimated_prompt(body: dict[str, Any]) -> int:
    """The default prompt count: the bytes/4 estimate of every message's content."""
    return sum(
        estimate_tokens(str(m.get("content") or ""))
        for m in body.get("messages") or []
        if isinstance(m, dict)
    )


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000000Z", time.gmtime())
