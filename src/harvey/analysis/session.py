"""A recorded analysis: what ``harvey analyze`` keeps of one run, without a chat session.

A direct analysis needs four things from the session machinery, and only these:
a session row in ``sessions.db`` (so the analysis can be resumed as a
conversation and its map results belong to something), the recording (the
CHUNK ANALYSIS scene, then the synthesis as Harvey's line), the stored map
results (a rerun makes only the calls that are missing) and the calibrated
ratios. ``AnalysisSession`` opens exactly those; the agent, its tools, plan,
memory and retrieval are never built.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Callable, Iterator
from typing import TextIO

from harvey.analysis.api import Collaborators
from harvey.config.settings import Paths, Settings, configured_keys
from harvey.errors import StoreError
from harvey.llm.base import is_remote_endpoint
from harvey.messages import Message
from harvey.ownfiles.nofollow import Refusals
from harvey.protocols import LLMClient, ProgressReporter
from harvey.redact import Redactor, install
from harvey.session.calibration import CalibratedSizing
from harvey.session.location import default_user_name, note_harvey_dir, open_recorder
from harvey.session.map_results import StoredResults
from harvey.session.recorder import Recorder
from harvey.session.records import TurnRecord
from harvey.session.store import SessionStore
from harvey.workspace import secret_files

log = logging.getLogger(__name__)


class AnalysisSession:
    """The session row, recording, stored results and calibration of one analysis."""

    def __init__(
        self,
        paths: Paths,
        settings: Settings,
        client: LLMClient,
        store: SessionStore,
        recorder: Recorder | None,
    ) -> None:
        self.paths = paths
        self.settings = settings
        self.client = client
        self.store = store
        self.recorder = recorder
        self.session_id = store.reserve_session(paths.workspace, client.model)
        self.sizing = CalibratedSizing(store, context_window=settings.context_window)

    @classmethod
    @contextlib.contextmanager
    def open(
        cls,
        paths: Paths,
        settings: Settings,
        client: LLMClient,
        *,
        record: bool,
        warn: Callable[[str], None],
    ) -> Iterator[AnalysisSession]:
        """The session, closed (and dropped if nothing was kept) on the way out.

        The same guards as a chat session go up first: these settings' keys are
        redacted and their secret files refused before any file is read.
        """
        install(Redactor.from_env(extra=configured_keys(settings)))
        notice = secret_files.state_inside(paths.workspace, paths.harvey_home)  # or refused
        secret_files.install(
            secret_files.for_workspace(
                paths.workspace, paths.harvey_home, settings.security.secret_files
            )
        )
        if notice:
            warn(notice)
        store = SessionStore(paths.sessions_db)
        try:
            refusals = Refusals(warn)
            note_harvey_dir(paths.workspace, refusals)
            recorder = None
            if record:
                user = default_user_name(settings)
                recorder = open_recorder(paths, settings, client, refusals, user=user)
            session = cls(paths, settings, client, store, recorder)
            if recorder is not None and recorder.enabled:  # `harvey run -c` goes on in it
                store.note_recording(session.session_id, str(recorder.path))
        except BaseException:
            store.close()
            raise
        try:
            yield session
        finally:
            session.close()

    def collaborators(
        self,
        *,
        confirm: Callable[[str], bool],
        warn: Callable[[str], None],
        progress: ProgressReporter | TextIO | None = None,
        cancel: threading.Event | None = None,
    ) -> Collaborators:
        """What this session lends ``analyze_file``/``analyze_paths``."""
        return Collaborators(
            recorder=self.recorder,
            results=functools.partial(StoredResults, self.store, self.session_id),
            sizing=self.sizing,
            confirm=confirm,
            progress=progress,
            warn=warn,
            cancel=cancel,
        )

    def finish(self, label: str, instruction: str, text: str, *, by_harvey: bool = False) -> None:
        """The analysis as a turn: its request and answer in sessions.db (resumable as a
        conversation) and the answer after the CHUNK ANALYSIS scene — the model's line, or
        HARVEY's when it is the evidence itself (``by_harvey``: no model wrote it)."""
        request = Message("user", f"Analyse {label}: {instruction}")
        self.store.add_turn(self.session_id, [request, Message("assistant", text)])
        if self.recorder is not None:
            self.recorder.record_turn(
                TurnRecord(
                    user=default_user_name(self.settings),
                    model=self.client.model,
                    workspace=str(self.paths.workspace),
                    user_text=None,
                    reply=text,
                    mode="analysis",
                    remote=is_remote_endpoint(self.client.endpoint),
                    reply_by_harvey=by_harvey,
                )
            )

    def close(self) -> None:
        if self.recorder is not None:
            self.recorder.close()
        try:
            self.store.discard_if_empty(self.session_id)
        except StoreError as exc:  # harmless (--continue skips it); never hide the real error
            log.debug("could not discard empty session %s: %s", self.session_id, exc)
        self.store.close()
