"""Boundary "anything → model context": no secret value, whole or in pieces, reaches a model,
a store or a recording.

Redaction hides a value it knows, whole; a model that pages through ``.env`` six bytes
at a time defeats it. So each attack here plays the "split it in pieces" variant through
the real ``harvey run`` / ``harvey analyze`` / ``harvey rag``, and ``assert_no_pieces``
checks that not even a 6-character slice of the key reached the server, sessions.db,
a recording, a knowledge store or the screen. Secret files are reached directly, by
case and Unicode variants of their names, through a symbolic link, through a link to
their folder, and through hard links (to a workspace secret and to a file outside).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from harvey.llm.reply_bounds import MAX_TOOL_CALLS
from harvey.redact import Redactor, is_secret_env_name, secret_env_values
from harvey.workspace.secret_files import SecretFiles
from tests.fakes.servers import FakeOpenAI
from tests.harvey_process import harvey_spawn, invoke_harvey
from tests.security.conftest import API_KEY, Attack, AttackResult

#: A second secret with no word in it, so every one of its slices is evidence.
FILE_SECRET = "Zq7xW3pL9vK2mN8rT4yB6cH1"
CONTENT = f"OPENAI_API_KEY={API_KEY}\nDEPLOY_TOKEN={FILE_SECRET}\n"
#: Words in the key that are everywhere anyway: the program's name (``sk-harveytest-…``)
#: and the test folder's (``/tmp/pytest-of-…``, in every absolute path).
PUBLIC_WORDS = ("harvey", "pytest-")

SECRET_NAMES = (
    ".env",
    "deploy.pem",
    "sub/.ENV.local",
    ".ssh/id_ed25519",
    "credentials.json",
    "\uff0eenv",  # a full-width dot: NFKC makes it ".env"
    "Keys/Server.KEY",
)


def pieces(secret: str, size: int = 6) -> set[str]:
    return {secret[i : i + size] for i in range(len(secret) - size + 1)}


def assert_no_pieces(
    haystacks: Mapping[str, str | bytes], secret: str, size: int = 6, public: Iterable[str] = ()
) -> None:
    """Not one ``size``-character slice of ``secret`` in any haystack (slices inside a
    ``public`` word, such as the program's name, prove nothing and are left out)."""
    public = tuple(public)
    checked = [p for p in pieces(secret, size) if not any(p in word for word in public)]
    assert checked, "nothing left to check"
    for name, hay in haystacks.items():
        text = hay.decode("latin-1") if isinstance(hay, bytes) else hay
        found = sorted(p for p in checked if p in text)
        assert not found, f"pieces {found} of the secret reached {name}"


def attack_haystacks(result: AttackResult) -> dict[str, str | bytes]:
    return {
        "the model server": json.dumps(result.requests),
        "what was stored": result.everything_stored(),
        "stdout": result.proc.stdout,
        "stderr": result.proc.stderr,
    }


def assert_nothing_leaked(result: AttackResult) -> None:
    for secret in (API_KEY, FILE_SECRET):
        result.assert_secret_absent(secret)
    haystacks = attack_haystacks(result)
    assert_no_pieces(haystacks, FILE_SECRET)
    assert_no_pieces(haystacks, API_KEY, public=PUBLIC_WORDS)


def plant_secrets(ws: Path, outside: Path) -> None:
    """The key in every kind of secret file, a link and hard links to them, and a file
    worth reading beside them."""
    for name in SECRET_NAMES:
        path = ws / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(CONTENT)
    (ws / "ok.md").write_text("The boiler pressure must stay under 2 bar.\n")
    (ws / "notes.txt").symlink_to(".env")
    (ws / "keys").symlink_to(".ssh", target_is_directory=True)
    os.link(ws / "deploy.pem", ws / "notes2.txt")
    (outside / "key.txt").write_text(CONTENT)
    os.link(outside / "key.txt", ws / "notes3.txt")


def _harvey(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return invoke_harvey(*args, cwd=ws)


# --------------------------------------------------------------------- the file tools


def test_paging_through_secret_files_returns_not_one_byte(
    attack: Attack, victim_workspace: Path, outside: Path
) -> None:
    ws = victim_workspace
    plant_secrets(ws, outside)
    # 151 results in one turn: a window they all fit, or the turn cuts them (turn_room.py)
    with (ws / "harvey.yaml").open("a") as config:
        config.write("context_window: 65536\n")
    targets = [
        *SECRET_NAMES,
        "notes.txt",  # a link to .env
        "notes2.txt",  # a hard link to deploy.pem
        "notes3.txt",  # a hard link to a file outside the workspace
        "keys/id_ed25519",  # through a link to the folder
        "./.env",
        "sub/../.env",
        ".env/",
        ".ENV",  # no such file here, but never read either
        str(ws / ".env"),
        "SUB/.env.local",
    ]
    reads = [
        ("read_file", {"path": path, "offset": offset, "limit": limit})
        for path in targets
        for limit in range(1, 7)
        for offset in (0, limit * 3)
    ]
    # a reply makes at most MAX_TOOL_CALLS calls: the reads go in several replies
    replies: list[Any] = [
        reads[i : i + MAX_TOOL_CALLS] for i in range(0, len(reads), MAX_TOOL_CALLS)
    ]
    result = attack([*replies, ("read_file", {"path": ".env", "limit": 0})])
    assert result.proc.returncode == 0, result.proc.stderr
    last = result.requests[-1]["messages"]
    outputs = [m["content"] for m in last if m.get("role") == "tool"]
    assert len(outputs) == len(reads) + 1, "not every read reached the tool"
    for output in outputs:
        assert output.startswith("error:"), output
        assert any(why in output for why in ("secret file", "hard link", "does not exist"))
    said = "\n".join(outputs)
    assert "notes2.txt has 2 hard links" in said and "notes3.txt has 2 hard links" in said
    assert "security.secret_files" in said
    assert_nothing_leaked(result)


def test_search_and_listing_show_names_never_contents(
    attack: Attack, victim_workspace: Path, outside: Path
) -> None:
    plant_secrets(victim_workspace, outside)
    result = attack(
        [
            ("search_files", {"pattern": FILE_SECRET[3:8]}),
            ("search_files", {"pattern": API_KEY[27:32]}),
            ("search_files", {"pattern": "."}),
            ("search_files", {"pattern": ".", "path": ".ssh"}),
            ("search_files", {"pattern": ".", "path": "keys"}),  # a link to .ssh/
            ("search_files", {"pattern": ".", "path": "notes2.txt"}),
            ("search_files", {"pattern": ".", "path": "notes.txt"}),
            ("list_files", {"path": ".", "depth": 3}),
        ]
    )
    assert result.proc.returncode == 0, result.proc.stderr
    outputs = result.tool_outputs
    assert any("under 2 bar" in o for o in outputs), "the search found nothing at all"
    assert any("[not searched: " in o and "secret files" in o for o in outputs)
    assert any("hard links" in o for o in outputs)
    (listing,) = [o for o in outputs if o.startswith("./")]
    assert ".env  [secret file: not read]" in listing
    assert "notes.txt -> .env  [secret file: not read]" in listing
    assert "notes3.txt  [hard link: not read]" in listing
    assert "credentials.json  [secret file: not read]" in listing
    assert_nothing_leaked(result)


@pytest.mark.parametrize("guide", ["link to a secret folder", "hard link"])
def test_harvey_md_leading_to_a_secret_is_not_in_the_system_prompt(
    attack: Attack, victim_workspace: Path, outside: Path, guide: str
) -> None:
    plant_secrets(victim_workspace, outside)
    (victim_workspace / ".ssh" / "config").write_text(CONTENT)  # no secret name of its own
    if guide == "hard link":
        os.link(outside / "key.txt", victim_workspace / "HARVEY.md")
    else:
        (victim_workspace / "HARVEY.md").symlink_to(".ssh/config")
    result = attack([])
    assert result.proc.returncode == 0, result.proc.stderr
    system = result.requests[0]["messages"][0]
    assert system["role"] == "system" and "HARVEY.md" not in system["content"]
    assert_nothing_leaked(result)


def test_a_mentioned_secret_file_is_not_attached(
    attack: Attack, victim_workspace: Path, outside: Path
) -> None:
    plant_secrets(victim_workspace, outside)
    # No tools: files named in the prompt are attached to it (``attach_mentioned``).
    (victim_workspace / "harvey.yaml").write_text("tools:\n  enabled: false\n")
    result = attack([], prompt="compare .env with notes.txt, notes3.txt and ok.md")
    assert result.proc.returncode == 0, result.proc.stderr
    sent = json.dumps(result.requests)
    assert "under 2 bar" in sent, "ok.md was not attached: the test proves nothing"
    assert "notes.txt: not attached" in sent and "notes3.txt: not attached" in sent
    assert_nothing_leaked(result)


@pytest.mark.slow
def test_read_in_the_repl_refuses_a_secret_file_in_one_line(
    victim_workspace: Path, outside: Path
) -> None:
    import pexpect

    plant_secrets(victim_workspace, outside)
    with FakeOpenAI([], default_reply="noted") as srv:
        child = pexpect.spawn(
            *harvey_spawn("--backend", "openai", "--base-url", srv.url),
            cwd=str(victim_workspace),
            env={**os.environ, "TERM": "xterm", "NO_COLOR": "1", "PROMPT_TOOLKIT_NO_CPR": "1"},
            encoding="utf-8",
            timeout=30,
            dimensions=(40, 200),
        )
        try:
            child.expect("tester>")
            for target, why in (
                (".env", "secret file"),
                ("notes.txt", "secret file"),
                ("keys/id_ed25519", "secret file"),
                ("notes3.txt", "hard links"),
            ):
                child.send(f"/read {target}\r")
                child.expect(why)
                child.expect("tester>")
            child.send("/read-chunks deploy.pem summarise it\r")
            child.expect("secret file")
            child.expect("tester>")
            child.send("/read ok.md\r")
            child.expect("added ok.md")
            child.expect("tester>")
            child.send("what do you have?\r")
            child.expect("noted")
            child.expect("tester>")
            child.send("/exit\r")
            child.expect(pexpect.EOF)
        finally:
            if child.isalive():
                child.terminate(force=True)
        sent = json.dumps(srv.chat_requests)
    assert "under 2 bar" in sent, "the conversation never reached the server"
    assert_no_pieces({"the model server": sent}, FILE_SECRET)
    assert_no_pieces({"the model server": sent}, API_KEY, public=PUBLIC_WORDS)


# ------------------------------------------------------------------------- analysis


def _analyze(ws: Path, *paths: str) -> tuple[subprocess.CompletedProcess[str], str, int]:
    with FakeOpenAI([], default_reply="r") as srv:
        model = ("--backend", "openai", "--base-url", srv.url, "--yes")
        proc = _harvey(ws, "analyze", *paths, "-i", "summarise", *model)
        sent = json.dumps([r.body for r in srv.requests])
        chats = len(srv.chat_requests)
    return proc, sent, chats


@pytest.mark.parametrize("target", [".env", "notes.txt", "notes2.txt", "notes3.txt", "keys"])
def test_analyze_refuses_a_secret_file_in_one_line(
    victim_workspace: Path, outside: Path, target: str
) -> None:
    plant_secrets(victim_workspace, outside)
    proc, sent, chats = _analyze(victim_workspace, target)
    assert proc.returncode == 2, proc.stderr
    assert chats == 0 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert_no_pieces({"server": sent, "stderr": proc.stderr}, FILE_SECRET)


def test_folder_analysis_skips_and_counts_secret_files(
    victim_workspace: Path, outside: Path, isolated_env: Path
) -> None:
    plant_secrets(victim_workspace, outside)
    proc, sent, chats = _analyze(victim_workspace, ".")
    assert proc.returncode == 0, proc.stderr
    assert chats >= 1 and "under 2 bar" in sent
    assert "secret file" in proc.stderr and "hard link" in proc.stderr
    stored = b"".join(p.read_bytes() for p in isolated_env.rglob("*") if p.is_file())
    haystacks = {"server": sent, "stdout": proc.stdout, "stderr": proc.stderr, "stored": stored}
    assert_no_pieces(haystacks, FILE_SECRET)
    assert_no_pieces(haystacks, API_KEY, public=PUBLIC_WORDS)


# ---------------------------------------------------------------------- knowledge


@pytest.mark.slow
def test_ingest_skips_secret_files_and_a_query_finds_no_piece(
    victim_workspace: Path, outside: Path
) -> None:
    ws = victim_workspace
    plant_secrets(ws, outside)
    assert _harvey(ws, "rag", "new", "s", "--embedder", "none").returncode == 0
    walked = _harvey(ws, "rag", "ingest", "s", ".")
    assert walked.returncode == 0, walked.stderr
    direct = _harvey(ws, "rag", "ingest", "s", ".env", "notes.txt", "notes3.txt")
    assert direct.returncode == 0, direct.stderr
    shown = walked.stdout + walked.stderr
    assert "skipped" in shown
    found: list[str] = []
    for piece in (FILE_SECRET[:8], FILE_SECRET[8:16], "DEPLOY_TOKEN", "OPENAI_API_KEY"):
        query = _harvey(ws, "rag", "query", "s", piece, "--json")
        assert query.returncode == 0, query.stderr
        found += [row["text"] for row in json.loads(query.stdout)]
    db = (ws / ".harvey" / "rag" / "s.db").read_bytes()
    haystacks = {"queries": "\n".join(found), "the store": db, "ingest": shown}
    assert_no_pieces(haystacks, FILE_SECRET)
    assert_no_pieces(haystacks, API_KEY, public=PUBLIC_WORDS)


# ---------------------------------------------------------------------- redaction

GH_PAT = "patvalue-Qm4Rt8Wz2Lx6"
KEY_PROD = "prodvalue-Hn3Jk7Vb5Cs9"
GITHUB_TOKEN = "ghp_16C7e42F292c6912E7710c838347Ae178B4aXYZ"


def test_env_names_the_suffix_rule_missed_are_scrubbed_everywhere(
    attack: Attack, victim_workspace: Path
) -> None:
    (victim_workspace / "ci.md").write_text(f"pat: {GH_PAT}\nprod: {KEY_PROD}\n")
    result = attack(
        [
            ("read_file", {"path": "ci.md"}),
            ("write_file", {"path": f"{GH_PAT}.txt", "content": KEY_PROD}),
            ("read_file", {"path": f"{KEY_PROD}/x.txt"}),
        ],
        env={"GH_PAT": GH_PAT, "OPENAI_API_KEY_PROD": KEY_PROD},
    )
    assert result.proc.returncode == 0, result.proc.stderr
    assert "refused to write [REDACTED].txt" in result.proc.stderr
    for secret in (GH_PAT, KEY_PROD):
        result.assert_secret_absent(secret)
    assert any("pat: [REDACTED]" in o for o in result.tool_outputs)


def test_a_token_shaped_path_stays_out_of_the_write_note_and_stderr(
    attack: Attack, victim_workspace: Path
) -> None:
    result = attack([("write_file", {"path": f"{GITHUB_TOKEN}.txt", "content": "x"})])
    assert result.proc.returncode == 0, result.proc.stderr
    assert GITHUB_TOKEN not in result.proc.stderr
    assert "ghp_[REDACTED].txt" in result.proc.stderr
    (spmd,) = (victim_workspace / ".harvey" / "sessions").glob("*.spmd")
    recording = spmd.read_text()
    assert "[[write: ghp_[REDACTED].txt — skipped]]" in recording
    result.assert_secret_absent(GITHUB_TOKEN)


def test_an_approved_write_keeps_its_content_while_the_preview_hides_the_key(
    attack: Attack, victim_workspace: Path
) -> None:
    from harvey.redact import install, reset
    from harvey.tools.approval import describe_write, write_preview

    install(Redactor([API_KEY]))
    try:
        target = victim_workspace / "deploy.sh"
        target.write_text("export KEY=old\n")
        request = describe_write(target, "deploy.sh", f"export KEY={API_KEY}\n")
        shown = write_preview(request).text()
        assert API_KEY not in shown and "export KEY=[REDACTED]" in shown
        secret = victim_workspace / ".env"
        secret.write_text(CONTENT)
        preview = write_preview(describe_write(secret, ".env", "X=1\n"))
        assert (
            preview.cut
            == "[the current file is a secret file: its content is never shown; no diff shown]"
        )
        assert FILE_SECRET not in preview.text()
    finally:
        reset()
    result = attack(
        [("write_file", {"path": "deploy.sh", "content": f"export KEY={API_KEY}\n"})],
        "--allow-writes",
    )
    assert result.proc.returncode == 0, result.proc.stderr
    assert target.read_text() == f"export KEY={API_KEY}\n"  # the file is what was approved
    result.assert_secret_absent()


def test_the_memory_profile_is_drafted_from_no_secret_file(
    victim_workspace: Path, outside: Path
) -> None:
    from harvey.memory.profile import facts

    plant_secrets(victim_workspace, outside)
    (victim_workspace / "README.md").symlink_to(".env")
    os.link(outside / "key.txt", victim_workspace / "HARVEY.md")
    (victim_workspace / "README.rst").symlink_to("keys/id_ed25519")
    (victim_workspace / "README.txt").write_text("A boiler controller.\n")
    shown = facts(victim_workspace)
    assert "Head of README.txt:\nA boiler controller." in shown
    assert "Head of README.md" not in shown and "Head of HARVEY.md" not in shown
    assert_no_pieces({"the profile's facts": shown}, FILE_SECRET)
    assert_no_pieces({"the profile's facts": shown}, API_KEY, public=PUBLIC_WORDS)


def test_a_document_that_is_a_link_to_a_secret_is_never_extracted(
    victim_workspace: Path, outside: Path
) -> None:
    """A README.pdf or report.pdf leading to .env or a key: refused by name before any
    extraction, by read_file, the profile and mentioned files alike; a document that is
    a link out, or a hard link to a file outside, is refused by read_file too."""
    from harvey.errors import FileRefused, WorkspaceError
    from harvey.memory.profile import facts
    from harvey.tools.files import ReadFileTool
    from harvey.tools.registry import ToolContext

    plant_secrets(victim_workspace, outside)
    (victim_workspace / "README.pdf").symlink_to(".env")
    (victim_workspace / "report.pdf").symlink_to("keys/id_ed25519")
    shown = facts(victim_workspace)
    assert "Head of README.pdf" not in shown
    from tests.documents.makers import docx_bytes, pdf_bytes

    (outside / "out.pdf").write_bytes(pdf_bytes([[f"outside {FILE_SECRET}"]]))
    (outside / "out.docx").write_bytes(docx_bytes([("p", f"outside {FILE_SECRET}")]))
    (victim_workspace / "out.pdf").symlink_to(outside / "out.pdf")
    os.link(outside / "out.docx", victim_workspace / "hard.docx")
    ctx = ToolContext(workspace=victim_workspace.resolve())
    for name in ("README.pdf", "report.pdf", "out.pdf"):
        with pytest.raises((FileRefused, WorkspaceError)):
            ReadFileTool().run(ctx, {"path": name, "pages": "1"})
    refused = ReadFileTool().run(ctx, {"path": "hard.docx", "pages": "1"})
    assert refused.startswith("error: hard.docx has 2 hard links")
    assert_no_pieces({"the profile's facts": shown}, FILE_SECRET)


def test_security_secret_files_adds_patterns_of_the_users_own(tmp_path: Path) -> None:
    from harvey.errors import FileRefused
    from harvey.tools.files import ReadFileTool
    from harvey.tools.registry import ToolContext
    from harvey.tools.search import SearchFilesTool
    from harvey.workspace import secret_files

    (tmp_path / "prod.vault").write_text(f"{FILE_SECRET}\n")
    (tmp_path / "config" / "prod").mkdir(parents=True)
    (tmp_path / "config" / "prod" / "db.yaml").write_text(f"password: {FILE_SECRET}\n")
    (tmp_path / "config" / "dev.yaml").write_text("password: dev\n")
    ctx = ToolContext(workspace=tmp_path)
    secret_files.install(SecretFiles(["*.vault", "config/prod/*.yaml"]))
    try:
        for path in ("prod.vault", "PROD.VAULT", "config/prod/db.yaml", "config/../prod.vault"):
            with pytest.raises(FileRefused, match="secret file"):
                ReadFileTool().run(ctx, {"path": path})
        found = SearchFilesTool().run(ctx, {"pattern": "password|" + FILE_SECRET[:6]})
        assert "config/dev.yaml:1: password: dev" in found and FILE_SECRET[:6] not in found
        assert "[not searched: 2 secret files;" in found
        with pytest.raises(FileRefused):  # the defaults stay: extra patterns only add
            ReadFileTool().run(ctx, {"path": ".env"})
    finally:
        secret_files.reset()
    assert ReadFileTool().run(ctx, {"path": "prod.vault"}) == f"{FILE_SECRET}\n"


def test_stderr_is_redacted_a_line_at_a_time() -> None:
    import io

    from harvey.cli.errors import RedactingStderr
    from harvey.redact import install, reset

    install(Redactor([FILE_SECRET]))
    try:
        raw = io.StringIO()
        err = RedactingStderr(raw)
        half = len(FILE_SECRET) // 2
        print("warning: key", FILE_SECRET[:half], end="", file=err)  # split across writes
        print(FILE_SECRET[half:], "in a file named ghp_" + "a1" * 18, file=err)
        err.write("progress " + FILE_SECRET + "\r")
        err.write("tail " + FILE_SECRET)
        err.flush()
    finally:
        reset()
    shown = raw.getvalue()
    assert FILE_SECRET[:6] not in shown and "ghp_a1a1" not in shown
    assert shown.count("[REDACTED]") == 4


# ------------------------------------------------------------- the rules, as properties

DEFAULT_NAMES = (
    ".env",
    ".env.local",
    ".envrc",
    "prod.env",
    "deploy.pem",
    "server.key",
    "cert.p12",
    "id_rsa",
    "id_rsa.pub",
    "id_ed25519",
    "id_ecdsa_sk",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".git-credentials",
    "credentials",
    "credentials.json",
    "vault.kdbx",
    "kubeconfig",
    "kubeconfig.yaml",
    "putty.ppk",
    "secrets.yaml",
    "prod.tfstate",
    "terraform.tfstate.backup",
    ".bash_history",
    ".python_history",
)
STEMS = (
    "env", "pem", "key", "p12", "pfx", "jks", "kdbx", "id_rsa", "id_dsa", "id_ecdsa",
    "id_ed25519", "netrc", "npmrc", "pypirc", "pgpass", "htpasswd", "credentials",
    "kubeconfig", "ppk", "keytab", "secret", "tfstate", "_history",
)  # fmt: skip


def _full_width(char: str) -> str:
    return chr(ord(char) + 0xFEE0) if "!" <= char <= "~" else char


@st.composite
def variant(draw: st.DrawFn, name: str) -> str:
    """``name`` with each character's case and width chosen at random."""
    out = []
    for char in name:
        if draw(st.booleans()):
            char = char.swapcase()
        if draw(st.booleans()):
            char = _full_width(char)
        out.append(char)
    return "".join(out)


@given(st.sampled_from(DEFAULT_NAMES).flatmap(variant), st.sampled_from(("", "a/", "docs/x/")))
def test_every_case_and_width_variant_of_a_secret_name_matches(name: str, folder: str) -> None:
    assert SecretFiles().matches(folder + name)


@given(
    st.from_regex(r"[A-Za-z0-9_.\-]{1,24}", fullmatch=True),
    st.sampled_from(("", "src/", "docs/notes/")),
)
def test_a_name_without_a_secret_stem_never_matches(name: str, folder: str) -> None:
    assume(not any(stem in name.casefold() for stem in STEMS))
    assume(name not in (".", ".."))
    assert not SecretFiles().matches(folder + name)


@given(st.from_regex(r"[A-Z_]{0,16}", fullmatch=True))
def test_path_like_and_xdg_names_are_never_secret(suffix: str) -> None:
    markers = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
    name = "XDG_" + suffix
    assume(not any(m in name for m in markers))
    assume("_PAT_" not in name + "_" and not name.endswith("_PAT"))
    assert not is_secret_env_name(name)
    for path_name in ("PATH", "PATHEXT", "PYTHONPATH", "MANPATH", "XDG_SESSION_PATH", "PATH_INFO"):
        assert not is_secret_env_name(path_name)


@given(
    st.from_regex(r"[A-Za-z0-9_]{0,12}", fullmatch=True),
    st.from_regex(r"(_[A-Za-z0-9]{1,8}){0,2}", fullmatch=True),
)
def test_pat_as_a_word_and_token_anywhere_are_always_secret(head: str, tail: str) -> None:
    assert is_secret_env_name(f"{head}_PAT")
    assert is_secret_env_name(f"{head}_pat{tail}")
    assert is_secret_env_name(f"{head}TOKEN{tail}")
    assert is_secret_env_name(f"{head}token{head}")
    values = secret_env_values({f"{head}_PAT": "value-of-the-pat-1234"})
    assert values == ["value-of-the-pat-1234"]


def test_the_pdf_child_gets_no_key_in_its_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PDFium parses a hostile file's bytes: the child it runs in holds none of the
    user's keys, tokens or the PDF password, whatever their names."""
    from harvey.documents import extract, runner
    from tests.documents.makers import pdf_bytes

    for name in ("OPENAI_API_KEY", "GH_PAT", "AWS_SECRET_ACCESS_KEY", "HARVEY_PDF_PASSWORD"):
        monkeypatch.setenv(name, API_KEY)
    monkeypatch.setenv("MY_SERVICE_URL", f"https://user:{FILE_SECRET}@host")
    seen: list[dict[str, str]] = []
    real_run = subprocess.run

    def run(*args: Any, **kwargs: Any) -> Any:
        seen.append(dict(kwargs["env"]))
        return real_run(*args, **kwargs)

    monkeypatch.setattr(runner.subprocess, "run", run)
    (tmp_path / "r.pdf").write_bytes(pdf_bytes([["The dam held."]]))
    monkeypatch.setenv("HARVEY_HOME", str(tmp_path / "home"))
    assert extract(tmp_path / "r.pdf").text == "The dam held."
    assert seen and all(API_KEY not in str(env) and FILE_SECRET not in str(env) for env in seen)
