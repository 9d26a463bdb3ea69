"""A/B probe of the embedded model's prompt-evaluation speed (not part of ``make bench``).

Why: the demo's wall time is mostly prompt evaluation, and on a shared 2-core machine
the absolute tok/s moves with the load, so settings are judged by back-to-back ratios.
Each argument is ``label|tokens|json-kwargs-for-Llama``; every run prints one JSON line
with the prompt-eval tok/s and the 1-minute load average, e.g.::

    python -m bench.probe_prompt_eval 'fa|1500|{"flash_attn":true}' \
        'nofa|1500|{"flash_attn":false}' 'nofa|1500|{"flash_attn":false}' \
        'fa|1500|{"flash_attn":true}'
"""

from __future__ import annotations

import json
import os
import sys
import time
from importlib.resources import files
from typing import Any

from harvey.llm.local import find_model_file


def probe(label: str, n_tokens: int, params: dict[str, Any]) -> dict[str, Any]:
    """Load the model with ``params``, evaluate the first ``n_tokens`` of sample.md once."""
    import llama_cpp

    params.setdefault("n_threads", 2)
    llm = llama_cpp.Llama(str(find_model_file()), n_ctx=8192, verbose=False, **params)
    text = (files("harvey") / "data" / "sample.md").read_text(encoding="utf-8")
    tokens = llm.tokenize(text.encode())[:n_tokens]
    llm.reset()  # no prefix reuse: the whole prompt is evaluated
    start = time.perf_counter()
    llm.eval(tokens)
    elapsed = time.perf_counter() - start
    llm.close()
    return {
        "label": label,
        "tokens": len(tokens),
        "prompt_eval_tok_s": round(len(tokens) / elapsed),
        "load_1m": round(os.getloadavg()[0], 2),
    }


def main(specs: list[str]) -> None:
    for spec in specs:
        label, n_tokens, params = spec.split("|", 2)
        print(json.dumps(probe(label, int(n_tokens), json.loads(params))), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
