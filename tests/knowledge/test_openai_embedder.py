"""The OpenAI-compatible ``/v1/embeddings`` embedder against a loopback fake server:
the wire format, the key, malformed answers, a model whose dimensions changed under a
store, and inputs over the cap (an error, never a silent cut)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from harvey.errors import KnowledgeError
from harvey.knowledge.ingest import Ingester
from harvey.knowledge.search import Searcher
from harvey.knowledge.store import create_store
from harvey.retrieval.embedders import OpenAIEmbedder
from tests.fakes.embeddings import FakeEmbeddings, fake_vector
from tests.harvey_process import invoke_harvey

KEY = "test-key-0123456789abcdef"


def test_vectors_in_input_order_and_unit_length() -> None:
    with FakeEmbeddings(dims=8, api_key=KEY) as srv:
        model = OpenAIEmbedder("emb-model", srv.url, KEY)
        out = model.embed(["boiler pressure", "garden roses"])
        body = srv.embedding_requests[0]
        auth = srv.requests[0].headers["Authorization"]
    assert body == {"model": "emb-model", "input": ["boiler pressure", "garden roses"]}
    assert auth == f"Bearer {KEY}"
    assert out.shape == (2, 8) and out.dtype == np.float32 and model.dims == 8
    expected = np.asarray(fake_vector("boiler pressure", 8), dtype=np.float32)
    assert np.allclose(out[0], expected / np.linalg.norm(expected), atol=1e-6)  # not reordered
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)


def test_secrets_in_chunks_are_redacted_before_they_leave() -> None:
    token = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"
    with FakeEmbeddings() as srv:
        OpenAIEmbedder("m", srv.url).embed([f"api_key = {token}"])
        sent = json.dumps(srv.embedding_requests)
    assert token not in sent and "sk-" in sent


def test_wrong_key_is_one_clear_error() -> None:
    with (
        FakeEmbeddings(api_key=KEY) as srv,
        pytest.raises(KnowledgeError, match=r"openai:m answered HTTP 401: .*Incorrect API"),
    ):
        OpenAIEmbedder("m", srv.url, "wrong").embed(["x"])


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"object": "list"}, "a malformed answer"),
        ({"data": [{"index": 0, "embedding": "not numbers"}]}, "a malformed answer"),
        ({"data": [{"index": 0, "embedding": [0.1, 0.2]}]}, "1 vectors for 2"),
        (
            {"data": [{"index": 0, "embedding": [0.1]}, {"index": 1, "embedding": [0.1, 2]}]},
            "a malformed",
        ),
        ([1, 2], "a malformed answer"),
    ],
)
def test_bad_shapes_are_errors(answer: object, message: str) -> None:
    with (
        FakeEmbeddings(answer=answer) as srv,
        pytest.raises(KnowledgeError, match=f"embedder openai:m sent {message}"),
    ):
        OpenAIEmbedder("m", srv.url).embed(["a", "b"])


def test_server_down_is_one_clear_error() -> None:
    with FakeEmbeddings() as srv:
        url = srv.url
    with pytest.raises(KnowledgeError, match=r"embedder openai:m at .* is unreachable"):
        OpenAIEmbedder("m", url).embed(["a"])


def test_input_over_the_cap_is_an_error_not_a_cut() -> None:
    with FakeEmbeddings(max_input_chars=OpenAIEmbedder.max_chars) as srv:
        model = OpenAIEmbedder("m", srv.url)
        model.embed(["x" * model.max_chars])  # exactly the cap: accepted whole
        with pytest.raises(KnowledgeError, match="over openai:m's input cap of 8000"):
            model.embed(["short", "y" * (model.max_chars + 1)])
        sent = [len(t) for body in srv.embedding_requests for t in body["input"]]
    assert sent == [model.max_chars]  # the over-long batch never left, not even cut


def _ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "notes").mkdir(parents=True)
    (ws / "notes" / "boiler.md").write_text("The boiler pressure must stay under 2 bar.\n")
    (ws / "notes" / "garden.md").write_text("Prune the roses in March.\n")
    return ws


def test_dimensions_changed_under_a_store_name_both(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    with FakeEmbeddings(dims=8) as srv:
        model = OpenAIEmbedder("m", srv.url)
        store = create_store(ws, "s", "openai:m", 0)
        Ingester(store, ws, model).ingest(["notes"])
        assert store.meta("dims") == "8"  # learnt from the first answer
        srv.dims = 16  # the server now serves another model under the same name
        (ws / "notes" / "car.md").write_text("Tyre pressure 2.4 bar.\n")
        want = (
            r"store 's' was made with embedder openai:m \(8-dimension.*openai:m now answers with 16"
        )
        with pytest.raises(KnowledgeError, match=want):
            Ingester(store, ws, model).ingest(["notes"])
        with pytest.raises(KnowledgeError, match=want):
            Searcher(store, model).search("boiler pressure")
        store.close()


def test_cli_round_trip_through_the_fake(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    with FakeEmbeddings(dims=8, api_key=KEY) as srv:
        env = {"OPENAI_BASE_URL": srv.url, "OPENAI_API_KEY": KEY}

        def harvey(*args: str) -> subprocess.CompletedProcess[str]:
            return invoke_harvey(*args, cwd=ws, env=env)

        assert harvey("rag", "new", "s", "--embedder", "openai:emb").returncode == 0
        ingest = harvey("rag", "ingest", "s", "notes")
        assert ingest.returncode == 0, ingest.stderr
        out = harvey("rag", "query", "s", "boiler pressure", "--json")
        assert out.returncode == 0, out.stderr
        rows = json.loads(out.stdout)
        other = harvey("rag", "ingest", "s", "notes", "--embedder", "openai:other")
        env["OPENAI_API_KEY"] = "wrong"
        denied = harvey("rag", "query", "s", "boiler")
    assert rows[0]["path"] == "notes/boiler.md" and 0 <= rows[0]["score"] <= 1
    assert other.returncode == 2 and other.stderr.count("\n") == 1
    assert "made with embedder openai:emb, not openai:other" in other.stderr
    assert denied.returncode == 1 and denied.stderr.count("\n") == 1
    assert "HTTP 401" in denied.stderr and KEY not in denied.stderr
