"""Start fast: each command imports only what it uses (checked by module, never by the clock).

Each check runs in a fresh interpreter, since this test process has imported
everything long ago. ``bench/bench_startup.py`` measures the time these
imports would cost.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.servers import FakeOpenAI

# Never needed before a command that uses them runs.
HEAVY = (
    "tree_sitter",
    "tree_sitter_language_pack",
    "llama_cpp",
    "prompt_toolkit",
    "pygments",
    "ray",
    "regex",  # search_files' engine, imported by the first search
    "ctypes",  # the Landlock probe, run before the first confined command
)


def modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    script = (
        "import json, sys\n"
        f"{code}\n"
        "sys.stdout.flush()\n"
        "sys.__stderr__.write('\\nMODULES ' + json.dumps(sorted(sys.modules)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    return set(json.loads(proc.stderr.rsplit("MODULES ", 1)[1]))


def loaded(modules: set[str], *names: str) -> list[str]:
    """The modules of these packages that were imported (the empty ``httpx._main``
    the command line puts in place is not httpx being imported)."""
    return sorted(
        m for m in modules if (m.split(".")[0] in names or m in names) and m != "httpx._main"
    )


def test_help_loads_no_settings_agent_backend_or_ui() -> None:
    modules = modules_after(
        "from harvey.cli import main\n"
        "try:\n    main(['--help'], prog_name='harvey')\nexcept SystemExit:\n    pass"
    )
    assert "harvey.cli.app" in modules  # the check ran the real group
    assert not loaded(modules, *HEAVY, "pydantic", "httpx", "yaml", "rich")
    assert (
        not {"harvey.config.settings", "harvey.chat.agent", "harvey.chat.runtime", "harvey.repl"}
        & modules
    )
    assert "importlib.metadata" not in modules  # __version__ is read only for --version


def test_one_shot_run_loads_no_repl_chunker_or_markdown(tmp_path: Path) -> None:
    """A whole ``harvey run`` turn against a loopback server, then what it loaded."""
    with FakeOpenAI(default_reply="hello") as srv:
        modules = modules_after(
            "import os\n"
            f"os.environ['HARVEY_HOME'] = {str(tmp_path / 'home')!r}\n"
            f"os.chdir({str(tmp_path)!r})\n"
            "from harvey.cli import main\n"
            "try:\n"
            "    main(['run', 'hi', '--backend', 'openai', '--base-url', "
            f"{srv.url!r}, '--model', 'fake-model'], prog_name='harvey')\n"
            "except SystemExit as exc:\n"
            "    assert exc.code == 0, exc.code"
        )
        assert len(srv.chat_requests) == 1  # the turn really ran
    assert "harvey.chat.runtime" in modules and "httpx._client" in modules
    assert not loaded(modules, *HEAVY, "rich", "markdown_it", "yaml")  # no harvey.yaml to read
    # the progress bar (harvey/repl/progress.py) may load; the REPL itself does not
    assert not {"harvey.repl.loop", "harvey.chat.oversize", "harvey.analysis.engine"} & modules
    assert not loaded(modules, "prompt_toolkit")


def test_httpx_works_without_its_command_line_tool() -> None:
    """A ``harvey`` command keeps httpx from importing its CLI; httpx itself is whole."""
    untouched = modules_after("import harvey.cli, httpx")
    assert "httpx._main" in untouched and "rich" in untouched  # what httpx does on its own
    modules = modules_after(
        "from harvey.cli import main\n"
        "main(['doctor'], standalone_mode=False)\n"
        "import httpx\n"
        "assert callable(httpx.main) and httpx.Client().base_url == httpx.URL('')"
    )
    assert "httpx._client" in modules and not loaded(modules, "rich", "pygments")


@pytest.mark.parametrize("module", ["harvey.repl.loop", "harvey.repl.commands"])
def test_the_repl_defers_markdown_and_the_chunker_backends(module: str) -> None:
    modules = modules_after(f"import {module}")
    assert "prompt_toolkit" in modules  # the REPL does use it
    assert not loaded(modules, "tree_sitter", "tree_sitter_language_pack", "llama_cpp")
    assert "rich.markdown" not in modules


def test_the_package_root_is_lazy_and_complete() -> None:
    """``import harvey`` imports nothing of its own; every name in ``__all__`` resolves."""
    modules = modules_after("import harvey")
    assert not [m for m in modules if m.startswith("harvey.")]
    modules = modules_after(
        "import harvey\n"
        "missing = [n for n in harvey.__all__ if getattr(harvey, n, None) is None]\n"
        "assert not missing, missing\n"
        "assert set(harvey.__all__) <= set(dir(harvey))"
    )
    assert "harvey.session.fountain" in modules
