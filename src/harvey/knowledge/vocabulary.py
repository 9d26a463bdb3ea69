"""Whether a word no chunk holds is only a misspelling of one the store holds.

The floor's unknown-word check (``floor.Floor.off_subject``) reads a prompt whose words a
large store does not know as being about something else. A typo is such a word too:
"how do I confgure logging" would be kept from passages about configuring logging. So
before a word counts as unknown, the store's FTS5 index is asked for a term one edit
(a letter inserted, dropped, changed, or two swapped) from the word's stem, among the
terms that begin with the same two letters: "confgure" is near "configur", "servr" near
"server", "gien" near "given"; "iphone", "calories", "sourdough" stay unknown in the
Python docs. Words under four letters are not matched: too many short words are one letter
apart. On the benchmark's questions with one letter dropped from one word, this brings the
check's cost from 11 and 7 points of hit@5 (two seeds) to 1.5 (BENCHMARKS.md).

The stem comes from FTS5's own porter tokenizer (a one-row temporary table), so it is
the stem the index holds; both temporary tables live in the connection's ``temp``
schema and never touch the store file.
"""

from __future__ import annotations

import sqlite3

MIN_LETTERS = 4
_SETUP = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.harvey_terms USING fts5vocab(main, chunks_fts, row)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.harvey_stemmer "
    "USING fts5(x, tokenize='porter unicode61')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.harvey_stems "
    "USING fts5vocab(temp, harvey_stemmer, row)",
)


def within_one_edit(a: str, b: str) -> bool:
    """``a`` and ``b`` differ by at most one insertion, deletion, substitution or swap of
    two neighbouring letters (the optimal string alignment distance is at most 1)."""
    if a == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    if len(a) < len(b):  # one letter inserted into a
        return a[i:] == b[i + 1 :]
    if a[i + 1 :] == b[i + 1 :]:  # one letter changed
        return True
    return a[i] == b[i + 1] and a[i + 1] == b[i] and a[i + 2 :] == b[i + 2 :]  # swapped


def _stem(db: sqlite3.Connection, word: str) -> str | None:
    db.execute("INSERT INTO temp.harvey_stemmer(x) VALUES (?)", (word,))
    try:
        row = db.execute("SELECT term FROM temp.harvey_stems LIMIT 1").fetchone()
    finally:
        db.execute("DELETE FROM temp.harvey_stemmer")
    return str(row[0]) if row else None


def near_term(db: sqlite3.Connection, word: str) -> bool:
    """Whether the index of ``db`` (a knowledge store) holds a term one edit from the
    stem of ``word``, which no chunk holds as it is written."""
    word = word.strip('"').lower()
    if len(word) < MIN_LETTERS:
        return False
    for statement in _SETUP:
        db.execute(statement)
    stem = _stem(db, word)
    if not stem or len(stem) < 2:
        return False
    rows = db.execute(
        "SELECT term FROM temp.harvey_terms WHERE term >= ? AND term < ?",
        (stem[:2], stem[:2] + "\U0010ffff"),
    )
    return any(within_one_edit(stem, str(term)) for (term,) in rows if term != stem)
