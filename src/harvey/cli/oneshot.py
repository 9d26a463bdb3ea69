"""What ``harvey run`` and ``harvey analyze`` do once their options are parsed.

There is no terminal to ask, so a question the agent would put to a person is
answered by ``--yes`` or refused, and a file write is refused unless the user
passed ``--allow-writes``; progress goes to stderr, only the answer to stdout.
``harvey analyze`` of one file goes through ``ChunkedReads.analyze``; of a
folder or several files, through ``folder_reads.analyze_paths``, after the
files are collected and before anything is opened or recorded.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harvey.chat.agent import TurnOutcome
from harvey.chat.compaction import compact_if_needed
from harvey.chat.runtime import open_runtime
from harvey.cli.status_line import status_on_stderr
from harvey.config.settings import ChunkingSettings, Paths, Settings
from harvey.documents.extraction import extract_source
from harvey.errors import TurnNotSaved, UsageError, WorkspaceError
from harvey.redact import redact
from harvey.repl.progress import progress_for
from harvey.terminal_text import for_terminal, unguarded
from harvey.ui import HeadlessUI
from harvey.workspace.files import check_readable, file_kind
from harvey.workspace.source import Source, binary_refusal

if TYPE_CHECKING:
    from harvey.analysis.api import AnalyzeOptions, Collaborators
    from harvey.analysis.cluster.executor import RayExecutor
    from harvey.analysis.session import AnalysisSession
    from harvey.analysis.sizes import AnswerSetting, EvidenceSetting
    from harvey.cli.output import JsonOutput
    from harvey.protocols import LLMClient


def run_once(
    paths: Paths,
    settings: Settings,
    prompt: str,
    *,
    auto_yes: bool,
    record: bool,
    allow_writes: bool = False,
    raw: bool = False,
    resume_latest: bool = False,
    resume_id: str | None = None,
) -> int:
    """One turn, its reply on stdout; a reply sessions.db refused is printed, then the error.

    The reply is sanitised (``for_terminal``) unless ``raw`` and stdout is not a
    terminal: a pipe or a file then gets the model's bytes as they came.
    """
    ui = HeadlessUI(auto_yes=auto_yes, allow_writes=allow_writes, progress=progress_for)
    runtime = open_runtime(
        paths, settings, ui=ui, record=record, resume_latest=resume_latest, resume_id=resume_id
    )
    unsaved: TurnNotSaved | None = None
    try:
        try:
            with status_on_stderr():  # what it is doing, from the first second; never stdout
                if runtime.resumed:  # --continue: the same fit-the-window rules as the REPL
                    compact_if_needed(runtime.agent, prompt)
                outcome: TurnOutcome = runtime.agent.turn(prompt)
        except TurnNotSaved as exc:
            outcome, unsaved = exc.outcome, exc
    finally:
        runtime.close()
    reply = redact(outcome.reply).rstrip("\n") + "\n"  # as it was stored
    if raw and sys.stdout.isatty():
        print("harvey: --raw has no effect on a terminal; the reply is sanitised", file=sys.stderr)
    if raw and not sys.stdout.isatty():
        out = unguarded(sys.stdout)
        out.write(re.sub("[\ud800-\udfff]", "\ufffd", reply))  # a lone surrogate is no UTF-8
    else:
        out = sys.stdout
        out.write(for_terminal(reply))
    out.flush()
    if unsaved is not None:
        raise unsaved
    return 0


def check_readable_text(path: Path) -> None:
    """Refuse, in one line, anything ``analyze`` cannot read, before opening it.

    ``stat`` comes first: a FIFO would block the open, and a name too long for
    the file system fails there (``ENAMETOOLONG``) rather than as a traceback.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{path} is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        kind = file_kind(info.st_mode)
        raise UsageError(f"{path} is {kind}, not a regular file; analyze reads regular files")
    if info.st_size == 0:
        raise UsageError(f"{path} is empty: there is nothing to analyse")


def check_text_source(source: Source, shown: Path) -> None:
    """A document is extracted now (kept with its ``Source`` for the analysis: a locked
    one is one line, exit 2); any other file must not look binary."""
    if source.is_document:
        extract_source(source)
        return
    try:
        binary = source.looks_binary()
    except (OSError, WorkspaceError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise UsageError(f"cannot read {shown}: {reason}") from exc
    if binary:
        raise UsageError(binary_refusal(str(shown), "analyze"))


def open_executor(
    settings: Settings, executor: str | None, ray_address: str | None
) -> RayExecutor | None:
    """The Ray executor, attached to its cluster, when the run asks for one (flag, else
    ``analysis.executor``); ``None`` runs the map calls here, as always."""
    choice = executor or settings.analysis.executor
    if choice != "ray":
        if ray_address is not None:
            raise UsageError("--ray-address needs --executor ray")
        return None
    from harvey.analysis.cluster.executor import RayExecutor

    return RayExecutor.connect(ray_address or settings.analysis.ray_address)


@dataclass(frozen=True)
class AnalysisRun:
    """What one ``harvey analyze`` runs with, once its session is open."""

    session: AnalysisSession
    client: LLMClient  # the map client: an ``@route`` in the instruction, else the configured
    instruction: str  # without the ``@route``
    options: AnalyzeOptions
    using: Collaborators


@contextlib.contextmanager
def analysis_run(
    paths: Paths, settings: Settings, ui: HeadlessUI, request: AnalyzeRequest
) -> Iterator[AnalysisRun]:
    """The recorded session, clients and executor of one ``harvey analyze``, closed after.

    The cluster is joined before the session opens, so an unreachable one writes nothing.
    """
    from harvey.analysis.api import AnalyzeOptions
    from harvey.analysis.session import AnalysisSession
    from harvey.chat.clients import Clients, find_mention
    from harvey.llm.factory import make_client, make_route_client

    map_executor = open_executor(settings, request.executor, request.ray_address)
    with contextlib.ExitStack() as stack:
        if map_executor is not None:
            stack.callback(map_executor.close)
        clients = Clients(
            make_client(settings),
            settings=settings,
            make_route=lambda route: make_route_client(settings, route),
        )
        stack.callback(clients.close)
        session = stack.enter_context(
            AnalysisSession.open(
                paths, settings, clients.current, record=request.record, warn=ui.warn
            )
        )
        if request.output is not None:  # --output-format json|stream-json
            request.output.started(session.session_id, clients.current.model, False)
        mention, without_route = find_mention(request.instruction)
        yield AnalysisRun(
            session,
            clients.resolve(mention) if mention else clients.current,
            without_route if mention else request.instruction,
            AnalyzeOptions(
                request.overrides,
                request.fresh,
                map_executor,
                evidence=request.evidence,
                answer=request.answer,
            ),
            session.collaborators(confirm=ui.confirm, warn=ui.warn, progress=ui.progress_stream()),
        )


@dataclass(frozen=True)
class AnalyzeRequest:
    """What one ``harvey analyze`` asks for, beyond the paths and the settings: its flags
    in one value instead of a parameter each."""

    instruction: str
    overrides: ChunkingSettings
    auto_yes: bool = False
    record: bool = True
    fresh: bool = False
    executor: str | None = None  # --executor; None: ``analysis.executor`` from settings
    ray_address: str | None = None
    include: Sequence[str] = ()  # folders and several files only
    exclude: Sequence[str] = ()
    per_file: bool = False
    output: JsonOutput | None = None  # --output-format json|stream-json: events and the result
    evidence: EvidenceSetting | None = None  # --evidence: over analysis.evidence
    answer: AnswerSetting | None = None  # --answer: over analysis.answer


CANCELLED_LINE = (
    "harvey: cancelled: the {what} more chunks than --max-chunks; pass --yes to process them all"
)


def analyze_once(paths: Paths, settings: Settings, file: Path, request: AnalyzeRequest) -> int:
    """``harvey analyze`` of one file: the synthesis on stdout."""
    from harvey.analysis.api import analyze_file

    instruction = request.instruction
    path = file if file.is_absolute() else (Path.cwd() / file)
    check_readable_text(path)
    if not instruction.strip():
        raise UsageError("the instruction (-i) is empty")
    check_readable(paths.workspace, path.resolve())  # a secret file or a hard link
    # decided, read and hashed once for the whole analysis (a PDF is not read again)
    source = Source.at(path.resolve(), workspace_name(paths.workspace, path.resolve()))
    check_text_source(source, path)
    ui = _ui(request)
    with analysis_run(paths, settings, ui, request) as run:
        result = analyze_file(
            source,
            run.instruction,
            settings=settings,
            client=run.client,
            as_typed=instruction,
            options=run.options,
            using=run.using,
        )
        if not result.answered:
            print(CANCELLED_LINE.format(what="file makes"), file=sys.stderr)
            return 1
        evidence = result.answer is not None and result.answer.kind == "evidence"
        run.session.finish(str(file), instruction, result.text, by_harvey=evidence)
    _answer(request, result.text)
    return 0


def analyze_folder_once(
    paths: Paths, settings: Settings, targets: Sequence[Path], request: AnalyzeRequest
) -> int:
    """``harvey analyze`` of folders and several files: the overall answer on stdout,
    or with ``per_file`` a Markdown section per file followed by it."""
    from harvey.analysis.folder_analysis import per_file_markdown
    from harvey.analysis.folder_reads import (
        FolderStatus,
        analyze_paths,
        collect_files,
        folder_label,
    )

    instruction = request.instruction
    if not instruction.strip():
        raise UsageError("the instruction (-i) is empty")
    collected = collect_files(paths.workspace, targets, request.include, request.exclude)
    label = folder_label(paths.workspace, targets)
    ui = _ui(request)
    if collected.skipped:
        ui.warn(collected.skipped_line())
    with analysis_run(paths, settings, ui, request) as run:
        outcome = analyze_paths(
            collected.files,
            run.instruction,
            settings=settings,
            client=run.client,
            workspace=paths.workspace,
            label=label,
            as_typed=instruction,
            options=run.options,
            using=run.using,
        )
        if outcome.result is None or outcome.status is not FolderStatus.ANSWERED:
            print(CANCELLED_LINE.format(what="files make"), file=sys.stderr)
            return 1
        text = per_file_markdown(outcome.result) if request.per_file else outcome.result.text
        evidence = outcome.result.answer.kind == "evidence"
        run.session.finish(label, instruction, text, by_harvey=evidence)
    _answer(request, text)
    return 0


def workspace_name(workspace: Path, path: Path) -> str:
    """How a file is recorded: its name inside the workspace, else its own name."""
    try:
        return str(path.relative_to(workspace))
    except ValueError:
        return path.name


def _ui(request: AnalyzeRequest) -> HeadlessUI:
    if request.output is not None:  # its warnings and chunks are events too
        from harvey.cli.scripting import EventUI

        return EventUI(request.output, auto_yes=request.auto_yes, allow_writes=False)
    return HeadlessUI(auto_yes=request.auto_yes, progress=progress_for)


def _answer(request: AnalyzeRequest, text: str) -> None:
    """The synthesis on stdout, or into the JSON result."""
    if request.output is not None:
        request.output.reply = text
        return
    sys.stdout.write(redact(text).rstrip("\n") + "\n")
