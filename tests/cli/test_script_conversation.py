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
        pytest.skip("no bash")
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
