"""The cases of the analysis-quality benchmark: real documents, instructions, gold facts.

Documents nobody here wrote, found on any Debian machine with Python's docs
(``corpora.py`` fetches ``python3.11-doc``): Debian changelogs (``make``,
``coreutils``, ``python3.11``, ``curl``), the GPL and LGPL texts in
``/usr/share/common-licenses``, the ``find`` manual page (rendered by ``man``), and
pages of the Python documentation. Three kinds of case:

* **planted** — a seeded generator writes eight facts (names, dates, figures) and
  puts them at seeded paragraph breaks of the document; the instruction asks for
  them; the gold list is every date, number and name of the eight.
* **extract** — the gold list comes from the text itself by a regular expression:
  every version and date of a changelog's entries, every bug number it closes,
  every PEP a "What's New" page cites, the section titles of a licence.
* **open** — a question with no gold list: scored on grounding and citations only.

``IN_SAMPLE`` are the cases the evidence finder's rules were written against;
``HELD_OUT`` were written before those rules were run on them and never used to
change one: their row in BENCHMARKS.md is the honest one.
"""

from __future__ import annotations

import gzip
import os
import random
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.corpora import CORPORA_DIR, CorpusUnavailable, prose_corpus

_LICENSES = Path("/usr/share/common-licenses")
_DOC = Path("/usr/share/doc")


@dataclass(frozen=True)
class Document:
    name: str  # the file's name in the case's workspace
    text: str


@dataclass(frozen=True)
class Case:
    key: str
    document: str  # a key of ``DOCUMENTS``
    kind: str  # planted | extract | open
    instruction: str
    gold: tuple[str, ...] = ()
    plant: Callable[[random.Random], list[str]] | None = None
    held_out: bool = False
    notes: list[str] = field(default_factory=list)


# ----------------------------------------------------------------- documents


def _changelog(package: str) -> Document:
    path = _DOC / package / "changelog.Debian.gz"
    if not path.is_file():
        raise CorpusUnavailable(f"{path} is not on this machine")
    return Document(f"{package}.changelog", gzip.decompress(path.read_bytes()).decode())


def _license(name: str) -> Document:
    path = _LICENSES / name
    if not path.is_file():
        raise CorpusUnavailable(f"{path} is not on this machine")
    return Document(f"{name}.txt", path.read_text())


def _man(page: str) -> Document:
    try:
        done = subprocess.run(
            ["man", "-P", "cat", page],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "MANWIDTH": "80", "MAN_KEEP_FORMATTING": ""},
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise CorpusUnavailable(f"man {page}: {exc}") from exc
    return Document(f"{page}.1.txt", done.stdout)


def _python_doc(rel: str) -> Document:
    path = CORPORA_DIR / "prose" / rel
    if not path.is_file():
        prose_corpus()  # fetches python3.11-doc once
    return Document(Path(rel).name, path.read_text(errors="replace"))


DOCUMENTS: dict[str, Callable[[], Document]] = {
    "make": lambda: _changelog("make"),
    "coreutils": lambda: _changelog("coreutils"),
    "python3.11": lambda: _changelog("python3.11"),
    "curl": lambda: _changelog("curl"),
    "gpl3": lambda: _license("GPL-3"),
    "lgpl21": lambda: _license("LGPL-2.1"),
    "find": lambda: _man("find"),
    "logging": lambda: _python_doc("howto/logging.rst.txt"),
    "whatsnew21": lambda: _python_doc("whatsnew/2.1.rst.txt"),
    "whatsnew30": lambda: _python_doc("whatsnew/3.0.rst.txt"),
    "whatsnew22": lambda: _python_doc("whatsnew/2.2.rst.txt"),
    "classes": lambda: _python_doc("tutorial/classes.rst.txt"),
}


# ----------------------------------------------------------------- planted facts


def _words(text: str) -> list[str]:
    return text.split()


_FIRST = _words("Edith Samuel Ruth Marta Hugo Ines Tomas Greta Oskar Priya Dana Lionel Agnes Felix")
_LAST = _words("Marram Crane Pellow Whitlock Moreau Thorne Quill Halvorsen Okafor Lindqvist Brandt")
_MONTHS = _words("January February March April May June July August September October November")
_CITIES = _words("Oslo Lisbon Tallinn Porto Ghent Bergen Lyon Krakow Turin Dresden")


def _name(rng: random.Random) -> str:
    return f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"


def _date(rng: random.Random) -> str:
    return f"{rng.randint(2, 27)} {rng.choice(_MONTHS)} {rng.randint(1961, 2019)}"


def _archivist(rng: random.Random) -> list[str]:
    things = "minute book|pumping log|letter book|ledger|survey map|diary|photograph album|report"
    return [
        f"Archivist's note: the {rng.choice(things.split('|'))} for {rng.randint(1870, 1960)} "
        f"was rebound by {_name(rng)} on {_date(rng)}."
        for _ in range(8)
    ]


def _translator(rng: random.Random) -> list[str]:
    languages = _words("Welsh Basque Icelandic Maltese Frisian Catalan Sami Breton")
    return [
        f"Translator's remark: the {rng.choice(languages)} translation of section "
        f"{rng.randint(0, 17)} was checked by {_name(rng)} on {_date(rng)}."
        for _ in range(8)
    ]


def _sprints(rng: random.Random) -> list[str]:
    return [
        f"The {rng.choice(_CITIES)} sprint of {_date(rng)} was led by {_name(rng)}, "
        f"with {rng.randint(6, 60)} people attending."
        for _ in range(8)
    ]


def _field_reports(rng: random.Random) -> list[str]:
    return [
        f"Field report: on {_date(rng)}, {_name(rng)} timed a search of "
        f"{rng.randint(2, 90) * 1000:,} files at {rng.randint(3, 97)} seconds."
        for _ in range(8)
    ]


def _reviewer(rng: random.Random) -> list[str]:
    return [
        f"Reviewer's comment: {_name(rng)} asked on {_date(rng)} for example "
        f"{rng.randint(2, 40)} to be rewritten."
        for _ in range(8)
    ]


def _grants(rng: random.Random) -> list[str]:
    return [
        f"The {rng.choice(_LAST)} grant of {rng.randint(2, 90) * 500:,} dollars was "
        f"awarded to {_name(rng)} on {_date(rng)}."
        for _ in range(8)
    ]


def plant(text: str, facts: list[str], rng: random.Random) -> str:
    """``facts`` put at seeded paragraph breaks of ``text``, one per break, in order."""
    breaks = [m.end() for m in re.finditer(r"\n\n(?=[ \t]*\S)", text)]
    if len(breaks) < len(facts):
        raise ValueError("a document with too few paragraph breaks to plant facts")
    spots = sorted(rng.sample(breaks[len(breaks) // 20 :], len(facts)))
    out, last = [], 0
    for spot, fact in zip(spots, facts, strict=True):
        out.append(text[last:spot])
        out.append(fact + "\n\n")
        last = spot
    out.append(text[last:])
    return "".join(out)


def planted_gold(facts: list[str]) -> tuple[str, ...]:
    """Every date, number and name of the planted facts."""
    from harvey.analysis.atoms import Kind, atoms, unique

    wanted = {Kind.DATE, Kind.NUMBER, Kind.NAME, Kind.VERSION}
    found = [a.text for f in facts for a in unique(atoms(f)) if a.kind in wanted]
    return tuple(dict.fromkeys(found))


# ----------------------------------------------------------------- gold from the text


def changelog_versions_and_dates(text: str) -> tuple[str, ...]:
    versions = re.findall(r"^\S+ \(([^)]+)\) ", text, re.M)
    dates = re.findall(r"^ -- .*?>\s+(\w{3}, +\d{1,2} \w{3} \d{4})", text, re.M)
    return tuple(dict.fromkeys([*versions, *(" ".join(d.split()) for d in dates)]))


def closed_bugs(text: str) -> tuple[str, ...]:
    found: list[str] = []
    for group in re.findall(r"Closes:\s*((?:#\d+[,\s]*)+)", text, re.I):
        found.extend(re.findall(r"#(\d+)", group))
    return tuple(dict.fromkeys(found))


def peps(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(re.findall(r"(?:PEP |:pep:`)(\d+)", text)))


def license_sections(text: str) -> tuple[str, ...]:
    body = text[text.find("TERMS AND CONDITIONS") :]
    return tuple(dict.fromkeys(re.findall(r"^\s{0,4}\d{1,2}\. ([A-Z][^.\n]+)\.", body, re.M)))


GOLD: dict[str, Callable[[str], tuple[str, ...]]] = {
    "versions_dates": changelog_versions_and_dates,
    "closed_bugs": closed_bugs,
    "peps": peps,
    "license_sections": license_sections,
}


def _case(key: str, doc: str, kind: str, instruction: str, **extra: object) -> Case:
    return Case(key, doc, kind, instruction, **extra)  # type: ignore[arg-type]


IN_SAMPLE: list[Case] = [
    _case("logging-archivist", "logging", "planted", "List every archivist's note.",
          plant=_archivist),
    _case("gpl3-translator", "gpl3", "planted", "List every translator's remark.",
          plant=_translator),
    _case("whatsnew21-sprints", "whatsnew21", "planted",
          "List every sprint: where and when it was held, and who led it.", plant=_sprints),
    _case("find-reports", "find", "planted", "List every field report.", plant=_field_reports),
    _case("make-versions", "make", "extract", "List every version and date in this changelog.",
          gold=("versions_dates",)),
    _case("coreutils-bugs", "coreutils", "extract", "List every bug number that was closed.",
          gold=("closed_bugs",)),
    _case("whatsnew21-peps", "whatsnew21", "extract", "List every PEP this document describes.",
          gold=("peps",)),
    _case("gpl3-sections", "gpl3", "extract", "List the section headings of the license.",
          gold=("license_sections",)),
    _case("find-xdev", "find", "open", "What does the -xdev option do?"),
    _case("gpl3-patents", "gpl3", "open", "What does the license say about patents?"),
    _case("logging-print", "logging", "open", "When should a program use logging instead of print?"),
    _case("make-jobserver", "make", "open", "What changed about the jobserver?"),
    _case("whatsnew21-scopes", "whatsnew21", "open", "How do nested scopes work now?"),
]  # fmt: skip

HELD_OUT: list[Case] = [
    _case("python-versions", "python3.11", "extract",
          "List every version and date in this changelog.", gold=("versions_dates",),
          held_out=True),
    _case("curl-bugs", "curl", "extract", "List every bug number that was closed.",
          gold=("closed_bugs",), held_out=True),
    _case("whatsnew30-peps", "whatsnew30", "extract", "List every PEP this document describes.",
          gold=("peps",), held_out=True),
    _case("classes-reviewer", "classes", "planted", "List every reviewer's comment.",
          plant=_reviewer, held_out=True),
    _case("whatsnew22-grants", "whatsnew22", "planted",
          "List every grant awarded, with its amount and date.", plant=_grants, held_out=True),
    _case("lgpl-linking", "lgpl21", "open", "What does the license say about linking?",
          held_out=True),
]  # fmt: skip

CASES = IN_SAMPLE + HELD_OUT


@dataclass(frozen=True)
class Prepared:
    """A case made concrete: the document as analysed (facts planted) and its gold list."""

    case: Case
    document: Document
    gold: tuple[str, ...]


def prepare(case: Case, seed: int = 7) -> Prepared:
    """The case's document (with its planted facts, seeded by the case and ``seed``) and gold."""
    doc = DOCUMENTS[case.document]()
    if case.plant is not None:
        rng = random.Random(f"{case.key}:{seed}")
        facts = case.plant(rng)
        return Prepared(case, Document(doc.name, plant(doc.text, facts, rng)), planted_gold(facts))
    gold: tuple[str, ...] = ()
    for rule in case.gold:
        gold += GOLD[rule](doc.text)
    return Prepared(case, doc, gold)


__all__ = ["CASES", "DOCUMENTS", "HELD_OUT", "IN_SAMPLE", "Case", "Document", "Prepared", "prepare"]
