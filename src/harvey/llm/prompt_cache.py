"""llama.cpp's prompt cache: ``cache_prompt`` on every request, and a session kept on one slot.

llama.cpp's server keeps each slot's last prompt evaluated (its KV cache) and
re-evaluates only what a new request does not share with it. With several
slots (``--parallel``) a request goes to the slot whose cache it resembles most,
else the least recently used one — so two conversations, or a chat and an
analysis's map calls, take each other's slots and each turn re-reads the whole
history. The request body can say where it goes: ``id_slot`` names the slot
and ``cache_prompt`` asks for the reuse (the server's default nowadays; sent so
an older or differently configured server does not silently re-evaluate).

* A server is llama.cpp's when its ``/props`` answered (the OpenAI client asks it
  for the context window and chat template); its slots are what ``/props`` says
  (``total_slots``), else what its ``/slots`` listed to capacity discovery or the
  endpoint pool. Nothing is probed for this module: it reads what those found
  (``remember_slots``, ``OpenAIClient``'s ``/props``).
  Other servers (OpenAI, Ollama's OpenAI endpoint, vLLM, llama-cpp-python's
  server, which answers neither) never get either field: llama-cpp-python's
  request model ignores unknown fields, but a strict server may refuse them.
* A chat session runs its requests inside ``llm.base.session_scope(session_id)``
  (the turn's tool rounds do; ``chat.tool_rounds``). Each client gives a session one
  slot (``SlotPins``): the slot its id hashes to, or the next one no other
  session of this process holds — stable across the session's turns, and two
  sessions of one process differ while there are slots enough. Outside a
  session (an analysis's map calls, which run in parallel; compaction; probes)
  no slot is named and the server spreads the calls.
* ``id_slot`` is sent only with two slots or more, and only below the count the
  server reported. llama.cpp queues a request for a busy slot (it waits, it does
  not fail); recent builds wrap an id out of range, older ones or a proxy may
  answer an error such as ``Invalid slot ID``. Such a refusal (``slot_refused``)
  is asked once more without ``id_slot``, and that client names no slot again.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from typing import Any

from harvey.errors import BackendHTTPError
from harvey.llm.base import current_session
from harvey.llm.http import server_root

log = logging.getLogger(__name__)

# server root (``http://host:8080``) → slots its ``/slots`` listed; filled by whoever asked
_SLOTS: dict[str, int] = {}
_LOCK = threading.Lock()


def remember_slots(url: str, slots: int | None) -> None:
    """Record what ``/slots`` at ``url``'s server listed (capacity discovery, pool probes)."""
    if isinstance(slots, int) and slots > 0:
        with _LOCK:
            _SLOTS[server_root(url)] = slots


def known_slots(url: str) -> int | None:
    """The slots ``/slots`` listed for ``url``'s server, if something asked it."""
    with _LOCK:
        return _SLOTS.get(server_root(url))


def forget_slots() -> None:
    """Drop what was learnt (tests start each server afresh on a new port anyway)."""
    with _LOCK:
        _SLOTS.clear()


def slot_refused(exc: BaseException) -> bool:
    """Whether a request's error is the server refusing the slot it named."""
    return isinstance(exc, BackendHTTPError) and "slot" in str(exc).lower()


class SlotPins:
    """One client's slot per chat session: stable for the session, spread across sessions."""

    def __init__(self) -> None:
        self._pins: dict[str, int] = {}
        self._lock = threading.Lock()
        self.refused = False  # the server refused a named slot: name none again

    def slot(self, session: str, slots: int) -> int:
        """The slot ``session`` uses on a server with ``slots`` slots."""
        with self._lock:
            pinned = self._pins.get(session)
            if pinned is not None and pinned < slots:
                return pinned
            digest = hashlib.sha256(session.encode("utf-8", "replace")).digest()
            preferred = int.from_bytes(digest[:8], "big") % slots
            taken = {s for other, s in self._pins.items() if other != session}
            # lazily: a server may claim any number of slots; the search ends at the
            # first free one, within as many steps as this process has sessions
            free = ((preferred + i) % slots for i in range(slots))
            chosen = next((s for s in free if s not in taken), preferred)
            self._pins[session] = chosen
            return chosen

    def slot_field(self, slots: int) -> dict[str, Any]:
        """``{"id_slot": N}`` for a request inside a session on a server of ``slots``
        slots (``cache_prompt`` goes on every llama.cpp request, set by the client)."""
        session = current_session()
        if session is None or self.refused:
            return {}
        return {"id_slot": self.slot(session, slots)}


def without_slot(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` as asked again after the server refused its ``id_slot``."""
    return {k: v for k, v in payload.items() if k != "id_slot"}
