"""The reader-question data set keeps its rules (``bench/reader_rules.py``): a question whose
gold is not in its document, or a "paraphrase" that reuses its answer's words, fails here.

The documents are pages of the Python docs (``python3.11-doc``, fetched once by
``bench/corpora.py`` with ``apt-get download`` into ``bench/.corpora/``) and the GPL-3 of
``/usr/share/common-licenses``; on a machine that cannot have them the data test is
skipped, saying why. The checker's own logic is tested without them."""

from __future__ import annotations

import pytest
from bench.corpora import CorpusUnavailable
from bench.reader_questions import DEMO_GOLD, HELD_OUT, IN_SAMPLE, LITERAL, PARAPHRASE, QUESTIONS
from bench.reader_rules import check_question, shared_words, stem, violations


def test_every_question_keeps_the_rules() -> None:
    try:
        bad = violations()
    except CorpusUnavailable as exc:
        pytest.skip(f"the reader questions' documents cannot be had here: {exc}")
    assert bad == [], "\n".join(bad)


def test_the_data_set_has_its_size() -> None:
    docs = {q.doc for q in QUESTIONS}
    assert len(QUESTIONS) >= 48 and len(docs) >= 8
    assert sum(1 for q in QUESTIONS if q.kind == PARAPHRASE) >= 40
    assert sum(1 for q in QUESTIONS if q.kind == LITERAL) >= 8
    assert len(HELD_OUT) >= 14 and all(q.held_out for q in HELD_OUT)
    assert not any(q.held_out for q in IN_SAMPLE)
    assert all(item.names and item.dates for item in DEMO_GOLD)


def test_the_stem_folds_the_common_endings() -> None:
    assert {stem(w) for w in ("encode", "encoded", "encoding", "encodes")} == {"encod"}
    assert stem("Matches") == stem("match")
    assert stem("quickly") == "quick"


def test_a_paraphrase_reusing_the_answers_words_is_flagged() -> None:
    from bench.reader_questions import Question

    text = "Python 3.9 was released on October 5, 2020. It has a new parser."
    units = ["Python 3.9 was released on October 5, 2020.", "It has a new parser."]
    lazy = Question(
        "x",
        "When was Python 3.9 released?",
        ("October 5, 2020",),
        "Python 3.9 was released on October 5, 2020.",
        PARAPHRASE,
    )
    assert shared_words(lazy.question, lazy.answer_sentence) == {"python", "3", "9", "releas"}
    assert any("sharing 4 content words" in v for v in check_question(lazy, text, units))
    fine = Question(
        "x", "When did this version come out?", lazy.gold, lazy.answer_sentence, PARAPHRASE
    )
    assert check_question(fine, text, units) == []
    wrong_gold = Question(
        "x", fine.question, ("October 6, 2020",), lazy.answer_sentence, PARAPHRASE
    )
    assert len(check_question(wrong_gold, text, units)) == 3  # not in text, sentence, any unit
    # "2020" is not found inside "20201": whole words only, as the benchmark scores
    glued = Question("x", fine.question, ("2020",), "It came in 20201.", PARAPHRASE)
    assert any("answer sentence is not" in v for v in check_question(glued, text, units))


def test_a_demo_item_needs_its_name_and_a_date() -> None:
    from bench.bench_reader_questions import demo_items_held, hit

    answer = "- the Linmore Reservoir opened on 14 June 1881 [1]\n- Carrow was flooded [2]\n1958"
    assert hit(("Linmore",), answer) and not hit(("Stennet",), answer)
    held_anywhere, held_in_a_line = demo_items_held(answer)
    assert (held_anywhere, held_in_a_line) == (2, 1)  # Linmore + 1881; Carrow + 1958 apart
