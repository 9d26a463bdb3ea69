"""One ``Source`` for a file the model may read: decided once, read once, hashed once."""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from harvey.errors import FileRefused, WorkspaceError
from harvey.workspace.kinds import DocType
from harvey.workspace.source import Source, open_for_model
from tests.documents.makers import pdf_bytes
from tests.fakes.quoting import QuotingOpenAI
from tests.harvey_process import invoke_harvey

_WATCHED: list[tuple[str, list[str]]] = []  # (path, opens): one audit hook serves every test


def _audit(event: str, args: tuple[Any, ...]) -> None:
    named = args[0] if args and isinstance(args[0], str | bytes) else None
    if event == "open" and named is not None:
        for target, opens in _WATCHED:
            if os.fsdecode(named) == target:
                opens.append(event)


@contextmanager
def opens_of(path: Path) -> Iterator[list[str]]:
    """Every open of ``path`` (by any call: ``open``, ``os.open``) while the block runs."""
    if not _HOOKED:
        sys.addaudithook(_audit)  # hooks cannot be removed: it watches only while asked
        _HOOKED.append(_audit)
    opens: list[str] = []
    entry = (str(path.resolve()), opens)
    _WATCHED.append(entry)
    try:
        yield opens
    finally:
        _WATCHED.remove(entry)


_HOOKED: list[Any] = []


def test_a_text_file_is_decided_once(workspace: Path) -> None:
    (workspace / "notes.md").write_text("# Notes\n\nThe boiler was serviced in May.\n")
    source = open_for_model(workspace, "notes.md")
    assert (source.name, source.size, source.document) == ("notes.md", 41, None)
    assert source.doc_type is DocType.PROSE and source.path == workspace / "notes.md"
    assert source.data(10) == b"# Notes\n\nTh"  # limit + 1: the caller can tell "more"
    assert source.data(5) == b"# Note" and source.reads == 1  # within the first read
    assert source.digest(10) == hashlib.sha256(b"# Notes\n\nTh").hexdigest()
    assert open_for_model(workspace, "notes.md").digest(1000) != source.digest(10)
    source.data(1000)  # past the first read's limit: read again, whole
    assert (
        source.reads == 2
        and source.digest(1000) == hashlib.sha256((workspace / "notes.md").read_bytes()).hexdigest()
    )


def test_documents_are_known_by_name_or_by_a_pdfs_signature(workspace: Path) -> None:
    (workspace / "report.pdf").write_bytes(pdf_bytes([["Alpha"]]))
    (workspace / "scan").write_bytes(pdf_bytes([["Beta"]]))  # no suffix: the signature says
    (workspace / "old.doc").write_bytes(b"\xd0\xcf\x11\xe0")
    (workspace / "main.py").write_text("print('hi')\n")
    assert open_for_model(workspace, "report.pdf").document == "pdf"
    assert open_for_model(workspace, "scan").document == "pdf"
    assert open_for_model(workspace, "old.doc").document == "unsupported"
    code = open_for_model(workspace, "main.py")
    assert code.document is None and code.doc_type is DocType.SOURCE


@pytest.mark.parametrize("asked", ["../outside.txt", "/etc/hostname", "link-out"])
def test_nothing_outside_the_workspace(workspace: Path, asked: str) -> None:
    (workspace.parent / "outside.txt").write_text("not yours")
    (workspace / "link-out").symlink_to(workspace.parent / "outside.txt")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        open_for_model(workspace, asked)


def test_a_secret_file_is_refused_by_the_name_asked_and_by_its_real_path(
    workspace: Path,
) -> None:
    (workspace / ".env").write_text("KEY=sk-live-123\n")
    (workspace / "notes.txt").symlink_to(workspace / ".env")
    for asked in (".env", "notes.txt", "./.ENV"):
        with pytest.raises(FileRefused) as refused:
            open_for_model(workspace, asked)
        assert refused.value.reason == "secret file"


def test_a_hard_link_a_fifo_a_folder_and_a_missing_file_are_one_line_each(
    workspace: Path,
) -> None:
    (workspace / "a.txt").write_text("one\n")
    os.link(workspace / "a.txt", workspace / "b.txt")
    with pytest.raises(FileRefused) as refused:
        open_for_model(workspace, "b.txt")
    assert refused.value.reason == "hard link"
    os.mkfifo(workspace / "pipe")  # refused from stat: an open would block on it
    with pytest.raises(WorkspaceError, match="not a regular file"):
        open_for_model(workspace, "pipe")
    (workspace / "folder").mkdir()
    with pytest.raises(WorkspaceError, match="is a directory"):
        open_for_model(workspace, "folder")
    with pytest.raises(WorkspaceError, match="no such file"):
        open_for_model(workspace, "gone.txt")


def test_a_file_swapped_for_a_link_after_the_decision_is_not_read(workspace: Path) -> None:
    (workspace / "a.txt").write_text("fine\n")
    (workspace.parent / "secret").write_text("not for the model\n")
    source = open_for_model(workspace, "a.txt")
    (workspace / "a.txt").unlink()
    (workspace / "a.txt").symlink_to(workspace.parent / "secret")
    with pytest.raises(WorkspaceError):
        source.data(100)


def test_a_pdf_is_read_and_hashed_once_per_analysis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``harvey analyze report.pdf``: its size estimate, its extraction, its chunks and its
    pages all come from one read of the file and one SHA-256 of its bytes."""
    monkeypatch.setenv("HARVEY_HOME", str(tmp_path / "home"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    data = pdf_bytes([[f"The boiler was serviced in May {i}."] * 30 for i in range(6)])
    (workspace / "report.pdf").write_bytes(data)
    hashed = _count_hashes(monkeypatch, data)
    with opens_of(workspace / "report.pdf") as opens, QuotingOpenAI() as srv:
        args = ("analyze", "report.pdf", "-i", "When was the boiler serviced?")
        proc = invoke_harvey(*args, "--backend", "openai", "--base-url", srv.url, cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    assert "report.pdf:p" in proc.stdout  # the answer cites its pages: the PDF was analysed
    assert len(opens) == 1, opens
    assert hashed == ["sha256"]


def test_a_source_is_what_analyze_file_takes(workspace: Path) -> None:
    """A library caller hands ``analyze_file`` the ``Source`` it opened; a path still works
    (the caller vouches for it) and is decided the same way."""
    (workspace / "x.md").write_text("")
    with pytest.raises(WorkspaceError, match="no such file"):
        Source.at(workspace / "missing.md")
    empty = Source.at(workspace / "x.md")
    assert (empty.size, empty.name) == (0, "x.md")


def test_a_digest_covers_the_bytes_it_was_asked_for(workspace: Path) -> None:
    (workspace / "notes.md").write_text("0123456789" * 5)
    source = open_for_model(workspace, "notes.md")
    whole = hashlib.sha256(b"0123456789" * 5).hexdigest()
    assert source.digest(1000) == whole
    assert source.digest(9) == hashlib.sha256(b"0123456789").hexdigest()
    assert source.digest(1000) == whole and source.reads == 1


def test_read_file_of_a_pdf_reads_it_once(workspace: Path) -> None:
    """The budget's size estimate and the page the model gets come from one read."""
    from harvey.tools.files import ReadFileTool
    from harvey.tools.registry import ToolContext

    class Roomy:  # a window the document's text fits: the guard lets the read through
        tokens = 1_000_000

        def tokens_for(self, size: int, _kind: str) -> int:
            return size // 4

    data = pdf_bytes([[f"Page {i} of the inspection report."] * 20 for i in range(3)])
    (workspace / "report.pdf").write_bytes(data)
    ctx = ToolContext(
        workspace=workspace,
        read_budget=lambda: Roomy(),  # type: ignore[arg-type,return-value]
        on_oversize=lambda *_args: "guarded",
    )
    with opens_of(workspace / "report.pdf") as opens:
        page = ReadFileTool().run(ctx, {"path": "report.pdf"})
    assert "Page 2 of the inspection report." in page
    assert len(opens) == 1, opens


def _count_hashes(monkeypatch: pytest.MonkeyPatch, data: bytes) -> list[str]:
    """The hashes (by name) taken of exactly ``data`` from here on."""
    hashed: list[str] = []
    for name in ("sha256", "blake2b"):
        real = getattr(hashlib, name)

        def counting(
            payload: bytes = b"", *, _real: Any = real, _name: str = name, **kw: Any
        ) -> Any:
            if payload == data:
                hashed.append(_name)
            return _real(payload, **kw)

        monkeypatch.setattr(hashlib, name, counting)
    return hashed


def test_ingest_of_a_pdf_reads_and_hashes_it_once(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Ingest keeps a file's hash to know it unchanged next time; a document's extraction
    is cached by a hash too: the same one, of the one read."""
    from harvey.knowledge.ingest import Ingester
    from harvey.knowledge.store import create_store

    monkeypatch.setenv("HARVEY_HOME", str(tmp_path / "home"))
    data = pdf_bytes([[f"The pump was replaced in {1900 + i}."] * 20 for i in range(3)])
    (workspace / "report.pdf").write_bytes(data)
    store = create_store(workspace, "s", "none", 0)
    hashed = _count_hashes(monkeypatch, data)
    with opens_of(workspace / "report.pdf") as opens:
        report = Ingester(store, workspace, None).ingest(["report.pdf"])
    assert report.added == 1 and report.chunks >= 1, report
    assert len(opens) == 1, opens
    assert hashed == ["sha256"]
