"""Non-interactive commands: ``harvey run`` and ``harvey analyze``.

There is no terminal to ask, so a question the agent would put to a person is
answered by ``--yes`` or refused; progress goes to stderr, only the answer to
stdout.
"""

from __future__ import annotations

import sys
from pathlib import Path

from harvey.agent import TurnOutcome
from harvey.config import Paths, Settings
from harvey.errors import TurnNotSaved, UsageError
from harvey.oversize import CANCELLED, AnalysisOptions, analyze_file
from harvey.runtime import open_runtime
from harvey.tools.files import BINARY_SNIFF_BYTES, looks_binary
from harvey.ui import HeadlessUI


def run_once(paths: Paths, settings: Settings, prompt: str, *, auto_yes: bool, record: bool) -> int:
    """One turn, its reply on stdout; a reply sessions.db refused is printed, then the error."""
    ui = HeadlessUI(auto_yes=auto_yes)
    runtime = open_runtime(paths, settings, ui=ui, record=record)
    unsaved: TurnNotSaved | None = None
    try:
        try:
            outcome: TurnOutcome = runtime.agent.turn(prompt)
        except TurnNotSaved as exc:
            outcome, unsaved = exc.outcome, exc
    finally:
        runtime.close()
    sys.stdout.write(outcome.reply.rstrip("\n") + "\n")
    sys.stdout.flush()
    if unsaved is not None:
        raise unsaved
    return 0


def check_readable_text(path: Path) -> None:
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    if path.is_dir():
        raise UsageError(f"{path} is a directory, not a file")
    try:
        with path.open("rb") as handle:
            head = handle.read(BINARY_SNIFF_BYTES)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if looks_binary(head):
        raise UsageError(f"{path} looks like a binary file; analyze reads text files")


def analyze_once(
    paths: Paths,
    settings: Settings,
    file: Path,
    instruction: str,
    options: AnalysisOptions,
    *,
    auto_yes: bool,
    record: bool,
) -> int:
    path = file if file.is_absolute() else (Path.cwd() / file)
    check_readable_text(path)
    if not instruction.strip():
        raise UsageError("the instruction (-i) is empty")
    ui = HeadlessUI(auto_yes=auto_yes)
    runtime = open_runtime(paths, settings, ui=ui, record=record)
    try:
        agent = runtime.agent
        text = analyze_file(agent, path.resolve(), instruction, options=options)
        if text == CANCELLED:
            print(
                "harvey: cancelled: the file makes more chunks than --max-chunks; "
                "pass --yes to process them all",
                file=sys.stderr,
            )
            return 1
        agent.record_analysis(str(file), instruction, text)
    finally:
        runtime.close()
    sys.stdout.write(text.rstrip("\n") + "\n")
    return 0
