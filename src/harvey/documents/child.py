"""The child that turns one document's bytes into text (see ``runner.py``).

Run as ``python -I child.py``: stdin is a JSON header line (kind, name, limits,
password, where ``harvey`` lives) and then the document's bytes; stdout one JSON
object, ``{"document": ...}`` or ``{"error": ..., "reason": ...}``. The limits are
set before the document is read; nothing here opens a file by name.
"""

from __future__ import annotations

import json
import resource
import sys
from typing import Any

MAX_HEADER_BYTES = 1 << 20


def limit(header: dict[str, Any]) -> None:
    """Address space, CPU seconds and the size of what this process may write."""
    memory = int(header["memory_bytes"])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = int(float(header["seconds"])) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    output = int(header["output_bytes"])
    resource.setrlimit(resource.RLIMIT_FSIZE, (output, output))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def extract(kind: str, data: bytes, header: dict[str, Any]) -> Any:
    """The Document for ``data``; the readers import here, after the limits."""
    from dataclasses import fields

    from harvey.documents.model import Limits

    limits = Limits(**{f.name: header[f.name] for f in fields(Limits) if f.name in header})
    name = str(header["name"])
    if kind == "pdf":
        from harvey.documents.pdf import extract_pdf

        return extract_pdf(data, name, limits, header.get("password"))
    if kind == "html":
        from harvey.documents.html import extract_html

        return extract_html(data, limits.max_chars)
    from harvey.documents import packages

    if kind == "docx":
        return packages.extract_docx(data, name, limits)
    if kind == "epub":
        return packages.extract_epub(data, name, limits)
    raise ValueError(f"unknown kind {kind!r}")


def main() -> None:
    stream = sys.stdin.buffer
    header = json.loads(stream.readline(MAX_HEADER_BYTES))
    limit(header)
    sys.path.insert(0, str(header["root"]))
    data = stream.read()
    from harvey.errors import DocumentError

    try:
        result = {"document": extract(str(header["kind"]), data, header).to_json()}
    except DocumentError as exc:
        result = {"error": str(exc), "reason": exc.reason}
    sys.stdout.write(json.dumps(result))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
