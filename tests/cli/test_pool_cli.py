"""``harvey analyze`` and ``harvey run`` over an endpoint pool, through the real CLI."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

from tests.cli.conftest import Run, assert_one_line_error
from tests.fakes.llamacpp import FakeLlamaCpp


def _doc(workspace: Path, paragraphs: int = 24) -> None:
    text = "\n\n".join(f"Paragraph {i}. " + "Some words here. " * 30 for i in range(paragraphs))
    (workspace / "doc.md").write_text(text)


def test_analyze_spreads_chunks_over_endpoints(harvey: Run, workspace: Path) -> None:
    _doc(workspace)
    with ExitStack() as stack:
        servers = [
            stack.enter_context(FakeLlamaCpp(slots=2, delay_per_call=0.05)) for _ in range(3)
        ]
        args = [a for s in servers for a in ("--endpoint", s.url)]
        proc = harvey(
            "analyze",
            "doc.md",
            "-i",
            "Summarise",
            "--backend",
            "openai",
            *args,
            "--chunk-size",
            "1000",
            "--yes",
        )
        calls = [s.calls for s in servers]
    assert proc.returncode == 0, proc.stderr
    assert all(c > 0 for c in calls), calls  # every endpoint got work
    spmd = next((workspace / ".harvey" / "sessions").glob("*.spmd")).read_text()
    assert "endpoints=3]]" in spmd


def test_endpoints_in_harvey_yaml(harvey: Run, workspace: Path) -> None:
    with FakeLlamaCpp(default_reply="from a") as a, FakeLlamaCpp(default_reply="from a") as b:
        (workspace / "harvey.yaml").write_text(
            f"backend: openai\nendpoints:\n  - {a.url}\n  - url: {b.url}\n    max_in_flight: 2\n"
        )
        proc = harvey("run", "--trust", "hello")  # servers in a workspace file: trusted here
        models = harvey("--trust", "models")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "from a\n"
    assert models.returncode == 0, models.stderr
    assert a.url in models.stderr and b.url in models.stderr
    assert "capacity 1" in models.stderr  # /slots says one slot, whatever max_in_flight says


def test_base_url_and_endpoints_together_is_a_config_error(harvey: Run, workspace: Path) -> None:
    (workspace / "harvey.yaml").write_text(
        "backend: openai\nbase_url: http://127.0.0.1:9/v1\nendpoints: [http://127.0.0.1:8/v1]\n"
    )
    assert_one_line_error(harvey("run", "--trust", "hi"), 2, "not both")


def test_an_endpoint_serving_another_model_is_refused(harvey: Run, workspace: Path) -> None:
    _doc(workspace, 4)
    with FakeLlamaCpp(models=["qwen"]) as a, FakeLlamaCpp(models=["llama"]) as b:
        proc = harvey(
            "analyze",
            "doc.md",
            "-i",
            "x",
            "--backend",
            "openai",
            "--model",
            "qwen",
            "--endpoint",
            a.url,
            "--endpoint",
            b.url,
        )
        assert a.calls == b.calls == 0
    assert_one_line_error(proc, 2, f"endpoint {b.url} serves llama, not qwen")


def test_all_endpoints_down_is_one_line(harvey: Run, workspace: Path) -> None:
    _doc(workspace, 4)
    a, b = FakeLlamaCpp().start(), FakeLlamaCpp().start()
    urls = [a.url, b.url]
    a.kill()
    b.kill()
    proc = harvey(
        "analyze",
        "doc.md",
        "-i",
        "x",
        "--backend",
        "openai",
        "--endpoint",
        urls[0],
        "--endpoint",
        urls[1],
    )
    assert_one_line_error(proc, 1, "none of the 2 endpoints answered")
