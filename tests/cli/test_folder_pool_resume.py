"""Issue 14's "done when", through the real CLI: ``harvey analyze`` over a folder of a few
hundred files against three loopback llama.cpp servers, killed with SIGKILL and run
again (no finished call repeated, counted at the servers), one server stopped in the
middle of the second run, the per-file and overall answers printed."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.cli.conftest import Run
from tests.fakes.llamacpp import FakeLlamaCpp
from tests.fakes.quoting import ANSWER, QuotingLlamaCpp, map_requests
from tests.harvey_process import harvey_argv

SMALL = 240  # files of one chunk
LARGE = 6  # files of several chunks each


def _corpus(workspace: Path) -> None:
    for i in range(SMALL):
        folder = workspace / "corpus" / f"part{i % 8}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note{i:03}.md").write_text(f"Note {i}. The boiler was serviced on day {i}.\n")
    for i in range(LARGE):
        paragraphs = [f"Report {i}, section {s}. " + "Measured values. " * 45 for s in range(3)]
        (workspace / "corpus" / f"report{i}.md").write_text("\n\n".join(paragraphs))


def _stored() -> int:
    with sqlite3.connect(Path(os.environ["HARVEY_HOME"]) / "sessions.db") as db:
        return int(db.execute("SELECT COUNT(*) FROM map_results").fetchone()[0])


def _map_prompts(servers: list[FakeLlamaCpp]) -> list[str]:
    return [p for s in servers for p in map_requests(s)]


def _calls(servers: list[FakeLlamaCpp]) -> int:
    return sum(s.calls for s in servers)


@pytest.mark.slow
def test_a_folder_over_three_servers_killed_resumed_and_one_server_stopped(
    harvey: Run, workspace: Path
) -> None:
    _corpus(workspace)
    with ExitStack() as stack:
        servers = [
            stack.enter_context(QuotingLlamaCpp(slots=2, delay_per_call=0.01)) for _ in range(3)
        ]
        args = ["analyze", "corpus", "-i", "Summarise", "--backend", "openai"]
        args += [a for s in servers for a in ("--endpoint", s.url)]
        args += ["--chunk-size", "1000", "--yes", "--per-file"]

        # 1. killed with SIGKILL about a third of the way through the map phase
        first = subprocess.Popen(
            harvey_argv(*args),
            cwd=workspace,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while _calls(servers) < SMALL // 3 and time.monotonic() < deadline:
            assert first.poll() is None, "the first run ended before it was killed"
            time.sleep(0.01)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        done = _stored()
        assert 0 < done < SMALL
        for s in servers:
            s.requests.clear()

        # 2. the same command again; the third server stops once it has served some calls
        def stop_third() -> None:
            end = time.monotonic() + 60
            while servers[2].calls < 10 and time.monotonic() < end:
                time.sleep(0.005)
            servers[2].kill()

        stopper = threading.Thread(target=stop_third, daemon=True)
        stopper.start()
        second = harvey(*args)
        stopper.join(timeout=60)
        assert servers[2].dead
        prompts = _map_prompts(servers)

    assert second.returncode == 0, second.stderr
    chunks = int(re.findall(r"Processing chunk \d+/(\d+)…", second.stderr)[0])
    assert chunks > SMALL + LARGE  # the reports make several chunks each
    # no finished call is made again: the second run asked for exactly the chunks
    # the first did not store (a call the stopped server dropped was retried elsewhere)
    assert len(set(prompts)) == chunks - done
    assert len(prompts) - len(set(prompts)) <= 2  # the stopped server's two slots at most
    assert f"reused {done} of {chunks} map results" in second.stderr
    assert servers[0].calls > 0 and servers[1].calls > 0

    sections = re.findall(r"^## (.+)$", second.stdout, re.M)
    assert len(sections) == SMALL + LARGE + 1 and sections[-1] == "Overall"
    assert sections[0] == "corpus/report0.md" and "corpus/part7/note239.md" in sections
    assert f"## Overall\n\n{ANSWER}" in second.stdout

    texts = [f.read_text() for f in (workspace / ".harvey" / "sessions").glob("*.spmd")]
    (text,) = [t for t in texts if "THE END." in t]  # the killed run's file has no end
    assert text.count("INT. CHUNK ANALYSIS — corpus/") == 1
    assert f"files={SMALL + LARGE}, chunks={chunks}," in text and "endpoints=3]]" in text
    assert text.count("[[chunk-result: ") == chunks and " — error:" not in text
    assert "[[chunk-served: 3 of 3 endpoints]]" in text
    assert text.count("[[chunk-file: ") == SMALL + LARGE
    assert re.search(
        r"\[\[chunk-file: corpus/report0\.md — chunks=1-[2-9], boundary=paragraph", text
    )


def test_the_served_note_leaves_out_an_endpoint_that_never_answered(
    harvey: Run, workspace: Path
) -> None:
    (workspace / "d").mkdir()
    for i in range(6):
        (workspace / "d" / f"{i}.md").write_text(f"Note {i}.\n")
    (workspace / "big.md").write_text("\n\n".join(f"Part {i}. " + "text " * 60 for i in range(8)))
    with ExitStack() as stack:
        live = [stack.enter_context(FakeLlamaCpp(slots=2, delay_per_call=0.05)) for _ in range(2)]
        dead = FakeLlamaCpp().start()
        url = dead.url
        dead.stop()
        endpoints = [a for u in (live[0].url, live[1].url, url) for a in ("--endpoint", u)]
        folder = harvey("analyze", "d", "-i", "x", "--backend", "openai", *endpoints)
        one = harvey(
            "analyze", "big.md", "-i", "x", "--backend", "openai", *endpoints,
            "--chunk-size", "500", "--yes",
        )  # fmt: skip
    assert folder.returncode == 0, folder.stderr
    assert one.returncode == 0, one.stderr
    texts = [f.read_text() for f in (workspace / ".harvey" / "sessions").glob("*.spmd")]
    assert len(texts) == 2
    for text in texts:  # the folder's scene and the one file's
        assert "endpoints=3]]" in text and "[[chunk-served: 2 of 3 endpoints]]" in text
