"""The reduce of an analysis: partial results synthesised into one answer.

One synthesis call over all partial results (the seed's prompt). When they do
not fit the synthesis model's context (``context_window`` given), they are
combined in groups that fit, the groups' syntheses running side by side, and
the group results combined again — a hierarchical reduce with a depth limit
(``MAX_LEVELS``) that must shrink the text at every level, so a model that
answers at length cannot loop. Any failure raises ``SynthesisError``
(``synthesis failed: …``); cancel raises ``Cancelled`` (``bounded_calls``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from harvey.analysis.map_calls import first_line, run_bounded
from harvey.analysis.progress import ProgressReporter
from harvey.context.budget import remaining_context, tokens_for_bytes
from harvey.errors import SynthesisError
from harvey.llm.base import LLMClient

MAX_LEVELS = 5
_SEPARATOR = "\n\n---\n"


def _reduce_header(instruction: str, count: int) -> str:
    return (
        f"{instruction}\n\n---\nCombine the following {count} section summaries "
        "into a single coherent response:\n\n"
    )


def reduce_prompt(instruction: str, partials: Sequence[str]) -> str:
    """The seed's synthesis prompt over ``partials`` joined by ``\\n\\n---\\n``."""
    return _reduce_header(instruction, len(partials)) + _SEPARATOR.join(partials)


@dataclass
class HierarchicalReduce:
    """One reduce through ``client``: ``run`` gives the answer, ``levels`` how many it took.

    ``concurrency`` bounds the group syntheses of one level; without
    ``context_window`` the synthesis is always one call.
    """

    client: LLMClient
    instruction: str
    concurrency: int
    cancel: threading.Event
    progress: ProgressReporter
    context_window: int | None
    bytes_per_token: float
    levels: int = field(default=0, init=False)

    def _fits(self, partials: Sequence[str]) -> bool:
        if self.context_window is None:
            return True
        size = len(_reduce_header(self.instruction, len(partials)).encode("utf-8"))
        size += sum(len(p.encode("utf-8")) for p in partials)
        size += len(_SEPARATOR) * max(0, len(partials) - 1)
        budget = remaining_context(self.context_window, bytes_per_token=self.bytes_per_token)
        return tokens_for_bytes(size, self.bytes_per_token) <= budget

    def _groups(self, partials: list[str]) -> list[list[str]]:
        groups: list[list[str]] = []
        current: list[str] = []
        for index, partial in enumerate(partials, 1):
            if not self._fits([partial]):
                raise SynthesisError(
                    f"synthesis failed: partial result {index} alone does not fit the "
                    f"synthesis model's context ({self.context_window} tokens)"
                )
            if current and not self._fits([*current, partial]):
                groups.append(current)
                current = []
            current.append(partial)
        groups.append(current)
        return groups

    def run(self, partials: list[str]) -> str:
        """Synthesise ``partials``, level after level, until one group is left."""
        current = partials
        while True:
            self.levels += 1
            groups = [current] if self._fits(current) else self._groups(current)
            self.progress.synthesis_started(self.levels, len(current), len(groups))
            outputs = self._synthesize(groups)
            if len(groups) == 1:
                return outputs[0]
            if self.levels >= MAX_LEVELS:
                raise SynthesisError(
                    f"synthesis failed: partial results still too large after {MAX_LEVELS} levels"
                )
            before = sum(len(p) for p in current)
            if sum(len(o) for o in outputs) >= before:
                raise SynthesisError(
                    f"synthesis failed: level {self.levels} did not shrink the partial results "
                    f"({before} characters in, {sum(len(o) for o in outputs)} out)"
                )
            current = outputs

    def _synthesize(self, groups: list[list[str]]) -> list[str]:
        prompts = [reduce_prompt(self.instruction, g) for g in groups]
        outputs: list[str] = [""] * len(prompts)

        def done(i: int, text: str | None, err: BaseException | None) -> None:
            if err is not None:
                raise SynthesisError(f"synthesis failed: {first_line(err)}") from err
            outputs[i] = text or ""

        run_bounded(
            self.client, prompts, self.concurrency, self.cancel, lambda i: None, done, notes=True
        )
        return outputs
