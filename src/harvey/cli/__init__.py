"""The ``harvey`` command line (the console script ``harvey = "harvey.cli:main"``).

One module per command or group: ``app`` (the group, ``--version``, the REPL),
``run`` (one-shot ``run`` and ``analyze``, carried out by ``oneshot``),
``models``, ``doctor``, ``sessions``, ``rag`` (knowledge stores), ``memory``,
``mcp`` (MCP servers), ``trust`` (workspace trust, and the REPL's trust question), ``undo``
(a session's writes);
``options`` and ``errors`` are what they share. The commands are
attached here, so the command modules never import the group.
"""

from __future__ import annotations

from harvey.cli.app import main
from harvey.cli.cache import cache
from harvey.cli.doctor import doctor
from harvey.cli.mcp import mcp
from harvey.cli.memory import memory
from harvey.cli.models import models
from harvey.cli.rag import rag
from harvey.cli.run import analyze, run
from harvey.cli.sessions import sessions
from harvey.cli.trust import trust
from harvey.cli.undo import undo

for _command in (run, analyze, models, doctor, sessions, rag, memory, mcp, trust, undo, cache):
    main.add_command(_command)

__all__ = ["main"]
