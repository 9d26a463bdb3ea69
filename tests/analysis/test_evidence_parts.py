"""The pieces of an answer's evidence: atoms, units, the finder, the merge, the check."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from harvey.analysis.answer import Merged, claims_of, evidence_answer, merge
from harvey.analysis.atoms import Kind, Source, atoms, grounded_share
from harvey.analysis.evidence import ChunkEvidence, Dropped, Record
from harvey.analysis.finder import Query, candidates
from harvey.analysis.quotes import Location
from harvey.analysis.sizes import answer_kind, evidence_style, is_small
from harvey.analysis.synthesis import check
from harvey.chunks.units import split_units


def kinds(text: str) -> list[tuple[str, str]]:
    return [(a.kind.value, a.text) for a in atoms(text)]


def test_atoms_are_dates_numbers_versions_names_and_quoted_words() -> None:
    assert kinds("The Stenset Dam failed on 18 August 1902 near Harrow Bay.") == [
        ("name", "Stenset Dam"), ("date", "18 August 1902"), ("name", "Harrow Bay"),
    ]  # fmt: skip
    assert kinds("Demand fell 3.5% a year; 6,400 people; version 4.3-4.1.") == [
        ("number", "3.5%"), ("number", "6,400"), ("version", "4.3-4.1"),
    ]  # fmt: skip
    assert kinds(" -- Sébastien Villemot <s@d.org>  Sat, 10 Apr 2021 15:55:15 +0200") == [
        ("name", "Sébastien Villemot"), ("date", "Sat, 10 Apr 2021"),
        ("number", "15:55:15 +0200"),
    ]  # fmt: skip
    assert kinds('He said "a halfpenny a bucket" to Embery.') == [
        ("quote", "a halfpenny a bucket"), ("name", "Embery"),
    ]  # fmt: skip
    assert kinds("The town grew.") == []  # a sentence's first word is not a name


def test_grounding_is_whole_words_and_ignores_thousands_commas() -> None:
    source = Source("In 1902 the 6400 residents of Harrow Bay drank it.")
    assert source.holds("6,400") and source.holds("1902") and source.holds("harrow bay")
    assert not source.holds("190") and not source.holds("Harrow Bayside")
    assert grounded_share("It was 1902 in Harrow Bay, 1903 in Leeds.", source) == (2, 4)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab. \nAB1-*#=")), max_size=400))
def test_units_are_exact_ordered_slices_that_never_overlap(text: str) -> None:
    end = 0
    for unit in split_units(text):
        assert text[unit.start : unit.end] == unit.text and unit.text.strip()
        assert unit.start >= end
        end = unit.end


def test_units_join_wrapped_prose_and_keep_items_and_headings_apart() -> None:
    text = (
        "## Wells\n\nThe wells were shallow, rarely more than twelve feet, and they\n"
        "were dug into gravel. Dr. Orme counted them.\n\n- one item\n- another item\n"
    )
    units = split_units(text)
    assert [u.text for u in units] == [
        "## Wells",
        "The wells were shallow, rarely more than twelve feet, and they\nwere dug into gravel.",
        "Dr. Orme counted them.",
        "- one item",
        "- another item",
    ]
    assert [u.heading for u in units] == [True, False, False, False, False]


def test_an_instruction_is_read_into_words_kinds_and_every() -> None:
    assert Query.of("List every archivist's note.") == Query(
        ("archivist", "note"), frozenset(), True
    )
    assert Query.of("When did the dam fail, and who was blamed?").kinds == {Kind.DATE, Kind.NAME}
    assert Query.of("When should a program use logging?").kinds == frozenset()  # a condition
    assert Query.of("List every version and date in make's changelog.", ["make.changelog"]) == (
        Query((), frozenset({Kind.VERSION, Kind.DATE}), True)
    )
    assert Query.of("List the section headings of the license.").headings
    assert Query.of("Summarise this document.").outline


def test_candidates_hold_the_instructions_words_or_the_kind_it_asks_for() -> None:
    units = split_units(
        "The dam was built in 1881. The dam was built of brick. The dam leaked. A note on pumps. "
        "Archivist's note: the ledger was rebound.\n"
    )
    found = candidates(Query.of("List every archivist's note."), units)
    assert [c.unit.text for c in found] == ["Archivist's note: the ledger was rebound."]
    dated = candidates(Query.of("When was the dam built?"), units)
    assert [c.unit.text for c in dated] == [
        "The dam was built in 1881.",
        "The dam was built of brick.",
    ]
    assert dated[0].relevance > max(c.relevance for c in dated[1:])  # the date ranks first


def record(quote: str, offset: int, relevance: float = 1.0, number: int = 1) -> Record:
    return Record(quote, Location("a.md", 1, 1), relevance, offset, id=number)


def test_the_merge_joins_overlapping_records_and_keeps_the_best_within_a_budget() -> None:
    text = "one two three four five six seven"
    a, b = record(text[0:13], 0, number=1), record(text[8:23], 8, number=2)
    (joined,) = merge([b, a], exhaustive=True).records
    assert joined.quote == text[0:23] and joined.id == 1  # nothing of either lost
    many = [record(f"quote {i} " * 5, 100 * i, relevance=i / 10, number=i) for i in range(1, 10)]
    best = merge(many, exhaustive=False)
    assert [r.id for r in best.records] == [6, 7, 8, 9]  # relevance ≥ 0.6 of the best, in order
    small = merge(many, exhaustive=True, budget_chars=200)
    assert [r.id for r in small.records] == [8, 9] and small.left_out == 7


def test_the_evidence_answer_cites_each_quote_and_claims_only_the_quotes() -> None:
    merged = Merged([record("The dam opened in 1881.", 0, number=3)])
    answer = evidence_answer(merged, "the model is too small.")
    assert answer.text == (
        "Harvey: the model is too small.\n\n- The dam opened in 1881. [3]\n\nSources:\n[3] a.md:L1"
    )
    assert claims_of(answer.text) == "- The dam opened in 1881."
    assert "2 dropped" in evidence_answer(Merged([]), "", dropped=2).text


def test_the_check_removes_what_the_cited_records_do_not_hold() -> None:
    records = [record("The dam opened on 14 June 1881 under Edwin Lacey.", 0, number=1)]
    checked = check(
        "The dam opened on 14 June 1881 [1]. Edwin Lacey opened it [1]. "
        "It cost 120,000 pounds [1]. It failed in 1902. The mayor was proud [7].",
        records,
    )
    assert [s.split(" [")[0] for s in checked.kept] == [
        "The dam opened on 14 June 1881",
        "Edwin Lacey opened it",
    ]
    assert [why for _, why in checked.removed] == [
        "'120,000' is in none of the records it cites",
        "cites nothing, yet states '1902'",
        "cites [7], which it was not given",
    ]


def test_a_stored_result_round_trips_and_another_format_is_not_trusted() -> None:
    evidence = ChunkEvidence(
        [Record("x" * 20, Location("r.pdf", 3, 4, 2, 2), 0.5, 7, "a fact")],
        [Dropped("made up", "not in the chunk word for word")],
    )
    assert ChunkEvidence.from_json(evidence.to_json()) == evidence
    assert ChunkEvidence.from_json("a summary from before") is None
    assert ChunkEvidence.from_json('{"format": "evidence-0"}') is None


def test_small_models_get_the_evidence_and_larger_ones_write() -> None:
    for small in ("SmolLM2-135M-Instruct", "smollm2:135m", "qwen2.5:0.5b", "x-360M-Q8_0.gguf"):
        assert is_small(small) and evidence_style(small) == "harvey"
        assert answer_kind(small) == "evidence"
    for large in ("llama3.1:8b", "gpt-4o", "mixtral:8x7b"):
        assert not is_small(large) and evidence_style(large) == "model"
        assert answer_kind(large) == "synthesis"
    assert evidence_style("smollm2:135m", "choose") == "choose"
