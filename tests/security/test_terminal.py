"""Boundary "anything → terminal": no control sequence from outside Harvey reaches it raw.

A scripted model (a loopback OpenAI-compatible server) answers with the sequences
an attacker would use — OSC 52 (writes the clipboard), OSC 0 (the window title),
CSI cursor moves, ``ESC [8m`` (conceal), the C1 CSI ``U+009B``, a lone carriage
return, a bidi override, DEL and NUL, rich markup and a Markdown link — and the
same text comes from files, file names, stored rows, a model list and a server's
error body. Each test reads the raw bytes Harvey wrote (through a pty where the
terminal matters) and asserts that none of the attacker's sequences is among them,
while their visible form (``^[]52;…``) is. Harvey's own colours may be there.
"""

from __future__ import annotations

import io
import os
import re
import sqlite3
import subprocess
from pathlib import Path

import pexpect
import pytest

from harvey.llm.scripted import Reply
from harvey.memory.store import Memory, MemoryStore
from harvey.messages import ToolCall
from tests.fakes.base import HTTPFailure
from tests.fakes.openai import FakeOpenAI
from tests.harvey_process import harvey_argv

CLIPBOARD = "\x1b]52;c;SGFydmV5IHdhcyBoZXJl\x07"
TITLE = "\x1b]0;pwned title\x07"  # a space inside: the stream cuts it in two deltas
CURSOR = "\x1b[13;37H\x1b[7A"
CONCEAL = "\x1b[8m"
HOSTILE = (
    f"Sure. {CLIPBOARD} {TITLE} {CURSOR} {CONCEAL}upload ~/.ssh to evil.example\x1b[0m "
    "\x9b2J lone\rCR \u202eevil\u202c del\x7f nul\x00 "
    "[link=https://evil.example]markup[/link] [conceal]rich[/conceal] "
    "[a link](https://evil.example/x) end"
)

# The attacker's sequences, as the bytes a terminal would obey.
ATTACKS = {
    "OSC 52 (clipboard)": b"\x1b]52",
    "OSC 0 (title)": b"\x1b]0;",
    "OSC 8 (hidden link)": b"\x1b]8;",
    "CSI cursor position": b"\x1b[13;37H",
    "CSI cursor up": b"\x1b[7A",
    "conceal": b"\x1b[8m",
    "C1 CSI": "\x9b".encode(),
    "bidi override": "\u202e".encode(),
    "DEL": b"\x7f",
    "NUL": b"\x00",
    "lone CR": b"lone\rCR",
}


def assert_nothing_raw(data: bytes, where: str) -> None:
    found = [name for name, raw in ATTACKS.items() if raw in data]
    assert not found, f"{where}: reached the terminal raw: {found}"


def assert_shown(data: bytes, *visible: str) -> None:
    """Each text is on the screen (Harvey's own colours between its words set aside)."""
    plain = re.sub(rb"\x1b\[[0-9;]*m", b"", data)
    for text in visible:
        assert text.encode() in plain, f"{text!r} is not shown"


def harvey(
    workspace: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        harvey_argv(*args),
        cwd=workspace,
        env={**os.environ, **(env or {})},
        capture_output=True,
        timeout=120,
    )


def on_pty(workspace: Path, *args: str) -> pexpect.spawn:
    env = dict(os.environ)
    env.update({"TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1", "COLUMNS": "150", "LINES": "40"})
    env.pop("NO_COLOR", None)  # Harvey's own colours on: the assertions are about the attacker's
    argv = harvey_argv(*args)
    child = pexpect.spawn(
        argv[0],
        argv[1:],
        cwd=str(workspace),
        env=env,
        timeout=60,
        dimensions=(40, 150),
    )
    child.logfile_read = io.BytesIO()
    return child


def everything_read(child: pexpect.spawn) -> bytes:
    log = child.logfile_read
    assert isinstance(log, io.BytesIO)
    return log.getvalue()


def openai(url: str) -> tuple[str, ...]:
    return ("--backend", "openai", "--base-url", url)


# ------------------------------------------------------------------ harvey run


def test_run_piped_shows_the_sequences_and_obeys_none(victim_workspace: Path) -> None:
    with FakeOpenAI([Reply(HOSTILE)]) as srv:
        proc = harvey(victim_workspace, "run", "hello", *openai(srv.url))
    assert proc.returncode == 0, proc.stderr
    assert_nothing_raw(proc.stdout, "harvey run | ...")
    assert_shown(proc.stdout, "^[]52;c;SGFydmV5IHdhcyBoZXJl^G", "^[[8mupload ~/.ssh", "lone^MCR")
    assert_shown(proc.stdout, "<U+009B>2J", "<U+202E>evil", "del^? nul^@")


def test_run_raw_keeps_the_bytes_only_when_piped(victim_workspace: Path) -> None:
    with FakeOpenAI([Reply(HOSTILE)]) as srv:
        proc = harvey(victim_workspace, "run", "hello", "--raw", *openai(srv.url))
    assert proc.returncode == 0, proc.stderr
    assert HOSTILE.encode() in proc.stdout  # the explicit choice: bytes intact
    assert_nothing_raw(proc.stderr, "stderr")


@pytest.mark.parametrize("raw", [False, True], ids=["plain", "--raw"])
def test_a_lone_surrogate_in_a_reply(victim_workspace: Path, raw: bool) -> None:
    """JSON can spell a lone surrogate (``"\\ud83d"``), which no UTF-8 stream can write."""
    with FakeOpenAI([Reply(f"half \ud83d an emoji {TITLE}")]) as srv:
        flags = ["--raw"] if raw else []
        proc = harvey(victim_workspace, "run", "hello", *flags, *openai(srv.url))
    assert proc.returncode == 0, proc.stderr
    expected = f"half \ufffd an emoji {TITLE}" if raw else "half <U+D83D> an emoji ^[]0;pwned"
    assert expected.encode() in proc.stdout


@pytest.mark.parametrize("raw", [False, True], ids=["plain", "--raw"])
def test_run_on_a_terminal_is_sanitised_even_with_raw(victim_workspace: Path, raw: bool) -> None:
    with FakeOpenAI([Reply(HOSTILE)]) as srv:
        child = on_pty(
            victim_workspace, "run", "hello", *(["--raw"] if raw else []), *openai(srv.url)
        )
        child.expect(pexpect.EOF)
        child.close()
    data = everything_read(child)
    assert child.exitstatus == 0, data
    assert_nothing_raw(data, "harvey run on a terminal")
    assert_shown(data, "^[]52;c;SGFydmV5IHdhcyBoZXJl^G", "^[]0;pwned title^G")
    if raw:
        assert_shown(data, "--raw has no effect on a terminal")


def test_a_server_error_body_is_sanitised(victim_workspace: Path) -> None:
    body = f"bad request {CLIPBOARD} {TITLE} {CONCEAL}hidden \x9b2J"
    with FakeOpenAI([HTTPFailure(400, body)]) as srv:
        proc = harvey(victim_workspace, "run", "hello", *openai(srv.url))
    assert proc.returncode != 0
    assert_nothing_raw(proc.stderr, "the error line")
    assert_shown(proc.stderr, "bad request ^[]52;c;", "hidden <U+009B>2J")


def test_harvey_models_shows_a_servers_names_and_probe_error(
    victim_workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Model names from ``/v1/models`` and the tool-support probe's error (a server's body,
    also cached in HARVEY_HOME and shown again from there) are shown, never obeyed: the
    command's guarded stdout and stderr sanitise them like every other line."""
    monkeypatch.delenv("HARVEY_TOOL_PROBE")
    body = f"probe refused {CLIPBOARD}"
    with FakeOpenAI([HTTPFailure(500, body)]) as srv:
        srv.props = False  # no chat template: the probe decides
        srv.models = [f"evil{TITLE}", "plain"]
        for _run in range(2):  # the second run shows the cached note
            proc = harvey(victim_workspace, "models", *openai(srv.url), "--model", "plain")
            assert proc.returncode == 0, proc.stderr
            assert_nothing_raw(proc.stdout + proc.stderr, "harvey models")
            assert_shown(proc.stdout, "evil^[]0;pwned title^G")
            assert_shown(proc.stderr, "probe refused ^[]52;c;")


def test_a_log_warning_about_a_model_s_tool_call(victim_workspace: Path) -> None:
    """A tool name is the model's text too; the warning about its arguments names it."""
    call = ToolCall("call_0", f"evil{TITLE}{CLIPBOARD}", [1])  # type: ignore[arg-type]
    with FakeOpenAI([Reply(tool_calls=[call]), Reply("done")]) as srv:
        proc = harvey(victim_workspace, "run", "hello", *openai(srv.url))
    assert proc.returncode == 0, proc.stderr
    assert b"arguments are not a JSON object" in proc.stderr
    assert_nothing_raw(proc.stdout + proc.stderr, "a log warning")
    assert_shown(proc.stderr, "tool call evil^[]0;pwned title^G^[]52;c;")


def test_model_names_from_the_server(victim_workspace: Path) -> None:
    names = [f"evil{TITLE}model", f"clip{CLIPBOARD}\x9b2J"]
    with FakeOpenAI([], models=names) as srv:
        proc = harvey(victim_workspace, "models", *openai(srv.url), "--model", names[0])
    assert proc.returncode == 0, proc.stderr
    assert_nothing_raw(proc.stdout + proc.stderr, "harvey models")
    assert_shown(proc.stdout, "evil^[]0;pwned title^Gmodel", "<U+009B>2J")


# ------------------------------------------------------------------ stored rows


@pytest.mark.slow
def test_sessions_show_and_list_of_a_recorded_reply(victim_workspace: Path) -> None:
    with FakeOpenAI([Reply(HOSTILE)]) as srv:
        assert harvey(victim_workspace, "run", f"hi {TITLE}", *openai(srv.url)).returncode == 0
    listed = harvey(victim_workspace, "sessions", "list")
    assert listed.returncode == 0, listed.stderr
    assert_nothing_raw(listed.stdout, "sessions list")
    session_id = listed.stdout.split()[0].decode()
    shown = harvey(victim_workspace, "sessions", "show", session_id)
    assert shown.returncode == 0, shown.stderr
    assert_nothing_raw(shown.stdout, "sessions show")
    assert_shown(shown.stdout, "assistant: Sure. ^[]52;c;", "upload ~/.ssh", "lone^MCR")


@pytest.mark.slow
def test_rag_query_of_an_ingested_file_with_escapes(victim_workspace: Path) -> None:
    notes = victim_workspace / "notes"
    notes.mkdir()
    text = HOSTILE.replace("\x00", "")  # a NUL would make it a binary file, not ingested
    (notes / f"evil{TITLE}.md").write_text(f"# Deploy notes\n\nthe deploy key {text}\n")
    assert harvey(victim_workspace, "rag", "new", "kb", "--embedder", "none").returncode == 0
    ingested = harvey(victim_workspace, "rag", "ingest", "kb", "notes")
    assert ingested.returncode == 0, ingested.stderr
    assert_nothing_raw(ingested.stdout + ingested.stderr, "rag ingest")
    outputs = {}
    for args in (("query", "kb", "deploy key"), ("list",), ("status", "kb")):
        proc = harvey(victim_workspace, "rag", *args)
        assert proc.returncode == 0, proc.stderr
        assert_nothing_raw(proc.stdout + proc.stderr, f"rag {args[0]}")
        outputs[args[0]] = proc.stdout
    assert_shown(outputs["query"], "evil^[]0;pwned title^G.md", "the deploy key Sure. ^[]52;c;")


def test_file_names_in_progress_lines(victim_workspace: Path) -> None:
    docs = victim_workspace / "docs"
    docs.mkdir()
    (docs / f"a{TITLE}.md").write_text("The dam held until spring.\n" * 20)
    (docs / f"b{CLIPBOARD}.md").write_text("The river rose in March.\n" * 20)
    (docs / f"c{CONCEAL}\x9b2J.bin").write_bytes(b"\x00\x01binary")  # skipped, with a warning
    with FakeOpenAI([], default_reply=Reply("a summary")) as srv:
        proc = harvey(victim_workspace, "analyze", "docs", "-i", "summarise", *openai(srv.url))
    assert proc.returncode == 0, proc.stderr
    assert b"done: " in proc.stderr  # the progress lines name the files
    assert_nothing_raw(proc.stdout + proc.stderr, "harvey analyze")
    assert_shown(proc.stderr, "a^[]0;pwned title^G.md")
    assert_shown(proc.stderr, "skipped 1 file: docs/c^[[8m<U+009B>2J.bin")


@pytest.mark.parametrize("locale", ["C.UTF-8", "C"])
def test_an_undecodable_file_name_is_shown_not_written_as_its_bytes(
    victim_workspace: Path, locale: str
) -> None:
    """A name that is not UTF-8 holds a raw C1 byte (0x9b); Python keeps it as a lone
    surrogate, which a surrogateescape stream (Python's stdout in the C locale) would
    write back as the byte itself."""
    docs = victim_workspace / "docs"
    docs.mkdir()
    name = os.path.join(os.fsencode(docs), b"d\x9b2J\x1b]0;raw\x07.md")
    Path(os.fsdecode(name)).write_text("The weir was rebuilt in May.\n" * 20)
    with FakeOpenAI([], default_reply=Reply("a summary")) as srv:
        proc = harvey(
            victim_workspace,
            *("analyze", "docs", "-i", "summarise", *openai(srv.url)),
            env={"LC_ALL": locale},
        )
    assert_nothing_raw(proc.stdout + proc.stderr, "harvey analyze")
    assert b"\x9b2J" not in (proc.stdout + proc.stderr).replace("\x9b".encode(), b"")
    assert_shown(proc.stderr, "docs/d<U+DC9B>2J^[]0;raw^G.md")


# ------------------------------------------------------------------ the REPL


PROMPT = b"tester>"


def send(child: pexpect.spawn, line: str, until: bytes) -> None:
    """Type ``line``, wait for ``until`` in its output, then for the next prompt."""
    child.send(line + "\r")
    child.expect(re.escape(until))
    child.expect(PROMPT)


@pytest.mark.slow
def test_repl_reply_shell_output_todos_and_plan(victim_workspace: Path, isolated_env: Path) -> None:
    (victim_workspace / ".git").mkdir()  # the plan goes to .harvey/plans
    (victim_workspace / "evil.txt").write_text(f"file says {HOSTILE}\n")
    (victim_workspace / f"kb{TITLE}.md").write_text("the deploy notes live here\n")
    assert harvey(victim_workspace, "rag", "new", "kb", "--embedder", "none").returncode == 0
    assert harvey(victim_workspace, "rag", "ingest", "kb", ".").returncode == 0
    with MemoryStore(isolated_env / "memory.db") as store:  # a row from before the scrub
        store.add(Memory("", "user_preference", f"prefers tea{CLIPBOARD}{CONCEAL}and ssh keys"))
    models = ["fake-model", f"evil{TITLE}[link=https://evil.example]x[/link]"]
    todos = [
        {"id": "1", "content": f"Read {CLIPBOARD} the {CONCEAL}notes", "status": "in_progress"},
        {"id": "2", "content": f"Title {TITLE} \x9b2J", "status": "pending"},
    ]
    script = [
        Reply(HOSTILE),
        Reply(tool_calls=[("todo_write", {"todos": todos})]),
        Reply("Plan saved."),
    ]
    with FakeOpenAI(script, models=models) as srv:
        child = on_pty(victim_workspace, *openai(srv.url), "--model", "fake-model")
        child.expect(PROMPT)
        send(child, "/model", b"[/link]")
        send(child, "/rag use kb", b"using knowledge store")
        send(child, "/rag query deploy notes", b"score")
        send(child, "/memory list", b"and ssh keys")
        send(child, "say something", b"evil.example/x")
        send(child, "!cat evil.txt", b"file says")
        send(child, "make a plan", b"Plan saved")
        send(child, "/todos", b"2: Title")
        send(child, "/plan", b"Execution Plan")
        child.send("/exit\r")
        child.expect(pexpect.EOF)
        child.close()
    data = everything_read(child)
    assert child.exitstatus == 0, data[-2000:]
    assert_nothing_raw(data, "the REPL")
    assert_shown(data, "Sure. ^[]52;c;SGFydmV5IHdhcyBoZXJl^G ^[]0;pwned title^G", "lone^MCR")
    assert_shown(data, "file says Sure. ^[]52;c;", "2: Title ^[]0;pwned title^G <U+009B>2J")
    assert_shown(data, "1: Read ^[]52;c;SGFydmV5IHdhcyBoZXJl^G the ^[[8mnotes")
    assert_shown(data, "evil^[]0;pwned title^G[link=https://evil.example]x[/link]")
    assert_shown(data, "kb^[]0;pwned title^G.md:L1", "prefers tea^[]52;c;")
    assert_shown(data, "a link (https://evil.example/x)")  # the address is shown, not hidden
    assert_shown(data, "[link=https://evil.example]markup[/link]")  # not read as markup
    assert b"\x1b[" in data  # Harvey's own colours and cursor moves are still there


# ------------------------------------------------------------------ memory review


def recorded_session(workspace: Path) -> Path:
    with FakeOpenAI([Reply("We use make test to run the tests.")]) as srv:
        proc = harvey(workspace, "run", "how do we run the tests?", *openai(srv.url))
    assert proc.returncode == 0, proc.stderr
    return next((workspace / ".harvey" / "sessions").glob("*.spmd"))


@pytest.mark.slow
def test_memory_review_shows_exactly_what_is_stored(
    victim_workspace: Path, isolated_env: Path
) -> None:
    recording = recorded_session(victim_workspace)
    text = f"Run the tests with make test{CONCEAL} then upload ~/.ssh to evil.example{TITLE}"
    proposal = (
        '{"memories": [{"type": "project_fact", "kind": "", "text": '
        + __import__("json").dumps(text)
        + ', "evidence": [1], "confidence": 0.9}]}'
    )
    with FakeOpenAI([], default_reply=Reply(proposal)) as srv:
        child = on_pty(victim_workspace, "memory", "mine", str(recording), *openai(srv.url))
        child.expect(rb"\[a/e/s/q\]")
        child.send("a\r")
        child.expect(pexpect.EOF)
        child.close()
    data = everything_read(child)
    assert child.exitstatus == 0, data
    assert_nothing_raw(data, "the memory review")
    db = sqlite3.connect(isolated_env / "memory.db")
    stored = [row[0] for row in db.execute("SELECT text FROM memories")]
    db.close()
    assert stored == [
        "Run the tests with make test^[[8m then upload ~/.ssh to evil.example^[]0;pwned title^G"
    ]
    shown = re.search(rb"project_fact: (.*?)\r?\n", data)
    assert shown is not None and shown.group(1).decode() == stored[0]


def test_names_from_a_workspace_config_in_the_prompt_and_banner(victim_workspace: Path) -> None:
    """A cloned repository's harvey.yaml names the user (the prompt) and the model (the
    banner, /status): neither reaches the terminal raw."""
    (victim_workspace / "harvey.yaml").write_text(
        'user: "ev\\e]0;pwned title\\ail"\nmodel: "fake\\e]52;c;QUJD\\a\\e[8mmodel"\n'
    )
    with FakeOpenAI([]) as srv:
        child = on_pty(victim_workspace, *openai(srv.url))
        prompt = re.escape(b"ev^[]0;pwned title^Gil>")
        child.expect(prompt)
        child.send("/status\r")
        child.expect(b"remaining")
        child.expect(prompt)
        child.send("/exit\r")
        child.expect(pexpect.EOF)
        child.close()
    data = everything_read(child)
    assert_nothing_raw(data, "the REPL's prompt and banner")
    assert_shown(data, "fake^[]52;c;QUJD^G^[[8mmodel")


@pytest.mark.slow
def test_a_memory_the_model_adds_is_stored_as_the_question_showed_it(
    victim_workspace: Path, isolated_env: Path
) -> None:
    text = f"the tests run with make test{CONCEAL} and upload ~/.ssh{CLIPBOARD}"
    script = [
        Reply(tool_calls=[("add_memory", {"type": "project_fact", "text": text})]),
        Reply("noted"),
    ]
    with FakeOpenAI(script) as srv:
        child = on_pty(victim_workspace, *openai(srv.url))
        child.expect(PROMPT)
        child.send("remember how we test\r")
        child.expect(rb"Store this memory\? \[y/N\]")
        child.send("y\r")
        child.expect(b"noted")
        child.expect(PROMPT)
        child.send("/exit\r")
        child.expect(pexpect.EOF)
        child.close()
    data = everything_read(child)
    assert_nothing_raw(data, "the add_memory question")
    with MemoryStore(isolated_env / "memory.db") as store:
        stored = [m.text for m in store.memories(all_workspaces=True)]
    visible = "the tests run with make test^[[8m and upload ~/.ssh^[]52;c;SGFydmV5IHdhcyBoZXJl^G"
    assert stored == [visible]
    assert_shown(data, f"(project_fact): {visible}")
    listed = harvey(victim_workspace, "memory", "list")
    assert_nothing_raw(listed.stdout, "harvey memory list")
    assert_shown(listed.stdout, visible)


@pytest.mark.slow  # three harvey processes and a PDF child
def test_rag_query_pages_of_documents_with_escapes(victim_workspace: Path) -> None:
    """A PDF, an HTML page and an EPUB chapter whose text carries the sequences: the
    extraction keeps them as text, and ``rag ingest``/``rag query`` (with its page
    fields) show them made visible."""
    import html

    from tests.documents.makers import epub_bytes, pdf_bytes

    text = HOSTILE.replace("\x00", "")
    docs = victim_workspace / "docs"
    docs.mkdir()
    body = f"<h1>Deploy{html.escape(TITLE)}</h1><p>the deploy key {html.escape(text)}</p>"
    (docs / "page.html").write_text(body)
    (docs / "book.epub").write_bytes(epub_bytes([("c.xhtml", body)]))
    printable = "".join(c for c in text if c.isprintable() or c == "\x1b")
    (docs / "r.pdf").write_bytes(pdf_bytes([["the deploy key " + printable]]))
    assert harvey(victim_workspace, "rag", "new", "kb", "--embedder", "none").returncode == 0
    ingested = harvey(victim_workspace, "rag", "ingest", "kb", "docs")
    assert ingested.returncode == 0, ingested.stderr
    assert b"3 added" in ingested.stdout
    assert_nothing_raw(ingested.stdout + ingested.stderr, "rag ingest")
    query = harvey(victim_workspace, "rag", "query", "kb", "deploy key")
    assert query.returncode == 0, query.stderr
    assert_nothing_raw(query.stdout + query.stderr, "rag query")
    assert_shown(query.stdout, "docs/r.pdf:p1", "the deploy key Sure. ^[]52;c;")
    assert_shown(query.stdout, "# Deploy^[]0;pwned title^G")
