"""Workspace trust: what a workspace's ``harvey.yaml`` may set before the user trusts it.

A workspace may be a repository someone else wrote, and its ``harvey.yaml`` is in reach
of that repository and of the model (a tool can write it, a ``git pull`` can change it).
So the file is screened before it is applied: a key whose setting declares it narrowing
(``Workspace`` in ``config/settings.py``, read by ``config/field_trust.py``) and whose
value passes its test only narrows what Harvey does or chooses a model, and applies at
once; every other key — ``security.*``, ``base_url``, ``endpoints``, a route's server,
``session.directory``, an embedder that would be handed a key, and any key added to the
settings later and not declared — *widens*, and applies only once the user trusts the
workspace. Keys declared ``NEVER_IN_WORKSPACE`` (``api_key``, ``api_key_command``) are
refused even then: a key must not sit in a file the model can read.

Trust is recorded in ``HARVEY_HOME`` (``config/trust_store.py``) by the workspace's real
path and the SHA-256 of the ``harvey.yaml`` it was given for, so an edited file (a ``git
pull``) is a new question. ``HARVEY.md`` and ``AGENTS.md`` are not hashed: they only add
text to the system prompt and cannot change what Harvey may do.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harvey.config.field_trust import FROM_DEFAULT, WorkspaceRules

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


def narrows(setting: Setting, rules: WorkspaceRules) -> bool:
    """True when the rules let an untrusted file set this leaf to this value."""
    key = rules.key(setting.rule_key)
    if setting.loc[:2] == ("tools", "models") and len(setting.loc) == 3:
        key = "tools.models"  # one rule for the mode of every model named
    rule = rules.narrowing.get(key)
    return rule is not None and bool(rule(setting.value))


_UNSET = object()


def _get(data: Mapping[str, Any], *loc: str) -> Any:
    for part in loc:
        if not isinstance(data, Mapping) or part not in data:
            return _UNSET
        data = data[part]
    return data


def within_user(
    setting: Setting,
    user: Mapping[str, Any],
    defaults: Mapping[str, Any] | None,
    rules: WorkspaceRules,
) -> bool:
    """False when a leaf the rules let through would lift a limit the user's own file
    sets (``rules.limits``), or, where the user's file is silent, the default
    (``FROM_DEFAULT``): a cloned file may narrow further, never turn the model's tools or
    memory back on, or allow more rounds, calls, time or context, behind the user's back."""
    loc = setting.loc
    per_model = loc[:2] == ("tools", "models") and len(loc) == 3
    key = "tools.models" if per_model else rules.key(setting.rule_key)
    lifts = rules.limits.get(key)
    if lifts is None:
        return True
    own = _get(user, *(str(part) for part in loc))
    if per_model and own is _UNSET:
        own = _get(user, "tools", "mode")
    if own is _UNSET and lifts in FROM_DEFAULT:
        own = _get(defaults or {}, *(str(part) for part in loc))
    return own is _UNSET or not lifts(setting.value, own)


def screen(
    data: Mapping[str, Any],
    user: Mapping[str, Any] | None = None,
    defaults: Mapping[str, Any] | None = None,
    *,
    rules: WorkspaceRules,
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
        if rules.key(setting.rule_key) in rules.never:
            result.forbidden.append(setting)
        elif not narrows(setting, rules) or not within_user(setting, user or {}, defaults, rules):
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
