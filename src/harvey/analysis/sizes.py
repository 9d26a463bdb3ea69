"""Which models may judge evidence and write the answer: the benchmark's verdict as rules.

The analysis-quality benchmark (``bench/bench_analysis_quality.py``, BENCHMARKS.md)
ran SmolLM2-135M each way on the same cases: asked to choose among numbered
candidates the sentences that answer an instruction, it kept under half of the
facts the cases plant or list; asked to write the answer from verified quotes, it
invented dates and names the quotes do not hold (the check marks them), and the
checked answer kept about three quarters; Harvey's own finder, answering with the
evidence itself, kept all of them, at the same grounding and with no model call.
So for a model that small Harvey finds the evidence itself and the answer is that
evidence, quoted and cited. A model is taken to be that small
when it is the embedded SmolLM2 or its name says it has fewer than a billion
parameters (``smollm2:135m``, ``qwen2.5:0.5b``, ``…-360M-…``); every other model
writes records and a synthesis, both checked. ``analysis.evidence`` and
``analysis.answer`` override the choice.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # names only: a chat turn asks is_small without loading the analysis
    from harvey.analysis.mapper import Style
    from harvey.analysis.params import AnswerKind

EvidenceSetting = Literal["auto", "harvey", "choose", "model"]
AnswerSetting = Literal["auto", "evidence", "synthesis"]
_SIZE = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)\s*([mb])(?![a-z])", re.IGNORECASE)


def parameters(model: str) -> float | None:
    """The parameter count a model's name states (``135m`` → 1.35e8), if it states one."""
    sizes = [
        float(number) * (1e6 if unit.lower() == "m" else 1e9)
        for number, unit in _SIZE.findall(model.replace("_", "-"))
    ]
    return max(sizes) if sizes else None


def is_small(model: str) -> bool:
    """Too small to judge relevance or write a faithful synthesis (module docstring)."""
    if model.lower().startswith("smollm2-135m"):
        return True
    count = parameters(model)
    return count is not None and count < 1e9


def evidence_style(model: str, setting: EvidenceSetting = "auto") -> Style:
    if setting != "auto":
        return setting
    return "harvey" if is_small(model) else "model"


def answer_kind(model: str, setting: AnswerSetting = "auto") -> AnswerKind:
    if setting != "auto":
        return setting
    return "evidence" if is_small(model) else "synthesis"


def evidence_reason(model: str, kind: AnswerKind) -> str:
    """The first line of an answer that is the evidence itself: why no model wrote it."""
    if kind == "evidence" and is_small(model):
        return (
            f"{model} is too small to write a faithful answer, so here is the evidence "
            "itself, quoted word for word from the source."
        )
    return (
        "Here is the evidence itself, quoted word for word from the source "
        "(analysis.answer: evidence)."
    )


__all__ = [
    "AnswerSetting",
    "EvidenceSetting",
    "answer_kind",
    "evidence_reason",
    "evidence_style",
    "is_small",
    "parameters",
]
