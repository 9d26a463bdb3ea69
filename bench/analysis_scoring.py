"""How the analysis-quality benchmark scores an answer: by string matching alone.

No model judges another. Three figures, each a count over what can be checked:

* **grounding** — of the answer's checkable atoms (its dates, numbers, versions,
  capitalised names and quoted phrases: ``harvey.analysis.atoms``), how many occur
  in the source document, compared as a reader would (case, whitespace, quote marks
  and dashes folded; whole words only, so ``19`` is not found inside ``1902``).
  Harvey's own framing lines (``Harvey: …``), its ``Sources:`` list and its ``[n]``
  markers are not claims and are left out (``answer.claims_of``) — for every
  pipeline alike;
* **coverage** — of the case's gold list, how many occur in the answer;
* **citation validity** — of the answer's citations, how many quote words that are
  in the lines (or pages) they name, read back from the file itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harvey.analysis.answer import Citation, claims_of
from harvey.analysis.atoms import Source, grounded_share
from harvey.analysis.matching import find_words, normalise


@dataclass(frozen=True)
class Score:
    grounded: int
    atoms: int
    covered: int
    gold: int
    valid: int
    citations: int

    @property
    def grounding(self) -> float | None:
        return self.grounded / self.atoms if self.atoms else None

    @property
    def coverage(self) -> float | None:
        return self.covered / self.gold if self.gold else None

    @property
    def validity(self) -> float | None:
        return self.valid / self.citations if self.citations else None


def coverage(answer: str, gold: Sequence[str]) -> int:
    said = normalise(claims_of(answer)).replace(",", "")
    return sum(1 for g in gold if find_words(normalise(g).replace(",", ""), said) >= 0)


def citation_valid(citation: Citation, source_text: str) -> bool:
    """Its quote is in the lines it names, in the document as written."""
    lines = source_text.split("\n")  # what a line is to an editor (not \f, not \x1c)
    loc = citation.location
    span = "\n".join(lines[loc.first_line - 1 : loc.last_line])
    return find_words(normalise(citation.quote), normalise(span)) >= 0


def score(answer: str, source: str, gold: Sequence[str], citations: Sequence[Citation]) -> Score:
    grounded, atoms = grounded_share(claims_of(answer), Source(source))
    valid = sum(1 for c in citations if citation_valid(c, source))
    return Score(grounded, atoms, coverage(answer, gold), len(gold), valid, len(citations))


__all__ = ["Score", "citation_valid", "coverage", "score"]
