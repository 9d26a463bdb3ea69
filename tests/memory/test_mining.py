"""`harvey memory mine` against the fake servers: structured output on the wire, tolerant
parsing and one retry, credential rejection, dedup, review refusal, mined marking."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from harvey.llm.scripted import Reply
from harvey.memory.mining import parse_proposals, transcript_parts
from harvey.memory.review import MineReport, prepare, review
from harvey.memory.store import Memory, MemoryStore
from harvey.session.fountain import parse_session_text
from tests.fakes.servers import FakeOllama, FakeOpenAI
from tests.harvey_process import invoke_harvey

KEY = "sk-proj-abc123DEF456ghi789JKL0xyz"


def harvey(ws: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return invoke_harvey(*args, cwd=ws, input=input)


def answer(*items: dict[str, object]) -> str:
    return json.dumps({"memories": list(items)})


def item(text: str, mtype: str = "tool_use", kind: str = "pattern") -> dict[str, object]:
    return {"type": mtype, "kind": kind, "text": text, "evidence": [1], "confidence": 0.8}


@pytest.fixture()
def recorded(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    with FakeOpenAI([Reply("Use `make check`; it runs ruff and pytest.")]) as srv:
        proc = harvey(ws, "run", f"my key is {KEY}; how do I check the code?",
                      "--backend", "openai", "--base-url", srv.url)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return ws


def test_mine_all_yes_stores_scrubbed_and_marks_mined(recorded: Path, isolated_env: Path) -> None:
    reply = (
        "Here you go:\n```json\n"
        + answer(
            item("run make check before committing: it runs ruff and pytest"),
            item(f"the API key is {KEY}", "project_fact", "fact"),
            item(f"the project lives in {recorded}", "project_fact", "fact"),
            item("the user prefers short answers", "user_preference", "preference"),
        )
        + "\n```\nThat is all."
    )
    with FakeOpenAI([Reply("not json at all"), Reply(reply)]) as srv:
        proc = harvey(recorded, "memory", "mine", "--all", "--yes",
                      "--backend", "openai", "--base-url", srv.url)  # fmt: skip
        first = srv.chat_requests[0]
    assert proc.returncode == 0, proc.stderr
    assert first["response_format"]["type"] == "json_schema"
    assert first["response_format"]["json_schema"]["schema"]["required"] == ["memories"]
    sent = "\n".join(m["content"] for m in first["messages"])
    assert "how do I check the code?" in sent and "make check" in sent
    assert "1 rejected (credentials)" in proc.stdout and "3 memories stored" in proc.stdout
    listed = json.loads(harvey(recorded, "memory", "list", "--json").stdout)
    texts = {m["text"]: m for m in listed}
    assert "the project lives in <workspace>" in texts
    assert texts["the user prefers short answers"]["workspace"] is None
    assert all(KEY not in m["text"] and "sk-proj" not in m["text"] for m in listed)
    assert all(m["confidence"] == 0.5 for m in listed)
    raw = (isolated_env / "memory.db").read_bytes()
    assert KEY.encode() not in raw
    with FakeOpenAI([]) as srv:  # mined: not sent again
        again = harvey(recorded, "memory", "mine", "--all", "--yes",
                       "--backend", "openai", "--base-url", srv.url)  # fmt: skip
        assert srv.chat_requests == []
    assert again.returncode == 0 and "already mined" in again.stdout


def test_garbage_twice_is_one_line_and_stores_nothing(recorded: Path, isolated_env: Path) -> None:
    with FakeOpenAI([Reply("no"), Reply("{still not")]) as srv:
        proc = harvey(recorded, "memory", "mine", "--all", "--yes",
                      "--backend", "openai", "--base-url", srv.url)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert "did not answer with the memory JSON twice" in proc.stderr
    with MemoryStore(isolated_env / "memory.db") as store:
        assert store.counts() == {
            "active": 0,
            "archived": 0,
            "superseded": 0,
            "mined_recordings": 0,
        }


def test_no_terminal_without_yes_refuses(recorded: Path, isolated_env: Path) -> None:
    proc = harvey(recorded, "memory", "mine", "--all", input="")
    assert proc.returncode == 2 and "no terminal to review" in proc.stderr
    assert not (isolated_env / "memory.db").exists()


def test_bad_recording_is_one_line(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "junk.spmd").write_text("just some text\n")
    proc = harvey(ws, "memory", "mine", "junk.spmd", "--yes", "--backend", "scripted")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    missing = harvey(ws, "memory", "mine", "nope.spmd", "--yes")
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_ollama_gets_the_schema_as_format(recorded: Path) -> None:
    with FakeOllama([Reply(answer(item("run make check before every commit")))]) as srv:
        proc = harvey(recorded, "memory", "mine", "--all", "--yes",
                      "--backend", "ollama", "--base-url", srv.url, "-m", "fake-llama:1b")  # fmt: skip
        body = srv.chat_requests[0]
    assert proc.returncode == 0, proc.stderr
    assert body["format"]["properties"]["memories"]["type"] == "array"


SESSION = """Title: Harvey Session

FADE IN:


INT. CONTEXT RECALL 2026-06-24 10:00:01

[[recall: tool_use_d55f70 (tool_use) — score 0.75]]


INT. HARVEY AND RSDOIEL TALKING 2026-06-24 10:00:05

Harvey and RSDOIEL are in chat mode. Model: LLAMA3. Workspace: /ws.

[[rag: 3 chunks from rag_store.db, top score 0.87]]

RSDOIEL
Does it build?

HARVEY
Forwarding to LLAMA3.

[[tool: run_shell({"cmd":"go build ./..."}) — error: exit 1]]

LLAMA3
No: line 42.


INT. CHUNK ANALYSIS — doc.md 2026-06-27 10:04:08

[[chunk: file=doc.md, chunks=2, model=LLAMA3, boundary=paragraph, chunk-size=6000]]

RSDOIEL
List the decisions in each section.

[[chunk-result: 1/2 — ok]]
[[chunk-result: 2/2 — error: context exceeded]]
[[synthesis: model=LLAMA3 — ok]]

HARVEY
Chunk analysis complete. Synthesized result injected into conversation.


THE END.
"""


def test_transcript_shows_work_not_recall_and_splits_when_large() -> None:
    parsed = parse_session_text(SESSION)
    (part,) = transcript_parts(parsed, context_window=8192)
    assert "USER: Does it build?" in part and "run_shell" in part and "error: exit 1" in part
    assert "CHUNK INSTRUCTION: List the decisions in each section." in part
    assert "1 chunks ok, 1 failed" in part
    assert "d55f70" not in part and "rag_store" not in part
    small = transcript_parts(parsed, context_window=700, bytes_per_token=0.5)
    assert len(small) > 1 and all(len(p.encode()) <= 128 for p in small)  # 256 tokens each
    assert "".join(small).replace("\n", "") == part.replace("\n", "")  # cut, never dropped


def test_tolerant_parsing_drops_bad_items() -> None:
    text = "Sure!\n" + answer(item("a good memory text"), {"type": "nonsense", "text": "x"})
    assert [p.text for p in parse_proposals(text)] == ["a good memory text"]
    with pytest.raises(ValueError):
        parse_proposals('{"other": 1}')


class _Decider:
    """A client whose structured answers are scripted (deduplication's ADD/UPDATE/NOOP)."""

    backend = "scripted"
    model = "m"
    endpoint = "scripted"

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    def stream_chat(self, messages, tools=None, *, response_schema=None):  # type: ignore[no-untyped-def]
        from harvey.protocols import TextDelta

        self.prompts.append(messages[-1].content)
        yield TextDelta(self.answers.pop(0))


def test_dedup_exact_noop_update(tmp_path: Path) -> None:
    from harvey.memory.mining import Proposal

    ws = tmp_path / "ws"
    store = MemoryStore(tmp_path / "memory.db")
    old = store.add(Memory("", "tool_use", "run pytest with -x to stop at the first failure",
                           workspace=str(ws)))  # fmt: skip
    props = [
        Proposal("tool_use", "pattern", "Run pytest with -x to stop at the first failure."),
        Proposal("tool_use", "pattern", "run pytest with -x to stop at the first failing test"),
        Proposal("tool_use", "pattern", "run pytest with -x -q to stop at the first failure"),
    ]
    client = _Decider('{"decision": "NOOP", "id": 0}', '{"decision": "UPDATE", "id": 1}')
    report = MineReport()
    cands = prepare(store, client, props, ws, report)  # type: ignore[arg-type]
    assert report.duplicates == 2 and len(cands) == 1 and cands[0].replaces == old.id
    assert "1: run pytest" in client.prompts[0] and old.id not in client.prompts[0]
    from harvey.memory.review import store_accepted

    (new,) = store_accepted(store, cands, None)
    assert store.require(old.id).superseded_by == new.id


def test_review_accept_edit_skip_quit(tmp_path: Path) -> None:
    from harvey.memory.mining import Proposal
    from harvey.memory.review import Candidate

    cands = [
        Candidate(Proposal("tool_use", "", f"memory {i}"), f"memory {i}", None) for i in range(4)
    ]
    answers = iter(["x", "a", "e", f"token {KEY}", "e", "edited text", "q"])
    shown: list[str] = []
    accepted, quit_ = review(cands, lambda _q: next(answers), shown.append, tmp_path)
    assert quit_ and [c.text for c in accepted] == ["memory 0", "edited text"]
    assert any("skipped: the text contains a credential" in s for s in shown)


def test_a_raw_newline_inside_a_string_is_tolerated() -> None:
    """SmolLM2 under the grammar once wrote a control character inside a text."""
    text = '{"memories": [{"type": "workflow", "kind": "pattern", "text": "two\nlines here",'
    text += ' "evidence": [1], "confidence": 0.5}]}'
    assert [p.text for p in parse_proposals(text)] == ["two lines here"]
