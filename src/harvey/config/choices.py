"""The spelled choices settings accept and other packages derive theirs from, cheap to
import (``harvey --help`` reads them without loading pydantic): the chunk overlaps, and the
backend names Harvey knows with which of them a route may use.

Settings check ``backend:`` and ``routes[].backend`` against these names, and the CLI's
``--backend`` choices are read from them; ``llm/backends.py`` builds a client for each
name (and fails at import if one has no builder). ``auto`` is not a backend but a choice
between two of them, resolved by ``harvey.llm.factory``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

#: How chunk N+1 starts inside chunk N (``chunks/chunking.py``).
Overlap = Literal["paragraph", "sentence", "none"]
OVERLAPS: tuple[Overlap, ...] = get_args(Overlap)

#: How sure retrieval must be before a passage is sent (``knowledge/floor.py`` ``FLOORS``),
#: from none to the most.
RagFloor = Literal["off", "default", "strict"]
RAG_FLOORS: tuple[RagFloor, ...] = get_args(RagFloor)

AUTO = "auto"  # "Ollama if it answers, else the embedded model"

#: Every backend in table order → whether an @route may use it (a route is a server or
#: the embedded model; ``scripted`` plays a file, for tests and demos).
NAMES: dict[str, bool] = {"ollama": True, "openai": True, "local": True, "scripted": False}


def backend_names(*, include_auto: bool = False, routable_only: bool = False) -> list[str]:
    """The names in table order, optionally with ``auto`` first or only the routable ones."""
    names = [name for name, routable in NAMES.items() if routable or not routable_only]
    return [AUTO, *names] if include_auto else names


def _spelled(names: Sequence[str]) -> str:
    """``'a', 'b' or 'c'``: how pydantic words a Literal, so config errors read the same."""
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + f" or {quoted[-1]}"


def check_name(value: object, *, route: bool = False) -> str:
    """``value`` if it is a backend ``harvey.yaml`` may name there, else ``ValueError``
    listing the allowed names (a route cannot say ``auto`` or ``scripted``)."""
    allowed = backend_names(include_auto=not route, routable_only=route)
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"must be one of {_spelled(allowed)}")
    return value
