"""A hostile clone's links in ``.harvey/``: Harvey's own writes never leave their folder.

git stores symbolic links, so a repository can arrive with ``.harvey`` (or
``.harvey/sessions``, ``plans``, ``tool_results``, ``rag``) pointing anywhere:
at a folder a shell sources at start-up, relative (``../outside``), dangling.
Each attack runs the real ``harvey run`` (or ``harvey rag``) in a subprocess
against a loopback model server and then checks that nothing outside the
workspace was created or changed, that the session still answered, and that
the refusal was one warning line naming the link and its target, never a
traceback.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.harvey_process import harvey_spawn, invoke_harvey
from tests.security.conftest import Attack, AttackResult, snapshot

MARK = "MARK-pwned"
PAYLOAD = f"$(touch {MARK}) `touch {MARK}`"
TODO = ("todo_write", {"todos": [{"id": "1", "content": PAYLOAD, "status": "pending"}]})


def warnings(result: AttackResult) -> list[str]:
    return [line for line in result.proc.stderr.splitlines() if line.startswith("warning:")]


def assert_refused_once(result: AttackResult, link: Path, target: str) -> str:
    """The run answered, and exactly one warning names the link and where it points."""
    assert result.proc.returncode == 0, result.proc.stderr
    assert "Traceback" not in result.proc.stderr
    assert "done" in result.proc.stdout
    lines = [line for line in warnings(result) if str(link) in line]
    assert len(lines) == 1, result.proc.stderr
    assert f"is a symbolic link to {target}" in lines[0]
    assert "Harvey writes nothing there" in lines[0]
    return lines[0]


def many_files(ws: Path, count: int = 400) -> None:
    """Enough names that ``list_files`` answers with more than the offload threshold."""
    folder = ws / "data"
    folder.mkdir()
    for i in range(count):
        (folder / f"a-rather-long-file-name-to-fill-the-listing-{i:04}.txt").write_text("x")


@pytest.mark.parametrize("relative", [False, True], ids=["absolute", "relative"])
def test_harvey_folder_itself_a_link(
    attack: Attack, victim_workspace: Path, outside: Path, relative: bool
) -> None:
    (victim_workspace / ".git").mkdir()  # plans go to .harvey/plans in a repository
    many_files(victim_workspace)
    target = "../outside" if relative else str(outside)
    (victim_workspace / ".harvey").symlink_to(target)
    before = snapshot(outside)
    result = attack([TODO, ("list_files", {"path": "data"})])
    line = assert_refused_once(result, victim_workspace / ".harvey", target)
    assert "session recording" in line and "plan file" in line
    assert len(warnings(result)) == 1, result.proc.stderr  # one line for every feature
    result.assert_outside_untouched(before)
    assert "Todo list saved" in result.tool_outputs[0]  # todos work without the plan file
    assert "a-rather-long-file-name" in result.tool_outputs[1]  # passed through, not offloaded


def test_sessions_folder_a_link(attack: Attack, victim_workspace: Path, outside: Path) -> None:
    (victim_workspace / ".harvey").mkdir()
    (victim_workspace / ".harvey" / "sessions").symlink_to(outside)
    before = snapshot(outside)
    result = attack([])
    line = assert_refused_once(result, victim_workspace / ".harvey" / "sessions", str(outside))
    assert "session recording is off" in line
    result.assert_outside_untouched(before)


def test_plans_link_to_a_folder_a_shell_sources(
    attack: Attack, victim_workspace: Path, outside: Path, tmp_path: Path
) -> None:
    # Fedora's ~/.bashrc sources every file in ~/.bashrc.d/: a plan file there would
    # turn the model's text into a command at the next shell start.
    sourced = outside / "bashrc.d"
    sourced.mkdir()
    (victim_workspace / ".git").mkdir()
    (victim_workspace / ".harvey").mkdir()
    (victim_workspace / ".harvey" / "plans").symlink_to(sourced)
    before = snapshot(outside)
    result = attack([TODO])
    line = assert_refused_once(result, victim_workspace / ".harvey" / "plans", str(sourced))
    assert "no plan file" in line
    result.assert_outside_untouched(before)
    # A shell that sources the folder now runs nothing of the model's.
    subprocess.run(
        ["bash", "-c", 'for f in "$1"/*; do [ -f "$f" ] && . "$f"; done', "-", str(sourced)],
        cwd=tmp_path,
        check=False,
    )
    assert not list(tmp_path.rglob(MARK)) and not (victim_workspace / MARK).exists()


def test_offload_folder_a_link(attack: Attack, victim_workspace: Path, outside: Path) -> None:
    many_files(victim_workspace)
    (victim_workspace / ".harvey").mkdir()
    (victim_workspace / ".harvey" / "tool_results").symlink_to(outside)
    before = snapshot(outside)
    result = attack([("list_files", {"path": "data"}), ("list_files", {"path": "data"})])
    line = assert_refused_once(result, victim_workspace / ".harvey" / "tool_results", str(outside))
    assert "not offloaded" in line
    result.assert_outside_untouched(before)
    assert all("a-rather-long-file-name" in out for out in result.tool_outputs)


def test_dangling_link_is_not_created(
    attack: Attack, victim_workspace: Path, outside: Path
) -> None:
    missing = outside / "made-by-harvey"
    (victim_workspace / ".harvey").symlink_to(missing)
    before = snapshot(outside)
    result = attack([])
    assert_refused_once(result, victim_workspace / ".harvey", str(missing))
    assert not missing.exists()
    result.assert_outside_untouched(before)


def test_harvey_folder_of_another_user_is_refused(
    attack: Attack, victim_workspace: Path, outside: Path
) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can give a folder to another user")
    folder = victim_workspace / ".harvey"
    folder.mkdir()
    os.chown(folder, 4242, 4242)
    result = attack([])
    assert result.proc.returncode == 0, result.proc.stderr
    (line,) = warnings(result)
    assert f"{folder} belongs to another user (uid 4242)" in line
    assert list(folder.iterdir()) == []


def test_harvey_folder_writable_by_others_is_refused(
    attack: Attack, victim_workspace: Path
) -> None:
    folder = victim_workspace / ".harvey"
    folder.mkdir()
    folder.chmod(0o777)
    result = attack([])
    assert result.proc.returncode == 0, result.proc.stderr
    (line,) = warnings(result)
    assert f"{folder} is writable by other users (mode 0777" in line
    assert "Harvey writes nothing there" in line
    assert list(folder.iterdir()) == []


def test_harvey_folder_readable_by_others_is_closed_before_use(
    attack: Attack, victim_workspace: Path
) -> None:
    folder = victim_workspace / ".harvey"
    (folder / "sessions").mkdir(parents=True)
    for path in (folder, folder / "sessions"):
        path.chmod(0o755)
    result = attack([])
    assert result.proc.returncode == 0, result.proc.stderr
    assert warnings(result) == []
    assert folder.stat().st_mode & 0o777 == 0o700
    assert (folder / "sessions").stat().st_mode & 0o777 == 0o700
    assert list((folder / "sessions").glob("*.spmd"))


# ------------------------------------------------------------------- knowledge stores


def harvey(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return invoke_harvey(*args, cwd=ws, input="")


def one_error_line(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], proc.stderr


@pytest.mark.slow
def test_rag_folder_a_link(victim_workspace: Path, outside: Path) -> None:
    (victim_workspace / "notes.md").write_text("the meeting is at noon\n")
    (victim_workspace / ".harvey").mkdir()
    link = victim_workspace / ".harvey" / "rag"
    link.symlink_to(outside)
    # a store already there, as if planted: it must not be written, ingested into or dropped
    import sqlite3

    planted = sqlite3.connect(outside / "notes.db")
    planted.execute("CREATE TABLE t (x)")
    planted.close()
    before = snapshot(outside)
    new = harvey(victim_workspace, "rag", "new", "fresh", "--embedder", "none")
    one_error_line(new, str(link), f"is a symbolic link to {outside}")
    ingest = harvey(victim_workspace, "rag", "ingest", "notes", "notes.md")
    one_error_line(ingest)
    drop = harvey(victim_workspace, "rag", "drop", "notes", "--yes")
    one_error_line(drop, "no knowledge store")
    listing = harvey(victim_workspace, "rag", "list")
    assert listing.returncode == 0 and "notes" not in listing.stdout
    assert snapshot(outside) == before


@pytest.mark.slow
def test_rag_store_hard_linked_to_an_outside_file(victim_workspace: Path, outside: Path) -> None:
    (victim_workspace / "notes.md").write_text("the meeting is at noon\n")
    assert harvey(victim_workspace, "rag", "new", "notes", "--embedder", "none").returncode == 0
    store = victim_workspace / ".harvey" / "rag" / "notes.db"
    store.unlink()
    import sqlite3

    db = sqlite3.connect(outside / "victim.db")
    db.execute("CREATE TABLE t (x)")
    db.close()
    os.link(outside / "victim.db", store)
    before = snapshot(outside)
    ingest = harvey(victim_workspace, "rag", "ingest", "notes", "notes.md")
    one_error_line(ingest, "hard links")
    assert snapshot(outside) == before


def test_rag_store_that_is_a_fifo_does_not_hang(victim_workspace: Path) -> None:
    (victim_workspace / ".harvey" / "rag").mkdir(parents=True)
    os.mkfifo(victim_workspace / ".harvey" / "rag" / "notes.db")
    (victim_workspace / "notes.md").write_text("x\n")
    ingest = harvey(victim_workspace, "rag", "ingest", "notes", "notes.md")
    one_error_line(ingest, "not a regular file")


# ------------------------------------------------------------------- session.directory


@pytest.mark.parametrize(
    "directory",
    ["ANYWHERE", "OUTSIDE", "../../x", "../outside", ".harvey/../../outside", "via-link/rec"],
)
def test_session_directory_must_stay_inside(
    attack: Attack, victim_workspace: Path, outside: Path, tmp_path: Path, directory: str
) -> None:
    anywhere = tmp_path / "anywhere"  # `session.directory: /anywhere`, kept inside the test
    directory = directory.replace("OUTSIDE", str(outside)).replace("ANYWHERE", str(anywhere))
    (victim_workspace / "via-link").symlink_to(outside)
    (victim_workspace / "harvey.yaml").write_text(f"session:\n  directory: {directory!r}\n")
    before = snapshot(outside)
    result = attack([])
    assert result.proc.returncode == 2, result.proc.stderr
    assert "Traceback" not in result.proc.stderr
    lines = result.proc.stderr.strip().splitlines()
    assert len(lines) == 1, result.proc.stderr
    assert "session.directory" in lines[0] or "trust" in lines[0], result.proc.stderr
    assert result.requests == []  # refused before any turn
    result.assert_outside_untouched(before)
    assert not anywhere.exists() and not (tmp_path / "x").exists()


@pytest.mark.parametrize("where", ["relative", "absolute-in-workspace", "in-home"])
def test_session_directory_inside_is_used(
    victim_workspace: Path, isolated_env: Path, where: str
) -> None:
    # In process: once workspace trust lands, a workspace harvey.yaml may not set
    # session.directory at all, so the accepted spellings are checked where they resolve.
    from harvey.config.settings import SessionSettings, resolve_paths
    from harvey.session.location import session_location
    from harvey.session.recorder import Recorder

    folder = {
        "relative": victim_workspace / "recordings",
        "absolute-in-workspace": victim_workspace / "deep" / "rec",
        "in-home": isolated_env / "recordings",
    }[where]
    spelled = "recordings" if where == "relative" else str(folder)
    paths = resolve_paths(victim_workspace)
    location = session_location(paths, SessionSettings(directory=spelled))
    assert location.path == folder
    recorder = Recorder.open_in(location, user="u", model="m", backend="b")
    recorder.close()
    assert recorder.enabled and len(list(folder.glob("*.spmd"))) == 1


@pytest.mark.parametrize(
    ("spelled", "why"),
    [
        ("/anywhere", "outside the workspace and HARVEY_HOME"),
        ("../x", "climbs out"),
        ("rec/../../x", "climbs out"),
        ("", "not a folder name"),
    ],
)
def test_session_directory_refusals_name_the_key(
    victim_workspace: Path, spelled: str, why: str
) -> None:
    from harvey.config.settings import SessionSettings, resolve_paths
    from harvey.errors import ConfigError
    from harvey.session.location import session_location

    with pytest.raises(ConfigError, match=r"session\.directory") as err:
        session_location(resolve_paths(victim_workspace), SessionSettings(directory=spelled))
    assert why in str(err.value) and err.value.exit_code == 2


# ------------------------------------------------------------------- the REPL


def test_repl_with_sessions_folder_a_link(victim_workspace: Path, outside: Path) -> None:
    import io

    import pexpect

    from harvey.llm.scripted import Reply
    from tests.fakes.openai import FakeOpenAI

    (victim_workspace / ".harvey").mkdir()
    link = victim_workspace / ".harvey" / "sessions"
    link.symlink_to(outside)
    before = snapshot(outside)
    env = {**os.environ, "TERM": "xterm", "NO_COLOR": "1", "PROMPT_TOOLKIT_NO_CPR": "1"}
    with FakeOpenAI([Reply("hello from the model")]) as srv:
        child = pexpect.spawn(
            *harvey_spawn("--backend", "openai", "--base-url", srv.url),
            cwd=str(victim_workspace),
            env=env,
            encoding="utf-8",
            timeout=30,
            dimensions=(40, 200),
        )
        child.logfile_read = io.StringIO()
        try:
            child.expect("tester>")
            child.send("hi\r")
            child.expect("hello from the model")
            child.expect("tester>")
            child.send("/exit\r")
            child.expect(pexpect.EOF)
        finally:
            if child.isalive():
                child.terminate(force=True)
    screen = child.logfile_read.getvalue()
    unwrapped = screen.replace("\r", "").replace("\n", "")  # a long path wraps on the screen
    assert unwrapped.count(f"is a symbolic link to {outside}") == 1, screen
    assert "session recording is off" in unwrapped and "Traceback" not in screen
    assert snapshot(outside) == before


def test_memory_mine_lists_no_recording_through_a_link(
    victim_workspace: Path, outside: Path, isolated_env: Path
) -> None:
    from harvey.config.settings import Settings, resolve_paths
    from harvey.session.location import recording_files

    (outside / "harvey-session-20260101-000000.spmd").write_text("Title: planted\n")
    (victim_workspace / ".harvey").mkdir()
    paths = resolve_paths(victim_workspace)
    real = victim_workspace / ".harvey" / "sessions"
    real.mkdir()
    (real / "harvey-session-20260102-000000.spmd").write_text("Title: mine\n")
    (real / "harvey-session-20260103-000000.spmd").symlink_to(
        outside / "harvey-session-20260101-000000.spmd"
    )
    assert recording_files(paths, Settings()) == [real / "harvey-session-20260102-000000.spmd"]
    for child in real.iterdir():
        child.unlink()
    real.rmdir()
    real.symlink_to(outside)
    assert recording_files(paths, Settings()) == []


def test_deleting_a_session_never_removes_through_a_link(
    victim_workspace: Path, outside: Path
) -> None:
    from harvey.tools.offload import remove_offload_dir, sanitize_id

    (outside / sanitize_id("s1")).mkdir()
    (outside / sanitize_id("s1") / "keep.txt").write_text("keep")
    (victim_workspace / ".harvey").mkdir()
    (victim_workspace / ".harvey" / "tool_results").symlink_to(outside)
    before = snapshot(outside)
    assert remove_offload_dir(victim_workspace, "s1") is False
    assert snapshot(outside) == before


def test_rendering_a_recording_replaces_a_planted_link(
    attack: Attack, victim_workspace: Path, outside: Path
) -> None:
    result = attack([])
    assert result.proc.returncode == 0, result.proc.stderr
    (spmd,) = (victim_workspace / ".harvey" / "sessions").glob("*.spmd")
    html = spmd.with_suffix(".html")
    html.symlink_to(outside / "secret.txt")  # as if the clone had shipped it
    before = snapshot(outside)
    done = harvey(victim_workspace, "sessions", "render", str(spmd))
    assert done.returncode == 0, done.stderr
    assert snapshot(outside) == before
    assert not html.is_symlink() and "<html" in html.read_text().lower()


@pytest.mark.parametrize("planted", ["cache", "cache/documents", "entry"])
def test_the_document_cache_never_goes_through_a_link(
    tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch, planted: str
) -> None:
    """HARVEY_HOME/cache, its documents folder or one entry planted as a link: the
    extraction neither writes outside nor reads a forged entry from there."""
    import hashlib
    import json

    from harvey.documents import extract
    from tests.documents.makers import docx_bytes

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HARVEY_HOME", str(home))
    data = docx_bytes([("p", "The dam held.")])
    (tmp_path / "a.docx").write_bytes(data)
    forged = {
        "text": "FORGED",
        "kind": "docx",
        "page_starts": [],
        "headings": [],
        "page_count": 0,
        "notes": [],
    }
    (outside / "entry.json").write_text(json.dumps(forged))
    if planted == "entry":
        (home / "cache" / "documents").mkdir(parents=True, mode=0o700)
        (home / "cache").chmod(0o700)
        entry = f"{hashlib.sha256(data).hexdigest()}-docx-v1.json"
        (home / "cache" / "documents" / entry).symlink_to(outside / "entry.json")
    else:
        (home / planted).parent.mkdir(exist_ok=True)
        (home / planted).symlink_to(outside)
    before = snapshot(outside)
    for _ in range(2):
        assert extract(tmp_path / "a.docx").text == "The dam held."
    assert snapshot(outside) == before
