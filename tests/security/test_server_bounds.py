"""A hostile model server: every answer it sends is read within a bound, and every
failure is one line — compression bombs, JSON nested past any use, encodings never
offered — through the transport, the probes and the real ``harvey run``."""

from __future__ import annotations

import json
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harvey.errors import BackendError, BackendHTTPError, StreamError
from harvey.llm.factory import probe_ollama
from harvey.llm.http import Endpoint, HttpTransport
from harvey.llm.pool_probe import probe_endpoint
from harvey.messages import Message
from tests.cli.conftest import assert_one_line_error
from tests.fakes.hostile import Canned, HostileServer, gzip_bomb, nested
from tests.harvey_process import run_harvey

GZIP = {"content-type": "application/json", "content-encoding": "gzip"}
SSE_GZIP = {"content-type": "text/event-stream", "content-encoding": "gzip"}
#: Inflated whole, the bomb would hold this much; read by Harvey, a few pieces of it.
BOMB_MB = 256
HELD_MB = 128  # MAX_JSON_BYTES (32 MB) joined once, with room: far under BOMB_MB


@pytest.fixture(scope="module")
def bomb() -> bytes:
    return gzip_bomb(BOMB_MB)


def _transport(srv: HostileServer) -> HttpTransport:
    return HttpTransport(Endpoint("the hostile server", srv.url, "stop it"), retries=0)


def _peak_mb(action: Callable[[], object]) -> float:
    tracemalloc.start()
    try:
        action()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak / (1 << 20)


def _raises(kind: type[Exception], action: Callable[[], object]) -> Callable[[], None]:
    def run() -> None:
        with pytest.raises(kind) as caught:
            action()
        assert "\n" not in str(caught.value)

    return run


@pytest.mark.parametrize("status", [400, 500])
def test_a_gzip_bomb_as_an_error_body_is_read_for_its_first_line_only(
    bomb: bytes, status: int
) -> None:
    with HostileServer({"/v1/chat/completions": Canned(bomb, status, GZIP)}) as srv:
        transport = _transport(srv)
        call = _raises(BackendHTTPError, lambda: transport.request_json("POST", "/chat/completions", {}))  # fmt: skip
        assert _peak_mb(call) < 8
        transport.close()


def test_a_gzip_bomb_as_a_json_answer_stops_at_the_json_limit(bomb: bytes) -> None:
    with HostileServer({"/v1/models": Canned(bomb, 200, GZIP)}) as srv:
        transport = _transport(srv)
        call = _raises(StreamError, lambda: transport.request_json("GET", "/models"))
        assert _peak_mb(call) < HELD_MB
        transport.close()


def test_a_gzip_bomb_as_a_stream_stops_at_the_line_limit(bomb: bytes) -> None:
    def read() -> None:
        for _ in transport.stream_lines("/chat/completions", {}):
            pass

    with HostileServer({"/v1/chat/completions": Canned(bomb, 200, SSE_GZIP)}) as srv:
        transport = _transport(srv)
        assert _peak_mb(_raises(StreamError, read)) < HELD_MB
        transport.close()


def test_a_streamed_bomb_of_lines_is_inflated_piece_by_piece() -> None:
    """Newlines inflate into many small lines: each is read as it comes, none held."""
    lines = zlib.compress(b"data: {}\n\n" * (10 << 20), 9)
    deflate = {"content-type": "text/event-stream", "content-encoding": "deflate"}
    seen = 0

    def read() -> None:
        nonlocal seen
        for _ in transport.stream_lines("/chat/completions", {}):
            seen += 1
            if seen == 1_000_000:
                break

    with HostileServer({"/v1/chat/completions": Canned(lines, 200, deflate)}) as srv:
        transport = _transport(srv)
        assert _peak_mb(read) < 32
        transport.close()
    assert seen == 1_000_000


@pytest.mark.parametrize("encoding", ["br", "zstd", "compress", "gzip, gzip", "x-unknown"])
def test_an_encoding_harvey_did_not_offer_is_refused_in_one_line(encoding: str) -> None:
    headers = {"content-type": "application/json", "content-encoding": encoding}
    with HostileServer({"/v1/models": Canned(b'{"data": []}', 200, headers)}) as srv:
        transport = _transport(srv)
        with pytest.raises(StreamError, match=r"did not ask for|encoded 2 times"):
            transport.request_json("GET", "/models")
        transport.close()


def test_a_body_that_does_not_inflate_is_one_line() -> None:
    with HostileServer({"/v1/models": Canned(b"not gzip at all", 200, GZIP)}) as srv:
        transport = _transport(srv)
        with pytest.raises(StreamError, match="does not inflate"):
            transport.request_json("GET", "/models")
        transport.close()


@pytest.mark.parametrize("wbits", [zlib.MAX_WBITS, -zlib.MAX_WBITS])
def test_deflate_either_way_servers_send_it_is_read(wbits: int) -> None:
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    body = packer.compress(b'{"data": [{"id": "m"}]}') + packer.flush()
    headers = {"content-type": "application/json", "content-encoding": "deflate"}
    with HostileServer({"/v1/models": Canned(body, 200, headers)}) as srv:
        transport = _transport(srv)
        assert transport.request_json("GET", "/models") == {"data": [{"id": "m"}]}
        transport.close()


DEEP = nested(100_000)


@pytest.mark.parametrize(
    ("route", "canned", "kind"),
    [
        ("/v1/models", Canned(DEEP), StreamError),
        ("/v1/models", Canned(nested(65)), StreamError),
        ("/v1/chat/completions", Canned(b'{"error": ' + DEEP + b"}", 400), BackendHTTPError),
    ],
)  # fmt: skip
def test_json_nested_past_any_use_is_not_json(
    route: str, canned: Canned, kind: type[BackendError]
) -> None:
    with HostileServer({route: canned}) as srv:
        transport = _transport(srv)
        with pytest.raises(kind) as caught:
            transport.request_json("POST", route.removeprefix("/v1"), {})
        assert "\n" not in str(caught.value)
        transport.close()


def test_a_stream_chunk_nested_past_any_use_is_a_malformed_line() -> None:
    def chunks() -> Iterator[bytes]:
        yield b"data: " + DEEP + b"\n\n"

    sse = {"content-type": "text/event-stream"}
    with HostileServer({"/v1/chat/completions": Canned(chunks, 200, sse)}) as srv:
        from harvey.llm.openai import OpenAIClient

        client = OpenAIClient(srv.url, "m", context_window=4096, retries=0)
        with pytest.raises(StreamError, match="malformed stream line"):
            list(client.stream_chat([Message("user", "hi")]))


def test_the_probes_treat_a_hostile_answer_as_no_answer(bomb: bytes) -> None:
    routes = {
        "/slots": Canned(DEEP),
        "/v1/models": Canned(bomb, 200, GZIP),
        "/api/tags": Canned(nested(5_000)),
        "/health": Canned(b"{}"),
    }
    with HostileServer(routes) as srv:
        root = srv.url.removesuffix("/v1")
        result = probe_endpoint(srv.url, "openai", timeout=10)
        assert result.health == "ok" and result.slots is None and result.models is None
        assert probe_ollama(root, timeout=10) is None
        assert probe_endpoint(root, "ollama", timeout=10).models is None


@pytest.mark.parametrize(
    "routes",
    [
        {"/props": Canned(DEEP), "/v1/chat/completions": Canned(DEEP, 400)},
        {"/v1/chat/completions": Canned(b'{"error": {"message": ' + DEEP + b"}}", 400)},
        {"/v1/chat/completions": Canned(gzip_bomb(64), 400, GZIP)},
        {"/props": Canned(b"\0" * 1000, 200, {"content-encoding": "br"}),
         "/v1/chat/completions": Canned(b"data: " + DEEP + b"\n\n", 200,
                                        {"content-type": "text/event-stream"})},
    ],
    ids=["deep-props-and-error", "deep-error-message", "bomb-error", "stream-chunk"],
)  # fmt: skip
def test_harvey_run_against_a_hostile_server_is_one_line(
    routes: dict[str, Canned], victim_workspace: Path
) -> None:
    with HostileServer(routes) as srv:
        proc = run_harvey(
            "run", "hi", "--backend", "openai", "--base-url", srv.url, "--model", "m",
            cwd=victim_workspace,
        )  # fmt: skip
    assert_one_line_error(proc, proc.returncode, "127.0.0.1")
    assert proc.returncode != 0


@pytest.mark.parametrize(
    "model_info",
    [{"llama.context_length": -5}, {"llama.context_length": 10**30}, {"x.context_length": "8k"},
     ["not", "a", "mapping"], {"llama.context_length": 0}],
)  # fmt: skip
def test_an_ollama_window_no_request_can_have_is_not_believed(model_info: object) -> None:
    from harvey.llm.ollama import FALLBACK_CONTEXT, OllamaClient

    show = json.dumps({"model_info": model_info, "capabilities": ["completion"]}).encode()
    with HostileServer({"/api/show": Canned(show)}) as srv:
        client = OllamaClient(srv.url.removesuffix("/v1"), "m", retries=0)
        assert client.capabilities().context_window == FALLBACK_CONTEXT


def test_a_deflate_stream_of_empty_blocks_is_refused_not_read_forever() -> None:
    """An empty stored block is five bytes that inflate to nothing: a stream of them
    reaches no limit counted on inflated bytes and no line a progress check sees."""
    empty_block = b"\x00\x00\x00\xff\xff"  # BFINAL=0, BTYPE=00, LEN=0, NLEN=0xffff

    def chunks() -> Iterator[bytes]:
        while True:  # until Harvey hangs up
            yield empty_block * 10_000

    headers = {"content-type": "text/event-stream", "content-encoding": "deflate"}
    with HostileServer({"/v1/chat/completions": Canned(chunks, 200, headers)}) as srv:
        transport = _transport(srv)
        with pytest.raises(StreamError, match="inflate to nothing"):
            for _ in transport.stream_lines("/chat/completions", {}):
                pass
        transport.close()
