"""The Ray that Harvey starts on this machine: loopback only, and no secret in its processes.

``ray.init()`` without an address starts a GCS server, a raylet, an agent or
two and, later, worker processes. Ray has no authentication beyond an
optional token, and each of those processes inherits the environment of the
process that called ``ray.init``. Left alone, on Linux, they listen on every
interface (``::``) and every one of them holds ``OPENAI_API_KEY`` and
whatever else the user exported. Two things change that for a start here:

* **Loopback.** Ray turns ``_node_ip_address="127.0.0.1"`` into the machine's
  outward address ("localhost is not reachable from other nodes") unless it
  runs in its single-machine mode, the one it uses on macOS and Windows:
  ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``. In that mode the node's address is
  the loopback one, and every server Ray starts (GCS, raylet and object
  manager, the workers' and driver's gRPC ports, the runtime-env and dashboard
  agents, the metrics exporters) binds to it. Ray reads the variable when it
  is imported, so the module constant is set as well for the length of the
  start; the caller checks the node address afterwards and refuses to go on
  with a Ray that would listen anywhere else (``assert_loopback``).
* **A scrubbed environment.** While ``ray.init`` spawns the processes,
  ``os.environ`` holds only what ``ray_environment`` keeps: no variable whose
  name says it holds a secret (``is_secret_name``) and none whose value the
  active redactor would mask (a configured ``api_key`` under any name, a
  token-shaped value, a URL with a password). Workers are spawned later by
  the raylet, from its own (scrubbed) environment. Ray's own ``RAY_AUTH_*``
  variables stay: they are the credentials of this cluster, which its
  processes need. The variables taken out are put back as soon as Ray has
  started; nothing else in this process runs meanwhile (the cluster is
  joined before ``harvey analyze`` opens its session).

The API key a map call needs travels in that call's arguments instead
(``harvey.analysis.cluster.recipe``), to the worker that makes the HTTP request.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any

from harvey.errors import ClusterError
from harvey.redact import is_secret_env_name

LOOPBACK = "127.0.0.1"
SINGLE_MACHINE_VAR = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # "0": Ray's loopback-only mode
KEPT_PREFIX = "RAY_AUTH_"  # RAY_AUTH_MODE, RAY_AUTH_TOKEN(_PATH): this cluster's own token


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret: redaction's rule
    (``OPENAI_API_KEY_PROD``, ``GH_PAT``, ``my_password``, ``SSH_AUTH_SOCK``), so the
    Ray start, the sandbox and redaction never disagree about a name."""
    return is_secret_env_name(name)


def ray_environment(
    environ: Mapping[str, str], masks: Callable[[str], bool] | None = None
) -> dict[str, str]:
    """The environment the Ray processes started here get: ``environ`` without secrets,
    in Ray's single-machine (loopback) mode. ``masks(value)`` says whether a value
    holds a secret; by default the active redactor's verdict (configured keys,
    token shapes)."""
    masks = masks or _redactor_masks
    env = {
        name: value
        for name, value in environ.items()
        if name.startswith(KEPT_PREFIX) or not (is_secret_name(name) or masks(value))
    }
    env[SINGLE_MACHINE_VAR] = "0"
    return env


def _redactor_masks(value: str) -> bool:
    from harvey.redact import active

    return active().redact(value) != value


@contextlib.contextmanager
def local_start(
    ray: Any, environ: MutableMapping[str, str] | None = None
) -> Iterator[dict[str, Any]]:
    """Around ``ray.init`` of a cluster started here: ``environ`` (``os.environ``) scrubbed
    and Ray in its loopback mode; yields the extra ``ray.init`` options. Afterwards the
    variables taken out are put back and the mode restored; whatever Ray itself set
    meanwhile (``RAY_AUTH_MODE``) stays."""
    environ = os.environ if environ is None else environ
    before = dict(environ)
    wanted = ray_environment(before)
    for name in [n for n in environ if n not in wanted]:
        del environ[name]
    environ.update(wanted)
    constants: Any = getattr(getattr(ray, "_private", None), "ray_constants", None)
    had_mode = hasattr(constants, "ENABLE_RAY_CLUSTER")
    old_mode = getattr(constants, "ENABLE_RAY_CLUSTER", None)
    if had_mode:
        constants.ENABLE_RAY_CLUSTER = False  # read by Ray's address resolution, per call
    try:
        yield {"_node_ip_address": LOOPBACK}
    finally:
        if had_mode:
            constants.ENABLE_RAY_CLUSTER = old_mode
        for name, value in before.items():
            if name not in wanted:
                environ[name] = value
        if SINGLE_MACHINE_VAR in before:
            environ[SINGLE_MACHINE_VAR] = before[SINGLE_MACHINE_VAR]
        else:
            environ.pop(SINGLE_MACHINE_VAR, None)


def is_loopback(address: str) -> bool:
    """``127.0.0.0/8``, ``::1`` or an IPv4-mapped loopback (``::ffff:127.0.0.1``)."""
    try:
        ip = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


def assert_loopback(ray: Any) -> None:
    """A ``ClusterError`` unless the Ray started here took a loopback address (a Ray
    whose single-machine mode works differently would listen on the network)."""
    try:
        address = str(ray.util.get_node_ip_address())
    except Exception as exc:  # any of Ray's: an address we cannot see is not a loopback one
        address = f"an unknown address ({type(exc).__name__})"
    if not is_loopback(address):
        raise ClusterError(
            f"the Ray started on this machine would listen on {address}, not only on "
            "loopback; Harvey does not run it so (start one yourself with `ray start "
            "--head` and pass --ray-address if that is what you want)"
        )
