"""The rules every reader question (``reader_questions.py``) must keep, checked.

For each question:

* its document loads, its ``kind`` is ``paraphrase`` or ``literal``, it has gold;
* every gold alternative and the answer sentence occur in the document, and every gold
  alternative occurs in the answer sentence — all compared by ``harvey.analysis.matching``
  (``normalise`` then ``find_words``), the one string matching the benchmark scores by;
* at least one gold alternative lies inside one unit of Harvey's unit splitter, so a
  retriever of units can find it at all;
* a ``paraphrase`` question shares at most ONE content word with its answer sentence:
  words are ``\\w+`` runs, lowercased; stopwords (``harvey``'s ``STOPWORDS``), question
  words and single letters are not content; two words are one when their simple stems
  are equal (``stem``: ``s``/``es``/``ed``/``ing``/``ly`` stripped, then a final ``e``);
* a ``literal`` control shares at least two (it reuses the answer's words);
* no question is asked twice.

``DEMO_GOLD``: every name and date is in ``sample.md``.

Run ``python -m bench.reader_rules``: one violation a line, exit status 1 on any.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from bench.corpora import CorpusUnavailable
from bench.reader_questions import (
    DEMO_DOC,
    DEMO_GOLD,
    DOCUMENTS,
    LITERAL,
    PARAPHRASE,
    QUESTIONS,
    Question,
)
from harvey.analysis.matching import find_words, normalise

try:
    from harvey.retrieval.words import STOPWORDS
except ImportError:  # before the word lists moved into harvey.retrieval
    from harvey.stopwords import STOPWORDS  # type: ignore[no-redef]

try:
    from harvey.chunks.units import split_units
except ImportError:  # before the chunkers moved out of harvey.analysis
    from harvey.analysis.units import split_units  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parent.parent

#: Question words, auxiliaries and pronouns STOPWORDS leaves in: not content either.
QUESTION_WORDS = frozenset(
    re.findall(
        r"\w+",
        """what which who whom whose when where why how whether does do did done is are was
        were am be been being have has had can could will would shall should may might must
        i me my mine you your yours we our us it its they them their he she his her there
        here not don doesn didn isn aren won t s d ll ve re m""",
    )
)
WORD = re.compile(r"\w+", re.UNICODE)
_SUFFIXES = ("ing", "ed", "es", "ly", "s")


def stem(word: str) -> str:
    """Lowercase, one of ``ing``/``ed``/``es``/``ly``/``s`` stripped, then a final ``e``
    (``encode``, ``encoded``, ``encoding``, ``encodes`` → ``encod``)."""
    word = word.lower()
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def content_stems(text: str) -> set[str]:
    out = set()
    for word in WORD.findall(text.lower()):
        if word in STOPWORDS or word in QUESTION_WORDS:
            continue
        if len(word) == 1 and not word.isdigit():
            continue
        out.add(stem(word))
    return out


def shared_words(question: str, sentence: str) -> set[str]:
    return content_stems(question) & content_stems(sentence)


def contains(haystack: str, needle: str) -> bool:
    return find_words(normalise(needle), normalise(haystack)) >= 0


def _in_one_unit(units: Iterable[str], gold: tuple[str, ...]) -> bool:
    return any(contains(unit, g) for unit in units for g in gold)


def check_question(q: Question, text: str, units: list[str]) -> list[str]:
    """The rules ``q`` breaks, given its document's text and units."""
    label = f"{q.doc}: {q.question!r}"
    bad = []
    if q.kind not in (PARAPHRASE, LITERAL):
        bad.append(f"{label}: kind {q.kind!r} is neither paraphrase nor literal")
    if not q.gold:
        bad.append(f"{label}: no gold")
    if not contains(text, q.answer_sentence):
        bad.append(f"{label}: the answer sentence is not in the document")
    for g in q.gold:
        if not contains(text, g):
            bad.append(f"{label}: gold {g!r} is not in the document")
        if not contains(q.answer_sentence, g):
            bad.append(f"{label}: gold {g!r} is not in the answer sentence")
    if q.gold and not _in_one_unit(units, q.gold):
        bad.append(f"{label}: no gold alternative lies inside a single unit")
    shared = shared_words(q.question, q.answer_sentence)
    if q.kind == PARAPHRASE and len(shared) > 1:
        bad.append(
            f"{label}: a paraphrase sharing {len(shared)} content words with its answer "
            f"({', '.join(sorted(shared))})"
        )
    if q.kind == LITERAL and len(shared) < 2:
        bad.append(f"{label}: a literal control sharing under two content words with its answer")
    return bad


def load_texts(keys: Iterable[str]) -> dict[str, str]:
    """Each document's text; raises ``CorpusUnavailable`` when one cannot be had."""
    out = {}
    for key in sorted(set(keys)):
        try:
            out[key] = DOCUMENTS[key]().text
        except OSError as exc:
            raise CorpusUnavailable(f"{key}: {exc}") from exc
    return out


def violations(
    questions: list[Question] | None = None,
    texts: dict[str, str] | None = None,
    units_of: Callable[[str], list[str]] | None = None,
) -> list[str]:
    """Every rule broken by ``questions`` (default: all of them) and ``DEMO_GOLD``."""
    questions = QUESTIONS if questions is None else questions
    bad: list[str] = []
    unknown = sorted({q.doc for q in questions} - set(DOCUMENTS))
    bad += [f"{key}: not a key of DOCUMENTS" for key in unknown]
    if texts is None:
        texts = load_texts(q.doc for q in questions if q.doc in DOCUMENTS)
    units_of = units_of or (lambda text: [u.text for u in split_units(text)])
    units = {key: units_of(text) for key, text in texts.items()}
    seen: set[str] = set()
    for q in questions:
        if q.doc not in texts:
            continue
        said = normalise(q.question)
        if said in seen:
            bad.append(f"{q.doc}: {q.question!r} is asked twice")
        seen.add(said)
        bad += check_question(q, texts[q.doc], units[q.doc])
    sample = (REPO / DEMO_DOC).read_text(encoding="utf-8")
    for item in DEMO_GOLD:
        for s in (*item.names, *item.dates):
            if not contains(sample, s):
                bad.append(f"DEMO_GOLD: {s!r} is not in {DEMO_DOC}")
    return bad


def main() -> int:
    try:
        bad = violations()
    except CorpusUnavailable as exc:
        print(f"cannot check: {exc}")
        return 2
    for line in bad:
        print(line)
    paraphrase = sum(1 for q in QUESTIONS if q.kind == PARAPHRASE)
    held = sum(1 for q in QUESTIONS if q.held_out)
    print(
        f"{len(QUESTIONS)} questions ({paraphrase} paraphrase, {len(QUESTIONS) - paraphrase} "
        f"literal, {held} held out) over {len({q.doc for q in QUESTIONS})} documents: "
        f"{len(bad)} violation(s)",
        file=sys.stderr,
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
