"""Where a session's recording goes, and whether it may be written there at all.

Both composition roots use this — the chat session (``chat/runtime.py``) and the
recorded analysis (``analysis/session.py``) — so the rules about the recordings'
folder live once: ``session.directory`` stays inside the workspace or
``HARVEY_HOME``; a ``.harvey`` that a cloned repository made a link turns the
workspace features off with one warning; a recordings folder that is a link or
someone else's means no recording this session (or a configuration error when
the user named that folder).
"""

from __future__ import annotations

import getpass
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from harvey.config.settings import Paths, SessionSettings, Settings
from harvey.errors import ConfigError, HarveyError
from harvey.ownfiles.nofollow import Location, Refusals, UnsafePath
from harvey.protocols import LLMClient
from harvey.session.recorder import Recorder, recording_order

if TYPE_CHECKING:
    from harvey.session.store import SessionStore

WORKSPACE_FEATURES = "session recording, the plan file, offloaded output and knowledge stores"
DEFAULT_SESSIONS = SessionSettings.model_fields["directory"].default


def default_user_name(settings: Settings) -> str:
    if settings.user:
        return settings.user
    try:
        return os.environ.get("USER") or getpass.getuser() or "user"
    except (KeyError, OSError, ImportError):  # no passwd entry, no pwd module
        return "user"


def note_harvey_dir(workspace: Path, refusals: Refusals) -> None:
    """A workspace whose ``.harvey`` is a link (a cloned repository's): one line for all."""
    problem = Location(workspace, (".harvey",)).problem()
    if problem is not None:
        refusals.note(problem, f"so {WORKSPACE_FEATURES} are off this session")


def session_location(paths: Paths, session: SessionSettings) -> Location:
    """``session.directory`` as a folder under the workspace or ``HARVEY_HOME``, or a ConfigError.

    Relative: under the workspace. Absolute: it must name a folder inside the
    workspace or ``HARVEY_HOME``. ``..`` is refused outright (a walk never
    climbs), and the walk that opens it refuses any link on the way.
    """
    raw = session.directory
    shown = raw if len(raw) <= 80 else raw[:77] + "..."
    where = "recordings stay inside the workspace or HARVEY_HOME"
    if "\x00" in raw or not raw.strip():
        raise ConfigError(f"session.directory {shown!r} is not a folder name ({where})")
    directory = Path(raw)
    if ".." in directory.parts:
        raise ConfigError(f"session.directory {shown!r} climbs out with '..' ({where})")
    if not directory.is_absolute():
        return Location.under(paths.workspace, directory)
    home = Path(os.path.abspath(paths.harvey_home))
    for root, is_home in ((paths.workspace, False), (home, True), (home.resolve(), True)):
        if directory == root or directory.is_relative_to(root):
            return Location.under(root, directory.relative_to(root), home=is_home)
    raise ConfigError(
        f"session.directory {shown!r} is outside the workspace and HARVEY_HOME ({where})"
    )


def recording_files(paths: Paths, settings: Settings) -> list[Path]:
    """Every ``.spmd`` recording of the workspace, oldest first (``harvey memory mine --all``).

    Listed through the same walk the recorder writes through: a recordings
    folder that is a link lists nothing, and only regular files are named.
    """
    try:
        with session_location(paths, settings.session).open(create=False) as folder:
            names = sorted((n for n in folder.names() if n.endswith(".spmd")), key=recording_order)
            return [
                folder.path / n
                for n in names
                if (entry := folder.entry(n)) is not None and stat.S_ISREG(entry.st_mode)
            ]
    except (OSError, HarveyError):
        return []


def open_recorder(
    paths: Paths,
    settings: Settings,
    client: LLMClient,
    refusals: Refusals,
    *,
    user: str,
    continued_from: Path | None = None,
    store: SessionStore | None = None,
    session_id: str = "",
    resumed: bool = False,
) -> Recorder | None:
    """The session file, unless recording is off or its folder is refused.

    ``session.directory`` is checked first (a ConfigError before anything is
    written); ``continued_from`` is the resumed file a new recording names. With
    ``store``, the file is noted as ``session_id``'s, and a ``resumed`` session writes
    into its own file again (``session/recordings.py``).
    """
    if not settings.session.record:
        return None
    sessions = session_location(paths, settings.session)
    if not _may_record(sessions, settings, refusals):
        return None
    if store is not None:
        from harvey.session.recordings import open_recording

        return open_recording(
            sessions, store, session_id, resumed, user=user, model=client.model,
            backend=client.backend, warn=refusals.warn, continued_from=continued_from,
        )  # fmt: skip
    return Recorder.open_in(
        sessions,
        user=user,
        model=client.model,
        backend=client.backend,
        warn=refusals.warn,
        continued_from=continued_from,
    )


def _may_record(sessions: Location, settings: Settings, refusals: Refusals) -> bool:
    """False (after one warning) when the recordings' folder is a link or someone else's.

    The default ``.harvey/sessions`` is the workspace's, which a repository may
    have planted: recording is off for the session. A ``session.directory`` the
    user configured that leads through a link is a configuration error.
    """
    try:
        sessions.open(create=True).close()
    except UnsafePath as exc:
        if settings.session.directory != DEFAULT_SESSIONS:
            raise ConfigError(f"session.directory {settings.session.directory!r}: {exc}") from exc
        refusals.note(exc, "so session recording is off this session")
        return False
    except OSError:
        pass  # the recorder itself warns once and records nothing
    return True
