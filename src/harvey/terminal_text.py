"""The one sanitiser at the terminal: text from outside Harvey never drives the terminal.

A model reply, a tool's output, a file's contents or name, a stored row, a
memory proposal or a server's error body may carry escape sequences: OSC 52
writes the user's clipboard, OSC 0 retitles the window, OSC 8 hides a link's
address, CSI moves the cursor or conceals what follows (so a person approves
text they cannot see), and a carriage return or a bidi override rewrites a
line already shown. Every character that reaches the terminal from outside
Harvey passes :func:`for_terminal`, which keeps newline and tab and shows every
other control instead of obeying it: C0 in caret notation (``ESC`` → ``^[``,
``BEL`` → ``^G``, ``DEL`` → ``^?``, as ``cat -v`` does), everything else as
``<U+009B>``. Each character is replaced on its own, so a sequence split across
two writes (a streamed reply) is as harmless as a whole one. Printable text,
emoji and every script pass unchanged.

Three ways text reaches the terminal, one function behind each:

- the command line's ``sys.stdout`` and ``sys.stderr`` are :class:`TerminalStream`
  guards for as long as a command runs (``guarded_stdio``, installed by
  ``cli.errors.handle_errors``), so every ``click.echo``, ``print``, warning and
  error line is sanitised, whoever wrote it;
- Harvey's own renderers, which must emit escape sequences (rich's colours and
  progress bars, prompt_toolkit), write to the stream under the guard
  (:func:`unguarded`) through :func:`safe_console`, a rich console that
  sanitises every piece of text it is given and never parses it as markup;
- ``harvey run --raw`` writes the reply to the unguarded stdout, and only when
  that is not a terminal.
"""

from __future__ import annotations

import contextlib
import functools
import io
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any, TextIO, TypeVar, cast

if TYPE_CHECKING:
    from rich.console import Console
    from rich.segment import Segment
    from rich.text import Text

# What is shown rather than obeyed: C0 but tab and newline, DEL, C1, lone surrogates
# (undecodable bytes of a file name), the line and paragraph separators some terminals
# treat as newlines, and the format characters (Unicode category Cf) that reorder text
# (bidi embeddings, overrides, isolates, marks) or hide it (zero-width space, word
# joiner, invisible operators, BOM, interlinear annotations, the tag characters that
# spell whole hidden ASCII sentences a model reads). Kept, though Cf: the soft hyphen,
# the zero-width (non-)joiner (emoji sequences, Persian and Indic scripts) and the
# prepended concatenation marks, which are visible signs.
_SHOWN = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff"
    "\u061c\u180e\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f"
    "\ufeff\ufff9-\ufffb"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f"
)
_CONTROL = re.compile(f"[{_SHOWN}]")
_CONTROL_ONE_LINE = re.compile(f"[\n{_SHOWN}]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return "^" + chr(code + 0x40)
    if code == 0x7F:
        return "^?"
    return f"<U+{code:04X}>"


def for_terminal(text: str, *, one_line: bool = False) -> str:
    """``text`` safe to print: every control but newline and tab shown, not obeyed.

    ``\\r\\n`` (a Windows line end) becomes ``\\n``; a lone ``\\r``, which would
    let later text overwrite a line, is shown as ``^M``. ``one_line`` shows the
    newline too (``^J``), and every ``\\r``: for a value that must stay on its
    line, such as a path in a question.
    """
    if not text:
        return text
    if one_line:
        return _CONTROL_ONE_LINE.sub(_visible, text)
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return _CONTROL.sub(_visible, text)


# Whole escape sequences: CSI (ESC [ or C1 CSI, parameters, one final byte), OSC, DCS, APC,
# PM and SOS strings (to BEL or ST, or the end), and the two-character ESC forms.
_SEQUENCE = re.compile(
    "(?:\x1b\\[|\x9b)[0-?]*[ -/]*[@-~]?"
    "|(?:\x1b[\\]PX^_]|[\x90\x98\x9d-\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\\\|\x9c)?"
    "|\x1b[ -~]?"
)


def remove_controls(text: str) -> str:
    """``text`` without its escape sequences and the characters :func:`for_terminal` shows:
    what is left when they are taken out, to see what they split (a key in pieces)."""
    return _CONTROL.sub("", _SEQUENCE.sub("", text.replace("\r\n", "\n")))


def has_controls(text: str) -> bool:
    """True when :func:`for_terminal` would change ``text`` (beyond CRLF line ends)."""
    return bool(_CONTROL.search(text.replace("\r\n", "\n")))


class TerminalStream(io.TextIOBase):
    """A text stream that writes everything through :func:`for_terminal` to ``raw``.

    It has no ``buffer``: a writer that looks for the binary stream under a text
    stream (click does, for a misconfigured encoding) finds none and writes text
    here. ``isatty``, ``fileno`` and ``encoding`` are the raw stream's, so what
    asks "is this a terminal?" gets the true answer.
    """

    def __init__(self, raw: TextIO) -> None:
        super().__init__()
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(for_terminal(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def writable(self) -> bool:
        return True

    def flush(self) -> None:
        self.raw.flush()

    def isatty(self) -> bool:
        return self.raw.isatty()

    def fileno(self) -> int:
        return self.raw.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.raw, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str:  # type: ignore[override]
        return getattr(self.raw, "errors", None) or "strict"

    def close(self) -> None:  # the raw stream belongs to whoever made it: only flushed
        with contextlib.suppress(Exception):
            self.flush()


def guard(stream: TextIO) -> TextIO:
    """``stream`` behind a :class:`TerminalStream` (once: a guard is not guarded again)."""
    if isinstance(stream, TerminalStream):
        return stream
    return cast(TextIO, TerminalStream(stream))


def unguarded(stream: TextIO) -> TextIO:
    """The stream under a guard, for Harvey's own escape sequences (``stream`` if none)."""
    return stream.raw if isinstance(stream, TerminalStream) else stream


@contextlib.contextmanager
def guarded_stdio() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` guarded while the block runs, then as they were."""
    saved = sys.stdout, sys.stderr
    if sys.stdout is not None:
        sys.stdout = guard(sys.stdout)
    if sys.stderr is not None:
        sys.stderr = guard(sys.stderr)
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # a closed pipe must not hide the real error
                if stream is not None:
                    stream.flush()
        sys.stdout, sys.stderr = saved


F = TypeVar("F", bound=Callable[..., Any])


def guarded(func: F) -> F:
    """``func`` run under :func:`guarded_stdio` (the command line wraps every command)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with guarded_stdio():
            return func(*args, **kwargs)

    return cast(F, wrapper)


def safe_console(**kwargs: Any) -> Console:
    """A rich console for text from outside: sanitised, never markup, never a link.

    Every string it is given is sanitised before rich reads it (so a BEL shows
    as ``^G`` rather than being dropped, and the layout measures what is shown).

    ``markup``, ``emoji`` and ``highlight`` are off unless asked for, so a string
    such as ``[link=https://x]here[/]`` or ``[conceal]`` prints as it is written;
    Harvey's own styled lines pass ``markup=True`` and escape what they interpolate.
    Whatever reaches the output anyway (a ``Text`` built from a reply, a table
    cell, a code block) is sanitised segment by segment, and links and
    concealment are dropped from every style. Only rich's own control segments
    (cursor moves of a live display) pass as they are. The console writes to the
    stream under a guard, so its colours stay colours.
    """
    for option in ("markup", "emoji", "highlight"):
        kwargs.setdefault(option, False)
    return _safe_console_class()(**kwargs)


@functools.cache
def _safe_console_class() -> type[Console]:
    """The console class, made on first use so importing this module never loads rich."""
    from rich.console import Console
    from rich.segment import Segment
    from rich.style import Style

    no_concealing = Style(conceal=False)

    class SafeConsole(Console):
        @property
        def file(self) -> IO[str]:
            return unguarded(cast(TextIO, super().file))

        @file.setter
        def file(self, new_file: IO[str]) -> None:
            self._file = new_file

        def render_str(self, text: str, **options: Any) -> Text:
            # before rich makes a Text of it, which silently drops BEL, BS and CR
            return super().render_str(for_terminal(text), **options)

        def _render_buffer(self, buffer: Iterable[Segment]) -> str:
            clean: list[Segment] = []
            for segment in buffer:
                text, style, control = segment
                if control:  # rich's own cursor moves and screen controls
                    clean.append(segment)
                    continue
                if style is not None and (style.link or style.conceal):
                    style = style.clear_meta_and_links() + no_concealing
                clean.append(Segment(for_terminal(text), style))
            return str(super()._render_buffer(clean))

    return SafeConsole
