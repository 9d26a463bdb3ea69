"""How a stdio server is started confined, and where an HTTP server's token comes from.

A stdio server starts under Harvey's launcher with a policy of its own (see
``connection.py``); a folder its entry grants (``reads``, ``writes``) is refused when it
would hand back what the confinement keeps out.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harvey.config.mcp_settings import McpServerSettings

if TYPE_CHECKING:
    from harvey.mcp.base import Surroundings
    from harvey.workspace.secret_files import SecretFiles


def bearer_token(server: McpServerSettings) -> str | None:
    """An HTTP server's token, from the variable or the command its entry names; added to
    the redactor, so no output, log or store shows it."""
    if server.token_command:
        from harvey.llm.keys import run_key_command

        return run_key_command(server.token_command)  # redacted from then on
    if not server.token_env:
        return None
    token = os.environ.get(server.token_env, "").strip()
    if not token:
        raise _error(f"{server.token_env} is not set: the server's token comes from it")
    from harvey.redact import Redactor, active, install

    current = active()
    if token not in current.secrets:
        install(Redactor([*current.secrets, token], tokens=current.tokens))
    return token


def grant_problem(
    grant: str, hidden: Sequence[str], secrets: SecretFiles, harvey_home: Path | None
) -> str | None:
    """Why a folder an entry lets a confined server read or write (``reads``, ``writes``)
    would reach past what the confinement keeps out, or None: a secret file of the
    workspace beneath it (the view leaves those out; a grant would hand them back),
    Harvey's own state (its sessions, the approvals a server could write itself into),
    the home folder or a folder above it, or a secret place in it (``~/.ssh``)."""

    def beneath(path: str, root: str) -> bool:
        return path == root or path.startswith(root.rstrip("/") + "/")

    if any(beneath(h, grant) for h in hidden):
        return "holds a secret file of the workspace"
    home = os.path.realpath(os.path.expanduser("~"))
    if harvey_home is not None:
        own = os.path.realpath(harvey_home)
        if beneath(own, grant) or beneath(grant, own):
            return "holds Harvey's own state (HARVEY_HOME)"
    if beneath(home, grant):
        return "holds the home folder, and its keys"
    inside = os.path.relpath(grant, home)
    if beneath(grant, home) and (secrets.matches(inside) or secrets.matches(inside + "/x")):
        return "is a secret place of the home folder"
    return None


def confined(
    server: McpServerSettings, around: Surroundings, scratch: Path
) -> tuple[list[str], dict[str, str]]:
    """The argv that starts ``server`` under the launcher, and its scrubbed environment."""
    from harvey.config.settings import LimitsSettings
    from harvey.confine import sandbox
    from harvey.workspace.secret_files import SecretFiles
    from harvey.workspace.view import workspace_view

    env = sandbox.scrubbed_env(scratch)
    env.update({name: os.environ[name] for name in server.env if name in os.environ})
    argv = [server.command or "", *server.args]
    found = sandbox.detect(around.sandbox) if server.confine else sandbox.Confinement("none")
    if server.confine and not found.active:
        raise _error(
            f"cannot run confined here ({found.reason}); only `confine: false` in your own "
            "harvey.yaml runs it without"
        )
    secrets = SecretFiles(around.secret_files)
    view = workspace_view(around.workspace, secrets) if found.active else None
    reads = tuple(os.path.realpath(r) for r in server.reads)
    writes = tuple(os.path.realpath(w) for w in server.writes)
    if view is not None:
        for grant in (*reads, *writes):
            problem = grant_problem(grant, view.hidden, secrets, around.harvey_home)
            if problem:
                raise _error(f"the server's folder {grant} {problem}")
    policy = sandbox.Policy(
        os.path.realpath(around.workspace),
        os.path.realpath(scratch),
        read=(*sandbox.SYSTEM_DIRS, *sandbox.SYSTEM_FILES, *reads),
        view=view,
        limits=sandbox.command_limits(around.limits or LimitsSettings()),
        net=server.network,
        writes=writes,
    )
    launch = sandbox.launch(found, policy, argv)
    if launch.pass_fds:
        launch.close()
        raise _error("the workspace's view is too large to hand the launcher a server's policy")
    return launch.argv, env


def _error(text: str) -> Exception:
    from harvey.mcp.base import McpError

    return McpError(text)
