"""A failed ingest on a full disk does not grow the WAL on each retry (issue 19, 8e).

A real full disk: a small tmpfs mounted for the test (root only; skipped
otherwise). ``RLIMIT_FSIZE`` cannot stand in for it: a per-file limit has no
free space that the WAL and the database share, and so it shows no growth
before the fix either. The store is made and filled, the disk is filled up, and the same
ingest is retried with a little space freed before each try, as a person
making room would. Before the fix each failed retry wrote its frames further
into the freed space (the WAL was never checkpointed or truncated) while
storing nothing: the WAL grew by what was freed, every time.
"""

from __future__ import annotations

import itertools
import os
import random
import string
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from harvey.errors import KnowledgeError
from harvey.knowledge.ingest import Ingester
from harvey.knowledge.store import create_store, open_store


@pytest.fixture()
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=6m,mode=0700", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace')}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def text_file(path: Path, seed: int) -> None:
    rng = random.Random(seed)
    lines = ("".join(rng.choices(string.ascii_lowercase + " ", k=80)) for _ in range(300))
    path.write_text("\n".join(lines) + "\n")


def free_kb(folder: Path) -> int:
    st = os.statvfs(folder)
    return st.f_bavail * st.f_frsize // 1024


def wal_size(ws: Path) -> int:
    wal = ws / ".harvey" / "rag" / "notes.db-wal"
    return wal.stat().st_size if wal.exists() else 0


def stored_files(ws: Path) -> int:
    """Counted read-only, outside Harvey: the measurement must not checkpoint anything."""
    import sqlite3

    db = sqlite3.connect(f"file:{ws / '.harvey' / 'rag' / 'notes.db'}?mode=ro", uri=True)
    try:
        return int(db.execute("SELECT count(*) FROM files").fetchone()[0])
    finally:
        db.close()


def test_failed_retries_do_not_grow_the_wal(small_disk: Path) -> None:
    ws = small_disk / "ws"
    (ws / "docs").mkdir(parents=True)
    (ws / "more").mkdir()
    for i in range(5):
        text_file(ws / "docs" / f"f{i}.txt", i)
    for i in range(20):
        text_file(ws / "more" / f"g{i}.txt", 100 + i)
    with create_store(ws, "notes", "none", 0) as store:
        Ingester(store, ws, None).ingest(["docs"])
    filler = small_disk / "filler"
    with filler.open("wb") as fh:  # leave 600 KB: not enough for "more"
        fh.write(b"\0" * ((free_kb(small_disk) - 600) * 1024))

    history: list[tuple[int, int]] = []  # (files stored, WAL bytes) after each failed retry
    for _ in range(6):
        size = filler.stat().st_size
        os.truncate(filler, max(size - 100 * 1024, 0))  # make a little room, then retry
        with pytest.raises(KnowledgeError, match="full"), open_store(ws, "notes") as store:
            Ingester(store, ws, None).ingest(["more"])
        history.append((stored_files(ws), wal_size(ws)))

    for (files_before, wal_before), (files_after, wal_after) in itertools.pairwise(history):
        if files_after == files_before:  # a retry that stored nothing new...
            assert wal_after <= wal_before, history  # ...took no more room in the WAL
    # and the store is still whole: freeing the disk lets the same ingest finish
    filler.unlink()
    with open_store(ws, "notes") as store:
        report = Ingester(store, ws, None).ingest(["more"])
        store.integrity()
    assert stored_files(ws) == 25 and report.added + report.unchanged == 20
