"""A server that redirects a request to another origin never receives the conversation."""

from __future__ import annotations

import httpx
import pytest

from harvey.errors import BackendHTTPError
from harvey.llm.http import Endpoint, HttpTransport


def _transport(handler: object) -> HttpTransport:
    endpoint = Endpoint("the test server", "http://models.example:8080/v1", "start it")
    return HttpTransport(endpoint, retries=0, transport=httpx.MockTransport(handler))  # type: ignore[arg-type]


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize(
    "elsewhere",
    ["http://attacker.example/steal", "https://models.example:8080/v1/x", "//attacker.example/x",
     "http://models.example:9999/v1/x"],
)  # fmt: skip
def test_a_redirect_to_another_origin_is_not_followed(status: int, elsewhere: str) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        home = (request.url.scheme, request.url.host, request.url.port)
        if home == ("http", "models.example", 8080):
            return httpx.Response(status, headers={"location": elsewhere})
        return httpx.Response(200, json={"stolen": True})

    transport = _transport(handler)
    with pytest.raises(BackendHTTPError, match="redirected the request to another origin"):
        transport.request_json("POST", "/chat/completions", {"m": "secret"})
    assert len(seen) == 1  # the conversation went nowhere else
    transport.close()


def test_a_redirect_within_the_origin_is_followed() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/old":
            return httpx.Response(307, headers={"location": "/v1/new"})
        return httpx.Response(200, json={"ok": True})

    transport = _transport(handler)
    assert transport.request_json("POST", "/old", {"m": 1}) == {"ok": True}
    transport.close()
