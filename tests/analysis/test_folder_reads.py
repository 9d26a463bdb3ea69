"""Which files a whole-folder analysis reads (``folder_reads.collect_files``), and the re-cut."""

from __future__ import annotations

from pathlib import Path

import pytest

from harvey.analysis.file_chunks import chunks_of
from harvey.analysis.folder_reads import _Recut, collect_files, folder_label
from harvey.chunks.chunking import ChunkConfig
from harvey.errors import UsageError
from harvey.workspace.source import Source
from tests.fakes.evidence import chunk_of, file_of, records


@pytest.fixture()
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "ws"
    (root / "a" / "deep").mkdir(parents=True)
    (root / "a" / "one.md").write_text("one\n")
    (root / "a" / "deep" / "two.py").write_text("x = 2\n")
    (root / "a" / ".venv").mkdir()
    (root / "a" / ".venv" / "pyvenv.cfg").write_text("home = /usr\n")
    (root / "a" / ".venv" / "lib.py").write_text("skipped\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref\n")
    (root / "top.md").write_text("top\n")
    monkeypatch.chdir(root)
    return root


def names(root: Path, found: list[Path]) -> list[str]:
    return [p.relative_to(root).as_posix() for p in found]


def test_folders_are_walked_like_an_ingest_and_files_kept_once(ws: Path) -> None:
    got = collect_files(ws, [Path("a"), Path("top.md"), Path("a/one.md")])
    assert names(ws, got.files) == ["a/one.md", "a/deep/two.py", "top.md"]
    assert got.skipped == []
    assert names(ws, collect_files(ws, [Path(".")]).files) == [
        "top.md",
        "a/one.md",
        "a/deep/two.py",
    ]


def test_globs_match_the_path_or_the_name(ws: Path) -> None:
    assert names(ws, collect_files(ws, [Path(".")], include=["*.py"]).files) == ["a/deep/two.py"]
    got = collect_files(ws, [Path(".")], exclude=["a/*"])
    assert names(ws, got.files) == ["top.md"]  # fnmatch's * crosses folders, as in ingest


def test_skipped_files_are_named(ws: Path) -> None:
    (ws / "a" / "b.bin").write_bytes(b"\x00" * 10)
    for i in range(6):
        (ws / "a" / f"e{i}.txt").write_text("")
    got = collect_files(ws, [Path("a")])
    assert len(got.files) == 2
    line = got.skipped_line()
    assert line.startswith("skipped 7 files: a/b.bin (binary), a/e0.txt (empty)")
    assert line.endswith("and 2 more")


def test_an_absolute_path_inside_the_workspace_is_fine_and_outside_is_not(ws: Path) -> None:
    assert names(ws, collect_files(ws, [ws / "top.md"]).files) == ["top.md"]
    with pytest.raises(UsageError, match="outside the workspace"):
        collect_files(ws, [ws.parent])


def test_labels(ws: Path) -> None:
    assert folder_label(ws, [Path("a")]) == "a/"
    assert folder_label(ws, [Path(".")]) == "."
    assert folder_label(ws, [Path("a"), Path("top.md")]) == "a/ top.md"


def test_a_recut_file_gives_the_same_chunks(ws: Path) -> None:
    path = ws / "long.md"
    path.write_text("\n\n".join(f"Paragraph {i}. " + "words " * 80 for i in range(12)))
    cfg = ChunkConfig(chunk_size_bytes=1000)
    size = path.stat().st_size
    first, count = chunks_of(Source.at(path, "long.md"), size, cfg)
    again = list(_Recut(Source.at(path, "long.md"), size, cfg))
    assert count > 3 and again == list(first)


def test_files_past_the_memory_cap_are_cut_again_for_the_map_phase(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    import harvey.analysis.folder_reads
    from harvey.cli import main
    from tests.fakes.servers import FakeOpenAI

    monkeypatch.setattr(harvey.analysis.folder_reads, "KEEP_BYTES", 0)
    (ws / "a" / "one.md").write_text("\n\n".join(f"Part {i}. " + "text " * 60 for i in range(8)))
    with FakeOpenAI([], default_reply=records()) as srv:
        args = ["analyze", "a", "-i", "Summarise", "--backend", "openai", "--base-url", srv.url]
        result = CliRunner().invoke(main, [*args, "--chunk-size", "500", "--yes", "--no-record"])
        prompts = [b["messages"][-1]["content"] for b in srv.chat_requests]
    assert result.exit_code == 0, result.output
    maps = [p for p in prompts if file_of(p) == "a/one.md"]
    assert len(maps) > 3 and all((chunk_of(p) or "").strip() for p in maps)
