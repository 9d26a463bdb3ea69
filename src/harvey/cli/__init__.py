"""The ``harvey`` command line (the console script ``harvey = "harvey.cli:main"``).

One module per command or group: ``app`` (the group, ``--version``, the REPL),
``run`` (one-shot ``run`` and ``analyze``), ``models``, ``doctor``,
``sessions``; ``options`` and ``errors`` are what they share. The commands are
attached here, so the command modules never import the group.
"""

from __future__ import annotations

import sys
from types import ModuleType


def _skip_httpx_cli() -> None:
    """Keep httpx from importing its own command-line tool into ours.

    ``import httpx`` loads ``httpx._main`` (click, rich, pygments: about 40 ms of
    every ``harvey run``) whenever click is installed, and falls back to a stub
    ``main`` when that import fails. Harvey never runs httpx's tool, so the
    command line takes the fallback: an empty ``httpx._main`` makes
    ``from ._main import main`` fail. Only the ``harvey`` process does this; the
    library leaves ``sys.modules`` alone.
    """
    if "httpx" not in sys.modules:
        sys.modules.setdefault("httpx._main", ModuleType("httpx._main"))


_skip_httpx_cli()

from harvey.cli.app import main  # noqa: E402  (after the httpx note above)
from harvey.cli.doctor import doctor  # noqa: E402
from harvey.cli.models import models  # noqa: E402
from harvey.cli.run import analyze, run  # noqa: E402
from harvey.cli.sessions import sessions  # noqa: E402

for _command in (run, analyze, models, doctor, sessions):
    main.add_command(_command)

__all__ = ["main"]
