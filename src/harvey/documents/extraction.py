"""The front of the document layer: ``extract(path) -> Document``, cached by content.

Which files are documents is decided by name (``.pdf``, ``.docx``, ``.html``,
``.epub``; ``.doc``, ``.odt`` and friends are refused as unsupported) and, for a
file without a known suffix, by the ``%PDF-`` signature. Everything else stays
plain text for the readers that already handle it.

Every format is parsed in a child process under time, memory and output limits
(``runner.py``). The bytes are read once through ``open_regular`` (a secret file, a hard link, a
FIFO or a link swapped in are refused as for any read), at most
``MAX_DOCUMENT_BYTES``. Their SHA-256 names the cache entry in
``HARVEY_HOME/cache/documents/``, written through ``ownfiles`` (never through a
link): a second read, an analysis rerun or a re-ingest of the same bytes does not
extract again. A document opened with a password is never cached, and the
password is never written anywhere. Nor is a document whose text holds a secret
(what ``redact`` would remove: a configured key, a token-shaped string): the cache
is a store that outlives the session, and the text is kept unredacted there so its
page and heading offsets stay true, so such a document is kept in memory only.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from harvey.documents.model import Document
from harvey.documents.pdf import PASSWORD_ENV
from harvey.documents.runner import Limits, extract_in_child
from harvey.errors import DocumentError, WorkspaceError
from harvey.workspace.files import open_regular as _open_regular
from harvey.workspace.kinds import document_kind

if TYPE_CHECKING:
    from harvey.ownfiles.nofollow import Folder
    from harvey.workspace.source import Source

MAX_DOCUMENT_BYTES = 200 * 1024 * 1024
CACHE_VERSION = 1
_SAMPLE_PAGES = 3


def is_document(path: Path, head: bytes = b"") -> bool:
    return document_kind(path, head) is not None


def _password(password: str | None) -> str | None:
    return password if password is not None else (os.environ.get(PASSWORD_ENV) or None)


def _read_bytes(path: Path, name: str) -> bytes:
    try:
        with _open_regular(path) as handle:
            data = handle.read(MAX_DOCUMENT_BYTES + 1)
    except OSError as exc:
        raise WorkspaceError(f"cannot read {name}: {exc.strerror or exc}") from exc
    if len(data) > MAX_DOCUMENT_BYTES:
        raise DocumentError(
            f"{name}: over {MAX_DOCUMENT_BYTES // 2**20} MB — too large to extract", "too-large"
        )
    return data


def harvey_home() -> Path:
    """``config.default_harvey_home``'s rule, restated: importing ``config`` from here
    would close an import cycle (config → llm → context → documents)."""
    if os.environ.get("HARVEY_HOME"):
        return Path(os.environ["HARVEY_HOME"]).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("harvey", appauthor=False))


def _cache_folder(create: bool) -> Folder:
    from harvey.ownfiles.nofollow import Location

    where = Location.under(harvey_home(), "cache/documents", home=True)
    return where.open(create=create)


def _cache_name(digest: str, kind: str) -> str:
    return f"{digest}-{kind}-v{CACHE_VERSION}.json"


def _cached(name: str) -> Document | None:
    try:
        with _cache_folder(create=False) as folder:
            raw = folder.read_bytes(name)
        return Document.from_json(json.loads(raw)) if raw else None
    except (OSError, WorkspaceError, ValueError, KeyError, TypeError):
        return None  # an unusable cache is a miss, never an error


def _store(name: str, document: Document) -> None:
    try:
        with _cache_folder(create=True) as folder:
            folder.replace(name, json.dumps(document.to_json()).encode("utf-8"), 0o600)
    except (OSError, WorkspaceError):
        pass  # a read still works without its cache


def extract(
    path: Path,
    name: str | None = None,
    *,
    password: str | None = None,
    limits: Limits | None = None,
) -> Document:
    """The text of the document at ``path`` (already checked to be in the workspace and
    not secret by the caller); ``DocumentError`` with one line when it cannot be read."""
    name = name or path.name
    return extract_data(_read_bytes(path, name), path, name, password=password, limits=limits)


def extract_source(
    source: Source, *, password: str | None = None, limits: Limits | None = None
) -> Document:
    """``extract`` of a ``Source``: its bytes read and hashed once, and the document kept
    with it, so every step of one analysis (size, chunks, pages) uses one extraction."""
    kept = source.derived.get("document")
    if isinstance(kept, Document) and password is None and limits is None:
        return kept
    data = _source_bytes(source)
    document = _extract(
        data,
        source.digest(MAX_DOCUMENT_BYTES),
        source.path,
        source.name,
        password=password,
        limits=limits,
    )
    if password is None and limits is None:
        source.derived["document"] = document
    return document


def _source_bytes(source: Source) -> bytes:
    data = source.data(MAX_DOCUMENT_BYTES)
    if len(data) > MAX_DOCUMENT_BYTES:
        raise DocumentError(
            f"{source.name}: over {MAX_DOCUMENT_BYTES // 2**20} MB — too large to extract",
            "too-large",
        )
    return data


def extract_data(
    data: bytes,
    path: Path,
    name: str,
    *,
    password: str | None = None,
    limits: Limits | None = None,
) -> Document:
    """``extract`` of bytes a caller already read (through ``open_regular``): a reader
    that hashes what it read (ingest) extracts exactly those bytes."""
    if len(data) > MAX_DOCUMENT_BYTES:
        raise DocumentError(
            f"{name}: over {MAX_DOCUMENT_BYTES // 2**20} MB — too large to extract", "too-large"
        )
    digest = hashlib.sha256(data).hexdigest()
    return _extract(data, digest, path, name, password=password, limits=limits)


def _extract(
    data: bytes,
    digest: str,
    path: Path,
    name: str,
    *,
    password: str | None,
    limits: Limits | None,
) -> Document:
    kind = document_kind(path, data[:8])
    if kind is None or kind == "unsupported":
        raise DocumentError(
            f"{name}: unsupported format {path.suffix or '(no suffix)'} — Harvey reads PDF, "
            "DOCX, HTML, EPUB and plain text",
            "unsupported",
        )
    password = _password(password)
    entry = _cache_name(digest, kind)
    known = _known(entry, password)
    if known is not None:
        return known
    document = extract_in_child(kind, data, name, limits or Limits(), password)
    _remember(entry, document, password)
    return document


#: Documents opened with a password or holding a secret, kept in this process only
#: (never on disk), so the steps of one run (size, chunks, pages) do not extract them
#: again each.
_UNLOCKED: dict[tuple[str, str], Document] = {}
_UNLOCKED_MAX = 4


def _key(entry: str, password: str) -> tuple[str, str]:
    return entry, hashlib.sha256(password.encode("utf-8", "surrogatepass")).hexdigest()


def _known(entry: str, password: str | None) -> Document | None:
    """An earlier extraction of these bytes: the disk cache, or this process's memory
    for one opened with a password or holding a secret."""
    if password is None:
        cached = _cached(entry)
        if cached is not None:
            return cached
    return _UNLOCKED.get(_key(entry, password or ""))


def _holds_secret(document: Document) -> bool:
    from harvey.redact import active

    redactor = active()
    texts = [document.text, *(heading.title for heading in document.headings)]
    return any(redactor.redact(text) != text for text in texts)


def _remember(entry: str, document: Document, password: str | None) -> None:
    if any("time limit" in note for note in document.notes):
        return  # another try may get further
    if password is None and not _holds_secret(document):
        _store(entry, document)
        return
    while len(_UNLOCKED) >= _UNLOCKED_MAX:
        _UNLOCKED.pop(next(iter(_UNLOCKED)))
    _UNLOCKED[_key(entry, password or "")] = document


def estimated_text_bytes(path: Path, name: str | None = None) -> int:
    """``estimated_source_text_bytes`` of the file at ``path``."""
    from harvey.workspace.source import Source

    return estimated_source_text_bytes(Source.at(path, name or path.name))


def estimated_source_text_bytes(source: Source) -> int:
    """The UTF-8 size the extracted text will have, without extracting a long PDF whole:
    a cached document's exact size, else a PDF's first pages scaled to its page count.
    Other formats are extracted (bounded, and kept for the read that follows)."""
    data = _source_bytes(source)
    kind = document_kind(source.path, data[:8])
    if kind != "pdf":
        return len(extract_source(source).text.encode("utf-8"))
    password = _password(None)
    entry = _cache_name(source.digest(MAX_DOCUMENT_BYTES), kind)
    known = _known(entry, password)
    if known is not None:
        source.derived["document"] = known
        return len(known.text.encode("utf-8"))
    try:
        sample = extract_in_child(
            "pdf", data, source.name, Limits(max_pages=_SAMPLE_PAGES, seconds=20), password
        )
    except DocumentError as exc:
        if exc.reason != "no-text":
            raise
        # opening pages without text (a scanned cover, blank pages) say nothing of the
        # rest: the whole file decides, and its text is kept for the read to come
        return len(extract_source(source).text.encode("utf-8"))
    if len(sample.page_starts) >= sample.page_count:  # the sample is the whole file
        _remember(entry, sample, password)
        source.derived["document"] = sample
        return len(sample.text.encode("utf-8"))
    sampled = max(1, len(sample.page_starts))
    per_page = len(sample.text.encode("utf-8")) / sampled
    return int(per_page * min(sample.page_count, Limits().max_pages))


__all__ = [
    "MAX_DOCUMENT_BYTES",
    "estimated_source_text_bytes",
    "estimated_text_bytes",
    "extract",
    "extract_data",
    "extract_source",
    "is_document",
]
