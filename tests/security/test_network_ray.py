"""Harvey → network, ``--executor ray``: a Ray that Harvey starts listens on loopback only,
and no Ray process holds a key; the key reaches the endpoint inside the map call alone.

The attacker here is anyone on the network (Ray has no authentication of its
own beyond an optional token) and anything that can read a Ray process's
environment. Every test starts a real local Ray the way Harvey does and
looks at what the kernel says: the listening sockets of every process of
that Ray (``/proc/net/tcp{,6}``, socket inode → process through
``/proc/PID/fd``) and each process's ``/proc/PID/environ`` and command line.
The secrets come in under the names redaction's old suffix rule missed, in
lower case, and under innocent names with a token-shaped or configured
value; a harmless variable set beside them shows the environment really is
inherited and read (so an empty environment could not pass).
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harvey.analysis.cluster.executor import RayExecutor
from harvey.analysis.cluster.local import is_loopback
from harvey.llm.openai import OpenAIClient
from harvey.redact import Redactor, install, reset
from tests.analysis.cluster.conftest import (
    SYNTHESIS,
    EchoLlamaCpp,
    echoed,
    harvey,
    map_tasks,
    ray_env,
    workspace,
    write_doc,
)
from tests.fakes.base import _Handler
from tests.fakes.evidence import part_of
from tests.harvey_process import harvey_argv
from tests.security.conftest import API_KEY

__all__ = ["harvey", "ray_env", "workspace"]  # fixtures used here

CONFIGURED_KEY = "plain-configured-key-4242"  # a configured api_key: no token shape at all
SECRETS = {
    "OPENAI_API_KEY": API_KEY,
    "OPENAI_API_KEY_PROD": "prod-key-value-0001",
    "GH_PAT": "pat-value-0002-not-token-shaped",
    "db_password": "hunter2-hunter2-0003",
    "BUILD_NOTE": "ghp_" + "a1b2c3d4e5" * 4,  # an innocent name, a GitHub token's shape
}
VISIBLE = ("HARVEY_TEST_VISIBLE", "visible-marker-7f3a")


# --- what the kernel says about a process tree -------------------------------------------


def listening_sockets() -> dict[str, tuple[str, int]]:
    """Socket inode → (address, port) of every listening TCP socket on the machine."""
    found: dict[str, tuple[str, int]] = {}
    for path, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        with open(path) as table:
            next(table)
            for line in table:
                fields = line.split()
                if fields[3] != "0A":  # TCP_LISTEN
                    continue
                hex_ip, hex_port = fields[1].split(":")
                raw = bytes.fromhex(hex_ip)
                # the kernel prints each 32-bit word in host (little-endian) order
                words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
                found[fields[9]] = (socket.inet_ntop(family, words), int(hex_port, 16))
    return found


def descendants(root: int) -> list[int]:
    """``root`` and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def sockets_of(pid: int, table: dict[str, tuple[str, int]]) -> list[tuple[str, int]]:
    found = []
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:  # gone meanwhile
        return found
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:[") and target[8:-1] in table:
            found.append(table[target[8:-1]])
    return found


def read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError:  # a worker that exited meanwhile holds nothing any more
        return b""


def name_of(pid: int) -> str:
    return read(f"/proc/{pid}/cmdline").split(b"\0")[0].decode(errors="replace")


def assert_ray_holds_no_secret(driver: int, values: list[str]) -> list[str]:
    """Every process below ``driver`` (Ray's): listening on loopback only, and neither its
    environment nor its command line has a secret; returns their names."""
    table = listening_sockets()
    ray_pids = [pid for pid in descendants(driver) if pid != driver]
    names = [name_of(pid) for pid in ray_pids]
    listening = [s for pid in [driver, *ray_pids] for s in sockets_of(pid, table)]
    assert len(listening) >= 3, listening  # GCS, raylet, a worker: there was something to see
    assert all(is_loopback(address) for address, _ in listening), listening
    seen_visible = False
    for pid in ray_pids:
        environ, cmdline = read(f"/proc/{pid}/environ"), read(f"/proc/{pid}/cmdline")
        for value in values:
            assert value.encode() not in environ, f"{name_of(pid)} has a secret in its environment"
            assert value.encode() not in cmdline, f"{name_of(pid)} has a secret on its command line"
        for name in SECRETS:
            assert f"\0{name}=".encode() not in b"\0" + environ
        seen_visible |= f"{VISIBLE[0]}={VISIBLE[1]}".encode() in environ
    assert seen_visible  # the environment was inherited and read: the check can fail
    return names


def assert_not_on_disk(folder: str, values: list[str]) -> None:
    """Nothing under Ray's folder (session files, every process's log) holds a secret."""
    files = [p for p in Path(folder).rglob("*") if p.is_file() and not p.is_symlink()]
    assert any(p.suffix in (".out", ".err", ".log") for p in files)  # Ray did write logs here
    for path in files:
        data = read(str(path))
        assert not any(v.encode() in data for v in values), f"a secret in {path}"


# --- the end-to-end attack: `harvey analyze --executor ray` ------------------------------


class GatedEcho(EchoLlamaCpp):
    """The echo server, demanding the key, that holds the first map call until the test
    has looked at the cluster: a worker is then in the middle of a call."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.arrived = threading.Event()
        self.release = threading.Event()

    def _chat(self, h: _Handler, body: Any) -> None:
        content = str(((body or {}).get("messages") or [{}])[-1].get("content", ""))
        if part_of(content) and not self.release.is_set():
            self.arrived.set()
            self.release.wait(300)  # released by the test; the bound only frees a hung run
        super()._chat(h, body)


def test_analyze_starts_a_loopback_ray_whose_processes_hold_no_key(
    workspace: Path, ray_env: dict[str, str]
) -> None:
    write_doc(workspace, paragraphs=6)
    env = {**os.environ, **ray_env, **SECRETS, VISIBLE[0]: VISIBLE[1]}
    with GatedEcho(slots=2, api_key=API_KEY) as srv:
        proc = subprocess.Popen(
            [
                *harvey_argv("analyze", "doc.md", "-i", "Summarise"),
                "--backend", "openai", "--base-url", srv.url, "--model", "fake-model",
                "--chunk-size", "1000", "--yes", "--executor", "ray",
            ],
            cwd=workspace, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            while not srv.arrived.wait(0.2):
                assert proc.poll() is None, proc.communicate()
            names = assert_ray_holds_no_secret(proc.pid, list(SECRETS.values()))
            srv.release.set()
            out, err = proc.communicate(timeout=300)
        finally:
            srv.release.set()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        asked = srv.map_calls()
    assert any(n.endswith("gcs_server") for n in names) and any("raylet" in n for n in names)
    assert any(n.startswith("ray::") for n in names), names  # a worker, mid-call
    # The server refused any request without the key, so every map call carried it.
    assert proc.returncode == 0, err
    assert out.startswith(SYNTHESIS)
    n = max(asked)
    assert sorted(asked) == list(range(1, n + 1))
    assert not any(value in out + err for value in SECRETS.values())
    assert_not_on_disk(ray_env["RAY_TMPDIR"], list(SECRETS.values()))


# --- in this process: what a task itself sees, and the key handed to it ------------------


@pytest.fixture()
def secrets_in_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name, value in {**SECRETS, "LLM_SETTING": CONFIGURED_KEY, VISIBLE[0]: VISIBLE[1]}.items():
        monkeypatch.setenv(name, value)
    install(Redactor.from_env(extra=[CONFIGURED_KEY]))  # as the CLI does from harvey.yaml
    yield
    reset()


def _probe() -> dict[str, Any]:
    """Runs on a Ray worker: its own environment, and the raylet's that spawned it."""
    return {
        "environ": dict(os.environ),
        "self": Path("/proc/self/environ").read_bytes(),
        "parent": Path(f"/proc/{os.getppid()}/environ").read_bytes(),
        "parent_name": Path(f"/proc/{os.getppid()}/cmdline").read_bytes().split(b"\0")[0],
    }


def _run_map(executor: RayExecutor, client: OpenAIClient, n: int) -> dict[int, Any]:
    tasks = map_tasks(n)
    done: dict[int, Any] = {}
    executor.run_map(
        client, tasks, 2, threading.Event(), lambda j: None,
        lambda j, text, err: done.__setitem__(j, text if err is None else err),
    )  # fmt: skip
    return done


def test_a_task_on_the_ray_harvey_starts_sees_no_key_but_gets_its_own(
    ray_env: dict[str, str], secrets_in_env: None
) -> None:
    executor = RayExecutor.connect("local", num_cpus=1)
    try:
        assert executor.attached
        # The driver is Harvey: its own environment is as it was.
        assert os.environ["OPENAI_API_KEY"] == API_KEY and os.environ["GH_PAT"]
        ray = executor.ray
        seen = ray.get(ray.remote(_probe).remote())
        values = [*SECRETS.values(), CONFIGURED_KEY]
        assert seen["environ"].get(VISIBLE[0]) == VISIBLE[1]  # inherited, and read
        assert not set(seen["environ"]) & {*SECRETS, "LLM_SETTING"}
        assert not any(v in seen["environ"].values() for v in values)
        assert b"raylet" in seen["parent_name"] and VISIBLE[1].encode() in seen["parent"]
        for raw in (seen["self"], seen["parent"]):
            assert not any(v.encode() in raw for v in values)
        assert_ray_holds_no_secret(os.getpid(), values)
        with EchoLlamaCpp(slots=2, api_key=API_KEY) as srv:
            # The key is an argument of the map call: the worker sends it to the server...
            ok = _run_map(executor, OpenAIClient(srv.url, "fake-model", api_key=API_KEY), 3)
            assert ok == {j: echoed(j, 3) for j in range(3)}
            # ... which refuses a call without it: the worker has no key of its own to use.
            refused = _run_map(executor, OpenAIClient(srv.url, "fake-model", retries=0), 1)
            assert "API key" in str(refused[0]) or "401" in str(refused[0]), refused
    finally:
        executor.close()
    assert_not_on_disk(ray_env["RAY_TMPDIR"], [*SECRETS.values(), CONFIGURED_KEY])
