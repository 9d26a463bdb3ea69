"""What a workspace's ``harvey.yaml`` may do with each setting, declared on the setting.

A field of the settings model carries ``Workspace(...)`` when an untrusted workspace file
may set it (``allows``: the test its value must pass) and, when it is a limit, how a
workspace value would lift the user's (``limit``: the file may only tighten it, from the
user's own value or, where that file is silent, the default). ``NEVER_IN_WORKSPACE``
marks a field refused in a workspace file even once trusted (a key must not sit in a file
the model can read). A field with neither widens: it applies only once the user trusts
that exact file. So a setting added later is closed until someone declares otherwise, and
a new narrowing setting is one annotation and one row of ``docs/CONFIGURATION.md``.

``workspace_rules`` reads the declarations off the model into the tables
``config/trust.py`` screens a file with.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

Rule = Callable[[Any], bool]
Lift = Callable[[Any, Any], bool]


def always(_value: Any) -> bool:
    return True


def one_of(*allowed: str) -> Rule:
    return lambda value: value in allowed


def only_true(value: Any) -> bool:
    """The recording is the session's audit trail: a clone may ask for one, never switch
    it off behind the user's back (``--no-record`` and the user's own file still can)."""
    return value is True


def not_a_file(model: Any) -> bool:
    """A model name, not a ``.gguf`` path the embedded backend would load and parse (a
    file the repository ships, or one anywhere on the disk, handed to llama.cpp)."""
    return not (isinstance(model, str) and model.strip().lower().endswith(".gguf"))


def no_key_leaves(spec: Any) -> bool:
    """An embedder that is handed no key: ``none``, ``local`` or ``ollama:MODEL``."""
    return isinstance(spec, str) and not spec.startswith("openai:")


def turned_off(value: Any, own: Any) -> bool:
    """The user switched it off and the workspace switches it back on."""
    return own is False and value is not False


def more_than(value: Any, own: Any) -> bool:
    """The user (or the default) set a ceiling and the workspace raises it."""
    number = (int, float)
    return isinstance(own, number) and not (isinstance(value, number) and value <= own)


def lower_than(value: Any, own: Any) -> bool:
    """The user set a floor and the workspace lowers it."""
    number = (int, float)
    return isinstance(own, number) and not (isinstance(value, number) and value >= own)


def share_raised(value: Any, own: Any) -> bool:
    """The user set a share at or over which a check applies, and the workspace raises it
    or turns it off (0): either lets more through."""
    number = (int, float)
    if not isinstance(own, number) or own <= 0:
        return False
    return not (isinstance(value, number) and 0 < value <= own)


def floor_loosened(value: Any, own: Any) -> bool:
    """The user (or the default) asks retrieval for a floor and the workspace asks for a
    lower one (``strict`` → ``default`` → ``off``)."""
    order = ("off", "default", "strict")
    if own not in order:
        return False
    return value not in order or order.index(value) < order.index(own)


def mode_back_on(value: Any, own: Any) -> bool:
    """The user's tool mode is ``off`` and the workspace names another."""
    return own == "off" and value != "off"


#: Limits a workspace may only tighten from the default when the user's own file is
#: silent: without the user's value, the default's is the one a clone may not lift.
FROM_DEFAULT = (more_than, lower_than, share_raised, floor_loosened)


@dataclass(frozen=True)
class Workspace:
    """On a settings field: an untrusted workspace file may set it to a value ``allows``
    passes; with ``limit``, never past the user's own value (or the default)."""

    allows: Rule = always
    limit: Lift | None = None


class _Never:
    """On a settings field: refused in a workspace file, trusted or not."""


NEVER_IN_WORKSPACE = _Never()


@dataclass(frozen=True)
class WorkspaceRules:
    """The declarations of a settings model as tables, keyed like ``routes[].model``; a
    mapping of named stanzas (``mcp.servers``, in ``named``) as ``mcp.servers.*.command``."""

    narrowing: Mapping[str, Rule]
    limits: Mapping[str, Lift]
    never: frozenset[str]
    named: frozenset[str] = frozenset()

    def key(self, rule_key: str) -> str:
        """``rule_key`` with a named stanza's name as ``*``: ``mcp.servers.*.command``."""
        for prefix in self.named:
            if rule_key.startswith(prefix + ".") and rule_key.count(".") > prefix.count(".") + 1:
                rest = rule_key[len(prefix) + 1 :].split(".", 1)[1]
                return f"{prefix}.*.{rest}"
        return rule_key


_READ: dict[type[BaseModel], WorkspaceRules] = {}


def workspace_rules(model: type[BaseModel]) -> WorkspaceRules:
    """The tables of ``model``'s declarations, read once per model."""
    if model in _READ:
        return _READ[model]
    narrowing: dict[str, Rule] = {}
    limits: dict[str, Lift] = {}
    never: set[str] = set()
    named = frozenset(_named(model, ""))
    for key, metadata in _fields(model, ""):
        for mark in metadata:
            if isinstance(mark, Workspace):
                narrowing[key] = mark.allows
                if mark.limit is not None:
                    limits[key] = mark.limit
            elif mark is NEVER_IN_WORKSPACE:
                never.add(key)
    _READ[model] = WorkspaceRules(narrowing, limits, frozenset(never), named)
    return _READ[model]


def _fields(model: type[BaseModel], prefix: str) -> Iterator[tuple[str, list[Any]]]:
    """Every field below ``model`` with its metadata; a stanza is walked into, a list of
    stanzas (``routes``) as ``routes[]``."""
    for name, info in model.model_fields.items():
        key = f"{prefix}.{name}" if prefix else name
        inner = _model_in(info.annotation)
        if inner is not None:
            origin = typing.get_origin(info.annotation)
            suffix = "[]" if origin is list else ".*" if origin is dict else ""
            yield from _fields(inner, key + suffix)
        else:
            yield key, list(info.metadata)


def _named(model: type[BaseModel], prefix: str) -> Iterator[str]:
    """The keys of fields that map names to stanzas (``mcp.servers``)."""
    for name, info in model.model_fields.items():
        key = f"{prefix}.{name}" if prefix else name
        inner = _model_in(info.annotation)
        if inner is not None and typing.get_origin(info.annotation) is dict:
            yield key
        elif inner is not None:
            yield from _named(inner, key)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The settings model a field holds, itself, as a list's items or a mapping's values."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin in (list, dict):
        item = typing.get_args(annotation)[-1]
        if isinstance(item, type) and issubclass(item, BaseModel):
            return item
    return None
