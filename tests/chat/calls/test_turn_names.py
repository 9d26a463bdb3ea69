"""harvey.chat.calls.turn_names: what a constrained turn may name — a listing's files as
workspace paths, and the words a prompt asks about."""

from __future__ import annotations

from pathlib import Path

from harvey.chat.calls.tool_choice import choice_schema
from harvey.chat.calls.turn_names import listing_paths, turn_paths, turn_words
from harvey.messages import Message
from harvey.tools.files import ListFilesTool
from harvey.tools.registry import ToolContext
from harvey.tools.search import SearchFilesTool
from harvey.workspace.mentions import named_folders


def _schema(tool: object) -> dict:  # type: ignore[type-arg]
    return {
        "type": "function",
        "function": {
            "name": tool.name,  # type: ignore[attr-defined]
            "description": "",
            "parameters": tool.parameters,  # type: ignore[attr-defined]
        },
    }


def test_a_listing_names_its_files_by_their_workspace_paths(tmp_path: Path) -> None:
    for rel in ("src/dates.py", "src/util/a.py", "notes.md", ".env"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\n")
    (tmp_path / "link.md").symlink_to(tmp_path / "notes.md")
    ctx = ToolContext(workspace=tmp_path)
    whole = ListFilesTool().run(ctx, {})
    # two levels by default; the secret .env is listed but is no path to read
    assert listing_paths(whole) == ["src/dates.py", "link.md", "notes.md"]
    assert listing_paths(ListFilesTool().run(ctx, {"path": "src"})) == [
        "src/util/a.py",  # folders first, as the tree lists them
        "src/dates.py",
    ]
    assert listing_paths("no match for x") == [] and listing_paths("") == []
    listed = Message("tool", whole, name="list_files")
    messages = [Message("user", "List the files."), listed]
    assert "src/dates.py" in turn_paths(messages) and "dates.py" not in turn_paths(messages)


def test_the_words_a_prompt_asks_about_names_first() -> None:
    def words(text: str) -> list[str]:
        return turn_words([Message("user", "old question about money.py"), Message("user", text)])

    assert words("Find where parse_date is defined.") == ["parse_date"]
    assert words("Find the file that defines the class UserStore.") == ["UserStore"]
    assert words("List the files in the src folder.") == ["src"]
    assert words("Which module handles the VAT rate in config/app.yaml?") == [
        "VAT",
        "config/app.yaml",
        "module",
        "handles",
        "rate",
    ]
    assert words("how do I") == [] and turn_words([]) == []


def test_a_constrained_search_and_listing_choose_from_the_turns_words() -> None:
    schemas = [_schema(SearchFilesTool()), _schema(ListFilesTool())]
    choices = choice_schema(schemas, (), ["parse_date", "src"], ["src"])["oneOf"]
    search, listing = choices[1]["properties"]["arguments"], choices[2]["properties"]["arguments"]
    assert search["properties"] == {
        "pattern": {
            **SearchFilesTool.parameters["properties"]["pattern"],
            "enum": ["parse_date", "src"],
        }
    }
    assert listing["properties"]["path"]["enum"] == [".", "src"]
    assert set(listing["properties"]) == {"path"}  # no depth for a small model to fill in
    # without words the pattern stays free and the listing is of the workspace
    free = choice_schema(schemas, (), ())["oneOf"]
    assert "enum" not in free[1]["properties"]["arguments"]["properties"]["pattern"]
    assert free[2]["properties"]["arguments"]["properties"]["path"]["enum"] == ["."]


def test_only_words_that_name_a_folder_are_offered_to_list(tmp_path: Path) -> None:
    (tmp_path / "src" / "api").mkdir(parents=True)
    (tmp_path / "notes.md").write_text("x")
    (tmp_path / "out").symlink_to(tmp_path.parent)  # a link is never offered,
    (tmp_path.parent / "elsewhere").mkdir(exist_ok=True)  # nor a folder through one
    words = ["UserStore", "src", "src/api", "notes.md", "missing", "out", "out/elsewhere"]
    assert named_folders(words, tmp_path) == ["src", "src/api"]


def test_the_persons_own_words_name_the_turn_not_the_passages_sent_with_them() -> None:
    """A turn's message carries the plan or retrieved passages ahead of the person's words:
    a passage's names must not crowd the choice (nor offer a file only it mentions)."""
    passage = "### Context (from knowledge base)\nsee old_helper in legacy/tools.py\n\n"
    asked = "Find where parse_date is defined in src/dates.py"
    messages = [Message("user", passage + asked)]
    assert turn_words(messages, asked) == ["parse_date", "src/dates.py"]
    assert turn_paths(messages, asked) == ["src/dates.py"]
    assert "old_helper" in turn_words(messages) and "legacy/tools.py" in turn_paths(messages)
