"""Every walk over the workspace survives a tree 5,000 folders deep (issue 19, 8d).

Python 3.11's ``os.walk`` recurses, so ``search_files`` died with ``RecursionError`` on a
tree deeper than about 1,000 folders. The tree is built and removed through directory
file descriptors (its full path is longer than ``PATH_MAX``); the walks must neither
crash nor hang, and must still find what lies near the top.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from harvey.knowledge.ingest import collect
from harvey.memory.profile import facts, languages
from harvey.tools.files import ListFilesTool
from harvey.tools.registry import ToolContext
from harvey.tools.search import SearchFilesTool
from harvey.workspace.files import walk_files

DEPTH = 5000
_DIR = os.O_RDONLY | os.O_DIRECTORY


def _build(root: Path, depth: int) -> None:
    fd = os.open(root, _DIR)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            below = os.open("d", _DIR, dir_fd=fd)
            os.close(fd)
            fd = below
        leaf = os.open("bottom.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(leaf, b"needle at the bottom\n")
        os.close(leaf)
    finally:
        os.close(fd)


def _remove(root: Path, depth: int) -> None:
    """Bottom up, one level at a time, holding one descriptor, never a long path."""
    fd = os.open(root, _DIR)
    levels = 0
    try:
        while levels < depth:
            try:
                below = os.open("d", _DIR, dir_fd=fd)
            except FileNotFoundError:
                break
            os.close(fd)
            fd = below
            levels += 1
        try:
            os.unlink("bottom.py", dir_fd=fd)
        except FileNotFoundError:
            pass
        for _ in range(levels):
            above = os.open("..", _DIR, dir_fd=fd)
            os.close(fd)
            fd = above
            os.rmdir("d", dir_fd=fd)
    finally:
        os.close(fd)


@pytest.fixture(scope="module")
def deep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    ws = tmp_path_factory.mktemp("deep")
    (ws / "top.md").write_text("needle at the top\n")
    _build(ws, DEPTH)
    try:
        yield ws
    finally:
        _remove(ws, DEPTH)


def test_search_files_walks_any_depth(deep: Path) -> None:
    out = SearchFilesTool().run(ToolContext(workspace=deep), {"pattern": "needle"})
    assert out.splitlines()[0] == "top.md:1: needle at the top"
    assert not out.startswith("error:")


@pytest.mark.slow
def test_the_workspace_walk_and_ingest_collect_walk_any_depth(deep: Path) -> None:
    found = [p.name for p in walk_files(deep, deep)]
    assert "top.md" in found
    files, _folders = collect(deep, ["."])
    assert any(f.name == "top.md" for f in files)


def test_the_profile_walk_and_the_listing_walk_any_depth(deep: Path) -> None:
    # bottom.py lies past PATH_MAX: a folder that cannot be listed is skipped, not fatal
    assert languages(deep) == [("Markdown", 1)]
    assert "top.md" in facts(deep)
    listing = ListFilesTool().run(ToolContext(workspace=deep), {"depth": 10})
    assert "top.md" in listing and listing.count("d/") == 10
