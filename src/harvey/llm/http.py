"""Shared HTTP plumbing for the Ollama and OpenAI-compatible backends.

Two things live here so that the backends stay about their wire formats:

* **Error translation.** Every httpx exception and every HTTP error status is
  turned into a one-line ``BackendError`` subclass that names the endpoint and
  says what to do next. Nothing from httpx escapes this module.
* **Retries.** Transient failures (connect errors, HTTP 429 and 5xx) are retried
  with bounded exponential backoff. A retry only ever happens *before* a
  response has been accepted, so a caller never sees an event twice. The sleep
  function is injectable so tests exercise retries without sleeping.
* **TLS set up only when a request needs it** (``DeferredTLSTransport``).
  ``httpx.Client()`` builds an SSL context at once, and loading certifi's bundle
  costs 30-90 ms of a ``harvey run`` start against a local ``http://`` server
  that never uses it. The transport keeps two httpx transports and builds each on
  its first request: ``https://`` through one made exactly as httpx makes its
  default (same verification, bundle and environment), plain ``http://`` through
  one whose SSL context holds no certificate and still requires one, so a
  handshake through it could only fail, never trust; a redirect to ``https://``
  gets the verified one. With a proxy in the environment httpx builds its own.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.request import getproxies

import httpx

from harvey.errors import (
    BackendError,
    BackendHTTPError,
    BackendUnavailable,
    ModelNotFound,
    StreamError,
)
from harvey.llm import wire
from harvey.redact import redact

Sleep = Callable[[float], None]

BACKOFF_BASE = 0.5  # seconds before the first retry
BACKOFF_CAP = 8.0  # no single wait is longer than this
# What one answer may make Harvey hold: a JSON document (model lists, /api/show), and one
# line of a stream. A server that sends more is broken or hostile, not verbose.
MAX_JSON_BYTES = 32 * 1024 * 1024
MAX_LINE_BYTES = 16 * 1024 * 1024


def backoff_delay(attempt: int, retry_after: float | None = None) -> float:
    """Seconds to wait before retry number ``attempt`` (0-based).

    Deterministic (no jitter) so tests can assert the schedule. A server's
    ``Retry-After`` is honoured when it fits under the cap; a larger one is
    clamped, because Harvey prefers failing with a clear message to hanging.
    """
    if retry_after is not None and retry_after >= 0:
        return min(retry_after, BACKOFF_CAP)
    return float(min(BACKOFF_CAP, BACKOFF_BASE * (2**attempt)))


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None  # an HTTP date: not worth parsing for a bounded wait


@dataclass(frozen=True)
class Endpoint:
    """How to talk about one server in error messages."""

    label: str  # "Ollama", "the OpenAI-compatible server"
    base_url: str
    start_hint: str  # what to do when it cannot be reached
    model_hint: str = "run `harvey models` to list the models it offers"
    dropped_hint: str = "check its log"  # what to do when it closes a request unanswered

    @property
    def where(self) -> str:
        return f"{self.label} at {self.base_url}"


def error_detail(body: bytes) -> str:
    """The human part of an error body: Ollama's ``{"error": "..."}``,
    OpenAI's ``{"error": {"message": "..."}}``, or the first line of text.

    Redacted before it is shortened: servers echo the Authorization header
    back, and a key cut in half would no longer be recognised."""
    text = redact(body.decode("utf-8", errors="replace").strip())
    try:
        data = wire.loads(text)
    except ValueError:
        return text.splitlines()[0][:200] if text else ""
    if isinstance(data, dict):
        err = data.get("error", data.get("detail", data.get("message")))
        if isinstance(err, dict):
            err = err.get("message", err)
        if err is not None:
            return redact(str(err))[:200]
    return text[:200]


def status_error(endpoint: Endpoint, status: int, body: bytes, model: str | None) -> BackendError:
    """Translate an HTTP error status into the right BackendError."""
    from harvey.llm.too_long import too_long_error  # its patterns compile only once one fails

    detail = error_detail(body)
    suffix = f": {detail}" if detail else ""
    too_long = too_long_error(endpoint.where, detail, body) if status not in (401, 403) else None
    if too_long is not None:  # before the 5xx rule: retrying sends the same prompt
        return too_long
    if status == 404:
        if model is not None and "model" in detail.lower():
            return ModelNotFound(
                f"{endpoint.where} does not know model {model!r}{suffix} — {endpoint.model_hint}"
            )
        return BackendHTTPError(
            f"{endpoint.where} answered HTTP 404{suffix} — check the base URL "
            "(OpenAI-compatible servers usually need it to end in /v1)",
            status,
        )
    if status in (401, 403):
        hint = (
            "check the API key (OPENAI_API_KEY, or api_key or api_key_command "
            "in HARVEY_HOME/harvey.yaml)"
        )
    elif status == 429:
        hint = "the server is rate limiting; wait a moment and try again"
    elif status >= 500:
        hint = "the server failed; check its log, or retry"
    else:
        hint = "the server rejected the request"
    return BackendHTTPError(f"{endpoint.where} answered HTTP {status}{suffix} — {hint}", status)


def connect_error(endpoint: Endpoint, exc: Exception) -> BackendUnavailable:
    reason = "connection refused"
    text = str(exc).lower()
    if isinstance(exc, httpx.ConnectTimeout):
        reason = "connection timed out"
    elif "name or service" in text or "nodename" in text or "getaddrinfo" in text:
        reason = "host name not found"
    return BackendUnavailable(f"cannot reach {endpoint.where}: {reason} — {endpoint.start_hint}")


def dropped_error(endpoint: Endpoint) -> BackendUnavailable:
    """A server that was reached, took the request, and closed before any answer: not
    "cannot reach" (it was reached). Still transient: a kept-alive connection the server
    had already let go ends the same way, and a fresh one then answers."""
    return BackendUnavailable(
        f"{endpoint.where} closed the connection without answering — {endpoint.dropped_hint}"
    )


def timeout_error(endpoint: Endpoint, timeout: float) -> BackendUnavailable:
    err = BackendUnavailable(
        f"{endpoint.where} did not answer within {timeout:g}s — the model may still be "
        "loading or be too slow; raise `timeout` in harvey.yaml"
    )
    err.transient = False  # waiting that long again rarely helps
    return err


def server_root(base_url: str) -> str:
    """``http://h:8080/v1`` → ``http://h:8080`` (where llama.cpp serves /props and /slots)."""
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


class ProgressWatch:
    """A stream's read timeout as "no progress", not "no bytes".

    httpx's read timeout restarts on every byte, so a server that sends an SSE
    comment (``: ping``) or a blank line every few seconds and never a token
    would hold a turn forever. The stream parsers call ``progress()`` on every
    meaningful event (text, a tool-call fragment, reasoning, the end) and
    ``check()`` on everything else; ``check`` raises the usual timeout error
    once ``timeout`` seconds pass without progress. A server that goes silent
    altogether is still caught by httpx's own read timeout.
    """

    def __init__(
        self, endpoint: Endpoint, timeout: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.clock = clock
        self.last = clock()

    def progress(self) -> None:
        self.last = self.clock()

    def check(self) -> None:
        if self.clock() - self.last > self.timeout:
            raise timeout_error(self.endpoint, self.timeout)


MAX_REDIRECTS = 5


class HttpTransport:
    """An httpx client bound to one endpoint, with retries and translation."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        headers: dict[str, str] | None = None,
        timeout: float = 120.0,
        connect_timeout: float = 5.0,
        retries: int = 3,
        sleep: Sleep = time.sleep,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.retries = max(0, retries)
        self.sleep = sleep
        self._client = httpx.Client(
            headers={"accept-encoding": wire.ACCEPT_ENCODING, **(headers or {})},
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            transport=transport if transport is not None else default_transport(),
            follow_redirects=False,  # followed by hand, within the origin (``_follow``)
        )

    def close(self) -> None:
        self._client.close()

    def _follow(self, request: httpx.Request, response: httpx.Response) -> httpx.Response:
        """A redirect followed only within the endpoint's own origin (scheme, host and
        port): a server that redirects elsewhere would have the conversation — and, for a
        keyed endpoint, the key's host changed — re-sent to a place the user never named."""
        for _ in range(MAX_REDIRECTS):
            if not response.is_redirect or response.next_request is None:
                return response
            target = response.next_request
            response.close()
            if (target.url.scheme, target.url.host, target.url.port) != (
                request.url.scheme,
                request.url.host,
                request.url.port,
            ):
                raise BackendHTTPError(
                    f"{self.endpoint.where} redirected the request to another origin "
                    f"({target.url.scheme}://{target.url.host}); Harvey does not follow it, "
                    "since it would carry your conversation there — use that URL as base_url "
                    "if you trust it",
                    response.status_code,
                )
            response = self._client.send(target, stream=True)
        response.close()
        raise BackendHTTPError(
            f"{self.endpoint.where} redirected more than {MAX_REDIRECTS} times",
            response.status_code,
        )

    def _send(
        self,
        method: str,
        url: str,
        payload: Any,
        model: str | None,
        retries: int,
        timeout: float | None,
    ) -> httpx.Response:
        """Send with retries; returns an open, successful streaming response."""
        attempt = 0
        while True:
            err: BackendError
            retry_after: float | None = None
            try:
                kwargs: dict[str, Any] = {}
                if timeout is not None:  # a shorter read timeout; keep the connect one
                    kwargs["timeout"] = httpx.Timeout(timeout, connect=self._client.timeout.connect)
                request = self._client.build_request(method, url, json=payload, **kwargs)
                response = self._follow(request, self._client.send(request, stream=True))
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                err = connect_error(self.endpoint, exc)
                cause: Exception = exc
            except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
                err, cause = dropped_error(self.endpoint), exc  # a kept-alive one may be stale
            except httpx.TimeoutException as exc:
                raise timeout_error(self.endpoint, timeout or self.timeout) from exc
            except httpx.HTTPError as exc:
                raise BackendUnavailable(f"cannot reach {self.endpoint.where}: {exc}") from exc
            else:
                if response.status_code < 400:
                    return response
                try:  # its first line is wanted, never a bomb's whole inflation
                    body = wire.read_body(response, wire.ERROR_BODY_BYTES, cut=True)
                except (httpx.HTTPError, ValueError):
                    body = b""
                finally:
                    response.close()
                err = status_error(self.endpoint, response.status_code, body, model)
                retry_after = _retry_after(response)
                cause = err
            if not err.transient or attempt >= retries:
                if cause is err:
                    raise err
                raise err from cause
            self.sleep(backoff_delay(attempt, retry_after))
            attempt += 1

    def request_json(
        self,
        method: str,
        path: str,
        payload: Any = None,
        *,
        model: str | None = None,
        retries: int | None = None,
        timeout: float | None = None,
    ) -> Any:
        """One request whose answer is a JSON document."""
        url = self.url(path)
        response = self._send(
            method, url, payload, model, self.retries if retries is None else retries, timeout
        )
        try:
            body = self._read_bounded(response, path, timeout or self.timeout)
        except wire.EncodingRefused as exc:
            raise StreamError(f"{self.endpoint.where} answered {path} with {exc}") from exc
        except httpx.TimeoutException as exc:
            raise timeout_error(self.endpoint, timeout or self.timeout) from exc
        except httpx.HTTPError as exc:
            raise StreamError(f"{self.endpoint.where}: the answer was cut off ({exc})") from exc
        finally:
            response.close()
        try:
            return wire.loads(body)
        except ValueError as exc:
            raise StreamError(
                f"{self.endpoint.where} answered {path} with something that is not JSON "
                "— is the base URL right?"
            ) from exc

    def _read_bounded(self, response: httpx.Response, path: str, timeout: float) -> bytes:
        """The whole body, within ``timeout`` in all (a trickle of bytes is no answer) and
        ``MAX_JSON_BYTES`` once inflated."""
        watch = ProgressWatch(self.endpoint, timeout)
        parts: list[bytes] = []
        size = 0
        for piece in wire.decoded_pieces(response):
            parts.append(piece)
            size += len(piece)
            if size > MAX_JSON_BYTES:
                raise StreamError(
                    f"{self.endpoint.where} answered {path} with more than "
                    f"{MAX_JSON_BYTES:,} bytes — is the base URL right?"
                )
            watch.check()
        return b"".join(parts)

    def progress_watch(self) -> ProgressWatch:
        """A ``ProgressWatch`` for one stream from this endpoint, with its read timeout."""
        return ProgressWatch(self.endpoint, self.timeout)

    def stream_lines(self, path: str, payload: Any, *, model: str | None = None) -> Iterator[str]:
        """POST and yield the response body line by line as it arrives."""
        response = self._send("POST", self.url(path), payload, model, self.retries, None)
        try:
            yield from bounded_lines(wire.decoded_text(response), self.endpoint)
        except wire.EncodingRefused as exc:
            raise StreamError(f"{self.endpoint.where} streamed {exc}") from exc
        except httpx.TimeoutException as exc:
            raise timeout_error(self.endpoint, self.timeout) from exc
        except httpx.HTTPError as exc:
            raise StreamError(
                f"{self.endpoint.where}: the stream broke off ({type(exc).__name__}) — retry; "
                "if it keeps happening check the server's log"
            ) from exc
        finally:
            response.close()

    def url(self, path: str) -> str:
        if path.startswith(("http://", "https://")):
            return path
        return self.endpoint.base_url.rstrip("/") + "/" + path.lstrip("/")


def bounded_lines(texts: Iterable[str], endpoint: Endpoint) -> Iterator[str]:
    """Split streamed text into lines (LF, CRLF or CR, as SSE allows) without ever
    holding more than ``MAX_LINE_BYTES`` of an unfinished line: a server that never
    sends a newline would otherwise grow memory without bound."""
    pending = ""
    for text in texts:
        pending += text
        if pending.endswith("\r"):  # maybe half of a CRLF: decide with the next piece
            head, pending = pending[:-1], "\r"
        else:
            head, pending = pending, ""
        lines = head.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        pending = lines.pop() + pending
        yield from lines
        if len(pending) > MAX_LINE_BYTES // 4 and len(pending.encode()) > MAX_LINE_BYTES:
            raise StreamError(
                f"{endpoint.where} sent a stream line longer than "
                f"{MAX_LINE_BYTES:,} bytes — is the base URL right?"
            )
    if pending.endswith("\r"):  # a CR at the very end still ended its line
        yield pending[:-1]
    elif pending:
        yield pending


def malformed(endpoint: Endpoint, line: str) -> StreamError:
    line = redact(line)  # before shortening, so a half key is never shown
    shown = line if len(line) <= 60 else line[:57] + "..."
    return StreamError(
        f"{endpoint.where} sent a malformed stream line {shown!r} — is the base URL pointing "
        "at the right kind of server?"
    )


# -- the transport -----------------------------------------------------------


class DeferredTLSTransport(httpx.BaseTransport):
    """httpx's default transport, with the certificate bundle loaded on the first https request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._plain: httpx.HTTPTransport | None = None
        self._tls: httpx.HTTPTransport | None = None
        self._closed = False

    def _transport(self, secure: bool) -> httpx.HTTPTransport:
        with self._lock:
            if self._closed:
                raise RuntimeError("the transport was closed")  # as httpcore's pool would
            if secure:
                if self._tls is None:
                    self._tls = httpx.HTTPTransport()
                return self._tls
            if self._plain is None:
                # Never used for a handshake (the scheme is http); if it were, it would refuse.
                self._plain = httpx.HTTPTransport(verify=ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))
            return self._plain

    @property
    def tls_ready(self) -> bool:
        """Whether the verified transport (and its certificate bundle) has been built."""
        return self._tls is not None

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._transport(request.url.scheme == "https").handle_request(request)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            transports = [t for t in (self._plain, self._tls) if t is not None]
        for transport in transports:
            transport.close()


def default_transport() -> httpx.BaseTransport | None:
    """A ``DeferredTLSTransport``, or None (httpx's own default) when the environment names
    a proxy: httpx reads proxies from the environment only when given no transport, and
    that must stay so."""
    if any(scheme != "no" for scheme in getproxies()):
        return None
    return DeferredTLSTransport()
