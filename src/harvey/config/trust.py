"""Workspace trust: what a workspace's ``harvey.yaml`` may set before the user trusts it.

A workspace may be a repository someone else wrote, and its ``harvey.yaml`` is
in reach of that repository and of the model (a tool can write it, a ``git
pull`` can change it). So the file is screened against one table before it is
applied: a key in :data:`NARROWING` whose value passes its test only narrows
what Harvey does or chooses a model, and applies at once; every other key —
``security.*``, ``base_url``, ``endpoints``, a route's server, ``session.directory``,
an embedder that would be handed a key, and any key added to the settings later
and not listed here — *widens*, and applies only once the user trusts the
workspace. Keys in :data:`NEVER_IN_WORKSPACE` (``api_key``, ``api_key_command``)
are refused even then: a key must not sit in a file the model can read.

Trust is recorded in ``HARVEY_HOME`` (``config/trust_store.py``) by the workspace's real
path and the SHA-256 of the ``harvey.yaml`` it was given for, so an edited file (a ``git
pull``) is a new question. ``HARVEY.md`` and ``AGENTS.md`` are not hashed: they
only add text to the system prompt and cannot change what Harvey may do.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Rule = Callable[[Any], bool]


def _always(_value: Any) -> bool:
    return True


def _one_of(*allowed: str) -> Rule:
    return lambda value: value in allowed


def _not_a_file(model: Any) -> bool:
    """A model name, not a ``.gguf`` path the embedded backend would load and parse (a
    file the repository ships, or one anywhere on the disk, handed to llama.cpp)."""
    return not (isinstance(model, str) and model.strip().lower().endswith(".gguf"))


def _no_key_leaves(spec: Any) -> bool:
    """An embedder that is handed no key: ``none``, ``local`` or ``ollama:MODEL``."""
    return isinstance(spec, str) and not spec.startswith("openai:")


#: Keys an untrusted workspace file may set, each with the test its value must
#: pass. Everything not here widens (the class is closed by default: a setting
#: added later is refused until someone decides it only narrows and lists it).
NARROWING: Mapping[str, Rule] = {
    # Which model answers: the server and the key stay the user's own.
    "backend": _always,
    "model": _not_a_file,
    "num_ctx": _always,
    "context_window": _always,
    "timeout": _always,
    "connect_timeout": _always,
    "retries": _always,
    "user": _always,
    "tools.enabled": _always,
    "tools.max_rounds": _always,
    # How calls are read (native, from text, grammar-constrained) or none: every call
    # still runs through the same registry, approval and confinement.
    "tools.mode": _one_of("auto", "native", "text", "constrained", "off"),
    "tools.models": _one_of("auto", "native", "text", "constrained", "off"),
    # The recording is the session's audit trail: a clone may ask for one, never switch
    # it off behind the user's back (``--no-record`` and the user's own file still can).
    "session.record": lambda value: value is True,
    # A route may name a model on the user's own server; its base_url/endpoints widen.
    "routes[].name": _always,
    "routes[].backend": _always,
    "routes[].model": _not_a_file,
    "chunking.enabled": _always,
    "chunking.threshold": _always,
    "chunking.chunk_size_bytes": _always,
    "chunking.chunk_size_tokens": _always,
    "chunking.max_chunks": _always,
    "chunking.overlap": _always,
    "chunking.concurrency": _always,
    "max_in_flight": _always,  # like chunking.concurrency: how hard the server is worked
    "analysis.executor": _one_of("local"),  # ray starts a cluster; ray_address joins one
    # How evidence is found and who writes the answer: every answer is checked either way.
    "analysis.evidence": _always,
    "analysis.answer": _always,
    "offload.enabled": _always,
    "offload.threshold": _always,
    "offload.preview_lines": _always,
    "rag.active": _always,
    "rag.top_k": _always,
    "rag.min_score": _always,
    "rag.floor_cosine": _always,
    "rag.floor_bm25": _always,
    "rag.floor_cosine_alone": _always,
    "rag.floor_background_cosine": _always,
    "rag.floor_background_cosine_alone": _always,
    "rag.floor_unknown_word_cosine": _always,
    "rag.floor_unknown_share": _always,
    "rag.budget_pct": _always,
    "rag.chunk_size_bytes": _always,
    "memory.enabled": _always,
    "memory.budget_pct": _always,
    "memory.auto_mine_min_turns": _always,
    "memory.embedder": _no_key_leaves,
}

#: Keys refused in a workspace file whether it is trusted or not.
NEVER_IN_WORKSPACE = frozenset(
    {"api_key", "api_key_command", "routes[].api_key", "routes[].api_key_command"}
)

Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class Setting:
    """One leaf of a settings mapping: where it is (``("routes", 0, "base_url")``) and its value."""

    loc: Loc
    value: Any

    @property
    def path(self) -> str:
        """``routes[0].base_url``: for a person."""
        return _join(self.loc, index=True)

    @property
    def rule_key(self) -> str:
        """``routes[].base_url``: how the table names it."""
        return _join(self.loc, index=False)


def _join(loc: Loc, *, index: bool) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]" if index else "[]"
        else:
            text += f".{part}" if text else str(part)
    return text


@dataclass
class Screened:
    """A workspace file's settings split: what applies untrusted, what waits for trust."""

    kept: dict[str, Any]
    widening: list[Setting] = field(default_factory=list)
    forbidden: list[Setting] = field(default_factory=list)


def leaves(data: Mapping[str, Any], loc: Loc = ()) -> Iterator[Setting]:
    """Every leaf below ``data``; a list of mappings (``routes``) is walked item by item."""
    for key, value in data.items():
        here = (*loc, key)
        if isinstance(value, Mapping):
            yield from leaves(value, here)
        elif _is_table_list(value):
            for number, item in enumerate(value):
                yield from leaves(item, (*here, number))
        else:
            yield Setting(here, value)


def _is_table_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def narrows(setting: Setting) -> bool:
    """True when the table lets an untrusted file set this leaf to this value."""
    key = setting.rule_key
    if setting.loc[:2] == ("tools", "models") and len(setting.loc) == 3:
        key = "tools.models"  # one rule for the mode of every model named
    rule = NARROWING.get(key)
    return rule is not None and bool(rule(setting.value))


_UNSET = object()


def _get(data: Mapping[str, Any], *loc: str) -> Any:
    for part in loc:
        if not isinstance(data, Mapping) or part not in data:
            return _UNSET
        data = data[part]
    return data


def _turned_off(value: Any, own: Any) -> bool:
    """The user switched it off and the workspace switches it back on."""
    return own is False and value is not False


def _more_than(value: Any, own: Any) -> bool:
    """The user (or the default) set a ceiling and the workspace raises it."""
    number = (int, float)
    return isinstance(own, number) and not (isinstance(value, number) and value <= own)


def _lower_than(value: Any, own: Any) -> bool:
    """The user set a floor and the workspace lowers it."""
    number = (int, float)
    return isinstance(own, number) and not (isinstance(value, number) and value >= own)


def _share_raised(value: Any, own: Any) -> bool:
    """The user set a share at or over which a check applies, and the workspace raises it
    or turns it off (0): either lets more through."""
    number = (int, float)
    if not isinstance(own, number) or own <= 0:
        return False
    return not (isinstance(value, number) and 0 < value <= own)


def _mode_back_on(value: Any, own: Any) -> bool:
    """The user's tool mode is ``off`` and the workspace names another."""
    return own == "off" and value != "off"


#: The limits a person sets in their own harvey.yaml that a workspace key the table
#: lets through may tighten but never lift: the key, and how a workspace value would
#: lift the user's. One table, so a limit added later is one line here, not a branch.
USER_LIMITS: Mapping[str, Callable[[Any, Any], bool]] = {
    "tools.enabled": _turned_off,
    "tools.max_rounds": _more_than,
    # how long and how hard Harvey works for one request, and what a result may fill
    "timeout": _more_than,
    "connect_timeout": _more_than,
    "retries": _more_than,
    "chunking.concurrency": _more_than,
    "max_in_flight": _more_than,
    "offload.threshold": _more_than,
    "rag.budget_pct": _more_than,
    "memory.budget_pct": _more_than,
    "tools.mode": _mode_back_on,
    "tools.models": _mode_back_on,  # a model's own entry, else the user's tools.mode
    "memory.enabled": _turned_off,
    "chunking.max_chunks": _more_than,  # the question before more model calls
    "session.record": _turned_off,  # the user's own "no recording" stays
    # what of the user's stores reaches the model: a floor or a minimum only rises
    "rag.top_k": _more_than,
    "rag.min_score": _lower_than,
    "rag.floor_cosine": _lower_than,
    "rag.floor_bm25": _lower_than,
    "rag.floor_cosine_alone": _lower_than,
    "rag.floor_background_cosine": _lower_than,
    "rag.floor_background_cosine_alone": _lower_than,
    "rag.floor_unknown_word_cosine": _lower_than,
    "rag.floor_unknown_share": _share_raised,
}


#: Limits a workspace may only tighten from the default when the user's own file is
#: silent: without the user's value, the default's is the one a clone may not lift.
FROM_DEFAULT = (_more_than, _lower_than, _share_raised)

#: Pairs of keys of which either, at 0, turns one check off (``Floor.off_subject``).
TURNED_OFF_TOGETHER = {
    "rag.floor_unknown_share": "rag.floor_unknown_word_cosine",
    "rag.floor_unknown_word_cosine": "rag.floor_unknown_share",
}


def within_user(
    setting: Setting, user: Mapping[str, Any], defaults: Mapping[str, Any] | None = None
) -> bool:
    """False when a leaf the table lets through would lift a limit the user's own file
    sets (``USER_LIMITS``), or, where the user's file is silent, the default
    (``FROM_DEFAULT``): a cloned file may narrow further, never turn the model's tools or
    memory back on, or allow more rounds, calls, time or context, behind the user's back."""
    loc = setting.loc
    per_model = loc[:2] == ("tools", "models") and len(loc) == 3
    key = "tools.models" if per_model else setting.rule_key
    lifts = USER_LIMITS.get(key)
    if lifts is None:
        return True
    own = _get(user, *(str(part) for part in loc))
    if per_model and own is _UNSET:
        own = _get(user, "tools", "mode")
    if own is _UNSET and key in TURNED_OFF_TOGETHER and setting.value == 0:
        # either level at 0 turns the check off: the user's own other level keeps it on
        sibling = _get(user, *TURNED_OFF_TOGETHER[key].split("."))
        return not (isinstance(sibling, (int, float)) and sibling > 0)
    if own is _UNSET and lifts in FROM_DEFAULT:
        own = _get(defaults or {}, *(str(part) for part in loc))
    return own is _UNSET or not lifts(setting.value, own)


def screen(
    data: Mapping[str, Any],
    user: Mapping[str, Any] | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> Screened:
    """Split validated settings (``model_dump(exclude_unset=True)``) into the part that
    applies untrusted and the leaves that widen or are never allowed; ``user`` is the
    user's own file's settings, whose limits a narrowing key may not lift
    (``within_user``).

    A list of mappings is one value: one widening item (a route with a
    ``base_url``) holds the whole list back, so "not now" never leaves a route
    pointing somewhere other than its author meant.
    """
    result = Screened(kept={})
    for setting in leaves(data):
        if setting.rule_key in NEVER_IN_WORKSPACE:
            result.forbidden.append(setting)
        elif not narrows(setting) or not within_user(setting, user or {}, defaults):
            result.widening.append(setting)
    refused = result.widening + result.forbidden
    held = {s.loc[0] for s in refused if _in_list(s.loc)}
    result.kept = _keep(data, (), {s.loc for s in refused}, held)
    return result


def _in_list(loc: Loc) -> bool:
    return any(isinstance(part, int) for part in loc)


def _keep(data: Mapping[str, Any], loc: Loc, refused: set[Loc], held: set[Any]) -> dict[str, Any]:
    """``data`` without the refused leaves, without a top-level list any item of which
    was refused (``held``), and without stanzas left empty."""
    kept: dict[str, Any] = {}
    for key, value in data.items():
        here = (*loc, key)
        if isinstance(value, Mapping):
            inner = _keep(value, here, refused, held)
            if inner:
                kept[key] = inner
        elif _is_table_list(value):
            if not loc and key not in held:
                kept[key] = value
        elif here not in refused:
            kept[key] = value
    return kept


def digest(content: bytes | None) -> str:
    """The SHA-256 of a config file's bytes (``absent`` when there is no file)."""
    return "absent" if content is None else hashlib.sha256(content).hexdigest()


@dataclass(frozen=True)
class Review:
    """What the user is asked to trust: a workspace, its file's hash, and what it would widen."""

    workspace: Path
    config_file: Path
    digest: str
    widening: tuple[Setting, ...]
