"""``harvey rag new/ingest/list/status/query/drop`` end to end, FTS-only stores."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.knowledge.conftest import Harvey


def test_new_ingest_query_json(harvey: Harvey, notes_ws: Path) -> None:
    assert harvey("rag", "new", "notes", "--embedder", "none").returncode == 0
    assert (notes_ws / ".harvey" / "rag" / "notes.db").is_file()
    done = harvey("rag", "ingest", "notes", "notes")
    assert done.returncode == 0, done.stderr
    assert "3 added" in done.stdout
    out = harvey("rag", "query", "notes", "how often do I bleed the radiators?", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert rows[0]["path"] == "notes/boiler.md"
    assert rows[0]["start_line"] == 1 and rows[0]["end_line"] == 4
    assert 0 < rows[0]["score"] <= 1
    assert "brass key" in rows[0]["text"]
    assert all(set(r) >= {"path", "start_line", "end_line", "score", "text"} for r in rows)
    assert [r["score"] for r in rows] == sorted((r["score"] for r in rows), reverse=True)


def test_hostile_query_text_is_no_fts_error(harvey: Harvey) -> None:
    harvey("rag", "new", "n", "--embedder", "none")
    harvey("rag", "ingest", "n", "notes")
    for text in ['boiler-pressure "x: AND', "*", "AND OR NOT", "NEAR(a b)", "^col:x", '"', "-"]:
        out = harvey("rag", "query", "n", text, "--json")
        assert out.returncode == 0, (text, out.stderr)
        assert isinstance(json.loads(out.stdout), list)


def test_reingest_is_incremental_and_prunes(harvey: Harvey, notes_ws: Path) -> None:
    harvey("rag", "new", "n", "--embedder", "none")
    harvey("rag", "ingest", "n", "notes")
    again = harvey("rag", "ingest", "n", "notes")
    assert "0 added, 0 updated, 3 unchanged, 0 removed" in again.stdout
    boiler = notes_ws / "notes" / "boiler.md"
    boiler.write_text(boiler.read_text() + "Service the boiler in spring.\n")
    (notes_ws / "notes" / "car.md").unlink()
    status = harvey("rag", "status", "n")
    assert "2 files changed on disk since" in status.stdout
    third = harvey("rag", "ingest", "n", "notes")
    assert "0 added, 1 updated, 1 unchanged, 1 removed" in third.stdout
    rows = json.loads(harvey("rag", "query", "n", "tyre pressure", "--json").stdout)
    assert all(r["path"] != "notes/car.md" for r in rows)
    rows = json.loads(harvey("rag", "query", "n", "service spring", "--json").stdout)
    assert rows[0]["path"] == "notes/boiler.md"


def test_touched_but_unchanged_file_is_not_rechunked(harvey: Harvey, notes_ws: Path) -> None:
    harvey("rag", "new", "n", "--embedder", "none")
    harvey("rag", "ingest", "n", "notes")
    garden = notes_ws / "notes" / "garden.md"
    os.utime(garden, (1, 1))
    out = harvey("rag", "ingest", "n", "notes")
    assert "0 updated, 3 unchanged" in out.stdout and "0 chunks written" in out.stdout


def test_skip_rules(harvey: Harvey, notes_ws: Path) -> None:
    (notes_ws / ".gitignore").write_text("secret/\n*.log\n!keep.log\n")
    for rel in ("secret/a.md", "x.log", "keep.log", ".git/config", "node_modules/m/i.js"):
        (notes_ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (notes_ws / rel).write_text("boiler\n")
    (notes_ws / "venv").mkdir()
    (notes_ws / "venv" / "pyvenv.cfg").write_text("home = x\n")
    (notes_ws / "venv" / "lib.py").write_text("boiler\n")
    (notes_ws / "blob.bin").write_bytes(b"boiler\x00\x01")
    harvey("rag", "new", "n", "--embedder", "none")
    out = harvey("rag", "ingest", "n", ".")
    assert out.returncode == 0, out.stderr
    assert "skipped blob.bin: binary" in out.stderr
    paths = {
        r["path"]
        for r in json.loads(harvey("rag", "query", "n", "boiler", "-k", "50", "--json").stdout)
    }
    assert paths == {"notes/boiler.md", "keep.log"}


def test_bad_input_one_line(harvey: Harvey, notes_ws: Path, tmp_path: Path) -> None:
    bad = harvey("rag", "new", "../evil")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "bad store name" in bad.stderr
    missing = harvey("rag", "query", "nope", "x")
    assert missing.returncode == 2 and "no knowledge store 'nope'" in missing.stderr
    harvey("rag", "new", "n", "--embedder", "none")
    assert harvey("rag", "new", "n", "--embedder", "none").returncode == 2
    assert harvey("rag", "new", "m", "--embedder", "bogus").returncode == 2
    outside = harvey("rag", "ingest", "n", str(tmp_path))
    assert outside.returncode == 2 and "outside the workspace" in outside.stderr
    other = harvey("rag", "ingest", "n", "notes", "--embedder", "local")
    assert other.returncode == 2 and "made with embedder none, not local" in other.stderr
    assert "Traceback" not in bad.stderr + missing.stderr + outside.stderr + other.stderr


def test_corrupted_store_fails_in_one_line_and_spares_others(
    harvey: Harvey, notes_ws: Path
) -> None:
    harvey("rag", "new", "good", "--embedder", "none")
    harvey("rag", "ingest", "good", "notes")
    (notes_ws / ".harvey" / "rag" / "bad.db").write_bytes(b"this is not sqlite" * 200)
    out = harvey("rag", "query", "bad", "boiler")
    assert out.returncode == 1 and out.stderr.startswith("harvey: store 'bad'")
    assert "Traceback" not in out.stderr
    assert json.loads(harvey("rag", "query", "good", "boiler", "--json").stdout)


def test_list_status_drop(harvey: Harvey, notes_ws: Path) -> None:
    harvey("rag", "new", "a", "--embedder", "none")
    harvey("rag", "ingest", "a", "notes/boiler.md")
    listing = harvey("rag", "list")
    assert "a  1 files" in listing.stdout
    status = harvey("rag", "status", "a")
    assert "embedder:    none" in status.stdout and "files:       1" in status.stdout
    no = harvey("rag", "drop", "a", stdin="n\n")
    assert no.returncode != 0 and (notes_ws / ".harvey" / "rag" / "a.db").exists()
    yes = harvey("rag", "drop", "a", "--yes")
    assert yes.returncode == 0 and not (notes_ws / ".harvey" / "rag" / "a.db").exists()
