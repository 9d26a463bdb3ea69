"""Words that carry no topic: a search leaves them out of what it looks for."""

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
