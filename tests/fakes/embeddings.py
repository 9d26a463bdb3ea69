"""A fake OpenAI-compatible ``/v1/embeddings`` endpoint, beside the fake chat server.

``FakeEmbeddings(dims=8, api_key="k")`` answers each input with a deterministic
unit vector of ``dims`` numbers (from a hash of the text, so equal texts get
equal vectors and the tests can compute the expected one), in the real wire
format: ``{"object": "list", "data": [{"object": "embedding", "index": i,
"embedding": [...]}], "model": ..., "usage": {...}}`` — ``data`` deliberately
in reverse order, as nothing in the API promises input order. ``answer``
overrides the whole body (a malformed answer); ``max_input_chars`` makes an
over-long input the real server's 400 error. A wrong or missing key is
OpenAI's 401.
"""

from __future__ import annotations

import hashlib
from typing import Any

from tests.fakes.base import _Handler
from tests.fakes.openai import FakeOpenAI


def fake_vector(text: str, dims: int) -> list[float]:
    """The (unnormalised) vector the fake answers for ``text``."""
    digest = hashlib.sha256(text.encode()).digest()
    return [(digest[i % len(digest)] - 127.5) / 128 for i in range(dims)]


class FakeEmbeddings(FakeOpenAI):
    def __init__(
        self,
        *,
        dims: int = 8,
        answer: Any = None,
        max_input_chars: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.dims = dims
        self.answer = answer
        self.max_input_chars = max_input_chars

    @property
    def embedding_requests(self) -> list[Any]:
        with self._lock:
            return [r.body for r in self.requests if r.path.endswith("/embeddings")]

    def _handle(self, h: _Handler, method: str, path: str, body: Any) -> None:
        short = path[len("/v1") :] if path.startswith("/v1/") else path
        if not (method == "POST" and short == "/embeddings"):
            super()._handle(h, method, path, body)
            return
        if self.api_key is not None and h.headers.get("Authorization") != f"Bearer {self.api_key}":
            self._error(h, 401, "Incorrect API key provided")
            return
        if self.answer is not None:
            h.send_json(200, self.answer)
            return
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        if self.max_input_chars is not None and any(len(t) > self.max_input_chars for t in texts):
            self._error(h, 400, "This model's maximum context length is exceeded")
            return
        data = [
            {"object": "embedding", "index": i, "embedding": fake_vector(t, self.dims)}
            for i, t in enumerate(texts)
        ]
        h.send_json(
            200,
            {
                "object": "list",
                "data": data[::-1],
                "model": body.get("model"),
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
            },
        )
