"""The workspace profile: a short description of where the person works, recalled first.

It is written by the model from facts Harvey gathers itself — the top-level
listing, the head of README and HARVEY.md, the languages by file count — so
the model describes what is there rather than guessing, and the person
reviews it like any mined memory before it is stored. A new profile
supersedes the old one, so regenerating never loses the previous text.

The workspace may be a hostile clone: a ``README.md`` that is a link to
``.env`` or to ``~/.ssh/id_rsa``, or a hard link to one, is read through
``workspace.open_for_model`` like any file tool's read, so it is
refused rather than drafted into a profile that every later session recalls.
The walk that counts languages keeps its own stack (``os.walk`` recurses in
Python 3.11) and never follows a link.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from harvey.errors import HarveyError
from harvey.llm.base import chat
from harvey.memory.scrub import scrub
from harvey.memory.store import Memory, MemoryStore
from harvey.messages import Message
from harvey.protocols import LLMClient
from harvey.workspace.skipped import SKIPPED_DIRS, skipped_dir

MAX_FILES = 5000  # a walk over a huge tree stops here: the proportions are what matters
HEAD_LINES = 30
LANGUAGES = {
    ".py": "Python", ".go": "Go", ".rs": "Rust", ".js": "JavaScript", ".ts": "TypeScript",
    ".c": "C", ".h": "C", ".cpp": "C++", ".java": "Java", ".rb": "Ruby", ".md": "Markdown",
    ".sh": "Shell", ".html": "HTML", ".css": "CSS", ".tex": "TeX", ".rst": "reStructuredText",
}  # fmt: skip


def languages(workspace: Path) -> list[tuple[str, int]]:
    """Languages by file count, most first (at most ``MAX_FILES`` files looked at)."""
    counts: Counter[str] = Counter()
    seen = 0
    stack = [os.fspath(workspace)]
    while stack:
        try:
            with os.scandir(stack.pop()) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError:  # unreadable, or deeper than PATH_MAX: skipped
            continue
        subdirs: list[str] = []
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if not skipped_dir(entry.name, entry.path) and not entry.name.startswith("."):
                    subdirs.append(entry.path)
                continue
            language = LANGUAGES.get(Path(entry.name).suffix.lower())
            if language:
                counts[language] += 1
            seen += 1
            if seen >= MAX_FILES:
                return counts.most_common(8)
        stack.extend(reversed(subdirs))
    return counts.most_common(8)


README_NAMES = (
    "README.md",
    "README.rst",
    "README.txt",
    "README",
    "README.html",
    "README.pdf",
    "README.docx",
    "HARVEY.md",
)


def _head(workspace: Path, name: str) -> str:
    """The first ``HEAD_LINES`` lines of a workspace file, or "" when it may not be read
    for the model (outside, a secret file, a hard link, not a regular file) or is absent."""
    from harvey.documents.extraction import extract_source
    from harvey.workspace.source import open_for_model

    try:
        source = open_for_model(workspace, name)
        if source.is_document:  # README.pdf, README.html: their text, never their bytes
            text = extract_source(source).text[: HEAD_LINES * 400]
        else:
            text = source.head(HEAD_LINES * 400).decode("utf-8", errors="replace")
    except (OSError, HarveyError):
        return ""
    lines = text.splitlines(keepends=True)
    return "".join(lines[:HEAD_LINES])


def facts(workspace: Path) -> str:
    """What the model is shown to write the profile from."""
    try:
        entries = sorted(p.name + ("/" if p.is_dir() else "") for p in workspace.iterdir())
    except OSError:
        entries = []
    entries = [e for e in entries if e.rstrip("/") not in SKIPPED_DIRS][:60]
    parts = [f"Top level: {', '.join(entries) or '(empty)'}"]
    langs = ", ".join(f"{name} ({n} files)" for name, n in languages(workspace))
    parts.append(f"Languages: {langs or 'none recognised'}")
    for name in README_NAMES:
        head = _head(workspace, name)
        if head:
            parts.append(f"Head of {name}:\n{head}")
    return "\n\n".join(parts)


def draft_profile(client: LLMClient, workspace: Path) -> str:
    """The model's profile text, scrubbed; empty when it held a credential or nothing."""
    prompt = (
        "Write a short profile of this workspace in at most four sentences: what it is, its "
        "main languages and how it is organised. Plain text only.\n\n" + facts(workspace)
    )
    text = chat(client, [Message("user", prompt)]).text.strip()
    return scrub(text[:1200], workspace=workspace).text


def current_profile(store: MemoryStore, workspace: Path) -> Memory | None:
    found = store.memories(workspace=str(workspace), mtype="workspace_profile")
    mine = [m for m in found if m.workspace == str(workspace)]
    return mine[-1] if mine else None


def save_profile(store: MemoryStore, workspace: Path, text: str) -> Memory:
    """Store ``text`` as the profile, superseding the previous one."""
    memory = Memory("", "workspace_profile", text, kind="profile", workspace=str(workspace))
    old = current_profile(store, workspace)
    return store.supersede(old.id, memory) if old else store.add(memory)
