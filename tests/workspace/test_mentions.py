"""What a person's words name of the workspace: files, folders, identifiers."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from harvey.workspace.mentions import is_name, named_folders, named_paths, names_the_workspace


def test_files_and_identifiers_are_named_english_words_are_not() -> None:
    assert named_paths("read notes.md and src/app.py, then notes.md.") == ["notes.md", "src/app.py"]
    assert named_paths("please create a bug report for me") == []
    assert all(is_name(w) for w in ("parse_date", "UserStore", "v2", "config/app", "TODO"))
    assert not any(is_name(w) for w in ("meeting", "Please", "report"))


def test_a_folder_is_named_only_when_it_is_the_workspace_s_own(tmp_path: Path) -> None:
    (tmp_path / "src" / "api").mkdir(parents=True)
    (tmp_path / "docs").symlink_to("/etc")  # a link that leads out is not a folder of it
    os.mkfifo(tmp_path / "pipe")
    words = ["src", "src/api", "docs", "pipe", "missing", "..", "/etc"]
    assert named_folders(words, tmp_path) == ["src", "src/api"]


def test_a_request_names_the_workspace_by_file_folder_or_identifier(tmp_path: Path) -> None:
    (tmp_path / "reports").mkdir()
    assert names_the_workspace("what does plan.txt say?", None)
    assert names_the_workspace("where is parse_date defined?", None)
    assert names_the_workspace("list what is in reports", tmp_path)
    assert not names_the_workspace("list what is in reports", None)
    assert not names_the_workspace("please create a reminder for me", tmp_path)
    assert not names_the_workspace("delete that meeting, we no longer need it", tmp_path)


@given(st.from_regex(r"[a-z]{1,8}(_[a-z]{1,8})+", fullmatch=True))
def test_every_snake_case_word_is_an_identifier(word: str) -> None:
    assert names_the_workspace(f"what calls {word} here?", None)
