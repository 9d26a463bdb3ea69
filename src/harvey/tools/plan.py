"""FilePlanWriter: a markdown copy of the todo list a person can open in an editor.

The file lives in ``<workspace>/.harvey/plans/`` when the workspace is a git
repository (so the plan can be tracked with the code), else in
``HARVEY_HOME/plans/``. Its name, ``<timestamp>-<session_id[:8]>.md``, is
fixed when the session starts, and the folder is created then too: a folder
that cannot be created is reported at start-up, not on the first write.

The folder is reached through ``harvey.ownfiles.nofollow`` on every read and write:
from the workspace (or ``HARVEY_HOME``) without following a link, so a
``.harvey/plans`` that a cloned repository made a link to a folder a shell
sources is refused (``UnsafePath``, a ``WorkspaceError``) and never written.

Every write regenerates the title, the ``session:``/``updated:`` lines and the
``## Task List`` section; any other ``## `` section a person or the model
added is kept where it was.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from harvey.errors import WorkspaceError
from harvey.ownfiles.nofollow import PRIVATE_FILE, Location
from harvey.session.todos import Todo
from harvey.tools.offload import sanitize_id

TITLE = "# Execution Plan"
TASK_HEADING = "## Task List"
MARKERS = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]", "cancelled": "[-]"}


def plan_location(workspace: Path, harvey_home: Path) -> Location:
    """Where plans go: in the repository when the workspace is one, else in HARVEY_HOME."""
    if (Path(workspace) / ".git").exists():
        return Location(Path(workspace), (".harvey", "plans"))
    return Location(Path(harvey_home), ("plans",), home=True)


def plan_directory(workspace: Path, harvey_home: Path) -> Path:
    return plan_location(workspace, harvey_home).path


def render_tasks(todos: list[Todo]) -> list[str]:
    lines = []
    for todo in todos:
        text = " ".join(todo.content.split())  # one line per task, whatever the model sent
        suffix = " (cancelled)" if todo.status == "cancelled" else ""
        lines.append(f"- {MARKERS.get(todo.status, '[ ]')} {text}{suffix}")
    return lines


def split_sections(text: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """Split markdown into the preamble and ``(heading, body lines)`` per ``## `` section."""
    preamble: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    in_fence = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        if not in_fence and line.startswith("## "):
            sections.append((line.rstrip(), []))
        elif sections:
            sections[-1][1].append(line)
        else:
            preamble.append(line)
    return preamble, sections


class FilePlanWriter:
    """Implements ``PlanWriter``; ``path`` and ``read()`` serve the REPL's /plan commands."""

    def __init__(
        self,
        workspace: Path | str,
        session_id: str,
        harvey_home: Path | str,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self.session_id = session_id
        self._now = now or (lambda: datetime.now().astimezone())
        self._where = plan_location(Path(workspace), Path(harvey_home))
        try:
            self._where.open(create=True).close()  # 0700: plans are session data too
        except OSError as exc:
            raise WorkspaceError(
                f"cannot create the plan folder {self._where.path}: {exc.strerror or exc}"
            ) from exc
        stamp = self._now().strftime("%Y%m%d-%H%M%S")
        self._path = self._where.path / f"{stamp}-{sanitize_id(session_id)[:8]}.md"

    @property
    def path(self) -> Path:
        return self._path

    def read(self) -> str:
        """The plan file's text, or "" before the first write."""
        try:
            with self._where.open(create=False) as folder:
                data = folder.read_bytes(self._path.name)
        except FileNotFoundError:
            return ""
        except OSError as exc:
            raise WorkspaceError(f"cannot read the plan file {self._path}: {exc}") from exc
        return "" if data is None else data.decode("utf-8", errors="replace")

    def render(self, todos: list[Todo], existing: str = "") -> str:
        preamble, sections = split_sections(existing)
        extra_preamble = [
            line
            for line in preamble
            if line.strip()
            and line.strip() != TITLE
            and not line.startswith(("session:", "updated:"))
        ]
        head = [TITLE, "", f"session: {self.session_id}"]
        head.append(f"updated: {self._now().isoformat(timespec='seconds')}")
        if extra_preamble:
            head += ["", *extra_preamble]
        task_section = [TASK_HEADING, "", *render_tasks(todos)]
        body: list[list[str]] = []
        placed = False
        for heading, lines in sections:
            if heading == TASK_HEADING:
                if not placed:
                    body.append(task_section)
                    placed = True
                continue
            while lines and not lines[-1].strip():
                lines.pop()
            body.append([heading, *lines])
        if not placed:
            body.insert(0, task_section)
        blocks = ["\n".join(head), *("\n".join(block) for block in body)]
        return "\n\n".join(blocks) + "\n"

    def write(self, todos: list[Todo]) -> None:
        text = self.render(todos, self.read())
        try:
            with self._where.open(create=True) as folder:
                folder.replace(self._path.name, text.encode("utf-8"), mode=PRIVATE_FILE)
        except OSError as exc:
            raise WorkspaceError(f"cannot write the plan file {self._path}: {exc}") from exc
