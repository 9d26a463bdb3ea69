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


def _zip_with_hostile_members(chapter: str, *, climbing: bool) -> bytes:
    """An EPUB whose manifest climbs out with ``../`` and names an absolute path, and
    which holds a member stored as a symbolic link to ``/etc/passwd`` and one named
    ``../../escape.txt``: a ZIP is read in memory, so none of them reaches a file."""
    import io
    import stat
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as package:
        package.writestr(
            "META-INF/container.xml",
            '<container><rootfiles><rootfile full-path="OEBPS/c.opf"/></rootfiles></container>',
        )
        items = '<item id="c" href="link.xhtml"/><item id="d" href="c.xhtml"/>'
        if climbing:
            items += '<item id="a" href="../../../../outside/secret.txt"/>'
            items += '<item id="b" href="/etc/passwd"/>'
        spine = "".join(f'<itemref idref="{i}"/>' for i in "dcba")
        package.writestr(
            "OEBPS/c.opf",
            '<package xmlns="http://www.idpf.org/2007/opf">'
            f"<manifest>{items}</manifest><spine>{spine}</spine></package>",
        )
        package.writestr("OEBPS/c.xhtml", chapter)
        link = zipfile.ZipInfo("OEBPS/link.xhtml")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        package.writestr(link, "/etc/passwd")
        package.writestr("../../escape.txt", "escaped")
    return out.getvalue()


def test_documents_linked_out_or_with_hostile_zip_members_are_not_ingested(
    victim_workspace: Path, outside: Path, tmp_path: Path
) -> None:
    """A PDF that is a link out, a DOCX hard-linked to one outside, a DOCX that is a link
    to .env, and an EPUB whose members climb out: nothing outside is read or written."""
    import os

    from tests.documents.makers import docx_bytes, pdf_bytes
    from tests.harvey_process import invoke_harvey

    (outside / "out.pdf").write_bytes(pdf_bytes([["outside secret in a PDF"]]))
    (outside / "out.docx").write_bytes(docx_bytes([("p", "outside secret in a DOCX")]))
    docs = victim_workspace / "docs"
    docs.mkdir()
    (victim_workspace / ".env").write_text("OUTSIDE_TOKEN=outside secret in .env\n")
    (docs / "link.pdf").symlink_to(outside / "out.pdf")
    os.link(outside / "out.docx", docs / "hard.docx")
    (docs / "env.docx").symlink_to("../.env")
    chapter = "<p>inside chapter</p>"
    (docs / "book.epub").write_bytes(_zip_with_hostile_members(chapter, climbing=False))
    (docs / "climb.epub").write_bytes(_zip_with_hostile_members(chapter, climbing=True))
    before = snapshot(outside)
    home = tmp_path / "home"
    env = {"HARVEY_HOME": str(home)}
    made = invoke_harvey("rag", "new", "s", "--embedder", "none", cwd=victim_workspace, env=env)
    assert made.returncode == 0, made.stderr
    walked = invoke_harvey("rag", "ingest", "s", "docs", cwd=victim_workspace, env=env)
    assert walked.returncode == 0, walked.stderr
    assert "skipped docs/climb.epub: damaged — /etc/passwd is missing" in walked.stderr
    for name in ("link.pdf", "hard.docx", "env.docx", "climb.epub"):
        direct = invoke_harvey("rag", "ingest", "s", f"docs/{name}", cwd=victim_workspace, env=env)
        skipped = "skipped" in direct.stderr and ": 0 added" in direct.stdout
        assert direct.returncode != 0 or skipped, (name, direct.stdout)
    rows = invoke_harvey(
        "rag", "query", "s", "inside chapter", "--json", cwd=victim_workspace, env=env
    )
    texts = [row["text"] for row in json.loads(rows.stdout)]
    assert any("inside chapter" in text for text in texts)
    assert all("outside secret" not in text and "root:" not in text for text in texts)
    stored = b"".join(p.read_bytes() for p in victim_workspace.rglob("*.db*"))
    stored += b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    assert b"outside secret" not in stored and b"root:x:" not in stored
    assert snapshot(outside) == before
    assert not (tmp_path / "escape.txt").exists() and not (victim_workspace / "escape.txt").exists()
