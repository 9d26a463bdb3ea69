"""Redaction: keep API keys and token-shaped strings out of everything Harvey emits.

A hostile file can steer the model into reading ``/proc/self/environ``; a
server can echo the ``Authorization`` header back in its error body; a debug
traceback can print a setting. Whatever the path, text leaves Harvey through a
few boundaries — tool results (``ToolRegistry.execute``), what is sent to a
model (the backends' ``to_wire``), what is stored (``SessionStore.add_turn``,
the ``Recorder``), server error messages (``llm/http.py``) and what the CLI
prints — and each of them passes its text through :func:`redact`.

Two kinds of secret are removed:

* **Configured secrets**, matched verbatim: ``api_key`` in the settings and in
  every route, and the values of environment variables whose names say they
  hold one (:func:`is_secret_env_name`: ``KEY``, ``TOKEN``, ``SECRET``,
  ``PASSWORD``/``PASSWD`` or ``CREDENTIAL`` anywhere in the name, ``PAT`` as a
  word: ``OPENAI_API_KEY_PROD``, ``MY_TOKEN_2``, ``GH_PAT``), when they are
  long enough (``MIN_SECRET_LENGTH``) to be a secret rather than a word.
* **Token-shaped strings**: ``Bearer …``, OpenAI ``sk-…``, GitHub ``ghp_…`` and
  ``github_pat_…``, Slack ``xox?-…``, AWS ``AKIA…``/``ASIA…``, Google ``AIza…``,
  JWTs, PEM private-key blocks and the password in ``https://user:pw@host``. A
  vendor prefix is kept (``sk-[REDACTED]``) so the reader still knows what was
  there. Plain hex, UUIDs and git SHAs are not token-shaped and pass unchanged.

Redaction is linear in the text: every pattern starts with a literal, has no
nested quantifier, and matches its token's whole run greedily before checking
it (see ``TokenPattern``); PEM blocks are found with ``str.find`` instead of a
lazy ``.*?``, which would be quadratic on many unterminated ``BEGIN`` lines.
Ten megabytes of ordinary output take about a tenth of a second.

One process-wide redactor is enough (the secrets are per process): the CLI
and ``open_runtime`` :func:`install` one built from the settings; before that,
:func:`active` builds one from the environment alone. Tests build their own
``Redactor`` and pass it explicitly where a boundary accepts one.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

MARKER = "[REDACTED]"
#: Shorter values are words, not secrets; replacing them would garble output.
MIN_SECRET_LENGTH = 8

#: Environment variables whose values are secrets: a marker anywhere in the name
#: (``OPENAI_API_KEY_PROD``, ``MY_TOKEN_2``, ``DB_PASSWORD_FILE``: a suffix rule missed
#: these), or ``PAT`` (a personal access token: ``GH_PAT``) as a word of its own.
#: ``PAT`` alone is not a marker anywhere: it is inside ``PATH``, ``PATHEXT``,
#: ``PYTHONPATH`` and ``XDG_*_PATH``, whose values (every folder on the system) would
#: then be scrubbed from all output. A word is bounded by ``_`` or the name's ends, and
#: may carry a number (``GH_PAT2``). ``AUTH`` is a word marker for the same reason
#: (``NPM_AUTH``, ``SSH_AUTH_SOCK``; never ``GIT_AUTHOR_NAME``). The sandbox's
#: environment scrub and the Ray start use this one rule.
SECRET_ENV_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|(?:^|_)(?:PAT|AUTH)[0-9]*(?:_|$)",
    re.IGNORECASE,
)


def is_secret_env_name(name: str) -> bool:
    """Whether the environment variable ``name`` holds a secret by its name: the rule
    redaction uses, and the one the sandbox and the Ray start scrub environments by."""
    return SECRET_ENV_NAME.search(name) is not None


@dataclass(frozen=True)
class TokenPattern:
    """One token shape: ``prefix`` is context that stays, ``body`` the candidate.

    The body is matched greedily over its whole run of token characters and
    only then checked (length, a digit), never with a lookahead: a lookahead
    that fails would rescan the run from every later start (``sk-sk-sk-…``),
    which is quadratic. A consumed run is never looked at again.
    """

    name: str
    regex: re.Pattern[str]
    min_length: int
    needs_digit: bool = False


def _p(name: str, pattern: str, min_length: int, needs_digit: bool = False) -> TokenPattern:
    return TokenPattern(name, re.compile(pattern), min_length, needs_digit)


# Token characters never include "[" or "]", so a marker is never matched again
# (redaction is idempotent). The digit checks keep prose such as "Bearer
# authentication" or "sk-learn-tutorial-for-beginners" readable: real tokens
# are random and practically always contain a digit. Each pattern starts with
# its literal, so the regex engine skips ahead to it (a leading \b or an
# ignore-case class would try every position: thirty times slower on megabytes
# of output); the word boundary is a lookbehind after the literal instead.
TOKEN_PATTERNS: tuple[TokenPattern, ...] = (
    # "Bearer"/"bearer": the B stays outside the match, which starts at "earer".
    _p(
        "bearer",
        r"(?P<prefix>earer(?<=[Bb]earer)(?<![A-Za-z0-9_].earer)\s+)(?P<body>[A-Za-z0-9_.~+/=-]+)",
        8,
        True,
    ),
    _p(
        "openai",
        r"(?P<prefix>sk-(?<![A-Za-z0-9_]sk-)(?:proj-|svcacct-|admin-)?)(?P<body>[A-Za-z0-9_-]+)",
        16,
        True,
    ),
    _p("github", r"(?P<prefix>gh[oprsu]_(?<![A-Za-z0-9_]gh._))(?P<body>[A-Za-z0-9]+)", 20),
    _p(
        "github-pat",
        r"(?P<prefix>github_pat_(?<![A-Za-z0-9_]github_pat_))(?P<body>[A-Za-z0-9_]+)",
        20,
    ),
    _p("slack", r"(?P<prefix>xox[abprs]-(?<![A-Za-z0-9_]xox.-))(?P<body>[A-Za-z0-9-]+)", 10),
    _p("aws", r"(?P<prefix>A[KS]IA(?<![A-Za-z0-9_]A.IA))(?P<body>[0-9A-Z]{16})\b", 16),
    _p("google", r"(?P<prefix>AIza(?<![A-Za-z0-9_]AIza))(?P<body>[0-9A-Za-z_-]{35})", 35),
    # The password in a URL: https://user:PASSWORD@host (base_url appears in errors).
    _p("url-password", r"(?P<prefix>://[^/\s:@\[\]]+:)(?P<body>[^/\s@\[\]]+)(?=@)", 1),
)
# header.payload.signature; the run includes dots and is split afterwards.
_JWT = re.compile(r"eyJ(?<![A-Za-z0-9_]eyJ)[A-Za-z0-9_.-]+")


def _token(pattern: TokenPattern) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        body = match.group("body")
        if len(body) < pattern.min_length or (
            pattern.needs_digit and not any(c.isdigit() for c in body)
        ):
            return match.group(0)
        return match.group("prefix") + MARKER

    return replace


def _jwt(match: re.Match[str]) -> str:
    run = match.group(0)
    token = run.rstrip(".")  # a sentence's full stop is not part of the token
    parts = token.split(".")
    if len(parts) != 3 or len(parts[0]) < 8 or len(parts[1]) < 4:
        return run
    return MARKER + run[len(token) :]


_REPLACERS = tuple((p, _token(p)) for p in TOKEN_PATTERNS)
_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]{0,40}PRIVATE KEY-----")


def _redact_pem(text: str) -> str:
    """Replace the body of every PEM private-key block; an unterminated one to the end."""
    if "PRIVATE KEY-----" not in text:
        return text
    out: list[str] = []
    pos = 0
    while True:
        begin = _PEM_BEGIN.search(text, pos)
        if begin is None:
            break
        out.append(text[pos : begin.end()])
        out.append(MARKER)
        end_at = text.find("-----END ", begin.end())
        while end_at >= 0 and not _PEM_END.match(text, end_at):
            end_at = text.find("-----END ", end_at + 1)
        if end_at < 0:  # cut off: the rest is key material
            return "".join(out)
        pos = end_at
    out.append(text[pos:])
    return "".join(out)


def token_shapes(text: str) -> list[str]:
    """The names of the token shapes in ``text`` (``openai``, ``jwt``, ``private-key``, ...),
    by the same rules as redaction: long-term memory rejects a text that has any,
    rather than storing it masked (harvey.memory.scrub)."""
    found = [p.name for p, replace in _REPLACERS if p.regex.sub(replace, text) != text]
    if _JWT.sub(_jwt, text) != text:
        found.append("jwt")
    if _redact_pem(text) != text:
        found.append("private-key")
    return found


class Redactor:
    """Replaces configured secrets and token-shaped strings with ``MARKER``.

    ``redact`` is idempotent, never grows a secret back, and returns text
    without secrets unchanged (the property tests in tests/test_redact.py).
    """

    def __init__(self, secrets: Iterable[str] = (), *, tokens: bool = True) -> None:
        unique = {s.strip() for s in secrets if s and len(s.strip()) >= MIN_SECRET_LENGTH}
        # A value inside the marker is not a secret, and would make redaction loop.
        unique = {s for s in unique if s not in MARKER}
        # Longest first: a key that contains another key is replaced whole.
        self.secrets: tuple[str, ...] = tuple(sorted(unique, key=lambda s: (-len(s), s)))
        self.tokens = tokens

    def __repr__(self) -> str:  # never the secrets themselves
        return f"Redactor({len(self.secrets)} secrets, tokens={self.tokens})"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> Redactor:
        env = os.environ if env is None else env
        return cls([*secret_env_values(env), *extra])

    def redact(self, text: str) -> str:
        """``text`` without secrets. A second pass runs only when the first changed
        something, so that no replacement can leave a match behind (idempotence)."""
        if not text:
            return text
        for _ in range(3):
            cleaned = self._pass(text)
            if cleaned == text:
                break
            text = cleaned
        return text

    def _pass(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, MARKER)
        if not self.tokens:
            return text
        for pattern, replace in _REPLACERS:
            text = pattern.regex.sub(replace, text)
        text = _JWT.sub(_jwt, text)
        return _redact_pem(text)

    def redact_data(self, value: Any) -> Any:
        """Redact every string inside JSON-like data (tool-call arguments).

        Without recursion: a server's tool call can nest its arguments as deep as the
        JSON decoder allows, and a recursive copy would then die of ``RecursionError``
        a few frames further down than the decoder did."""
        if not isinstance(value, dict | list | tuple):
            return self.redact(value) if isinstance(value, str) else value
        root: list[Any] = [None]
        # (source container, the copy to fill, the key or index in the copy)
        stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
        while stack:
            source, parent, slot = stack.pop()
            if isinstance(source, dict):
                copy: Any = dict.fromkeys(source)
                stack.extend((v, copy, k) for k, v in source.items())
            elif isinstance(source, list | tuple):
                copy = [None] * len(source)
                stack.extend((v, copy, i) for i, v in enumerate(source))
            else:
                copy = self.redact(source) if isinstance(source, str) else source
            parent[slot] = copy
        return root[0]


def secret_env_values(env: Mapping[str, str]) -> list[str]:
    """Values of the environment variables whose names mark them as secrets."""
    return [
        value
        for name, value in env.items()
        if is_secret_env_name(name) and len(value.strip()) >= MIN_SECRET_LENGTH
    ]


class RedactingFilter(logging.Filter):
    """Redacts a log record's message and traceback before any handler formats it."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact(record.getMessage())
        record.args = None
        if record.exc_info and not record.exc_text:
            text = "".join(traceback.format_exception(*record.exc_info))
            record.exc_text = redact(text.rstrip("\n"))
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


_lock = threading.Lock()
_active: Redactor | None = None


def install(redactor: Redactor) -> Redactor:
    """Make ``redactor`` the process-wide one (the CLI does this once settings are loaded).

    Log output is covered too: warnings and ``log.exception`` tracebacks reach
    stderr through Python's last-resort handler (Harvey configures no other),
    and a tool that crashed on a secret would print it there.
    """
    global _active
    with _lock:
        _active = redactor
    handlers = [logging.lastResort, *logging.getLogger().handlers]
    for handler in handlers:
        if handler is not None and not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
    return redactor


def active() -> Redactor:
    """The installed redactor, or one built from the environment on first use."""
    global _active
    with _lock:
        if _active is None:
            _active = Redactor.from_env()
        return _active


def reset() -> None:
    """Forget the installed redactor (tests; the next ``active()`` rebuilds from env)."""
    global _active
    with _lock:
        _active = None


def redact(text: str) -> str:
    """``active().redact(text)``: the one call the boundaries make."""
    return active().redact(text)


def redact_data(value: Any) -> Any:
    """``active().redact_data(value)``: every string inside JSON-like data."""
    return active().redact_data(value)


def debug_enabled() -> bool:
    """``HARVEY_DEBUG`` set (and not ``0``): the front ends then print tracebacks too."""
    return os.environ.get("HARVEY_DEBUG", "") not in ("", "0")


def redacted_traceback(exc: BaseException) -> str:
    """The whole traceback of ``exc``, redacted (one once printed an api_key), without
    the final newline: what both front ends print for a bug or under ``HARVEY_DEBUG``."""
    return redact("".join(traceback.format_exception(exc))).rstrip("\n")
