"""Where a name is defined, from the code tree-sitter parses (issue 39, point 1)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from harvey.analysis.definitions import (
    definitions_answer,
    definitions_in,
    find_definitions,
    module_doc,
    split_name,
    workspace_definitions,
)

SOURCE = b'''"""Dates, parsed."""


def parse_date(text):
    r"""Return the parts of a date."""
    return text.split("-")


class UserStore:
    def add(self, name):
        pass
'''


def test_definitions_of_a_file_with_their_lines_and_docstrings() -> None:
    found = definitions_in("src/dates.py", SOURCE, "python")
    assert [(d.name, d.line, d.kind) for d in found] == [
        ("parse_date", 4, "function"),
        ("UserStore", 9, "class"),
        ("add", 10, "function"),
    ]
    assert found[0].doc == "Return the parts of a date."  # the r prefix is not its text
    assert found[0].cited() == "src/dates.py:L4  def parse_date(text):"
    assert module_doc(SOURCE, "python") == "Dates, parsed."


def test_a_name_splits_into_the_words_a_question_uses() -> None:
    assert split_name("parse_date") == "parse date"
    assert split_name("JSONDecoder") == "JSON Decoder"
    assert "scan string" in split_name("py_scanstring")


def test_a_definition_is_found_by_name_or_by_what_its_docstring_says(tmp_path: Path) -> None:
    shutil.copytree(Path(json.__file__).parent, tmp_path / "jsonpkg")
    (tmp_path / ".harvey").mkdir()  # Harvey's own files are never walked
    (tmp_path / ".harvey" / "x.py").write_text("def py_scanstring():\n    pass\n")
    everything = workspace_definitions(tmp_path)
    assert not any(d.path.startswith(".harvey") for d in everything)
    asked = "Where is the function that parses JSON strings defined?"
    assert (
        find_definitions(everything, asked)[0].cited().startswith("jsonpkg/decoder.py:L")
        and find_definitions(everything, asked)[0].name == "py_scanstring"
    )
    assert [d.name for d in find_definitions(everything, "Where is loads defined?")] == ["loads"]
    answer = definitions_answer(tmp_path, "Which class decodes JSON?")
    assert answer is not None and "class JSONDecoder(object):" in answer.splitlines()[0]
    assert definitions_answer(tmp_path, "Where is the weather defined?") is None
