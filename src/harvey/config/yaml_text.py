"""Reading harvey.yaml's text: PyYAML, kept out of ``config/settings.py``'s import.

Most starts have no harvey.yaml at all (settings from flags and the
environment), and PyYAML costs about 10 ms to import; so ``config/settings.py``
imports this module only once there is a file's text to parse or a
validation error to place on a line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from harvey.errors import ConfigError


class DuplicateKey(ConfigError, yaml.YAMLError):
    """A mapping in harvey.yaml names the same key twice (YAML says keys are unique)."""

    def __init__(self, key: object, first_line: int, second_line: int) -> None:
        super().__init__(f"key {key!r} appears twice (lines {first_line} and {second_line})")
        self.key = key
        self.first_line = first_line
        self.second_line = second_line


class UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses duplicate keys at every nesting level.

    PyYAML keeps the last value silently, so a second ``model:`` further down
    would quietly win over the first. Merge keys (``<<: *base``) may still be
    overridden: only keys written in the mapping itself are compared.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: dict[object, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: the base class reports it
                    continue
                line = key_node.start_mark.line + 1
                if first is not None:
                    raise DuplicateKey(key, first, line)
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def parse(path: Path, text: str) -> Any:
    """The YAML document in ``text`` as plain data (``None`` when empty); one ConfigError
    line naming ``path`` and the line when it is not valid YAML or repeats a key."""
    try:
        return yaml.load(text, Loader=UniqueKeyLoader)  # a SafeLoader: no arbitrary objects
    except DuplicateKey as exc:
        raise ConfigError(f"{path}: line {exc.second_line}: {exc}") from exc
    except RecursionError:
        # PyYAML composes nested collections recursively: a file 5,000 levels deep ends
        # Python's stack. One line, not a traceback (no real settings nest past ten).
        raise ConfigError(f"{path}: nested too deeply to be a settings file") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        # from None: PyYAML's own message quotes the offending line, and a debug
        # traceback (HARVEY_DEBUG=1) would print it: an api_key line's key with it
        raise ConfigError(f"{path}:{where} invalid YAML: {problem}") from None


def line_of(text: str, loc: tuple[int | str, ...]) -> int | None:
    """The 1-based line of a key path in ``text``, None when it cannot be found."""
    try:
        document = yaml.compose(text)
    except (yaml.YAMLError, RecursionError):
        return None
    return _node_line(document, loc)


def _node_line(document: yaml.Node | None, loc: tuple[int | str, ...]) -> int | None:
    """Find the 1-based line of a key path in a composed YAML document."""
    node = document
    line = None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.value == part:
                    line = key.start_mark.line + 1
                    node = value
                    break
            else:
                return line
        elif (
            isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value)
        ):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line
