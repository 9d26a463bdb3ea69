"""The REPL's banner asks only what it shows: a model whose tool support is unknown is
probed by the first turn, not before the first prompt appears."""

from __future__ import annotations

from pathlib import Path

import pytest

from harvey.chat.runtime import open_runtime
from harvey.config.settings import Paths, Settings
from harvey.repl.status import banner_line
from harvey.ui import HeadlessUI
from tests.fakes.servers import FakeOpenAI, Reply

pytestmark = pytest.mark.usefixtures("tool_probe_on")


def test_the_banner_makes_no_probe_and_the_first_turn_does(tmp_path: Path) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    probe = Reply("It is usually mild in Paris in spring.")  # prose: no tool calls
    with FakeOpenAI([probe, Reply("hello")], props=False) as srv:  # no template shown
        settings = Settings.model_validate(
            {"backend": "openai", "base_url": srv.url, "model": "m", "api_key": "k"}
        )
        runtime = open_runtime(
            Paths(workspace, home, workspace / "harvey.yaml"), settings, ui=HeadlessUI(),
            record=False,
        )  # fmt: skip
        try:
            assert banner_line(runtime.agent).startswith("openai · m · context ")
            assert srv.chat_requests == []  # nothing asked of the model yet
            assert runtime.agent.turn("hi").reply == "hello"
        finally:
            runtime.close()
        probe_request, turn = srv.chat_requests
    assert "tools" in probe_request and turn["messages"][-1]["content"] == "hi"
