"""Questions worded as a reader asks them, over documents nobody in this project wrote.

``harvey analyze FILE -i QUESTION`` must find the sentences of a document that answer a
question. A reader who has not read the page asks in their own words, not the page's:
"when did this version come out?", not "Python 3.9 was released on". This data set
measures exactly that gap (``bench_reader_questions.py`` runs it).

The documents, all offline at bench time: pages of the Python 3.11 documentation (the
reStructuredText sources of the Debian package ``python3.11-doc``, fetched by
``bench/corpora.py``) and the GPL-3 text in ``/usr/share/common-licenses``.

Every question holds:

* ``doc`` — a key of ``DOCUMENTS``;
* ``question`` — the reader's wording;
* ``gold`` — a tuple of **alternatives**: the question is answered (a hit) when ANY of them
  occurs in the retrieved text or the answer, compared by ``harvey.analysis.matching``
  (``find_words(normalise(gold), normalise(text))``). Each is short and distinctive (a
  number, a name, a phrase of 2-6 words), occurs in the document verbatim under
  ``normalise`` and in the answering sentence;
* ``answer_sentence`` — the sentence that answers, verbatim from the document (up to
  whitespace, which ``normalise`` folds), so the wording rule can be checked;
* ``kind`` — ``paraphrase``: the question shares at most ONE content word with the
  answering sentence (stopwords and question words left out, words compared by a
  simple stem: lowercase, ``s``/``es``/``ed``/``ing``/``ly`` stripped); ``literal``: a
  control that reuses the answer's own words, which any word search should find;
* ``held_out``.

``bench/reader_rules.py`` checks every rule (``python -m bench.reader_rules``), and
``tests/test_bench_reader_questions.py`` runs it in the test suite.

**Held out.** ``HELD_OUT`` was written first, before any retriever or Harvey was run on
any question of this file. It must never be used to tune anything — not a finder's rule,
not a weight, not a threshold, not a prompt. Tune on ``IN_SAMPLE`` only; the held-out
row is the honest one. (``IN_SAMPLE`` was written right after, in the same sitting, also
before anything was run.)

``DEMO_GOLD`` is the gold list for ``make demo``'s question over
``src/harvey/data/sample.md``: every dam and reservoir the history names, each with the
dates its sentences give.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bench.analysis_cases import Document, _license, _python_doc

PARAPHRASE = "paraphrase"
LITERAL = "literal"


@dataclass(frozen=True)
class Question:
    doc: str  # a key of DOCUMENTS
    question: str
    gold: tuple[str, ...]  # alternatives: a hit when ANY of them is found
    answer_sentence: str  # verbatim from the document (whitespace aside)
    kind: str  # paraphrase | literal
    held_out: bool = False


DOCUMENTS: dict[str, Callable[[], Document]] = {
    "faq-general": lambda: _python_doc("faq/general.rst.txt"),
    "faq-design": lambda: _python_doc("faq/design.rst.txt"),
    "floatingpoint": lambda: _python_doc("tutorial/floatingpoint.rst.txt"),
    "json": lambda: _python_doc("library/json.rst.txt"),
    "unicode": lambda: _python_doc("howto/unicode.rst.txt"),
    "regex": lambda: _python_doc("howto/regex.rst.txt"),
    "sorting": lambda: _python_doc("howto/sorting.rst.txt"),
    "whatsnew39": lambda: _python_doc("whatsnew/3.9.rst.txt"),
    "gpl3": lambda: _license("GPL-3"),
}


def _p(doc: str, question: str, gold: tuple[str, ...], sentence: str, held: bool) -> Question:
    return Question(doc, question, gold, sentence, PARAPHRASE, held)


def _l(doc: str, question: str, gold: tuple[str, ...], sentence: str, held: bool) -> Question:
    return Question(doc, question, gold, sentence, LITERAL, held)


# ----------------------------------------------------------------- held out (written first)

HELD_OUT: list[Question] = [
    _p(
        "faq-general",
        "When was the language first shared with the public online?",
        ("February 1991",),
        "In February 1991, after just over a year of development, I decided to post to USENET.",
        True,
    ),
    _p(
        "faq-general",
        "Where did the way errors are raised and caught come from?",
        ("Modula-3",),
        "Modula-3 is the origin of the syntax and semantics used for exceptions, and some "
        "other Python features.",
        True,
    ),
    _p(
        "faq-design",
        "Does guarding code against errors cost much when no error actually happens?",
        ("extremely efficient",),
        "A try/except block is extremely efficient if no exceptions are raised.",
        True,
    ),
    _p(
        "faq-design",
        "How do I pick among many branches without a long if-chain?",
        ("dictionary mapping case values to functions",),
        "For cases where you need to choose from a very large number of possibilities, you "
        "can create a dictionary mapping case values to functions to call.",
        True,
    ),
    _p(
        "floatingpoint",
        "Which call avoids drift when I add up a long list of floats?",
        ("math.fsum",),
        "Another helpful tool is the :func:`math.fsum` function which helps mitigate "
        "loss-of-precision during summation.",
        True,
    ),
    _p(
        "floatingpoint",
        "Is my program or the interpreter broken when 0.1 + 0.2 looks off?",
        ("not a bug in Python", "not a bug in your code"),
        "Note that this is in the very nature of binary floating-point: this is not a bug "
        "in Python, and it is not a bug in your code either.",
        True,
    ),
    _p(
        "json",
        "My mapping had integer labels, but after saving and reloading they are text: why?",
        ("coerced to strings",),
        "When a dictionary is converted into JSON, all the keys of the dictionary are "
        "coerced to strings.",
        True,
    ),
    _p(
        "json",
        "How should I guard against an attacker's input exhausting my server?",
        ("Limiting the size of data",),
        "Limiting the size of data to be parsed is recommended.",
        True,
    ),
    _p(
        "unicode",
        "What's the term for the drawn outline you actually see for a letter in a font?",
        ("glyph",),
        "A character is represented on a screen or on paper by a set of graphical elements "
        "that's called a **glyph**.",
        True,
    ),
    _p(
        "unicode",
        "How many character sets ship with the interpreter?",
        ("roughly 100",),
        "Python comes with roughly 100 different encodings; see the Python Library "
        "Reference at :ref:`standard-encodings` for a list.",
        True,
    ),
    _p(
        "regex",
        "In what language is the regex executor itself coded?",
        ("written in C",),
        "Regular expression patterns are compiled into a series of bytecodes which are then "
        "executed by a matching engine written in C.",
        True,
    ),
    _p(
        "regex",
        "If I leave out the maximum inside curly-bracket counts, how many repeats are allowed?",
        ("upper bound of infinity",),
        "Omitting *m* is interpreted as a lower limit of 0, while omitting *n* results in an "
        "upper bound of infinity.",
        True,
    ),
    _p(
        "sorting",
        "Which person gives his name to the tag-sort-untag technique?",
        ("Randal L. Schwartz", "Schwartzian transform"),
        "Another name for this idiom is `Schwartzian transform "
        "<https://en.wikipedia.org/wiki/Schwartzian_transform>`_\\, after Randal L. "
        "Schwartz, who popularized it among Perl programmers.",
        True,
    ),
    _p(
        "sorting",
        "How can I get biggest-to-smallest output instead?",
        ("*reverse* parameter",),
        "Both :meth:`list.sort` and :func:`sorted` accept a *reverse* parameter with a "
        "boolean value.",
        True,
    ),
    _p(
        "whatsnew39",
        "Can I still opt into the legacy syntax analyser in this release?",
        ("oldparser",),
        "In Python 3.9 *only*, you can switch back to the LL(1) parser using a command line "
        "switch (``-X oldparser``) or an environment variable (``PYTHONOLDPARSER=1``).",
        True,
    ),
    _p(
        "whatsnew39",
        "How often will new versions ship from now on?",
        ("annual release cycle",),
        "* :pep:`602`, CPython adopts an annual release cycle.",
        True,
    ),
    _p(
        "gpl3",
        "If I stop breaking the terms, how long before my rights come back for good unless "
        "the author objects?",
        ("60 days",),
        "However, if you cease all violation of this License, then your license from a "
        "particular copyright holder is reinstated (a) provisionally, unless and until the "
        "copyright holder explicitly and finally terminates your license, and (b) "
        "permanently, if the copyright holder fails to notify you of the violation by some "
        "reasonable means prior to 60 days after the cessation.",
        True,
    ),
    _p(
        "gpl3",
        "Am I allowed to merge this with code under the AGPL?",
        ("GNU Affero General Public License",),
        "Notwithstanding any other provision of this License, you have permission to link or "
        "combine any covered work with a work licensed under version 3 of the GNU Affero "
        "General Public License into a single combined work, and to convey the resulting "
        "work.",
        True,
    ),
    _l(
        "gpl3",
        "How many days after receipt of the notice do you have to cure the violation?",
        ("30 days",),
        "Moreover, your license from a particular copyright holder is reinstated "
        "permanently if the copyright holder notifies you of the violation by some "
        "reasonable means, this is the first time you have received notice of violation of "
        "this License (for any work) from that copyright holder, and you cure the violation "
        "prior to 30 days after your receipt of the notice.",
        True,
    ),
    _l(
        "unicode",
        "What does UTF stand for?",
        ("Unicode Transformation Format",),
        "UTF stands for \"Unicode Transformation Format\", and the '8' means that 8-bit "
        "values are used in the encoding.",
        True,
    ),
]


# ----------------------------------------------------------------- in sample

IN_SAMPLE: list[Question] = [
    # faq/general
    _p(
        "faq-general",
        "Who owns the rights to recent versions of the language?",
        ("Python Software Foundation",),
        "The Python Software Foundation is an independent non-profit organization that holds "
        "the copyright on Python versions 2.1 and newer.",
        False,
    ),
    _p(
        "faq-general",
        "In what year did its creator begin building it during a winter vacation?",
        ("1989",),
        "During the 1989 Christmas holidays, I had a lot of time on my hand, so I decided to "
        "give it a try.",
        False,
    ),
    _p(
        "faq-general",
        "Can I charge money for a product that bundles the interpreter?",
        ("commercial use", "sell products that incorporate Python"),
        "If you honor the copyright rules, it's OK to use Python for commercial use, to sell "
        "copies of Python in source or binary form (modified or unmodified), or to sell "
        "products that incorporate Python in some form.",
        False,
    ),
    _l(
        "faq-general",
        "What is the suffix for a release candidate version?",
        ('"rcN"',),
        'The suffix for a release candidate version is "rcN" for some small number *N*.',
        False,
    ),
    # faq/design
    _p(
        "faq-design",
        "What's the internal structure behind the built-in sequence type: a chain of nodes?",
        ("variable-length arrays",),
        "CPython's lists are really variable-length arrays, not Lisp-style linked lists.",
        False,
    ),
    _p(
        "faq-design",
        "How does the runtime figure out which values nobody points to anymore?",
        ("reference counting",),
        "The standard implementation of Python, :term:`CPython`, uses reference counting to "
        "detect inaccessible objects, and another mechanism to collect reference cycles, "
        "periodically executing a cycle detection algorithm which looks for inaccessible "
        "cycles and deletes the objects involved.",
        False,
    ),
    _p(
        "faq-design",
        "How long does fetching one entry from a mapping take, regardless of its size?",
        ("constant time",),
        "Assuming that you're storing keys that all have different hash values, this means "
        "that dictionaries take constant time -- O(1), in Big-O notation -- to retrieve a "
        "key.",
        False,
    ),
    _l(
        "faq-design",
        "Which elements can be used as dictionary keys?",
        ("Only immutable elements",),
        "Only immutable elements can be used as dictionary keys, and hence only tuples and "
        "not lists can be used as keys.",
        False,
    ),
    # tutorial/floatingpoint
    _p(
        "floatingpoint",
        "What should I reach for when bookkeeping sums of dollars can't tolerate tiny errors?",
        ("accounting applications",),
        "For use cases which require exact decimal representation, try using the "
        ":mod:`decimal` module which implements decimal arithmetic suitable for accounting "
        "applications and high-precision applications.",
        False,
    ),
    _p(
        "floatingpoint",
        "Since what version has the interpreter stopped printing those long tails when "
        "echoing a tenth?",
        ("Python 3.1",),
        "Starting with Python 3.1, Python (on most systems) is now able to choose the "
        "shortest of these and simply display ``0.1``.",
        False,
    ),
    _p(
        "floatingpoint",
        "How can I get the precise numerator and denominator a number is stored as?",
        ("as_integer_ratio",),
        "The :meth:`float.as_integer_ratio` method expresses the value of a float as a fraction::",
        False,
    ),
    _l(
        "floatingpoint",
        "Which module implements arithmetic based on rational numbers?",
        ("rational numbers",),
        "Another form of exact arithmetic is supported by the :mod:`fractions` module which "
        "implements arithmetic based on rational numbers (so the numbers like 1/3 can be "
        "represented exactly).",
        False,
    ),
    # library/json
    _p(
        "json",
        "Can I append record after record to a single output stream with successive calls "
        "and still parse it?",
        ("not a framed protocol", "invalid JSON file"),
        "Unlike :mod:`pickle` and :mod:`marshal`, JSON is not a framed protocol, so trying to "
        "serialize multiple objects with repeated calls to :func:`dump` using the same *fp* "
        "will result in an invalid JSON file.",
        False,
    ),
    _p(
        "json",
        "How do I get the smallest possible output with no spaces at all?",
        ("(',', ':')", "eliminate whitespace"),
        "To get the most compact JSON representation, you should specify ``(',', ':')`` to "
        "eliminate whitespace.",
        False,
    ),
    _p(
        "json",
        "Is the output also readable by other human-friendly config-file formats?",
        ("YAML",),
        "JSON is a subset of `YAML <https://yaml.org/>`_ 1.2.",
        False,
    ),
    _p(
        "json",
        "Will accented letters be written as they are, or turned into backslash codes, "
        "unless I say otherwise?",
        ("ensure_ascii",),
        "If *ensure_ascii* is true (the default), the output is guaranteed to have all "
        "incoming non-ASCII characters escaped.",
        False,
    ),
    _l(
        "json",
        "What does None as the indent select?",
        ("most compact representation",),
        "``None`` (the default) selects the most compact representation.",
        False,
    ),
    # howto/unicode
    _p(
        "unicode",
        "What's the biggest ID a symbol can be given in the standard?",
        ("0x10FFFF",),
        "A code point value is an integer in the range 0 to 0x10FFFF (about 1.1 million "
        "values, the `actual number assigned "
        "<https://www.unicode.org/versions/latest/#Summary>`_ is less than that).",
        False,
    ),
    _p(
        "unicode",
        "What goes wrong with fixed 32-bit storage when moving files between machines with "
        "other chips?",
        ("not portable",),
        "It's not portable; different processors order the bytes differently.",
        False,
    ),
    _p(
        "unicode",
        "From what version on did ordinary text values support every script?",
        ("Python 3.0",),
        "Since Python 3.0, the language's :class:`str` type contains Unicode characters, "
        "meaning any string created using ``\"unicode rocks!\"``, ``'unicode rocks!'``, or "
        "the triple-quoted string syntax is stored as Unicode.",
        False,
    ),
    _p(
        "unicode",
        "Where do I put a note telling the interpreter my file is saved as Latin-1?",
        ("first or second line",),
        "This is done by including a special comment as either the first or second line of "
        "the source file::",
        False,
    ),
    _p(
        "unicode",
        "How do I compare text ignoring upper and lower differences, German sharp s included?",
        ("casefold",),
        "One tool for a case-insensitive comparison is the :meth:`~str.casefold` string "
        "method that converts a string to a case-insensitive form following an algorithm "
        "described by the Unicode Standard.",
        False,
    ),
    # howto/regex
    _p(
        "regex",
        "What setting lets the period wildcard also consume line breaks?",
        ("re.DOTALL",),
        "It matches anything except a newline character, and there's an alternate mode "
        "(:const:`re.DOTALL`) where it will match even a newline.",
        False,
    ),
    _p(
        "regex",
        "What do you call it when a quantifier swallows as far as it can before giving some back?",
        ("greedy",),
        "Repetitions such as ``*`` are :dfn:`greedy`; when repeating a RE, the matching "
        "engine will try to repeat it as many times as possible.",
        False,
    ),
    _l(
        "regex",
        "Which character marks something as being optional?",
        ("question mark character",),
        "The question mark character, ``?``, matches either once or zero times; you can "
        "think of it as marking something as being optional.",
        False,
    ),
    # howto/sorting
    _p(
        "sorting",
        "If two entries tie, do they keep the order they came in?",
        ("original order is preserved",),
        "That means that when multiple records have the same key, their original order is "
        "preserved.",
        False,
    ),
    _p(
        "sorting",
        "Which method does the interpreter rely on internally to arrange lists, and why is "
        "it quick on partly arranged input?",
        ("Timsort",),
        "The `Timsort <https://en.wikipedia.org/wiki/Timsort>`_ algorithm used in Python "
        "does multiple sorts efficiently because it can take advantage of any ordering "
        "already present in a dataset.",
        False,
    ),
    _p(
        "sorting",
        "How do I adapt an old two-argument compare routine for use as a key?",
        ("cmp_to_key",),
        "To accommodate those situations, Python provides :class:`functools.cmp_to_key` to "
        "wrap the comparison function to make it usable as a key function::",
        False,
    ),
    _l(
        "sorting",
        "Which module has itemgetter, attrgetter and a methodcaller function?",
        (":mod:`operator` module",),
        "The :mod:`operator` module has :func:`~operator.itemgetter`, "
        ":func:`~operator.attrgetter`, and a :func:`~operator.methodcaller` function.",
        False,
    ),
    # whatsnew/3.9
    _p(
        "whatsnew39",
        "When did this version come out?",
        ("October 5, 2020",),
        "Python 3.9 was released on October 5, 2020.",
        False,
    ),
    _p(
        "whatsnew39",
        "How can I combine two mappings into a new one with a single symbol?",
        ("Merge (``|``)", "update (``|=``) operators"),
        "Merge (``|``) and update (``|=``) operators have been added to the built-in "
        ":class:`dict` class.",
        False,
    ),
    _p(
        "whatsnew39",
        "Is there something in the standard library now for ordering jobs so each runs after "
        "its prerequisites?",
        ("graphlib",),
        "A new module, :mod:`graphlib`, was added that contains the "
        ":class:`graphlib.TopologicalSorter` class to offer functionality to perform "
        "topological sorting of graphs.",
        False,
    ),
    _p(
        "whatsnew39",
        "How do I strip a known start off a string without slicing?",
        ("removeprefix",),
        ":meth:`str.removeprefix(prefix)<str.removeprefix>` and "
        ":meth:`str.removesuffix(suffix)<str.removesuffix>` have been added to easily remove "
        "an unneeded prefix or a suffix from a string.",
        False,
    ),
    _l(
        "whatsnew39",
        "Which module brings support for the IANA time zone database?",
        ("zoneinfo",),
        "The :mod:`zoneinfo` module brings support for the IANA time zone database to the "
        "standard library.",
        False,
    ),
    # GPL-3
    _p(
        "gpl3",
        "What's the minimum period I must honour a request for the original sources after "
        "shipping gadgets?",
        ("at least three years",),
        "b) Convey the object code in, or embodied in, a physical product (including a "
        "physical distribution medium), accompanied by a written offer, valid for at least "
        "three years and valid for as long as you offer spare parts or customer support for "
        "that product model, to give anyone who possesses the object code either (1) a copy "
        "of the Corresponding Source for all the software in the product that is covered by "
        "this License, on a durable physical medium customarily used for software "
        "interchange, for a price no more than your reasonable cost of physically performing "
        "this conveying of source, or (2) access to copy the Corresponding Source from a "
        "network server at no charge.",
        False,
    ),
    _p(
        "gpl3",
        "Must I sign up to these conditions merely to use my copy?",
        ("not required to accept this License",),
        "You are not required to accept this License in order to receive or run a copy of "
        "the Program.",
        False,
    ),
    _p(
        "gpl3",
        "Who can put out newer editions of these terms?",
        ("Free Software Foundation",),
        "The Free Software Foundation may publish revised and/or new versions of the GNU "
        "General Public License from time to time.",
        False,
    ),
]

QUESTIONS: list[Question] = HELD_OUT + IN_SAMPLE


@dataclass(frozen=True)
class DemoItem:
    """One dam or reservoir of ``sample.md``: held by an answer when one of its ``names``
    and one of its ``dates`` are both in it (alternatives each, as for ``gold``)."""

    names: tuple[str, ...]
    dates: tuple[str, ...]


DEMO_QUESTION = "List every dam and reservoir, and when it was built or opened."
DEMO_DOC = "src/harvey/data/sample.md"

#: Every dam and reservoir ``sample.md`` names, with the dates its sentences give.
DEMO_GOLD: tuple[DemoItem, ...] = (
    # the intake weir on the Kettle Brook (a low dam) and its settling tanks: the company's
    # first works; water first flowed through the new mains on 1 October 1863
    DemoItem(("Hollins Mill", "intake weir"), ("1863", "1861")),
    # "On the summit of Tollard Down a covered service reservoir holding 1.2 million
    # gallons" — the same 1861-1863 works
    DemoItem(("Tollard Down",), ("1863", "1861")),
    # work began in April 1876; opened by Edwin Lacey on 14 June 1881
    DemoItem(("Linmore",), ("1881", "1876")),
    # "His Upper Stennet embankment, built between 1885 and 1887"; failed 3 March 1889
    DemoItem(("Upper Stennet", "Stennet"), ("1885", "1887")),
    # the high-level reservoir on Tollard Down, filled by the Brindle Meadow engines
    # opened in 1899
    DemoItem(("high-level reservoir",), ("1899",)),
    # construction began in the spring of 1953; formally opened on 9 May 1958
    DemoItem(("Carrow",), ("1958", "1953", "1957")),
    # "a new service reservoir at Northfield", fed by the Carrow main (1958)
    DemoItem(("Northfield",), ("1958",)),
)


__all__ = [
    "DEMO_DOC",
    "DEMO_GOLD",
    "DEMO_QUESTION",
    "DOCUMENTS",
    "HELD_OUT",
    "IN_SAMPLE",
    "LITERAL",
    "PARAPHRASE",
    "QUESTIONS",
    "DemoItem",
    "Question",
]
