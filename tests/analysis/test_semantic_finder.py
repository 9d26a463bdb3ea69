"""The finder by meaning: a reader's words find the document's, nothing is a false
"nothing", a summary is central sentences, and a document asked twice is read once.

The fast tests use a small embedder whose "meaning" is a table of synonyms, so what is
tested is Harvey's ranking, floors and selection, not a model's taste; the slow ones
use the real models (wordllama, all-MiniLM-L6-v2) on the demo's history.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

import harvey
from harvey.analysis.answer import claims_of
from harvey.analysis.doc_index import IndexCache, cache_usage, clear_cache
from harvey.analysis.engine import ChunkAnalysisParams, run_chunked_analysis
from harvey.analysis.progress import NullProgress
from harvey.analysis.semantic import Models, SemanticFinder
from harvey.chunks.chunking import ChunkConfig, chunk_document
from harvey.config.settings import Settings
from harvey.workspace.kinds import DocType
from tests.analysis.test_engine import FnClient

#: What the table-driven embedder takes for one meaning.
CONCEPTS = [
    {"dam", "dams", "embankment", "embankments", "barrage"},
    {"reservoir", "reservoirs", "lake", "storage", "stored"},
    {"built", "build", "raised", "constructed", "construction"},
    {"ignore", "ignoring", "insensitive", "regardless"},
    {"case", "uppercase", "lowercase", "capital", "capitals"},
    {"pattern", "patterns", "regex", "expression"},
    {"cost", "pounds", "price", "paid"},
]


class TableEmbedder:
    """Unit vectors of the concepts a text names (and a little of its other words), so
    "embankment" is near "dam" and nothing else is near anything."""

    spec = "table"
    dims = 64
    max_chars = 10_000

    def __init__(self) -> None:
        self.calls: list[int] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                hit = [k for k, words in enumerate(CONCEPTS) if word in words]
                for k in hit:
                    out[row, k] += 1.0
                if not hit:
                    out[row, len(CONCEPTS) + hash(word) % (self.dims - len(CONCEPTS))] += 0.05
            out[row, -1] += 0.01  # never a zero vector
        return out / np.linalg.norm(out, axis=1, keepdims=True)


HISTORY = """# The waterworks

## Early years

The town drew its water from wells until 1861. Carriers sold it by the bucket.
The council argued about the rates for a decade.

## The embankment

Gale's embankment at Stennet was raised between 1885 and 1887 and held sixty million
gallons. Its keeper reported wet patches within a year.
The mill below it was owned by the Warrender family.

## Later

A covered lake on the down stored the water overnight for the upper town.
The engines at Brindle Meadow were named Victoria and Albert.
"""


def finder(instruction: str, text: str, tmp_path: Path) -> SemanticFinder:
    return SemanticFinder(
        instruction,
        ["history.md"],
        documents=lambda _name: text,
        cache=IndexCache(tmp_path / "home"),
        models=Models(None, TableEmbedder()),
    )


def answer_of(instruction: str, text: str, tmp_path: Path) -> str:
    cfg = ChunkConfig(chunk_size_bytes=200, overlap="none")
    chunks = chunk_document(text, cfg, DocType.PROSE)
    params = ChunkAnalysisParams(
        filename="history.md",
        chunks=chunks,
        instruction=instruction,
        model="SmolLM2-135M-Instruct",
        config=cfg,
        finder=finder(instruction, text, tmp_path),
    )
    client = FnClient(lambda p: pytest.fail("Harvey's finder makes no model call"))
    return run_chunked_analysis(client, params, progress=NullProgress()).text


def test_a_question_in_other_words_finds_the_sentence_that_answers(tmp_path: Path) -> None:
    text = answer_of("When was the dam built?", HISTORY, tmp_path)
    assert "raised between 1885 and 1887" in claims_of(text)
    assert "closest" not in text  # near in meaning is a clear answer, not the closest


def test_list_every_finds_what_the_words_do_not_name(tmp_path: Path) -> None:
    dams = claims_of(answer_of("List every dam", HISTORY, tmp_path))
    assert "Gale's embankment at Stennet" in dams  # a dam called an embankment
    reservoirs = claims_of(answer_of("List every reservoir", HISTORY, tmp_path))
    assert "A covered lake on the down stored the water" in reservoirs  # called a lake
    for claims in (dams, reservoirs):
        assert "Victoria and Albert" not in claims and "Warrender" not in claims


def test_nothing_near_is_the_closest_passages_never_a_false_nothing(tmp_path: Path) -> None:
    text = answer_of("How do I make a pattern ignore case?", HISTORY, tmp_path)
    assert "nothing in the text answers" not in text
    assert "no sentence clearly answers" in text and "closest passages" in text
    assert "Sources:" in text  # still cited


def test_a_summary_is_each_section_s_central_sentence_not_its_headings(
    tmp_path: Path,
) -> None:
    text = HISTORY + "\n.. only:: html\n\nYes.\n"
    claims = claims_of(answer_of("Summarise this document", text, tmp_path))
    lines = [line for line in claims.splitlines() if line.startswith("- ")]
    assert len(lines) == 3  # one sentence of each section with something to say
    assert "#" not in claims and ".. only::" not in claims and "- Yes." not in claims
    sections = [["wells", "Carriers", "council"], ["embankment", "keeper", "mill"],
                ["lake", "engines"]]  # fmt: skip
    for line, words in zip(lines, sections, strict=True):
        assert any(w in line for w in words), (line, words)


def test_a_sentence_wrapped_over_lines_is_one_unit_quoted_once(tmp_path: Path) -> None:
    """json.rst wraps this sentence before a role (``:exc:``), and says it under three
    functions: it was quoted three times, cut at the line break."""
    section = (
        "{name}\n========\n\n"
        "   If the data being deserialized is not a valid JSON document, a\n"
        "   :exc:`JSONDecodeError` will be raised.\n\n"
        "   Other paragraphs follow here about encoders and other unrelated things.\n\n"
    )
    text = "".join(section.format(name=n) for n in ("load", "loads", "decode"))
    claims = claims_of(answer_of("What happens when the document is not valid?", text, tmp_path))
    assert claims.count("If the data being deserialized") == 1
    assert "is not a valid JSON document, a :exc:`JSONDecodeError` will be raised." in claims


def test_a_field_list_line_still_starts_a_unit() -> None:
    from harvey.chunks.units import split_units

    units = split_units(":param x: the first of the arguments it takes\n:returns: a value\n")
    assert [u.text for u in units] == [":param x: the first of the arguments it takes",
                                       ":returns: a value"]  # fmt: skip


def test_a_document_asked_twice_is_indexed_once(tmp_path: Path) -> None:
    quick, deep = TableEmbedder(), TableEmbedder()
    cache = IndexCache(tmp_path / "home")

    def ask(question: str) -> list[str]:
        f = SemanticFinder(
            question, documents=lambda _n: HISTORY, cache=cache, models=Models(quick, deep)
        )
        chunk = chunk_document(HISTORY, ChunkConfig(chunk_size_bytes=100_000), DocType.PROSE)[0]
        from harvey.analysis.piece import Piece

        return [c.unit.text for c in f.candidates(Piece(chunk, "history.md"))]

    assert any("1885" in t for t in ask("When was the dam built?"))
    units_embedded = sum(quick.calls) + sum(deep.calls)
    assert units_embedded > 10  # every unit, once
    ask("What did the lake store?")
    again = sum(quick.calls) + sum(deep.calls) - units_embedded
    assert again == 2  # the question alone, once per model: the units' vectors were kept
    # and kept on disk: a new process (a new cache object) reads them back
    fresh = IndexCache(tmp_path / "home")
    deep.calls.clear()
    quick.calls.clear()
    f = SemanticFinder("Who owned the mill?", documents=lambda _n: HISTORY, cache=fresh,
                       models=Models(quick, deep))  # fmt: skip
    f.index_of(HISTORY, False)
    assert quick.calls == [] and deep.calls == []
    files, size = cache_usage(tmp_path / "home")
    assert files == 1 and size > 0
    assert clear_cache(tmp_path / "home")[0] == 1
    assert cache_usage(tmp_path / "home") == (0, 0)


def test_a_damaged_cache_file_is_rebuilt_not_trusted(tmp_path: Path) -> None:
    index = finder("When was the dam built?", HISTORY, tmp_path).index_of(HISTORY, False)
    folder = tmp_path / "home" / "cache" / "indexes"
    (path,) = folder.glob("*.npz")
    path.write_bytes(b"not a numpy file")
    again = IndexCache(tmp_path / "home").get(index.key, HISTORY, False)
    assert again is None  # ignored: the next question builds it anew


def test_the_cache_folder_is_bounded(tmp_path: Path) -> None:
    cache = IndexCache(tmp_path / "home", max_bytes=1)  # every new file pushes out the last
    for n in range(3):
        f = SemanticFinder("dam", documents=lambda _n: "x", cache=cache,
                           models=Models(None, TableEmbedder()))  # fmt: skip
        f.index_of(HISTORY + f"\nNote {n}.\n", False)
    assert cache_usage(tmp_path / "home")[0] <= 1


@pytest.mark.slow
def test_the_demo_question_lists_the_upper_stennet_embankment_and_tollard_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real models on the demo's history: the dam named an embankment and the service
    reservoir are listed, the family moving house is not."""
    from harvey.retrieval.minilm import minilm_available

    if not minilm_available():
        pytest.skip("all-MiniLM-L6-v2 is not installed (make install installs it)")
    source = Path(harvey.__file__).parent / "data" / "sample.md"
    doc = tmp_path / "sample.md"
    doc.write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    client = FnClient(lambda p: pytest.fail("no call"), model="SmolLM2-135M-Instruct")
    result = harvey.analyze_file(
        doc,
        "List every dam and reservoir, and when it was built or opened",
        settings=Settings(),
        client=client,
    )
    claims = claims_of(result.text)
    assert "Upper Stennet embankment, built between 1885 and 1887" in claims
    assert "Tollard Down a covered service reservoir" in claims
    assert "moved to a new estate" not in claims
    assert "nothing in the text answers" not in result.text


def test_a_gloss_in_parentheses_is_not_more_to_look_for() -> None:
    """Asked in other words, "list every PEP" must not demand that each PEP's sentence
    also says "Python Enhancement Proposal" (1 of 11 found before)."""
    from harvey.analysis.finder import Query

    query = Query.of(
        "List every PEP (Python Enhancement Proposal) this text describes, with its number "
        "and what it changes"
    )
    assert query.terms == ("pep", "changes") and query.exhaustive
    # a call's arguments are not a gloss: "open(path, mode)" keeps its words
    assert Query.of("What does open(path, mode) return?").terms == (
        "open",
        "path",
        "mode",
        "return",
    )


def test_a_quote_is_said_already_only_as_a_whole_sentence_or_its_start() -> None:
    """ "0. The reservoir…" is not said already by "11400. The reservoir…", nor "Alpha. …"
    by "Words about alpha. …"; a sentence's start, cut at a chunk's end, is."""
    from harvey.analysis.answer import merge
    from harvey.analysis.evidence import Record
    from harvey.analysis.quotes import Location

    def record(n: int, text: str, offset: int) -> Record:
        return Record(text, Location("a.md", n, n), 1.0, offset, id=n)

    records = [record(1, "0. The reservoir opened.", 0), record(2, "11400. The reservoir opened.", 99),
               record(3, "Alpha. Words about alpha.", 200),
               record(4, "Words about alpha. Words about alpha.", 300),
               record(5, "11400. The reservoir", 400)]  # fmt: skip
    kept = merge(records, exhaustive=True).records
    assert [r.id for r in kept] == [1, 2, 3, 4]


def test_a_file_of_one_short_line_is_answered_from_it(tmp_path: Path) -> None:
    """A one-line note reads as a title to the unit splitter; a title alone answers
    nothing, but when the file is nothing else it is what there is."""
    text = answer_of("When do we leave?", "We leave for Lisbon on 3 May.\n", tmp_path)
    assert "Lisbon on 3 May" in claims_of(text)
