"""The HTTP transport loads the certificate bundle only for an https request.

Checked by behaviour against a real loopback server: a plain-http call works
and leaves TLS unbuilt; an https call builds the verified transport (the same
one httpx would build) and so fails against a plain server; a proxy in the
environment hands the choice back to httpx.
"""

from __future__ import annotations

import ssl

import httpx
import pytest

from harvey.errors import BackendUnavailable
from harvey.llm import http
from harvey.llm.http import DeferredTLSTransport, default_transport
from tests.fakes.openai import FakeOpenAI


def endpoint(url: str) -> http.Endpoint:
    return http.Endpoint("the OpenAI-compatible server", url, "start it")


@pytest.fixture(autouse=True)
def _no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for scheme in ("http", "https", "all", "no"):
        for name in (f"{scheme}_proxy", f"{scheme.upper()}_PROXY"):
            monkeypatch.delenv(name, raising=False)


def test_plain_http_works_without_building_tls() -> None:
    with FakeOpenAI(models=["m"]) as srv:
        transport = http.HttpTransport(endpoint(srv.url), retries=0)
        deferred = transport._client._transport
        assert isinstance(deferred, DeferredTLSTransport)
        try:
            data = transport.request_json("GET", srv.url + "/models")
        finally:
            transport.close()
    assert data["data"][0]["id"] == "m"
    assert not deferred.tls_ready


def test_https_gets_the_verified_transport() -> None:
    with FakeOpenAI(models=["m"]) as srv:
        secure = srv.url.replace("http://", "https://")
        transport = http.HttpTransport(endpoint(secure), retries=0, connect_timeout=2.0)
        deferred = transport._client._transport
        assert isinstance(deferred, DeferredTLSTransport)
        try:
            with pytest.raises(BackendUnavailable):  # a TLS handshake with a plain server
                transport.request_json("GET", secure + "/models")
        finally:
            transport.close()
    assert deferred.tls_ready
    tls = deferred._tls
    assert tls is not None
    context = tls._pool._ssl_context
    assert context is not None and context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname and context.cert_store_stats()["x509_ca"] > 0


def test_the_plain_side_could_never_trust_a_certificate() -> None:
    transport = DeferredTLSTransport()
    try:
        plain = transport._transport(secure=False)
        context = plain._pool._ssl_context
        assert context is not None and context.verify_mode == ssl.CERT_REQUIRED
        assert context.cert_store_stats()["x509_ca"] == 0
    finally:
        transport.close()
    with pytest.raises(RuntimeError):
        transport.handle_request(httpx.Request("GET", "http://127.0.0.1:9/"))


def test_a_proxy_in_the_environment_keeps_httpx_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(default_transport(), DeferredTLSTransport)
    monkeypatch.setenv("https_proxy", "http://127.0.0.1:9")
    assert default_transport() is None
    client = http.HttpTransport(endpoint("http://127.0.0.1:9/v1"), retries=0)
    try:
        assert isinstance(client._client._transport, httpx.HTTPTransport)
        assert client._client._mounts  # httpx read the proxy from the environment
    finally:
        client.close()


def test_no_proxy_alone_still_defers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("no_proxy", "localhost")
    assert isinstance(default_transport(), DeferredTLSTransport)


def test_a_server_that_takes_the_request_and_resets_is_not_unreachable() -> None:
    """Accepted, read, then reset (what llama-cpp-python's server does with a prompt longer
    than its window): said as what happened, asked again as often as the settings say (a
    stale kept-alive connection ends the same way), never "cannot reach"."""
    import socket
    import struct
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    accepted: list[int] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(1)
            conn.recv(65536)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()  # a reset, not a clean end

    threading.Thread(target=serve, daemon=True).start()
    transport = http.HttpTransport(endpoint(f"http://127.0.0.1:{port}/v1"), retries=1)
    try:
        with pytest.raises(BackendUnavailable) as caught:
            list(transport.stream_lines("/chat/completions", {"stream": True}))
    finally:
        transport.close()
        listener.close()
    assert str(caught.value).endswith("closed the connection without answering — check its log")
    assert accepted == [1, 1]
