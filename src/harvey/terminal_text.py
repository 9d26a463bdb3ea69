"""The one sanitiser at the terminal: text from outside Harvey never drives the terminal.

A model reply, a tool's output, a file's contents or name, a stored row, a
memory proposal or a server's error body may carry escape sequences: OSC 52
writes the user's clipboard, OSC 0 retitles the window, CSI moves the cursor
or conceals what follows (so a person approves text they cannot see), and a
carriage return or a bidi override rewrites a line already shown. Every byte
that reaches the terminal from outside Harvey passes :func:`for_terminal`,
which keeps newline and tab and makes every other control visible in caret
notation (``ESC`` → ``^[``, ``BEL`` → ``^G``, ``DEL`` → ``^?``), C1 controls
as ``<U+009B>``, and bidi and line-separator controls the same way. Printable
text, emoji and every script pass unchanged.
"""

from __future__ import annotations

import re

# C0 (but tab and newline), DEL, C1, and the format characters that reorder or
# hide text (bidi embeddings, overrides, isolates, marks), plus line/paragraph
# separators, which some terminals treat as newlines.
_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f\x80-\x9f"
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufff9-\ufffb]"
)


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if code < 0x20:
        return "^" + chr(code + 0x40)
    if code == 0x7F:
        return "^?"
    return f"<U+{code:04X}>"


def for_terminal(text: str) -> str:
    """``text`` safe to print: every control but newline and tab shown, not obeyed.

    ``\\r\\n`` (a Windows line end) becomes ``\\n``; a lone ``\\r``, which would
    let later text overwrite a line, is shown as ``^M``.
    """
    if not text:
        return text
    text = text.replace("\r\n", "\n")
    return _CONTROL.sub(_visible, text)


def has_controls(text: str) -> bool:
    """True when :func:`for_terminal` would change ``text`` (beyond CRLF line ends)."""
    return bool(_CONTROL.search(text.replace("\r\n", "\n")))
