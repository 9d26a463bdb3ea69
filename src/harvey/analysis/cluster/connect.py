"""Joining a Ray cluster (or starting one on this machine), with every failure one line.

Ray is an optional extra (``pip install 'harvey-agent[ray]'``): it is imported
here, when ``--executor ray`` asks for it, and nowhere else, so the default
path needs nothing beyond the base install.

``ray.init`` against an address nobody listens on retries for a long time
before it gives up, and then raises with a page of log output. A person who
mistyped ``--ray-address`` should hear so at once: a plain TCP connect with a
short timeout goes first, and what ``ray.init`` raises after that is
translated to ``ClusterError``. Connecting happens before ``harvey analyze``
opens its session, so a cluster that is not there leaves nothing half-written
in ``sessions.db``.

Ray's own chatter is kept off the terminal (``log_to_driver=False``, its
loggers at ERROR, file descriptor 2 silenced while it starts, the cluster's
error messages sent to the log instead of stdout) and its usage
statistics stay off unless the person turned them on
(``RAY_USAGE_STATS_ENABLED``): a local-first tool does not report on its
user's behalf.

A Ray started here (no address, or ``local``) listens on loopback only and
its processes get an environment without secrets (``harvey.analysis.cluster.local``);
joining a cluster someone else started changes nothing on it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
from collections.abc import Iterator
from typing import Any

from harvey.analysis.cluster.local import assert_loopback, local_start
from harvey.errors import ClusterError, UsageError

INSTALL_HINT = "pip install 'harvey-agent[ray]'"
log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 3.0  # seconds the TCP check of --ray-address waits
DEFAULT_PORT = 6379  # the Ray head's GCS port when an address names none
NAMESPACE = "harvey"
# Addresses ray.init resolves itself: start a cluster here, or find one on this machine.
_SPECIAL = ("local", "auto")


def import_ray() -> Any:
    """The ``ray`` module, or a ``ClusterError`` that says how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise ClusterError(
            f"--executor ray needs Ray, which is not installed: {INSTALL_HINT}"
        ) from exc
    return ray


def host_port(address: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``ray://HOST:PORT`` (port 6379 when absent) → (host, port)."""
    rest = address.removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    if not sep:
        host, port = rest, str(DEFAULT_PORT)
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(
            f"--ray-address {address!r}: expected HOST:PORT, ray://HOST:PORT, auto or local"
        )
    return host, int(port)


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """A ``ClusterError`` unless something accepts a TCP connection at ``address``."""
    host, port = host_port(address)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        if isinstance(exc, TimeoutError | socket.timeout):
            reason = f"no answer within {timeout:g} s"
        raise ClusterError(
            f"cannot reach the Ray cluster at {address}: {reason} — start one with "
            "`ray start --head` there, or check --ray-address"
        ) from exc


def connect(address: str | None, *, num_cpus: int | None = None) -> tuple[Any, bool]:
    """Join the cluster at ``address`` (``None``: start one here, or the ``RAY_ADDRESS``
    Ray itself honours); returns the ``ray`` module and whether this call attached the
    process, so the caller detaches it at the end (``disconnect``; that also stops a Ray
    instance started here). A process already attached (a test, a notebook) is left so.
    """
    ray = import_ray()
    if ray.is_initialized():
        return ray, False
    if address is not None and address not in _SPECIAL:
        check_reachable(address)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    options: dict[str, Any] = {
        "address": address,
        "namespace": NAMESPACE,
        "log_to_driver": False,
        "logging_level": logging.ERROR,
        "include_dashboard": False,
    }
    starts_here = address == "local" or (address is None and not os.environ.get("RAY_ADDRESS"))
    if starts_here:
        # "local", never None: ray.init(None) would join a `ray start` cluster it finds
        # on this machine, whose addresses and environment are not Harvey's to choose.
        options["address"] = "local"
        if num_cpus is not None:
            options["num_cpus"] = num_cpus
    start: contextlib.AbstractContextManager[dict[str, Any]]
    start = local_start(ray) if starts_here else contextlib.nullcontext({})
    try:
        with _quiet_stderr(), start as local_options:
            ray.init(**options, **local_options)
    except (ConnectionError, TimeoutError, RuntimeError, ValueError, OSError) as exc:
        where = address or os.environ.get("RAY_ADDRESS") or "this machine"
        first = (str(exc).strip() or type(exc).__name__).splitlines()[0]
        raise ClusterError(f"cannot join the Ray cluster at {where}: {first}") from exc
    if starts_here:
        try:
            assert_loopback(ray)
        except ClusterError:
            disconnect(ray)
            raise
    _errors_to_log(ray)
    return ray, True


def _errors_to_log(ray: Any) -> None:
    """Send the cluster's error messages to Harvey's log instead of stdout.

    A driver prints what the cluster reports to it ("Task map_call failed. There
    are 3 retries remaining...") on ``sys.stdout`` from a thread of its own,
    whatever ``log_to_driver`` says — and ``harvey analyze``'s stdout is the
    answer. Those retries are handled (the call runs again, or the executor
    sends it elsewhere), so they belong in the debug log. Ray offers no option
    for this: the module function that thread calls is replaced; a Ray without
    it is left as it is.
    """
    module = getattr(getattr(ray, "_private", None), "worker", None)
    if module is None or not callable(getattr(module, "print_to_stdstream", None)):
        return

    def to_log(data: dict[str, Any], ignore_prefix: bool = False) -> None:
        for line in data.get("lines") or ():
            log.info("ray (%s): %s", data.get("pid", "?"), line)

    module.print_to_stdstream = to_log


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """File descriptor 2 on /dev/null while Ray starts: its C++ client logs each failed
    attempt to reach the GCS there, before its own logging is set up, and the person
    should get one line. The exception ``ray.init`` raises still says what went wrong;
    the processes a local start spawns log to files of their own."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no fd 2 to silence
        yield
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 2)
        finally:
            os.close(devnull)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def disconnect(ray: Any) -> None:
    """Leave the cluster (stopping the instance this process started); never raises."""
    try:
        ray.shutdown()
    except Exception as exc:  # any of Ray's; the analysis is over either way
        log.debug("ray.shutdown failed: %s", exc)
