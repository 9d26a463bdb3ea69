"""A todo item, as the session store keeps it and the ``todo_write`` tool writes it.

Its own module below both: the store (``session/store.py``) saves the list the
tool (``tools/todo.py``) receives, and a word both use must not live in the room
of either — the store would otherwise import the model's tools.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

STATUSES = ("pending", "in_progress", "completed", "cancelled")


@dataclass(frozen=True)
class Todo:
    id: str
    content: str
    status: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)
