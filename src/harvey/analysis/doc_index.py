"""A document's units, their lexical index and their vectors: made once, kept, reused.

Asking a second question about a megabyte of text should not read it again:
the units (whole sentences and lines, ``chunks.units``) of a document, the
wordllama vector of every unit, and the MiniLM vector of every unit a question
has sent to it are kept under ``HARVEY_HOME/cache/indexes/``, keyed by the
hash of the text, the unit splitter and the embedders. The lexical index is
rebuilt from the units on load (milliseconds; it would cost more to store).
The folder is bounded (``MAX_CACHE_BYTES``, the least recently used dropped
first) and ``harvey cache clear`` empties it.

Writes go through ``ownfiles`` (never through a link); a cache file that does not
read back as one of ours is ignored and rebuilt, never trusted.
"""

from __future__ import annotations

import hashlib
import io
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from harvey.chunks.units import Unit, split_units
from harvey.errors import HarveyError
from harvey.ownfiles.nofollow import Folder, Location
from harvey.retrieval.embedders import Embedder
from harvey.retrieval.lexical import LexicalIndex

#: Part of every key: a change to how units are cut or what is embedded makes new ones.
INDEX_FORMAT = "units-3"
CACHE_FOLDER = ("cache", "indexes")
#: The cache folder's bound; past it the least recently used indexes go.
MAX_CACHE_BYTES = 512 * 1024 * 1024
#: Indexes kept in this process (a REPL asking about the same file again).
_IN_MEMORY = 8
#: A unit's vector text is its section's heading and the unit, cut here: a sentence that
#: says "it" is about its section's subject.
_HEADING_CHARS = 120
#: Measured (BENCHMARKS.md, "Reader questions"): with its heading every unit of a section
#: about reservoirs is "about reservoirs", and "list every reservoir" takes them all.
HEADING_CONTEXT = False
_EMBED_CHARS = 1000


@dataclass
class DocumentIndex:
    """One text's units (offsets into the text), the heading each one stands under, the
    lexical index, and the vectors (``deep`` rows filled as questions need them)."""

    key: str
    units: list[Unit]
    section: np.ndarray  # each unit's section: the index of its heading unit, -1 before any
    lexical: LexicalIndex
    quick: np.ndarray | None = None
    deep: np.ndarray | None = None
    has_deep: np.ndarray | None = None
    dirty: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __len__(self) -> int:
        return len(self.units)

    def embed_text(self, i: int, *, heading: bool = HEADING_CONTEXT) -> str:
        """What a unit's vector is made of: its words, after its heading with ``heading``."""
        unit = self.units[i]
        text = " ".join(unit.text.split())[:_EMBED_CHARS]
        head = int(self.section[i])
        if not heading or head < 0 or head == i:
            return text
        title = " ".join(self.units[head].text.strip("#=-~* ").split())[:_HEADING_CHARS]
        return f"{title}: {text}"

    def ensure_deep(self, ids: Sequence[int], embedder: Embedder) -> np.ndarray:
        """The deep vectors of ``ids`` (rows in that order), embedding only those missing."""
        with self.lock:
            n = len(self.units)
            if self.deep is None or self.has_deep is None or self.deep.shape[1] != embedder.dims:
                self.deep = np.zeros((n, embedder.dims), dtype=np.float32)
                self.has_deep = np.zeros(n, dtype=bool)
            missing = [i for i in dict.fromkeys(ids) if not self.has_deep[i]]
            if missing:
                self.deep[missing] = embedder.embed([self.embed_text(i) for i in missing])
                self.has_deep[missing] = True
                self.dirty = True
            return self.deep[list(ids)]


def _sections(units: Sequence[Unit]) -> np.ndarray:
    out = np.full(len(units), -1, dtype=np.int64)
    current = -1
    for i, unit in enumerate(units):
        if unit.heading:
            current = i
        out[i] = current
    return out


def index_key(text: str, source: bool, embedders: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    parts = f"{INDEX_FORMAT}|{source}|{embedders}|{HEADING_CONTEXT}"
    tag = hashlib.sha256(parts.encode()).hexdigest()[:8]
    return f"{digest}-{tag}"


def build_index(text: str, *, source: bool, quick: Embedder | None, key: str) -> DocumentIndex:
    """Units, lexical index and the quick vectors of every unit (the deep ones wait)."""
    units = split_units(text, source=source)
    sections = _sections(units)
    index = DocumentIndex(key, units, sections, LexicalIndex([u.text for u in units]))
    if quick is not None and units:
        index.quick = quick.embed([index.embed_text(i) for i in range(len(units))])
    index.dirty = True
    return index


class IndexCache:
    """Indexes kept in memory (a few) and on disk (bounded), by key."""

    def __init__(self, harvey_home: Path | None, max_bytes: int = MAX_CACHE_BYTES) -> None:
        self.location = (
            Location.under(harvey_home, "/".join(CACHE_FOLDER), home=True)
            if harvey_home is not None
            else None
        )
        self.max_bytes = max_bytes
        self._memory: OrderedDict[str, DocumentIndex] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str, text: str, source: bool) -> DocumentIndex | None:
        with self._lock:
            found = self._memory.get(key)
            if found is not None:
                self._memory.move_to_end(key)
                return found
        loaded = self._load(key, text, source)
        if loaded is not None:
            self._remember(loaded)
        return loaded

    def _remember(self, index: DocumentIndex) -> None:
        with self._lock:
            self._memory[index.key] = index
            self._memory.move_to_end(index.key)
            while len(self._memory) > _IN_MEMORY:
                self._memory.popitem(last=False)

    def put(self, index: DocumentIndex) -> None:
        self._remember(index)
        self.save(index)

    def _load(self, key: str, text: str, source: bool) -> DocumentIndex | None:
        if self.location is None:
            return None
        try:
            with self.location.open(create=False) as folder:
                data = folder.read_bytes(f"{key}.npz")
            if data is None:
                return None
            with np.load(io.BytesIO(data), allow_pickle=False) as z:
                if str(z["key"]) != key:
                    return None
                starts, ends, heads = z["starts"], z["ends"], z["heads"]
                quick = z["quick"] if z["quick"].size else None
                deep = z["deep"] if z["deep"].size else None
                has_deep = z["has_deep"] if deep is not None else None
        except (OSError, HarveyError, ValueError, KeyError, EOFError):
            return None
        if len(starts) and int(ends.max()) > len(text):
            return None
        units = [
            Unit(int(a), int(b), text[a:b], bool(h))
            for a, b, h in zip(starts, ends, heads, strict=True)
        ]
        return DocumentIndex(
            key,
            units,
            _sections(units),
            LexicalIndex([u.text for u in units]),
            quick,
            deep,
            has_deep,
        )

    def save(self, index: DocumentIndex) -> None:
        """Write ``index`` when it changed (best effort: a full disk or an unsafe folder
        costs the reuse, never the answer)."""
        if self.location is None or not index.dirty:
            return
        buffer = io.BytesIO()
        with index.lock:
            empty = np.zeros((0, 0), dtype=np.float32)
            np.savez(
                buffer,
                key=np.array(index.key),
                starts=np.array([u.start for u in index.units], dtype=np.int64),
                ends=np.array([u.end for u in index.units], dtype=np.int64),
                heads=np.array([u.heading for u in index.units], dtype=bool),
                quick=index.quick if index.quick is not None else empty,
                deep=index.deep if index.deep is not None else empty,
                has_deep=index.has_deep if index.has_deep is not None else np.zeros(0, bool),
            )
            index.dirty = False
        try:
            with self.location.open() as folder:
                folder.replace(f"{index.key}.npz", buffer.getvalue())
                self._bound(folder)
        except (OSError, HarveyError):
            index.dirty = True

    def _bound(self, folder: Folder) -> None:
        """Drop the least recently written files past ``max_bytes``."""
        names = [n for n in folder.names() if n.endswith(".npz")]
        stats = [(n, folder.entry(n)) for n in names]
        files = sorted(((st.st_mtime, st.st_size, n) for n, st in stats if st is not None))
        total = sum(size for _t, size, _n in files)
        for _t, size, name in files:
            if total <= self.max_bytes:
                break
            folder.remove(name)
            total -= size


def cache_usage(harvey_home: Path) -> tuple[int, int]:
    """How many document indexes are kept, and their bytes."""
    location = Location.under(harvey_home, "/".join(CACHE_FOLDER), home=True)
    try:
        folder = location.open(create=False)
    except (FileNotFoundError, HarveyError):
        return 0, 0
    with folder:
        stats = [folder.entry(n) for n in folder.names() if n.endswith(".npz")]
    return sum(1 for st in stats if st), sum(st.st_size for st in stats if st)


def clear_cache(harvey_home: Path) -> tuple[int, int]:
    """Remove every kept document index: (files, bytes) removed."""
    location = Location.under(harvey_home, "/".join(CACHE_FOLDER), home=True)
    try:
        folder = location.open(create=False)
    except (FileNotFoundError, HarveyError):
        return 0, 0
    removed = size = 0
    with folder:
        for name in folder.names():
            st = folder.entry(name)
            if st is None or not name.endswith(".npz"):
                continue
            folder.remove(name)
            removed += 1
            size += st.st_size
    return removed, size


__all__ = [
    "DocumentIndex",
    "IndexCache",
    "build_index",
    "cache_usage",
    "clear_cache",
    "index_key",
]
