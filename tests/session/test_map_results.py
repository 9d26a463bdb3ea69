"""Stored map results: resumable analyses in sessions.db."""

from __future__ import annotations

from pathlib import Path

from harvey.analysis.engine import ChunkAnalysisParams, run_chunked_analysis
from harvey.analysis.params import result_key
from harvey.analysis.progress import NullProgress
from harvey.chunks.chunking import ChunkConfig
from harvey.llm.openai import OpenAIClient
from harvey.session.map_results import StoredResults
from harvey.session.store import SessionStore
from tests.fakes.base import HTTPFailure
from tests.fakes.evidence import records
from tests.fakes.llamacpp import FakeLlamaCpp


def _params(n: int = 6, instruction: str = "summarise", size: int = 6000) -> ChunkAnalysisParams:
    return ChunkAnalysisParams(
        filename="doc.md",
        chunks=[f"The chunk of text number {i}.\n" for i in range(n)],
        instruction=instruction,
        model="fake-model",
        config=ChunkConfig(concurrency=1, chunk_size_bytes=size),
        evidence="model",
        answer="synthesis",
    )


def quoted(i: int) -> str:
    return records(f"The chunk of text number {i}.")


def _run(srv: FakeLlamaCpp, results: StoredResults, params: ChunkAnalysisParams | None = None):  # type: ignore[no-untyped-def]
    client = OpenAIClient(srv.url, "fake-model", retries=0)
    try:
        return run_chunked_analysis(
            client, params or _params(), progress=NullProgress(), results=results
        )
    finally:
        client.close()


def test_a_rerun_makes_only_the_missing_calls(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    first = store.reserve_session(tmp_path, "fake-model")
    with FakeLlamaCpp() as srv:
        # chunks 2 and 5 fail (a 400 is not worth retrying); synthesis answers
        fail = HTTPFailure(400, "no")
        srv.script(quoted(0), fail, quoted(2), quoted(3), fail, quoted(5), "It is text [1].")
        result = _run(srv, StoredResults(store, first))
        assert result.failures == [2, 5] and result.reused == 0
        assert store.map_result_count(first) == 4
        srv.requests.clear()
        srv.script(quoted(1), quoted(4), "It is text [1].")
        second = store.reserve_session(tmp_path, "fake-model")
        again = _run(srv, StoredResults(store, second))
        assert srv.calls == 3  # two missing chunks + the synthesis
    assert again.reused == 4 and again.failures == []
    assert again.text.startswith("It is text [1].")
    assert [r.quote for r in again.records] == [f"The chunk of text number {i}." for i in range(6)]
    store.close()


def test_fresh_ignores_stored_results_and_keeps_one_row_per_call(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    sid = store.reserve_session(tmp_path, "fake-model")
    with FakeLlamaCpp(default_reply=records()) as srv:
        _run(srv, StoredResults(store, sid))
        before = srv.calls
        _run(srv, StoredResults(store, sid, fresh=True))
        assert srv.calls == 2 * before  # every call made again
    assert store.map_result_count(sid) == 6  # a repeated call replaced its row
    store.close()


def test_the_key_changes_with_what_the_prompt_is_made_of() -> None:
    base = result_key("m", _params(), 1, 6, "text")
    assert result_key("m", _params(), 1, 6, "text") == base
    assert result_key("other", _params(), 1, 6, "text") != base
    assert result_key("m", _params(instruction="else"), 1, 6, "text") != base
    assert result_key("m", _params(size=3000), 1, 6, "text") != base
    assert result_key("m", _params(), 2, 6, "text") != base
    assert result_key("m", _params(), 1, 6, "text!") != base


def test_results_keep_an_unfinished_session_and_go_with_it(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    sid = store.reserve_session(tmp_path, "fake-model")
    store.store_map_result(sid, "k1", "fake-model", "text")
    assert store.get_session(sid) is not None  # written with its first result
    assert not store.discard_if_empty(sid)  # no messages, but a run to resume
    assert store.stored_map_result("k1") == "text"
    assert store.delete_session(sid)
    assert store.stored_map_result("k1") is None
    assert "m005_map_results" in store.applied_migrations()
    store.close()
