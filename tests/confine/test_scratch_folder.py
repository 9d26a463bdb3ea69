"""A command's scratch folder goes away whatever the command left in it."""

from __future__ import annotations

import os
from pathlib import Path

from harvey.confine.sandbox_env import scratch_folder


def _nest(folder: Path, depth: int) -> None:
    """``depth`` folders one inside the other (deeper than PATH_MAX and the recursion limit)."""
    fd = os.open(folder, os.O_RDONLY)
    for level in range(depth):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
        if level % 700 == 0:
            os.close(os.open("f", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
    os.close(fd)


def test_a_tree_thousands_deep_is_removed_without_recursion(tmp_path: Path) -> None:
    with scratch_folder() as folder:
        _nest(folder, 3_000)
        left = folder
    assert not left.exists()


def test_unreadable_parts_are_removed_and_links_are_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "keep"
    target.mkdir()
    (target / "precious.txt").write_text("stays\n")
    with scratch_folder() as folder:
        (folder / "locked" / "inner").mkdir(parents=True)
        (folder / "locked" / "inner" / "x").write_text("x")
        os.chmod(folder / "locked" / "inner", 0)
        os.chmod(folder / "locked", 0)
        (folder / "out").symlink_to(target)
        left = folder
    assert not left.exists()
    assert (target / "precious.txt").read_text() == "stays\n"
