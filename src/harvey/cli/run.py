"""``harvey run`` and ``harvey analyze``: the one-shot commands' options.

What they do once parsed is in ``harvey.cli.oneshot``, imported only when one
of them runs, so ``harvey --help`` loads neither the agent nor its backends.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from harvey.cli.errors import handle_errors
from harvey.cli.options import (
    inherit,
    load_for_model,
    model_options,
    no_record_option,
    rag_option,
    trust_option,
    with_rag,
    workspace_option,
)
from harvey.cli.output import JSON_FORMATS, JsonErrorsCommand, JsonOutput, output_format_option
from harvey.config.choices import OVERLAPS
from harvey.errors import ContextTooLong, UsageError
from harvey.inputs import clean_text, read_stdin

if TYPE_CHECKING:
    from harvey.cli.oneshot import AnalyzeRequest
    from harvey.config.settings import Paths, Settings

#: What to do about a prompt too long for the model, in ``harvey run``.
RUN_TOO_LONG = (
    "harvey run sends this prompt with the files and results it needs: ask about less "
    "(one file, a narrower question), leave out --continue, or pick a model with a larger "
    "context window (--model, --backend)"
)


@click.command(cls=JsonErrorsCommand)
@click.argument("prompt")
@workspace_option
@trust_option
@model_options
@click.option(
    "--yes",
    "-y",
    is_flag=True,
    help="Answer yes to questions (chunk an oversized file with PROMPT as the instruction).",
)
@click.option(
    "--allow-writes",
    is_flag=True,
    help="Let the model create, overwrite and edit workspace files (refused otherwise; --yes "
    "does not imply it; 'harvey undo' takes writes back).",
)
@click.option(
    "--allow-mcp",
    "allow_mcp",
    multiple=True,
    metavar="SERVER[:TOOL]",
    help="Let the model call this MCP server's tools (or this one tool) without asking; "
    "refused otherwise (beside mcp.allow in your own harvey.yaml). Repeatable.",
)
@click.option(
    "--raw",
    is_flag=True,
    help="Print the reply's bytes unchanged when stdout is a pipe or a file (escape sequences "
    "included); without it, and always on a terminal, control characters are shown as ^[ etc.",
)
@click.option(
    "--continue",
    "-c",
    "continue_",
    is_flag=True,
    help="Continue this workspace's newest session: the model gets its conversation (fitted to "
    "the window), and the turn is added to it.",
)
@click.option(
    "--session",
    "session_id",
    default=None,
    metavar="ID",
    help="Continue the session ID (or an unambiguous prefix; see `harvey sessions list`).",
)
@output_format_option
@no_record_option
@rag_option
@click.pass_context
@handle_errors
def run(
    ctx: click.Context,
    prompt: str,
    workspace: Path | None,
    backend: str | None,
    base_url: str | None,
    endpoints: tuple[str, ...],
    model: str | None,
    yes: bool,
    allow_writes: bool,
    allow_mcp: tuple[str, ...],
    raw: bool,
    continue_: bool,
    session_id: str | None,
    output_format: str,
    no_record: bool,
    rag_store: str | None,
) -> None:
    """Send one PROMPT (or - for stdin) and print only the reply.

    With --continue (-c) or --session ID the turn continues a stored session, so a
    script can hold a conversation: `harvey run -c --output-format json "..."`.
    """
    from harvey.cli.scripting import reporting, resume_choice

    output = JsonOutput(output_format, "run") if output_format in JSON_FORMATS else None
    with reporting(output):
        shared = ctx.find_object(dict) or {}
        latest, resume_id = resume_choice(continue_ or bool(shared.get("continue_")), session_id)
        if raw and output is not None:
            raise UsageError("--raw is for --output-format text")
        prompt = read_stdin() if prompt == "-" else clean_text(prompt)
        if not prompt.strip():
            raise UsageError("the prompt is empty")
        rag_store = inherit(ctx, rag_store=rag_store)["rag_store"]
        paths, settings = load_for_model(ctx, workspace, backend, base_url, model, endpoints)
        settings = with_rag(settings, rag_store)
        if allow_mcp:  # this run's own allowance, beside the user's mcp.allow
            settings.mcp.allow = [*settings.mcp.allow, *allow_mcp]
        record = not (no_record or shared.get("no_record"))
        try:
            code = _run(
                paths, settings, prompt, output, yes, record, allow_writes, raw, latest, resume_id
            )
        except ContextTooLong as exc:  # said with what to do here, not the REPL's /clear
            from harvey.llm.too_long import with_advice

            raise with_advice(exc, RUN_TOO_LONG) from exc
        sys.exit(code)


def _run(
    paths: Paths,
    settings: Settings,
    prompt: str,
    output: JsonOutput | None,
    yes: bool,
    record: bool,
    allow_writes: bool,
    raw: bool,
    latest: bool,
    resume_id: str | None,
) -> int:
    from harvey.cli.oneshot import run_once
    from harvey.cli.scripting import run_json

    if output is not None:
        return run_json(
            paths, settings, prompt, output, auto_yes=yes, record=record,
            allow_writes=allow_writes, resume_latest=latest, resume_id=resume_id,
        )  # fmt: skip
    return run_once(
        paths, settings, prompt, auto_yes=yes, record=record, allow_writes=allow_writes,
        raw=raw, resume_latest=latest, resume_id=resume_id,
    )  # fmt: skip


@click.command(cls=JsonErrorsCommand)
@click.argument(
    "targets", metavar="PATH...", nargs=-1, required=True, type=click.Path(path_type=Path)
)
@click.option(
    "--instruction", "-i", required=True, help="What to do with each chunk (may contain @ROUTE)."
)
@click.option(
    "--include",
    multiple=True,
    metavar="GLOB",
    help="Of the files in folders and PATHs, analyse only those matching GLOB (repeatable).",
)
@click.option(
    "--exclude",
    multiple=True,
    metavar="GLOB",
    help="Leave out the files matching GLOB (repeatable).",
)
@click.option(
    "--per-file",
    is_flag=True,
    help="Print a Markdown section per file, then the overall answer (folders, several files).",
)
@workspace_option
@trust_option
@model_options
@click.option(
    "--chunk-size",
    type=click.IntRange(min=200),
    default=None,
    help="Largest chunk in bytes (default: chunking.chunk_size_bytes, auto: sized to the model).",
)
@click.option(
    "--overlap",
    type=click.Choice(OVERLAPS),
    default=None,
    help="What each chunk repeats from the one before (default: chunking.overlap).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(1, 64),
    default=None,
    help="Map calls in flight (default: chunking.concurrency, else found out from the server).",
)
@click.option(
    "--max-chunks",
    type=click.IntRange(min=1),
    default=None,
    help="Ask (or need --yes) before more chunks than this (default: chunking.max_chunks, 20).",
)
@click.option("--yes", "-y", is_flag=True, help="Proceed even beyond --max-chunks.")
@click.option(
    "--fresh",
    is_flag=True,
    help="Make every map call again, ignoring results an earlier run of the same analysis stored.",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    default=None,
    help="Where the map calls run: here, or on a Ray cluster (needs harvey-agent[ray]; "
    "default: analysis.executor).",
)
@click.option(
    "--ray-address",
    default=None,
    metavar="ADDR",
    help="The Ray cluster to join (HOST:PORT, ray://HOST:PORT, auto); without it Ray starts "
    "on this machine.",
)
@click.option(
    "--evidence",
    type=click.Choice(["auto", "harvey", "choose", "model"]),
    default=None,
    help="How each chunk's evidence is found: by Harvey's finder, by the model choosing among "
    "its candidates, or written by the model and verified (default: analysis.evidence).",
)
@click.option(
    "--answer",
    type=click.Choice(["auto", "evidence", "synthesis"]),
    default=None,
    help="The evidence itself as the answer, or a synthesis the model writes from it and "
    "Harvey checks (default: analysis.answer).",
)
@output_format_option
@no_record_option
@click.pass_context
@handle_errors
def analyze(
    ctx: click.Context,
    targets: tuple[Path, ...],
    instruction: str,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    per_file: bool,
    workspace: Path | None,
    backend: str | None,
    base_url: str | None,
    endpoints: tuple[str, ...],
    model: str | None,
    chunk_size: int | None,
    overlap: str | None,
    concurrency: int | None,
    max_chunks: int | None,
    yes: bool,
    fresh: bool,
    executor: str | None,
    ray_address: str | None,
    evidence: str | None,
    answer: str | None,
    output_format: str,
    no_record: bool,
) -> None:
    """Analyse PATHs chunk by chunk (map-reduce) and print an answer that cites its evidence.

    Each chunk is searched for what the instruction asks (the map step): the
    sentences that hold it, each quoted word for word and located (file and
    lines, a PDF's pages); a quote a model wrote that is not in its chunk is
    dropped. The answer rests on those quotes and cites them ([3]), with its
    sources listed; a model too small to write it faithfully gets the quotes
    themselves as the answer. A run cut short resumes from the results it
    stored. Documents (PDF, Word, HTML, EPUB) are analysed as their text.
    Folders and several files go through one map phase (the walk skips binary
    files, .git/, .harvey/, virtualenvs, node_modules/ and what .gitignore
    ignores) and one answer from every file's evidence.
    """
    from harvey.cli.oneshot import AnalyzeRequest
    from harvey.cli.scripting import reporting
    from harvey.config.settings import ChunkingSettings

    output = JsonOutput(output_format, "analyze") if output_format in JSON_FORMATS else None
    with reporting(output):
        shared = ctx.find_object(dict) or {}
        record = not (no_record or shared.get("no_record"))
        request = AnalyzeRequest(
            clean_text(instruction),
            ChunkingSettings.partial(
                chunk_size_bytes=chunk_size,
                overlap=overlap,
                concurrency=concurrency,
                max_chunks=max_chunks,
            ),
            auto_yes=yes,
            record=record,
            fresh=fresh,
            executor=executor,
            ray_address=ray_address,
            include=include,
            exclude=exclude,
            per_file=per_file,
            output=output,
            evidence=evidence,  # type: ignore[arg-type]
            answer=answer,  # type: ignore[arg-type]
        )
        model_choice = (backend, base_url, model, endpoints)
        code = _analyze(ctx, targets, workspace, model_choice, request)
    sys.exit(code)


def _analyze(
    ctx: click.Context,
    targets: tuple[Path, ...],
    workspace: Path | None,
    model_choice: tuple[str | None, str | None, str | None, tuple[str, ...]],
    request: AnalyzeRequest,
) -> int:
    """One ``harvey analyze``: one file, or folders and several files."""
    from harvey.cli.oneshot import analyze_folder_once, analyze_once
    from harvey.cli.scripting import analysis_finished

    backend, base_url, model, endpoints = model_choice
    paths, settings = load_for_model(ctx, workspace, backend, base_url, model, endpoints)
    # os.path.isdir, not Path.is_dir: a name too long for the file system is "not a folder"
    # here and gets its one-line error from the file checks, not a traceback
    one_file = len(targets) == 1 and not os.path.isdir(targets[0])
    if one_file and (request.include or request.exclude or request.per_file):
        raise UsageError(
            "--include, --exclude and --per-file are for folders and several files; "
            f"{targets[0]} is one file"
        )
    output = request.output
    if one_file:
        return analysis_finished(output, analyze_once(paths, settings, targets[0], request))
    return analysis_finished(output, analyze_folder_once(paths, settings, targets, request))
