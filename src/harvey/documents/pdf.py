"""PDF text layer, page by page, with pypdfium2 — in a child process under hard limits.

pypdfium2 was chosen by measurement (``bench/bench_documents.py``: an order of
magnitude more pages a second than pypdf and pdfminer.six at the same quality).
PDFium is C++: a content stream that inflates to gigabytes, or a page tree that
claims a million pages, is met inside the library where Python cannot stop it.
So extraction runs in a child (``pdf_child.py``, run as a script) with an
address-space limit and a CPU limit, fed the file's bytes on stdin (the parent
opened them through ``open_regular``: no path is re-opened by name), and killed
at a wall-clock deadline. The child stops on its own at ``max_pages`` or
``max_chars`` and says so; the parent turns a killed child into one line.

A password (``HARVEY_PDF_PASSWORD``, or the one a command was given) goes to the
child on stdin, never on its command line or environment, and is never stored.
The child's environment is an allow-list (``_child_env``): PDFium parses hostile
bytes, so the process it runs in holds none of the user's keys or tokens.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from harvey.documents.model import Document
from harvey.errors import DocumentError

PASSWORD_ENV = "HARVEY_PDF_PASSWORD"
#: What the child may see of the environment: enough to run Python, nothing secret.
_CHILD_ENV = ("PATH", "LANG", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT")


@dataclass(frozen=True)
class Limits:
    """What one extraction may take; ``notes`` on the document say what was cut."""

    max_pages: int = 2000
    max_chars: int = 20_000_000
    seconds: float = 60.0
    memory_bytes: int = 1536 * 1024 * 1024


def _limit_child(limits: Limits) -> None:  # pragma: no cover - runs in the child
    import resource

    memory = limits.memory_bytes
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = int(limits.seconds) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))


def _child_env() -> dict[str, str]:
    return {
        name: value
        for name, value in os.environ.items()
        if name in _CHILD_ENV or name.startswith("LC_")
    }


def extract_pdf(data: bytes, name: str, limits: Limits, password: str | None) -> Document:
    """The text layer of ``data`` page by page; ``DocumentError`` for every failure."""
    header = {
        "password": password,
        "max_pages": limits.max_pages,
        "max_chars": limits.max_chars,
        "seconds": limits.seconds,
    }
    stdin = json.dumps(header).encode() + b"\n" + data
    env = _child_env()
    try:
        proc = subprocess.run(
            # The script by path: ``-m`` would import ``harvey`` (the public API) first.
            [sys.executable, "-E", "-s", str(Path(__file__).with_name("pdf_child.py"))],
            input=stdin,
            capture_output=True,
            timeout=limits.seconds + 15,
            env=env,
            preexec_fn=(lambda: _limit_child(limits)) if os.name == "posix" else None,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise DocumentError(
            f"{name}: PDF extraction stopped after {limits.seconds:.0f} s — the file is too "
            "complex or damaged",
            "too-large",
        ) from None
    except OSError as exc:
        raise DocumentError(f"{name}: cannot start PDF extraction: {exc}", "damaged") from exc
    if proc.returncode != 0:
        if proc.returncode < 0 or b"MemoryError" in proc.stderr:
            raise DocumentError(
                f"{name}: PDF extraction ran out of its memory or time limit — a damaged "
                "file or a decompression bomb; nothing was read",
                "too-large",
            )
        raise DocumentError(f"{name}: PDF extraction failed — the file looks damaged", "damaged")
    try:
        result = json.loads(proc.stdout)
    except ValueError as exc:
        raise DocumentError(f"{name}: PDF extraction returned no result", "damaged") from exc
    return _document(result, name, password is not None)


def _document(result: dict[str, object], name: str, had_password: bool) -> Document:
    error = result.get("error")
    if error == "password":
        if had_password:
            raise DocumentError(f"{name}: encrypted — the password given is wrong", "encrypted")
        raise DocumentError(
            f"{name}: encrypted — needs a password: set {PASSWORD_ENV} for this run",
            "encrypted",
        )
    if error is not None:
        raise DocumentError(f"{name}: damaged PDF — {error}", "damaged")
    pages = [str(p) for p in result["pages"]]  # type: ignore[attr-defined]
    count = int(result["page_count"])  # type: ignore[call-overload]
    if not any(p.strip() for p in pages):
        raise DocumentError(
            f"{name}: no text layer — scanned pages need OCR ({count} "
            f"page{'s' if count != 1 else ''})",
            "no-text",
        )
    notes = [str(n) for n in result.get("notes", [])]  # type: ignore[attr-defined]
    parts: list[str] = []
    starts: list[int] = []
    length = 0
    for text in pages:
        if parts:
            parts.append("\n\n")
            length += 2
        starts.append(length)
        body = text.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
        parts.append(body)
        length += len(body)
    return Document("".join(parts), "pdf", tuple(starts), (), count, tuple(notes))


__all__ = ["PASSWORD_ENV", "Limits", "extract_pdf"]
