"""Knowledge stores under attack: links out of the workspace, secrets in ingested files,
a hostile model's search_knowledge calls, an embedder server that is down."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.harvey_process import run_harvey
from tests.security.conftest import API_KEY, Attack, snapshot

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


def harvey(
    ws: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run_harvey(*args, cwd=ws, env=env)


class _EmbedServer:
    """A loopback Ollama ``/api/embed`` that records what it was sent."""

    def __init__(self) -> None:
        self.bodies: list[Any] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.bodies.append(body)
                data = json.dumps(
                    {"embeddings": [[1.0, float(len(t) % 7), 0.5] for t in body["input"]]}
                )
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data.encode())

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def embed_server() -> Iterator[_EmbedServer]:
    server = _EmbedServer()
    yield server
    server.close()


@pytest.mark.slow
def test_links_out_of_the_workspace_are_not_ingested(victim_workspace: Path, outside: Path) -> None:
    before = snapshot(outside)
    (victim_workspace / "docs").mkdir()
    (victim_workspace / "docs" / "ok.md").write_text("harmless note\n")
    (victim_workspace / "docs" / "link.md").symlink_to(outside / "secret.txt")
    (victim_workspace / "docs" / "dirlink").symlink_to(outside)
    assert harvey(victim_workspace, "rag", "new", "s", "--embedder", "none").returncode == 0
    walked = harvey(victim_workspace, "rag", "ingest", "s", "docs")
    assert walked.returncode == 0, walked.stderr
    direct = harvey(victim_workspace, "rag", "ingest", "s", "docs/link.md")
    assert direct.returncode == 2 and "outside the workspace" in direct.stderr
    rows = json.loads(
        harvey(victim_workspace, "rag", "query", "s", "outside secret", "--json").stdout
    )
    assert all("outside secret" not in r["text"] for r in rows)
    db = (victim_workspace / ".harvey" / "rag" / "s.db").read_bytes()
    assert b"outside secret" not in db
    assert snapshot(outside) == before


@pytest.mark.slow
def test_remote_embedder_gets_redacted_text(
    victim_workspace: Path, embed_server: _EmbedServer
) -> None:
    (victim_workspace / "config.md").write_text(
        f"# Deploy\n\nThe key is {AWS_KEY} for the bucket.\n"
    )
    env = {"OLLAMA_HOST": embed_server.url}
    assert (
        harvey(
            victim_workspace, "rag", "new", "r", "--embedder", "ollama:nomic", env=env
        ).returncode
        == 0
    )
    done = harvey(victim_workspace, "rag", "ingest", "r", ".", env=env)
    assert done.returncode == 0, done.stderr
    assert "1 embedded" in done.stdout
    sent = json.dumps(embed_server.bodies)
    assert embed_server.bodies and all(b["truncate"] is False for b in embed_server.bodies)
    assert AWS_KEY not in sent and "[REDACTED]" in sent
    hits = json.loads(
        harvey(victim_workspace, "rag", "query", "r", "deploy bucket", "--json", env=env).stdout
    )
    assert hits[0]["path"] == "config.md"


@pytest.mark.slow
def test_embedder_down_fails_in_one_line_and_keeps_the_store(victim_workspace: Path) -> None:
    (victim_workspace / "a.md").write_text("first note about boilers\n")
    env = {"OLLAMA_HOST": "127.0.0.1:9"}
    assert (
        harvey(
            victim_workspace, "rag", "new", "d", "--embedder", "ollama:nomic", env=env
        ).returncode
        == 0
    )
    down = harvey(victim_workspace, "rag", "ingest", "d", ".", env=env)
    assert down.returncode == 1 and down.stderr.count("\n") == 1 and "unreachable" in down.stderr
    assert "Traceback" not in down.stderr
    status = harvey(victim_workspace, "rag", "status", "d")
    assert "files:       1" in status.stdout  # the chunks are in; only the vectors wait


@pytest.mark.slow
def test_hostile_search_knowledge_calls(
    attack: Attack, victim_workspace: Path, outside: Path
) -> None:
    before = snapshot(outside)
    (victim_workspace / "notes.md").write_text("The boiler pressure must stay under 2 bar.\n")
    harvey(victim_workspace, "rag", "new", "kb", "--embedder", "none")
    harvey(victim_workspace, "rag", "ingest", "kb", "notes.md")
    result = attack(
        [
            ("search_knowledge", {"query": "boiler pressure"}),
            ("search_knowledge", {"query": "../../outside/secret.txt", "k": 3}),
            ("search_knowledge", {"query": "x", "k": 10_000}),
            ("search_knowledge", {"query": '" OR * AND NEAR('}),
            ("search_knowledge", {}),
        ],
        "--rag",
        "kb",
    )
    assert result.proc.returncode == 0, result.proc.stderr
    outputs = result.tool_outputs
    assert outputs[0].startswith("notes.md:L1-L1 — score ")
    assert "under 2 bar" in outputs[0]
    assert any(o.startswith("error: k must be") for o in outputs)
    assert any(o.startswith("error: query must be") for o in outputs)
    assert all("outside secret" not in o for o in outputs)
    assert "Traceback" not in result.proc.stderr
    result.assert_secret_absent(API_KEY)
    result.assert_outside_untouched(before)
