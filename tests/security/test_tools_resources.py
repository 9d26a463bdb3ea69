"""Fault tests for resource bounds: nothing a file or a server does makes Harvey hang or
grow with the input (FIFOs, huge files, empty files, long names, backtracking regexes,
keep-alive streams). Each runs the real ``harvey`` in a subprocess under a timeout; the
assertions are on exit codes, messages and peak memory, never on time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harvey.cli.status_line import PREFIX as STATUS_PREFIX
from harvey.llm.scripted import Reply
from tests.fakes.evidence import chunk_of, part_of
from tests.fakes.quoting import ANSWER, QuotingOpenAI
from tests.fakes.servers import FakeOpenAI, KeepAlive
from tests.harvey_process import harvey_argv
from tests.security.conftest import API_KEY, Attack

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
MB = 1024 * 1024


# Runs the command as its own child and writes that child's peak RSS to a file: the
# wrapper's RUSAGE_CHILDREN holds nothing else, unlike the test process's.
_MEASURE = (
    "import resource, subprocess, sys; code = subprocess.call(sys.argv[2:]); "
    "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); "
    "sys.exit(code)"
)


def harvey(
    workspace: Path, *args: str, timeout: float = 120, peak_file: Path | None = None
) -> tuple[int, str, str]:
    """Run ``harvey ARGS`` in ``workspace``: (exit code, stdout, stderr)."""
    command = harvey_argv(*args)
    if peak_file is not None:
        command = [sys.executable, "-c", _MEASURE, str(peak_file), *command]
    proc = subprocess.run(
        command,
        cwd=workspace,
        env={**os.environ, "OPENAI_API_KEY": API_KEY},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return proc.returncode, proc.stdout, proc.stderr


def peak_rss(peak_file: Path) -> int:
    """Bytes: ``ru_maxrss`` is KB on Linux, bytes on macOS."""
    value = int(peak_file.read_text())
    return value if sys.platform == "darwin" else value * 1024


def one_line(stderr: str) -> str:
    """The error line, beside what the turn was doing meanwhile (``cli/status_line.py``)."""
    lines = [ln for ln in stderr.strip().splitlines() if not ln.startswith(STATUS_PREFIX)]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def quarter(body: dict[str, Any]) -> int:
    """A server's prompt count at a byte a quarter token: the fake's default runs
    Harvey's estimator over every 2 MB prompt, 0.12 s of the test's CPU per MB."""
    return sum(len(str(m.get("content") or "")) for m in body["messages"]) // 4


@pytest.fixture()
def server() -> FakeOpenAI:
    with FakeOpenAI(api_key=API_KEY, default_reply=Reply("should not be asked")) as srv:
        yield srv


def analyze(
    ws: Path, srv: FakeOpenAI, name: str, *extra: str, **kwargs: Any
) -> tuple[int, str, str]:
    args = ("analyze", name, "-i", "summarise", "--backend", "openai", "--base-url", srv.url)
    return harvey(ws, *args, *extra, **kwargs)


@needs_fifo
def test_analyze_refuses_a_fifo_at_once(
    victim_workspace: Path, isolated_env: Path, server: FakeOpenAI
) -> None:
    os.mkfifo(victim_workspace / "pipe.txt")  # opening it would wait for a writer forever
    code, out, err = analyze(victim_workspace, server, "pipe.txt", timeout=60)
    assert code == 2 and out == ""
    assert one_line(err).endswith(
        "pipe.txt is a named pipe (FIFO), not a regular file; analyze reads regular files"
    )
    assert server.chat_requests == []


def test_analyze_of_an_empty_file_says_so_and_asks_no_model(
    victim_workspace: Path, isolated_env: Path, server: FakeOpenAI
) -> None:
    (victim_workspace / "empty.txt").write_bytes(b"")
    code, out, err = analyze(victim_workspace, server, "empty.txt")
    assert code == 2 and out == ""
    assert one_line(err).endswith("empty.txt is empty: there is nothing to analyse")
    assert server.chat_requests == []


def test_analyze_of_a_300_character_name_is_one_line(
    victim_workspace: Path, isolated_env: Path, server: FakeOpenAI
) -> None:
    code, _, err = analyze(victim_workspace, server, "n" * 300 + ".txt")
    assert code == 2
    assert one_line(err).endswith(": File name too long")
    assert server.chat_requests == []


def test_analyze_of_a_huge_file_refuses_before_reading_it(
    victim_workspace: Path, isolated_env: Path, server: FakeOpenAI, tmp_path: Path
) -> None:
    """The probe's 10 GB file was read whole before the max-chunks check (MemoryError)."""
    size = 300 * MB
    path = victim_workspace / "huge.txt"
    with path.open("wb") as f:  # text up front (the binary sniff reads 8 KB), sparse after
        f.write(b"The reservoir opened in 1881.\n\n" * 512)
        f.truncate(size)
    code, out, err = analyze(victim_workspace, server, "huge.txt", peak_file=tmp_path / "peak")
    peak = peak_rss(tmp_path / "peak")
    assert code == 1 and out == ""
    assert "more chunks than --max-chunks; pass --yes" in one_line(err)
    assert server.chat_requests == []
    assert 0 < peak < 150 * MB, f"peak RSS {peak / MB:.0f} MB for a {size // MB} MB file"


def test_search_files_with_a_backtracking_pattern_returns(
    attack: Attack, victim_workspace: Path
) -> None:
    (victim_workspace / "a.txt").write_text("a" * 28 + "!\n")
    result = attack([("search_files", {"pattern": "(a+)+$"})])
    assert result.proc.returncode == 0, result.proc.stderr
    output = result.tool_outputs[0]
    assert output == "no matches for '(a+)+$'" or output.startswith("error: the search for")


@needs_fifo
def test_search_and_read_skip_a_fifo_in_the_workspace(
    attack: Attack, victim_workspace: Path
) -> None:
    os.mkfifo(victim_workspace / "trap.txt")
    (victim_workspace / "notes.txt").write_text("needle\n")
    result = attack(
        [("search_files", {"pattern": "needle"}), ("read_file", {"path": "trap.txt", "limit": 0})],
        timeout=60,
    )
    assert result.proc.returncode == 0, result.proc.stderr
    assert result.tool_outputs[0] == "notes.txt:1: needle"
    assert result.tool_outputs[1].startswith("error: trap.txt is a named pipe (FIFO)")


@pytest.mark.slow
def test_a_server_that_only_sends_pings_times_out(
    victim_workspace: Path, isolated_env: Path
) -> None:
    (victim_workspace / "harvey.yaml").write_text("timeout: 1\nretries: 0\n")
    with FakeOpenAI([KeepAlive(0.2, text="thinking")], api_key=API_KEY) as srv:
        code, _, err = harvey(
            victim_workspace,
            "run",
            "hi",
            "--backend",
            "openai",
            "--base-url",
            srv.url,
            "--no-record",
            timeout=60,
        )
    assert code == 1
    assert f"the OpenAI-compatible server at {srv.url} did not answer within 1s" in one_line(err)


@pytest.mark.slow
def test_analyze_streams_a_file_bigger_than_one_window(
    victim_workspace: Path, isolated_env: Path
) -> None:
    paragraph = "The reservoir opened in 1881 and held four hundred million gallons. " * 8
    text = "\n\n".join(f"{i}. {paragraph}" for i in range(16_000)) + "\n"
    assert len(text) > 8 * MB  # over the 4 MB window: streamed, not read whole
    (victim_workspace / "long.txt").write_text(text)
    with QuotingOpenAI(api_key=API_KEY, count_tokens=quarter) as srv:
        code, out, err = analyze(
            victim_workspace,
            srv,
            "long.txt",
            "--chunk-size",
            str(MB),
            "--overlap",
            "none",
            "--no-record",
        )
        prompts = [r["messages"][-1]["content"] for r in srv.chat_requests]
    assert code == 0, err
    assert out.startswith(ANSWER)
    maps = [p for p in prompts if part_of(p)]
    n = len(maps)
    assert n >= 8 and len(prompts) == n + 1  # every chunk once, then one synthesis
    bodies = {}
    for p in maps:
        index = part_of(p)[0]  # type: ignore[index]
        bodies[index] = chunk_of(p) or ""
        assert len(bodies[index].encode()) <= MB
    assert "".join(bodies[i] for i in range(1, n + 1)) == text  # lossless, in order


@pytest.mark.slow
def test_analyze_yes_of_a_file_far_over_max_chunks_keeps_memory_flat(
    victim_workspace: Path, isolated_env: Path, tmp_path: Path
) -> None:
    """Accepted (--yes), a file of many chunks is streamed: a file five times larger
    costs the same memory, give or take the allocator (a whole read would cost four
    times the extra size: bytes, text, re-encoded bytes, chunks)."""
    line = "The reservoir opened in 1881 and held four hundred million gallons.\n"
    block = line * 1000 + "\n"
    peaks = []
    for size in (20 * MB, 100 * MB):  # a whole read of the larger would cost 320 MB more
        with (victim_workspace / "long.txt").open("w") as f:
            f.write(block * (size // len(block)))
        with QuotingOpenAI(api_key=API_KEY, keep_bodies=False, count_tokens=quarter) as srv:
            code, out, err = analyze(
                victim_workspace,
                srv,
                "long.txt",
                "--chunk-size",
                str(2 * MB),
                "--max-chunks",
                "1",
                "--concurrency",
                "2",
                "--yes",
                "--no-record",
                peak_file=tmp_path / "peak",
            )
            calls = len(srv.chat_requests)
        assert code == 0, err
        assert out.startswith(ANSWER) and calls > size // (2 * MB)  # every chunk, then one answer
        assert f"at least {-(-size // (2 * MB))} chunks" in err  # asked from the size
        peaks.append(peak_rss(tmp_path / "peak"))
    small, large = peaks
    assert large - small < 60 * MB, f"peak RSS {small / MB:.0f} MB, then {large / MB:.0f} MB"


def test_an_epub_whose_spine_repeats_one_compressed_chapter_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each member is capped, but a 2 KB EPUB naming one 1 MB chapter fifty times
    (thousands, with a 64 MB one) would inflate without end: the package has one budget."""
    import io
    import zipfile

    from harvey.documents import extract
    from harvey.documents.runner import Limits
    from harvey.errors import DocumentError

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr(
            "META-INF/container.xml",
            '<container><rootfiles><rootfile full-path="OEBPS/c.opf"/></rootfiles></container>',
        )
        spine = '<itemref idref="c"/>' * 50
        package.writestr(
            "OEBPS/c.opf",
            '<package xmlns="http://www.idpf.org/2007/opf"><manifest>'
            f'<item id="c" href="c.xhtml"/></manifest><spine>{spine}</spine></package>',
        )
        package.writestr("OEBPS/c.xhtml", "<p>" + "word " * (MB // 5) + "</p>")
    assert len(out.getvalue()) < 8192
    (tmp_path / "book.epub").write_bytes(out.getvalue())
    with pytest.raises(DocumentError, match="inflate past 4 MB together"):
        extract(tmp_path / "book.epub", limits=Limits(package_bytes=4 * MB))
