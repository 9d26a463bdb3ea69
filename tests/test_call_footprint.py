"""How many files of ``src/harvey`` one chat turn and one analysis call into.

Issue 20's measure of a knotted composition: a turn that reaches into every
part of the package is a turn every part can break. Traced in process with
``sys.setprofile`` (every thread but the fake server's), on the second of two
identical runs (the first pays the one-time probes), counting files whose
functions are called — module bodies (imports) are not counted. A turn is
``Agent.turn`` of ``harvey run "hi"``; an analysis is ``analyze_file`` of
``harvey analyze`` on a small file. What each run sets up before (options,
trust, the session) is outside both.
"""

from __future__ import annotations

import gc
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import harvey
from tests.fakes.quoting import QuotingOpenAI
from tests.fakes.servers import FakeOpenAI, Reply
from tests.harvey_process import invoke_harvey

PACKAGE = str(Path(harvey.__file__).parent) + "/"
# 25 when the renovation landed; issue 21 added steps every reply of a turn takes (the loop
# guard, llm/repetition.py; the rescue of tool calls written as text, chat/calls/tool_rounds.py,
# chat/calls/text_tool_calls.py, chat/calls/tool_choice.py), and a first turn stopped reaching into what it
# does not need: memory recall when there is no memory.db, the history fit when there is no
# history. (A llama.cpp server's prompt cache and slot, llm/prompt_cache.py, are asked only
# of a server that is llama.cpp's.) 27 with issue 29, which bounded what a hostile server
# can send: every answer is read through llm/wire.py (inflated by Harvey, JSON depth) and
# every reply within llm/reply_bounds.py (tool calls, length, arguments). 28 with issue 30's
# ladder, which put the types packages meet at in one file at the bottom (protocols.py: a
# stream's Usage is built there); splitting rooms is not to be undone to lower the count.
# 29 with issue 38's one rule for quoted calls (chat/calls/quoted.py: a call the model was
# shown is a quotation, never run). 36 with issue 39: every tool result fitted to what the
# turn has left (chat/turn_room.py), what Harvey is doing said as it does it (llm/activity.py,
# the status line of cli/status_line.py), a small model's reply built by Harvey
# (chat/calls/harvey_replies.py, asking analysis/sizes.py which model is small), and the
# values a turn hands back in their own room (chat/outcomes.py).
TURN_FILES = 36
# 30 when the renovation landed; +3 with what issues 21 and 23 added to every analysis: the
# document check (documents/extract.py), capacity discovery (llm/capacity.py) and the
# loop guard on every reply (llm/repetition.py). 41 with issue 28, which made an answer's
# claims traceable: each chunk's evidence is found (analysis/finder.py, units.py), read from
# the model's records (mapper.py) and verified by string match (quotes.py, matching.py),
# kept (evidence.py) and recorded (session/evidence_notes.py); the answer is merged and
# cited (answer.py), written or not by the model by its size (sizes.py), and its claims
# checked against the records they cite (synthesis.py, atoms.py). 43 with issue 29's
# bounds on what a server sends (llm/wire.py, llm/reply_bounds.py), as for a turn. 45 with
# issue 30's ladder: protocols.py, and a file's kind decided in workspace/kinds.py. 56
# with issue 37's finder by meaning: the finder (analysis/semantic.py) over a document
# index kept by content hash (analysis/doc_index.py), a chunk's place (analysis/piece.py),
# and the retrieval floor it ranks with (retrieval/: words, BM25, fusion, the embedders,
# all-MiniLM-L6-v2 on llama.cpp).
ANALYSIS_FILES = 56


@contextmanager
def traced(files: set[str]) -> Iterator[None]:
    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or "process_request" in threading.current_thread().name:
            return  # the loopback server's threads are the test's, not Harvey's
        code = frame.f_code
        if code.co_filename.startswith(PACKAGE) and code.co_name != "<module>":
            files.add(code.co_filename[len(PACKAGE) :])

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        yield
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]


def footprint(
    monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, command: Callable[[], None]
) -> set[str]:
    """The files ``owner.name`` calls into during the second of two runs of ``command``."""
    files: set[str] = set()
    original = getattr(owner, name)
    armed = False

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not armed:
            return original(*args, **kwargs)
        with traced(files):
            return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapper)
    # Neither pytest's log capture nor the collection of the first run's objects (a stream
    # wrapper flushes as it goes) is the traced run's own work.
    logging.disable(logging.CRITICAL)
    try:
        command()
        gc.collect()
        gc.disable()
        armed = True
        command()
    finally:
        gc.enable()
        logging.disable(logging.NOTSET)
    return files


def test_one_turn_calls_into_few_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harvey.chat.agent import Agent

    with FakeOpenAI([], default_reply=Reply("hello")) as srv:

        def run() -> None:
            args = ("run", "hi", "--backend", "openai", "--base-url", srv.url)
            assert invoke_harvey(*args, cwd=tmp_path).returncode == 0

        files = footprint(monkeypatch, Agent, "turn", run)
    assert "chat/agent.py" in files  # the trace saw the turn
    assert len(files) <= TURN_FILES, "\n".join(sorted(files))


def test_one_analysis_calls_into_few_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import harvey.analysis.api as api

    (tmp_path / "notes.md").write_text("# Notes\n\n" + "The boiler was serviced in May.\n" * 40)
    with QuotingOpenAI() as srv:

        def analyze() -> None:
            args = ("analyze", "notes.md", "-i", "Summarise", "--backend", "openai")
            proc = invoke_harvey(*args, "--base-url", srv.url, cwd=tmp_path)
            assert proc.returncode == 0, proc.stderr

        files = footprint(monkeypatch, api, "analyze_file", analyze)
    assert "analysis/engine.py" in files
    assert len(files) <= ANALYSIS_FILES, "\n".join(sorted(files))


# The whole commands, from the CLI entry point (docs/ARCHITECTURE.md reports them): what a
# person's `harvey run "hi"` and `harvey analyze` touch, parsing and settings included.
RUN_COMMAND_FILES = 72
ANALYZE_COMMAND_FILES = 82


def test_a_whole_run_from_the_cli_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import click

    with FakeOpenAI([], default_reply=Reply("hello")) as srv:

        def run() -> None:
            args = ("run", "hi", "--backend", "openai", "--base-url", srv.url)
            assert invoke_harvey(*args, cwd=tmp_path).returncode == 0

        files = footprint(monkeypatch, click.Command, "main", run)
    assert "cli/oneshot.py" in files and "chat/agent.py" in files
    assert len(files) <= RUN_COMMAND_FILES, "\n".join(sorted(files))


def test_a_whole_analysis_from_the_cli_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import click

    (tmp_path / "notes.md").write_text("# Notes\n\n" + "The boiler was serviced in May.\n" * 40)
    with QuotingOpenAI() as srv:

        def analyze() -> None:
            args = ("analyze", "notes.md", "-i", "Summarise", "--backend", "openai")
            assert invoke_harvey(*args, "--base-url", srv.url, cwd=tmp_path).returncode == 0

        files = footprint(monkeypatch, click.Command, "main", analyze)
    assert "cli/oneshot.py" in files and "analysis/engine.py" in files
    assert len(files) <= ANALYZE_COMMAND_FILES, "\n".join(sorted(files))
