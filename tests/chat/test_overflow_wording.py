"""A file that will not fit is said as bytes with a token estimate that reads as one, and
the notice says the file needs more than a read may take — never a figure that reads
as fitting (issue 39, point 6)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harvey.context.amounts import size_text, tokens_text
from harvey.llm.scripted import Reply
from tests.fakes.openai import FakeOpenAI
from tests.harvey_process import invoke_harvey


@pytest.mark.parametrize(
    ("size", "said"),
    [(0, "0 bytes"), (1, "1 byte"), (900, "900 bytes"), (35 * 1024, "35.0 KB"),
     (5 * 1024 * 1024, "5.0 MB"), (3 * 1024**3, "3.0 GB")],
)  # fmt: skip
def test_a_size_is_said_in_its_unit(size: int, said: str) -> None:
    assert size_text(size) == said


@pytest.mark.parametrize(
    ("tokens", "above", "said"),
    [
        (1_310_720, None, "about 1.3 million tokens"),
        (5_242_880, None, "about 5.2 million tokens"),
        (1_000_000, None, "about 1 million tokens"),
        (3_285, None, "about 3,300 tokens"),
        (3_040, 3_020, "about 3,040 tokens"),  # rounded down it would read as fitting
        (42, None, "about 42 tokens"),
    ],
)
def test_a_token_estimate_is_said_as_one(tokens: int, above: int | None, said: str) -> None:
    assert tokens_text(tokens, above) == said


def test_a_five_megabyte_file_is_said_in_megabytes_and_about_its_tokens(tmp_path: Path) -> None:
    line = "The quick brown fox jumps over the lazy dog near the river bank. " * 14 + "\n"
    (tmp_path / "big.md").write_text(line * (5 * 1024 * 1024 // len(line)))
    script = [Reply(tool_calls=[("read_file", {"path": "big.md", "limit": 0})]), Reply("ok")]
    with FakeOpenAI(script) as srv:
        proc = invoke_harvey(
            "run", "What is in big.md?", "--backend", "openai", "--base-url", srv.url,
            cwd=tmp_path,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    said = " ".join(proc.stderr.split())
    assert "approximately" not in said
    found = re.search(
        r"File read cancelled: big\.md is 5\.0 MB, about (\d\.\d) million tokens: more than the "
        r"([\d,]+) tokens a read may take now \(of ([\d,]+) left\)\.",
        said,
    )
    assert found is not None, said
    allowed, left = (int(g.replace(",", "")) for g in found.group(2, 3))
    assert allowed <= left  # what a read may take is part of what is left, never more
    assert 1.0 <= float(found.group(1)) <= 1.6  # bytes over ~4 per token, not the bytes
