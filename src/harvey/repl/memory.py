"""The REPL's ``/memory`` and ``/recall``, the profile offer at start, mining on exit.

They call the same command layer as ``harvey memory`` (``harvey.memory.commands``)
and differ only in how they render and ask: through the REPL's own line reader,
so a review works the same with prompt_toolkit as with a plain pipe. A memory problem in the REPL
is one ``error:`` line (a ``HarveyError``) and the session goes on; on exit it
is one line and the session still closes cleanly.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from harvey.errors import HarveyError, UsageError
from harvey.memory import commands
from harvey.memory.profile import current_profile, draft_profile, save_profile
from harvey.memory.recall import memory_line
from harvey.memory.startup import memory_db
from harvey.memory.store import Memory, MemoryStore
from harvey.session.fountain import parse_session

if TYPE_CHECKING:
    from harvey.config.settings import Settings
    from harvey.repl.session import ReplSession

MEMORY_USAGE = (
    "/memory [list|show ID|flag ID|forget ID|status|mine [FILE]|profile [edit|regenerate]]"
)


def _store(repl: ReplSession) -> MemoryStore:
    return commands.open_store(repl.rt.paths.harvey_home)


def _print(repl: ReplSession, text: str) -> None:
    repl.console.print(text, highlight=False, markup=False)


def memory_command(repl: ReplSession, arg: str) -> None:
    """``/memory …``: the ``harvey memory`` commands, this session's recall, mining, profile."""
    try:
        _memory_command(repl, arg)
    finally:
        _recall_if_created(repl)


def _recall_if_created(repl: ReplSession) -> None:
    """A memory.db made before the first prompt (a profile, mined memories) is recalled at
    the first turn, as one that was there at start would be."""
    if repl.rt.memory is not None:
        repl.rt.memory.register(repl.agent)


def _memory_command(repl: ReplSession, arg: str) -> None:
    try:
        words = shlex.split(arg)
    except ValueError as exc:
        raise UsageError(f"usage: {MEMORY_USAGE} ({exc})") from exc
    action, rest = (words[0], words[1:]) if words else ("list", [])
    workspace = repl.rt.paths.workspace
    if action == "status":
        show_status(repl)
        return
    if action == "mine":
        mine(repl, Path(rest[0]) if rest else None)
        return
    if action == "profile":
        profile(repl, rest[0] if rest else "")
        return
    if action not in ("list", "show", "flag", "forget") or len(rest) != (action != "list"):
        raise UsageError(f"usage: {MEMORY_USAGE}")
    home = repl.rt.paths.harvey_home
    if action == "list":
        items = commands.list_memories(home, workspace)
        for m in items:
            _print(repl, f"{m.confidence:.2f} {memory_line(m)}")
        if not items:
            _print(repl, "no memories")
    elif action == "show":
        for key, value in commands.show(home, rest[0]).items():
            _print(repl, f"{key}: {value}")
    elif action == "flag":
        _print(repl, commands.flag(home, rest[0]))
    else:
        _print(repl, commands.forget(home, rest[0]))


def show_status(repl: ReplSession) -> None:
    """What this session recalled and what did not fit, then the store's counts."""
    memory = repl.rt.memory
    recalled = memory.recalled if memory is not None else None
    if memory is None:
        _print(repl, "memory recall is off this session (--no-memory or memory.enabled: false)")
    elif recalled is None:
        _print(repl, "nothing recalled yet (recall happens before the first prompt)")
    else:
        _print(repl, f"recalled {len(recalled.items)} (budget {recalled.budget} tokens):")
        for m, score in recalled.items:
            _print(repl, f"  {score:.2f} {memory_line(m)}")
        if recalled.left_out:
            _print(repl, f"left out ({len(recalled.left_out)}, over the budget):")
            for m, score in recalled.left_out:
                _print(repl, f"  {score:.2f} {memory_line(m)}")
    if memory_db(repl.rt.paths.harvey_home).exists():
        counts = commands.counts(repl.rt.paths.harvey_home)
        _print(repl, ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items()))


def recall_command(repl: ReplSession, arg: str) -> None:
    """``/recall QUERY``: the memories that match QUERY, with their scores (nothing injected)."""
    if not arg.strip():
        raise UsageError("usage: /recall QUERY")
    home = repl.rt.paths.harvey_home
    if not memory_db(home).exists():
        _print(repl, "no memories")
        return
    hits = commands.recall(home, repl.rt.settings, repl.rt.paths.workspace, arg, repl.ui.warn)
    for m, score in hits:
        _print(repl, f"{score:.2f} {memory_line(m)}")
    if not hits:
        _print(repl, "no matching memories")


def mine(repl: ReplSession, file: Path | None) -> None:
    """Mine FILE, or this session's recording, with the review on the terminal."""
    recorder = repl.rt.recorder
    if file is None:
        if recorder is None or not recorder.enabled:
            raise UsageError("this session is not recorded; name a recording: /memory mine FILE")
        file = recorder.path
    elif not file.is_absolute():
        file = repl.rt.paths.workspace / file
    if not file.is_file():
        raise UsageError(f"recording {file.name} does not exist")
    agent = repl.agent
    report = commands.mine(
        [file],
        harvey_home=repl.rt.paths.harvey_home,
        settings=repl.rt.settings,
        client=agent.client,
        workspace=repl.rt.paths.workspace,
        context_window=agent.budget.capabilities().context_window,
        ask=repl.reader.read,
        echo=lambda text: _print(repl, text),
        warn=repl.ui.warn,
        force=True,  # asked for by name: the person wants it (again)
    )
    _print(repl, f"{report.accepted} memories stored; {report.rejected} rejected for credentials")


def profile(repl: ReplSession, action: str) -> Memory | None:
    """``/memory profile``: show; ``edit``: type a new text; ``regenerate``: the model drafts.
    Returns the profile saved, if one was."""
    workspace = repl.rt.paths.workspace
    with _store(repl) as store:
        current = current_profile(store, workspace)
        if action == "":
            _print(repl, current.text if current else "no profile (/memory profile regenerate)")
            return None
        if action == "edit":
            text = repl.reader.read("profile: ", default=current.text if current else "")
        elif action == "regenerate":
            text = draft_profile(repl.agent.client, workspace)
            _print(repl, text or "(the model wrote nothing usable)")
            if not text or not repl.ui.confirm("Keep this profile?"):
                return None
        else:
            raise UsageError("usage: /memory profile [edit|regenerate]")
        saved = save_profile(store, workspace, commands.clean_text(text, workspace, "profile "))
    _print(repl, f"profile saved as {saved.id}")
    return saved


PROFILE_CHOICE = "profile_offer"
PROFILE_SOURCES = ("README.md", "README.rst", "README.txt", "README", "HARVEY.md")


def offer_profile(repl: ReplSession, *, interactive: bool | None = None) -> None:
    """The first session in a workspace without a profile offers to write one.

    Asked before the first prompt, on a terminal only, in a new (not resumed)
    session of a workspace with a README or HARVEY.md — what a profile is
    mostly drafted from; a folder with neither has little to describe and
    ``/memory profile regenerate`` still writes one. A "no", or a draft not
    kept, is remembered in memory.db for the workspace: the offer is made once.
    """
    settings, workspace = repl.rt.settings, repl.rt.paths.workspace
    interactive = sys.stdin.isatty() if interactive is None else interactive
    if not (settings.memory.enabled and interactive) or repl.rt.resumed:
        return
    try:
        _offer_profile(repl, settings, workspace)
    finally:
        _recall_if_created(repl)


def _offer_profile(repl: ReplSession, settings: Settings, workspace: Path) -> None:
    if not any((workspace / name).is_file() for name in PROFILE_SOURCES):
        return
    db = memory_db(repl.rt.paths.harvey_home)
    try:
        if db.exists():  # no memory.db: no profile and no answer yet, nothing to open
            with _store(repl) as store:
                answered = store.choice(str(workspace), PROFILE_CHOICE)
                if answered or current_profile(store, workspace):
                    return
        question = "No workspace profile yet. Write one now? (asked once)"
        if repl.ui.confirm(question) and profile(repl, "regenerate") is not None:
            return
        with _store(repl) as store:
            store.set_choice(str(workspace), PROFILE_CHOICE, "declined")
        _print(repl, "not asked again here; /memory profile regenerate writes one any time")
    except (EOFError, KeyboardInterrupt):  # no answer is not a "no": asked next session
        _print(repl, "")
    except HarveyError as exc:
        repl.error(exc, f"memory: {exc}")


def _turns(path: Path) -> int:
    try:
        return sum(1 for s in parse_session(path).turns if s.user_text is not None)
    except HarveyError:
        return 0


def mine_on_exit(repl: ReplSession, *, interactive: bool | None = None) -> None:
    """A long enough interactive session is offered for mining."""
    settings = repl.rt.settings
    recorder = repl.rt.recorder
    interactive = sys.stdin.isatty() if interactive is None else interactive
    if not (settings.memory.enabled and interactive and recorder is not None and recorder.enabled):
        return
    turns = _turns(recorder.path)
    if turns < settings.memory.auto_mine_min_turns:
        return
    try:
        if repl.ui.confirm(f"This session had {turns} turns. Mine it for memories?"):
            mine(repl, None)
    except HarveyError as exc:
        repl.error(exc, f"memory: {exc}")
