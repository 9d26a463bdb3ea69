"""own_files: Harvey's own writes are made and opened without following a link.

The invariant, checked by hypothesis over random trees of folders, files and
links (absolute, relative, dangling, to folders outside): whatever the walk
meets, nothing outside the root is created or changed, and every refusal is an
``UnsafePath`` naming the part that was refused.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harvey.ownfiles import nofollow as own_files
from harvey.ownfiles.atomic import atomic_write
from harvey.ownfiles.nofollow import Location, UnsafePath


def tree(folder: Path) -> dict[str, tuple[str, bytes | str]]:
    """Everything under ``folder``: kind and content (a link's target, a file's bytes)."""
    out: dict[str, tuple[str, bytes | str]] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            key = str(path.relative_to(folder))
            if path.is_symlink():
                out[key] = ("link", os.readlink(path))
            elif path.is_dir():
                out[key] = ("dir", stat.S_IMODE(path.stat().st_mode).to_bytes(2, "big"))
            else:
                out[key] = ("file", path.read_bytes())
    return out


def test_folders_are_made_0700_and_files_0600(tmp_path: Path) -> None:
    with Location(tmp_path, (".harvey", "plans")).open() as folder:
        assert folder.create_new("a.md")
        assert not folder.create_new("a.md")
        folder.append("a.md", b"x")
        folder.replace("b.md", b"y", mode=0o600)
    for path in (tmp_path / ".harvey", tmp_path / ".harvey" / "plans"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
    for name in ("a.md", "b.md"):
        assert stat.S_IMODE((tmp_path / ".harvey" / "plans" / name).stat().st_mode) == 0o600
    assert (tmp_path / ".harvey" / "plans" / "a.md").read_bytes() == b"x"


@pytest.mark.parametrize("part", [".harvey", "sessions"])
def test_a_link_on_the_way_is_refused_and_named(tmp_path: Path, part: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    ws = tmp_path / "ws"
    (ws / ".harvey").mkdir(parents=True)
    link = ws / ".harvey" if part == ".harvey" else ws / ".harvey" / "sessions"
    if part == ".harvey":
        (ws / ".harvey").rmdir()
    link.symlink_to(outside)
    with pytest.raises(UnsafePath) as err:
        Location(ws, (".harvey", "sessions")).open()
    assert err.value.path == link
    assert str(err.value) == f"{link} is a symbolic link to {outside}"
    assert list(outside.iterdir()) == []


def test_a_file_link_is_refused_for_append_read_and_database(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(b"keep")
    folder_path = tmp_path / "ws" / ".harvey"
    folder_path.mkdir(parents=True)
    (folder_path / "f").symlink_to(secret)
    (folder_path / "s.db-wal").symlink_to(secret)
    with Location(tmp_path / "ws", (".harvey",)).open() as folder:
        for action in (
            lambda: folder.append("f", b"x"),
            lambda: folder.read_bytes("f"),
            lambda: folder.database("s.db"),
        ):
            with pytest.raises(UnsafePath, match="symbolic link"):
                action()
        folder.replace("f", b"new")  # replaces the link itself, not its target
    assert secret.read_bytes() == b"keep"
    assert (folder_path / "f").read_bytes() == b"new" and not (folder_path / "f").is_symlink()


def test_a_link_swapped_in_after_mkdir_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race, made deterministic: right after ``mkdir`` makes ``.harvey``, it is
    replaced by a link; the open that follows must meet the link, not the target."""
    outside = tmp_path / "outside"
    outside.mkdir()
    real_mkdir = os.mkdir

    def mkdir_then_swap(name: str, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        real_mkdir(name, mode, dir_fd=dir_fd)
        os.rmdir(name, dir_fd=dir_fd)
        os.symlink(str(outside), name, dir_fd=dir_fd)

    monkeypatch.setattr(own_files.os, "mkdir", mkdir_then_swap)
    with pytest.raises(UnsafePath, match="symbolic link"):
        Location(tmp_path, (".harvey", "sessions")).open()
    assert list(outside.iterdir()) == []


def test_a_file_swapped_for_a_link_before_append_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("untouched")
    with Location(tmp_path, ("rec",)).open() as folder:
        assert folder.create_new("s.spmd")
        os.unlink(tmp_path / "rec" / "s.spmd")
        os.symlink(outside, tmp_path / "rec" / "s.spmd")
        with pytest.raises(UnsafePath):
            folder.append("s.spmd", b"scene")
    assert outside.read_text() == "untouched"


def test_a_folder_of_another_user_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can give a folder to another user")
    (tmp_path / ".harvey").mkdir()
    os.chown(tmp_path / ".harvey", 4242, 4242)
    with pytest.raises(UnsafePath, match="belongs to another user"):
        Location(tmp_path, (".harvey",)).open()


def test_hard_linked_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "outside").write_bytes(b"x")
    (tmp_path / "home").mkdir()
    os.link(tmp_path / "outside", tmp_path / "home" / "sessions.db")
    with pytest.raises(UnsafePath, match="hard links"):
        own_files.home_database(tmp_path / "home" / "sessions.db")


@pytest.mark.parametrize("bad", ["..", ".", "", "a/b", "x\x00"])
def test_names_that_are_not_plain_are_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(UnsafePath), Location(tmp_path).open() as folder:
        folder.child(bad)


def test_atomic_write_under_a_root_makes_folders_without_following(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "outside").mkdir()
    (ws / "docs").symlink_to(tmp_path / "outside")
    with pytest.raises(UnsafePath):
        atomic_write(ws / "docs" / "new" / "x.txt", b"data", root=ws)
    atomic_write(ws / "a" / "b" / "x.txt", b"data", root=ws)
    assert (ws / "a" / "b" / "x.txt").read_bytes() == b"data"
    assert list((tmp_path / "outside").iterdir()) == []


def test_refusals_report_a_folder_once(tmp_path: Path) -> None:
    lines: list[str] = []
    refusals = own_files.Refusals(lines.append)
    exc = UnsafePath(tmp_path / ".harvey", "is a symbolic link to /x")
    refusals.note(exc, "so A is off")
    refusals.note(exc, "so B is off")
    refusals.note(UnsafePath(tmp_path / ".harvey" / "plans", "is odd"), "so C is off")
    assert lines == [
        f"{tmp_path}/.harvey is a symbolic link to /x: Harvey writes nothing there, so A is off"
    ]


# ------------------------------------------------------------------- the property


def act(location: Location, name: str, action: str) -> None:
    """One of Harvey's own writes: a recording's append, a plan's replace, a store's create."""
    with location.open(create=True) as folder:
        if action == "append":
            folder.create_new(name)
            folder.append(name, b"scene")
        elif action == "replace":
            folder.replace(name, b"plan")
        elif action == "database":
            folder.database(name)
        else:
            folder.create_new(name)


NAMES = st.sampled_from([".harvey", "sessions", "plans", "rag", "a"])
NODE = st.one_of(
    st.just(("dir", "")),
    st.just(("file", "")),
    st.tuples(st.just("link"), st.sampled_from(["OUT", "OUT/sub", "OUT/missing", "../..", "."])),
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    layout=st.lists(st.tuples(st.lists(NAMES, min_size=1, max_size=3), NODE), max_size=8),
    target=st.lists(NAMES, min_size=1, max_size=3),
    action=st.sampled_from(["append", "replace", "database", "create", "write_file"]),
)
@pytest.mark.slow
def test_nothing_outside_the_root_is_ever_created_or_changed(
    tmp_path_factory: pytest.TempPathFactory,
    layout: list[tuple[list[str], tuple[str, str]]],
    target: list[str],
    action: str,
) -> None:
    base = tmp_path_factory.mktemp("world")
    root, outside = base / "root", base / "out"
    root.mkdir()
    (outside / "sub").mkdir(parents=True)
    (outside / "file").write_bytes(b"outside")
    for parts, (kind, dest) in layout:
        path = root.joinpath(*parts)
        if path.exists() or path.is_symlink():
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            continue  # a file or link where a folder would be: this layout skips it
        if not path.parent.resolve().is_relative_to(root.resolve()):
            continue  # only lay out inside: a parent may be a link out already
        if kind == "dir":
            path.mkdir()
        elif kind == "file":
            path.write_bytes(b"inside")
        else:
            path.symlink_to(dest.replace("OUT", str(outside)))
    before_outside = tree(outside)
    before_around = sorted(base.parent.iterdir())  # a "../.." link leads up here
    try:
        if action == "write_file":  # the model's approved write: the same walk, not private
            atomic_write(root.joinpath(*target), b"model text", root=root)
        else:
            act(Location(root, tuple(target[:-1])), target[-1], action)
    except UnsafePath as exc:
        assert exc.path == root.joinpath(*target[: len(exc.path.relative_to(root).parts)])
    except (FileExistsError, IsADirectoryError, NotADirectoryError):
        pass  # a folder where a file was wanted, and the like: refused by the OS
    assert tree(outside) == before_outside
    assert sorted(base.iterdir()) == sorted([root, outside])
    assert sorted(base.parent.iterdir()) == before_around


def test_a_folder_others_may_write_is_refused_one_they_may_read_is_closed(tmp_path: Path) -> None:
    (tmp_path / "open").mkdir()
    (tmp_path / "open").chmod(0o775)
    with pytest.raises(UnsafePath, match=r"writable by other users \(mode 0775"):
        Location(tmp_path, ("open",)).open()
    (tmp_path / "read").mkdir()
    (tmp_path / "read").chmod(0o755)
    Location(tmp_path, ("read",)).open().close()
    assert stat.S_IMODE((tmp_path / "read").stat().st_mode) == 0o700


def test_a_link_target_with_escape_sequences_is_shown_not_obeyed(tmp_path: Path) -> None:
    (tmp_path / ".harvey").symlink_to("\x1b]52;c;cHduZWQ=\x07\nwarning: all is well")
    with pytest.raises(UnsafePath) as err:
        Location(tmp_path, (".harvey",)).open()
    message = str(err.value)
    assert "\x1b" not in message and "\x07" not in message and "\n" not in message
    assert "^[" in message
