"""The fake OpenAI-compatible server: SSE ``/v1/chat/completions``, ``/v1/models``, ``/props``."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from typing import Any

from harvey.context.budget import estimate_tokens
from harvey.llm.scripted import Reply
from tests.fakes.base import Step, _FakeServer, _Handler


class FakeOpenAI(_FakeServer):
    """A fake OpenAI-compatible server (``/v1/chat/completions``, ``/v1/models``,
    and llama.cpp's ``/props`` when ``context_window`` is set and ``props`` is on).

    ``url`` includes ``/v1``, like ``OPENAI_BASE_URL``; paths without the prefix
    work too, as on llama.cpp's server.
    """

    chat_path = "/chat/completions"
    _content_type = "text/event-stream"
    _keepalive = ": ping\n\n"  # an SSE comment, as llama.cpp's and OpenRouter's servers send
    _stream_default = False

    def __init__(
        self,
        replies: Iterable[Step] = (),
        *,
        props: bool = True,
        api_key: str | None = None,
        too_long_style: str = "llama.cpp",
        tokenize_api: str | None = None,
        owned_by: str = "fake",
        **kwargs: Any,
    ) -> None:
        super().__init__(replies, **kwargs)
        self.owned_by = owned_by  # "me" is how llama-cpp-python's server lists its models
        # counting endpoints: "llama.cpp" (/tokenize, /apply-template), "llama-cpp-python"
        # (/extras/tokenize/count) or None; they count with the bytes/4 estimate
        self.tokenize_api = tokenize_api
        # whose words a too-long prompt gets: "llama.cpp", "openai" or "llama-cpp-python"
        self.too_long_style = too_long_style
        self.props = props
        self.chat_template = ""  # llama.cpp reports its Jinja template in /props
        self.total_slots = 1  # and its parallel slots
        self.api_key = api_key
        self._counter = 0

    def __enter__(self) -> FakeOpenAI:
        self.start()
        return self

    @property
    def url(self) -> str:
        return self.root_url + "/v1"

    def _handle(self, h: _Handler, method: str, path: str, body: Any) -> None:
        if path.startswith("/v1/"):
            path = path[len("/v1") :]
        authorized = h.headers.get("Authorization") == f"Bearer {self.api_key}"
        if self.api_key is not None and path != "/props" and not authorized:
            self._error(h, 401, "Incorrect API key provided")
            return
        if method == "GET" and path == "/models":
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": self.owned_by}
                for m in self.models
            ]
            h.send_json(200, {"object": "list", "data": data})
        elif method == "GET" and path == "/props" and self.props and self.context_window:
            h.send_json(
                200,
                {
                    "default_generation_settings": {"n_ctx": self.context_window},
                    "total_slots": self.total_slots,
                    "chat_template": self.chat_template,
                },
            )
        elif method == "POST" and path == "/chat/completions":
            self._chat(h, body)
        elif method == "POST" and self._counting(h, path, body):
            pass
        else:
            self._error(h, 404, f"File Not Found: {path}")

    def _error(
        self, h: _Handler, status: int, message: str, headers: dict[str, str] | None = None
    ) -> None:
        error = {"message": message, "type": "server_error" if status >= 500 else "invalid_request"}
        h.send_json(status, {"error": error}, headers)

    def _counting(self, h: _Handler, path: str, body: Any) -> bool:
        """The counting endpoints of ``tokenize_api``; False when this is not one."""
        body = body if isinstance(body, dict) else {}
        if self.tokenize_api == "llama.cpp" and path == "/tokenize":
            n = estimate_tokens(str(body.get("content", "")))
            h.send_json(200, {"tokens": list(range(n))})
        elif self.tokenize_api == "llama.cpp" and path == "/apply-template":
            prompt = "".join(
                f"<|im_start|>{m.get('role')}\n{m.get('content')}<|im_end|>\n"
                for m in body.get("messages") or []
            )
            h.send_json(200, {"prompt": prompt + "<|im_start|>assistant\n"})
        elif self.tokenize_api == "llama-cpp-python" and path == "/extras/tokenize/count":
            h.send_json(200, {"count": estimate_tokens(str(body.get("input", "")))})
        else:
            return False
        return True

    def _too_long(self, h: _Handler, prompt_tokens: int, window: int) -> None:
        if self.too_long_style == "llama.cpp":
            error: dict[str, Any] = {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": prompt_tokens,
                "n_ctx": window,
            }
        elif self.too_long_style == "openai":
            error = {
                "message": f"This model's maximum context length is {window} tokens. However, "
                f"your messages resulted in {prompt_tokens} tokens. Please reduce the length "
                "of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        else:  # llama-cpp-python's server
            error = {
                "message": f"This model's maximum context length is {window} tokens. However, "
                f"you requested {prompt_tokens + 16} tokens ({prompt_tokens} in the messages, "
                "16 in the completion). Please reduce the length of the messages or completion.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        h.send_json(400, {"error": error})

    def _unknown_model(self, h: _Handler, model: str) -> None:
        h.send_json(
            404,
            {
                "error": {
                    "message": f"The model `{model}` does not exist.",
                    "type": "invalid_request_error",
                    "code": "model_not_found",
                }
            },
        )

    def _chunk(self, model: str, delta: dict[str, Any], finish: str | None = None) -> str:
        data = {
            "id": f"chatcmpl-{self._counter}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(data)}\n\n"

    def _text_event(self, model: str, text: str) -> str:
        return self._chunk(model, {"content": text})

    def _capped_end(self, h: _Handler, model: str, tokens: int) -> None:
        self._emit(h, self._chunk(model, {}, "length"))
        usage = {"prompt_tokens": 10, "completion_tokens": tokens, "total_tokens": 10 + tokens}
        self._emit(h, f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n")
        self._emit(h, "data: [DONE]\n\n")

    def _interrupted_end(self, h: _Handler, model: str) -> None:
        self._emit(h, "data: [DONE]\n\n")  # llama-cpp-python: no finish_reason, no usage

    def _stream_reply(self, h: _Handler, body: dict[str, Any], reply: Reply) -> None:
        with self._lock:
            self._counter += 1
        model = str(body.get("model", ""))
        self._emit(h, self._chunk(model, {"role": "assistant", "content": ""}))
        for chunk in reply.chunks():
            self._emit(h, self._text_event(model, chunk))
        calls = reply.calls()
        for index, call in enumerate(calls):
            first = {
                "index": index,
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            self._emit(h, self._chunk(model, {"tool_calls": [first]}))
            for piece in _split(call.arguments_json(), 3):
                fragment = {"index": index, "function": {"arguments": piece}}
                self._emit(h, self._chunk(model, {"tool_calls": [fragment]}))
        self._emit(h, self._chunk(model, {}, "tool_calls" if calls else "stop"))
        if (body.get("stream_options") or {}).get("include_usage"):
            prompt, completion = self._usage(body, reply)
            usage = {
                "id": f"chatcmpl-{self._counter}",
                "object": "chat.completion.chunk",
                "model": model,
                "choices": [],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                },
            }
            self._emit(h, f"data: {json.dumps(usage)}\n\n")
        self._emit(h, "data: [DONE]\n\n")

    def _whole_reply(self, body: dict[str, Any], reply: Reply) -> Any:
        prompt, completion = self._usage(body, reply)
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        calls = reply.calls()
        if calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments_json()},
                }
                for c in calls
            ]
        return {
            "id": "chatcmpl-whole",
            "object": "chat.completion",
            "model": body.get("model", ""),
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }


def _split(text: str, parts: int) -> Iterator[str]:
    """Cut ``text`` into up to ``parts`` pieces, as servers fragment arguments."""
    size = max(1, -(-len(text) // parts))
    for start in range(0, len(text), size):
        yield text[start : start + size]
