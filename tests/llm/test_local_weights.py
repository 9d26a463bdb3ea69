"""The embedded model's F16 copy: made once, the same model, never a broken file.

The header reader is tested on GGUF headers written here; the re-encoding on
the real SmolLM2 file, in a private cache folder, and its output is compared
with the shipped weights' on the same prompt.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from harvey.llm import local_weights
from harvey.llm.local_weights import MAX_SOURCE_BYTES, fast_weights, gguf_file_type

needs_model = pytest.mark.usefixtures("embedded_model")


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def _header(entries: list[bytes], version: int = 3) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", version, 0, len(entries)) + b"".join(entries)


def _kv_u32(key: str, value: int) -> bytes:
    return _string(key) + struct.pack("<II", 4, value)


def _kv_strings(key: str, items: list[str]) -> bytes:
    return _string(key) + struct.pack("<IIQ", 9, 8, len(items)) + b"".join(map(_string, items))


def _kv_nested(key: str) -> bytes:
    """An array of arrays of floats: the reader must skip what it does not want."""
    inner = struct.pack("<IQ", 6, 2) + struct.pack("<ff", 1.0, 2.0)
    return _string(key) + struct.pack("<IIQ", 9, 9, 2) + inner + inner


def _write(tmp_path: Path, data: bytes, name: str = "m.gguf") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_file_type_is_found_after_arrays_strings_and_nested_arrays(tmp_path: Path) -> None:
    header = _header(
        [
            _string("general.name") + struct.pack("<I", 8) + _string("tiny"),
            _kv_strings("tokenizer.ggml.tokens", ["a", "bb", "ccc"] * 50),
            _kv_nested("x.nested"),
            _string("x.flag") + struct.pack("<I?", 7, True),
            _kv_u32("general.file_type", 3),
        ]
    )
    assert gguf_file_type(_write(tmp_path, header)) == 3


def test_no_file_type_not_gguf_and_version_one_are_unknown(tmp_path: Path) -> None:
    assert gguf_file_type(_write(tmp_path, _header([_kv_u32("general.other", 3)]))) is None
    assert gguf_file_type(_write(tmp_path, b"PK\x03\x04 not a model", "z.gguf")) is None
    old = _header([_kv_u32("general.file_type", 3)], version=1)
    assert gguf_file_type(_write(tmp_path, old, "v1.gguf")) is None


@pytest.mark.parametrize(
    "data",
    [
        _header([_kv_u32("general.file_type", 3)])[:-2],  # cut inside the value
        b"GGUF" + struct.pack("<IQQ", 3, 0, 5) + struct.pack("<Q", 1 << 40),  # huge key
        _header([_string("k") + struct.pack("<I", 99)]),  # unknown value type
    ],
)
def test_a_damaged_header_is_an_error_and_the_shipped_file_is_used(
    tmp_path: Path, data: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, data)
    with pytest.raises(ValueError):
        gguf_file_type(path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert fast_weights(path, llama_cpp=None) == path
    assert not (tmp_path / "cache").exists()


def test_unquantized_and_unknown_files_are_used_as_they_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for file_type in (0, 1, 32):  # F32, F16, BF16
        path = _write(tmp_path, _header([_kv_u32("general.file_type", file_type)]))
        assert fast_weights(path, llama_cpp=None) == path
    unknown = _write(tmp_path, _header([]), "unknown.gguf")
    assert fast_weights(unknown, llama_cpp=None) == unknown
    assert not (tmp_path / "cache").exists()


def test_a_large_model_is_never_copied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = _write(tmp_path, _header([_kv_u32("general.file_type", 3)]))
    with path.open("r+b") as handle:
        handle.truncate(MAX_SOURCE_BYTES + 1)  # sparse: no disk used
    assert fast_weights(path, llama_cpp=None) == path


def test_the_reader_stops_at_the_key_it_needs(tmp_path: Path) -> None:
    """What follows ``general.file_type`` is never parsed (here: an unknown value type)."""
    after = _string("later") + struct.pack("<I", 99)
    path = _write(tmp_path, _header([_kv_u32("general.file_type", 7), after]))
    assert gguf_file_type(path) == 7


# -- the real model --------------------------------------------------------------


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("HARVEY_LOCAL_WEIGHTS", raising=False)
    return tmp_path / "xdg" / "harvey" / "models"


@needs_model
def test_the_shipped_model_is_copied_once_as_f16_without_a_word_on_screen(
    cache: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    import llama_cpp

    from harvey.llm.local import find_model_file

    source = find_model_file()
    assert gguf_file_type(source) == 3  # Q4_1 as shipped: the reason this exists
    copy = fast_weights(source, llama_cpp)
    assert copy.parent == cache and copy != source
    assert gguf_file_type(copy) == 1  # MOSTLY_F16
    assert sorted(p.name for p in cache.iterdir()) == [copy.name]  # no partial left
    made = copy.stat().st_mtime_ns
    assert fast_weights(source, llama_cpp) == copy
    assert copy.stat().st_mtime_ns == made  # the second call reuses it
    out, err = capfd.readouterr()
    assert out == "" and err == ""


@needs_model
def test_opting_out_or_an_unwritable_cache_uses_the_shipped_file(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import llama_cpp

    from harvey.llm.local import find_model_file

    source = find_model_file()
    monkeypatch.setenv("HARVEY_LOCAL_WEIGHTS", "shipped")
    assert fast_weights(source, llama_cpp) == source
    monkeypatch.delenv("HARVEY_LOCAL_WEIGHTS")
    cache.parent.mkdir(parents=True)
    cache.write_text("a file where the folder should be")
    assert fast_weights(source, llama_cpp) == source


@needs_model
def test_a_failed_re_encoding_leaves_nothing_behind(cache: Path) -> None:
    import llama_cpp

    from harvey.llm.local import find_model_file

    class Refusing:
        """llama_cpp whose quantize fails after writing part of the file."""

        def __getattr__(self, name: str) -> object:
            return getattr(llama_cpp, name)

        @staticmethod
        def llama_model_quantize(source: bytes, target: bytes, params: object) -> int:
            Path(target.decode()).write_bytes(b"GGUF half a model")
            return 1

    source = find_model_file()
    assert fast_weights(source, Refusing()) == source
    assert list(cache.iterdir()) == []


@needs_model
def test_two_processes_making_the_copy_at_once_both_get_a_whole_model(cache: Path) -> None:
    script = (
        "import llama_cpp; from harvey.llm.local import find_model_file;"
        "from harvey.llm.local_weights import fast_weights;"
        "print(fast_weights(find_model_file(), llama_cpp))"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    paths = {proc.communicate(timeout=120)[0].strip() for proc in procs}
    assert all(proc.returncode == 0 for proc in procs)
    assert len(paths) == 1
    (copy,) = paths
    assert gguf_file_type(Path(copy)) == 1
    assert sorted(p.name for p in cache.iterdir()) == [Path(copy).name]


@needs_model
def test_the_f16_copy_computes_what_the_shipped_weights_compute(cache: Path) -> None:
    """Same tokens, and next-token logits that agree: the copy is the same model."""
    import llama_cpp
    import numpy as np

    from harvey.llm.local import find_model_file

    source = find_model_file()
    copy = fast_weights(source, llama_cpp)
    prompt = b"The history of the water supply of a small harbour town begins with"
    logits = []
    tokens = []
    for path in (source, copy):
        llm = llama_cpp.Llama(str(path), n_ctx=256, n_threads=2, verbose=False, logits_all=True)
        ids = llm.tokenize(prompt)
        llm.eval(ids)
        tokens.append(ids)
        logits.append(np.array(llm.scores[len(ids) - 1], dtype=np.float64))
        llm.close()
    assert tokens[0] == tokens[1]
    shipped, f16 = logits
    cosine = float(shipped @ f16 / (np.linalg.norm(shipped) * np.linalg.norm(f16)))
    assert cosine > 0.995
    top = set(np.argsort(shipped)[-5:])
    assert int(np.argmax(f16)) in top
    assert len(top & set(np.argsort(f16)[-5:])) >= 4


def test_the_cache_folder_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert local_weights.cache_folder() == tmp_path / "harvey" / "models"
    assert os.fspath(local_weights.cache_folder()).startswith(os.fspath(tmp_path))


@needs_model
def test_a_damaged_copy_in_the_cache_falls_back_to_the_shipped_file(
    cache: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The cache is the user's: a copy cut short (or replaced) must not break the model."""
    import llama_cpp

    from harvey.llm import local

    source = local.find_model_file()
    copy = fast_weights(source, llama_cpp)
    copy.write_bytes(copy.read_bytes()[: 1024 * 1024])  # a copy cut short, same name
    monkeypatch.setattr(local, "_CACHE", {})
    loaded = local.load(source, 512, 1)
    assert loaded.n_ctx == 512
    tokens = loaded.llama.tokenize(b"hello")
    assert tokens and loaded.llama.detokenize(tokens).strip() == b"hello"
    assert any("did not load" in r.getMessage() for r in caplog.records)
    loaded.llama.close()
