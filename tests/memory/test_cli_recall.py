"""`harvey memory ...` and recall through the real `harvey run` against the fake OpenAI server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from harvey.llm.scripted import Reply
from harvey.memory.store import Memory, MemoryStore
from harvey.session.fountain import parse_session
from tests.fakes.servers import FakeOpenAI
from tests.harvey_process import invoke_harvey


def harvey(
    ws: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return invoke_harvey(*args, cwd=ws, env=env)


def seed(home: Path, ws: Path) -> tuple[str, str]:
    with MemoryStore(home / "memory.db") as store:
        profile = store.add(
            Memory("", "workspace_profile", "A Go module named zebra.", workspace=str(ws))
        )
        tip = store.add(
            Memory("", "tool_use", "build with go build ./... before tests", kind="pattern",
                   workspace=str(ws))
        )  # fmt: skip
    return profile.id, tip.id


def test_list_json_show_flag_forget(tmp_path: Path, isolated_env: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    assert json.loads(harvey(ws, "memory", "list", "--json").stdout) == []
    assert not (isolated_env / "memory.db").exists()  # reading creates nothing
    profile_id, tip_id = seed(isolated_env, ws)
    listed = json.loads(harvey(ws, "memory", "list", "--json").stdout)
    assert {m["id"] for m in listed} == {profile_id, tip_id}
    for key in ("id", "type", "kind", "text", "workspace", "confidence", "archived"):
        assert key in listed[0]
    assert json.loads(harvey(ws, "memory", "show", tip_id, "--json").stdout)["kind"] == "pattern"
    flagged = harvey(ws, "memory", "flag", tip_id)
    assert flagged.returncode == 0 and "0.40" in flagged.stdout
    assert harvey(ws, "memory", "forget", tip_id).returncode == 0
    status = json.loads(harvey(ws, "memory", "status", "--json").stdout)
    assert status["active"] == 1


def test_bad_input_is_one_line(tmp_path: Path, isolated_env: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for command in ("show", "edit", "flag", "forget"):  # no memory.db: no memory, no file made
        proc = harvey(ws, "memory", command, "tool_use_000000")
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip() == "harvey: no memory 'tool_use_000000' (no memories yet)"
    assert not (isolated_env / "memory.db").exists()
    seed(isolated_env, ws)
    proc = harvey(ws, "memory", "show", "tool_use_000000")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith("harvey: no memory 'tool_use_000000'")
    tip = json.loads(harvey(ws, "memory", "list", "--json").stdout)[0]["id"]
    env = {"EDITOR": "", "VISUAL": ""}
    proc = harvey(ws, "memory", "edit", tip, env=env)
    assert proc.returncode == 2 and "set $EDITOR" in proc.stderr
    (isolated_env / "memory.db").write_bytes(b"garbage" * 1000)
    for name in ("memory.db-wal", "memory.db-shm"):
        (isolated_env / name).unlink(missing_ok=True)
    proc = harvey(ws, "memory", "list")
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1
    assert "not a usable memory database" in proc.stderr


def test_edit_with_editor(tmp_path: Path, isolated_env: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    _, tip = seed(isolated_env, ws)
    editor = tmp_path / "ed.sh"
    editor.write_text('#!/bin/sh\necho "build with make first" > "$1"\n')
    editor.chmod(0o755)
    assert harvey(ws, "memory", "edit", tip, env={"EDITOR": str(editor)}).returncode == 0
    assert json.loads(harvey(ws, "memory", "show", tip, "--json").stdout)["text"] == (
        "build with make first"
    )


def test_recall_reaches_the_model_and_the_recording(tmp_path: Path, isolated_env: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    profile_id, tip_id = seed(isolated_env, ws)
    with FakeOpenAI([Reply("Run go build first."), Reply("again")]) as srv:
        proc = harvey(ws, "run", "how do I build and test?", "--backend", "openai",
                      "--base-url", srv.url)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        sent = srv.chat_requests[0]["messages"]
        off = harvey(ws, "--no-memory", "run", "build?", "--backend", "openai",
                     "--base-url", srv.url)  # fmt: skip
        assert off.returncode == 0, off.stderr
        sent_off = srv.chat_requests[1]["messages"]
    system = "\n".join(m["content"] for m in sent if m["role"] == "system")
    assert "A Go module named zebra." in system and "go build ./..." in system
    assert "zebra" not in "\n".join(m["content"] for m in sent_off)
    files = sorted(
        (ws / ".harvey" / "sessions").glob("*.spmd"),
        key=lambda f: "how do I build" not in f.read_text(),  # the first run's recording first
    )
    parsed = parse_session(files[0])
    kinds = [s.kind for s in parsed.scenes]
    assert kinds[:2] == ["recall", "talking"]
    recalled = {(r.id, r.source, r.score) for r in parsed.scenes[0].recall}
    assert (profile_id, "workspace_profile", 1.0) in recalled
    assert any(r[0] == tip_id for r in recalled)
    assert "INT. CONTEXT RECALL" not in files[1].read_text()  # --no-memory: no scene
    shown = json.loads(harvey(ws, "memory", "show", tip_id, "--json").stdout)
    assert shown["recall_count"] == 1
