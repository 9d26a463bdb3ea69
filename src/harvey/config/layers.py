"""Settings from their layers: defaults < ``HARVEY_HOME/harvey.yaml`` < the workspace's
``harvey.yaml`` (screened by ``harvey.config.trust``) < environment < command-line flags.

The user's own file in ``HARVEY_HOME`` is trusted whole: keys, ``api_key_command``,
servers, ``security:``. The workspace's file may come from a repository someone
else wrote, so only its narrowing part applies until the user trusts that
workspace; what it would widen is refused (``decide`` is None: ``harvey run``),
or put to ``decide`` (the REPL's question, ``--trust``). Each file is read once:
the bytes that are hashed for trust are the bytes that are parsed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from harvey.config.field_trust import workspace_rules
from harvey.config.trust import Review, Screened, digest, screen
from harvey.config.trust_store import TrustStore, read_bounded
from harvey.errors import ConfigError


# What this module reads of ``harvey.config.settings``'s types, named here so that it sits below
# ``harvey.config.settings`` in the import graph, type-only imports included.
class Paths(Protocol):
    """``harvey.config.settings.Paths``: where the settings files are."""

    @property
    def workspace(self) -> Path: ...
    @property
    def harvey_home(self) -> Path: ...
    @property
    def config_file(self) -> Path: ...
    @property
    def user_config_file(self) -> Path: ...


class KeyOwner(Protocol):
    """Settings or a route: a key, or a command that prints one."""

    @property
    def api_key(self) -> object: ...
    @property
    def api_key_command(self) -> object: ...


class Validated(KeyOwner, Protocol):
    """``harvey.config.settings.Settings`` as the layers need it."""

    @property
    def routes(self) -> Sequence[KeyOwner]: ...
    def model_dump(self, *, exclude_unset: bool = ...) -> dict[str, Any]: ...


SettingsT = TypeVar("SettingsT", bound=Validated)

#: Given what an untrusted workspace file would widen: True applies it, False keeps
#: only its narrowing part; raising (``Cancelled``) stops.
Decide = Callable[[Review], bool]
#: ``config.settings.validate``: data, its source and text → Settings, or one ConfigError line.
#: Handed in, so that this module sits below ``harvey.config.settings`` in the import graph.
Validate = Callable[[dict[str, Any], Path | str, str | None], SettingsT]

ENV_KEYS = {
    "HARVEY_BACKEND": "backend",
    "HARVEY_MODEL": "model",
    "HARVEY_BASE_URL": "base_url",
    "HARVEY_USER": "user",
}

_INSTEAD_OF = {"endpoints": "base_url", "base_url": "endpoints"}


def read_config(path: Path) -> tuple[dict[str, Any], str, bytes | None]:
    """A config file as (plain data, its text, its bytes); ``({}, "", None)`` when absent."""
    raw = read_bounded(path)
    if raw is None:
        return {}, "", None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: cannot read: not UTF-8 text ({exc.reason})") from exc
    from harvey.config.yaml_text import parse  # PyYAML only when there is a file to read

    data = parse(path, text)
    if data is None:
        return {}, text, raw
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys (e.g. 'model: ...')")
    return data, text, raw


def load_layers(
    paths: Paths,
    validate: Validate[SettingsT],
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    decide: Decide | None = None,
) -> SettingsT:
    """The settings every layer adds up to (see the module's docstring), validated."""
    env = os.environ if env is None else env
    layers: list[Mapping[str, Any]] = []
    user_file = paths.user_config_file
    data, text, _raw = read_config(user_file)
    own = validate(data, user_file, text).model_dump(exclude_unset=True) if data else {}
    layers.append(own)
    if not _same_file(user_file, paths.config_file):
        layers.append(workspace_layer(paths, validate, decide, own))
    layers.append({key: env[var] for var, key in ENV_KEYS.items() if env.get(var)})
    layers.append(overrides or {})
    merged: dict[str, Any] = {}
    for layer in layers:
        _merge(merged, layer)
    settings = validate(merged, "command line/environment", None)
    _one_key_source(settings, user_file)
    return settings


def workspace_layer(
    paths: Paths,
    validate: Validate[Any],
    decide: Decide | None,
    own: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What the workspace's harvey.yaml adds: all of it when trusted, else its narrowing part
    (or a refusal); ``own`` is the user's file, whose limits narrowing keys may not lift."""
    data, text, raw = read_config(paths.config_file)
    if not data:
        return {}
    given = validate(data, paths.config_file, text).model_dump(exclude_unset=True)
    default = validate({}, "the defaults", None)
    defaults = default.model_dump()  # the limits a clone keeps
    screened = screen(given, own, defaults, rules=workspace_rules(type(default)))
    if screened.forbidden:
        raise ConfigError(key_in_workspace(paths, screened, text))
    if not screened.widening:
        return given
    review = Review(paths.workspace, paths.config_file, digest(raw), tuple(screened.widening))
    if TrustStore(paths.harvey_home).is_trusted(paths.workspace, review.digest):
        return given
    if decide is None:
        raise ConfigError(refusal(review))
    return given if decide(review) else screened.kept


def refusal(review: Review) -> str:
    """The one line ``harvey run`` prints for an untrusted widening."""
    from harvey.terminal_text import for_terminal

    names = [s.path for s in review.widening]
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    where = for_terminal(str(review.workspace))
    return (
        f"{for_terminal(str(review.config_file))} would widen what Harvey may do ({shown}) "
        f"and this workspace is not trusted: review the file, then run `harvey trust {where}`, "
        "or pass --trust for this run"
    )


def key_in_workspace(paths: Paths, screened: Screened, text: str) -> str:
    from harvey.config.yaml_text import line_of

    setting = screened.forbidden[0]
    line = line_of(text, setting.loc)
    where = f" line {line}," if line else ""
    if not str(setting.loc[-1]).endswith(("api_key", "api_key_command", "token_command")):
        return (  # mcp.allow, a server's confine: decisions only the user's own file makes
            f"{paths.config_file}:{where} key '{setting.path}' is the user's own decision: "
            f"a workspace file cannot make it, trusted or not; set it in {paths.user_config_file}"
        )
    return (
        f"{paths.config_file}:{where} key '{setting.path}': a key does not belong in a "
        "workspace file, which the model and the repository can read; move it to "
        f"{paths.user_config_file}, the environment (OPENAI_API_KEY) or an api_key_command "
        "in that file"
    )


def _merge(into: dict[str, Any], layer: Mapping[str, Any]) -> None:
    """Lay ``layer`` over ``into``: mappings key by key, anything else (lists too) whole."""
    for key, value in layer.items():
        if value is None:
            continue
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value)
            continue
        into[key] = dict(value) if isinstance(value, Mapping) else value
        if key in _INSTEAD_OF:  # a base_url replaces endpoints below it, and the reverse
            into.pop(_INSTEAD_OF[key], None)


def _same_file(first: Path, second: Path) -> bool:
    try:
        return os.path.samefile(first, second)
    except OSError:
        return False


def _one_key_source(settings: Validated, user_file: Path) -> None:
    owners: list[tuple[str, KeyOwner]] = [("", settings)]
    owners += [(f"routes[{n}].", route) for n, route in enumerate(settings.routes)]
    for prefix, owner in owners:
        if owner.api_key is not None and owner.api_key_command:
            raise ConfigError(
                f"{user_file}: give {prefix}api_key or {prefix}api_key_command, not both"
            )
