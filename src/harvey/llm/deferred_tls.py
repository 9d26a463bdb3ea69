"""An httpx transport that sets up TLS only when a request needs it.

``httpx.Client()`` builds its transport at once, and that transport builds an
SSL context at once: loading certifi's certificate bundle costs 30-90 ms, the
largest single cost of a ``harvey run`` start against a local server, which is
plain ``http://`` and never uses it. This transport keeps two httpx transports
and builds each on its first request: ``https://`` requests go through one made
exactly as httpx makes its default (same verification, same bundle, same
environment), plain ``http://`` requests through one whose SSL context holds no
certificate at all and still requires one, so a TLS handshake through it could
only fail, never trust. A redirect to ``https://`` therefore gets the usual
verified transport. When the environment names a proxy, the client gets no
transport from here and builds httpx's own (it reads proxies only then).
"""

from __future__ import annotations

import ssl
import threading
from urllib.request import getproxies

import httpx


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
