"""W2: the chunker — seed tests, structure (headings, tree-sitter, fallback)."""

from __future__ import annotations

import itertools
import re

import pytest

from harvey.chunks import source_boundaries
from harvey.chunks.chunking import Chunk, ChunkConfig, boundary_name, chunk_document
from harvey.workspace.kinds import DocType, detect_doc_type, language_for_path


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("notes.md", DocType.PROSE),
        ("paper.txt", DocType.PROSE),
        ("index.rst", DocType.PROSE),
        ("main.go", DocType.SOURCE),
        ("app.py", DocType.SOURCE),
        ("lib.rs", DocType.SOURCE),
        ("x.H", DocType.SOURCE),
        ("data.unknown", DocType.PROSE),
        ("Makefile", DocType.PROSE),
    ],
)
def test_detect_doc_type(path: str, expected: DocType) -> None:
    assert detect_doc_type(path) is expected


def test_language_for_path() -> None:
    assert language_for_path("a/b/c.py") == "python"
    assert language_for_path("main.go") == "go"
    assert language_for_path("notes.md") is None
    assert boundary_name(DocType.SOURCE) == "source"
    assert boundary_name(DocType.PROSE) == "paragraph"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"threshold": 0},
        {"threshold": 1.5},
        {"chunk_size_bytes": 4},
        {"max_chunks": 0},
        {"overlap": "word"},
        {"concurrency": 0},
    ],
)
def test_chunk_config_rejects_bad_values(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        ChunkConfig(**kwargs)  # type: ignore[arg-type]


def test_chunk_config_defaults_and_from_settings() -> None:
    from harvey.config.settings import ChunkingSettings

    cfg = ChunkConfig()
    assert (cfg.enabled, cfg.threshold, cfg.chunk_size_bytes) == (True, 0.80, 6000)
    assert (cfg.max_chunks, cfg.overlap, cfg.concurrency) == (20, "paragraph", 4)
    settings = ChunkingSettings(chunk_size_tokens=500, overlap="none")
    assert ChunkConfig.from_settings(settings).chunk_size_bytes == 2000
    assert ChunkConfig.from_settings(settings).concurrency == 4
    assert ChunkConfig.from_settings(settings, embedded=True).concurrency == 1
    assert ChunkConfig.from_settings(ChunkingSettings(concurrency=7)).concurrency == 7


def test_empty_content_gives_one_empty_chunk() -> None:
    assert chunk_document("", ChunkConfig(), DocType.PROSE) == [Chunk("", 0, 0, 1, 1)]


def test_single_chunk() -> None:
    text = "Para one.\n\nPara two.\nline two\n"
    assert chunk_document(text, ChunkConfig(), DocType.PROSE) == [Chunk(text, 0, len(text), 1, 4)]


def _paragraphs(n: int, size: int) -> list[str]:
    out = []
    for i in range(n):
        body = f"Paragraph {i} says something. "
        out.append((body * (size // len(body) + 1))[:size].rstrip() + ".")
    return out


def test_paragraph_split_at_blank_lines() -> None:
    paras = _paragraphs(10, 300)
    text = "\n\n".join(paras)
    chunks = chunk_document(text, ChunkConfig(chunk_size_bytes=1000, overlap="none"), DocType.PROSE)
    assert len(chunks) > 2
    starts = {text.index(p) for p in paras}
    for c in chunks:
        assert c.start in starts  # every cut lands at a paragraph start
        assert len(c.text.encode()) <= 1000
        assert len(c.text.encode()) >= 750 or c is chunks[-1]  # recombined up to ~75%


def test_overlap_second_chunk_begins_with_last_paragraph_of_first() -> None:
    text = "\n\n".join(_paragraphs(12, 200))
    chunks = chunk_document(text, ChunkConfig(chunk_size_bytes=1000), DocType.PROSE)
    assert len(chunks) >= 2
    first, second = chunks[0], chunks[1]
    last_para = first.text.rstrip("\n").rsplit("\n\n", 1)[-1]
    assert second.text.startswith(last_para)
    assert second.start < first.end


def test_no_overlap_produces_no_repeated_content() -> None:
    text = "\n\n".join(_paragraphs(12, 200))
    chunks = chunk_document(text, ChunkConfig(chunk_size_bytes=1000, overlap="none"), DocType.PROSE)
    assert "".join(c.text for c in chunks) == text
    for a, b in itertools.pairwise(chunks):
        assert b.start == a.end


def test_max_chunks_is_not_enforced_by_the_chunker() -> None:
    text = "\n\n".join(_paragraphs(60, 300))
    cfg = ChunkConfig(chunk_size_bytes=500, max_chunks=3, overlap="none")
    chunks = chunk_document(text, cfg, DocType.PROSE)
    assert len(chunks) > 3
    assert "".join(c.text for c in chunks) == text


def test_oversized_paragraph_splits_at_sentences_then_lines_then_chars() -> None:
    sentences = "".join(f"Sentence number {i} is here. " for i in range(40))
    cfg = ChunkConfig(chunk_size_bytes=200, overlap="none")
    chunks = chunk_document(sentences, cfg, DocType.PROSE)
    assert all(c.text.endswith(". ") for c in chunks[:-1])
    lines = "\n".join("word" * 5 for _ in range(40))
    chunks = chunk_document(lines, ChunkConfig(chunk_size_bytes=100, overlap="none"), DocType.PROSE)
    assert all(c.text.endswith("\n") for c in chunks[:-1])
    emoji = "😀" * 100  # 4 bytes each, no boundary at all
    chunks = chunk_document(emoji, ChunkConfig(chunk_size_bytes=30, overlap="none"), DocType.PROSE)
    assert all(len(c.text.encode()) == 28 for c in chunks[:-1])
    assert "".join(c.text for c in chunks) == emoji


def test_markdown_headings_are_preferred_boundaries() -> None:
    sections = []
    for i in range(8):
        body = "\n\n".join(_paragraphs(4, 100))
        sections.append(f"# Section {i}\n\n{body}")
    text = "\n\n".join(sections)
    section_size = len(sections[0]) + 2
    assert 400 < section_size < 500  # two sections fit in 1000, the 75% rule would cut inside
    chunks = chunk_document(text, ChunkConfig(chunk_size_bytes=1000, overlap="none"), DocType.PROSE)
    assert len(chunks) > 2
    assert all(c.text.startswith("# Section") for c in chunks)


def test_rst_underlined_titles_are_preferred_boundaries() -> None:
    sections = []
    for i in range(8):
        body = "\n\n".join(_paragraphs(4, 100))
        sections.append(f"Section {i}\n==========\n\n{body}")
    text = "\n\n".join(sections)
    chunks = chunk_document(text, ChunkConfig(chunk_size_bytes=1000, overlap="none"), DocType.PROSE)
    assert all(c.text.startswith("Section ") for c in chunks)


GO_SOURCE = (
    'package main\n\nimport "fmt"\n\n'
    + "\n\n".join(
        f"// F{i} does thing {i}.\nfunc F{i}(x int) int {{\n"
        + "".join(f"\ty{j} := x + {j}\n\n" for j in range(6))
        + "\treturn x\n}"
        for i in range(12)
    )
    + "\n"
)


@pytest.mark.parametrize("language", ["go", None])
def test_source_split_at_function_boundaries(language: str | None) -> None:
    cfg = ChunkConfig(chunk_size_bytes=300, overlap="none")
    chunks = chunk_document(GO_SOURCE, cfg, DocType.SOURCE, language=language)
    assert len(chunks) > 3
    for c in chunks[1:]:
        assert c.text.startswith("// F"), c.text[:40]


def _big_class_source(between: str = "\n") -> str:
    # ~300-byte methods with blank lines inside: the 75% rule alone would cut mid-method.
    methods = between.join(
        f"    def method_{i}(self, x):\n"
        + "".join(f"        y{j} = x + {j} * {'7' * 20}\n\n" for j in range(6))
        + "        return x\n"
        for i in range(20)
    )
    head = 'import os\n\n\nclass Big:\n    """A big class."""\n\n'
    return f"{head}{methods}\n\ndef tail():\n    pass\n"


def test_tree_sitter_splits_big_classes_at_methods() -> None:
    src = _big_class_source()
    cfg = ChunkConfig(chunk_size_bytes=1000, overlap="none")
    chunks = chunk_document(src, cfg, DocType.SOURCE, language="python")
    assert len(chunks) > 3
    for c in chunks[1:]:
        assert re.match(r"\s*(def |class )", c.text), c.text[:40]


def test_fallback_to_heuristic_when_the_grammar_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    src = _big_class_source(between="")  # no blank line before a method: only a grammar sees it
    cfg = ChunkConfig(chunk_size_bytes=1000, overlap="none")
    with_grammar = chunk_document(src, cfg, DocType.SOURCE, language="python")
    heuristic = chunk_document(src, cfg, DocType.SOURCE, language=None)
    assert with_grammar != heuristic

    def missing(language: str) -> object:
        raise source_boundaries.GrammarUnavailable(language)

    monkeypatch.setattr(source_boundaries, "load_parser", missing)
    assert chunk_document(src, cfg, DocType.SOURCE, language="python") == heuristic
    assert source_boundaries.definition_starts(src.encode(), "python", 1000) is None


def test_fallback_when_parsing_fails() -> None:
    broken = "def f(:\n    pass\n\n" * 50
    assert source_boundaries.definition_starts(broken.encode(), "python", 100) is None
    assert source_boundaries.definition_starts(b"x = 1\n", "no-such-language", 100) is None
    cfg = ChunkConfig(chunk_size_bytes=100, overlap="none")
    assert chunk_document(broken, cfg, DocType.SOURCE, language="python") == chunk_document(
        broken, cfg, DocType.SOURCE
    )


def test_definition_starts_include_attached_comments_and_decorators() -> None:
    src = b"import os\n\n# about f\n# more\n@dec\ndef f():\n    pass\n\n\nclass A:\n    pass\n"
    starts = source_boundaries.definition_starts(src, "python", 6000)
    assert starts == [src.index(b"# about f"), src.index(b"class A")]


def test_prose_and_source_boundaries_differ_on_a_mixed_file() -> None:
    parts = []
    for i in range(10):
        parts.append(f"Some prose about step {i}. It explains things.\n\n")
        parts.append(f"def step_{i}(x):\n    return x + {i}\n\n")
        parts.append(f"    indented continuation {i} of the example\n\n")
        parts.append("}\n\n")
    text = "".join(parts)
    cfg = ChunkConfig(chunk_size_bytes=300, overlap="none")
    prose = [c.start for c in chunk_document(text, cfg, DocType.PROSE)]
    source = [c.start for c in chunk_document(text, cfg, DocType.SOURCE)]
    assert prose != source


def test_line_numbers() -> None:
    text = "a\n\nb\nc\n\n" + "d" * 50 + "\n\ne\n"
    chunks = chunk_document(text, ChunkConfig(chunk_size_bytes=20, overlap="none"), DocType.PROSE)
    for c in chunks:
        assert c.start_line == text.count("\n", 0, c.start) + 1
        assert c.end_line == text.count("\n", 0, max(c.start, c.end - 1)) + 1
    assert chunks[0].start_line == 1


def _module_with_big_class() -> str:
    # A small function, then a class much bigger than a chunk, then small functions.
    small = (
        "def small():\n" + "".join(f"    x{i} = {i} * 12345\n" for i in range(8)) + "    return 1\n"
    )
    methods = "\n".join(
        f"    def m{i}(self):\n        return {i} * {'9' * 40}\n" for i in range(40)
    )
    tail = "\n\n".join(f"def tail_{i}(x):\n    return x + {i}\n" for i in range(10))
    return f"import os\n\n\n{small}\n\nclass Big:\n{methods}\n\n{tail}"


@pytest.mark.parametrize("language", [None, "python"])
def test_a_chunk_does_not_run_into_a_definition_it_cannot_hold(language: str | None) -> None:
    # ``class Big`` starts early in the first window (about a fifth in): the
    # first chunk ends there rather than splitting the class after a few methods.
    src = _module_with_big_class()
    cfg = ChunkConfig(chunk_size_bytes=1000, overlap="none")
    chunks = chunk_document(src, cfg, DocType.SOURCE, language=language)
    assert 1000 // 12 < chunks[1].start < 1000 // 3
    assert chunks[1].text.startswith("class Big:")
    # Inside the class the cuts fall at methods; after it, at top-level functions.
    for c in chunks[2:]:
        assert re.match(r"(    def m\d+|def tail_\d+)", c.text), c.text[:40]


def test_definition_levels_separate_top_level_from_nested() -> None:
    src = _module_with_big_class().encode()
    levels = source_boundaries.definition_levels(src, "python", 1000)
    assert levels is not None
    top, every = levels
    assert top == [src.index(b"def small"), src.index(b"class Big")] + [
        src.index(f"def tail_{i}".encode()) for i in range(10)
    ]
    assert src.index(b"    def m1(") in every and set(top) < set(every)
    assert source_boundaries.definition_starts(src, "python", 1000) == every


def test_heading_underlined_past_the_window_end_is_still_found() -> None:
    # The title starts inside the window; its underline is the line after the window's end.
    body = "\n\n".join(_paragraphs(6, 90))
    text = f"{body}\n\nA Title\n=======\n\n" + "\n\n".join(_paragraphs(6, 90))
    title = text.index("A Title")
    size = title + 4  # the window ends inside the title line
    chunks = chunk_document(text, ChunkConfig(chunk_size_bytes=size, overlap="none"), DocType.PROSE)
    assert chunks[1].start == title


def test_headings_with_different_overline_are_not_titles() -> None:
    paras = _paragraphs(8, 100)
    fake = "~~~~~~~\nNot a title\n=======\n"
    text = "\n\n".join(paras[:5]) + "\n\n" + fake + "\n" + "\n\n".join(paras[5:])
    chunks = chunk_document(text, ChunkConfig(chunk_size_bytes=700, overlap="none"), DocType.PROSE)
    assert all(not c.text.startswith(("~~~", "Not a title")) for c in chunks)


def test_non_ascii_offsets_and_lines_with_overlap() -> None:
    text = "\n\n".join(f"Été {i}: naïve café — 日本語 {'ü' * (i % 7)}. Fin." for i in range(200))
    chunks = chunk_document(text, ChunkConfig(chunk_size_bytes=300), DocType.PROSE)
    assert len(chunks) > 10
    for prev, c in itertools.pairwise(chunks):
        assert text[c.start : c.end] == c.text and len(c.text.encode()) <= 300
        assert c.start_line == text.count("\n", 0, c.start) + 1
        assert c.end_line == text.count("\n", 0, c.end - 1) + 1
        assert prev.start < c.start < prev.end  # paragraph overlap


def test_headings_right_after_a_rule_line_are_found() -> None:
    # A Markdown thematic break directly above an ATX heading: the rule line is a
    # heading candidate too, and must not hide the line after it.
    sections = []
    for i in range(8):
        body = "\n\n".join(_paragraphs(4, 100))
        sections.append(f"# Section {i}\n\n{body}\n\n---")
    text = "\n".join(sections)
    chunks = chunk_document(text, ChunkConfig(chunk_size_bytes=1000, overlap="none"), DocType.PROSE)
    assert len(chunks) > 2
    assert all(c.text.startswith("# Section") for c in chunks)
