"""No secret leaves through output, and what Harvey keeps is private to its user.

Each test plays one way a key could get out through the real ``harvey run``:
a tool reading it from a workspace file, an offloaded tool output, a server
that echoes the Authorization header back in its error body, and the
traceback ``HARVEY_DEBUG=1`` prints. Then it checks everything the key could
have reached (the server, sessions.db, the .spmd, offload files, the screen).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harvey.llm.scripted import Reply
from tests.fakes.base import _Handler
from tests.fakes.openai import FakeOpenAI
from tests.harvey_process import run_harvey
from tests.security.conftest import API_KEY, Attack, AttackResult

GITHUB_TOKEN = "ghp_16C7e42F292c6912E7710c838347Ae178B4aXYZ"
ROUTE_KEY = "route-only-secret-0123456789"
YAML_KEY = "sk-fromyaml-NEVER-SHOWN-9876543210fedcba"


@pytest.fixture(autouse=True)
def ordinary_umask() -> Iterator[None]:
    """The usual 022 umask, so only Harvey's own modes can make its files private."""
    old = os.umask(0o022)
    yield
    os.umask(old)


class EchoingOpenAI(FakeOpenAI):
    """A server that rejects the key it is sent and quotes the header back in the body."""

    def _handle(self, h: _Handler, method: str, path: str, body: Any) -> None:
        if path.rstrip("/").endswith("/props"):
            self._error(h, 404, "not here")
            return
        received = h.headers.get("Authorization", "")
        self._error(h, 401, f"Incorrect API key provided in header Authorization: {received}")


def _stored(workspace: Path, home: Path) -> bytes:
    own = home / "harvey.yaml"  # the user's own settings, where a key may rightly sit
    files = [p for root in (home, workspace / ".harvey") for p in root.rglob("*") if p.is_file()]
    files = [p for p in files if p != own]
    return b"\n".join(p.read_bytes() for p in sorted(files))


def _run_against_started(
    srv: FakeOpenAI, workspace: Path, env: dict[str, str] | None = None, *extra: str
) -> subprocess.CompletedProcess[str]:
    return run_harvey(
        "run", "hello", "--backend", "openai", "--base-url", srv.url, "--model", "m",
        *extra, cwd=workspace, env=env,
    )  # fmt: skip


def _run_against(
    server: FakeOpenAI, workspace: Path, env: dict[str, str], *extra: str
) -> subprocess.CompletedProcess[str]:
    with server as srv:
        return _run_against_started(srv, workspace, env, *extra)


def test_a_key_and_a_token_in_a_workspace_file_never_reach_the_model(
    attack: Attack, victim_workspace: Path, isolated_env: Path
) -> None:
    # The route's key is the user's own (a key in the workspace's harvey.yaml is refused).
    (isolated_env / "harvey.yaml").write_text(
        f"routes:\n  - name: cloud\n    api_key: {ROUTE_KEY}\n"
    )
    # Redaction, the last line: a file with no secret-file name (a .env itself is never
    # read at all: tests/security/test_context_secrets.py).
    (victim_workspace / "notes.txt").write_text(
        f"OPENAI_API_KEY={API_KEY}\nGITHUB_TOKEN={GITHUB_TOKEN}\nROUTE={ROUTE_KEY}\nok=1\n"
    )
    result = attack([("read_file", {"path": "notes.txt"})])
    assert result.proc.returncode == 0, result.proc.stderr
    (output,) = [out for out in result.tool_outputs if "ok=1" in out]
    assert "OPENAI_API_KEY=[REDACTED]" in output and "GITHUB_TOKEN=ghp_[REDACTED]" in output
    for secret in (API_KEY, GITHUB_TOKEN, ROUTE_KEY):
        result.assert_secret_absent(secret)


def test_an_offloaded_output_is_redacted_before_it_is_written(
    attack: Attack, victim_workspace: Path
) -> None:
    (victim_workspace / "harvey.yaml").write_text("offload:\n  threshold: 200\n")
    lines = "".join(f"line {i}: export OPENAI_API_KEY={API_KEY}\n" for i in range(40))
    (victim_workspace / "config.sh").write_text(lines)
    result = attack([("search_files", {"pattern": "OPENAI_API_KEY"})])
    assert result.proc.returncode == 0, result.proc.stderr
    offloaded = list((victim_workspace / ".harvey" / "tool_results").rglob("*.txt"))
    assert len(offloaded) == 1, "the output was not offloaded, so the test proves nothing"
    text = offloaded[0].read_text()
    assert text.count("OPENAI_API_KEY=[REDACTED]") == 40
    result.assert_secret_absent()


def test_a_reply_quoting_the_key_is_printed_and_stored_redacted(
    victim_workspace: Path, isolated_env: Path
) -> None:
    # However the model came to know it (the user pasted it, say), it is not kept.
    reply = Reply(f"Your key is {API_KEY}; a GitHub token looks like {GITHUB_TOKEN}.")
    server = FakeOpenAI([reply], api_key=API_KEY)
    proc = _run_against(server, victim_workspace, {"OPENAI_API_KEY": API_KEY})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Your key is [REDACTED]; a GitHub token looks like ghp_[REDACTED].\n"
    stored = _stored(victim_workspace, isolated_env)
    assert b"Your key is [REDACTED]" in stored
    assert API_KEY.encode() not in stored and GITHUB_TOKEN.encode() not in stored


def test_a_server_echoing_the_authorization_header_shows_no_key(
    victim_workspace: Path, isolated_env: Path
) -> None:
    proc = _run_against(EchoingOpenAI(), victim_workspace, {"OPENAI_API_KEY": API_KEY})
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "HTTP 401" in lines[0], proc.stderr
    assert "Authorization: Bearer [REDACTED]" in lines[0]
    assert "Traceback" not in proc.stderr
    AttackResult(proc, [], victim_workspace, isolated_env, victim_workspace).assert_secret_absent()
    assert API_KEY.encode() not in _stored(victim_workspace, isolated_env)


def test_the_debug_traceback_is_shown_without_the_key_from_harvey_yaml(
    victim_workspace: Path, isolated_env: Path
) -> None:
    (isolated_env / "harvey.yaml").write_text(f"api_key: {YAML_KEY}\n")  # the user's own file
    proc = _run_against(EchoingOpenAI(), victim_workspace, {"HARVEY_DEBUG": "1"})
    assert proc.returncode == 1
    assert "Traceback (most recent call last)" in proc.stderr
    assert "BackendHTTPError" in proc.stderr and "[REDACTED]" in proc.stderr
    assert YAML_KEY not in proc.stderr and YAML_KEY not in proc.stdout
    assert YAML_KEY.encode() not in _stored(victim_workspace, isolated_env)


def test_a_bad_key_type_in_harvey_yaml_is_not_echoed_even_under_debug(
    victim_workspace: Path,
) -> None:
    # Not token-shaped and never loaded as a key: only the settings keeping
    # rejected values out of their errors can keep it off the screen.
    plain = "correct-horse-battery-staple"
    (victim_workspace / "harvey.yaml").write_text(f"api_key: [{plain}]\n")
    proc = _run_against(FakeOpenAI(["hi"]), victim_workspace, {"HARVEY_DEBUG": "1"})
    assert proc.returncode == 2
    assert "Traceback" in proc.stderr and "api_key" in proc.stderr
    assert plain not in proc.stderr


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_harvey_home_the_store_and_the_session_files_are_private(
    victim_workspace: Path, tmp_path: Path
) -> None:
    home = tmp_path / "fresh" / "harvey-home"  # does not exist yet: Harvey creates it
    (victim_workspace / ".git").mkdir()  # plans go to .harvey/plans in a repository
    with FakeOpenAI([Reply("hello back")]) as srv:
        proc = _run_against_started(srv, victim_workspace, {"HARVEY_HOME": str(home)})
    assert proc.returncode == 0, proc.stderr
    harvey_dir = victim_workspace / ".harvey"
    (spmd,) = (harvey_dir / "sessions").glob("*.spmd")
    folders = [home, harvey_dir, harvey_dir / "sessions", harvey_dir / "plans"]
    assert {str(p): _mode(p) for p in folders} == {str(p): 0o700 for p in folders}
    db_files = [p for p in home.iterdir() if p.name.startswith("sessions.db")]
    assert home / "sessions.db" in db_files
    files = [*db_files, spmd]
    assert {str(p): _mode(p) for p in files} == {str(p): 0o600 for p in files}


@pytest.mark.slow
def test_loose_modes_left_by_an_older_harvey_are_tightened(
    victim_workspace: Path, isolated_env: Path
) -> None:
    def run() -> None:
        with FakeOpenAI([Reply("ok")]) as srv:
            proc = _run_against_started(srv, victim_workspace)
        assert proc.returncode == 0, proc.stderr

    run()
    harvey_dir = victim_workspace / ".harvey"
    loose = [isolated_env, harvey_dir, harvey_dir / "sessions", isolated_env / "sessions.db"]
    for path in loose:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    run()
    assert [_mode(p) for p in loose] == [0o700, 0o700, 0o700, 0o600]


def test_the_environment_read_back_through_an_allowed_command_is_redacted(
    attack: Attack, victim_workspace: Path
) -> None:
    # The reported attack: a file list naming /proc/self/environ, read by sort.
    # Confinement and a scrubbed environment should stop it first; whatever
    # still comes back is redacted before the model or the store sees it.
    (victim_workspace / "list").write_bytes(b"/proc/self/environ\0")
    env = {"GITHUB_TOKEN": GITHUB_TOKEN, "DEPLOY_SECRET": ROUTE_KEY}
    result = attack([("run_shell", {"command": "sort --files0-from=list"})], env=env)
    assert result.proc.returncode == 0, result.proc.stderr
    for secret in (API_KEY, GITHUB_TOKEN, ROUTE_KEY):
        result.assert_secret_absent(secret)
    leaked = [out for out in result.tool_outputs if "GITHUB_TOKEN=" in out]
    assert all("GITHUB_TOKEN=[REDACTED]" in out for out in leaked)


@pytest.mark.slow  # two harvey runs in subprocesses
def test_json_output_carries_no_key_and_no_raw_escape(
    victim_workspace: Path, isolated_env: Path
) -> None:
    """--output-format json/stream-json, for machines, is still redacted as text mode is,
    and ASCII (text mode: shown safely): a hostile server's tool name, arguments, file name and reply holding the
    key or escape sequences reach stdout masked and escaped, never raw."""
    evil = f"\x1b]52;c;aGk=\x07\x9b31m{API_KEY}\u202e"
    (victim_workspace / f"n{evil[:9]}.md").write_text(f"notes {evil}\n")
    script = [
        Reply(tool_calls=[(f"tool_{API_KEY}", {"x": evil})]),
        Reply(
            tool_calls=[
                ("list_files", {"path": "."}),
                ("write_file", {"path": evil, "content": evil}),
            ]
        ),
        Reply(f"Done {evil} {GITHUB_TOKEN}"),
    ]
    for fmt in ("text", "json", "stream-json"):
        server = FakeOpenAI(script, api_key=API_KEY)
        extra = () if fmt == "text" else ("--output-format", fmt)
        proc = _run_against(server, victim_workspace, {"OPENAI_API_KEY": API_KEY}, *extra)
        assert proc.returncode == 0, proc.stderr
        for raw in ("\x1b", "\x9b", "\u202e"):
            assert raw not in proc.stdout + proc.stderr, f"{raw!r} reached the terminal raw"
        at = proc.stdout.find(API_KEY)
        assert at < 0, proc.stdout[max(0, at - 300) : at + 60]
        if fmt != "text":
            assert proc.stdout.isascii(), "JSON lines are ASCII"
            result = [json.loads(line) for line in proc.stdout.splitlines()][-1]
            assert "[REDACTED]" in result["reply"], result
            assert len(result["tool_calls"]) == 3, result
        AttackResult(
            proc, [], victim_workspace, isolated_env, victim_workspace
        ).assert_secret_absent()
        assert GITHUB_TOKEN not in proc.stdout


def test_recall_turns_reads_only_this_session_and_no_key(tmp_path: Path) -> None:
    """Compaction's ``recall_turns`` reads originals back from sessions.db: only the
    running session's (its id comes from the session, never from the model's arguments),
    and with the key masked as it was stored."""
    from harvey.messages import Message, ToolCall
    from harvey.session.store import SessionStore
    from harvey.tools.recall_turns import RecallTurnsTool
    from harvey.tools.registry import ToolContext

    store = SessionStore(tmp_path / "home" / "sessions.db")
    try:
        mine = store.create_session(tmp_path / "a", "m")
        other = store.create_session(tmp_path / "b", "m")
        call = ToolCall("c1", "read_file", {"path": "cfg"})
        store.add_turn(
            mine,
            [
                Message("user", f"my key is {API_KEY}"),
                Message("assistant", "", [call]),
                Message("tool", f"token={GITHUB_TOKEN}", tool_call_id="c1", name="read_file"),
                Message("assistant", "noted"),
            ],
        )
        store.add_turn(other, [Message("user", "OTHER-SESSION"), Message("assistant", "x")])
        tool = RecallTurnsTool(store.messages)
        ctx = ToolContext(workspace=tmp_path / "a", session_id=mine)
        hostile = {"from": 1, "to": 1, "session_id": other, "session": other}
        text = tool.run(ctx, hostile)
    finally:
        store.close()
    assert "my key is sk-[REDACTED]" in text and "noted" in text
    assert API_KEY not in text and GITHUB_TOKEN not in text
    assert "OTHER-SESSION" not in text


@pytest.mark.slow  # a harvey run with a PDF child: about 2 s on two cores
def test_a_document_holding_a_key_is_not_cached_with_it(
    attack: Attack, victim_workspace: Path
) -> None:
    """The model gets a document's key redacted, and the extraction cache in HARVEY_HOME,
    a store that outlives the session, does not keep the text with the key in it; a
    document without one is still cached."""
    from harvey.messages import ToolCall
    from tests.documents.makers import docx_bytes, pdf_bytes

    (victim_workspace / "r.pdf").write_bytes(pdf_bytes([[f"the key is {API_KEY} ok"]]))
    (victim_workspace / "w.docx").write_bytes(docx_bytes([("Heading1", f"key {API_KEY}")]))
    (victim_workspace / "plain.docx").write_bytes(docx_bytes([("p", "The dam held.")]))
    reads = [
        ToolCall(id="1", name="read_file", arguments={"path": "r.pdf", "pages": "1"}),
        ToolCall(id="2", name="read_file", arguments={"path": "w.docx"}),
        ToolCall(id="3", name="read_file", arguments={"path": "plain.docx"}),
    ]
    result = attack([reads, reads[:2]])
    assert result.proc.returncode == 0, result.proc.stderr
    assert any("the key is [REDACTED] ok" in out for out in result.tool_outputs)
    result.assert_secret_absent()
    cached = list((result.home / "cache" / "documents").iterdir())
    assert [p.name.split("-")[1] for p in cached] == ["docx"]  # plain.docx only
