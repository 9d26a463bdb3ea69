"""Escaping for Harvey's Fountain files: any text in, exact text back, no false structure.

User and model text can contain anything, and Fountain gives meaning to line
starts (``INT.``, ``.``, ``!``, ``@``, ``#``, ``=``, ``~``, ``>``, ``(``, all-caps
lines), to ``[[ ]]`` and ``/* */`` anywhere in a line, to blank lines and to
trailing whitespace. One rule covers all of it (documented in
``docs/FOUNTAIN_FORMAT.md``, "Escaping"):

* a backslash makes the next character literal (``\\\\`` is a backslash),
  except ``\\uXXXX``, which is the code point XXXX (used for control and
  line-separator characters, which must not split a line);
* the second character of ``[[``, ``]]``, ``/*`` and ``*/`` is escaped;
* a line whose start Fountain would read as structure gets its first character
  escaped, so it starts with ``\\``, which no Fountain element does;
* a line that ends in whitespace gets a lone ``\\`` appended (a lone trailing
  backslash means nothing and is dropped when reading);
* inside dialogue an empty line is written as two spaces (Fountain's own rule),
  or as a lone ``\\`` when it is the block's first line.

The fields inside notes use the same escape for their separators (``—``,
``,``, ``(``, ``)``), so a note splits back into exactly its fields.
"""

from __future__ import annotations

import re
import unicodedata

ESC = "\\"
_PAIRS = frozenset({"[[", "]]", "/*", "*/"})
_START_CHARS = frozenset("!.@#>=~(")
HEADING_LIKE = re.compile(r"(?i)^(?:INT\./EXT|INT/EXT|I/E|INT|EXT|EST)(?:\.|\s)|^FADE IN:")
_LOWER_ASCII = re.compile(r"[a-z]")
_HEX = frozenset("0123456789abcdefABCDEF")
BLANK_IN_DIALOGUE = "  "
# What _needs_codepoint accepts, as one class: Cc but the tab, Cs, Zl, Zp.
_CODEPOINT = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def _needs_codepoint(c: str) -> bool:
    """Characters that Python, editors or readers treat as line breaks or control."""
    if c == "\t":
        return False
    return unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp")


def _escape_char(c: str) -> str:
    if c == "u":  # "\u" is reserved for code points
        return "\\u0075"
    return ESC + c


def _plain(text: str, extra: str) -> bool:
    """True when :func:`encode_inline` would change nothing (most text): checked at C
    speed, so a 10 MB session is not walked a character at a time in Python."""
    return (
        ESC not in text
        and not any(pair in text for pair in _PAIRS)
        and not any(c in text for c in extra)
        and not _CODEPOINT.search(text)
    )


def encode_inline(text: str, extra: str = "") -> str:
    """Escape backslashes, control characters, note/boneyard pairs and ``extra`` characters."""
    if _plain(text, extra):
        return text
    out: list[str] = []
    prev = ""
    for c in text:
        if c == ESC:
            out.append(ESC + ESC)
        elif _needs_codepoint(c):
            out.append(f"\\u{ord(c):04X}")
        elif prev + c in _PAIRS or c in extra:
            out.append(_escape_char(c))
        else:
            out.append(c)
        prev = c
    return "".join(out)


def decode_inline(raw: str) -> str:
    """Undo :func:`encode_inline` (and the line-start and trailing marks)."""
    out: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        j = raw.find(ESC, i)  # copy the plain run up to the next backslash whole
        if j < 0:
            out.append(raw[i:])
            break
        out.append(raw[i:j])
        if j + 1 >= n:  # lone trailing backslash: the end-of-line mark
            break
        nxt = raw[j + 1]
        if nxt == "u" and j + 6 <= n and all(h in _HEX for h in raw[j + 2 : j + 6]):
            out.append(chr(int(raw[j + 2 : j + 6], 16)))
            i = j + 6
            continue
        out.append(nxt)
        i = j + 2
    return "".join(out)


def looks_like_structure(line: str) -> bool:
    """True when a Fountain reader could take ``line`` (unescaped) for an element."""
    first = line[0]
    if first.isspace() or first in _START_CHARS:
        return True
    if HEADING_LIKE.match(line):
        return True
    # Character cues and transitions: all-caps lines (no lowercase letters at all).
    return not _LOWER_ASCII.search(line) and any(ch.isupper() for ch in line)


def encode_line(line: str, first: bool = False) -> str:
    """One line of free text, safe as a Fountain dialogue or action line."""
    if line == "":
        return ESC if first else BLANK_IN_DIALOGUE
    body = encode_inline(line)
    if not body.startswith(ESC) and looks_like_structure(line):
        body = _escape_char(line[0]) + body[1:]
    if body[-1].isspace():
        body += ESC
    return body


def encode_block(text: str) -> list[str]:
    """Free text as dialogue lines: never empty, never structure, exact on decode."""
    return [encode_line(line, first=(i == 0)) for i, line in enumerate(text.split("\n"))]


def decode_line(raw: str) -> str:
    """One dialogue/action line back to its text (whitespace-only means empty)."""
    if raw.strip() == "":
        return ""
    return decode_inline(raw)


def decode_block(lines: list[str]) -> str:
    return "\n".join(decode_line(line) for line in lines)


def encode_field(text: str, separators: str = "—") -> str:
    """A note field: one line, its separators escaped so the note splits back exactly."""
    return encode_inline(text, extra=separators)


def format_note(body: str) -> str:
    """``[[body]]``, keeping ``]]`` from forming where the body ends in ``]``."""
    if body.endswith("]"):
        slashes = len(body[:-1]) - len(body[:-1].rstrip(ESC))
        if slashes % 2 == 0:  # the final "]" is not already escaped
            body = body[:-1] + "\\]"
    return f"[[{body}]]"


def split_unescaped(raw: str, sep: str, maxsplit: int = -1) -> list[str]:
    """Split raw (still escaped) text at occurrences of ``sep`` not made literal by ``\\``."""
    parts: list[str] = []
    start = i = 0
    while i < len(raw):
        if raw[i] == ESC:
            i += 2
            continue
        if raw.startswith(sep, i) and (maxsplit < 0 or len(parts) < maxsplit):
            parts.append(raw[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    parts.append(raw[start:])
    return parts


def is_note_line(raw: str) -> bool:
    """A whole line that is one of our notes (text never produces an unescaped ``[[``)."""
    return raw.startswith("[[") and raw.endswith("]]") and len(raw) >= 4


def character_cue(name: str, fallback: str, reserved: frozenset[str] = frozenset()) -> str:
    """A Fountain character cue for a person or model name (upper-cased, sanitised).

    The cue is forced with ``@`` when it would not otherwise read as a character
    (it does not start with A-Z, or looks like a heading or transition). A name
    that collides with ``reserved`` gets ``fallback`` appended, so HARVEY, SHELL
    and the user are never confused with a model.
    """
    upper = name.upper()
    kept = "".join(
        c if (c.isalnum() and not c.islower()) or c in " .-_':+/,&" else "_" for c in upper
    )
    cue = " ".join(kept.split()) or fallback
    if cue in reserved:
        cue = f"{cue} {fallback}"
    if not re.match(r"[A-Z]", cue) or HEADING_LIKE.match(cue) or cue.endswith("TO:"):
        cue = "@" + cue
    return cue


def cue_name(raw_cue: str) -> str:
    """The character's name from a cue line (drops the ``@`` that forces it)."""
    return raw_cue[1:] if raw_cue.startswith("@") else raw_cue


# -- a status as one short line of a note ------------------------------------------

#: A status line longer than this is shortened; statuses are for scanning, not reading.
STATUS_LIMIT = 200
ELLIPSIS = "…"


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, marked with an ellipsis when cut."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + ELLIPSIS


def first_line_status(status: str) -> str:
    """Normalise a caller's status to one line: ``ok`` (``ok, 5 quotes``, ``ok (split …)``),
    ``skipped: …`` or ``error: ...``."""
    lines = status.strip().splitlines()
    line = lines[0].strip() if lines else ""
    if line == "ok":
        return "ok"
    if line.startswith(("ok,", "ok (", "skipped:")):  # an analysis chunk's fuller status
        return shorten(line, STATUS_LIMIT)
    if not line.startswith("error:"):
        line = f"error: {line}" if line else "error:"
    return shorten(line, STATUS_LIMIT)
