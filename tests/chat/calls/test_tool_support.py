"""Tool support found out, not assumed: the server's template, else one cached probe call.

Against loopback servers that answer the probe as models do (a native call, the call
written as text, prose), the cache in ``HARVEY_HOME`` reused by a later run, a corrupt
or planted cache treated as absent, and the probe never made when ``tools.mode`` says.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from harvey.chat.calls import tool_support
from harvey.chat.calls.tool_choice import resolve_tool_mode
from harvey.chat.calls.tool_support import CACHE_FILE, ToolSupport
from harvey.config.settings import ToolsSettings
from harvey.llm.openai import OpenAIClient
from tests.fakes.base import HTTPFailure, Slow
from tests.fakes.llamacpp import FakeLlamaCpp
from tests.fakes.servers import FakeOpenAI, Reply
from tests.harvey_process import invoke_harvey

NATIVE = Reply(tool_calls=[("get_weather", {"city": "Paris"})])
AS_TEXT = Reply('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>')
PROSE = Reply("It is usually mild in Paris in spring.")


pytestmark = pytest.mark.usefixtures("tool_probe_on")


def _resolve(url: str, home: Path, tools: ToolsSettings | None = None) -> ToolSupport:
    client = OpenAIClient(url, "fake-model", retries=0, timeout=10)
    try:
        return resolve_tool_mode(tools or ToolsSettings(), client, client.capabilities, home=home)
    finally:
        client.close()


def _cache(home: Path) -> Path:
    return home / "cache" / CACHE_FILE


@pytest.mark.parametrize(("reply", "mode"), [(NATIVE, "native"), (AS_TEXT, "text"), (PROSE, "off")])
def test_the_probe_reads_the_answer_and_a_second_run_reuses_it(
    tmp_path: Path, reply: Reply, mode: str
) -> None:
    with FakeOpenAI([reply], props=False) as srv:  # a server that shows no template
        assert _resolve(srv.url, tmp_path) == ToolSupport(mode, "probe")
        tool_support.forget()  # as a new process would start
        assert _resolve(srv.url, tmp_path) == ToolSupport(mode, "probe (cached)")
        (probe,) = srv.chat_requests  # one probe, not two
    assert [t["function"]["name"] for t in probe["tools"]] == ["get_weather"]
    assert stat.S_IMODE(os.stat(_cache(tmp_path)).st_mode) == 0o600


def test_a_template_is_taken_at_its_word(tmp_path: Path) -> None:
    with FakeLlamaCpp() as srv:
        srv.chat_template = "{% for m in messages %}{{ m.content }}{% endfor %}"
        assert _resolve(srv.url, tmp_path) == ToolSupport("off", "template")
        assert srv.calls == 0
    assert not _cache(tmp_path).exists()


@pytest.mark.parametrize(
    ("tools", "expected"),
    [
        (ToolsSettings(mode="native"), ToolSupport("native", "tools.mode (config)")),
        (
            ToolsSettings(models={"fake-model": "text"}),
            ToolSupport("text", "tools.models (config)"),
        ),
        (ToolsSettings(enabled=False), ToolSupport("off", "tools.enabled (config)")),
    ],
)
def test_an_explicit_mode_makes_no_probe(
    tmp_path: Path, tools: ToolsSettings, expected: ToolSupport
) -> None:
    with FakeOpenAI(props=False) as srv:
        assert _resolve(srv.url, tmp_path, tools) == expected
        assert srv.requests == []  # not even the capabilities


def test_no_probe_while_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARVEY_TOOL_PROBE", "0")
    with FakeOpenAI(props=False) as srv:
        assert _resolve(srv.url, tmp_path) == ToolSupport("native", "assumed")
        assert srv.chat_requests == []


@pytest.mark.parametrize(
    "content",
    [b"{not json", b'{"entries": []}', b'{"entries": {"x": {"mode": "sure"}}}', b"\xff\xfe"],
)
def test_a_corrupt_cache_is_treated_as_absent(tmp_path: Path, content: bytes) -> None:
    with FakeOpenAI([PROSE], props=False) as srv:
        key = f"openai {srv.url} fake-model"
        if content.startswith(b'{"entries": {"x"'):
            content = content.replace(b'"x"', json.dumps(key).encode())
        _cache(tmp_path).parent.mkdir(mode=0o700)
        _cache(tmp_path).write_bytes(content)
        assert _resolve(srv.url, tmp_path) == ToolSupport("off", "probe")
        assert len(srv.chat_requests) == 1
    entries = json.loads(_cache(tmp_path).read_text())["entries"]
    assert entries[key]["mode"] == "off"  # rewritten whole, valid


def test_a_cache_folder_planted_as_a_link_is_not_followed(tmp_path: Path) -> None:
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    (home / "cache").symlink_to(elsewhere)
    with FakeOpenAI([NATIVE, NATIVE], props=False) as srv:
        key = f"openai {srv.url} fake-model"
        seeded = {"entries": {key: {"mode": "off", "checked": 4e9, "note": ""}}}
        (elsewhere / CACHE_FILE).write_text(json.dumps(seeded))
        assert _resolve(srv.url, home) == ToolSupport("native", "probe")  # not the seed
    assert json.loads((elsewhere / CACHE_FILE).read_text()) == seeded  # nor written through


def test_an_old_answer_is_asked_again(tmp_path: Path) -> None:
    with FakeOpenAI([PROSE, NATIVE], props=False) as srv:
        assert _resolve(srv.url, tmp_path).mode == "off"
        data = json.loads(_cache(tmp_path).read_text())
        for entry in data["entries"].values():
            entry["checked"] -= tool_support.MAX_AGE + 1
        _cache(tmp_path).write_text(json.dumps(data))
        tool_support.forget()
        assert _resolve(srv.url, tmp_path) == ToolSupport("native", "probe")
        assert len(srv.chat_requests) == 2


def test_a_failed_or_slow_probe_assumes_native_and_is_not_repeated_soon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tool_support, "PROBE_TIMEOUT", 0.3)
    with FakeOpenAI([Slow(3, NATIVE)], props=False) as slow:
        found = _resolve(slow.url, tmp_path)
    assert found.mode == "native" and found.source.startswith("assumed (the probe failed")
    with FakeOpenAI([HTTPFailure(400, "no tools here")], props=False) as srv:
        assert _resolve(srv.url, tmp_path).source.startswith("assumed (the probe failed")
        tool_support.forget()
        assert _resolve(srv.url, tmp_path).source.endswith("(cached)")
        assert len(srv.chat_requests) == 1


def test_a_slow_answer_in_words_is_tool_less_not_a_failed_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow model still writing prose at the deadline answered without the tool: off,
    not "the probe failed" (which would assume native)."""
    from tests.fakes.servers import Looping

    monkeypatch.setattr(tool_support, "PROBE_TIMEOUT", 0.6)
    words = Looping("Paris is lovely in spring; the weather varies a lot. ", interval=0.05)
    with FakeOpenAI([words], props=False) as srv:
        assert _resolve(srv.url, tmp_path) == ToolSupport("off", "probe")


def test_models_shows_the_probe_and_a_run_attaches_the_named_file(tmp_path: Path) -> None:
    """llama-cpp-python's server shows no template: the probe finds a model that does not
    call tools, ``harvey models`` says so, and ``harvey run`` attaches the file instead."""
    (tmp_path / "notes.md").write_text("Boiler serviced on 3 March 2026.\n")
    backend = ("--backend", "openai", "--base-url")
    with FakeOpenAI([PROSE, Reply("On 3 March 2026.")], props=False, owned_by="me") as srv:
        models = invoke_harvey("models", *backend, srv.url, cwd=tmp_path)
        tool_support.forget()  # the run is another process: it reads the cache
        run = invoke_harvey("run", "When was the boiler serviced? See notes.md.", *backend,
                            srv.url, cwd=tmp_path)  # fmt: skip
        probe, answer = srv.chat_requests
    assert "tools: off (probe)" in models.stderr, models.stderr
    assert run.returncode == 0, run.stderr
    assert "tools" in probe and "tools" not in answer
    assert "3 March 2026" in answer["messages"][-1]["content"]
