"""``make demo``: analyse the bundled long document with the embedded model.

The document is several times the embedded model's context window, so the
demo runs the same path as ``harvey analyze``: structure-aware chunks with
progress on stderr, each chunk searched for the evidence the instruction asks
for, and on stdout an answer whose every line quotes the document and cites
where (``[3]``, then ``[3] sample.md:L83``). SmolLM2-135M is too small to pick
evidence or write a faithful answer (BENCHMARKS.md, "Faithful analysis"), so
Harvey finds the evidence itself and the answer is that evidence.
"""

from __future__ import annotations

import os
import sys
from importlib.resources import as_file, files

from harvey.cli import main
from harvey.context.amounts import size_text, tokens_text

INSTRUCTION = "List every dam and reservoir, and when it was built or opened."


def run() -> None:
    with as_file(files("harvey") / "data" / "sample.md") as sample:
        size = os.path.getsize(sample)
        print(
            f"Harvey demo: analysing {sample.name} ({size_text(size)}, {tokens_text(size // 4)}) "
            f"with the embedded SmolLM2-135M model: {INSTRUCTION}",
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
