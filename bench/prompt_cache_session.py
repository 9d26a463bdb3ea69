"""The ten-turn session the prompt-cache benchmark replays, captured from a real Harvey session.

Why captured and not written by hand: the property measured is the shape of
what Harvey's own request building sends — the system prompt fixed for the
session, the plan riding in the user message of the turn after it changed, tool
rounds kept in the history as sent. So the session runs through the session
builder the REPL uses (``chat.runtime.open_runtime``) and ``Agent.turn``, with
the packaged scripted backend as the model: it calls ``todo_write`` on turns 3
and 7 (the real tool, the real plan file, the real ``PlanContext``) and
``read_file`` on turn 2, and answers every turn in a few sentences. Each request
the model receives is kept, with the plan summary the plan file held at that
moment — what the old layout would have sent.

The old layout — the plan as a second system message right after the system
prompt, recomputed every round — is made from the same requests by
``changed_prefix``: the plan text is taken out of the user message it rode in
and put, as it stood at each request, into a system message after the first.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harvey.messages import Message

PLAN_TURNS = (3, 7)

NOTES = """# Boathouse survey, March

Surveyor: R. Okafor. Building: the timber boathouse at Gull Point, built about 1931.

## Roof
The slate roof has lost about forty slates on the seaward side. Two rafters near the
ridge are soft with rot and must be replaced before any new slates go on. The lead
flashing around the chimney is split. Estimate for the roof: 6,500 to 8,000 pounds.

## Walls and frame
The larch cladding is sound above the tide line. Below it, the bottom three boards
on the east wall are rotten and the sill beam has wet rot along four metres. The
frame is otherwise dry; the oak posts were treated in 1987 and show no beetle.

## Slipway
The concrete slipway is cracked across its width two metres from the water. The
winch is seized and its cable frayed. A marine contractor should assess the crack;
the winch can be serviced by any agricultural engineer. Tides limit work on the
slipway to four hours a day.

## Electrics
The wiring is rubber-insulated and dates from the 1950s. It must be replaced
before the building is used again; there is no earth on the upper floor. The
meter cupboard is damp.

## Access
The track floods at spring tides. Deliveries of slate and timber need a tracked
carrier or a dry week in summer.
"""

TODOS_TURN_3 = [
    ("roof", "Replace the two rotten rafters, then re-slate the seaward side", "in_progress"),
    ("walls", "Replace the sill beam and the bottom three boards of the east wall", "pending"),
    ("slipway", "Get a marine contractor to assess the slipway crack", "pending"),
    ("winch", "Have the winch serviced and its cable replaced", "pending"),
]
TODOS_TURN_7 = [
    ("roof", "Replace the two rotten rafters, then re-slate the seaward side", "completed"),
    ("walls", "Replace the sill beam and the bottom three boards of the east wall", "in_progress"),
    ("slipway", "Get a marine contractor to assess the slipway crack", "pending"),
    ("winch", "Have the winch serviced and its cable replaced", "pending"),
    ("electrics", "Rewire the building and dry out the meter cupboard", "pending"),
]


def _todo_call(todos: Sequence[tuple[str, str, str]]) -> dict[str, Any]:
    items = [{"id": i, "content": c, "status": s} for i, c, s in todos]
    return {"text": "", "tool_calls": [{"name": "todo_write", "arguments": {"todos": items}}]}


# (the user's words, the model's replies in order: tool-call rounds first, then the answer)
TURNS: list[tuple[str, list[Any]]] = [
    (
        "I am restoring the old boathouse at Gull Point. Where should I start?",
        [
            "Start with what keeps the weather out: the roof and the walls. Water getting in "
            "will undo any other work, so check the slates, the flashing and the cladding "
            "near the ground first. Then look at the slipway and the winch, and leave "
            "finishes until the building is dry."
        ],
    ),
    (
        "Read notes.md and tell me what the survey found.",
        [
            {"text": "", "tool_calls": [{"name": "read_file", "arguments": {"path": "notes.md"}}]},
            "The survey found four problems. The roof has lost about forty slates and two "
            "rafters are rotten (6,500 to 8,000 pounds). The sill beam and three boards on "
            "the east wall are rotten. The slipway is cracked and the winch is seized. The "
            "1950s wiring has no earth upstairs and must be replaced.",
        ],
    ),
    (
        "Make a plan for the work, in the order it should be done.",
        [
            _todo_call(TODOS_TURN_3),
            "I have written a plan of four steps: the roof first, then the east wall, then "
            "the slipway assessment and the winch. The roof is in progress.",
        ],
    ),
    (
        "Roughly what will the roof cost, and how long will it take?",
        [
            "The survey estimates 6,500 to 8,000 pounds for the roof. Replacing two rafters "
            "and re-slating one side is usually two to three weeks of work for a small crew, "
            "longer if deliveries wait for a dry week because the track floods."
        ],
    ),
    (
        "Who should I call about the slipway?",
        [
            "A marine contractor, for the crack: it runs across the whole width two metres "
            "from the water, and only someone who works in the tidal zone can say whether it "
            "can be pinned or must be cut out. The winch is simpler: any agricultural "
            "engineer can service it and replace the frayed cable."
        ],
    ),
    (
        "Is there anything in the notes about the electrics?",
        [
            "Yes. The wiring is rubber-insulated from the 1950s and has to be replaced before "
            "the building is used again. There is no earth on the upper floor, and the meter "
            "cupboard is damp, so it should be dried out before new equipment goes in."
        ],
    ),
    (
        "The roof is finished. Update the plan, and add the rewiring to it.",
        [
            _todo_call(TODOS_TURN_7),
            "Done: the roof is marked completed, the east wall is now in progress, and the "
            "rewiring is a new step at the end, with drying out the meter cupboard.",
        ],
    ),
    (
        "Can the slipway work happen at the same time as the wall?",
        [
            "Mostly, yes. The wall work is on dry land and the slipway is tidal, so a crew "
            "can work the four-hour tide window on the slipway and spend the rest of the day "
            "on the sill beam. Keep deliveries for both in the same dry week."
        ],
    ),
    (
        "What should I ask the electrician?",
        [
            "Ask for a full rewire with an earth on both floors, a new consumer unit out of "
            "the damp cupboard or a cupboard that is dried and ventilated, sockets placed "
            "above the flood line, and a certificate when the work is tested."
        ],
    ),
    (
        "Summarise where the project stands.",
        [
            "The roof is done. The east wall is in progress. Still to come: the slipway "
            "assessment by a marine contractor, the winch service and cable, and the rewiring "
            "with a dry meter cupboard. Deliveries need a dry week because the track floods."
        ],
    ),
]


@dataclass(frozen=True)
class Request:
    """One request Harvey sent: its turn (1-based), its messages, and the plan then."""

    turn: int
    messages: list[Message]
    plan: str | None  # the plan summary the plan file held when the request went out


@dataclass(frozen=True)
class Session:
    requests: list[Request]
    words: list[str]  # the user's own words, turn by turn
    plan_texts: list[str]  # each plan summary Harvey sent, in the order it was sent


@contextlib.contextmanager
def _env(**values: str) -> Iterator[None]:
    """The scripted backend finds its script in the environment, as ``harvey`` would."""
    old = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def capture(workdir: Path, *, resume_each_turn: bool = False) -> Session:
    """Run the ten turns through a real session and keep every request it sent.

    As the REPL runs them: one session, ``compact_if_needed`` before each turn. With
    ``resume_each_turn``, as ``harvey run --continue`` does: a new process's session
    builder per turn, resuming the latest session from ``sessions.db``.
    """
    workspace, home = workdir / "ws", workdir / "home"
    workspace.mkdir(parents=True)
    home.mkdir()
    (workspace / "notes.md").write_text(NOTES, encoding="utf-8")
    requests: list[Request] = []
    if resume_each_turn:
        for turn in range(1, len(TURNS) + 1):
            _run_turns(workdir, workspace, home, requests, [turn], resume=turn > 1)
    else:
        _run_turns(workdir, workspace, home, requests, list(range(1, len(TURNS) + 1)))
    words = [w for w, _ in TURNS]
    return Session(requests, words, _plan_texts(requests, words))


def _run_turns(
    workdir: Path,
    workspace: Path,
    home: Path,
    requests: list[Request],
    turns: list[int],
    *,
    resume: bool = False,
) -> None:
    """Open a session (the latest one when ``resume``), play ``turns`` in it, close it."""
    from harvey.chat.compaction import compact_if_needed
    from harvey.chat.plan_injection import dynamic_plan_text
    from harvey.chat.runtime import open_runtime
    from harvey.config.settings import Paths, Settings
    from harvey.ui import HeadlessUI

    script = workdir / f"script-{turns[0]}.json"
    script.write_text(json.dumps([reply for t in turns for reply in TURNS[t - 1][1]]))
    paths = Paths(workspace, home, workspace / "harvey.yaml")
    with _env(HARVEY_SCRIPT=str(script)):
        runtime = open_runtime(
            paths, Settings(backend="scripted"), ui=HeadlessUI(), resume_latest=resume
        )
    turn = 0
    try:
        client = runtime.agent.client
        writer = runtime.plan_writer
        assert writer is not None, "the session has no plan file"
        played = client.stream_chat

        def watched(messages: Sequence[Message], *args: Any, **kwargs: Any) -> Any:
            plan = None
            if writer.path.exists():  # the old layout's summary, recomputed every round
                plan = dynamic_plan_text("", writer.read(), session_id=runtime.agent.session_id)
            requests.append(Request(turn, list(messages), plan or None))
            return played(messages, *args, **kwargs)

        client.stream_chat = watched  # type: ignore[method-assign]
        for turn in turns:
            words = TURNS[turn - 1][0]
            compact_if_needed(runtime.agent, words)  # as the REPL does, between turns
            runtime.agent.turn(words)
    finally:
        runtime.close()


def _split_context(message: Message, words: Sequence[str]) -> tuple[str, str] | None:
    """A user message that carries turn context: (the context, the user's words)."""
    if message.role != "user" or message.content in words:
        return None
    for said in words:
        if message.content.endswith("\n\n" + said):
            return message.content[: -len(said) - 2], said
    raise ValueError(f"a user message that is not one of the turns: {message.content[:80]!r}")


def _plan_texts(requests: Sequence[Request], words: Sequence[str]) -> list[str]:
    """The context texts Harvey put in user messages (each one a plan summary)."""
    found: list[str] = []
    for request in requests:
        for message in request.messages:
            split = _split_context(message, words)
            if split is not None and split[0] not in found:
                found.append(split[0])
    return found


def cache_keeping(session: Session) -> list[list[Message]]:
    """The requests as Harvey sent them."""
    return [r.messages for r in session.requests]


def changed_prefix(session: Session) -> list[list[Message]]:
    """The same requests in the old layout: the plan as a system message after the first,
    as it stood at each request, and no plan in any user message."""
    out: list[list[Message]] = []
    for request in session.requests:
        messages = [request.messages[0]]
        if request.plan is not None:
            messages.append(Message("system", request.plan))
        for message in request.messages[1:]:
            split = _split_context(message, session.words)
            messages.append(message if split is None else Message("user", split[1]))
        out.append(messages)
    return out


def first_break(requests: Sequence[Sequence[Message]]) -> int | None:
    """The index of the first request that does not begin with the one before it."""
    for index, (before, after) in enumerate(itertools.pairwise(requests), start=1):
        if list(after[: len(before)]) != list(before):
            return index
    return None
