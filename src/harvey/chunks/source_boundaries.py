"""Function, class and method starts in source code, from tree-sitter grammars.

The chunker prefers to cut source files where a definition starts, so each
chunk holds whole functions. ``tree-sitter-language-pack`` bundles compiled
grammars (no downloads). When a grammar is missing or the parse is not clean,
``definition_starts`` returns ``None`` and the chunker falls back to the
seed's blank-line-then-signature heuristic — a wrong tree would cut worse
than the heuristic does.

Only top-level definitions are boundaries, plus the nested ones (methods) of a
definition too big for one chunk: cutting between two methods of a small
class would split what fits together.
"""

from __future__ import annotations

import logging
import re
from functools import lru_cache
from typing import Any

from harvey.errors import GrammarUnavailable

log = logging.getLogger(__name__)

# Node types that start a definition, across the bundled grammars: Python
# function_definition / class_definition / decorated_definition, Go
# function_declaration / method_declaration / type_declaration, Rust
# function_item / impl_item / trait_item, JS/TS class_declaration and
# export_statement, C/C++ function_definition / struct_specifier, Java/Kotlin
# class, interface, enum, constructor and method declarations, ...
_DEFINITION = re.compile(
    r"function|method|class|struct|impl_item|trait|interface|enum|module|mod_item|namespace"
    r"|decorated_definition|type_declaration|type_alias|type_item|export_statement|constructor"
    r"|object_declaration|protocol|union|template_declaration|macro_definition|record"
)
_NOT_DEFINITION = re.compile(r"call|expression|identifier|parameter|argument|body|_type$")
_MAX_DEPTH = 4


@lru_cache(maxsize=32)
def load_parser(language: str) -> Any:
    """A cached tree-sitter parser for ``language``; raises ``GrammarUnavailable``."""
    try:
        from tree_sitter_language_pack import get_parser

        return get_parser(language)  # type: ignore[arg-type]
    except (ImportError, LookupError) as exc:  # the pack is absent or lacks this language
        raise GrammarUnavailable(f"no tree-sitter grammar for {language!r}: {exc}") from exc
    except Exception as exc:
        # Broad on purpose: a broken compiled binding can fail in any way (OSError
        # loading it, ValueError for a version mismatch, ...) and the heuristic is
        # always a correct fallback, so log it and carry on.
        log.debug("tree-sitter grammar for %r is unusable", language, exc_info=True)
        raise GrammarUnavailable(f"no tree-sitter grammar for {language!r}: {exc}") from exc


def _is_definition(node: Any) -> bool:
    kind: str = node.type
    return bool(_DEFINITION.search(kind)) and not _NOT_DEFINITION.search(kind)


def _line_start(node: Any) -> int:
    # tree-sitter columns are byte offsets within the line.
    return int(node.start_byte - node.start_point.column)


def _collect(node: Any, size: int, out: list[tuple[int, int]], depth: int) -> None:
    """Add ``(start, depth)`` of definitions among ``node``'s children (and inside big ones)."""
    lead: Any = None  # first of a run of comments directly above the next node
    prev_row = -2
    for child in node.named_children:
        kind: str = child.type
        if "comment" in kind:
            if lead is None or child.start_point.row > prev_row + 1:
                lead = child
            prev_row = child.end_point.row
            continue
        if _is_definition(child):
            attached = lead is not None and child.start_point.row <= prev_row + 1
            out.append((_line_start(lead if attached else child), depth))
        if depth < _MAX_DEPTH and child.end_byte - child.start_byte > size:
            _collect(child, size, out, depth + 1)
        lead = None
        prev_row = child.end_point.row


def definition_levels(data: bytes, language: str, size: int) -> tuple[list[int], list[int]] | None:
    """``(top-level starts, all starts)``, sorted byte offsets of line starts, or ``None``.

    The chunker prefers a top-level boundary (it keeps whole classes and
    functions together) over a nested one, which it uses only inside a
    definition bigger than ``size``. ``None`` means: fall back to the heuristic.
    """
    try:
        parser = load_parser(language)
    except GrammarUnavailable:
        return None
    try:
        tree = parser.parse(data)
    except Exception:
        # Broad on purpose, as in load_parser: a binding bug must cost the
        # grammar's boundaries only, never the read.
        log.debug("tree-sitter could not parse %s source", language, exc_info=True)
        return None
    root = tree.root_node
    if root.has_error:
        return None
    out: list[tuple[int, int]] = []
    _collect(root, size, out, 0)
    top = sorted({p for p, depth in out if p > 0 and depth == 0})
    return top, sorted({p for p, _ in out if p > 0})


def definition_starts(data: bytes, language: str, size: int) -> list[int] | None:
    """Sorted byte offsets (line starts) where definitions begin, or ``None`` to fall back.

    ``size`` is the chunk size: definitions bigger than that also contribute
    their nested definitions (a big class's methods).
    """
    levels = definition_levels(data, language, size)
    return None if levels is None else levels[1]
