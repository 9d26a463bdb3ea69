"""Writes ask: the question a person sees before the model changes a file, and the gate.

A model steered by a hostile file can write a script and then run it, so no
tool changes a workspace file without the person's yes. The tool describes the
write (``describe_write``), hands it to ``ToolContext.approve_write`` together
with a function that performs it, and the ``WriteGate`` behind that field asks
the UI, remembers "all" for the rest of the session, performs the write only
when allowed and reports every decision (``ok``, ``skipped``, ``error: …``) so
the agent can record it in the turn's scene.

Harvey's own state under ``.harvey/`` (plan files, offloaded tool output,
session recordings) is written by Harvey itself, not by a model-chosen tool
call, and does not pass through the gate. A *model's* write to ``harvey.yaml``,
``HARVEY.md``, ``AGENTS.md`` (at any depth), ``.harvey/`` or ``.git/`` is another
matter: it would change what later sessions allow, tell the model, or run (a git
hook), so neither
"all" nor ``--allow-writes`` covers it; only a yes to that one write does.

No key is painted on the screen by the question either: the preview's path, diff
and head are redacted (the file written is the model's content as approved,
unchanged), and the current text of a secret file or of a hard link (whose
other name may be a file outside the workspace) is never read for a diff.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harvey.errors import Cancelled, ToolError
from harvey.redact import redact
from harvey.ui import AgentUI, WriteChoice, WriteRequest, printable
from harvey.workspace import secret_files

#: A current file larger than this is not read to compute a diff.
MAX_COMPARE_BYTES = 1024 * 1024
#: At most this many diff lines are shown; the rest is counted.
MAX_DIFF_LINES = 200
#: A new file shows this many of its first lines.
NEW_FILE_HEAD_LINES = 20
#: Any shown line longer than this is cut (a minified file is one huge line).
MAX_LINE_CHARS = 240
CONTEXT_LINES = 3

#: Files that steer Harvey itself or run code later: a write there is never approved by
#: "all" or --allow-writes, only by a yes to that one write in the REPL. Matched at any
#: depth (a subfolder's guide is read when the model reads files there) and whatever the
#: case (on a case-insensitive disk ``agents.md`` is ``AGENTS.md``).
PROTECTED_NAMES = frozenset({"harvey.yaml", "harvey.md", "agents.md"})
PROTECTED_FOLDERS = frozenset({".git", ".harvey"})

#: Performs the approved write and returns the tool's result; raises ToolError on failure.
WriteAction = Callable[[], str]
#: ``(path, status)``: how each decision reaches the session recording.
WriteRecorder = Callable[[str, str], None]


@dataclass(frozen=True)
class WritePreview:
    """What the person is shown: a headline, the diff or first lines, and what was cut."""

    title: str
    lines: list[str]
    cut: str | None = None

    def text(self) -> str:
        parts = [self.title, *self.lines]
        if self.cut:
            parts.append(self.cut)
        return "\n".join(parts)


def describe_write(path: Path, shown: str, content: str) -> WriteRequest:
    """A WriteRequest for ``content`` going to ``path``, with the current text when comparable."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return WriteRequest(shown, content)
    except OSError as exc:
        raise ToolError(f"cannot stat {shown}: {exc.strerror or exc}") from exc
    size = info.st_size
    old: str | None = None
    unread = secret_files.active().matches(shown) or info.st_nlink > 1
    if path.is_file() and size <= MAX_COMPARE_BYTES and not unread:
        try:
            data = path.read_bytes()
        except OSError:
            data = b"\x00"  # unreadable: describe it by size only
        if b"\x00" not in data:
            old = data.decode("utf-8", errors="replace")
    return WriteRequest(shown, content, old=old, old_size=size)


def _shown_line(line: str) -> str:
    line = printable(line)
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + "…"


def _size(n: int) -> str:
    return "1 byte" if n == 1 else f"{n:,} bytes"


def _lines(text: str) -> list[str]:
    """Lines split on newlines only, so a stray CR or form feed stays visible in its line."""
    return text.split("\n") if text else []


def write_preview(request: WriteRequest) -> WritePreview:
    """The question's content: a unified diff for an existing file, the head of a new one.

    Texts are redacted whole before they are split into lines (a private-key block spans
    lines) and before long lines are cut (a cut token would no longer look like one)."""
    path = printable(redact(request.path))
    if request.diff is not None:
        return _edit_preview(request, path)
    new_size = len(request.content.encode("utf-8", errors="surrogatepass"))
    new_lines = _lines(redact(request.content))
    if request.is_new:
        text_lines = new_lines[:-1] if new_lines and new_lines[-1] == "" else new_lines
        real = _lines(request.content)  # the count is the file's, whatever redaction folded
        count = len(real) - (1 if real and real[-1] == "" else 0)  # "a\nb\n" is two lines
        title = f"Create {path} (new file, {_size(new_size)}, {count} line{'s' * (count != 1)})"
        head = [_shown_line(line) for line in text_lines[:NEW_FILE_HEAD_LINES]]
        rest = len(text_lines) - len(head)
        cut = f"[… {rest} more line{'s' * (rest != 1)} not shown]" if rest > 0 else None
        return WritePreview(title, head, cut)
    old_size = request.old_size or 0
    title = f"Overwrite {path} ({_size(old_size)} → {_size(new_size)})"
    if request.old is None:
        if secret_files.active().matches(request.path):
            why = "a secret file: its content is never shown"
        elif old_size > MAX_COMPARE_BYTES:
            why = "too large to compare"
        else:
            why = "not a text file, or a hard link"
        return WritePreview(title, [], f"[the current file is {why}; no diff shown]")
    diff = list(
        difflib.unified_diff(
            _lines(redact(request.old)),
            new_lines,
            f"a/{redact(request.path)}",
            f"b/{redact(request.path)}",
            n=CONTEXT_LINES,
            lineterm="",
        )
    )
    if not diff:
        return WritePreview(title, [], "[no change: the new content is identical]")
    shown = [_shown_line(line) for line in diff[:MAX_DIFF_LINES]]
    rest = len(diff) - len(shown)
    cut = f"[diff cut: {rest} more line{'s' * (rest != 1)} not shown]" if rest > 0 else None
    return WritePreview(title, shown, cut)


def _edit_preview(request: WriteRequest, path: str) -> WritePreview:
    """An ``edit_file`` change: the changed lines with their context (already redacted)."""
    n = request.changes
    sizes = f"{_size(request.old_size or 0)} → {_size(request.new_size or 0)}"
    title = f"Edit {path} ({n} change{'s' * (n != 1)}, {sizes})"
    diff = list(request.diff or ())
    shown = [_shown_line(line) for line in diff[:MAX_DIFF_LINES]]
    rest = len(diff) - len(shown)
    cut = f"[diff cut: {rest} more line{'s' * (rest != 1)} not shown]" if rest > 0 else None
    return WritePreview(title, shown, cut)


def is_protected(shown: str) -> bool:
    """Whether a workspace-relative path is Harvey's configuration, instructions or state
    (``harvey.yaml``, ``HARVEY.md``, ``AGENTS.md`` at any depth, ``.harvey/``), or inside a
    ``.git`` (a hook written there runs at the next commit)."""
    parts = [unicodedata.normalize("NFKC", p).casefold() for p in Path(shown).parts]
    return bool(parts) and (
        any(p in PROTECTED_FOLDERS for p in parts[:-1])
        or parts[-1] in PROTECTED_FOLDERS
        or parts[-1] in PROTECTED_NAMES
    )


def refusal(request: WriteRequest, interactive: bool) -> str:
    """The tool result for a write that was not allowed: why, and how to allow it."""
    path = request.path
    if interactive:
        return f"error: the user declined the write; {path} was not written"
    return (
        f"error: write refused: {path} was not written. Writes need the user's approval and "
        "this run cannot ask; the user can allow them by running harvey run --allow-writes "
        "(or approve them in the interactive harvey REPL)"
    )


class WriteGate:
    """The one place a model's write is asked about, performed and reported.

    ``approve_all`` lasts as long as the gate, which the agent keeps for the
    session: answering "all" once approves every later write of the session.
    """

    def __init__(self, ui: AgentUI, record: WriteRecorder | None = None) -> None:
        self.ui = ui
        self.record = record
        self.approve_all = False

    def for_turn(self, record: WriteRecorder | None) -> Callable[[WriteRequest, WriteAction], str]:
        """This gate (its session-long "all"), reporting each decision to one turn's ``record``."""
        return lambda request, write: self._decide(request, write, record)

    def __call__(self, request: WriteRequest, write: WriteAction) -> str:
        return self._decide(request, write, self.record)

    def _decide(
        self, request: WriteRequest, write: WriteAction, record: WriteRecorder | None
    ) -> str:
        def report(path: str, status: str) -> None:
            """Every decision, for the turn's ``[[write:]]`` note: redacted here as well as in
            the note's writer, so no consumer of the record sees a token-shaped path."""
            if record is not None:
                record(redact(path), redact(status))

        protected = is_protected(request.path)
        if protected and not self.ui.interactive:
            report(request.path, "skipped")
            return (
                f"error: write refused: {request.path} configures or instructs Harvey (or is "
                "inside .git), so only a person in the interactive REPL can approve it"
            )
        if self.approve_all and not protected:
            choice = WriteChoice.YES
        else:
            choice = self.ui.approve_write(request)
        if protected and choice is WriteChoice.ALL:
            choice = WriteChoice.YES  # "all" never covers these files
        if choice is WriteChoice.QUIT:
            raise Cancelled(f"cancelled: {request.path} was not written")
        if choice is WriteChoice.NO:
            report(request.path, "skipped")
            return refusal(request, self.ui.interactive)
        if choice is WriteChoice.ALL:
            self.approve_all = True
        try:
            result = write()
        except Exception as exc:  # broad on purpose: any failure is reported, then re-raised
            report(request.path, f"error: {exc}")
            raise
        report(request.path, "ok")
        return result
