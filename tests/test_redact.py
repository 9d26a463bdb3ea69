"""The Redactor: configured secrets and token shapes go, ordinary text stays."""

from __future__ import annotations

import io
import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import SecretStr

from harvey import redact as redact_module
from harvey.config.settings import RouteSettings, Settings, configured_keys, validate
from harvey.errors import BackendError, ConfigError
from harvey.messages import Message, ToolCall
from harvey.ownfiles.private import create_private_file, make_private_dirs, tighten_database
from harvey.redact import (
    MARKER,
    MIN_SECRET_LENGTH,
    RedactingFilter,
    Redactor,
    secret_env_values,
)
from harvey.session.recorder import Recorder
from harvey.session.records import ToolNote, TurnRecord
from harvey.session.store import SessionStore
from harvey.tools.hooks import HookRegistry
from harvey.tools.offload import OffloadHook
from harvey.tools.registry import ToolContext, ToolRegistry

KEY = "sk-harveytest-DO-NOT-LEAK-0123456789abcdef"

TOKENS = {
    "bearer": ("Authorization: Bearer abc123DEF456ghi789", "Authorization: Bearer [REDACTED]"),
    "openai": ("key=sk-abcdefghij0123456789ABCD end", "key=sk-[REDACTED] end"),
    "openai-project": ("sk-proj-Ab3_cd-EF45ghIJ67klMN89op", "sk-proj-[REDACTED]"),
    "github": ("token ghp_16C7e42F292c6912E7710c838347Ae178B4a!", "token ghp_[REDACTED]!"),
    "github-oauth": ("gho_16C7e42F292c6912E7710c838347Ae178B4a", "gho_[REDACTED]"),
    "github-app": ("ghs_16C7e42F292c6912E7710c838347Ae178B4a", "ghs_[REDACTED]"),
    "github-user": ("ghu_16C7e42F292c6912E7710c838347Ae178B4a", "ghu_[REDACTED]"),
    "github-pat": ("github_pat_11ABCDEFG0123456789_abcdefXYZ", "github_pat_[REDACTED]"),
    "slack": ("xoxb-123456789012-1234567890123-AbCdEf", "xoxb-[REDACTED]"),
    "slack-user": ("xoxp-1234567890-abcdef", "xoxp-[REDACTED]"),
    "aws": ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "aws_access_key_id = AKIA[REDACTED]"),
    "aws-session": ("ASIAY34FZKBOKMUTVV7A,", "ASIA[REDACTED],"),
    "google": ("AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe", "AIza[REDACTED]"),
    "url-password": (
        "cannot reach https://me:s3cr3t-pw@api.example.com/v1",
        "cannot reach https://me:[REDACTED]@api.example.com/v1",
    ),
    "jwt": (
        "t=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U;",
        "t=[REDACTED];",
    ),
}


@pytest.mark.parametrize("name", sorted(TOKENS))
def test_token_shapes_are_redacted_with_their_prefix_kept(name: str) -> None:
    text, expected = TOKENS[name]
    assert Redactor().redact(text) == expected


def test_a_pem_private_key_block_loses_its_body_and_keeps_its_frame() -> None:
    pem = (
        "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7V\nq3xZ/b9\n"
        "-----END RSA PRIVATE KEY-----\nafter"
    )
    assert Redactor().redact(pem) == (
        f"before\n-----BEGIN RSA PRIVATE KEY-----{MARKER}-----END RSA PRIVATE KEY-----\nafter"
    )
    openssh = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----"
    )
    assert "b3BlbnNzaC1rZXk" not in Redactor().redact(openssh)


def test_a_cut_off_pem_block_is_redacted_to_the_end() -> None:
    text = "x -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC"
    assert Redactor().redact(text) == f"x -----BEGIN PRIVATE KEY-----{MARKER}"


def test_public_keys_and_certificates_are_not_secrets() -> None:
    cert = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----"
    assert Redactor().redact(cert) == cert


@pytest.mark.parametrize(
    "text",
    [
        "commit 3f2a9c1e5b7d8e9f0a1b2c3d4e5f60718293a4b5 (HEAD -> main)",
        "id 123e4567-e89b-12d3-a456-426614174000",
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "Bearer authentication is described in RFC 6750",
        "pip install sk-learn-tutorial-for-beginners",
        "the task-0123456789abcdefghij is done",
        "AKIA is how AWS access key ids start",
        "a JWT starts with eyJ and has three parts",
        "http://localhost:8080/v1 and ssh://git@github.com:repo.git",
        "",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert Redactor([KEY]).redact(text) == text


def test_configured_secrets_are_replaced_wherever_they_appear() -> None:
    r = Redactor(["plain-password-1", KEY])
    assert r.redact(f"a{KEY}b") == f"a{MARKER}b"
    assert r.redact("x=plain-password-1;plain-password-1") == f"x={MARKER};{MARKER}"


def test_the_longest_secret_wins_when_one_contains_another() -> None:
    r = Redactor(["abcdefgh", "abcdefgh-ijklmnop"])
    assert r.redact("abcdefgh-ijklmnop and abcdefgh") == f"{MARKER} and {MARKER}"


def test_short_values_are_words_not_secrets() -> None:
    r = Redactor(["hunter2", "", "REDACTED"])
    assert r.secrets == ()
    assert r.redact("hunter2 is not redacted") == "hunter2 is not redacted"


def test_secret_environment_variables_are_chosen_by_name_and_length() -> None:
    env = {
        "OPENAI_API_KEY": "sk-a",  # too short to be a real key
        "ANTHROPIC_API_KEY": "anthropic-value-1234",
        "GITHUB_TOKEN": "token-value-5678",
        "MY_SECRET": "secret-value-9012",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "DB_PASSWORD": "correct horse battery",
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "PYTHONPATH": "/home/me/project/src",
        "PATHEXT": ".COM;.EXE;.BAT;.CMD",
        "XDG_DATA_DIRS": "/usr/local/share:/usr/share",
        # issue 19: a marker anywhere in the name, not only at its end; PAT as a word
        "GH_PAT": "gh-pat-value-3456",
        "OPENAI_API_KEY_PROD": "prod-key-value-7890",
        "MY_TOKEN_2": "token-two-value-1357",
    }
    assert sorted(secret_env_values(env)) == sorted(
        [
            "anthropic-value-1234",
            "token-value-5678",
            "secret-value-9012",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "correct horse battery",
            "gh-pat-value-3456",
            "prod-key-value-7890",
            "token-two-value-1357",
        ]
    )


def test_configured_keys_are_the_top_level_and_every_route_key() -> None:
    settings = Settings(
        api_key=SecretStr("top-level-key-0001"),
        routes=[
            RouteSettings(name="a", api_key=SecretStr("route-a-key-0002")),
            RouteSettings(name="b"),
        ],
    )
    assert configured_keys(settings) == ["top-level-key-0001", "route-a-key-0002"]
    r = Redactor.from_env({"OPENAI_API_KEY": "env-key-value-0003"}, configured_keys(settings))
    text = "top-level-key-0001 route-a-key-0002 env-key-value-0003"
    assert r.redact(text) == " ".join([MARKER] * 3)
    assert "key" not in repr(r)


def test_json_data_is_redacted_leaf_by_leaf() -> None:
    data = {"path": "x", "content": [f"k={KEY}", 3, {"deep": KEY}]}
    assert Redactor([KEY]).redact_data(data) == {
        "path": "x",
        "content": [f"k={MARKER}", 3, {"deep": MARKER}],
    }


def test_the_process_wide_redactor_is_built_from_the_environment_until_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "env-token-abcdefgh")
    redact_module.reset()
    try:
        assert redact_module.redact("t=env-token-abcdefgh") == f"t={MARKER}"
        redact_module.install(Redactor(["installed-secret"]))
        assert redact_module.redact("installed-secret env-token-abcdefgh") == (
            f"{MARKER} env-token-abcdefgh"
        )
    finally:
        redact_module.reset()


def test_redaction_is_linear_on_hostile_input() -> None:
    # Many unterminated PEM headers and near-miss tokens: a lazy ".*?" or a
    # nested quantifier would take minutes here; this finishes at once.
    hostile = "-----BEGIN PRIVATE KEY-----" * 1 + "-----END " * 20_000
    hostile += "Bearer " + "a" * 50_000 + " sk-" + "b-" * 50_000
    out = Redactor().redact(hostile)
    assert out.startswith(f"-----BEGIN PRIVATE KEY-----{MARKER}")


# ----------------------------------------------------------- properties

SECRET = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+=",
    min_size=MIN_SECRET_LENGTH,
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(secrets=st.lists(SECRET, min_size=1, max_size=3), parts=st.lists(st.text(), max_size=4))
def test_no_configured_secret_survives_and_redaction_is_idempotent(
    secrets: list[str], parts: list[str]
) -> None:
    r = Redactor(secrets)
    pieces = [p for pair in zip(parts, secrets * 4, strict=False) for p in pair]
    text = "".join(pieces + parts[len(secrets) :])
    once = r.redact(text)
    for secret in r.secrets:
        assert secret not in once
    assert r.redact(once) == once


WORDS = st.sampled_from(
    [
        "the",
        "notes",
        "say",
        "key:",
        "value",
        "token",
        "=",
        "-",
        "sk",
        "ghp",
        "AKIA",
        "eyJ",
        "README.md",
        "(",
        ")",
        "\n",
        "ok",
        "Bearer",
        "café",
        "日本",
    ]
)
ORDINARY = st.one_of(
    WORDS,
    st.integers(0, 10**12).map(str),
    st.binary(min_size=20, max_size=20).map(bytes.hex),  # git SHAs
    st.uuids().map(str),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(ORDINARY, max_size=30), st.sampled_from([" ", "\n", ", "]))
def test_text_without_secrets_is_unchanged(words: list[str], sep: str) -> None:
    text = sep.join(w for w in words if w != "Bearer")  # "Bearer <sha>" is a token
    assert Redactor([KEY]).redact(text) == text


# ----------------------------------------------------------- settings and files


@pytest.fixture(autouse=True)
def ordinary_umask() -> Iterator[None]:
    """The usual 022 umask, so only Harvey's own modes can make its files private."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_api_key_is_a_secret_in_reprs_dumps_and_errors(tmp_path: Path) -> None:
    settings = validate({"api_key": KEY, "routes": [{"name": "r", "api_key": KEY}]}, "harvey.yaml")
    assert settings.api_key is not None and settings.api_key.get_secret_value() == KEY
    assert KEY not in repr(settings) and KEY not in str(settings.model_dump())
    with pytest.raises(ConfigError) as err:
        validate({"api_key": KEY, "timeout": KEY}, "harvey.yaml")
    assert KEY not in str(err.value) and KEY not in str(err.value.__cause__)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_private_folders_are_created_0700_and_loose_ones_tightened(tmp_path: Path) -> None:
    made = make_private_dirs(tmp_path / "ws" / ".harvey" / "sessions")
    assert [_mode(p) for p in (made, made.parent, made.parent.parent)] == [0o700] * 3
    loose = tmp_path / "loose" / ".harvey" / "plans"
    loose.mkdir(parents=True)
    os.chmod(loose, 0o755)
    os.chmod(loose.parent, 0o755)
    make_private_dirs(loose)
    assert (_mode(loose), _mode(loose.parent), _mode(loose.parent.parent) & 0o077 != 0) == (
        0o700,
        0o700,
        True,  # only Harvey's own folders are tightened, not the workspace
    )


def test_a_symlinked_folder_is_never_chmodded(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    os.chmod(target, 0o755)
    (tmp_path / "link").symlink_to(target)
    make_private_dirs(tmp_path / "link")
    assert _mode(target) == 0o755


def test_database_files_are_created_0600_and_tightened(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    create_private_file(db)
    assert _mode(db) == 0o600
    wal = tmp_path / "sessions.db-wal"
    wal.write_text("")
    os.chmod(wal, 0o644)
    os.chmod(db, 0o664)
    tighten_database(db)
    assert (_mode(db), _mode(wal)) == (0o600, 0o600)


# ----------------------------------------------------------- the boundaries


class _Leaky:
    name = "leaky"
    description = "returns what it is told, or crashes with it"
    parameters: dict[str, Any] = {"type": "object"}  # noqa: RUF012

    def run(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        if args.get("crash"):
            raise RuntimeError(f"bad {args['text']}")
        return str(args["text"])


@pytest.fixture()
def installed() -> Iterator[Redactor]:
    redactor = redact_module.install(Redactor([KEY]))
    yield redactor
    redact_module.reset()


def test_every_tool_result_is_redacted_in_the_registry(tmp_path: Path) -> None:
    registry = ToolRegistry([_Leaky()], redactor=Redactor([KEY]))
    ctx = ToolContext(workspace=tmp_path)
    ok = registry.execute(ctx, ToolCall("1", "leaky", {"text": f"OPENAI_API_KEY={KEY}"}))
    crash = registry.execute(ctx, ToolCall("2", "leaky", {"text": KEY, "crash": True}))
    assert ok.content == f"OPENAI_API_KEY={MARKER}"
    assert crash.content.startswith("error:") and KEY not in crash.content


def test_offloaded_output_is_written_already_redacted(tmp_path: Path) -> None:
    registry = ToolRegistry([_Leaky()], redactor=Redactor([KEY]))
    executor = HookRegistry(registry, [OffloadHook(tmp_path, "s1", threshold=100)])
    text = f"key {KEY}\n" * 50
    result = executor.execute(
        ToolContext(workspace=tmp_path), ToolCall("c", "leaky", {"text": text})
    )
    assert "saved to" in result.content
    (saved,) = (tmp_path / ".harvey" / "tool_results").rglob("*.txt")
    assert KEY not in saved.read_text() and saved.read_text().count(MARKER) == 50


def test_the_store_keeps_no_secret_in_messages_or_tool_calls(
    tmp_path: Path, installed: Redactor
) -> None:
    store = SessionStore(tmp_path / "home" / "sessions.db")
    session = store.create_session(tmp_path, "m")
    call = ToolCall("c1", "write_file", {"path": "x", "content": f"k={KEY}"})
    store.add_turn(
        session,
        [Message("user", f"my key is {KEY}"), Message("assistant", "", tool_calls=[call])],
    )
    store.set_title(session, f"my key is {KEY}")
    messages = store.messages(session)
    info = store.get_session(session)
    companions = {p.name: _mode(p) for p in (tmp_path / "home").glob("sessions.db-*")}
    store.close()
    assert companions == {"sessions.db-wal": 0o600, "sessions.db-shm": 0o600}
    assert info is not None and info.title == f"my key is {MARKER}"
    assert messages[0].content == f"my key is {MARKER}"
    assert messages[1].tool_calls[0].arguments == {"path": "x", "content": f"k={MARKER}"}
    raw = b"".join(p.read_bytes() for p in (tmp_path / "home").iterdir())
    assert KEY.encode() not in raw
    assert _mode(tmp_path / "home") == 0o700 and _mode(tmp_path / "home" / "sessions.db") == 0o600


def test_the_recorder_redacts_before_escaping(tmp_path: Path, installed: Redactor) -> None:
    recorder = Recorder.open_in(tmp_path / ".harvey" / "sessions", user="u", model="m", backend="b")
    # An all-caps line is escaped with a backslash, which would hide the token
    # from a redactor that ran on the written text.
    reply = f"found:\nAKIAIOSFODNN7EXAMPLE\n{KEY}"
    note = ToolNote("read_file", {"path": KEY}, "ok")
    recorder.record_turn(TurnRecord("u", "m", str(tmp_path), f"use {KEY}", reply, [note]))
    recorder.record_shell(f"echo {KEY}", f"{KEY}\n", 0)
    recorder.close()
    text = recorder.path.read_text()
    assert KEY not in text and "IOSFODNN7EXAMPLE" not in text
    assert "AKIA[REDACTED]" in text
    assert _mode(recorder.path) == 0o600 and _mode(recorder.path.parent) == 0o700


def test_log_records_are_redacted_message_and_traceback(installed: Redactor) -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactingFilter())
    log = logging.getLogger("harvey.test-redact")
    log.addHandler(handler)
    try:
        log.warning("offload failed for %s", KEY)
        try:
            raise RuntimeError(f"crashed on {KEY}")
        except RuntimeError:
            log.exception("tool crashed")
    finally:
        log.removeHandler(handler)
    text = stream.getvalue()
    assert KEY not in text
    assert f"offload failed for {MARKER}" in text and f"RuntimeError: crashed on {MARKER}" in text


def test_installing_a_redactor_protects_the_last_resort_log_handler(installed: Redactor) -> None:
    assert logging.lastResort is not None
    assert any(isinstance(f, RedactingFilter) for f in logging.lastResort.filters)


@pytest.mark.parametrize("debug", ["", "1"])
def test_tracebacks_printed_by_the_cli_are_redacted(
    installed: Redactor,
    debug: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from harvey.cli.errors import handle_errors

    monkeypatch.setenv("HARVEY_DEBUG", debug)

    @handle_errors
    def backend_fails() -> None:
        raise BackendError(f"server said Bearer {KEY}")

    @handle_errors
    def has_a_bug() -> None:
        raise RuntimeError(f"unexpected {KEY}")

    for func, code in ((backend_fails, 1), (has_a_bug, 1)):
        with pytest.raises(SystemExit) as exit_info:
            func()
        assert exit_info.value.code == code
    err = capsys.readouterr().err
    assert KEY not in err and "RuntimeError: unexpected [REDACTED]" in err
    # A HarveyError is one line unless HARVEY_DEBUG; a bug always shows its traceback.
    assert err.startswith(f"harvey: server said Bearer {MARKER}\n") != bool(debug)
    assert err.count("Traceback (most recent call last)") == (2 if debug else 1)


def test_redact_data_copes_with_arguments_nested_as_deep_as_json_allows() -> None:
    import json

    r = Redactor(["secretvalue123"])
    depth = 900  # the C decoder stops near the recursion limit; the copy must not stop first
    deep = json.loads("[" * depth + '{"k": "secretvalue123"}' + "]" * depth)
    out = r.redact_data(deep)
    for _ in range(depth):
        out = out[0]
    assert out == {"k": "[REDACTED]"}
