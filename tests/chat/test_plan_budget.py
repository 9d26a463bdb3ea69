"""The plan reducer against requirements R1–R15 of specs/plan-budget.md."""

from __future__ import annotations

import re
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvey.chat.plan_budget import (
    CLOSE_TAG,
    DYNAMIC_BUDGET,
    HANDOVER_BUDGET,
    MARKER,
    OPEN_TAG,
    _contain_tags_counted,
    contain_tags,
    reduce_plan,
    render_notice,
)

NOTICE_RE = re.compile(
    r"\[Harvey: plan reduced to fit the injection budget; (\d+) of (\d+) sections "
    r"omitted(, and the retained section was shortened)?\. Call get_plan for the full plan\.\]\Z"
)


def nbytes(text: str) -> int:
    return len(text.encode("utf-8"))


def sections_of(doc: str) -> list[str]:
    """An independent reference splitter (regex, not the implementation's byte scan)."""
    starts = [m.start() for m in re.finditer(r"(?m)^## ", doc)]
    if not starts or starts[0] != 0:
        starts = [0, *starts]
    ends = [*starts[1:], len(doc)]
    return [doc[a:b] for a, b in zip(starts, ends, strict=True) if b > a]


def section(name: str, size: int, line: str = "x" * 49 + "\n") -> str:
    """A section of exactly ``size`` bytes: a heading then filler lines."""
    head = f"## {name}\n"
    body_len = size - nbytes(head)
    assert body_len >= 1
    body = (line * (body_len // len(line) + 1))[: body_len - 1] + "\n"
    return head + body


def split_notice(output: str) -> tuple[str, int, int, bool]:
    match = NOTICE_RE.search(output)
    assert match is not None, output[-300:]
    return output[: match.start()], int(match[1]), int(match[2]), match[3] is not None


# --- the literals -------------------------------------------------------------------


def test_constants_and_literals() -> None:
    assert DYNAMIC_BUDGET == 4000
    assert HANDOVER_BUDGET == 12000
    assert MARKER == "[Harvey: section truncated here]"
    assert nbytes(MARKER) == 32
    assert render_notice(1, 2, True) == (
        "[Harvey: plan reduced to fit the injection budget; 1 of 2 sections omitted, and "
        "the retained section was shortened. Call get_plan for the full plan.]"
    )
    # The spec's 161 bytes is for the tool name get_task_plan_kandev; get_plan is 12 shorter.
    assert nbytes(render_notice(1, 2, True)) == 149
    assert nbytes(render_notice(1, 2, False)) == 109


# --- R1 -----------------------------------------------------------------------------


def test_r1_under_budget_returned_byte_for_byte() -> None:
    doc = "# Plan\n\n## A\nsome text\n## B\nmore text\n"
    assert reduce_plan(doc, 10_000) == (doc, False, 0)


def test_r1_exactly_at_budget_returns_unchanged() -> None:
    doc = section("A", 3000) + section("B", 3000) + "tail 日本語 🚀\n"
    size = nbytes(doc)
    assert reduce_plan(doc, size) == (doc, False, 0)
    out, reduced, _ = reduce_plan(doc, size - 1)
    assert reduced and out != doc and nbytes(out) <= size - 1


# --- R2 -----------------------------------------------------------------------------


@pytest.mark.parametrize("count", [2, 3, 11, 101, 150])
def test_r2_section_counts_never_exceed_budget(count: int) -> None:
    # Every section is bigger than the budget, so the line path runs and the
    # reservations are as tight as they get (1-byte lines fill the space exactly).
    doc = "".join(f"## s{i}\n" + "\n" * 4500 for i in range(count))
    out, reduced, omitted = reduce_plan(doc, DYNAMIC_BUDGET)
    assert reduced and omitted == count - 1
    assert nbytes(out) <= DYNAMIC_BUDGET
    assert MARKER in out


@pytest.mark.parametrize("count", [2, 3, 11, 101, 150])
def test_r2_section_counts_whole_section_path_never_exceed(count: int) -> None:
    doc = "".join(section(f"s{i}", 700) for i in range(count))
    for budget in (DYNAMIC_BUDGET, HANDOVER_BUDGET, 1000, 5000):
        out, reduced, _ = reduce_plan(doc, budget)
        assert nbytes(out) <= budget
        assert reduced == (nbytes(doc) > budget)


@pytest.mark.parametrize("count", [2, 3, 11, 101])
def test_r2_worked_arithmetic_line_path_at_4000(count: int) -> None:
    """The spec's worked example, with the reservation *including* separator bytes."""
    doc = "".join(f"## s{i}\n" + "\n" * 4500 for i in range(count))
    out, _, _ = reduce_plan(doc, DYNAMIC_BUDGET)
    widest = nbytes(render_notice(count, count, True))
    rendered = nbytes(render_notice(count - 1, count, True))
    line_space = DYNAMIC_BUDGET - (widest + 1) - (nbytes(MARKER) + 1)
    # Retained lines fill line_space exactly and end in "\n", so no separator
    # before the marker; one before the notice. Exact unless count is a power of 10.
    assert nbytes(out) == line_space + nbytes(MARKER) + 1 + rendered
    if count < 10:
        assert nbytes(out) == 3999  # 3817 + 32 + 1 + 149 with get_plan's notice
    assert nbytes(out) <= DYNAMIC_BUDGET
    # Without the separator bytes, the same assembly would have been one over.
    assert (DYNAMIC_BUDGET - widest - nbytes(MARKER)) + nbytes(MARKER) + 1 + rendered == (
        DYNAMIC_BUDGET + 1 if widest == rendered else DYNAMIC_BUDGET
    )


# --- R3 / R4 ------------------------------------------------------------------------


def test_r3_dropped_sections_end_with_notice_counting_whole_sections() -> None:
    doc = "".join(section(f"s{i}", 1000) for i in range(10))
    out, reduced, omitted = reduce_plan(doc, DYNAMIC_BUDGET)
    body, n_omitted, total, clause = split_notice(out)
    assert reduced and not clause
    assert (n_omitted, total) == (omitted, 10)
    kept = [s for s in sections_of(doc) if s in body]
    assert len(kept) == 10 - omitted


def test_r3_line_path_omits_total_minus_one() -> None:
    doc = "".join(section(f"s{i}", 5000) for i in range(4))
    out, _, omitted = reduce_plan(doc, DYNAMIC_BUDGET)
    _, n_omitted, total, clause = split_notice(out)
    assert clause and (n_omitted, total, omitted) == (3, 4, 3)


def test_r4_nothing_dropped_no_notice() -> None:
    doc = "".join(section(f"s{i}", 1000) for i in range(3))
    out, reduced, omitted = reduce_plan(doc, DYNAMIC_BUDGET)
    assert (out, reduced, omitted) == (doc, False, 0)
    assert "[Harvey:" not in out


# --- R5 / R6 ------------------------------------------------------------------------


def test_r5_head_and_tail_runs_only_middle_dropped() -> None:
    secs = [section(f"s{i}", 900) for i in range(8)]
    out, _, omitted = reduce_plan("".join(secs), DYNAMIC_BUDGET)
    body, _, _, _ = split_notice(out)
    # (4000 - 150) // 900 = 4 whole sections: tail, head, tail, head.
    assert omitted == 4
    assert body == secs[0] + secs[1] + secs[6] + secs[7]


def test_r6_tail_first_with_odd_capacity() -> None:
    secs = [section(f"s{i}", 1200) for i in range(6)]
    out, _, omitted = reduce_plan("".join(secs), DYNAMIC_BUDGET)
    body, _, _, _ = split_notice(out)
    # Three fit: tail gets the first and third turns.
    assert omitted == 3
    assert body == secs[0] + secs[4] + secs[5]


def test_r6_small_big_small_big_keeps_only_the_first() -> None:
    small, big = 300, 5000
    secs = [section("a", small), section("b", big), section("c", small), section("d", big)]
    out, reduced, omitted = reduce_plan("".join(secs), DYNAMIC_BUDGET)
    assert reduced
    body, n_omitted, total, clause = split_notice(out)
    # Tail closes on the big last section; head keeps "a", then closes on "b";
    # "c" would fit but is never considered (close, never skip).
    assert body == secs[0]
    assert (omitted, n_omitted, total, clause) == (3, 3, 4, False)
    assert MARKER not in out


def test_r6_big_first_small_last_keeps_last_without_marker() -> None:
    secs = [section("big", 9000), section("small", 500)]
    out, _, omitted = reduce_plan("".join(secs), DYNAMIC_BUDGET)
    body, n_omitted, total, clause = split_notice(out)
    assert body == secs[1]
    assert (omitted, n_omitted, total, clause) == (1, 1, 2, False)
    assert MARKER not in out


def test_r6_separator_only_when_needed_and_no_trailing_newline() -> None:
    secs = ["# Title\n", "## A\n" + "a" * 5000 + "\n", "## B\nlast line without newline"]
    out, _, _ = reduce_plan("".join(secs), 500)
    assert out.startswith("# Title\n## B\nlast line without newline\n[Harvey: plan reduced")
    assert not out.endswith("\n")
    secs2 = ["## A\n" + "a" * 5000 + "\n", "## B\nends with newline\n"]
    out2, _, _ = reduce_plan("".join(secs2), 500)
    assert out2.startswith("## B\nends with newline\n[Harvey: plan reduced")
    assert "\n\n[Harvey" not in out2


# --- R7 -----------------------------------------------------------------------------


def test_r7_three_5000_byte_sections_at_300() -> None:
    doc = "".join(section(f"Step {i}", 5000, "y" * 39 + "\n") for i in range(3))
    out, reduced, omitted = reduce_plan(doc, 300)
    assert reduced and omitted == 2
    assert nbytes(out) <= 300
    body, n_omitted, total, clause = split_notice(out)
    assert (n_omitted, total, clause) == (2, 3, True)
    assert body.endswith(MARKER + "\n")
    kept = body[: -len(MARKER) - 1]
    # Line space is 300 - 150 - 33 = 117: the heading (10) and two 40-byte lines.
    assert kept == "## Step 0\n" + ("y" * 39 + "\n") * 2
    assert doc.startswith(kept)


def test_r7_never_cuts_mid_line() -> None:
    doc = "## Only\n" + "".join(f"line {i} " + "z" * (i % 37) + "\n" for i in range(500))
    for budget in range(200, 3000, 97):
        out, _, _ = reduce_plan(doc, budget)
        if not out:
            continue
        kept = out.split(MARKER)[0]
        assert kept.endswith("\n") and doc.startswith(kept)


# --- R8 -----------------------------------------------------------------------------


@pytest.mark.parametrize("budget", [300, 1000, DYNAMIC_BUDGET, 7777])
def test_r8_multibyte_cjk_and_emoji_stay_valid_utf8(budget: int) -> None:
    doc = "# 計画 🚀\n" + "".join(
        f"## 段階 {i} ✅\n" + ("日本語のテキスト😀👩‍👩‍👧 émoji\n" * (i * 7 + 3)) for i in range(12)
    )
    out, reduced, _ = reduce_plan(doc, budget)
    assert reduced
    raw = out.encode("utf-8")
    assert len(raw) <= budget
    assert raw.decode("utf-8") == out
    assert "\ufffd" not in out


# --- R9 / R10 -----------------------------------------------------------------------


def test_r9_deterministic() -> None:
    doc = "".join(section(f"s{i}", 333 + 17 * i) for i in range(40))
    results = {reduce_plan(doc, b) for b in [DYNAMIC_BUDGET] * 5}
    assert len(results) == 1


def test_r10_idempotent_on_a_reduced_output() -> None:
    for doc, budget in [
        ("".join(section(f"s{i}", 1000) for i in range(10)), DYNAMIC_BUDGET),
        ("".join(section(f"s{i}", 5000) for i in range(3)), 300),
    ]:
        out, reduced, _ = reduce_plan(doc, budget)
        assert reduced and out
        assert reduce_plan(out, budget) == (out, False, 0)


# --- R11 / R12 ----------------------------------------------------------------------


def test_r11_no_heading_is_one_section() -> None:
    doc = "### not a boundary\n" + "plain line\n" * 100 + "```\n##not either\n```\n"
    assert reduce_plan(doc, 10_000) == (doc, False, 0)
    out, reduced, omitted = reduce_plan(doc, 400)
    _, n_omitted, total, clause = split_notice(out)
    assert reduced and (omitted, n_omitted, total, clause) == (0, 0, 1, True)
    assert out.startswith("### not a boundary\nplain line\n")


def test_r11_heading_inside_code_fence_is_still_a_boundary() -> None:
    doc = "## A\n```\n## inside fence\n```\n" + "q" * 5000
    out, _, _ = reduce_plan(doc, 600)
    _, _, total, _ = split_notice(out)
    assert total == 2


@pytest.mark.parametrize("doc", ["", " ", "\n\n\t \n", "\u3000\n"])
@pytest.mark.parametrize("budget", [-1, 0, 1, DYNAMIC_BUDGET])
def test_r12_blank_document_injects_nothing(doc: str, budget: int) -> None:
    assert reduce_plan(doc, budget) == ("", False, 0)


# --- R13 ----------------------------------------------------------------------------


@pytest.mark.parametrize("budget", [0, -1, -sys.maxsize])
def test_r13_non_positive_budget_returns_nothing(budget: int) -> None:
    out, reduced, omitted = reduce_plan("## a\nb\n## c\nd\n", budget)
    assert (out, reduced, omitted) == ("", True, 2)


def test_r13_budget_below_notice_reservation() -> None:
    doc = "## a\nb\n## c\nd\n" * 30  # 60 tiny sections
    reserve = nbytes(render_notice(60, 60, True)) + 1
    assert reduce_plan(doc, reserve - 1)[0] == ""
    assert reduce_plan(doc, reserve + 8)[0] != ""  # one "## a\nb\n" section fits


def test_r13_holds_notice_but_not_both_reservations() -> None:
    doc = "## a\n" + "x\n" * 1000 + "## b\n" + "y\n" * 1000
    reserve = nbytes(render_notice(2, 2, True)) + 1
    for budget in range(reserve, reserve + nbytes(MARKER) + 1):
        assert reduce_plan(doc, budget)[0] == ""


def test_r13_holds_both_but_not_one_whole_line() -> None:
    doc = "## " + "w" * 80 + "\n" + "x\n" * 1000
    reserves = nbytes(render_notice(1, 1, True)) + 1 + nbytes(MARKER) + 1
    assert reduce_plan(doc, reserves + 83)[0] == ""
    out = reduce_plan(doc, reserves + 84)[0]
    assert out.startswith("## " + "w" * 80 + "\n" + MARKER)


# --- R14 ----------------------------------------------------------------------------


def naive_contain(text: str) -> str:
    """The R14 reference: one combined loop removing both tags until neither remains."""
    while OPEN_TAG in text or CLOSE_TAG in text:
        text = text.replace(OPEN_TAG, "").replace(CLOSE_TAG, "")
    return text


@pytest.mark.parametrize(
    "text",
    [
        "<harvey<harvey-system>-system>",
        "<harvey" + "</harvey-system>" + "-system>",
        "</harvey" + "<harvey-system>" + "-system>",
    ],
)
def test_r14_nested_counterexamples_become_empty(text: str) -> None:
    assert contain_tags(text) == ""


def test_r14_two_separate_loops_would_be_wrong() -> None:
    """Each counterexample defeats one of the two orders of separate loops."""

    def separate(text: str, first: str, second: str) -> str:
        while first in text:
            text = text.replace(first, "")
        while second in text:
            text = text.replace(second, "")
        return text

    a = "<harvey" + "</harvey-system>" + "-system>"
    b = "</harvey" + "<harvey-system>" + "-system>"
    assert separate(a, OPEN_TAG, CLOSE_TAG) != "" and contain_tags(a) == ""
    assert separate(b, CLOSE_TAG, OPEN_TAG) != "" and contain_tags(b) == ""


def test_r14_tag_free_text_costs_one_scan() -> None:
    text = "## Plan\n<harvey-sys> <b>bold</b> -system>\n" * 100
    assert _contain_tags_counted(text) == (text, 0, len(text))


def test_r14_exact_and_case_sensitive() -> None:
    text = "keep <Harvey-System> and <harvey-system > but drop <harvey-system>x</harvey-system>"
    assert contain_tags(text) == "keep <Harvey-System> and <harvey-system > but drop x"


def test_r14_deep_nesting_is_linear() -> None:
    depth = 20_000
    text = "<harvey" * depth + "<harvey-system>" + "-system>" * depth
    mixed = (
        ("<harvey" + "</harvey") * (depth // 2)
        + "</harvey-system>"
        + ("-system>-system>" * (depth // 2))
    )
    for case in (text, mixed):
        result, passes, examined = _contain_tags_counted(case)
        assert result == ""
        assert passes == 1  # the naive loop would need `depth` passes over the text
        assert examined <= 3 * len(case)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["<harvey", "</harvey", "-system>", OPEN_TAG, CLOSE_TAG, "<", ">", "/", "x", "é"]
        ),
        max_size=30,
    )
)
def test_r14_matches_the_combined_fixpoint_loop(parts: list[str]) -> None:
    text = "".join(parts)
    result = contain_tags(text)
    assert result == naive_contain(text)
    assert OPEN_TAG not in result and CLOSE_TAG not in result


# --- R15 ----------------------------------------------------------------------------


def test_r15_concurrent_calls_agree() -> None:
    docs = ["".join(section(f"s{i}", 400 + 37 * (i % 9 + k)) for i in range(60)) for k in range(6)]
    expected = [reduce_plan(d, b) for d in docs for b in (300, DYNAMIC_BUDGET, HANDOVER_BUDGET)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        for _ in range(3):
            got = list(
                pool.map(
                    lambda pair: reduce_plan(*pair),
                    [(d, b) for d in docs for b in (300, DYNAMIC_BUDGET, HANDOVER_BUDGET)],
                )
            )
            assert got == expected


# --- the property over random markdown ------------------------------------------------

_lines = st.one_of(
    st.text(alphabet=st.sampled_from(list("ab #-*`x日本😀é\t")), min_size=0, max_size=60).map(
        lambda s: s.replace("\n", "") + "\n"
    ),
    st.sampled_from(["\n", "### sub\n", "```\n", "## in text\n", "#\n"]),
)


@st.composite
def markdown(draw: st.DrawFn) -> str:
    preamble = "".join(draw(st.lists(_lines, max_size=4)))
    secs = draw(
        st.lists(
            st.tuples(st.text(alphabet="abc日😀 ", max_size=10), st.lists(_lines, max_size=25)),
            max_size=10,
        )
    )
    doc = preamble + "".join(f"## {t}\n" + "".join(body) for t, body in secs)
    if draw(st.booleans()) and doc.endswith("\n"):
        doc = doc[:-1]
    return doc


def check_structure(doc: str, out: str) -> None:
    """Output = head run + tail run of whole sections + notice, or shortened first + marker."""
    secs = sections_of(doc)
    body, omitted, total, clause = split_notice(out)
    assert total == len(secs)
    if clause:
        assert omitted == total - 1
        assert body.endswith(MARKER + "\n")
        kept = body[: -len(MARKER) - 1]
        # A strict prefix of whole lines always ends in "\n": no separator before the marker.
        assert kept.endswith("\n") and secs[0].startswith(kept) and kept != secs[0]
        return
    # The notice's separator is present only when the kept text lacked a final "\n".
    joined = {body}
    if body.endswith("\n") and not body[:-1].endswith("\n"):
        joined.add(body[:-1])
    matches = [
        (h, t)
        for h in range(len(secs) + 1)
        for t in range(len(secs) - h + 1)
        if "".join(secs[:h]) + "".join(secs[len(secs) - t :]) in joined
    ]
    assert any(h + t >= 1 and total - (h + t) == omitted for h, t in matches), (
        "output is not a head run plus a tail run of whole sections"
    )


@settings(max_examples=250, deadline=None)
@given(markdown(), st.one_of(st.integers(-20, 2500), st.sampled_from([4000, 12000])))
def test_property_reduce_plan(doc: str, budget: int) -> None:
    out, reduced, omitted = reduce_plan(doc, budget)
    raw = out.encode("utf-8")
    assert raw.decode("utf-8") == out  # valid UTF-8
    assert reduce_plan(doc, budget) == (out, reduced, omitted)  # deterministic
    if not doc.strip():
        assert (out, reduced) == ("", False)
        return
    if nbytes(doc) <= budget:
        assert (out, reduced, omitted) == (doc, False, 0)
        return
    assert reduced
    assert len(raw) <= max(budget, 0)
    assert reduce_plan(out, budget) == (out, False, 0) or out == ""  # idempotent
    if out:
        assert not out.endswith("\n")
        check_structure(doc, out)
        assert out.count(MARKER) <= doc.count(MARKER) + 1
