"""atomic_write: the whole new file or the old one, with the mode each caller needs."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from harvey.ownfiles.atomic import atomic_write


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_new_file_gets_the_umask_default(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        atomic_write(tmp_path / "new.txt", b"hello")
    finally:
        os.umask(old)
    assert (tmp_path / "new.txt").read_bytes() == b"hello"
    assert _mode(tmp_path / "new.txt") == 0o644


def test_existing_file_keeps_its_mode(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("old")
    script.chmod(0o750)
    atomic_write(script, b"#!/bin/sh\n")
    assert script.read_bytes() == b"#!/bin/sh\n"
    assert _mode(script) == 0o750


def test_an_explicit_mode_wins_over_umask_and_old_file(tmp_path: Path) -> None:
    target = tmp_path / "private.txt"
    target.write_text("old")
    target.chmod(0o644)
    old = os.umask(0)
    try:
        atomic_write(target, b"secret", mode=0o600)
    finally:
        os.umask(old)
    assert _mode(target) == 0o600
    atomic_write(tmp_path / "fresh.txt", b"x", mode=0o600)
    assert _mode(tmp_path / "fresh.txt") == 0o600


def test_a_failed_rename_leaves_the_target_and_no_temporary(tmp_path: Path) -> None:
    (tmp_path / "folder").mkdir()
    with pytest.raises(OSError):
        atomic_write(tmp_path / "folder", b"data")  # a folder cannot be replaced by a file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder"]
    assert list((tmp_path / "folder").iterdir()) == []


def test_a_symlink_target_is_replaced_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("untouched")
    link = tmp_path / "link"
    link.symlink_to(outside)
    atomic_write(link, b"new")
    assert outside.read_text() == "untouched"
    assert not link.is_symlink()
    assert link.read_bytes() == b"new"
