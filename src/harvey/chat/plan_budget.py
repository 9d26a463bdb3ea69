"""The plan injection budget: one reducer that bounds a plan wherever it is injected.

A session's plan is a durable markdown document whose newest material sits at
its *end*. Harvey injects it into prompts at two sites (the turn after it
changed, and on a handover when a session is continued); unbounded it eats the context, and cut
naively (the first N bytes) it loses the tail and can split a multi-byte
character. ``reduce_plan`` keeps whole sections from the head and the tail,
drops only whole middle sections, and says in-band what it dropped, so the model
knows to call ``get_plan`` for the rest. The requirements R1–R15 are in
``specs/plan-budget.md``; the comments below cite them.

Everything is measured in UTF-8 bytes and all cuts fall on ``\\n`` boundaries,
which are never inside a multi-byte character (R8). The functions are pure:
no module state, no caching (R15).
"""

from __future__ import annotations

DYNAMIC_BUDGET = 4000
"""Bytes of plan a changed plan's summary carries (after ``Plan summary: ``)."""

HANDOVER_BUDGET = 12000
"""Bytes of plan carried by the handover frame when a session is continued."""

NOTICE_TEMPLATE = (
    "[Harvey: plan reduced to fit the injection budget; {omitted} of {total} sections "
    "omitted{shortened}. Call get_plan for the full plan.]"
)
SHORTENED_CLAUSE = ", and the retained section was shortened"
MARKER = "[Harvey: section truncated here]"

OPEN_TAG = "<harvey-system>"
CLOSE_TAG = "</harvey-system>"

_HEADING = b"## "
_NL = b"\n"
# Lone surrogates cannot come from valid UTF-8, but a str may still carry them;
# "surrogatepass" keeps the reducer total and round-trips them unchanged.
_ENCODING_ERRORS = "surrogatepass"


def _encode(text: str) -> bytes:
    return text.encode("utf-8", _ENCODING_ERRORS)


def _decode(data: bytes) -> str:
    return data.decode("utf-8", _ENCODING_ERRORS)


def render_notice(omitted: int, total: int, shortened: bool) -> str:
    """The exact in-band notice (R3); ``shortened`` adds the line-path clause."""
    return NOTICE_TEMPLATE.format(
        omitted=omitted, total=total, shortened=SHORTENED_CLAUSE if shortened else ""
    )


def section_bounds(data: bytes) -> list[tuple[int, int]]:
    """Locate the sections of a UTF-8 document as ``(start, end)`` byte offsets.

    A section starts at a line beginning with ``## `` and runs to the next such
    line or the end; a non-empty preamble before the first heading is a section
    of its own; no heading at all means one section. Headings are located, never
    read: ``### `` is not a boundary, and code fences are deliberately not
    tracked. Linear in the size, and nothing is copied.
    """
    if not data:
        return []
    starts = [0]
    pos = data.find(b"\n" + _HEADING)
    while pos != -1:
        starts.append(pos + 1)
        pos = data.find(b"\n" + _HEADING, pos + 1)
    ends = [*starts[1:], len(data)]
    # When the document opens with a heading the "preamble" span is empty and
    # is not a section; no other span can be empty.
    return [(a, b) for a, b in zip(starts, ends, strict=True) if b > a]


def _leading_lines(section: bytes, limit: int) -> bytes:
    """The longest run of whole leading lines of ``section`` within ``limit`` bytes (R7)."""
    end = 0
    while end < len(section):
        nl = section.find(_NL, end)
        line_end = len(section) if nl == -1 else nl + 1
        if line_end > limit:
            break
        end = line_end
    return section[:end]


def _select_sections(sizes: list[int], available: int) -> tuple[list[int], list[int]]:
    """R5/R6: alternate tail-first between a head run and a tail run of whole sections.

    Returns the kept head indices and the kept tail indices (tail in descending
    order). A run closes for good on the first candidate that does not fit, and
    its turns pass to the other run: no skipping ahead, no re-selection.
    """
    head: list[int] = []
    tail: list[int] = []
    lo, hi = 0, len(sizes) - 1
    head_open = tail_open = True
    kept = 0
    tail_turn = True
    while (head_open or tail_open) and lo <= hi:
        use_tail = tail_open if tail_turn else not head_open
        if use_tail:
            if sizes[hi] <= available - kept:
                kept += sizes[hi]
                tail.append(hi)
                hi -= 1
            else:
                tail_open = False
        else:
            if sizes[lo] <= available - kept:
                kept += sizes[lo]
                head.append(lo)
                lo += 1
            else:
                head_open = False
        tail_turn = not tail_turn
    return head, tail


def _append_after_newline(out: bytes, piece: str) -> bytes:
    """R6 assembly: one ``\\n`` before ``piece`` only if ``out`` does not end with one."""
    sep = b"" if out.endswith(_NL) else _NL
    return out + sep + _encode(piece)


def reduce_plan(document: str, budget: int) -> tuple[str, bool, int]:
    """Bound ``document`` to ``budget`` UTF-8 bytes: ``(output, reduced, omitted_sections)``.

    ``reduced`` is True whenever the output differs from the input because of
    the budget (including the case where nothing could be emitted), and
    ``omitted_sections`` is the number of sections not represented at all.
    A whitespace-only document yields ``("", False, 0)`` (R12): emptiness is
    judged here, on the composed document, so no site carries plan logic.
    """
    if not document.strip():
        return "", False, 0
    data = _encode(document)
    if len(data) <= budget:
        return document, False, 0  # R1: byte for byte, no notice
    bounds = section_bounds(data)
    total = len(bounds)
    # Reservations are computed once, as upper bounds (R2): the widest notice
    # (both counts at {total}, clause present) and the marker, each + 1 separator.
    notice_reserve = len(_encode(render_notice(total, total, True))) + 1
    marker_reserve = len(_encode(MARKER)) + 1

    available = budget - notice_reserve
    head, tail = _select_sections([b - a for a, b in bounds], available)
    kept = len(head) + len(tail)
    if kept:
        body = b"".join(data[bounds[i][0] : bounds[i][1]] for i in [*head, *reversed(tail)])
        omitted = total - kept
        out = _append_after_newline(body, render_notice(omitted, total, False))
        return _decode(out), True, omitted

    # R7: no whole section fits; shorten the *first* section at a line boundary.
    line_budget = budget - notice_reserve - marker_reserve
    first = data[bounds[0][0] : bounds[0][1]]
    kept_lines = _leading_lines(first, line_budget) if line_budget > 0 else b""
    if not kept_lines:
        return "", True, total  # R13: never a bare notice or a bare marker
    omitted = total - 1
    out = _append_after_newline(kept_lines, MARKER)
    out = _append_after_newline(out, render_notice(omitted, total, True))
    return _decode(out), True, omitted


def _contain_tags_counted(text: str) -> tuple[str, int, int]:
    """``contain_tags`` plus its work: ``(result, passes, characters_examined)``.

    Each pass removes *both* tags in one left-to-right scan with a stack: a
    character is pushed once, and whenever a ``>`` completes either tag at the
    top of the stack, that tag is popped. Removing a tag can join its
    neighbours into a new tag (``<harvey<harvey-system>-system>``); the stack
    sees the join as soon as its ``>`` arrives, so nesting of any depth is
    resolved in the same pass. The loop scans the whole text before every pass
    and stops when neither tag is found, as R14 requires; the stack invariant
    (the stack never holds a tag) means one pass always suffices, and a plan
    without tags (the common case) costs only that scan.

    The result equals the naive "replace both until neither remains" loop: the
    two tags cannot overlap each other or themselves (each has its only ``<``
    first and its only ``>`` last), so every order of removals reaches the same
    irreducible string.
    """
    open_chars = list(OPEN_TAG)
    close_chars = list(CLOSE_TAG)
    passes = 0
    examined = 0
    while True:
        examined += len(text)  # the full scan that decides whether another pass is needed
        if OPEN_TAG not in text and CLOSE_TAG not in text:
            return text, passes, examined
        passes += 1
        stack: list[str] = []
        pieces = text.split(">")
        for index, piece in enumerate(pieces):
            stack.extend(piece)
            examined += len(piece)
            if index == len(pieces) - 1:
                break  # split() leaves no ">" after the last piece
            stack.append(">")
            examined += 1
            if stack[-len(open_chars) :] == open_chars:
                del stack[-len(open_chars) :]
            elif stack[-len(close_chars) :] == close_chars:
                del stack[-len(close_chars) :]
        text = "".join(stack)


def contain_tags(text: str) -> str:
    """Remove every exact ``<harvey-system>`` / ``</harvey-system>`` from a plan (R14).

    Applied at the handover site before reduction, so a plan cannot close or
    forge the ``<harvey-system>`` wrapper it is injected into. Case-sensitive,
    exact literals only; linear in the length of ``text`` at any nesting depth.
    """
    return _contain_tags_counted(text)[0]
