"""A workspace file the model may read, decided once: ``open_for_model`` → ``Source``.

"What is this file, and may the model read it?" has one answer here: the real path
(inside the workspace, never Harvey's own state), not a secret file or a hard link by the
name asked for or by its real path, a regular file (a FIFO is refused from ``stat``
alone, before an open could block), its size on disk, whether it is a document (PDF,
Word, HTML, EPUB, by name or a PDF's signature) or plain text, prose or source. The
errors are the workspace's: ``WorkspaceError`` for an escape, ``NotAFile`` (with its
``kind``) for a missing file or one that is not regular, ``FileRefused`` for a file that
is there but not for the model.

The bytes are read at most once, through ``open_regular`` (which checks the opened
descriptor again), and hashed at most once: every step of one analysis of a PDF (its
size estimate, its extraction, its chunks, its pages) works from the same ``Source``.
What a reader makes of the bytes — the extracted document — is kept with them in
``derived``, so the next step does not make it again.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from harvey.errors import NotAFile, WorkspaceError
from harvey.workspace import secret_files
from harvey.workspace.files import (
    check_readable,
    file_kind,
    hard_link_refused,
    open_regular,
    relative_posix,
    secret_refused,
)
from harvey.workspace.kinds import DocType, detect_doc_type, document_kind
from harvey.workspace.paths import BINARY_SNIFF_BYTES, looks_binary, safe_path


def binary_refusal(name: str, reader: str) -> str:
    """What every reader says of a file that is not text (``Source.looks_binary``)."""
    return f"{name} looks like a binary file; {reader} reads text files"


@dataclass(eq=False)
class Source:
    """One file, as decided by ``open_for_model`` (or ``at`` for a path a caller vouches
    for); ``name`` is how it is shown and recorded (workspace-relative)."""

    path: Path
    name: str
    size: int
    document: str | None  # "pdf", "docx", "html", "epub", "unsupported"; None: plain text
    doc_type: DocType
    mtime_ns: int = 0  # from the same stat as ``size``: a reader that keeps files compares both
    derived: dict[str, object] = field(default_factory=dict)
    _data: bytes | None = None
    _limit: int = -1
    _digest: str | None = None
    _digested: int = -1  # how many bytes the digest covers
    reads: int = 0  # how many times the bytes were read (a PDF's analysis reads them once)

    @classmethod
    def at(cls, path: Path, name: str | None = None) -> Source:
        """The checks a reader makes of a resolved path it was handed: a secret file by
        either name, a file that is not regular, a hard link; then its size and kind."""
        name = name or path.name
        rule = secret_files.active()
        if rule.matches(name) or rule.matches(path.name):
            raise secret_refused(name)
        try:
            info = os.stat(path)
        except FileNotFoundError:
            raise NotAFile(f"{name}: no such file", "missing") from None
        except OSError as exc:
            raise WorkspaceError(f"cannot read {name}: {exc.strerror or exc}") from exc
        if stat.S_ISDIR(info.st_mode):
            raise NotAFile(f"{name} is a directory, not a file", "directory")
        if not stat.S_ISREG(info.st_mode):
            kind = file_kind(info.st_mode)
            raise NotAFile(f"{name} is {kind}, not a regular file", kind)
        if info.st_nlink > 1:
            raise hard_link_refused(name, info.st_nlink)
        document = document_kind(path)
        source = cls(path, name, info.st_size, document, detect_doc_type(path), info.st_mtime_ns)
        if document is None and not path.suffix and info.st_size:
            source.document = document_kind(path, source.head(5))  # a PDF without a suffix
        return source

    @property
    def is_document(self) -> bool:
        return self.document is not None

    def looks_binary(self) -> bool:
        """Not text, as ``harvey analyze``, ``/read`` and ``read_file`` all judge it: not a
        document (read as its extracted text) and a NUL byte in its first 8 KB. Raises
        ``OSError``/``WorkspaceError`` when it cannot be read."""
        return not self.is_document and looks_binary(self.head(BINARY_SNIFF_BYTES))

    def head(self, count: int) -> bytes:
        """The first ``count`` bytes (from the whole read when there was one)."""
        if self._data is not None:
            return self._data[:count]
        with self.open() as handle:
            return handle.read(count)

    def data(self, limit: int) -> bytes:
        """The bytes, at most ``limit + 1`` of them (so a caller can tell "too large"),
        read once: a later call within the limit of the first gets the same bytes."""
        if self._data is None or (limit > self._limit and len(self._data) > self._limit):
            with self.open() as handle:
                try:
                    self._data = handle.read(limit + 1)
                except OSError as exc:
                    raise WorkspaceError(f"cannot read {self.name}: {exc.strerror or exc}") from exc
            self._limit = limit
            self._digest = None
            self.reads += 1
        return self._data[: limit + 1]

    def digest(self, limit: int) -> str:
        """The SHA-256 of ``data(limit)``, computed once for the bytes it covers."""
        data = self.data(limit)
        if self._digest is None or self._digested != len(data):
            self._digest, self._digested = hashlib.sha256(data).hexdigest(), len(data)
        return self._digest

    def open(self) -> IO[bytes]:
        """The bytes as a stream, for a reader that never holds the whole file (a page of
        ``read_file``, ``edit_file``'s two passes); opened as ``data`` opens them."""
        try:
            return open_regular(self.path)
        except OSError as exc:
            raise WorkspaceError(f"cannot read {self.name}: {exc.strerror or exc}") from exc


def open_for_model(workspace: Path | str, path: Path | str) -> Source:
    """The file at ``path`` (relative to ``workspace`` or absolute), if the model may
    read it: inside the workspace, not Harvey's own state, not a secret file or a hard
    link by the name asked for or its real path, a regular file."""
    resolved = safe_path(workspace, path)
    check_readable(workspace, resolved, os.fspath(path))
    return Source.at(resolved, relative_posix(Path(workspace).resolve(), resolved))
