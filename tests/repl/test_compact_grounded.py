"""``/compact`` cannot invent (issue 39): a small model's summary is built from the
conversation, and a summary that is not in the conversation is never recorded."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from harvey.analysis.matching import find_words, normalise
from harvey.chat.grounded_summary import BUILT_BY, HEADING
from harvey.chat.runtime import open_runtime
from harvey.config.settings import load_settings, resolve_paths
from harvey.llm.scripted import Reply
from harvey.repl.loop import Repl
from harvey.repl.ui import LineReader, TerminalUI
from harvey.session.fountain import parse_session
from tests.fakes.servers import FakeOpenAI

INVENTED = "The conversation above is summarised in 940 words."
LINES = ("My cat is Tom.", "My dog is Rex.", "My bird is Kiwi.")
REPLIES = ("Noted: the cat is Tom.", "Noted: the dog is Rex.", "Noted: the bird is Kiwi.")


def repl_on(workspace: Path, url: str, model: str) -> tuple[Repl, io.StringIO]:
    paths = resolve_paths(workspace)
    settings = load_settings(paths, {"backend": "openai", "base_url": url, "model": model}, env={})
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)
    reader = LineReader(None)
    ui = TerminalUI(console, reader)
    return Repl(open_runtime(paths, settings, ui=ui), console, reader, ui), out


def compact_after_three_turns(
    tmp_path: Path, model: str, script: list[Reply]
) -> tuple[str, list[dict[str, object]], str | None, str]:
    """Three turns and ``/compact``: what was shown, the requests, the summary recorded
    and the model the note names; every line the summary quotes was said."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with FakeOpenAI(script) as srv:
        repl, out = repl_on(workspace, srv.url, model)
        try:
            for line in LINES:
                assert repl.dispatch(line)
            said = "\n".join(m.content for m in repl.rt.store.messages(repl.agent.session_id))
            assert repl.dispatch("/compact")
            recording = repl.rt.recorder.path if repl.rt.recorder else None
        finally:
            repl.rt.close()
        requests = list(srv.chat_requests)
    assert recording is not None
    notes = [s.compaction for s in parse_session(recording).turns if s.compaction is not None]
    assert len(notes) == 1 and notes[0] is not None and notes[0].ok
    summary = notes[0].summary
    if summary is not None and summary.startswith(HEADING):
        in_conversation(summary, said)
    return out.getvalue(), requests, summary, notes[0].model


def in_conversation(summary: str, conversation: str) -> None:
    """Every quoted line of ``summary`` is in the conversation, word for word (a line
    cut short ends in "…": the part before it)."""
    said = normalise(conversation)
    quoted = [line.split(": ", 1)[1].strip('"') for line in summary.splitlines()[1:]]
    assert quoted, summary
    for quote in quoted:
        assert find_words(normalise(quote.rstrip('…"')), said) >= 0, quote


def test_a_small_models_summary_is_built_from_the_conversation_with_no_model_call(
    tmp_path: Path,
) -> None:
    script = [Reply(r) for r in REPLIES]  # no reply for a summary: none may be asked
    shown, requests, summary, model = compact_after_three_turns(tmp_path, "qwen2.5:0.5b", script)
    assert len(requests) == 3, "the summary asked the model nothing"
    assert summary is not None and summary.startswith(HEADING)
    assert '- turn 1, asked: "My cat is Tom."' in summary
    assert "- turn 1, answered: " in summary
    assert model == BUILT_BY
    assert "quoted from the conversation" in shown


def test_a_summary_none_of_whose_content_is_in_the_conversation_is_never_recorded(
    tmp_path: Path,
) -> None:
    script = [*(Reply(r) for r in REPLIES), Reply(INVENTED)]
    shown, requests, summary, model = compact_after_three_turns(tmp_path, "llama3:8b", script)
    assert len(requests) == 4, "the 8B model was asked for its summary"
    assert summary is not None and INVENTED not in summary
    assert summary.startswith(HEADING) and model == BUILT_BY
    assert '"Noted: the cat is Tom."' in summary
    assert "not in the conversation" in shown


def test_a_large_models_summary_from_the_conversation_is_kept(tmp_path: Path) -> None:
    kept = "The user's pets: the cat Tom, so far."
    script = [*(Reply(r) for r in REPLIES), Reply(kept)]
    _shown, _requests, summary, model = compact_after_three_turns(tmp_path, "llama3:8b", script)
    assert summary == kept and model == "llama3:8b"
