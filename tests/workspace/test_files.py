"""The workspace walker's ``.gitignore`` rules: git's semantics, nested files included.

The property test builds random trees with random ``.gitignore`` files (root and
nested) and compares the walk with what git itself lists as untracked and not
ignored (``git ls-files --others --exclude-standard``), so "git's semantics"
is checked against git, not against a reading of its manual.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harvey.workspace.files import GitIgnore, walk_files

GIT = shutil.which("git")


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _walk(root: Path) -> set[str]:
    resolved = root.resolve()
    return {p.relative_to(resolved).as_posix() for p in walk_files(resolved, resolved)}


def test_nested_gitignore_is_relative_to_its_folder(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            ".gitignore": "*.log\n",
            "a.log": "",
            "keep.txt": "",
            "sub/.gitignore": "/local.txt\n!important.log\nbuild/\n",
            "sub/local.txt": "",  # anchored at sub/
            "sub/deeper/local.txt": "",  # not at sub/ itself: kept
            "sub/important.log": "",  # re-included by the deeper file
            "sub/other.log": "",
            "sub/build/out.txt": "",
            "local.txt": "",  # sub's rules do not reach the root
            "other/important.log": "",  # nor a sibling folder
        },
    )
    assert _walk(tmp_path) == {
        ".gitignore",
        "keep.txt",
        "local.txt",
        "sub/.gitignore",
        "sub/deeper/local.txt",
        "sub/important.log",
    }


def test_ignored_answers_for_paths_inside_an_ignored_folder(tmp_path: Path) -> None:
    _tree(tmp_path, {".gitignore": "build/\n", "sub/.gitignore": "!build/x.txt\n"})
    ignore = GitIgnore.of_workspace(tmp_path)
    assert ignore.ignored("build", True) and not ignore.ignored("build", False)
    assert ignore.ignored("build/x.txt", False)  # a folder's exclusion cannot be undone inside
    assert ignore.ignored("sub/build/x.txt", False)
    assert not ignore.ignored("sub/x.txt", False)


@pytest.mark.parametrize(
    ("pattern", "path", "is_dir", "expected"),
    [
        ("doc/*.txt", "doc/a.txt", False, True),
        ("doc/*.txt", "x/doc/a.txt", False, False),  # an inner / anchors
        ("*.txt", "x/doc/a.txt", False, True),
        ("**/logs", "a/b/logs", True, True),
        ("a/**/b", "a/b", False, True),
        ("a/**/b", "a/x/y/b", False, True),
        ("a/**", "a/x/y", False, True),
        ("a/**", "a", True, False),
        ("\\#hash", "#hash", False, True),
        ("\\!bang", "!bang", False, True),
        ("f[^o]o", "fxo", False, True),
        ("f[!o]o", "foo", False, False),
        ("trail\\ ", "trail ", False, True),
        ("spaces   ", "spaces", False, True),
        ("dir/", "dir", False, False),
    ],
)
def test_patterns(pattern: str, path: str, is_dir: bool, expected: bool) -> None:
    assert GitIgnore(pattern + "\n").ignored(path, is_dir) is expected


_NAMES = ["a", "b", "c.txt", "d.log", "e.md"]
_PATTERNS = [
    "*.log",
    "!*.log",
    "c.txt",
    "!c.txt",
    "/c.txt",
    "a/",
    "!a/",
    "b",
    "a/c.txt",
    "**/b",
    "a/**",
    "*.md",
    "!e.md",
    "b/",
    "a/**/d.log",
    "?.txt",
    "[cd].*",
    "#comment",
    "",
]
_dirs = st.lists(st.sampled_from(["", "a", "b", "a/b", "b/a", "a/a"]), max_size=3, unique=True)


@st.composite
def _workspaces(draw: st.DrawFn) -> dict[str, str]:
    folders = ["", "a", "b", "a/b", "b/a", "a/a", "a/b/a"]
    files: dict[str, str] = {}
    for folder in folders:
        for name in draw(st.lists(st.sampled_from(_NAMES[2:]), max_size=3, unique=True)):
            files[f"{folder}/{name}".lstrip("/")] = "x"
    for folder in draw(_dirs):
        rules = draw(st.lists(st.sampled_from(_PATTERNS), min_size=1, max_size=4))
        files[f"{folder}/.gitignore".lstrip("/")] = "\n".join(rules) + "\n"
    return files


def _git_untracked(root: Path) -> set[str]:
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_SYSTEM": os.devnull,
        "HOME": str(root),
    }
    subprocess.run([GIT, "init", "-q", str(root)], check=True, env=env)  # type: ignore[list-item]
    out = subprocess.run(
        [GIT, "ls-files", "--others", "--exclude-standard", "-z"],  # type: ignore[list-item]
        cwd=root,
        check=True,
        env=env,
        capture_output=True,
        text=True,
    ).stdout
    return {p for p in out.split("\0") if p}


@pytest.mark.skipif(GIT is None, reason="needs git")
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(files=_workspaces())
def test_walk_agrees_with_git(
    tmp_path_factory: pytest.TempPathFactory, files: dict[str, str]
) -> None:
    root = tmp_path_factory.mktemp("ws")
    _tree(root, files)
    assert _walk(root) == _git_untracked(root)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_or_symlinked_gitignore_is_no_rules_and_no_hang(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("*\n")
    ws = tmp_path / "ws"
    _tree(ws, {"a.txt": "", "sub/b.txt": "", "link/c.txt": ""})
    os.mkfifo(ws / ".gitignore")
    os.mkfifo(ws / "sub" / ".gitignore")
    (ws / "link" / ".gitignore").symlink_to(outside)
    assert _walk(ws) == {"a.txt", "sub/b.txt", "link/c.txt"}


def test_relative_posix_agrees_with_pathlib(tmp_path: Path) -> None:
    from harvey.workspace.files import relative_posix

    root = tmp_path / "ws"
    for path in (root / "a.txt", root / "d" / "e" / "f.py", root / "sp ace" / "é.md"):
        assert relative_posix(root, path) == path.relative_to(root).as_posix()
        assert relative_posix(root, str(path)) == path.relative_to(root).as_posix()
    with pytest.raises(ValueError):  # a sibling whose name starts like the root is outside
        relative_posix(root, tmp_path / "ws-other" / "x")
    with pytest.raises(ValueError):
        relative_posix(root, tmp_path / "wsx")
    assert relative_posix(Path("/"), Path("/etc/passwd")) == "etc/passwd"
