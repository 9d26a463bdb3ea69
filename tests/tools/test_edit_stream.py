"""The streaming matcher equals ``str.replace`` on the whole text, whatever the blocks."""

from __future__ import annotations

import io
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvey.tools import edit_stream as es
from harvey.tools.edit import EditFileTool
from harvey.tools.registry import ToolContext

# A small alphabet makes occurrences (and near misses split across blocks) common.
TEXT = st.text(alphabet="ab\n\r é", max_size=300)
NEEDLE = st.text(alphabet="ab\n\r é", min_size=1, max_size=8)


def pieces(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


@given(TEXT, NEEDLE, st.text(alphabet="xy\n", max_size=5), st.lists(st.integers(0, 400)))
@settings(max_examples=200, deadline=None)
def test_streamed_replace_equals_str_replace(
    text: str, needle: str, new: str, cuts: list[int]
) -> None:
    out, replacer = es.replace_stream(iter(pieces(text, cuts)), needle, new, context=True)
    assert "".join(out) == text.replace(needle, new)
    assert replacer.count == text.count(needle)
    starts, at = [], text.find(needle)
    while at >= 0:
        starts.append(text.count("\n", 0, at) + 1)
        at = text.find(needle, at + len(needle))
    assert replacer.lines == starts[: es.MAX_LISTED]


@given(TEXT, NEEDLE, st.integers(1, 64))
@settings(max_examples=200, deadline=None)
def test_byte_blocks_of_any_size_decode_to_the_same_text(
    text: str, needle: str, block: int
) -> None:
    digest = es.Hashed()
    data = text.encode("utf-8")
    blocks = es.text_blocks(io.BytesIO(data), "utf-8", block=block, digest=digest)
    out, _ = es.replace_stream(blocks, needle, "Z")
    assert "".join(out) == text.replace(needle, "Z")
    assert digest.size == len(data)


@given(st.lists(st.text(alphabet="ab \t", max_size=6), max_size=30), st.integers(0, 30))
@settings(max_examples=200, deadline=None)
def test_line_scan_finds_the_lines_whitespace_aside(lines: list[str], start: int) -> None:
    text = "".join(line + "\n" for line in lines)
    wanted = lines[start : start + 3]
    while wanted and not wanted[0].strip():
        wanted.pop(0)  # leading blank lines of old_string are not matched
    if not wanted:
        return
    old = "\n".join("  " + w.strip() for w in wanted)
    scan = es.LineScan(old).run(iter([text]))
    k = len(wanted)
    expected = [
        i + 1
        for i in range(len(lines) - k + 1)
        if [x.strip() for x in lines[i : i + k]] == [w.strip() for w in wanted]
    ]
    assert scan.matches == expected[: es.MAX_LISTED] and scan.count == len(expected)


@given(
    st.text(alphabet="ab\n\r é", max_size=200),
    st.text(alphabet="ab\n é", min_size=1, max_size=6),
    st.integers(1, 32),
    st.booleans(),
)
@settings(max_examples=100, deadline=None)
def test_the_tool_writes_str_replace_of_the_whole_file(
    tmp_path_factory: pytest.TempPathFactory,
    text: str,
    needle: str,
    block: int,
    replace_all: bool,
) -> None:
    """edit_file itself, in blocks of a few bytes: the file it writes is ``str.replace``
    on the whole text (bytes kept as they were around the change), or nothing changes."""
    ws = tmp_path_factory.mktemp("ws").resolve()
    (ws / "f.txt").write_bytes(text.encode())
    ctx = ToolContext(workspace=ws, approve_write=lambda request, write: write())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(es, "BLOCK_BYTES", block)
        args = {"path": "f.txt", "old_string": needle, "new_string": "<NEW>"}
        result = EditFileTool().run(ctx, {**args, "replace_all": replace_all})
    after = (ws / "f.txt").read_bytes().decode()
    first = text.find("\n")
    if first > 0 and text[first - 1] == "\r" and "\r\n" not in needle:
        needle = needle.replace("\n", "\r\n")  # a CRLF file: old_string's newlines are CRLF
    count = text.count(needle)
    if result.startswith("edited") and not result.endswith("file's indentation)"):
        assert count == 1 or (replace_all and count > 1), result
        assert after == text.replace(needle, "<NEW>")
    elif not result.startswith("edited"):
        assert after == text, result
