"""What the REPL shows of ``Agent.status()``: the banner line and the ``/status`` table.

Every read of the status lives here, so a change to its shape touches one file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvey.confine.sandbox import detect
from harvey.llm.pool_setup import endpoint_lines

if TYPE_CHECKING:
    from harvey.chat.agent import Agent


def banner_line(agent: Agent) -> str:
    """``backend · model · context N tokens``: the start of the REPL's banner. Only what
    it shows is asked: the whole ``status()`` builds the system prompt, which needs the
    model's tool support, and finding that out can take one probe call of up to 20 s
    before the first prompt appears (the first turn asks it instead)."""
    client = agent.client
    window = agent.budget.capabilities().context_window
    return f"{client.backend} · {client.model} · context {window:,} tokens"


def status_rows(agent: Agent) -> list[tuple[str, str]]:
    """The ``/status`` table as (label, value) rows."""
    st = agent.status()
    ratio_kind = "calibrated" if st.calibrated else "heuristic"
    rows = [
        ("backend", f"{st.backend} ({st.endpoint})"),
        ("model", str(st.model)),
        ("context window", f"{st.context_window:,} tokens ({st.context_source})"),
        ("used (estimated)", f"{st.used_tokens:,} tokens"),
        ("  of which plan", f"{st.plan_tokens:,} tokens"),
        ("remaining", f"{st.remaining_tokens:,} tokens (after a 10% margin)"),
        ("bytes per token", f"{st.bytes_per_token:.2f} ({ratio_kind})"),
        ("token counting", agent.budget.counting_method()),
        ("tools", "on" if st.tools else "off"),
        ("confinement", detect(agent.settings.security.sandbox).describe()),
        ("session", str(st.session_id)),
    ]
    mcp = mcp_schema_line(agent)
    if mcp:
        rows.insert(rows.index(("tools", "on" if st.tools else "off")) + 1, ("  MCP", mcp))
    if st.omitted_messages:
        rows.insert(5, ("  left out", f"{st.omitted_messages} oldest messages (do not fit)"))
    rows[1:1] = [("  endpoint", line) for line in endpoint_lines(agent.client)]
    return rows


def mcp_schema_line(agent: Agent) -> str:
    """The MCP tools' schemas the model is sent and what they cost: counted exactly where
    the backend can count (else estimated), against their share of the window."""
    import json

    from harvey.context.budget import estimate_tokens

    sent = [
        s for s in agent.executor.schemas()
        if s["function"]["name"].startswith("mcp__") or s["function"]["name"] == "find_tools"
    ]  # fmt: skip
    if not sent:
        return ""
    counter = agent.budget.counter()
    texts = [json.dumps(s["function"], separators=(",", ":")) for s in sent]
    tokens = sum(counter.count(t) if counter else estimate_tokens(t) for t in texts)
    how = "counted" if counter else "estimated"
    window = agent.status().context_window
    budget = int(window * agent.settings.mcp.schema_budget)
    names = [s["function"]["name"] for s in sent]
    what = (
        "find_tools (the rest found on demand)"
        if names == ["find_tools"]
        else (f"{len(names)} tools")
    )
    return f"{what}: {tokens:,} tokens of schemas ({how}), budget {budget:,}"
