"""The benchmarks never run in ``make test``, so this keeps them from rotting silently:
every ``bench/bench_*.py`` imports, exposes ``run() -> str`` and is listed in the
runner; the runner isolates a failing section; and the few pure helpers the
benchmarks' verdicts rest on are checked here (no timing, nothing slow)."""

from __future__ import annotations

import importlib
import inspect
import sys
import types
from collections.abc import Callable
from pathlib import Path

import pytest
from bench import run as bench_run
from bench.bench_estimator import Doc, evaluate, split
from hypothesis import given
from hypothesis import strategies as st

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
MODULES = sorted(f"bench.{p.stem}" for p in BENCH_DIR.glob("bench_*.py"))


def test_there_are_benchmarks() -> None:
    assert {"bench.bench_map_phase", "bench.bench_guard", "bench.bench_estimator"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_module_imports_and_has_run(name: str) -> None:
    module = importlib.import_module(name)
    assert callable(module.run)
    assert not inspect.signature(module.run).parameters


def test_runner_lists_every_benchmark() -> None:
    assert {module for _, module, _ in bench_run.SECTIONS} == set(MODULES)


def test_failing_section_reports_instead_of_raising() -> None:
    text, seconds = bench_run.run_section("bench.no_such_benchmark", "Missing")
    assert text.startswith("## Missing")
    assert "**Failed**" in text and "ModuleNotFoundError" in text
    assert seconds >= 0


def _fake_module(name: str, body: Callable[[], str]) -> str:
    module = types.ModuleType(name)
    module.run = body  # type: ignore[attr-defined]
    sys.modules[name] = module
    return name


def test_only_runs_one_section_and_writes_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[str] = []

    def ok() -> str:
        calls.append("ok")
        return "## Fine\n\nnumbers\n"

    def boom() -> str:
        calls.append("boom")
        raise RuntimeError("corpus missing")

    monkeypatch.setattr(
        bench_run,
        "SECTIONS",
        [
            ("fine", _fake_module("bench_smoke_fine", ok), "Fine"),
            ("broken", _fake_module("bench_smoke_broken", boom), "Broken"),
        ],
    )
    out = tmp_path / "B.md"
    assert bench_run.main(["--only", "broken", "--output", str(out)]) == 0
    assert calls == ["boom"]
    written = out.read_text()
    assert written.startswith("# Harvey benchmarks")
    assert "- machine:" in written and "- Python:" in written
    assert "## Broken" in written and "corpus missing" in written
    assert "## Fine" not in written
    assert "corpus missing" in capsys.readouterr().out

    calls.clear()
    out_all = tmp_path / "all.md"
    assert bench_run.main(["--output", str(out_all)]) == 0
    assert calls == ["ok", "boom"]  # one failure does not stop the rest
    text = out_all.read_text()
    assert text.index("## Fine") < text.index("## Broken") < text.index("## Run time")


def test_guard_io_counter_sees_reads_and_not_stats(tmp_path: Path) -> None:
    from bench.bench_guard import bytes_read_by, rchar

    if rchar() is None:
        pytest.skip("no /proc/self/io on this system: the guard benchmark cannot count bytes read")
    path = tmp_path / "f.bin"
    path.write_bytes(b"y" * 4096)
    assert bytes_read_by(path.read_bytes, 10) == 10 * 4096
    assert bytes_read_by(path.stat, 10) == 0


def test_estimator_split_is_disjoint_and_deterministic() -> None:
    docs = [(f"d{i}", "word " * (200 + i)) for i in range(50)] + [("tiny", "x")]
    calib, test = split(docs)
    assert calib and test
    assert not {n for n, _ in calib} & {n for n, _ in test}
    assert "tiny" not in {n for n, _ in calib + test}  # below MIN_DOC_BYTES
    assert (calib, test) == split(list(docs))


@given(
    st.lists(
        st.tuples(st.integers(1, 100_000), st.integers(1, 50_000)).filter(lambda p: p[0] >= p[1]),
        min_size=1,
        max_size=40,
    )
)
def test_min_ratio_never_underestimates(pairs: list[tuple[int, int]]) -> None:
    """The calibration rule the estimator benchmark reports on: estimating with the
    smallest bytes-per-token of a set of documents underestimates none of them."""
    docs = [Doc(f"d{i}", size, tokens) for i, (size, tokens) in enumerate(pairs)]
    ratio = min(d.size / d.tokens for d in docs)
    errors = evaluate(docs, ratio)
    assert errors.under_share == 0
    assert errors.estimated >= errors.real
    assert evaluate(docs, ratio * 2).estimated <= errors.estimated


def test_startup_bench_skips_the_warm_up_and_refuses_a_wrong_answer(tmp_path: Path) -> None:
    from bench.bench_startup import Command, Timing, measure, run_once, table

    env = {"PATH": "/usr/bin:/bin"}
    say = Command("say", [sys.executable, "-c", "print('hello')"], env, tmp_path, "hello")
    timings = measure([say], rounds=2)
    assert [t.label for t in timings] == ["say"] and len(timings[0].samples) == 2
    wrong = Command("wrong", [sys.executable, "-c", "print('bye')"], env, tmp_path, "hello")
    with pytest.raises(RuntimeError, match="wrong exited 0 with 'bye'"):
        run_once(wrong)
    rows = table([Timing("a", [0.2, 0.4, 0.3]), Timing("b", [0.9, 0.6, 0.6])], "a").splitlines()
    assert rows[2] == "| a | 0.300 | 0.200 | 1.00 |" and rows[3] == "| b | 0.600 | 0.600 | 2.00 |"


def test_the_quality_scores_are_string_matches() -> None:
    """Grounding counts an invented date against an answer, coverage finds a gold fact,
    a citation is valid only when its words are in the lines it names."""
    from bench.analysis_scoring import citation_valid, score

    from harvey.analysis.answer import Citation
    from harvey.analysis.quotes import Location

    source = "The dam failed on 3 March 1889.\nPercy Aldous was scalded by steam.\n"
    answer = "The dam failed on 3 March 1889 [1]. It was rebuilt in 1902 by Percy Aldous."
    good = Citation(1, Location("s.md", 1, 1), "The dam failed on 3 March 1889.")
    bad = Citation(2, Location("s.md", 2, 2), "The dam failed on 3 March 1889.")
    result = score(answer, source, ["3 March 1889", "Percy Aldous", "scalded"], [good, bad])
    assert (result.grounded, result.atoms) == (2, 3)  # 1902 is not in the source
    assert (result.covered, result.gold) == (2, 3)
    assert (result.valid, result.citations) == (1, 2)
    assert citation_valid(good, source) and not citation_valid(bad, source)


def test_the_quality_cases_gold_lists_come_from_the_text() -> None:
    from bench.analysis_cases import changelog_versions_and_dates, closed_bugs, plant, planted_gold

    log = (
        "pkg (1.2-3) unstable; urgency=medium\n\n  * Fix it. (Closes: #123, #456)\n\n"
        " -- A Person <a@b.c>  Sat, 10 Apr 2021 15:55:15 +0200\n"
    )
    assert changelog_versions_and_dates(log) == ("1.2-3", "Sat, 10 Apr 2021")
    assert closed_bugs(log) == ("123", "456")
    import random

    text = "\n\n".join(f"Paragraph {i}." for i in range(40))
    facts = ["Archivist's note: Ruth Pellow rebound it on 2 May 1950."]
    planted = plant(text, facts, random.Random(1))
    assert facts[0] in planted and planted.replace(facts[0] + "\n\n", "") == text
    assert planted_gold(facts) == ("Ruth Pellow", "2 May 1950")


def test_the_quality_journal_resumes_what_a_cut_run_scored(tmp_path: Path) -> None:
    """A run cut short keeps every scored row; the next run reuses them, and a line the
    cut itself left half-written is skipped, not fatal."""
    from bench.analysis_journal import Journal
    from bench.analysis_pipelines import Outcome
    from bench.analysis_scoring import Score

    path = tmp_path / "journal.jsonl"
    first = Journal(path)
    key = Journal.key("LocalClient:smollm2", "make-versions", "harvey")
    first.put(key, Outcome("1.2 was released", 1.5, 0), Score(3, 3, 2, 4, 1, 1))
    with path.open("a") as handle:
        handle.write('{"key": "cut')  # the process was killed mid-line
    again = Journal(path)
    kept = again.get(key)
    assert kept is not None
    outcome, score = kept
    assert (outcome.text, outcome.calls, score.coverage) == ("1.2 was released", 0, 0.5)
    assert again.get(Journal.key("LocalClient:smollm2", "make-versions", "textbook")) is None
    assert Journal(None).get(key) is None  # no path: nothing kept, nothing read
    later = Journal.key("LocalClient:smollm2", "make-versions", "textbook")
    again.put(later, Outcome("", 9.0, 12), Score(0, 0, 0, 4, 0, 0))
    assert Journal(path).get(later) is not None  # written on a line of its own


def test_a_journal_only_report_measures_nothing_and_says_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report of a run still going: the journal's rows, the rest named, no model run."""
    import bench.bench_analysis_quality as quality
    from bench.analysis_journal import Journal
    from bench.analysis_pipelines import Outcome
    from bench.analysis_scoring import Score

    class Client:
        model = "m"

    path = tmp_path / "journal.jsonl"
    Journal(path).put(
        Journal.key("Client:m", "make-versions", "harvey"),
        Outcome("Version 3.81 [1]", 0.1, 0),
        Score(1, 1, 1, 2, 1, 1),
    )
    monkeypatch.setenv("HARVEY_BENCH_QUALITY_JOURNAL", str(path))
    monkeypatch.setenv("HARVEY_BENCH_QUALITY_JOURNAL_ONLY", "1")
    monkeypatch.setenv("HARVEY_BENCH_QUALITY_CASES", "make-versions,find-reports")
    monkeypatch.setattr(quality, "run_pipeline", lambda *a: pytest.fail("measured a row"))
    text = "\n".join(quality.section("T", Client(), tmp_path, ["harvey", "textbook"]))
    assert (
        "Not measured yet (the run is still going): find-reports; make-versions (textbook)." in text
    )
    assert "| make-versions | extract | 1.00 / 0.50 |  |" in text
