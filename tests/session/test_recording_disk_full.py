"""A recording that cannot be written (the disk is full) says so once, on one line that
starts like every other warning, in a real ``harvey run`` process (where no test
framework's logging handler stands in for Python's last-resort one)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from harvey.llm.scripted import Reply
from tests.fakes.openai import FakeOpenAI
from tests.harvey_process import harvey_env

#: ``python -m harvey ARGV`` with every write to a recording failing as on a full disk.
DISK_FULL = """
import errno, runpy, sys
from harvey.ownfiles.nofollow import Folder

real_append = Folder.append

def append(self, name, data):
    if name.endswith(".spmd"):
        raise OSError(errno.ENOSPC, "No space left on device")
    real_append(self, name, data)

Folder.append = append
sys.argv = ["harvey", *sys.argv[1:]]
runpy.run_module("harvey", run_name="__main__")
"""


def test_a_full_disk_turns_recording_off_with_one_warning_line(tmp_path: Path) -> None:
    with FakeOpenAI([Reply("The answer.")]) as srv:
        proc = subprocess.run(
            [sys.executable, "-c", DISK_FULL, "run", "hello", "--backend", "openai",
             "--base-url", srv.url],
            cwd=tmp_path, env=harvey_env(), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "The answer.\n"
    said = [line for line in proc.stderr.splitlines() if "session recording is off" in line]
    assert len(said) == 1, proc.stderr
    assert said[0].startswith("warning: session recording is off"), said[0]
    assert "No space left on device" in said[0]
