"""``harvey run`` says what it is doing on stderr from the first second of a turn, before the
model answers, and never on stdout or in its JSON (issue 39, point 3)."""

from __future__ import annotations

import io
import json
import re
import subprocess
from pathlib import Path

import pytest

from harvey.cli.status_line import StatusLine
from harvey.llm.activity import Activity, listening, report
from harvey.llm.scripted import Reply
from tests.fakes.servers import FakeOpenAI, Slow
from tests.harvey_process import harvey_argv, harvey_env


def start(ws: Path, url: str, *extra: str) -> subprocess.Popen[str]:
    argv = harvey_argv("run", "What is the answer?", "--backend", "openai", "--base-url", url)
    return subprocess.Popen(
        [*argv, *extra], cwd=ws, env=harvey_env(), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("extra", [(), ("--output-format", "json")])
def test_the_status_is_on_stderr_while_the_model_has_not_answered(
    tmp_path: Path, extra: tuple[str, ...]
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    with FakeOpenAI([Slow(4.0, Reply("The answer is 42."))]) as srv:
        proc = start(ws, srv.url, *extra)
        assert proc.stderr is not None
        lines = [proc.stderr.readline()]
        while "asking" not in lines[-1] and lines[-1] and len(lines) < 5:
            lines.append(proc.stderr.readline())  # "preparing the prompt", if it took a while
        waiting = proc.poll() is None  # the model has not answered yet
        out, err = proc.communicate(timeout=120)
    assert waiting and lines[-1] == "harvey … asking fake-model\n", lines
    assert proc.returncode == 0, err
    if extra:
        assert json.loads(out) and "The answer is 42." in out  # the JSON result alone
        assert "harvey …" not in out
    else:
        assert out == "The answer is 42.\n"


def test_a_pipe_gets_a_line_per_lasting_activity_and_a_long_one_at_intervals() -> None:
    now = [0.0]
    stream = io.StringIO()
    line = StatusLine(stream, clock=lambda: now[0], watch=False)

    def after(seconds: float) -> None:
        now[0] += seconds
        line.poll()  # what the watcher thread does every tenth of a second

    with listening(line):
        report("preparing the prompt")
        after(0.1)  # quick: never said
        report("asking m")
        after(0.6)
        for done in (0, 512, 1024, 1536):
            report("evaluating the prompt", done, 3000)
            after(0.6)
        after(1.0)
        report("writing", 1)
        after(0.2)  # a quick end: not said either
    assert stream.getvalue().splitlines() == [
        "harvey … asking m",
        "harvey … evaluating the prompt: 0 of 3,000 tokens",
        "harvey … evaluating the prompt: 1,536 of 3,000 tokens",  # 2 s after the one before
    ]


def test_a_failure_at_once_leaves_stderr_to_its_error_line() -> None:
    stream = io.StringIO()
    line = StatusLine(stream)  # with its watcher thread
    with listening(line):
        report("asking m")
    line.close()
    assert stream.getvalue() == ""


def test_a_model_chosen_argument_reaches_the_line_sanitised() -> None:
    stream = io.StringIO()
    line = StatusLine(stream, clock=lambda: 9.0, watch=False)
    line(Activity("reading \x1b[31mevil.md"))
    line._since = 0.0
    line.poll()
    assert "\x1b" not in stream.getvalue() and "evil.md" in stream.getvalue()


@pytest.mark.slow
@pytest.mark.usefixtures("embedded_model", "isolated_env")
def test_the_embedded_models_prompt_evaluation_is_shown_on_stderr(tmp_path: Path) -> None:
    """llama.cpp evaluates the prompt in batches of n_batch: each batch is a step shown."""
    from tests.harvey_process import invoke_harvey

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "harvey.yaml").write_text("tools:\n  max_rounds: 1\n")
    filler = "The socket is bound, then it listens, then it accepts. " * 150  # ~2,000 tokens
    proc = invoke_harvey("run", f"{filler}\nSay hello.", "--backend", "local", cwd=ws)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    steps = [line for line in lines if line.startswith("harvey … evaluating the prompt: ")]
    assert steps and all(re.fullmatch(r"harvey … evaluating the prompt: [\d,]+ of [\d,]+ tokens", s)
                         for s in steps), lines  # fmt: skip
    assert "harvey …" not in proc.stdout


@pytest.mark.slow
def test_on_a_terminal_the_line_is_rewritten_then_erased(tmp_path: Path) -> None:
    import pexpect

    from tests.harvey_process import harvey_spawn

    ws = tmp_path / "ws"
    ws.mkdir()
    with FakeOpenAI([Slow(2.0, Reply("The answer is 42."))]) as srv:
        command, args = harvey_spawn("run", "What?", "--backend", "openai", "--base-url", srv.url)
        child = pexpect.spawn(command, args, cwd=str(ws), env=harvey_env(), encoding="utf-8")
        child.expect("harvey … asking fake-model", timeout=60)
        child.expect("\r\x1b\\[KThe answer is 42.", timeout=60)  # erased, then the reply
        child.expect(pexpect.EOF, timeout=60)
        child.close()
    assert child.exitstatus == 0
