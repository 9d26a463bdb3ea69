"""Which files a whole-folder ``harvey analyze`` reads, and how they reach the engine.

``collect_files`` turns the command's PATHs into files: each PATH must be
inside the workspace and exist; a folder is walked by ``workspace/files.py`` (the
walk a knowledge-store ingest makes: no ``.git/``, ``.harvey/``, virtualenvs,
``node_modules/`` or what ``.gitignore`` ignores); ``--include``/``--exclude``
globs filter what was found; empty, binary and unreadable files are skipped
and named, and so are secret files and hard links (``not_for_model``: never
read for the model, counted like binaries). When nothing is left the run stops
before anything is opened or written, with one line saying which of these
emptied it (``UsageError``).

``analyze_paths`` is the folder counterpart of ``api.analyze_file``: the
same ``chunking:`` settings (the chunk
size sized per document type when it is ``auto``), the same ``max_chunks``
question (asked first from the files' sizes alone, then from the counted
chunks), then ``FolderRun`` (``folder_analysis.py``) with the
collaborators a session lends it (recorder, cancel event, stored results).

Memory: files are chunked up front so the run knows every file's chunk count
(its prompts say "chunk i of N"); the chunks of files up to ``KEEP_BYTES`` in
all are kept, the rest are cut again when the map phase reaches them, and a
file over one window is streamed as in a one-file analysis.
"""

from __future__ import annotations

import enum
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from harvey.analysis.api import (
    AnalyzeOptions,
    Collaborators,
    Heuristic,
    Sizing,
    answer_plan,
    chunking_of,
    harvey_home_or_none,
)
from harvey.analysis.file_chunks import (
    chunk_config,
    chunks_of,
    document_page_starts,
    document_pages,
    source_size,
)
from harvey.analysis.folder_analysis import FolderResult, FolderRun
from harvey.analysis.folder_map import FileChunks
from harvey.analysis.progress import make_progress
from harvey.analysis.semantic import finder_for
from harvey.chunks.chunking import Chunk, ChunkConfig, boundary_name
from harvey.documents.extraction import extract_source
from harvey.errors import DocumentError, FileRefused, NotAFile, UsageError, WorkspaceError
from harvey.workspace.files import (
    GitIgnore,
    matches_any,
    not_for_model,
    relative_posix,
    walk_files,
)
from harvey.workspace.kinds import DocType
from harvey.workspace.paths import BINARY_SNIFF_BYTES, looks_binary, safe_path
from harvey.workspace.source import Source

if TYPE_CHECKING:
    from harvey.config.settings import ChunkingSettings, Settings
    from harvey.protocols import LLMClient

KEEP_BYTES = 64 * 1024 * 1024  # chunk text kept between the count and the map phase
SKIPPED_RULES = (
    "binary files, secret files, hard links, .git/, .harvey/, virtualenvs, node_modules/ and "
    "what .gitignore ignores are skipped"
)


@dataclass
class Collected:
    """The files to analyse (resolved, in order) and those skipped, with why."""

    files: list[Path] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def skipped_line(self, limit: int = 5) -> str:
        """``skipped 3 files: a.bin (binary), …`` for stderr."""
        shown = ", ".join(f"{name} ({why})" for name, why in self.skipped[:limit])
        more = f" and {len(self.skipped) - limit} more" if len(self.skipped) > limit else ""
        count = len(self.skipped)
        return f"skipped {count} file{'s' if count != 1 else ''}: {shown}{more}"


def _relative(root: Path, path: Path) -> str:
    return relative_posix(root, path) if path != root else "."


def _unreadable(root: Path, path: Path) -> str | None:
    """Why ``path`` cannot be analysed as text (``None``: it can), from its name, its
    ``Source`` (stat alone: a FIFO never blocks) and its head; a document is extracted now
    (bounded, and cached by content for the analysis that follows)."""
    refused = not_for_model(root, path)
    if refused is not None:
        return refused
    try:
        source = Source.at(path, _relative(root, path))
        if source.size == 0:
            return "empty"
        if source.is_document:
            extract_source(source)
            return None
        head = source.head(BINARY_SNIFF_BYTES)
    except DocumentError as exc:
        return str(exc).split(": ", 1)[-1]
    except FileRefused as exc:
        return exc.reason
    except NotAFile as exc:
        return "no such file" if exc.kind == "missing" else exc.kind
    except (OSError, WorkspaceError) as exc:
        return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return "binary" if looks_binary(head) else None


def collect_files(
    workspace: Path,
    paths: Sequence[Path],
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> Collected:
    """The files PATHs name (relative PATHs are relative to the current folder).

    Raises ``UsageError`` for a PATH outside the workspace or missing, and when no
    file is left: none found, none matching the globs, or none readable as text.
    """
    root = workspace.resolve()
    ignore = GitIgnore.of_workspace(root)
    found: list[Path] = []
    seen: set[Path] = set()
    for raw in paths:
        try:
            path = safe_path(root, raw if raw.is_absolute() else Path.cwd() / raw)
        except WorkspaceError as exc:
            raise UsageError(f"{raw}: {exc}") from exc
        if os.path.isdir(path):
            listed = list(walk_files(root, path, ignore))
        elif os.path.lexists(path):
            listed = [path]
        else:
            raise UsageError(f"{raw}: no such file or folder")
        for f in listed:
            if f not in seen:
                seen.add(f)
                found.append(f)
    shown = " ".join(str(p) for p in paths)
    if not found:
        raise UsageError(f"{shown}: no files to analyse ({SKIPPED_RULES})")
    wanted = [
        f
        for f in found
        if (not include or matches_any(_relative(root, f), include))
        and not (exclude and matches_any(_relative(root, f), exclude))
    ]
    if not wanted:
        raise UsageError(f"--include/--exclude matched none of the {len(found)} files in {shown}")
    collected = Collected()
    for f in wanted:
        why = _unreadable(root, f)
        if why is None:
            collected.files.append(f)
        else:
            collected.skipped.append((_relative(root, f), why))
    if not collected.files:
        kinds: dict[str, int] = {}
        for _, why in collected.skipped:
            kinds[why] = kinds.get(why, 0) + 1
        summary = ", ".join(f"{count} {why}" for why, count in kinds.items())
        raise UsageError(f"{shown}: no readable text files to analyse ({summary})")
    return collected


def folder_label(workspace: Path, paths: Sequence[Path]) -> str:
    """What the scene heading and the conversation call the run: the folder (``docs/``),
    or the PATHs given, workspace-relative."""
    root = workspace.resolve()
    names = []
    for raw in paths:
        path = safe_path(root, raw if raw.is_absolute() else Path.cwd() / raw)
        name = _relative(root, path)
        names.append(name + "/" if os.path.isdir(path) and name != "." else name)
    label = " ".join(names)
    return label if len(label) <= 120 else label[:119] + "…"


class FolderStatus(enum.Enum):
    ANSWERED = "answered"
    CANCELLED = "cancelled"  # more chunks than max_chunks, and the person (or no --yes) said no


@dataclass(frozen=True)
class FolderOutcome:
    status: FolderStatus
    result: FolderResult | None = None


class _Recut:
    """A file's chunks cut again when the map phase reaches them (not kept in memory:
    neither the chunks nor the file's bytes, which a fresh ``Source`` reads again)."""

    def __init__(self, source: Source, size: int, cfg: ChunkConfig) -> None:
        self.path, self.name, self.size, self.cfg = source.path, source.name, size, cfg

    def __iter__(self) -> Iterator[Chunk | str]:
        chunks, _ = chunks_of(Source.at(self.path, self.name), self.size, self.cfg)
        yield from chunks


def analyze_paths(
    files: Sequence[Path],
    instruction: str,
    *,
    settings: Settings | ChunkingSettings,
    client: LLMClient,
    workspace: Path,
    label: str | None = None,
    as_typed: str | None = None,
    options: AnalyzeOptions | None = None,
    using: Collaborators | None = None,
) -> FolderOutcome:
    """Chunk ``files`` (from ``collect_files``) and run the whole-folder analysis with
    ``client``; CANCELLED when ``using.confirm`` refused more than ``max_chunks``. The
    scene is headed ``label`` (default ``folder_label`` of the files). Raises
    ``WorkspaceError`` for a file that cannot be read, ``SynthesisError`` and
    ``Cancelled`` from the analysis."""
    options = options or AnalyzeOptions()
    using = using or Collaborators()
    sizing: Sizing = using.sizing or Heuristic()
    confirm = using.confirm or (lambda _question: True)
    label = label if label is not None else folder_label(workspace, files)
    chunking = chunking_of(settings)
    configs: dict[DocType, ChunkConfig] = {}
    plan: list[tuple[Source, int, ChunkConfig]] = []
    at_least = total_size = 0
    evidence, answer = answer_plan(settings, client.model, options)
    for path in files:
        source = Source.at(path, _relative(workspace.resolve(), path))
        size = source_size(source)
        doc = source.doc_type
        if doc not in configs:
            ratio = sizing.bytes_per_token(client, doc.value)
            configs[doc] = chunk_config(
                chunking, client, options.overrides, instruction=instruction,
                bytes_per_token=ratio, evidence=evidence,
            )  # fmt: skip
        cfg = configs[doc]
        plan.append((source, size, cfg))
        at_least += max(1, -(-size // cfg.chunk_size_bytes))
        total_size += size
    limit = plan[0][2].max_chunks
    asked = at_least > limit
    if asked and not confirm(
        f"{label}: {len(plan)} files, {total_size:,} bytes: at least {at_least:,} chunks, "
        f"more than max_chunks ({limit}). Process them all?"
    ):
        return FolderOutcome(FolderStatus.CANCELLED)  # before one byte is read
    chunked: list[FileChunks] = []
    kept = 0
    for source, size, cfg in plan:
        chunks, count = chunks_of(source, size, cfg)
        cut: Iterable[Chunk | str] = chunks
        if isinstance(chunks, list):
            kept += size
            if kept > KEEP_BYTES:
                cut = _Recut(source, size, cfg)
        pages, starts = document_pages(source), document_page_starts(source)
        boundary = boundary_name(source.doc_type)
        chunked.append(
            FileChunks(source.name, cut, count, boundary, cfg.chunk_size_bytes, pages, starts)
        )
        source.derived.clear()  # the extracted text is in the chunks now, or cut again
    total = sum(f.total for f in chunked)
    if (
        total > limit
        and not asked
        and not confirm(
            f"{label}: {len(plan)} files split into {total} chunks, more than max_chunks "
            f"({limit}). Process all {total}?"
        )
    ):
        return FolderOutcome(FolderStatus.CANCELLED)
    run = FolderRun(
        client=client,
        instruction=instruction,
        model=client.model,
        label=label,
        config=plan[0][2],
        as_typed=as_typed or instruction,
        recorder=using.recorder,
        context_window=sizing.capabilities(client).context_window,
        bytes_per_token=sizing.bytes_per_token(client),
        results=using.results(options.fresh) if using.results is not None else None,
        cancel=using.cancel or threading.Event(),
        executor=options.executor,
        evidence=evidence,
        answer=answer,
        answer_chars=options.answer_chars,
        finder=finder_for(
            instruction,
            [source for source, _size, _cfg in plan],
            style=evidence,
            harvey_home=harvey_home_or_none(),
        ),
    )
    result = run.run(chunked, make_progress(using.progress))
    if result.reused and using.warn is not None:
        using.warn(
            f"reused {result.reused} of {total} map results stored by an earlier "
            "run (harvey analyze --fresh makes every call again)"
        )
    return FolderOutcome(FolderStatus.ANSWERED, result)
