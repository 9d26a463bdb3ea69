"""``--executor ray`` refused in one line, before anything is written; the default path never
imports Ray. No Ray instance is started here."""

from __future__ import annotations

import os
import socket
import sqlite3
from pathlib import Path

import pytest

from tests.analysis.cluster.conftest import write_doc
from tests.cli.conftest import Run, assert_one_line_error
from tests.cli.test_startup import loaded, modules_after
from tests.fakes.llamacpp import FakeLlamaCpp

BLOCK_RAY = """\
import sys

class _NoRay:
    '''Ray as it is on a base install: not there.'''

    def find_spec(self, name, path=None, target=None):
        if name == "ray" or name.startswith("ray."):
            raise ModuleNotFoundError("No module named 'ray'", name=name)
        return None

sys.meta_path.insert(0, _NoRay())
"""


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _analyze(harvey: Run, *args: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return harvey(
        "analyze", "doc.md", "-i", "Summarise", "--backend", "openai", "--base-url",
        "http://127.0.0.1:9/v1", "--chunk-size", "1000", "--yes", *args, env=env,
    )  # fmt: skip


def _nothing_written(workspace: Path) -> None:
    """No session in sessions.db (if it exists at all) and no session file."""
    db = Path(os.environ["HARVEY_HOME"]) / "sessions.db"
    if db.exists():
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 0
            assert conn.execute("SELECT COUNT(*) FROM map_results").fetchone()[0] == 0
    assert not list(workspace.glob(".harvey/**/*.spmd"))


def test_without_ray_installed_one_line_names_the_extra(
    harvey: Run, workspace: Path, tmp_path: Path
) -> None:
    write_doc(workspace)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCK_RAY)
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    proc = _analyze(harvey, "--executor", "ray", env=env)
    assert_one_line_error(proc, 1, "needs Ray", "pip install 'harvey-agent[ray]'")
    _nothing_written(workspace)


def test_an_unreachable_cluster_is_one_line_and_nothing_is_half_written(
    harvey: Run, workspace: Path
) -> None:
    write_doc(workspace)
    port = _closed_port()
    proc = _analyze(harvey, "--executor", "ray", "--ray-address", f"127.0.0.1:{port}")
    assert_one_line_error(proc, 1, f"cannot reach the Ray cluster at 127.0.0.1:{port}")
    _nothing_written(workspace)


@pytest.mark.slow
def test_the_executor_can_come_from_harvey_yaml(
    harvey: Run, workspace: Path, isolated_env: Path
) -> None:
    write_doc(workspace)
    port = _closed_port()
    # Joining a cluster widens what Harvey does: the user's own file may say so.
    (isolated_env / "harvey.yaml").write_text(
        f"retries: 0\nanalysis:\n  executor: ray\n  ray_address: '127.0.0.1:{port}'\n"
    )
    proc = _analyze(harvey)
    assert_one_line_error(proc, 1, f"cannot reach the Ray cluster at 127.0.0.1:{port}")
    local = _analyze(harvey, "--executor", "local")  # the flag wins: the server is asked
    assert "Ray" not in local.stderr and "127.0.0.1:9" in local.stderr, local.stderr
    (isolated_env / "harvey.yaml").write_text("analysis:\n  executor: spark\n")
    assert_one_line_error(_analyze(harvey), 2, "analysis.executor")


@pytest.mark.slow
def test_a_ray_address_without_the_ray_executor_is_a_usage_error(
    harvey: Run, workspace: Path
) -> None:
    write_doc(workspace)
    proc = _analyze(harvey, "--ray-address", "127.0.0.1:6379")
    assert_one_line_error(proc, 2, "--ray-address needs --executor ray")
    assert_one_line_error(
        _analyze(harvey, "--executor", "ray", "--ray-address", "head:port"), 2, "HOST:PORT"
    )


def test_the_default_analysis_never_imports_ray(tmp_path: Path) -> None:
    write_doc(tmp_path)
    with FakeLlamaCpp() as srv:
        modules = modules_after(
            "import os\n"
            f"os.environ['HARVEY_HOME'] = {str(tmp_path / 'home')!r}\n"
            f"os.chdir({str(tmp_path)!r})\n"
            "from harvey.cli import main\n"
            "try:\n"
            "    main(['analyze', 'doc.md', '-i', 'Summarise', '--backend', 'openai', "
            f"'--base-url', {srv.url!r}, '--chunk-size', '1000', '--yes'], prog_name='harvey')\n"
            "except SystemExit as exc:\n"
            "    assert exc.code == 0, exc.code"
        )
        assert srv.calls > 1  # the analysis really ran
    assert "harvey.analysis.engine" in modules
    assert not loaded(modules, "ray") and "harvey.analysis.cluster.executor" not in modules
