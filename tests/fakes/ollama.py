"""The fake Ollama server: NDJSON ``/api/chat``, ``/api/show``, ``/api/tags``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from harvey.llm.scripted import Reply
from tests.fakes.base import Step, _FakeServer, _Handler, _now


class FakeOllama(_FakeServer):
    """A fake Ollama: ``/api/chat``, ``/api/show``, ``/api/tags``, ``/api/version``."""

    chat_path = "/api/chat"
    _content_type = "application/x-ndjson"

    def __init__(
        self,
        replies: Iterable[Step] = (),
        *,
        models: Iterable[str] = ("fake-llama:1b",),
        context_window: int | None = 4096,
        tools: bool = True,
        strict_models: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            replies,
            models=models,
            context_window=context_window,
            strict_models=strict_models,
            **kwargs,
        )
        self.tools = tools

    def __enter__(self) -> FakeOllama:
        self.start()
        return self

    def _handle(self, h: _Handler, method: str, path: str, body: Any) -> None:
        if method == "GET" and path == "/":
            h.send_text(200, "Ollama is running")
        elif method == "GET" and path == "/api/version":
            h.send_json(200, {"version": "0.0.0-fake"})
        elif method == "GET" and path == "/api/tags":
            h.send_json(200, {"models": [self._model_entry(m) for m in self.models]})
        elif method == "POST" and path == "/api/show":
            name = str((body or {}).get("model") or (body or {}).get("name") or "")
            if name not in self.models:
                h.send_json(404, {"error": f"model '{name}' not found"})
            else:
                h.send_json(200, self._show(name))
        elif method == "POST" and path == "/api/chat":
            self._chat(h, body)
        else:
            h.send_text(404, "404 page not found")

    def _too_long(self, h: _Handler, prompt_tokens: int, window: int) -> None:
        h.send_json(400, {"error": "the input length exceeds the context length"})

    def _model_entry(self, name: str) -> dict[str, Any]:
        return {
            "name": name,
            "model": name,
            "modified_at": _now(),
            "size": 1_000_000,
            "digest": "0" * 64,
            "details": {"format": "gguf", "family": "llama", "parameter_size": "1B"},
        }

    def _show(self, name: str) -> dict[str, Any]:
        info: dict[str, Any] = {"general.architecture": "llama", "general.name": name}
        if self.context_window is not None:
            info["llama.context_length"] = self.context_window
        template = "{{ if .Tools }}tools{{ end }}{{ .Prompt }}" if self.tools else "{{ .Prompt }}"
        return {
            "modelfile": f"FROM {name}",
            "parameters": "",
            "template": template,
            "details": {"format": "gguf", "family": "llama"},
            "model_info": info,
            "capabilities": ["completion", "tools"] if self.tools else ["completion"],
        }

    def _error(
        self, h: _Handler, status: int, message: str, headers: dict[str, str] | None = None
    ) -> None:
        h.send_json(status, {"error": message}, headers)

    def _unknown_model(self, h: _Handler, model: str) -> None:
        h.send_json(404, {"error": f'model "{model}" not found, try pulling it first'})

    def _line(self, data: dict[str, Any]) -> str:
        return json.dumps(data) + "\n"

    def _capped_end(self, h: _Handler, model: str, tokens: int) -> None:
        final = {"model": model, "created_at": _now(), "message": {"role": "assistant"}}
        final.update(done=True, done_reason="length", prompt_eval_count=10, eval_count=tokens)
        self._emit(h, self._line(final))

    def _interrupted_end(self, h: _Handler, model: str) -> None:
        """Nothing: the NDJSON stream just stops, with no ``done: true`` line."""

    def _text_event(self, model: str, text: str) -> str:
        return self._line(
            {
                "model": model,
                "created_at": _now(),
                "message": {"role": "assistant", "content": text},
                "done": False,
            }
        )

    def _stream_reply(self, h: _Handler, body: dict[str, Any], reply: Reply) -> None:
        model = str(body.get("model", ""))
        for chunk in reply.chunks():
            self._emit(h, self._text_event(model, chunk))
        calls = reply.calls()
        if calls:
            message = {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"function": {"name": c.name, "arguments": c.arguments}} for c in calls
                ],
            }
            line = {"model": model, "created_at": _now(), "message": message, "done": False}
            self._emit(h, self._line(line))
        self._emit(h, self._line(self._final(body, reply, with_text=False)))

    def _final(self, body: dict[str, Any], reply: Reply, with_text: bool) -> dict[str, Any]:
        prompt, completion = self._usage(body, reply)
        message: dict[str, Any] = {"role": "assistant", "content": reply.text if with_text else ""}
        if with_text and reply.tool_calls:
            message["tool_calls"] = [
                {"function": {"name": c.name, "arguments": c.arguments}} for c in reply.calls()
            ]
        return {
            "model": body.get("model", ""),
            "created_at": _now(),
            "message": message,
            "done": True,
            "done_reason": "stop",
            "total_duration": 1000,
            "prompt_eval_count": prompt,
            "eval_count": completion,
        }

    def _whole_reply(self, body: dict[str, Any], reply: Reply) -> Any:
        return self._final(body, reply, with_text=True)
