"""``harvey run`` on a model under 1B parameters: the model chooses, Harvey answers (issue 39).

The loopback server plays the small model (its name says ``0.5b``): it chooses a tool,
then offers a reply of its own that must never be shown; what is shown is built from
what the tool found. A model of 1B or more keeps its own reply.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harvey.llm.scripted import Reply
from tests.fakes.servers import FakeOpenAI

from .conftest import Run

SMALL = ("--model", "qwen2.5:0.5b")
PARAPHRASE = "I think it is somewhere in the utils folder."


@pytest.fixture()
def code(workspace: Path) -> Path:
    (workspace / "src").mkdir()
    (workspace / "src" / "dates.py").write_text(
        "import re\n\n\ndef parse_date(text):\n    return text.split('-')\n"
    )
    (workspace / "src" / "money.py").write_text("VAT_RATE = 0.2\n")
    (workspace / "notes.md").write_text(
        "Boiler serviced on 3 March 2026 by Ray.\nThe spare key is under the blue pot.\n"
    )
    return workspace


def run(harvey: Run, url: str, *args: str) -> str:
    proc = harvey("run", "--yes", *args, "--backend", "openai", "--base-url", url)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_where_is_it_defined_is_answered_by_the_definitions(harvey: Run, code: Path) -> None:
    script = [Reply(tool_calls=[("search_files", {"pattern": "date"})]), Reply(PARAPHRASE)]
    with FakeOpenAI(script) as srv:
        out = run(harvey, srv.url, "Where is parse_date defined?", *SMALL)
        assert len(srv.chat_requests) == 1, "no model call after the tool"
    assert out == "src/dates.py:L4  def parse_date(text):\n"


def test_a_listing_request_is_answered_by_the_listing(harvey: Run, code: Path) -> None:
    script = [Reply(tool_calls=[("list_files", {"path": "."})]), Reply(PARAPHRASE)]
    with FakeOpenAI(script) as srv:
        out = run(harvey, srv.url, "List the files in the src folder.", *SMALL)
    assert PARAPHRASE not in out
    assert out.splitlines()[0] == "src/" and "dates.py" in out and "money.py" in out
    assert "notes.md" not in out


def test_a_question_about_a_file_is_answered_by_its_cited_evidence(harvey: Run, code: Path) -> None:
    script = [Reply(tool_calls=[("read_file", {"path": "notes.md"})]), Reply(PARAPHRASE)]
    with FakeOpenAI(script) as srv:
        out = run(harvey, srv.url, "Read notes.md: where is the spare key?", *SMALL)
        assert len(srv.chat_requests) == 1, "the evidence is found with no model call"
    assert PARAPHRASE not in out
    assert "The spare key is under the blue pot." in out and "notes.md:L" in out


def test_a_small_models_own_answer_is_replaced_by_the_conversations_words(
    harvey: Run, code: Path
) -> None:
    with FakeOpenAI([Reply("OK."), Reply("The word is pelican.")]) as srv:
        first = run(harvey, srv.url, "Remember the word heron", *SMALL)
        second = run(harvey, srv.url, "-c", "What is the word?", *SMALL)
    assert "heron" in first and "OK." not in first
    assert "heron" in second and "pelican" not in second
    assert "turn 1" in second


def test_a_model_of_a_billion_parameters_or_more_writes_its_own_reply(
    harvey: Run, code: Path
) -> None:
    script = [Reply(tool_calls=[("search_files", {"pattern": "parse_date"})]), Reply(PARAPHRASE)]
    with FakeOpenAI(script) as srv:
        out = run(harvey, srv.url, "Where is parse_date defined?", "--model", "llama3:8b")
    assert out == PARAPHRASE + "\n"


def test_a_one_line_file_is_answered_from_its_line_cited(harvey: Run, workspace: Path) -> None:
    """A one-line note reads as a title to the unit splitter; the finder answers from it
    when it is all the file holds (shown whole and cited otherwise)."""
    (workspace / "trip.md").write_text("Train to Leeds leaves at 07:42 from platform 4.\n")
    script = [Reply(tool_calls=[("read_file", {"path": "trip.md"})]), Reply(PARAPHRASE)]
    with FakeOpenAI(script) as srv:
        out = run(harvey, srv.url, "From which platform does the train in trip.md leave?", *SMALL)
    assert "Train to Leeds leaves at 07:42 from platform 4." in out and PARAPHRASE not in out
    assert "trip.md:L1" in out


def test_a_refused_write_is_the_reply_not_the_models_words(harvey: Run, workspace: Path) -> None:
    (workspace / "notes.txt").write_text("milk\nbread\n")
    args = {"path": "notes.txt", "old_string": "bread\n", "new_string": "bread\neggs\n"}
    script = [Reply(tool_calls=[("edit_file", args)]), Reply(PARAPHRASE)]
    with FakeOpenAI(script) as srv:
        proc = harvey(
            "run", 'Add "eggs" at the end of notes.txt', *SMALL,
            "--backend", "openai", "--base-url", srv.url,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "write refused" in proc.stdout and PARAPHRASE not in proc.stdout
    assert (workspace / "notes.txt").read_text() == "milk\nbread\n"


def test_an_append_request_spells_out_the_edit_the_grammar_offers(workspace: Path) -> None:
    from harvey.chat.calls.harvey_replies import append_edit

    (workspace / "notes.txt").write_text("milk\nbread\n")
    asked = 'Add "eggs" as a new item at the end of notes.txt'
    assert append_edit(asked, workspace) == ("notes.txt", "bread\n", "bread\neggs\n")
    assert append_edit("What is in notes.txt?", workspace) is None
    assert append_edit('Add "eggs" to missing.txt', workspace) is None
