"""The backends that can count tokens exactly, as ``harvey.protocols.Tokenizer``s.

* ``EmbeddedTokenizer``: the embedded GGUF's own vocabulary, loaded with
  ``vocab_only=True`` (a tenth of a second, no weights) and its chat
  template rendered by llama-cpp-python's Jinja formatter — the prompt the
  model really sees.
* ``LlamaCppTokenizer``: llama.cpp's server, ``POST /tokenize`` for text and
  ``POST /apply-template`` for the framing (a server without the latter is
  charged ``FALLBACK_FRAMING`` tokens per message).
* ``LlamaCppPythonTokenizer``: llama-cpp-python's server,
  ``POST /extras/tokenize/count``.

``probe_server`` asks once which of the two a server speaks (the caller
caches the answer); a server with neither (OpenAI, vLLM, Ollama) means the
estimate is used. ``counting_kinds`` decides what is worth asking at all: a
hosted API (``HOSTED_HOSTS``) speaks neither, a server that answered
llama.cpp's ``/props`` is llama.cpp, and one that did not is at best
llama-cpp-python's — so a session asks at most one probe, and none of a
remote API.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from harvey.errors import BackendError
from harvey.llm.http import HttpTransport
from harvey.protocols import token_count

FALLBACK_FRAMING = 8  # tokens per message when the template cannot be rendered (ChatML: 5)
PROBE_TIMEOUT = 5.0
LLAMA_CPP, LLAMA_CPP_PYTHON = "llama.cpp", "llama-cpp-python"
# OpenAI-compatible APIs that are not llama.cpp servers: never probed for counting endpoints.
HOSTED_HOSTS = (
    "api.openai.com",
    "openai.azure.com",
    "openrouter.ai",
    "api.groq.com",
    "api.together.xyz",
    "api.mistral.ai",
    "api.deepseek.com",
    "api.fireworks.ai",
    "generativelanguage.googleapis.com",
    "api.anthropic.com",
)


def counting_kinds(base_url: str, props_answered: bool | None) -> tuple[str, ...]:
    """Which counting endpoints are worth probing at ``base_url``.

    ``props_answered``: whether llama.cpp's ``/props`` answered when the
    context window was asked (``None``: it was not asked — the window is
    configured). A hosted API: none; ``/props`` answered: llama.cpp's
    ``/tokenize``; it did not: llama-cpp-python's count (it has no
    ``/props``); not asked: both, in that order.
    """
    host = (urlsplit(base_url).hostname or "").lower()
    if any(host == h or host.endswith("." + h) for h in HOSTED_HOSTS):
        return ()
    if props_answered is None:
        return (LLAMA_CPP, LLAMA_CPP_PYTHON)
    return (LLAMA_CPP,) if props_answered else (LLAMA_CPP_PYTHON,)


class EmbeddedTokenizer:
    """The embedded model's vocabulary and chat template, without its weights."""

    method = "embedded tokenizer"

    def __init__(self, model_path: Path) -> None:
        from harvey.llm.llama_logs import import_llama  # llama.cpp loads only when counting

        llama_cpp = import_llama()
        try:
            self._llama = llama_cpp.Llama(str(model_path), vocab_only=True, verbose=False)
        except (ValueError, RuntimeError, OSError) as exc:
            raise BackendError(f"cannot load the tokenizer of {model_path.name}: {exc}") from exc
        self._lock = threading.Lock()  # a llama.cpp vocabulary is not thread-safe
        self._formatter = self._make_formatter()

    def _make_formatter(self) -> Any:
        template = (self._llama.metadata or {}).get("tokenizer.chat_template")
        if not template:
            return None
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        def piece(token: int) -> str:
            return bytes(self._llama.detokenize([token])).decode("utf-8", "replace")

        eos, bos = piece(self._llama.token_eos()), piece(self._llama.token_bos())
        return Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)

    def count(self, text: str) -> int:
        data = text.encode("utf-8", "surrogatepass")
        with self._lock:
            return len(self._llama.tokenize(data, add_bos=False, special=False))

    def framing(self, roles: Sequence[str]) -> int:
        if self._formatter is None:
            return FALLBACK_FRAMING * len(roles)
        messages = [{"role": role, "content": ""} for role in roles]
        prompt = self._formatter(messages=messages).prompt
        with self._lock:
            return len(self._llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True))


_EMBEDDED: dict[str, EmbeddedTokenizer] = {}
_EMBEDDED_LOCK = threading.Lock()


@atexit.register
def _close_all() -> None:
    """Free the vocabularies before interpreter teardown (llama-cpp-python's own
    finalizer runs too late and prints a TypeError traceback, as in ``local.py``)."""
    for tokenizer in _EMBEDDED.values():
        close = getattr(tokenizer._llama, "close", None)
        if close is not None:
            close()
    _EMBEDDED.clear()


def embedded_tokenizer(model_path: Path) -> EmbeddedTokenizer:
    """One vocabulary per model file per process."""
    with _EMBEDDED_LOCK:
        key = str(model_path)
        if key not in _EMBEDDED:
            _EMBEDDED[key] = EmbeddedTokenizer(model_path)
        return _EMBEDDED[key]


class LlamaCppTokenizer:
    """llama.cpp's server: ``/tokenize`` and ``/apply-template`` at the server root."""

    method = "llama.cpp /tokenize"

    def __init__(self, http: HttpTransport, root: str) -> None:
        self.http, self.root = http, root.rstrip("/")
        self._template = True  # until the server says it has no /apply-template

    def count(self, text: str) -> int:
        data = self.http.request_json(
            "POST", self.root + "/tokenize", {"content": text, "add_special": False}, retries=1
        )
        tokens = data.get("tokens") if isinstance(data, dict) else None
        if not isinstance(tokens, list):
            raise BackendError(f"{self.http.endpoint.where} answered /tokenize without tokens")
        return len(tokens)

    def framing(self, roles: Sequence[str]) -> int:
        if not self._template:
            return FALLBACK_FRAMING * len(roles)
        messages = [{"role": role, "content": ""} for role in roles]
        try:
            data = self.http.request_json(
                "POST", self.root + "/apply-template", {"messages": messages}, retries=0
            )
            prompt = data.get("prompt") if isinstance(data, dict) else None
        except BackendError:
            prompt = None
        if not isinstance(prompt, str):
            self._template = False
            return FALLBACK_FRAMING * len(roles)
        data = self.http.request_json(
            "POST", self.root + "/tokenize", {"content": prompt, "add_special": True}, retries=1
        )
        tokens = data.get("tokens") if isinstance(data, dict) else None
        return len(tokens) if isinstance(tokens, list) else FALLBACK_FRAMING * len(roles)


class LlamaCppPythonTokenizer:
    """llama-cpp-python's server: ``/extras/tokenize/count`` (no template endpoint)."""

    method = "llama-cpp-python /extras/tokenize/count"

    def __init__(self, http: HttpTransport, root: str, model: str) -> None:
        self.http, self.root, self.model = http, root.rstrip("/"), model

    def count(self, text: str) -> int:
        data = self.http.request_json(
            "POST",
            self.root + "/extras/tokenize/count",
            {"input": text, "model": self.model},
            retries=1,
        )
        count = token_count(data.get("count")) if isinstance(data, dict) else None
        if count is None:
            raise BackendError(f"{self.http.endpoint.where} answered /extras/tokenize/count oddly")
        return count

    def framing(self, roles: Sequence[str]) -> int:
        return FALLBACK_FRAMING * len(roles)


def probe_server(
    http: HttpTransport,
    root: str,
    model: str,
    kinds: Sequence[str] = (LLAMA_CPP, LLAMA_CPP_PYTHON),
) -> LlamaCppTokenizer | LlamaCppPythonTokenizer | None:
    """Which counting endpoint of ``kinds`` the server at ``root`` has, asked once;
    ``None``: neither."""
    root = root.rstrip("/")
    probes: list[tuple[LlamaCppTokenizer | LlamaCppPythonTokenizer, str, dict[str, Any], str]] = []
    if LLAMA_CPP in kinds:
        probes.append((LlamaCppTokenizer(http, root), "/tokenize", {"content": "probe"}, "tokens"))
    if LLAMA_CPP_PYTHON in kinds:
        probes.append(
            (
                LlamaCppPythonTokenizer(http, root, model),
                "/extras/tokenize/count",
                {"input": "probe", "model": model},
                "count",
            )
        )
    for tokenizer, path, payload, field in probes:
        try:
            data = http.request_json("POST", root + path, payload, retries=0, timeout=PROBE_TIMEOUT)
        except BackendError:
            continue
        if isinstance(data, dict) and field in data:
            return tokenizer
    return None
