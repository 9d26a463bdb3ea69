"""A shell script holds a three-turn conversation with ``harvey run -c --output-format json``.

The issue's "done when": a script reads every answer with ``jq`` (or, on a machine
without it, ``python -c``), and each turn continues the same session. Real
processes: the script is bash, and each ``harvey`` is a real interpreter.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harvey.llm.scripted import Reply
from tests.fakes.servers import FakeOpenAI
from tests.harvey_process import harvey_env

SCRIPT = r"""
set -euo pipefail
ask() {
  "$PYTHON" -m harvey run -c --output-format json --backend openai --base-url "$URL" "$1"
}
field() {
  if command -v jq >/dev/null && [ -z "${NO_JQ:-}" ]; then jq -r "$1"
  else "$PYTHON" -c 'import json,sys; d=json.load(sys.stdin)
for k in sys.argv[1].lstrip(".").split("."): d=d[k]
print(d)' "$1"; fi
}
one=$(ask "Remember the word heron")
sid=$(printf '%s' "$one" | field .session_id)
echo "1: $(printf '%s' "$one" | field .reply)"
two=$(ask "What is the word?")
[ "$(printf '%s' "$two" | field .session_id)" = "$sid" ] || { echo "new session"; exit 3; }
echo "2: $(printf '%s' "$two" | field .reply)"
three=$(ask "Say it backwards")
echo "3: $(printf '%s' "$three" | field .reply) ($(printf '%s' "$three" | field .usage.calls) call)"
"""


@pytest.mark.slow
def test_a_bash_script_holds_a_conversation(tmp_path: Path) -> None:
    if shutil.which("bash") is None:
        pytest.skip("bash is not on PATH: the script under test is a bash script")
    reader = "jq" if shutil.which("jq") else "python"  # the script's fallback without jq
    workspace = tmp_path / "ws"
    workspace.mkdir()
    replies = [Reply("Noted."), Reply("The word is heron."), Reply("noreh")]
    with FakeOpenAI(replies) as srv:
        env = harvey_env(
            {"URL": srv.url, "PYTHON": sys.executable, "NO_JQ": "1" if reader == "python" else None}
        )
        proc = subprocess.run(
            ["bash", "-c", SCRIPT], cwd=workspace, env=env, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        last = srv.chat_requests[-1]["messages"]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["1: Noted.", "2: The word is heron.", "3: noreh (1 call)"]
    said = [m["content"] for m in last if m["role"] in ("user", "assistant")]
    assert said == [
        "Remember the word heron", "Noted.", "What is the word?", "The word is heron.",
        "Say it backwards",
    ]  # fmt: skip


@pytest.mark.slow
def test_ctrl_c_while_streaming_ends_stream_json_with_its_result(tmp_path: Path) -> None:
    """A real SIGINT mid-reply: the lines so far, then an error and a result, exit 130."""
    import json
    import os
    import signal
    import time

    from tests.fakes.servers import KeepAlive
    from tests.harvey_process import default_signals, harvey_argv

    workspace = tmp_path / "ws"
    workspace.mkdir()
    with FakeOpenAI([KeepAlive(0.1, text="partial line\n")]) as srv:
        args = ["run", "hi", "--output-format", "stream-json", "--backend", "openai"]
        proc = subprocess.Popen(
            harvey_argv(*args, "--base-url", srv.url), cwd=workspace, env=harvey_env(),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=default_signals,
        )  # fmt: skip
        assert proc.stdout is not None
        seen = [proc.stdout.readline(), proc.stdout.readline()]  # start, then the text
        time.sleep(0.2)
        os.kill(proc.pid, signal.SIGINT)
        rest, err = proc.communicate(timeout=60)
    events = [json.loads(line) for line in [*seen, *rest.splitlines()] if line.strip()]
    assert [e["type"] for e in events][:2] == ["start", "text"]
    assert events[1]["text"] == "partial line\n"
    assert events[-2]["type"] == "error" and events[-1]["type"] == "result"
    assert events[-1]["exit"] == 130 and proc.returncode == 130, err
