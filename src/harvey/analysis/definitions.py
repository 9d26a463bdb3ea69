"""Where a name is defined: the workspace's definitions, parsed by tree-sitter, ranked.

"Where is parse_date defined?" and "Where is the function that parses JSON strings
defined?" are answered from the code itself, not by a model: every source file the
workspace walk reaches (``workspace.files.walk_files``: ``.harvey/``, ``.git/`` and
virtualenvs skipped) is parsed with the grammar the chunker uses
(``chunks.source_boundaries.load_parser``), and each function, class and method is
one entry — its name, its first line, its docstring or the comment above it. A name
the question holds (``parse_date``, ``UserStore``) picks its definition; else the
entries are ranked by BM25 over the words of the name (``py_scanstring`` → ``py scan
string``) and its docstring, so "parses JSON strings" finds ``py_scanstring``, whose
docstring says it scans "a JSON string". An answer is a line per definition::

    jsonpkg/decoder.py:L69  def py_scanstring(s, end, strict=True,
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harvey.retrieval.lexical import LexicalIndex, terms_of

MAX_FILES = 2_000  # a walk that large is no longer "the workspace's code"
MAX_FILE_BYTES = 1_000_000
_NAMED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DEFINITION_KINDS = re.compile(
    r"function_definition|class_definition|function_declaration|method_declaration"
    r"|class_declaration|function_item|struct_item|impl_item|trait_item|method_definition"
    r"|interface_declaration|type_declaration|enum_item|struct_specifier|type_spec"
)
# Words that say what to look for, not what it is called.
_ASKING = frozenset(
    re.findall(
        r"\w+",
        "where which what find defined define defines definition declared function functions "
        "method methods class classes file files code module the that this is are a an of in "
        "for to it does do show me located lives",
    )
)


@dataclass(frozen=True)
class Definition:
    """One function, class or method: where it starts and what it says of itself."""

    path: str  # workspace-relative, with /
    line: int  # 1-based
    name: str
    signature: str  # its first line, as written
    doc: str = ""

    def cited(self) -> str:
        return f"{self.path}:L{self.line}  {self.signature.strip()}"

    @property
    def words(self) -> str:
        """Its name split into words (``py_scanstring`` → ``py scanstring scan string``),
        then its docstring: what a question's words are matched against."""
        name = split_name(self.name)
        return f"{name} {name} {self.doc}"  # the name counts twice: it says what it is

    @property
    def kind(self) -> str:
        """``class`` or ``function`` (a method, a def, a fn), as the question may say."""
        first = self.signature.split("(", 1)[0].lower()
        return (
            "class"
            if re.search(r"\b(class|struct|interface|trait|type|enum)\b", first)
            else "function"
        )


def split_name(name: str) -> str:
    """``parse_date`` → ``parse date``; ``UserStore`` → ``User Store``; ``scanstring`` stays,
    with a known word it ends in split off too (``scanstring string``)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", name.replace("_", " "))
    parts = spaced.split()
    split = [
        f"{p[: -len(t)]} {t}"
        for p in parts
        for t in _TAILS
        if p.lower().endswith(t) and len(p) > len(t) + 1
    ]
    return " ".join([*parts, *split])


_TAILS = ("string", "object", "array", "number", "name", "file", "list", "date", "value")


def definitions_in(path: str, data: bytes, language: str) -> list[Definition]:
    """The definitions of one source file, nested ones (methods) included; [] when the
    grammar is missing or the file does not parse."""
    from harvey.chunks.source_boundaries import load_parser
    from harvey.errors import GrammarUnavailable

    try:
        tree = load_parser(language).parse(data)
    except GrammarUnavailable:
        return []
    except Exception:  # a broken binding costs this file's definitions only
        return []
    lines = data.decode("utf-8", "replace").splitlines()
    found: list[Definition] = []
    stack: list[Any] = [tree.root_node]
    while stack:
        node = stack.pop()
        for child in reversed(node.named_children):
            stack.append(child)
        if node is tree.root_node or not _DEFINITION_KINDS.search(node.type):
            continue
        name_node = node.child_by_field_name("name")
        if name_node is None:
            continue
        name = data[name_node.start_byte : name_node.end_byte].decode("utf-8", "replace")
        row = node.start_point.row
        signature = lines[row] if row < len(lines) else name
        found.append(Definition(path, row + 1, name, signature, _doc_of(node, data, lines)))
    return sorted(found, key=lambda d: d.line)


def _doc_of(node: Any, data: bytes, lines: list[str]) -> str:
    """A definition's docstring (Python: the body's first string) or the comments right
    above it, on one line."""
    body = node.child_by_field_name("body")
    if body is not None and body.named_children:
        first = body.named_children[0]
        if first.type == "expression_statement" and first.named_children:
            first = first.named_children[0]
        if first.type == "string":
            return _string_text(data[first.start_byte : first.end_byte])
    row = node.start_point.row - 1
    above: list[str] = []
    while row >= 0 and lines[row].strip().startswith(("#", "//", "/*", "*", "--")):
        above.insert(0, lines[row].strip().lstrip("#/*- "))
        row -= 1
    return " ".join(above)[:600]


_STRING_QUOTES = re.compile(r"""^[rRbBuUfF]*(\"\"\"|'''|"|')|(\"\"\"|'''|"|')$""")


def _string_text(raw: bytes) -> str:
    """A string literal's text on one line, without its prefix and quotes."""
    text = _STRING_QUOTES.sub("", raw.decode("utf-8", "replace").strip())
    return " ".join(text.split())[:600]


def module_doc(data: bytes, language: str) -> str:
    """A Python module's docstring on one line ("" for none, or for another language)."""
    from harvey.chunks.source_boundaries import load_parser
    from harvey.errors import GrammarUnavailable

    if language != "python":
        return ""
    try:
        root = load_parser(language).parse(data).root_node
    except GrammarUnavailable:
        return ""
    except Exception:  # a broken binding: no docstring, as for a file without one
        return ""
    first = root.named_children[0] if root.named_children else None
    if first is not None and first.type == "expression_statement" and first.named_children:
        first = first.named_children[0]
    if first is None or first.type != "string":
        return ""
    return _string_text(data[first.start_byte : first.end_byte])


def workspace_definitions(workspace: Path, folder: Path | None = None) -> list[Definition]:
    """Every definition in the source files under ``folder`` (default: the workspace)."""
    from harvey.workspace.files import relative_posix, walk_files
    from harvey.workspace.kinds import language_for_path

    root = workspace.resolve()
    found: list[Definition] = []
    for count, file in enumerate(walk_files(root, (folder or root).resolve())):
        if count >= MAX_FILES:
            break
        language = language_for_path(file)
        if language is None:
            continue
        try:
            if file.stat().st_size > MAX_FILE_BYTES:
                continue
            data = file.read_bytes()
        except OSError:
            continue
        found.extend(definitions_in(relative_posix(root, file), data, language))
    return found


def asked_names(question: str) -> list[str]:
    """The identifiers a question names (``parse_date``, ``UserStore``, ``with_vat``)."""
    return [
        w
        for w in dict.fromkeys(_NAMED.findall(question))
        if w.lower() not in _ASKING and ("_" in w or re.search(r"[a-z][A-Z]|^[A-Z][a-z]+[A-Z]", w))
    ]


def find_definitions(
    definitions: list[Definition], question: str, *, limit: int = 3
) -> list[Definition]:
    """The definitions ``question`` asks about, best first: those it names exactly, else
    the ones whose name and docstring share the most of its words (none when no word
    is shared)."""
    named = {n.lower() for n in asked_names(question)}
    if not named:  # a plain word may still be a name: "where is loads defined"
        plain = {w.lower() for w in _NAMED.findall(question) if w.lower() not in _ASKING}
        named = {d.name.lower() for d in definitions if d.name.lower() in plain}
    exact = [d for d in definitions if d.name.lower() in named]
    if exact:
        return exact[:limit]
    lowered = question.lower()
    if re.search(r"\b(function|method)s?\b", lowered):
        definitions = [d for d in definitions if d.kind == "function"]
    elif re.search(r"\bclass(es)?\b", lowered):
        definitions = [d for d in definitions if d.kind == "class"]
    words = " ".join(w for w in _NAMED.findall(question) if w.lower() not in _ASKING)
    if not terms_of(words) or not definitions:
        return []
    index = LexicalIndex([d.words for d in definitions])
    scores = index.scores(words)
    order = sorted(range(len(definitions)), key=lambda i: (-float(scores[i]), i))
    best = [definitions[i] for i in order[:limit] if scores[i] > 0]
    if not best:
        return []
    top = float(scores[order[0]])
    return [d for d, i in zip(best, order, strict=False) if float(scores[i]) >= top * 0.5]


def is_definition_question(question: str) -> bool:
    """ "Where is X defined", "Find the file that defines X", "Which file defines X"."""
    lowered = question.lower()
    return bool(re.search(r"\bdefin(e|es|ed|ition)\b|\bdeclared\b|\bimplemented\b", lowered))


def definitions_answer(workspace: Path, question: str) -> str | None:
    """The reply to a definition question: a cited line per definition found, or None."""
    found = find_definitions(workspace_definitions(workspace), question)
    if not found:
        return None
    return "\n".join(d.cited() for d in found)


__all__ = [
    "Definition",
    "definitions_answer",
    "definitions_in",
    "find_definitions",
    "is_definition_question",
    "module_doc",
    "split_name",
    "workspace_definitions",
]
