"""Docs stay true: every command and every configuration key is documented."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from pydantic import BaseModel

from harvey.cli import main
from harvey.config import Settings

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CONFIGURATION = (ROOT / "docs" / "CONFIGURATION.md").read_text(encoding="utf-8")
FOUNTAIN = (ROOT / "docs" / "FOUNTAIN_FORMAT.md").read_text(encoding="utf-8")


def commands(group: click.Group, prefix: str = "harvey") -> list[str]:
    out = []
    for name, command in group.commands.items():
        out.append(f"{prefix} {name}")
        if isinstance(command, click.Group):
            out.extend(commands(command, f"{prefix} {name}"))
    return out


@pytest.mark.parametrize("command", commands(main))
def test_every_command_is_in_the_readme(command: str) -> None:
    name = command.split()[-1]
    assert name in README, f"{command} is not mentioned in README.md"


def config_keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    keys = []
    for name, field in model.model_fields.items():
        inner = getattr(field.annotation, "__args__", (field.annotation,))
        nested = next((a for a in inner if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if nested is not None and name != "routes":
            keys.extend(config_keys(nested, f"{prefix}{name}."))
        elif name == "routes":
            keys.extend(f"routes[].{k}" for k in config_keys(nested or BaseModel))
        else:
            keys.append(prefix + name)
    return keys


@pytest.mark.parametrize("key", config_keys(Settings))
def test_every_config_key_is_documented(key: str) -> None:
    assert f"`{key}`" in CONFIGURATION, f"{key} is missing from docs/CONFIGURATION.md"


def test_every_option_of_main_commands_is_in_help_and_docs() -> None:
    for option in (
        "--backend",
        "--base-url",
        "--model",
        "--continue",
        "--continue-file",
        "--no-record",
        "--allow-writes",
    ):
        assert option in README


def test_fountain_doc_has_version_and_all_notes() -> None:
    from harvey.session.recorder import FORMAT_VERSION

    assert f"version {FORMAT_VERSION}" in FOUNTAIN and f"| {FORMAT_VERSION} |" in FOUNTAIN
    for note in (
        "[[tool:",
        ".tool:",
        "[[rag:",
        "[[recall:",
        "[[shell:",
        "[[chunk:",
        "[[chunk-result:",
        "[[synthesis:",
        "[[write:",
    ):
        assert note in FOUNTAIN, note
    for scene in ("TALKING", "SHELL", "CONTEXT RECALL", "CHUNK ANALYSIS", "EXT."):
        assert scene in FOUNTAIN, scene
