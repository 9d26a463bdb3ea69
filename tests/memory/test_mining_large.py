"""A recording larger than the model's context is mined in parts through the map phase
(counted at a loopback server that enforces its window), and the parts' proposals merged."""

from __future__ import annotations

import json
from pathlib import Path

from harvey.llm.scripted import Reply
from harvey.memory.mining import Proposal, merge, transcript_parts
from harvey.session.fountain import parse_session
from tests.fakes.servers import FakeOpenAI
from tests.harvey_process import invoke_harvey

WINDOW = 2048
TURNS = 40


def scene(n: int, reply: str) -> str:
    return (
        f"INT. HARVEY AND TESTER TALKING 2026-06-24 10:{n // 60:02d}:{n % 60:02d}\n\n"
        "Harvey and TESTER are in chat mode. Model: FAKE. Workspace: /ws.\n\n"
        f"TESTER\nWhat about marker{n:03d} in module {n}?\n\n"
        f"HARVEY\nForwarding to FAKE.\n\nFAKE\n{reply}\n\n"
    )


def big_recording(path: Path) -> None:
    scenes = [scene(n, f"Module {n} is handled by the marker{n:03d} rule.") for n in range(TURNS)]
    long_reply = "\n".join(f"Line {i} of the long answer, word tail{i:03d}." for i in range(150))
    scenes.append(scene(TURNS, long_reply))  # one scene alone larger than a part
    path.write_text("Title: Harvey Session\n\nFADE IN:\n\n\n" + "\n".join(scenes) + "THE END.\n")


def memory(text: str, scene_no: int, confidence: float = 0.6) -> dict[str, object]:
    return {"type": "project_fact", "kind": "fact", "text": text, "evidence": [scene_no],
            "confidence": confidence}  # fmt: skip


def test_a_recording_over_the_window_is_mined_in_parts(tmp_path: Path, isolated_env: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "harvey.yaml").write_text(f"context_window: {WINDOW}\nchunking:\n  concurrency: 3\n")
    recording = ws / "big.spmd"
    big_recording(recording)
    parts = transcript_parts(parse_session(recording), context_window=WINDOW)
    assert len(recording.read_bytes()) > WINDOW * 4 and len(parts) >= 3
    answers = [
        Reply(json.dumps({"memories": [
            memory(f"module {i} has its own handling rule number {i}", i + 1),
            memory("every module is handled by a marker rule", i + 1, 0.5 + i / 100),
        ]}))
        for i in range(len(parts))
    ]  # fmt: skip
    with FakeOpenAI(answers, context_window=WINDOW, max_prompt_tokens=WINDOW) as srv:
        proc = invoke_harvey(
            "memory",
            "mine",
            "big.spmd",
            "--yes",
            "--backend",
            "openai",
            "--base-url",
            srv.url,
            cwd=ws,
        )
        requests = srv.chat_requests
        rejected = srv.rejected
    assert proc.returncode == 0, proc.stderr
    assert len(requests) == len(parts) and rejected == 0  # one call per part, each fits
    assert all(r["response_format"]["type"] == "json_schema" for r in requests)
    sent = "\n".join(r["messages"][-1]["content"] for r in requests)
    for n in range(TURNS):
        assert f"marker{n:03d}" in sent
    for i in range(150):  # the long scene is cut at its lines, not truncated to its head
        assert f"tail{i:03d}" in sent
    assert f"{len(parts) + 1} memories stored" in proc.stdout
    listed = json.loads(invoke_harvey("memory", "list", "--json", cwd=ws).stdout)
    shared = [m for m in listed if m["text"] == "every module is handled by a marker rule"]
    assert len(shared) == 1 and shared[0]["scenes"] == list(range(1, len(parts) + 1))


def test_merge_keeps_the_first_wording_and_joins_evidence() -> None:
    merged = merge(
        [
            [Proposal("tool_use", "pattern", "Run make check first.", [2], 0.4)],
            [
                Proposal("workflow", "", "run make  check first", [7, 2], 0.9),
                Proposal("tool_use", "pitfall", "never push on Fridays", [9], 0.5),
            ],
        ]
    )
    assert [(p.type, p.text, p.evidence, p.confidence) for p in merged] == [
        ("tool_use", "Run make check first.", [2, 7], 0.9),
        ("tool_use", "never push on Fridays", [9], 0.5),
    ]
