"""A fake llama.cpp server: the OpenAI-compatible fake plus ``/health`` and ``/slots``.

``slots`` parallel slots, each with ``slot_context`` tokens (llama.cpp splits
``--ctx-size`` across ``--parallel``; ``slots=0``: no ``/slots``, like other servers); ``loading=True`` makes ``/health``
answer 503 as the real server does while it loads a model; ``kill()`` stops
the server so later connections are refused. ``calls`` counts the chat
requests it received, which is what the pool and resume tests count.
``/props`` reports ``total_slots`` as the slots; ``refuse_slot_ids=True`` answers a
chat request naming a slot (``id_slot``) with the 400 ``Invalid slot ID`` error some
builds and proxies give, and ``slot_ids`` lists the slot each chat request named.
"""

from __future__ import annotations

from typing import Any

from tests.fakes.base import _Abort, _Handler
from tests.fakes.openai import FakeOpenAI


class FakeLlamaCpp(FakeOpenAI):
    def __init__(
        self,
        *,
        slots: int = 1,
        slot_context: int = 4096,
        loading: bool = False,
        refuse_slot_ids: bool = False,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("default_reply", "partial")
        kwargs.setdefault("context_window", slot_context * max(1, slots))
        super().__init__(**kwargs)
        self.slots = slots
        self.total_slots = max(1, slots)
        self.refuse_slot_ids = refuse_slot_ids
        self.slot_context = slot_context
        self.loading = loading
        self.in_flight = 0
        self.max_seen_in_flight = 0
        self.arrivals: list[int] = []  # calls in flight as each chat request arrived, itself too
        self.dead = False

    def __enter__(self) -> FakeLlamaCpp:
        self.start()
        return self

    def kill(self) -> None:
        """Stop like a crashed server: calls in flight lose their connection, new ones are refused."""
        self.dead = True
        self.stop()

    def _pause(self, seconds: float) -> None:
        # in flight = inside the per-call delay, before any byte of the answer: a
        # client cannot have seen the end of this call, so overlaps here are real
        with self._lock:
            self.in_flight += 1
            self.arrivals.append(self.in_flight)
            self.max_seen_in_flight = max(self.max_seen_in_flight, self.in_flight)
        try:
            super()._pause(seconds)
        finally:
            with self._lock:
                self.in_flight -= 1
        if self.dead:
            raise _Abort  # the connection closes without an answer

    @property
    def calls(self) -> int:
        return len(self.chat_requests)

    @property
    def slot_ids(self) -> list[int | None]:
        """The ``id_slot`` each chat request named (None: none), oldest first."""
        return [b.get("id_slot") if isinstance(b, dict) else None for b in self.chat_requests]

    def _chat(self, h: _Handler, body: Any) -> None:
        if self.refuse_slot_ids and isinstance(body, dict) and "id_slot" in body:
            error = {"code": 400, "message": "Invalid slot ID", "type": "invalid_request_error"}
            h.send_json(400, {"error": error})
            return
        super()._chat(h, body)

    def _handle(self, h: _Handler, method: str, path: str, body: Any) -> None:
        if method == "GET" and path == "/health":
            if self.loading:
                h.send_json(503, {"error": {"code": 503, "message": "Loading model"}})
            else:
                h.send_json(200, {"status": "ok"})
            return
        if method == "GET" and path == "/slots" and self.slots:
            busy = self.in_flight
            slots = [
                {"id": i, "n_ctx": self.slot_context, "is_processing": i < busy}
                for i in range(self.slots)
            ]
            h.send_json(200, slots)
            return
        super()._handle(h, method, path, body)
