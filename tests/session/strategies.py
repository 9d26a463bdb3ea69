"""Hypothesis strategies for adversarial session text, shared by the session tests."""

from __future__ import annotations

from hypothesis import strategies as st

DANGEROUS = [
    "INT. KITCHEN - DAY",
    "EXT. ",
    "INT./EXT. CAR",
    "I/E HOUSE",
    "est. x",
    "int x",
    ".FORCED",
    "CUT TO:",
    "FADE IN:",
    "FADE OUT.",
    ">centered<",
    ">TRANSITION",
    "[[",
    "]]",
    "[[note]]",
    "/*",
    "*/",
    "/* bone */",
    "===",
    "# Section",
    "## s",
    "= synopsis",
    "~lyric",
    "!forced",
    "@FORCED",
    "ALL CAPS",
    "HARVEY",
    "THE END.",
    "(parenthetical)",
    "  ",
    "",
    "\t",
    "\r",
    "\r\n",
    "\\",
    "\\\\",
    "\\u0041",
    "\\[",
    "ü",
    "日本語",
    "\u2028",
    "\x0b",
    "\x0c",
    "\x85",
    "\x00",
    "—",
    " — ",
    "])",
    ")",
    "(",
    ",",
    "=",
    "Title: x",
    "tool: ",
    "\u3000",
    "^",
    "*",
    "trailing   ",
    "  leading",
]


def adversarial_text(min_size: int = 0) -> st.SearchStrategy[str]:
    piece = st.one_of(st.sampled_from(DANGEROUS), st.text(max_size=12), st.just("\n"))
    return st.lists(piece, min_size=min_size, max_size=12).map("".join)


def names() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(["rsdoiel", "llama3", "qwen2.5:7b", "harvey", "shell", "int. x", "1b"]),
        st.text(max_size=10),
    )
