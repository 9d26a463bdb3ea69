"""Suite-wide fixtures: every test gets its own HARVEY_HOME and no stray env."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

ENV_VARS = (
    "HARVEY_HOME",
    "HARVEY_BACKEND",
    "HARVEY_MODEL",
    "HARVEY_BASE_URL",
    "HARVEY_USER",
    "OLLAMA_HOST",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "HARVEY_DEBUG",
    "HARVEY_SCRIPT",
)


@pytest.fixture(autouse=True)
def isolated_env(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("harvey-home")
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HARVEY_HOME", str(home))
    monkeypatch.setenv("USER", "tester")
    # Nothing answers here, so backend "auto" never finds a stray Ollama.
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:9")
    yield home
