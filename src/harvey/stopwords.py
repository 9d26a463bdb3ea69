"""Words that carry no topic, and when two words are one: what every word search shares.

A knowledge-store search and an analysis's evidence finder both leave these words out
of what they look for, and both count ``note`` and ``notes`` as one word (``same_word``).
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)

STOPWORDS = frozenset(
    _WORD.findall(
        """a an and are as at be but by can could do does doing did for from how i if in into is
        it its me my of on or so than that the their them then there these this those to was we
        were what when where which who why will with would you your should shall may might must
        get got make want need use using"""
    )
)


def same_word(query_word: str, word: str) -> bool:
    """The word, or one sharing its stem roughly as the porter tokenizer would match it
    (``note``/``notes``, ``configure``/``configuration``): both of at least four letters,
    sharing all but the shorter one's last two."""
    if query_word == word:
        return True
    short = min(len(query_word), len(word))
    if short < 4:
        return False
    pairs = zip(query_word, word, strict=False)  # up to the shorter word
    shared = next((i for i, (a, b) in enumerate(pairs) if a != b), short)
    return shared >= max(4, short - 2)
