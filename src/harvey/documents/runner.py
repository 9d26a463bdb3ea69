"""Every document is turned into text in a child process under hard limits.

A document's bytes are hostile until proven otherwise, and each format has its
own way to take a parser far past its input: a PDF content stream that inflates to
gigabytes inside PDFium (C++, where Python cannot stop it), XML entities declared
in a UTF-16 ``document.xml``, markup that keeps the standard library's
``HTMLParser`` busy for minutes, a ``<meta charset>`` naming a codec that is
slow on purpose. So no format is parsed in Harvey's own process: ``child.py``
runs as ``python -I`` (no environment, no user site, not the workspace on
``sys.path``), fed the bytes on stdin (the parent opened them through
``open_regular``: no path is re-opened by name), and:

- sets its own address-space limit (``memory_bytes``) and CPU limit before it
  reads a byte of the document, and is killed at a wall-clock deadline;
- stops on its own at ``max_chars`` of text (the builder refuses the character
  after it: expansion stops as it happens, not after) or ``max_pages``;
- writes its result to a private temporary file it cannot grow past
  ``output_bytes`` (``RLIMIT_FSIZE``), so even a child that went wrong cannot
  make the parent read gigabytes.

The parent turns every way it can end — a limit, a crash, a refusal — into one
line. The child's environment is an allow-list (``child_env``): the process that
parses hostile bytes holds none of the user's keys or tokens; a PDF password goes
on stdin, never on its command line or in its environment, and is never stored.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from harvey.documents.model import Document, Limits
from harvey.errors import DocumentError

#: What the child may see of the environment: enough to run Python, nothing secret.
_CHILD_ENV = ("PATH", "LANG", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT")
_CHILD = Path(__file__).with_name("child.py")
#: Where ``harvey`` is imported from in the child (``-I`` ignores PYTHONPATH).
_ROOT = str(Path(__file__).resolve().parents[2])
_LABELS = {"pdf": "PDF", "docx": "DOCX", "html": "HTML", "epub": "EPUB"}
_STDERR_READ = 64 * 1024


def child_env() -> dict[str, str]:
    return {
        name: value
        for name, value in os.environ.items()
        if name in _CHILD_ENV or name.startswith("LC_")
    }


def extract_in_child(
    kind: str, data: bytes, name: str, limits: Limits, password: str | None = None
) -> Document:
    """The text of ``data`` read as ``kind``; ``DocumentError`` (one line) for every failure."""
    label = _LABELS.get(kind, kind.upper())
    header = {"kind": kind, "name": name, "password": password, "root": _ROOT, **asdict(limits)}
    header["output_bytes"] = limits.output_bytes
    stdin = json.dumps(header).encode() + b"\n" + data
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.run(
                [sys.executable, "-I", str(_CHILD)],
                input=stdin,
                stdout=out,
                stderr=err,
                timeout=limits.seconds + 5,
                env=child_env(),
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise DocumentError(
                f"{name}: {label} extraction stopped after {limits.seconds:.0f} s — the file "
                "is too complex or damaged",
                "too-large",
            ) from None
        except OSError as exc:
            raise DocumentError(
                f"{name}: cannot start {label} extraction: {exc}", "damaged"
            ) from exc
        err.seek(0)
        problem = err.read(_STDERR_READ)
        out.seek(0)
        raw = out.read(limits.output_bytes + 1)
    if proc.returncode != 0:
        if proc.returncode < 0 or b"MemoryError" in problem or b"TimeLimit" in problem:
            raise DocumentError(
                f"{name}: {label} extraction ran out of its memory or time limit — a damaged "
                "file or a decompression bomb; nothing was read",
                "too-large",
            )
        raise DocumentError(
            f"{name}: {label} extraction failed — the file looks damaged", "damaged"
        )
    return _result(raw, name, label)


def _result(raw: bytes, name: str, label: str) -> Document:
    try:
        result = json.loads(raw)
        if "error" in result:
            raise DocumentError(str(result["error"]), str(result.get("reason") or "damaged"))
        return Document.from_json(result["document"])
    except (ValueError, KeyError, TypeError) as exc:
        raise DocumentError(f"{name}: {label} extraction returned no result", "damaged") from exc


__all__ = ["Limits", "child_env", "extract_in_child"]
