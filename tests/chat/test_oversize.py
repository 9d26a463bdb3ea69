"""The pre-read guard and chunked analysis, driven through a real Agent turn."""

from __future__ import annotations

from pathlib import Path

from harvey.chat.oversize import CANCELLED_TEXT
from harvey.chunks.chunking import ChunkConfig, chunk_document
from harvey.config.settings import ChunkingSettings, Settings
from harvey.llm.scripted import Reply
from harvey.session.fountain import parse_session
from harvey.session.recorder import CHUNK_DONE as CHUNK_CLOSING
from harvey.ui import HeadlessUI
from harvey.workspace.kinds import DocType
from tests.fakes.evidence import part_of, records

from .conftest import AgentFactory

SENTENCE = "The reservoir opened in 1881 and held four hundred million gallons of water."
PARAGRAPH = f"{SENTENCE} " * 6
RECORD = records(SENTENCE)  # a map reply: the sentence, quoted from the chunk


def big_file(workspace: Path, paragraphs: int = 80) -> Path:
    path = workspace / "history.md"
    path.write_text("\n\n".join(f"{i}. {PARAGRAPH}" for i in range(paragraphs)) + "\n")
    return path


def expected_chunks(path: Path) -> int:
    return len(chunk_document(path.read_text(), ChunkConfig(), DocType.PROSE))


class AnsweringUI(HeadlessUI):
    """A person at the terminal: answers the alert with a fixed instruction."""

    interactive = True

    def __init__(self, answer: str | None) -> None:
        super().__init__()
        self.answer = answer
        self.alerts: list[tuple[str, str]] = []

    def ask_chunk_instruction(self, alert: str, default: str) -> str | None:
        self.alerts.append((alert, default))
        return self.answer

    def confirm(self, question: str) -> bool:
        return True


def test_non_interactive_read_is_cancelled_with_a_hint(
    make_agent: AgentFactory, workspace: Path
) -> None:
    big_file(workspace)
    agent = make_agent(
        [Reply(tool_calls=[("read_file", {"path": "history.md"})]), "It is too big."],
        context_window=2048,
    )
    outcome = agent.turn("Summarise history.md")
    assert outcome.reply == "It is too big."
    result = outcome.tool_results[0].content
    assert result.startswith("File read cancelled")
    assert "--yes" in result
    assert "history.md" in result


def test_user_says_no(make_agent: AgentFactory, workspace: Path) -> None:
    big_file(workspace)
    ui = AnsweringUI(None)
    agent = make_agent(
        [Reply(tool_calls=[("read_file", {"path": "history.md"})]), "OK, not reading it."],
        context_window=2048,
        ui=ui,
    )
    outcome = agent.turn("Summarise history.md")
    assert outcome.tool_results[0].content == CANCELLED_TEXT
    alert, default = ui.alerts[0]
    assert "Context overflow: history.md is " in alert and "approximately" not in alert
    assert "tokens a read may take now (of " in alert
    assert 'Enter instructions to process each chunk in turn, or "no" to return.' in alert
    assert default == "Summarise history.md"  # the last user message is pre-filled


def test_accepted_alert_runs_map_reduce_and_injects_the_synthesis(
    make_agent: AgentFactory, workspace: Path
) -> None:
    path = big_file(workspace)
    n = expected_chunks(path)
    assert n > 1
    ui = AnsweringUI("List the dates in each part.")
    replies: list[Reply | str] = [Reply(tool_calls=[("read_file", {"path": "history.md"})])]
    replies += [RECORD] * n + ["FINAL: 1881 [1]."]
    agent = make_agent(replies, context_window=2048, ui=ui)
    outcome = agent.turn("Summarise history.md")
    answer = "FINAL: 1881 [1].\n\nSources:\n[1] history.md:L1"
    assert outcome.reply == answer  # the answer enters the conversation with its sources
    assert outcome.chunk_analysis
    assert outcome.tool_results[0].content == answer
    assert agent.history[-1].content == answer
    map_prompts = [s.messages[-1].content for s in agent.client.seen[1 : n + 1]]
    assert all(p.startswith("Instruction: List the dates in each part.") for p in map_prompts)
    assert [part_of(p) for p in map_prompts] == [(i, n) for i in range(1, n + 1)]
    synthesis = agent.client.seen[n + 1].messages[-1].content
    assert f"[1] (history.md:L1) {SENTENCE}" in synthesis

    agent.recorder.close()
    scenes = parse_session(agent.recorder.path).scenes
    kinds = [s.kind for s in scenes]
    assert kinds == ["talking", "chunk_analysis", "talking"]
    overflow, analysis, answer = scenes
    assert overflow.user_text == "Summarise history.md"
    assert overflow.reply is None
    assert any("Context overflow" in text for who, text in overflow.dialogue if who == "HARVEY")
    assert analysis.chunk is not None and analysis.chunk.chunks == n
    assert len(analysis.chunk_results) == n
    assert [e.quote for e in analysis.evidence][:1] == [SENTENCE]
    assert [c.id for c in analysis.citations] == [1]
    assert any(CHUNK_CLOSING in text for who, text in analysis.dialogue)
    assert answer.reply == "FINAL: 1881 [1].\n\nSources:\n[1] history.md:L1"


def test_chunking_disabled_reads_without_any_guard(
    make_agent: AgentFactory, workspace: Path
) -> None:
    big_file(workspace)
    settings = Settings(chunking=ChunkingSettings(enabled=False))
    agent = make_agent(
        [Reply(tool_calls=[("read_file", {"path": "history.md"})]), "Read it."],
        context_window=2048,
        settings=settings,
    )
    outcome = agent.turn("Summarise history.md")
    assert outcome.tool_results[0].content.startswith("0. The reservoir opened")


def test_small_file_is_read_normally(make_agent: AgentFactory, workspace: Path) -> None:
    (workspace / "small.md").write_text("tiny file\n")
    ui = AnsweringUI("should not be asked")
    agent = make_agent(
        [Reply(tool_calls=[("read_file", {"path": "small.md"})]), "ok"], context_window=2048, ui=ui
    )
    agent.turn("read small.md")
    assert ui.alerts == []


def test_tool_less_model_gets_the_same_guard(make_agent: AgentFactory, workspace: Path) -> None:
    path = big_file(workspace)
    n = expected_chunks(path)
    ui = AnsweringUI("Dates please.")
    agent = make_agent(
        [RECORD] * n + ["It opened in 1881 [1]."],
        context_window=2048,
        ui=ui,
        supports_tools=False,
    )
    outcome = agent.turn("What happened in history.md?")
    assert ui.alerts, "the alert fired for a file named in the prompt"
    assert outcome.reply.startswith("It opened in 1881 [1].")


def test_tool_less_model_gets_small_files_attached(
    make_agent: AgentFactory, workspace: Path
) -> None:
    (workspace / "note.txt").write_text("remember the milk\n")
    agent = make_agent(["ok"], supports_tools=False)
    agent.turn("What does note.txt say?")
    sent = agent.client.seen[0].messages[-1].content
    assert "remember the milk" in sent


def test_harvey_run_yes_uses_prompt_as_instruction(
    make_agent: AgentFactory, workspace: Path
) -> None:
    path = big_file(workspace)
    n = expected_chunks(path)
    replies: list[Reply | str] = [Reply(tool_calls=[("read_file", {"path": "history.md"})])]
    replies += [RECORD] * n + ["It is about the reservoir [1]."]
    agent = make_agent(replies, context_window=2048, ui=HeadlessUI(auto_yes=True))
    outcome = agent.turn("Summarise history.md")
    assert outcome.reply.startswith("It is about the reservoir [1].")
    first = agent.client.seen[1].messages[-1].content
    assert first.startswith("Instruction: Summarise history.md\n") and part_of(first) == (1, n)


def test_route_in_the_instruction_routes_map_and_synthesis(
    make_agent: AgentFactory, workspace: Path
) -> None:
    path = big_file(workspace)
    n = expected_chunks(path)
    ui = AnsweringUI("List the dates. @scout")
    replies: list[Reply | str] = [Reply(tool_calls=[("read_file", {"path": "history.md"})])]
    replies += [RECORD] * n + ["ROUTED in 1881 [1]."]
    agent = make_agent(replies, context_window=2048, ui=ui)
    outcome = agent.turn("Summarise history.md")
    assert outcome.reply.startswith("ROUTED in 1881 [1].")
    prompts = [s.messages[-1].content for s in agent.client.seen[1:]]
    assert all(p.startswith("Instruction: List the dates.\n") for p in prompts)
    assert all("@scout" not in p for p in prompts)
    agent.recorder.close()
    analysis = next(
        s for s in parse_session(agent.recorder.path).scenes if s.kind == "chunk_analysis"
    )
    assert analysis.chunk is not None and analysis.chunk.model == "scout"
    assert any(text == "List the dates. @scout" for _, text in analysis.dialogue)


def test_an_evidence_answer_is_harvey_s_line_and_costs_no_model_call(
    make_agent: AgentFactory, workspace: Path
) -> None:
    """The answer of a model too small to write one (here configured so) is the evidence
    itself: the turn's reply, recorded as HARVEY's, not the model's."""
    from harvey.config.settings import AnalysisSettings

    big_file(workspace)
    settings = Settings(
        chunking=ChunkingSettings(chunk_size_bytes=6000),
        analysis=AnalysisSettings(evidence="harvey", answer="evidence"),
    )
    replies: list[Reply | str] = [Reply(tool_calls=[("read_file", {"path": "history.md"})])]
    agent = make_agent(
        replies, context_window=2048, ui=AnsweringUI("When did it open?"), settings=settings
    )
    outcome = agent.turn("Summarise history.md")
    assert len(agent.client.seen) == 1  # only the turn's first round: no map call, no synthesis
    assert outcome.reply.startswith("Harvey: Here is the evidence itself")
    assert SENTENCE in outcome.reply and "\nSources:\n[" in outcome.reply
    agent.recorder.close()
    answer = parse_session(agent.recorder.path).scenes[-1]
    assert answer.dialogue[-1][0] == "HARVEY" and answer.dialogue[-1][1] == outcome.reply
