"""How the attack tests reach ``hostile_server.py``: as a stdio entry, served over
Streamable HTTP on loopback, and from a child process that reports how long the call took
and the most memory Harvey held (a listing or a result that blocks or floods a process
must not take the test's with it)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
HOSTILE = HERE / "hostile_server.py"
ROOT = HERE.parents[1]
PYTHON_HOMES = sorted(
    {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, Path(sys.executable).parent)}
)
TRANSPORTS = ["stdio", "http"]


def stdio_entry(mode: str, arg: str = "", **extra: Any) -> dict[str, Any]:
    """A stdio server entry running ``hostile_server.py MODE ARG`` confined."""
    return {
        "command": sys.executable,
        "args": [str(HOSTILE), mode, arg],
        "reads": [*PYTHON_HOMES, str(HERE)],
        **extra,
    }


@contextlib.contextmanager
def served(mode: str, arg: str = "", state: Any = None) -> Iterator[str]:
    """``hostile_server.http_app(MODE, ARG)`` on loopback: its URL."""
    import threading

    import uvicorn

    from tests.mcp.hostile_server import http_app

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(http_app(mode, arg, state), host="127.0.0.1", port=port,
                            log_level="error")  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        thread.join(0.05)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(10)


@contextlib.contextmanager
def entry(transport: str, mode: str, arg: str = "", state: Any = None,
          **extra: Any) -> Iterator[dict[str, Any]]:  # fmt: skip
    """A server entry for ``mode`` over ``transport`` (served while the block runs)."""
    if transport == "stdio":
        yield stdio_entry(mode, arg, **extra)
        return
    with served(mode, arg, state) as url:
        yield {"url": url, **extra}


CHILD = """
import json, sys, time
from pathlib import Path
from harvey.config.mcp_settings import McpServerSettings
from harvey.mcp.connection import Connection, Surroundings

job = json.loads(sys.argv[1])
server = McpServerSettings(**job["entry"])
connection = Connection(server, Surroundings(Path(job["workspace"])))
began = time.monotonic()
report = {"error": None, "result": None}
try:
    if job["action"] == "list":
        report["result"] = [t.name for t in connection.list_tools()][:20]
    else:
        connection.list_tools()
        began = time.monotonic()
        report["result"] = connection.call_tool(job["tool"], job.get("arguments", {}))[0]
except Exception as exc:
    report["error"] = str(exc)
report["seconds"] = time.monotonic() - began
with open("/proc/self/status") as status:  # this process's own peak (ru_maxrss would
    peak = [line for line in status if line.startswith("VmHWM:")]  # count the forking parent's)
report["peak_mb"] = int(peak[0].split()[1]) / 1024
print(json.dumps(report), flush=True)
connection.close()
"""


def in_child(job: dict[str, Any], limit: float) -> dict[str, Any]:
    """Run ``job`` (a listing, or a listing then one call) in a child Harvey; its report,
    or ``{"error": "killed"}`` when it outlived ``limit`` seconds."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [p for p in (os.environ.get("PYTHONPATH"), str(ROOT)) if p])}  # fmt: skip
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(job)], capture_output=True,
                              text=True, timeout=limit, env=env, cwd=ROOT)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"error": "killed", "seconds": limit, "peak_mb": None}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, done.stderr[-2000:]
    return dict(json.loads(lines[-1]))
