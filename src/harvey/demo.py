"""``make demo``: analyse the bundled long document with the embedded model.

The document is several times the embedded model's context window, so the
demo runs the same path as ``harvey analyze``: structure-aware chunks, a map
call per chunk with progress on stderr, and one synthesized answer on stdout.
"""

from __future__ import annotations

import os
import sys
from importlib.resources import as_file, files

from harvey.cli import main

INSTRUCTION = (
    "List the key events, people and dates in this part of the history of Harrow Bay's "
    "water supply, as short bullet points."
)


def run() -> None:
    with as_file(files("harvey") / "data" / "sample.md") as sample:
        size = os.path.getsize(sample)
        print(
            f"Harvey demo: analysing {sample.name} ({size:,} bytes, about {size // 4:,} tokens) "
            "with the embedded SmolLM2-135M model.",
            file=sys.stderr,
        )
        args = [
            "analyze",
            str(sample),
            "--backend",
            "local",
            "--instruction",
            INSTRUCTION,
            "--yes",
        ]
        main(args, prog_name="harvey")


if __name__ == "__main__":
    run()
