"""Two real corpora for the chunker benchmark, built at bench time.

* **prose** — the reStructuredText sources of the Python documentation, as
  shipped in the Debian package ``python3.11-doc`` (``html/_sources/**/*.rst.txt``,
  about 11 MB). When the package is not installed, the ``.deb`` is fetched with
  ``apt-get download`` (no root needed) and unpacked with ``dpkg -x``.
* **code** — the ``.py`` files of the running interpreter's standard library,
  without ``site-packages`` and without the test suites (directories named
  ``test``/``tests``/``idle_test`` and files named ``test_*.py``): about 12 MB
  on CPython 3.11. With the tests it would be about 31 MB, mostly generated
  test data rather than the code people ask an agent about.

Both are copied once into ``bench/.corpora/`` (git-ignored), so later runs do
not need apt. Documents are returned as ``(name, text)`` pairs, in a stable
(sorted) order: the chunkers are run per document, which is how Harvey uses
a chunker, and throughput is measured over the total bytes.
"""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
import tempfile
from pathlib import Path

CORPORA_DIR = Path(__file__).resolve().parent / ".corpora"
DOC_PACKAGE = "python3.11-doc"
SYSTEM_SOURCES = Path("/usr/share/doc/python3.11/html/_sources")
_TEST_DIRS = {"test", "tests", "idle_test"}

Documents = list[tuple[str, str]]


class CorpusUnavailable(RuntimeError):
    """A corpus could not be built (no apt, no network, unexpected package layout)."""


def _run(cmd: list[str], cwd: Path) -> None:
    try:
        subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        raise CorpusUnavailable(f"{' '.join(cmd)} failed: {detail.strip()}") from exc


def _fetch_doc_sources(dest: Path) -> None:
    """Copy the docs' ``_sources`` tree into ``dest``, downloading the .deb if needed."""
    if SYSTEM_SOURCES.is_dir():
        shutil.copytree(SYSTEM_SOURCES, dest)
        return
    with tempfile.TemporaryDirectory(prefix="harvey-bench-") as tmp:
        work = Path(tmp)
        try:
            _run(["apt-get", "download", DOC_PACKAGE], work)
        except CorpusUnavailable:
            _run(["apt-get", "update"], work)  # an empty package cache on a fresh machine
            _run(["apt-get", "download", DOC_PACKAGE], work)
        debs = sorted(work.glob(f"{DOC_PACKAGE}_*.deb"))
        if not debs:
            raise CorpusUnavailable(f"apt-get download produced no {DOC_PACKAGE} .deb")
        _run(["dpkg", "-x", str(debs[0]), "root"], work)
        # The sources live under usr/share/doc/python3.11/html/_sources (the -doc
        # package's own doc dir only holds a symlink to it); find it, not assume it.
        found = [p for p in (work / "root").rglob("_sources") if p.is_dir() and not p.is_symlink()]
        if not found:
            raise CorpusUnavailable(f"no _sources directory inside {debs[0].name}")
        shutil.copytree(max(found, key=lambda p: sum(1 for _ in p.rglob("*"))), dest)


def _stdlib_files() -> list[tuple[Path, str]]:
    root = Path(sysconfig.get_paths()["stdlib"])
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        parts = rel.parts
        if parts[0] == "site-packages" or _TEST_DIRS & set(parts[:-1]):
            continue
        if rel.name.startswith("test_") or not path.is_file():
            continue
        out.append((path, rel.as_posix()))
    return out


def _ensure(name: str) -> Path:
    dest = CORPORA_DIR / name
    if dest.is_dir():
        return dest
    CORPORA_DIR.mkdir(parents=True, exist_ok=True)
    partial = CORPORA_DIR / f".{name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    if name == "prose":
        _fetch_doc_sources(partial)
    else:
        for src, rel in _stdlib_files():
            target = partial / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, target)
    partial.rename(dest)  # only a complete corpus gets the final name
    return dest


def _load(root: Path, suffix: str) -> Documents:
    docs = []
    for path in sorted(root.rglob(f"*{suffix}")):
        if path.is_file():
            # A few files are not UTF-8; replacement keeps them (and every chunker) comparable.
            docs.append(
                (path.relative_to(root).as_posix(), path.read_bytes().decode("utf-8", "replace"))
            )
    return docs


def prose_corpus() -> Documents:
    """The Python documentation's reStructuredText sources, one document per file."""
    return _load(_ensure("prose"), ".txt")


def code_corpus() -> Documents:
    """The standard library's ``.py`` files (no tests, no site-packages), one per file."""
    return _load(_ensure("code"), ".py")


def total_bytes(docs: Documents) -> int:
    return sum(len(text.encode("utf-8")) for _, text in docs)


if __name__ == "__main__":
    for label, loader in (("prose", prose_corpus), ("code", code_corpus)):
        documents = loader()
        print(f"{label}: {len(documents)} documents, {total_bytes(documents) / 1e6:.2f} MB")
