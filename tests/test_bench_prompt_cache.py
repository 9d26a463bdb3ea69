"""The prompt-cache benchmark without a model: its capture, its old layout and its arithmetic.

``make bench`` replays the captured session on real models and never runs in
``make test``; a capture that stopped going through the real plan path, a
transformation that stopped breaking the prefix where the old build did, or a
log line the server no longer prints would otherwise rot there unseen.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from bench.bench_prompt_cache import (
    LAYOUTS,
    EvalMeter,
    Measured,
    interleaved,
    new_tokens,
    per_turn,
    process_cpu,
    table,
)
from bench.prompt_cache_server import parse_figures
from bench.prompt_cache_session import (
    TURNS,
    Session,
    cache_keeping,
    capture,
    changed_prefix,
    first_break,
)

from harvey.messages import Message

# request index → turn: turns 2, 3 and 7 have a tool round (read_file, todo_write twice)
REQUEST_TURNS = [1, 2, 2, 3, 3, 4, 5, 6, 7, 7, 8, 9, 10]
AFTER_PLAN_A, AFTER_PLAN_B = 4, 9  # the rounds right after each todo_write


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    return capture(tmp_path_factory.mktemp("cache-session"))


def test_the_real_session_ran_ten_turns_and_wrote_the_plan_twice(session: Session) -> None:
    assert [r.turn for r in session.requests] == REQUEST_TURNS
    assert "HARVEY_SCRIPT" not in os.environ  # the capture leaves the environment as it was
    plans = [r.plan for r in session.requests]
    assert plans[:AFTER_PLAN_A] == [None] * AFTER_PLAN_A
    plan_a, plan_b = plans[AFTER_PLAN_A], plans[AFTER_PLAN_B]
    assert plan_a is not None and plan_b is not None
    assert set(plans[AFTER_PLAN_A:AFTER_PLAN_B]) == {plan_a}
    assert set(plans[AFTER_PLAN_B:]) == {plan_b}
    assert "[>] Replace the two rotten rafters" in plan_a and "Rewire" not in plan_a
    assert "[x] Replace the two rotten rafters" in plan_b and "Rewire the building" in plan_b
    # the file read on turn 2 is in the history as its tool result
    assert any(
        m.role == "tool" and "Surveyor: R. Okafor" in m.content
        for m in session.requests[2].messages
    )


def test_the_plan_rode_in_the_next_turns_user_message(session: Session) -> None:
    """Harvey's PlanContext sent what the old layout's system message held, once, with
    the first turn after each change — nothing else rides in a user message."""
    plan_a, plan_b = session.requests[AFTER_PLAN_A].plan, session.requests[AFTER_PLAN_B].plan
    assert session.plan_texts == [plan_a, plan_b]
    turn_4 = session.requests[AFTER_PLAN_A + 1].messages[-1]
    turn_8 = session.requests[AFTER_PLAN_B + 1].messages[-1]
    assert turn_4.content == f"{plan_a}\n\n{TURNS[3][0]}"
    assert turn_8.content == f"{plan_b}\n\n{TURNS[7][0]}"


def test_cache_keeping_requests_extend_each_other_and_the_old_layout_breaks_on_plan_changes(
    session: Session,
) -> None:
    keeping, changed = cache_keeping(session), changed_prefix(session)
    assert first_break(keeping) is None
    breaks = [i for i in range(1, len(changed)) if first_break(changed[i - 1 : i + 1])]
    assert breaks == [AFTER_PLAN_A, AFTER_PLAN_B]
    for request, old in zip(session.requests, changed, strict=True):
        assert old[0] == request.messages[0]  # the same system prompt first
        body = old[1:]
        if request.plan is not None:
            assert old[1].role == "system" and old[1].content == request.plan
            body = old[2:]
        assert not any("Plan summary" in m.content for m in body)
        assert len(body) == len(request.messages) - 1


def test_continued_turn_by_turn_the_session_breaks_no_prefix_either(tmp_path: Path) -> None:
    """``harvey run --continue`` per turn: a new session builder each time, history from
    sessions.db, the plan's handover in each resumed turn's user message."""
    resumed = capture(tmp_path, resume_each_turn=True)
    assert [r.turn for r in resumed.requests] == REQUEST_TURNS
    assert first_break(cache_keeping(resumed)) is None
    last_user = resumed.requests[-1].messages[-1]
    assert last_user.content.endswith(TURNS[-1][0]) and last_user.content != TURNS[-1][0]


def test_new_tokens_and_turn_sums() -> None:
    assert new_tokens([[1, 2, 3], [1, 2, 3, 4, 5], [9, 1]]) == [3, 2, 2]
    keeping = [
        Measured(1, 10, 10, 1.0, 10, 0.5),
        Measured(2, 14, 3, 0.5, 4),
        Measured(2, 20, 6, 0.5, 6, 0.2),
    ]
    changed = [Measured(1, 10, 10, 2.0), Measured(2, 15, 14, 1.0), Measured(2, 21, 7, 1.0)]
    rows = per_turn(dict(zip(LAYOUTS, [keeping, changed], strict=True)))
    assert [(r.turn, r.new) for r in rows] == [(1, 10), (2, 10)]
    assert rows[1].evaluated == {LAYOUTS[0]: 9, LAYOUTS[1]: 21}
    assert rows[1].within(LAYOUTS[0]) and not rows[1].within(LAYOUTS[1])
    assert rows[1].cpu == {LAYOUTS[0]: 0.2, LAYOUTS[1]: 0.0}
    assert table(rows).splitlines()[-1].startswith("| all | 20 | 19 | 31 | yes | **no** |")


def test_layouts_take_turns_and_each_request_is_clocked() -> None:
    order: list[str] = []
    layouts = {name: [[Message("user", str(i))] for i in range(3)] for name in LAYOUTS}

    def sender(name: str) -> Callable[[list[Message]], str]:
        def send(messages: list[Message]) -> str:
            order.append(name)
            return messages[0].content

        return send

    ticks = iter(range(100))
    sent = interleaved(
        layouts, {n: sender(n) for n in LAYOUTS}, {n: lambda: float(next(ticks)) for n in LAYOUTS}
    )
    a, b = LAYOUTS
    assert order == [a, b, b, a, a, b]  # who goes first alternates too
    assert [s.result for s in sent[a]] == ["0", "1", "2"]
    assert all(s.cpu == 1.0 and s.seconds >= 0 for s in sent[a] + sent[b])
    own = process_cpu(os.getpid())
    assert 0 < own() <= own()


def test_server_log_figures() -> None:
    hit = (
        'INFO:     127.0.0.1:1 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
        "Llama.generate: 749 prefix-match hit, remaining 105 prompt tokens to eval\n"
        "llama_perf_context_print: prompt eval time =     295.92 ms /   105 tokens "
        "(    2.82 ms per token,   354.83 tokens per second)\n"
    )
    figures = parse_figures(hit)
    assert (figures.reused, figures.evaluated, figures.remaining, figures.prompt) == (
        749, 105, 105, 854,
    )  # fmt: skip
    cold = "llama_perf_context_print: prompt eval time =  0.09 ms /   317 tokens (…)\n"
    assert (parse_figures(cold).reused, parse_figures(cold).prompt) == (0, 317)
    with pytest.raises(RuntimeError, match="prompt eval time"):
        parse_figures("Llama.generate: 3 prefix-match hit, remaining 1 prompt tokens to eval\n")


def test_llama_cpp_python_still_prints_the_prefix_match_line() -> None:
    """Read from the installed source, not imported: loading llama.cpp costs a second."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or spec.origin is None:
        pytest.skip("llama-cpp-python is not installed")
    source = (Path(spec.origin).parent / "llama.py").read_text(encoding="utf-8")
    assert "prefix-match hit, " in source and "prompt tokens to eval" in source
    assert "self.n_tokens = reuse_prefix" in source  # what EvalMeter reads as the reused prefix


def test_eval_meter_reads_the_first_eval_of_a_request() -> None:
    class FakeLlama:
        def __init__(self) -> None:
            self.n_tokens = 0
            self.input_ids = [0] * 64

        def eval(self, tokens: list[int]) -> None:
            self.input_ids[self.n_tokens : self.n_tokens + len(tokens)] = tokens
            self.n_tokens += len(tokens)

    llama = FakeLlama()
    meter = EvalMeter(llama)

    def request(prompt: list[int], keep: int) -> None:
        llama.n_tokens = keep  # what generate() does with the common prefix
        llama.eval(prompt[keep:])
        llama.eval([99])  # a sampled token: not prompt evaluation

    assert meter.measure(lambda: request([1, 2, 3], 0)) == ([1, 2, 3], 3)
    assert meter.measure(lambda: request([1, 2, 3, 4, 5], 3)) == ([1, 2, 3, 4, 5], 2)
    meter.close()
    assert "eval" not in vars(llama)
